"""`pycdr explain`: why a peer answered a request with an exception.

    pycdr explain CAPTURE [--stream N] [--request-id ID] [--idl FILE]
    pycdr explain --request HEX [--request HEX ...] [--reply HEX] [--ior IOR] [--idl FILE]

Exit status: 0 every request explained is clean; 1 a request breaks a rule, or
the input is bad (bytes that are not a GIOP request, a capture that cannot be
read, no such request in it); 2 usage (an option that is not hex, not an IOR,
a missing option)."""

from __future__ import annotations

import json
import sys

import click

from pycdr.errors import PycdrError

from .main import EXIT_BAD_INPUT, EXIT_OK
from .options import open_output, read_iors, shared


def _hex(value: str, option: str) -> bytes:
    text = value.strip()
    if text[:2].lower() == "0x":
        text = text[2:]
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise click.BadParameter("not hexadecimal bytes", param_hint=option) from None


def _fail(text: str) -> None:
    click.echo(f"error: {text}", err=True)
    sys.exit(EXIT_BAD_INPUT)


def load_modules(idl_files, include_dirs=()) -> list:
    from pycdr.idl import IdlError, load
    try:
        return [load(p, include_dirs, register=False) for p in idl_files]
    except IdlError as e:
        _fail(str(e).splitlines()[0])     # (the source line and its caret follow)


def capture_exchanges(path, *, stream=None, request_id=None, ports=None):
    """The requests of the capture at ``path`` worth explaining, as
    :class:`pycdr.explain.Exchange` objects: the one ``request_id`` names (with or
    without a reply), else every request a SYSTEM_EXCEPTION answered; only in
    ``stream`` (the connection's number in `pycdr pcap`) when given."""
    from pycdr.capture.giop import CaptureDecoder
    from pycdr.capture.read import CaptureReader
    from pycdr.capture.tcp import TcpReassembler
    from pycdr.explain import Exchanges
    found: list = []
    wanted = (lambda reply: True) if request_id is not None else None
    exchanges = Exchanges(found.append, wanted, request_id=request_id,
                          unanswered=request_id is not None)

    def message(flow, raw, frame, ts):
        index = flow.connection.index
        if stream is None or index == stream:
            exchanges.feed(index, flow.src, bytes(raw))

    decoder = CaptureDecoder(lambda entry: None, ports, True, raw_message=message)
    tcp = TcpReassembler(decoder)
    with CaptureReader(path) as reader:
        for segment in reader:
            tcp.feed(segment)
    tcp.finish()
    exchanges.finish()
    return found


def explanation_lines(explanation, indent: str = "") -> str:
    return "".join(f"{indent}{line}\n" for line in explanation.lines())


@click.command("explain", epilog=(
    "Output: one finding a line (@OFFSET, or msg[i]@OFFSET in the i-th fragment; the field's "
    "path; what is wrong; [the section]), then the verdict.  Exit status: 0 every request "
    "explained is clean; 1 a request breaks a rule, or the input is bad; 2 usage."))
@click.argument("capture", required=False, type=click.Path(exists=True, dir_okay=False))
@shared("--stream", "stream", more="With CAPTURE.")
@click.option("--request-id", type=click.IntRange(0, 0xFFFFFFFF),
              help="With CAPTURE: the request to explain (default: every request a "
                   "SYSTEM_EXCEPTION answered).")
@click.option("--request", "requests", multiple=True,
              help="The request's GIOP message in hex (repeat for its fragments, in order).")
@click.option("--reply", help="The reply's GIOP message in hex.")
@shared("--ior", "ior_values", more="The target's: the code sets and GIOP version it offers "
        "(the first one given).")
@shared("--idl", "idl_files", multiple=True,
        more="With the operation (repeatable): the body is checked against it.")
@shared("--include", "include_dirs")
@shared("--port", "ports", multiple=True, type=click.IntRange(1, 65535),
        more="With CAPTURE: carrying GIOP (GIOP magic is found anywhere).")
@shared("--json", "json_out", more="One object (with CAPTURE: one object a line).")
def cmd(capture, stream, request_id, requests, reply, ior_values, idl_files, include_dirs,
        ports, json_out):
    """Check a request strictly against the specification (and the IDL): each
    field that breaks a rule, with its offset and the section of the
    specification; or that the request is clean, so the fault is the peer's,
    whose exception and minor code (by its vendor's table) are named."""
    from pycdr.explain import ExplainError, explain
    if (capture is None) == (not requests):
        raise click.UsageError("give a CAPTURE or --request HEX (one of them)")
    if capture is not None and reply is not None:
        raise click.UsageError("--reply goes with --request (a capture has the replies)")
    if capture is None and (stream is not None or request_id is not None or ports):
        raise click.UsageError("--stream, --request-id and --port go with a CAPTURE")
    target = None
    if ior_values:
        try:
            target = next(iter(read_iors(ior_values)), None)
        except (PycdrError, ValueError) as e:
            raise click.BadParameter(str(e), param_hint="--ior") from None
    out = open_output(json_out) if json_out is not None else None
    messages = [_hex(r, "--request") for r in requests]
    reply_bytes = _hex(reply, "--reply") if reply is not None else None
    modules = load_modules(idl_files, include_dirs)
    if capture is None:
        try:
            explanation = explain(messages, reply_bytes, modules=modules, ior=target)
        except PycdrError as e:
            _fail(str(e))
        if out is not None:
            out.write(json.dumps(explanation.to_json(), allow_nan=False) + "\n")
        else:
            click.echo(explanation_lines(explanation), nl=False)
        sys.exit(EXIT_OK if explanation.clean else EXIT_BAD_INPUT)
    try:
        found = capture_exchanges(capture, stream=stream, request_id=request_id,
                                  ports=ports or None)
    except PycdrError as e:
        _fail(str(e))
    if not found:
        where = f" in stream {stream}" if stream is not None else ""
        _fail(f"no request {request_id}{where} in {capture}" if request_id is not None
              else f"no request answered by a system exception{where} in {capture}")
    clean = True
    for exchange in found:
        try:
            explanation = exchange.explain(modules=modules, **({} if target is None
                                                               else {"ior": target}))
        except ExplainError as e:
            _fail(f"stream {exchange.stream} request {exchange.request_id}: {e}")
        clean = clean and explanation.clean
        if out is not None:
            out.write(json.dumps(dict(explanation.to_json(), stream=exchange.stream),
                                 allow_nan=False) + "\n")
        else:
            op = f" ({explanation.operation})" if explanation.operation else ""
            click.echo(f"stream {exchange.stream} request {exchange.request_id}{op}:")
            click.echo(explanation_lines(explanation, "    "), nl=False)
    sys.exit(EXIT_OK if clean else EXIT_BAD_INPUT)


def explain_column(idl_files=(), include_dirs=()):
    """The ``explain`` of the call table (pycdr.calls.tracker.CallTracker's): (request
    bytes, reply bytes) -> `pycdr explain`'s JSON of the request, or None when its bytes do
    not make a request to explain."""
    from pycdr.explain import ExplainError, explain
    modules = load_modules(idl_files, include_dirs) if idl_files else []

    def column(request: bytes, reply: bytes):
        try:
            return explain([request], reply, modules=modules).to_json()
        except (ExplainError, PycdrError):
            return None
    return column
