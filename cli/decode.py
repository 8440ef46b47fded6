"""`pycdr decode`: GIOP messages from hex or a binary file, as a tree or JSON."""

from __future__ import annotations

import json
import sys

import click

from pycdr.errors import MessageTooLargeError, PycdrError, error_json, undecodable_bytes_json
from pycdr.giop.header import HEADER_SIZE, MAX_MESSAGE_SIZE, parse_header
from pycdr.giop.messages import decode_message

from .main import EXIT_BAD_INPUT
from .options import open_output, shared
from .warn import group_decode_warnings


class InputError(Exception):
    def __init__(self, message, offset=None):
        super().__init__(message)
        self.offset = offset


def parse_hex(text: str) -> bytes:
    """Hex digits with optional whitespace, ':' separators and a 0x prefix."""
    text = text.strip()
    if text[:2].lower() == "0x":
        text = text[2:]
    digits = []
    for i, ch in enumerate(text):
        if ch in " \t\r\n:":
            continue
        if ch not in "0123456789abcdefABCDEF":
            shown = repr(ch) if ch.isprintable() else f"character {ord(ch):#x}"
            raise InputError(f"{shown} is not a hex digit", i)
        digits.append(ch)
    if len(digits) % 2:
        raise InputError(f"odd number of hex digits ({len(digits)})")
    return bytes.fromhex("".join(digits))


def capture_format(data: bytes) -> str | None:
    """"pcap" or "pcapng" when ``data`` begins as a capture file does, else None."""
    from pycdr.capture.read import PCAP_MAGIC_NS, PCAP_MAGIC_US, PCAPNG_SHB
    if len(data) < 4:
        return None
    little, big = int.from_bytes(data[:4], "little"), int.from_bytes(data[:4], "big")
    if little == PCAPNG_SHB:
        return "pcapng"
    if {little, big} & {PCAP_MAGIC_US, PCAP_MAGIC_NS}:
        return "pcap"
    return None


def decode_stream(data: bytes, lenient: bool, max_message_size: int = MAX_MESSAGE_SIZE):
    """Yield ``(stream offset, end, message or PycdrError)`` for every message, one
    at a time (nothing is kept).  An error's offset is absolute.  Lenient: a
    message that cannot be decoded is yielded as its error and the next one
    follows (its header frames it); strict, or a header that does not parse (the
    stream cannot be framed on), the error is the last thing yielded.
    ``max_message_size``: the budget of a message, compressed (ZIOP) or not."""
    offset = 0
    while offset < len(data):
        try:
            header = parse_header(data, offset)      # its errors carry absolute offsets
        except PycdrError as e:
            yield offset, len(data), e
            return
        end = min(offset + header.total_size, len(data))
        try:
            if header.size > max_message_size:
                raise MessageTooLargeError(f"message of {header.size} bytes exceeds the limit "
                                           f"of {max_message_size}", 8)
            msg, _ = decode_message(data[offset:end], lenient=lenient,
                                    max_message_size=max_message_size)
        except PycdrError as e:
            if getattr(e, "offset", None) is not None:
                e.offset += offset
            yield offset, end, e
            if not lenient:
                return
        else:
            yield offset, end, msg
        offset += max(header.total_size, HEADER_SIZE)


def error_entry(data: bytes, offset: int, end: int, error: PycdrError) -> dict:
    """The JSON object of a message that cannot be decoded: ``error`` (as `pycdr
    pcap --json` gives it), its ``header`` when that parses, its ``bytes`` (hex, at most
    MAX_ERROR_BYTES of them) and ``bytes_length``."""
    entry = {"stream_offset": offset, "error": error_json(error)}
    try:
        entry["header"] = parse_header(data, offset).to_json()
    except PycdrError:
        pass
    entry.update(undecodable_bytes_json(data, offset, end))
    return entry


def render_tree(offset: int, msg) -> list[str]:
    j = msg.to_json()
    lines = [f"message at offset {offset}: GIOP {j['version']} {j['type']}, "
             f"{'little' if j['little_endian'] else 'big'}-endian, "
             f"message_size {j.get('message_size')}, flags 0x{j['flags']:02x}"
             + (", more fragments follow" if j["more_fragments"] else "")]
    offsets = j.pop("offsets")
    for key in ("type", "version", "little_endian", "flags", "more_fragments", "message_size",
                "padding", "warnings"):
        j.pop(key, None)
    render_fields(lines, j, offsets, "", 1)
    for p in msg.padding:
        lines.append(f"  padding @{offset + p[0]}: {len(p[1])} bytes {p[1].hex() or '-'}")
    for w, offsets in group_decode_warnings(msg.warnings):
        at = ", ".join(f"@{offset + o}" for o in offsets)
        lines.append(f"  {w.severity} {at}: [{w.code}] {w.message}")
    return lines


def render_fields(lines, obj, offsets, prefix, depth):
    indent = "  " * depth
    for key, value in obj.items():
        path = prefix + key
        at = f"  @{offsets[path]}" if path in offsets else ""
        if isinstance(value, dict):
            lines.append(f"{indent}{key}:{at}")
            render_fields(lines, value, offsets, path + ".", depth + 1)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            lines.append(f"{indent}{key}:{at}")
            for i, item in enumerate(value):
                lines.append(f"{indent}  [{i}]")
                render_fields(lines, item, {}, "", depth + 2)
        else:
            # (lists and booleans as JSON writes them: never a Python repr)
            shown = "''" if value == "" else json.dumps(value) \
                if isinstance(value, (list, bool)) or value is None else value
            lines.append(f"{indent}{key}: {shown}{at}")


@click.command("decode")
@click.argument("hexdata", required=False)
@click.option("-f", "--file", "path", type=click.Path(exists=True, dir_okay=False),
              help="Read binary GIOP bytes from a file instead of hex.")
@shared("--json", "json_out",
        more="JSON Lines: one object per message, written as it is decoded; a message "
             "that cannot be decoded gives an object with `error`, `header` and `bytes`.")
@shared("--idl", "idl_files", multiple=True,
        more="Decodes the arguments and results of Requests and Replies (repeatable; a "
             "Reply's operation is known when its Request comes first in the stream).")
@shared("--include", "include_dirs")
@click.option("--strict", is_flag=True,
              help="Stop at the first protocol violation (default: report and carry on).")
@shared("--max-message-size", default=MAX_MESSAGE_SIZE, show_default=True,
        more="Compressed or not (ZIOP is checked while it inflates).")
def cmd(hexdata, path, json_out, idl_files, include_dirs, strict, max_message_size):
    """Decode GIOP messages (one or a stream) from HEXDATA, stdin (hex) or --file.

    Shows every header field with its offset, alignment padding, and anything
    odd (non-zero padding, lenient-mode warnings).  Exit code 1 for input that
    cannot be decoded (every message that can is shown all the same)."""
    try:
        if path:
            with open(path, "rb") as fh:
                data = fh.read()
            where = path
        else:
            raw = hexdata.encode("utf-8", "replace") if hexdata is not None else \
                sys.stdin.buffer.read()
            where = "the input"
            if capture_format(raw):
                data = raw
            else:
                data = parse_hex(raw.decode("ascii", "replace"))
        kind = capture_format(data)
        if kind:
            shown = f"`pycdr pcap {path}`" if path else "`pycdr pcap FILE`"
            raise InputError(f"{where} is a {kind} capture file, not GIOP bytes: use {shown}")
        if not data:
            raise InputError("no input bytes")
    except OSError as e:
        click.echo(f"error: cannot read {path}: {e.strerror}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except InputError as e:
        at = f" at offset {e.offset}" if e.offset is not None else ""
        click.echo(f"error: {e}{at}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    values = _body_decoder(idl_files, include_dirs)
    out = open_output(json_out) if json_out is not None else sys.stdout
    requests: dict = {}             # request id -> its entry, for the Replies' operation
    failure = None
    for offset, end, item in decode_stream(data, not strict, max_message_size):
        if isinstance(item, PycdrError):
            failure = failure or item
            if json_out is not None:
                out.write(json.dumps(error_entry(data, offset, end, item)) + "\n")
            else:
                out.write(f"message at offset {offset}: undecodable: "
                          f"{type(item).__name__}: {item}\n")
            continue
        entry = {"stream_offset": offset, **item.to_json()}
        if values is not None:
            decoded = _decoded(values, item, entry, requests)
            if decoded is not None:
                entry["decoded"] = decoded
        if json_out is not None:
            out.write(json.dumps(entry, allow_nan=False) + "\n")
        else:
            lines = render_tree(offset, item)
            if "decoded" in entry:
                lines.append("  decoded:")
                render_fields(lines, entry["decoded"], {}, "", 2)
            out.write("\n".join(lines) + "\n")
    if out is not sys.stdout:
        out.close()
    sys.stdout.flush()          # (before the error line on stderr)
    if failure is not None:
        click.echo(f"error: {type(failure).__name__}: {failure}", err=True)
        sys.exit(EXIT_BAD_INPUT)


def _body_decoder(idl_files, include_dirs):
    """The decoder of bodies by IDL (pycdr.capture.giop's, as `pycdr pcap --idl`), or None."""
    if not idl_files:
        return None
    from pycdr import idl
    from pycdr.capture.giop import IdlBodyDecoder
    try:
        modules = [idl.load(p, include_dirs, register=False) for p in idl_files]
    except idl.IdlError as e:
        click.echo(str(e), err=True)
        sys.exit(EXIT_BAD_INPUT)
    return IdlBodyDecoder(modules, typed=True)


def _decoded(values, msg, entry, requests):
    """The arguments or results of one message, as `pycdr pcap --idl` gives them."""
    request = requests.get(entry.get("request_id")) if entry["type"] == "Reply" else None
    if entry["type"] == "Request":
        requests[entry.get("request_id")] = entry
    return values(msg, request)
