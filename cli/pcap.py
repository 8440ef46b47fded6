"""`pycdr pcap FILE`: GIOP messages of a pcap/pcapng capture, decoded by pycdr, as they come."""

from __future__ import annotations

import functools
import json
import sys

import click

from pycdr.errors import PycdrError
from pycdr.addressing.iiop import IIOPProfile, decode_profile
from pycdr.codec.ior import ior_from_string
from pycdr.capture.giop import ShapedEntry, entry_json
from pycdr.giop.minorcodes import minor_code_name

from .main import EXIT_BAD_INPUT
from .options import open_output, shared
from .warn import warning_lines

# Segments between two updates of the progress bar (an update costs microseconds).
PROGRESS_EVERY = 4096


@click.command("pcap")
@click.argument("file", required=False, type=click.Path(exists=True, dir_okay=False))
@shared("--json", "json_out",
        more="JSON Lines: one `pycdr decode --json` object a message, plus frame, stream, src, "
             "dst (error entries: error, stream_offset, bytes); with --idl, `typed` holds the "
             "values as `pycdr call --json` gives them.")
@shared("--idl", "idl_files", multiple=True, more="Decodes arguments and results "
        "(repeatable).")
@shared("--port", "ports", multiple=True, type=click.IntRange(1, 65535),
        more="Carrying GIOP (default 683 and 2809; GIOP magic is found anywhere).")
@click.option("--stats", "stats", is_flag=True,
              help="Statistics instead of messages: per operation and endpoint pair (calls, "
                   "replies, exceptions, unanswered, response times, bytes), versions, "
                   "violations; a table, or one JSON object with --json.")
@shared("--parquet", "parquet", type=click.Path(dir_okay=False),
        more="One row a message, to this file, in row groups as it goes.")
@shared("--iface", "iface", more="Capture live instead of reading FILE; Ctrl-C ends it.")
@shared("--filter", "bpf", more="With -i.")
@shared("--write", "save", more="With -i (with -q: record only).")
@shared("--count", "count", more="With -i.")
@shared("--duration", "duration", more="With -i.")
@shared("--quiet", more="(With -i -w: record to the file only.)")
@shared("--only", "only_ops")
@shared("--skip", "skip_ops")
@shared("--stream", "streams", multiple=True, more="Repeatable.")
@click.option("--frame", "frames", type=click.IntRange(min=1), multiple=True,
              help="Only the message that ends in this frame (repeatable); with -v, every "
                   "field of it.")
@shared("--verbose", "verbose", more="Every field of each message shown, with its body.")
@shared("--progress/--no-progress", "progress")
@shared("--jobs", "jobs", more="Decode a capture file's TCP connections in this many processes "
        "(text and --json, with or without --idl; the output is the same).")
@shared("--explain", "explain", more="After the messages (with a capture FILE; --json: one "
        "object a request).")
def cmd(file, json_out, idl_files, ports, stats, parquet, iface, bpf, save, count, duration,
        quiet, only_ops, skip_ops, streams, frames, verbose, progress, jobs, explain):
    """Decode the GIOP traffic of a capture file or a live interface (TCP
    reassembly, fragments, reply matching).

    Entries are written as they are decoded; memory stays flat whatever the size
    of the capture."""
    from pycdr.capture.giop import IdlBodyDecoder, iter_capture
    from pycdr.capture.live import LiveCapture
    from pycdr.capture.read import CaptureReader
    from pycdr.capture.stats import CaptureStats
    interface = iface
    as_json = json_out is not None
    selecting = bool(only_ops or skip_ops or streams or frames)
    if (file is None) == (interface is None):
        raise click.UsageError("give a capture FILE or -i IFACE (one of them)")
    if interface is None and (bpf or save or count or duration):
        raise click.UsageError("--filter, -w, -c and --duration go with -i")
    if parquet and (stats or as_json):
        raise click.UsageError("--parquet writes a file instead of --stats or --json output")
    if jobs > 1 and (interface is not None or stats or parquet or selecting or verbose):
        raise click.UsageError("-j goes with a capture FILE's whole text or --json output")
    if quiet and (as_json or stats or verbose):
        raise click.UsageError("-q prints nothing: not with --json, --stats or -v")
    if explain and (file is None or stats or parquet or quiet):
        raise click.UsageError("--explain goes with a capture FILE's text or --json output")
    live = None
    sink = None
    try:
        if parquet:
            try:
                from pycdr.capture.parquet import ParquetSink
            except ImportError:
                raise PycdrError("--parquet needs pyarrow: pip install 'pycdr[parquet]'") \
                    from None
            sink = ParquetSink(parquet)
        modules = []
        if idl_files:
            from pycdr import idl
            modules = [idl.load(p, register=False) for p in idl_files]
        decoder = IdlBodyDecoder(modules, typed=as_json or verbose)
        if interface is not None:
            live = LiveCapture(interface, bpf, count=count, duration=duration, save=save)
            progress = False
            try:
                reader = CaptureReader(live.stream)
            except PycdrError as e:
                live.close()
                raise live.failure() or e from None
            click.echo(f"capturing on {interface}", err=True)
        else:
            reader = CaptureReader(file)
    except PycdrError as e:
        click.echo(f"error: {e}{_not_a_capture_hint(file)}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if progress is None:
        progress = sys.stderr.isatty() and jobs == 1
    out = open_output(json_out) if as_json else sys.stdout
    write = out.write
    if jobs > 1:
        reader.close()          # (opened above to check the file: each worker reads it)
        undecodable = _sharded(file, jobs, as_json, ports, decoder, write)
        if explain:
            _explain(file, ports, modules, as_json, write)
        if out is not sys.stdout:
            out.close()
        _exit_if_undecodable(undecodable)
        return
    # Live: each entry out at once (a pipe's reader waits for it); a file: block writes.
    flush = out.flush if live is not None else (lambda: None)
    counter = CaptureStats() if stats else None
    matched = counter.matched if counter is not None else sink.matched if sink is not None \
        else None
    # Only --json shows the bodies' hex: the other outputs are spared making it.
    entries = iter_capture(None, reader=reader, ports=ports or None, decode_body=decoder,
                           matched=matched, unanswered=counter and counter.unanswered,
                           bodies=(as_json or verbose) and not stats)
    if selecting:
        entries = select_entries(entries, only_ops, skip_ops, streams, frames)
    if progress:
        entries = _with_progress(entries, reader)
    undecodable = 0
    try:
        if sink is not None:
            add = sink.add
            for entry in entries:
                add(entry)
        elif counter is not None:
            if live is not None and sys.stdout.isatty() and not as_json:
                _live_table(entries, counter)
            else:
                add = counter.add
                for entry in entries:
                    add(entry)
            if as_json:
                write(json.dumps(counter.to_json(), indent=1) + "\n")
            else:
                print_stats(counter.to_json())
        elif quiet:
            for entry in entries:
                if _undecodable(entry):
                    undecodable += 1
        elif verbose:
            for entry in entries:
                write(detail_text(entry))
                flush()
                if _undecodable(entry):
                    undecodable += 1
        elif as_json:
            for entry in entries:
                write(entry_json(entry))
                write("\n")
                flush()
                if _undecodable(entry):
                    undecodable += 1
        else:
            for entry in entries:
                write(entry_text(entry))
                flush()
                if _undecodable(entry):
                    undecodable += 1
        if explain:
            _explain(file, ports, modules, as_json, write)
    except PycdrError as e:
        sys.stdout.flush()
        click.echo(f"error: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except BrokenPipeError:
        sys.stderr.close()      # `pycdr pcap F | head`: the reader left; nothing to say
        sys.exit(0)
    except KeyboardInterrupt:
        if live is None:
            raise
        # Ctrl-C ends a live capture: what was counted is shown.
        if counter is not None:
            if as_json:
                write(json.dumps(counter.to_json(), indent=1) + "\n")
            else:
                print_stats(counter.to_json())
    finally:
        if out is not sys.stdout:
            out.close()
        if live is not None:
            live.close()
            if save:
                click.echo(f"{live.packets} packets written to {save}", err=True)
        if sink is not None:
            sink.close()
            click.echo(f"{sink.rows_written} rows in {sink.row_groups} row groups written to "
                       f"{parquet}", err=True)
    if live is not None:
        failure = live.failure()
        if failure is not None:
            click.echo(f"error: {failure}", err=True)
            sys.exit(EXIT_BAD_INPUT)
    if counter is not None:
        undecodable = sum(n for key, n in counter.to_json()["errors"].items()
                          if not key.endswith("(gap)"))
    _exit_if_undecodable(undecodable)


def _not_a_capture_hint(path) -> str:
    """For a file that is not a capture but GIOP bytes or hex text: the command for it."""
    if path is None:
        return ""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError:
        return ""
    if head.startswith((b"GIOP", b"ZIOP")):
        return f": it holds GIOP bytes: use `pycdr decode --file {path}`"
    text = head.decode("ascii", "replace").strip().lower()
    if text and all(c in "0123456789abcdef \t\r\n:x" for c in text):
        return f": it holds hex text: use `pycdr decode < {path}`"
    return ""


def _sharded(file, jobs, as_json, ports, decoder, write) -> int:
    """The output of ``pycdr pcap [--json] FILE``, made by ``jobs`` processes; how many
    messages of it could not be decoded."""
    from pycdr.capture.shard import sharded_output
    form = _marked_json_line if as_json else _marked_text
    undecodable = 0
    try:
        for text in sharded_output(file, jobs, form, ports=ports or None,
                                   decode_body=decoder, bodies=as_json):
            if text.startswith(UNDECODABLE_MARK):
                undecodable += 1
                text = text[1:]
            write(text)
    except PycdrError as e:
        sys.stdout.flush()
        click.echo(f"error: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(0)
    return undecodable


def _explain(file, ports, modules, as_json, write) -> None:
    """`pycdr explain FILE` of every request a SYSTEM_EXCEPTION answered."""
    from .explain import capture_exchanges, explanation_lines
    for exchange in capture_exchanges(file, ports=ports or None):
        explanation = exchange.explain(modules=modules)
        if as_json:
            write(json.dumps({"explain": dict(explanation.to_json(),
                                              stream=exchange.stream)}) + "\n")
        else:
            op = f" ({explanation.operation})" if explanation.operation else ""
            write(f"explain stream {exchange.stream} request {exchange.request_id}{op}:\n"
                  + explanation_lines(explanation, "    "))


def _undecodable(entry) -> bool:
    """A message that could not be decoded (bytes missing from the capture, a gap, are
    the capture's loss, not bad GIOP)."""
    error = entry.get("error")
    return error is not None and error.get("kind") != "gap"


def _exit_if_undecodable(undecodable: int) -> None:
    """As `pycdr decode`: what could be decoded is shown; the status says not all could."""
    if undecodable:
        sys.stdout.flush()
        click.echo(f"error: {undecodable} message(s) could not be decoded", err=True)
        sys.exit(EXIT_BAD_INPUT)


def select_entries(entries, only_ops, skip_ops, streams, frames):
    """The entries of the chosen operations (a reply goes with its request's), TCP
    connections and frames.  Messages of no operation (CloseConnection, MessageError,
    undecodable bytes) are kept unless --only names operations."""
    from pycdr.capture.stats import operation_of
    only, skip = set(only_ops), set(skip_ops)
    requests: dict = {}             # (stream, request id) -> operation
    for entry in entries:
        if streams and entry.get("stream") not in streams:
            continue
        kind = entry.get("type")
        key = (entry.get("stream"), entry.get("request_id"))
        if kind in ("Request", "LocateRequest"):
            operation = operation_of(entry)
            requests[key] = operation
        elif kind in ("Reply", "LocateReply", "CancelRequest"):
            operation = requests.get(key)
        else:
            operation = None
        if only and operation not in only or operation is not None and operation in skip:
            continue
        if frames and entry.get("frame") not in frames:
            continue
        yield entry


def detail_text(entry) -> str:
    """Every field of one entry, one a line, nested fields indented (`pcap -v`)."""
    from .decode import render_fields
    j = json.loads(entry_json(entry))
    lines = [f"frame {j.pop('frame')} {j.pop('src')} -> {j.pop('dst')} (stream "
             f"{j.pop('stream')}, time {j.pop('time')})"]
    render_fields(lines, j, {}, "", 1)
    return "\n".join(lines) + "\n\n"


# Put before the text of an entry that could not be decoded by a worker of `pcap -j`, so that
# the exit status counts it as one process does.
UNDECODABLE_MARK = "\0"


def _marked_json_line(entry) -> str:
    return ("\0" if _undecodable(entry) else "") + entry_json(entry) + "\n"


def _marked_text(entry) -> str:
    return ("\0" if _undecodable(entry) else "") + entry_text(entry)


# Seconds between two redraws of the live statistics table.
LIVE_REFRESH = 0.5


def _live_table(entries, counter) -> None:
    """Count ``entries`` while a rich Live display shows the tables so far."""
    import time

    from rich.console import Group
    from rich.live import Live
    shown = time.monotonic()
    with Live(Group(*stats_tables(counter.to_json())), refresh_per_second=4,
              transient=True) as display:
        for entry in entries:
            counter.add(entry)
            if time.monotonic() - shown >= LIVE_REFRESH:
                display.update(Group(*stats_tables(counter.to_json())))
                shown = time.monotonic()


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
    if type(e) is ShapedEntry:
        return _shaped_entry_text(e)
    return _entry_text(e)


def _shaped_entry_text(e) -> str:
    """entry_text of an entry from the memo: what its shape fixes is written once."""
    kind, status, warnings = _shape_text(e.shape)
    line = f"frame {e['frame']} {e['src']} -> {e['dst']}: {kind}{e['request_id']}{status}"
    if "response_time" in e:
        line += f" [{e['response_time'] * 1000:.3f} ms after frame {e['request_frame']}]"
    if e["warnings"] != e.shape.json["warnings"] or "system_exception" in e or "forward" in e:
        return _entry_text(e)
    decoded = e.get("decoded")
    if decoded is not None:                     # (--idl: the lines of _entry_text's order)
        values = "".join([f"    {path} = {text}\n" for path, text in decoded["values"]])
        return f"{line}\n{values}{warnings}"
    return f"{line}\n{warnings}"


@functools.lru_cache(maxsize=1024)
def _shape_text(shape) -> tuple:
    """(" GIOP 1.2 Request id=" part, operation/status part, warning lines) of a shape."""
    j = shape.json
    status = "".join(f" {j[key]}" for key in ("operation", "reply_status", "locate_status")
                     if key in j)
    warnings = "".join(line + "\n" for line in warning_lines(j["warnings"], "    "))
    return f"GIOP {j['version']} {j['type']} id=", status, warnings


def _entry_text(e: dict) -> str:
    where = f"frame {e['frame']} {e['src']} -> {e['dst']}"
    if "error" in e:
        return f"{where}: undecodable: {e['error']['message']}\n"
    line = f"{where}: GIOP {e['version']} {e['type']}"
    if "request_id" in e:
        line += f" id={e['request_id']}"
    for key in ("operation", "reply_status", "locate_status"):
        if key in e:
            line += f" {e[key]}"
    if "system_exception" in e:
        line += " " + system_exception_text(e["system_exception"])
    if "forward" in e:
        line += " -> " + forward_text(e["forward"])
    if "reassembled" in e:
        line += f" (reassembled from {e['reassembled']['fragments']} messages)"
    if "response_time" in e:
        line += f" [{e['response_time'] * 1000:.3f} ms after frame {e['request_frame']}]"
    lines = [line]
    for path, text in e.get("decoded", {}).get("values", []):
        lines.append(f"    {path} = {text}")
    lines += warning_lines(e.get("warnings", []), "    ")
    lines.append("")
    return "\n".join(lines)


def system_exception_text(exc: dict) -> str:
    """``OBJECT_NOT_EXIST minor 0x4f4d0002 (OMG 2: ...) COMPLETED_NO``, as omniORB's traces
    name a system exception: the name, the minor code whole and as its vendor's
    (pycdr.giop.minorcodes), and the completion status."""
    minor = exc.get("minor")
    text = exc.get("name") or exc.get("exception_id", "?")
    if minor is not None:
        text += f" minor 0x{minor:08x}"
        named = minor_code_name(exc.get("name"), minor)
        if named is not None:
            text += f" ({named})"
    if exc.get("completed"):
        text += f" {exc['completed']}"
    return text


def forward_text(ior_text: str) -> str:
    """Where a LOCATION_FORWARD or OBJECT_FORWARD sends the client: the IOR's type id
    and the host:port of its IIOP profiles (the IOR itself is in --json)."""
    try:
        ior = ior_from_string(ior_text, lenient=True)
    except PycdrError as e:
        return f"(an IOR that does not decode: {e})"
    addresses = []
    for tagged in ior.profiles:
        try:
            profile = decode_profile(tagged, lenient=True)
        except PycdrError:
            continue
        if isinstance(profile, IIOPProfile):
            addresses += [f"{h}:{p}" for h, p in profile.addresses if p]
    where = ", ".join(addresses) or "no IIOP address"
    return f"{ior.type_id or '(no type id)'} at {where}"


def _ms(seconds) -> str:
    return "" if seconds is None else f"{seconds * 1000:.3f}"


def print_stats(stats: dict) -> None:
    """``CaptureStats.to_json()`` as rich tables on stdout."""
    from rich.console import Console
    # Piped or redirected: wide enough for the columns rather than 80 characters.
    console = Console() if sys.stdout.isatty() else Console(width=200)
    for renderable in stats_tables(stats):
        console.print(renderable)


def stats_tables(stats: dict) -> list:
    """``CaptureStats.to_json()`` as rich renderables."""
    from rich.table import Table
    out = []
    for title, key, first in (("Operations", "operations", "operation"),
                              ("Endpoint pairs (client -> server)", "endpoint_pairs", "pair")):
        table = Table(title=title)
        for column in (first, "calls", "oneway", "replies", "user exc", "sys exc",
                       "no reply", "p50 ms", "p90 ms", "p99 ms", "max ms", "bytes"):
            table.add_column(column, justify="left" if column == first else "right")
        exceptions = []
        for name, s in stats[key].items():
            rt = s["response_time"]
            table.add_row(name, str(s["calls"]), str(s["oneway"]), str(s["replies"]),
                          str(sum(s["user_exceptions"].values())),
                          str(sum(s["system_exceptions"].values())), str(s["unanswered"]),
                          _ms(rt["p50"]), _ms(rt["p90"]), _ms(rt["p99"]), _ms(rt["max"]),
                          f"{s['bytes']:,}")
            if key == "operations":
                exceptions += [(name, exc, n) for kind in ("user_exceptions", "system_exceptions")
                               for exc, n in s[kind].items()]
        out.append(table)
        if exceptions:
            table = Table(title="Exceptions by operation")
            for column in ("operation", "exception", "count"):
                table.add_column(column, justify="right" if column == "count" else "left")
            for name, exc, n in exceptions:
                table.add_row(name, exc, str(n))
            out.append(table)
    for title, key, column in (("Message types", "message_types", "type"),
                               ("GIOP versions and byte orders", "versions", "version"),
                               ("Protocol violations", "violations", "code"),
                               ("Undecodable", "errors", "error")):
        if not stats[key]:
            continue
        table = Table(title=title)
        table.add_column(column)
        table.add_column("messages", justify="right")
        for name, n in stats[key].items():
            table.add_row(name, f"{n:,}")
        out.append(table)
    if stats["replies_without_request"]:
        out.append(f"replies without their request in the capture: "
                   f"{stats['replies_without_request']}")
    return out
