"""`pycdr pcap FILE`: GIOP messages of a pcap/pcapng capture, decoded by pycdr."""

from __future__ import annotations

import json
import sys

import click

from pycdr.errors import PycdrError

from .main import EXIT_BAD_INPUT


@click.command("pcap")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True,
              help="A JSON array: `pycdr decode --json` objects plus frame, stream, src, dst.")
@click.option("--idl", "idl_files", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="IDL file whose operations decode arguments and results (repeatable).")
@click.option("-p", "--port", "ports", multiple=True, type=click.IntRange(1, 65535),
              help="TCP port carrying GIOP (default 683 and 2809; GIOP magic is found anywhere).")
def cmd(file, as_json, idl_files, ports):
    """Decode the GIOP traffic of a capture (TCP reassembly, fragments, reply matching)."""
    from pycdr.pcap import IdlBodyDecoder, decode_capture
    try:
        decoder = None
        if idl_files:
            from pycdr import idl
            decoder = IdlBodyDecoder([idl.load(p, register=False) for p in idl_files])
        entries = decode_capture(file, ports=ports or None, decode_body=decoder)
    except PycdrError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if as_json:
        click.echo(json.dumps(entries, indent=1))
        return
    for e in entries:
        where = f"frame {e['frame']} {e['src']} -> {e['dst']}"
        if "error" in e:
            click.echo(f"{where}: undecodable: {e['error']['message']}")
            continue
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
        click.echo(line)
        for path, text in e.get("decoded", {}).get("values", []):
            click.echo(f"    {path} = {text}")
        for w in e.get("warnings", []):
            click.echo(f"    {w['severity']}: [{w['code']}] {w['message']}")
