"""`pycdr pcap FILE`: GIOP messages of a pcap/pcapng capture, decoded by pycdr, as they come."""

from __future__ import annotations

import json
import sys

import click

from pycdr.errors import PycdrError

from .main import EXIT_BAD_INPUT

# Segments between two updates of the progress bar (an update costs microseconds).
PROGRESS_EVERY = 4096


@click.command("pcap")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True,
              help="JSON Lines: one `pycdr decode --json` object a message, plus frame, "
                   "stream, src, dst (error entries: error, stream_offset, bytes).")
@click.option("--idl", "idl_files", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="IDL file whose operations decode arguments and results (repeatable).")
@click.option("-p", "--port", "ports", multiple=True, type=int,
              help="TCP port carrying GIOP (default 683 and 2809; GIOP magic is found anywhere).")
@click.option("--progress/--no-progress", default=None,
              help="A progress bar on stderr (default: when stderr is a terminal).")
def cmd(file, as_json, idl_files, ports, progress):
    """Decode the GIOP traffic of a capture (TCP reassembly, fragments, reply matching).

    Entries are written as they are decoded; memory stays flat whatever the size
    of the capture."""
    from pycdr.pcap import IdlBodyDecoder, iter_capture
    from pycdr.pcapread import CaptureReader
    try:
        decoder = None
        if idl_files:
            from pycdr import idl
            decoder = IdlBodyDecoder([idl.load(p, register=False) for p in idl_files])
        reader = CaptureReader(file)
    except PycdrError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if progress is None:
        progress = sys.stderr.isatty()
    write = sys.stdout.write
    entries = iter_capture(None, reader=reader, ports=ports or None, decode_body=decoder)
    if progress:
        entries = _with_progress(entries, reader)
    try:
        if as_json:
            dumps = json.JSONEncoder(ensure_ascii=True).encode
            for entry in entries:
                write(dumps(entry))
                write("\n")
        else:
            for entry in entries:
                write(entry_text(entry))
    except PycdrError as e:
        sys.stdout.flush()
        click.echo(f"error: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except BrokenPipeError:
        sys.stderr.close()      # `pycdr pcap F | head`: the reader left; nothing to say
        sys.exit(0)


def _with_progress(entries, reader):
    """``entries`` as they come, a rich progress bar of the file's bytes on stderr."""
    from rich.console import Console
    from rich.progress import (BarColumn, DownloadColumn, Progress, TimeRemainingColumn,
                               TransferSpeedColumn)
    with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                  TransferSpeedColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(reader.name, total=reader.size)
        n = 0
        for entry in entries:
            yield entry
            n += 1
            if n % PROGRESS_EVERY == 0:
                bar.update(task, completed=reader.bytes_read)
        bar.update(task, completed=reader.bytes_read)


def entry_text(e: dict) -> str:
    """One entry as the listing shows it (lines, each ending in a newline)."""
    where = f"frame {e['frame']} {e['src']} -> {e['dst']}"
    if "error" in e:
        return f"{where}: undecodable: {e['error']['message']}\n"
    line = f"{where}: GIOP {e['version']} {e['type']}"
    if "request_id" in e:
        line += f" id={e['request_id']}"
    for key in ("operation", "reply_status", "locate_status"):
        if key in e:
            line += f" {e[key]}"
    if "reassembled" in e:
        line += f" (reassembled from {e['reassembled']['fragments']} messages)"
    if "response_time" in e:
        line += f" [{e['response_time'] * 1000:.3f} ms after frame {e['request_frame']}]"
    lines = [line]
    for path, text in e.get("decoded", {}).get("values", []):
        lines.append(f"    {path} = {text}")
    for w in e.get("warnings", []):
        lines.append(f"    {w['severity']}: [{w['code']}] {w['message']}")
    lines.append("")
    return "\n".join(lines)
