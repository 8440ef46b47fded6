"""Fuzz harness for the C decoder (pycdr.codec._speedups), run by .ci/sanitize.sh under
AddressSanitizer/UBSan.

Each input picks a TypeCode (one of a fixed set, or one decoded from the input
itself, so the C plan compiler meets arbitrary plans), a byte order and an
alignment offset, and decodes the rest of the input:
- with the public decode (C path on) and with the pure-Python decode: the
  outcomes must be identical (value, or error type/message/offset/path);
- with the C runner alone: if it succeeds, Python must succeed with the same
  value and end position;
- a value that decodes is encoded again by both paths: identical bytes.
Every input is also the body of a GIOP 1.2 or 1.3 Request or Reply for the ORB's
fast message decode: C (decode_common_12) and Python must give the same message,
None or error; and, as a GIOP 1.0, 1.1 and 1.2 message, the input of the ORB's
one-call paths (serve_request, decode_reply) with the input's TypeCode as the
operation's one argument and result: None, or what the general path makes of it.
Any difference raises, which the fuzzer reports as a crash; the sanitizers
report memory errors and undefined behaviour.

    python .ci/fuzz_speedups.py -max_total_time=60        # atheris (libFuzzer flags)
    python .ci/fuzz_speedups.py --plain 60                # no atheris: random inputs
"""

from __future__ import annotations

import os
import random
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from pycdr.codec import marshal, tc  # noqa: E402
from pycdr.codec.cdr import CDRReader  # noqa: E402
from pycdr.errors import CDRError, PycdrError  # noqa: E402
from pycdr.codec.plan import plan_for  # noqa: E402
from pycdr.codec.tcmarshal import encode_typecode_encapsulation, read_typecode  # noqa: E402

if marshal.IMPLEMENTATION != "c":
    sys.exit("fuzz_speedups: pycdr.codec._speedups is not in use (not built, or PYCDR_PURE=1)")

from pycdr.codec import _speedups  # noqa: E402
from pycdr.giop.messages import fast12  # noqa: E402
from pycdr.giop.header import encode_header  # noqa: E402
from pycdr.giop.messages import KeyAddr, Reply, Request, decode_message  # noqa: E402
from pycdr.giop.messages.encoding import MessageTemplate  # noqa: E402

# The Request the blocking client's one-call lane (exchange) sends before it reads.
LANE_TEMPLATE = MessageTemplate(Request(version=(1, 2), response_flags=3,
                                        target=KeyAddr(b"key"), operation="op"))
LANE_ARGUMENTS = (plan_for(tc.long),)
from giop_samples import decode_outcome, sample_messages  # noqa: E402

# The 1.2/1.3 Requests and Replies of the GIOP tests, whose bodies plain() changes.
GIOP_SAMPLES = [m for m in sample_messages() if m[5] in (2, 3) and m[7] in (0, 1)]

PY_DECODE = marshal.decode.__wrapped__
PY_ENCODE = marshal.encode.__wrapped__
PY_READ = marshal.read_value.__wrapped__

_BIN = tc.struct("IDL:fz/Bin:1.0", "Bin", [
    ("s", tc.short), ("c", tc.char), ("l", tc.long), ("o", tc.octet), ("d", tc.double),
    ("pad", tc.array(tc.octet, 8))])
_COLOR = tc.enum("IDL:fz/Color:1.0", "Color", ["red", "green", "blue"])
_NODE = tc.struct("IDL:fz/Node:1.0", "Node", [
    ("v", tc.long), ("kids", tc.sequence(tc.recursive("IDL:fz/Node:1.0")))])
FIXED_TCS = [
    tc.sequence(tc.double), tc.sequence(tc.short), tc.sequence(tc.ulonglong),
    tc.sequence(tc.float), tc.sequence(tc.boolean), tc.sequence(tc.octet),
    tc.sequence(tc.char), tc.sequence(tc.string), tc.bounded_string(5), tc.sequence(_BIN),
    _NODE, tc.sequence(_COLOR),
    tc.union("IDL:fz/U:1.0", "U", _COLOR, [(0, "a", tc.long), (1, "b", tc.string),
                                          (tc.DEFAULT, "c", tc.sequence(_BIN))]),
    tc.union("IDL:fz/V:1.0", "V", tc.char, [("x", "a", tc.wstring), ("y", "b", tc.boolean)]),
    tc.exception("IDL:fz/E:1.0", "E", [("why", tc.string), ("n", tc.array(tc.long, 2))]),
    tc.struct("IDL:fz/M:1.0", "M", [("f", tc.fixed(5, 2)), ("w", tc.wchar),
                                    ("a", tc.any), ("s", tc.sequence(tc.longlong, 3))]),
]
SEEDS = [encode_typecode_encapsulation(t)[1:] for t in FIXED_TCS]


def outcome(fn, *args, **kwargs):
    try:
        return ("ok", fn(*args, **kwargs))
    except CDRError as e:
        return ("error", type(e), str(e), e.offset, e.path)
    except (PycdrError, ValueError, TypeError, OverflowError, RecursionError) as e:
        return ("error", type(e), str(e))


def same(a, b) -> bool:
    """Same type and same repr: exact for floats (NaN included), bools vs ints,
    lists vs arrays, and the struct/union classes (their repr shows every member)."""
    return type(a) is type(b) and repr(a) == repr(b)


def check(t, body: bytes, little: bool, offset: int) -> None:
    try:
        plan = plan_for(t)
    except PycdrError:
        return
    c = outcome(marshal.decode, t, body, little=little, offset=offset)
    py = outcome(PY_DECODE, t, body, little=little, offset=offset)
    if c[0] != py[0] or (c[0] == "error" and c != py) or (c[0] == "ok" and not same(c[1], py[1])):
        raise AssertionError(f"C and Python differ for {t!r}: {c!r} vs {py!r}")
    try:
        value, end = _speedups.read(plan, body, 0, len(body), -offset, little, False, None)
    except (_speedups.Fallback, CDRError):
        pass
    else:
        r = CDRReader(body, origin=-offset, little=little)
        r.context = {"numeric_arrays": False}
        expect = plan.read(r)
        if not same(value, expect) or r.pos != end:
            raise AssertionError(f"C runner accepted what Python reads otherwise: {t!r}")
    if py[0] == "ok":
        c_bytes = outcome(marshal.encode, t, py[1], little=little, offset=offset)
        py_bytes = outcome(PY_ENCODE, t, py[1], little=little, offset=offset)
        if c_bytes[0] != py_bytes[0] or (c_bytes[0] == "ok" and c_bytes[1] != py_bytes[1]) or \
                (c_bytes[0] == "error" and c_bytes != py_bytes):
            raise AssertionError(f"encode differs for {t!r}: {c_bytes!r} vs {py_bytes!r}")
        if len(body) < 1 << 16:        # (a socketpair's buffer takes it at once)
            check_send_request(t, py[1], little)


def check_giop(body: bytes, little: bool, kind: int) -> None:
    """body as a GIOP 1.2/1.3 Request or Reply's: C and Python decode it alike."""
    data = encode_header((1, 2 + (kind >> 1 & 1)), little, kind & 1, len(body)) + body
    for buffer in (data, bytearray(data)):
        c = decode_outcome(_speedups.decode_common_12, buffer)
        py = decode_outcome(fast12._decode_common_12_python, buffer)
        if c != py:
            raise AssertionError(f"GIOP fast decode differs for {data.hex()}: {c!r} vs {py!r}")


def check_direct(body: bytes, little: bool, kind: int, t) -> None:
    """body as a GIOP 1.0-1.2 Request or Reply's, through the ORB's one-call paths in
    C, the operation taking and returning one value of t: None, or the general
    path's own decoding of it."""
    nodes = (plan_for(t),)
    for minor in (0, 1, 2):
        data = encode_header((1, minor), little, kind & 1, len(body)) + body
        try:
            msg, _ = decode_message(data)
        except PycdrError:
            msg = None
        table = {}
        if isinstance(msg, Request) and msg.object_key is not None:
            table = {msg.object_key: {msg.operation: (None, _echo_first, nodes, nodes)}}
        for buffer in (data, bytearray(data)):
            reply = _speedups.serve_request(buffer, table, set())
            if reply is not None:
                if msg is None or not isinstance(reply, bytes):
                    raise AssertionError(f"serve_request took {data.hex()}: {reply!r}")
                value = outcome(PY_READ, msg.body_reader(), t)
                answer, _ = decode_message(reply)
                if value[0] != "ok" or not same(outcome(PY_READ, answer.body_reader(), t),
                                                value):
                    raise AssertionError(f"serve_request answered {data.hex()} with "
                                         f"{reply.hex()}, not {value!r}")
            rid = msg.request_id if isinstance(msg, Reply) else 0
            got = _speedups.decode_reply(buffer, {rid: nodes})
            if got is not None:
                value = outcome(PY_READ, msg.body_reader(), t) if msg is not None else None
                if value is None or not same(("ok", got[1][0]), value):
                    raise AssertionError(f"decode_reply took {data.hex()}: {got!r}, "
                                         f"Python: {value!r}")
        check_exchange(data, rid, nodes)
        check_serve_exchange(data, table, msg)
        if table:
            # an operation without results: its oneway requests are served too
            check_serve_exchange(data, {msg.object_key: {msg.operation: (
                None, _return_none, nodes, ())}}, msg)


class _NoPause:
    def __enter__(self):
        return None

    def __exit__(self, *exc_info):
        return None


def _received(sock) -> bytes:
    """What the peer sent and `sock` has not read (nothing waits: the lane has sent)."""
    sock.setblocking(False)
    data = b""
    while True:
        try:
            chunk = sock.recv(1 << 20)
        except BlockingIOError:
            return data
        if not chunk:
            return data
        data += chunk


def poll_for(data: bytes) -> int:
    """The poll_ns of a lane read of ``data``: every other input's reads poll first
    (recv_polled) -- the bytes are there already, so the poll takes them -- the others
    sleep at once; both must read the same."""
    return 50_000 if len(data) % 2 else 0


def check_serve_exchange(data: bytes, table: dict, msg) -> None:
    """data as what a client sends the threaded server's one-call lane, alone, twice in
    one read, and cut short before the end of the stream: each whole copy served only as
    serve_request serves it (its Reply sent, none for a oneway request), in order; what
    is not served handed back whole (one read of a socketpair, and a started message's
    rest read to the end of the stream)."""
    expect = _speedups.serve_request(data, table, set())
    streams = [data] + ([data + data] if 2 * len(data) <= 1 << 16 else []) + \
        ([data[:len(data) // 2]] if len(data) > 24 else [])
    for stream in streams:
        client, server = socket.socketpair()
        with client, server:
            client.sendall(stream)
            client.shutdown(socket.SHUT_WR)
            out = _speedups.serve_exchange(server.fileno(), table, set(),
                                           bytearray(1 << 16), 1 << 16, _NoPause(), 5.0,
                                           poll_for(stream))
            replies = _received(client)
        cut = len(stream) < len(data)
        if type(out) is int:
            if out != len(stream) or stream != data or type(expect) is not bytes or \
                    replies != expect:
                raise AssertionError(f"serve_exchange served {stream.hex()}: {out!r}, "
                                     f"{replies.hex()}")
        elif type(out) is tuple and len(out) == 5:
            taken, served, ran, rest, status = out
            runs = served + (ran is not None)
            if taken != runs * len(data) or stream[taken:] != rest or \
                    status != (-1 if cut else 0) or (runs and (cut or expect is None)) or \
                    (ran is not None) == (type(expect) is bytes) and runs or \
                    replies != (expect * served if type(expect) is bytes else b""):
                raise AssertionError(f"serve_exchange took {stream.hex()}: {out!r}, "
                                     f"{replies.hex()}")
        elif out != (stream, 0) or replies or \
                (not cut and msg is not None and expect is not None and len(data) <= 1 << 16):
            raise AssertionError(f"serve_exchange gave {out!r} for {stream.hex()}")


def check_exchange(data: bytes, rid: int, nodes) -> None:
    """data as what a server answers the blocking client's one-call lane, then the end
    of the stream: the lane takes it only as decode_reply does, else hands back a
    prefix of it (every byte read, for the general path)."""
    client, server = socket.socketpair()
    with client, server:
        server.sendall(data)
        server.shutdown(socket.SHUT_WR)
        out = _speedups.exchange(client.fileno(), LANE_TEMPLATE.prefix,
                                 LANE_TEMPLATE.request_id_at, rid, False, LANE_ARGUMENTS, (1,),
                                 nodes, bytearray(4096), 4096, None, poll_for(data))
    taken = _speedups.decode_reply(data, {rid: nodes})
    if type(out) is tuple:
        if taken is None or out[0] != len(data) or not same(("ok", out[1][0]),
                                                            ("ok", taken[1][0])):
            raise AssertionError(f"exchange took {data.hex()}: {out!r}, decode_reply "
                                 f"{taken!r}")
    elif type(out) is not bytes or not data.startswith(out) or \
            (taken is not None and len(data) <= 4096):
        raise AssertionError(f"exchange gave {out!r} for {data.hex()}")


def check_send_request(t, value, little: bool) -> None:
    """A oneway call's Request of one value of t through send_request (over a
    socketpair): the bytes encode_request makes, or nothing sent when it makes none; a
    bytes value of an octet sequence also as a tail (sendmsg), with the same bytes."""
    nodes = (plan_for(t),)
    want = outcome(_speedups.encode_request, LANE_TEMPLATE.prefix,
                   LANE_TEMPLATE.request_id_at, 7, little, nodes, (value,))
    tails = [None] + ([value] if type(value) is bytes else [])
    for tail in tails:
        client, server = socket.socketpair()
        with client, server:
            server.setblocking(False)
            out = outcome(_speedups.send_request, client.fileno(), LANE_TEMPLATE.prefix,
                          LANE_TEMPLATE.request_id_at, 7, little, nodes, (value,), tail)
            client.shutdown(socket.SHUT_WR)
            sent = b""
            while True:
                try:
                    chunk = server.recv(1 << 20)
                except BlockingIOError:
                    break
                if not chunk:
                    break
                sent += chunk
        if want[0] != "ok" or want[1] is None:
            # (a tail the plan does not count, or a value it refuses: nothing sent)
            if out[0] == "ok" and (out[1] is not None or sent):
                raise AssertionError(f"send_request sent {sent.hex()} for {value!r}")
        elif out[0] == "ok" and out[1] is None:
            if tail is None:
                raise AssertionError(f"send_request refused what encode_request takes: "
                                     f"{value!r}")
        elif out != ("ok", 0) or sent != want[1]:
            raise AssertionError(f"send_request {out!r} sent {sent.hex()}, encode_request "
                                 f"{want[1].hex()} (tail {tail is not None})")


def _echo_first(op, args):
    return args[0]


def _return_none(op, args):
    return None


def one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    head, data = data[0], data[1:]
    little = bool(head & 1)
    offset = (head >> 1) & 7
    choice = head >> 4
    check_giop(data, little, offset)
    if choice < 15:
        t = FIXED_TCS[choice % len(FIXED_TCS)]
    else:
        # a TypeCode from the input: its length in the next two octets
        n = int.from_bytes(data[:2], "little")
        tc_bytes, data = data[2:2 + n], data[2 + n:]
        try:
            t = read_typecode(CDRReader(tc_bytes, little=little))
        except (PycdrError, RecursionError):
            return
    check(t, bytes(data), little, offset)
    check_direct(bytes(data), little, offset, t)


def plain(seconds: float) -> int:
    """Random and mutated inputs for `seconds` (when atheris is not available)."""
    rng = random.Random(0)
    deadline = time.monotonic() + seconds
    runs = 0
    while time.monotonic() < deadline:
        if rng.random() < 0.3:
            giop_input(rng)
            runs += 1
            continue
        choice = rng.randrange(16)      # 15: a TypeCode taken from the input
        head = bytes([(choice << 4) | rng.randrange(16)])
        if choice < 15 and rng.random() < 0.7:
            t = FIXED_TCS[choice % len(FIXED_TCS)]
            try:
                body = bytearray(PY_ENCODE(t, _sample_value(rng, t)))
            except PycdrError:
                body = bytearray()
        else:
            body = bytearray(rng.randbytes(rng.randrange(64)))
        if choice == 15:
            seed = rng.choice(SEEDS)
            body = bytearray(len(seed).to_bytes(2, "little")) + seed + body
        for _ in range(rng.randrange(4)):
            if body:
                body[rng.randrange(len(body))] = rng.randrange(256)
        if body and rng.random() < 0.3:
            del body[rng.randrange(len(body)):]
        one_input(head + bytes(body))
        runs += 1
    return runs


def giop_input(rng) -> None:
    """A real Request or Reply's body, changed or cut, through one_input."""
    data = rng.choice(GIOP_SAMPLES)
    kind = (data[5] - 2) << 1 | data[7]
    body = bytearray(data[12:])
    for _ in range(rng.randrange(3)):
        body[rng.randrange(len(body))] = rng.choice([0, 1, 3, 0xFF, rng.randrange(256)])
    if rng.random() < 0.5:
        del body[rng.randrange(len(body) + 1):]
    one_input(bytes([rng.randrange(16) << 4 | kind << 1 | data[6] & 1]) + bytes(body))


def _sample_value(rng, t):
    """Some value of t: whatever random bytes decode to (zeros if they do not)."""
    data = rng.randbytes(rng.randrange(200))
    try:
        return PY_DECODE(t, data, allow_trailing=True)
    except PycdrError:
        return PY_DECODE(t, b"\0" * 64, allow_trailing=True)


def main() -> None:
    if len(sys.argv) >= 2 and sys.argv[1] == "--plain":
        seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 60
        runs = plain(seconds)
        print(f"fuzz_speedups: {runs} inputs in {seconds:.0f} s, no difference, no crash")
        return
    import atheris
    # Coverage feedback comes from the Python side (plans, readers, error paths):
    # the C code is built by gcc here, without libFuzzer's instrumentation.
    atheris.instrument_all()
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
