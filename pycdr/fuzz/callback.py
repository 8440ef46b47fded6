"""Call-outs: a target that connects to an address a case planted.

An ORB may call out where a request names another place: a valuetype's
codebase URL (it loads the class from there), the SendingContext RunTime
service context (the sender's CodeBase object, which an RMI-IIOP ORB asks
for a class's codebase or description), an object reference or a
corbaloc/corbaname URL in the arguments, a ReferenceAddr target.  That is
the way in of the deserialisation class of IIOP vulnerabilities: a server
that fetches a class, or makes a call, on the word of whoever sent it bytes.

With ``--callback`` the campaign listens on 127.0.0.1 (a port the system
picks) and mutations plant that address in those places, each case with its
own token (``pycdrcb`` and the case index in eight hex digits) as the URL's
path, the reference's object key, the value's class name.  Any connection
to the listener is a ``callback`` finding; the token in what the target sent
on it (an HTTP request line, a GIOP object key) names the case that planted
it.  The listener answers nothing (an HTTP request gets a 404, anything
else a close): a call-out is the finding, what the target would do with an
answer is not tried.

A finding's messages hold the listener's port.  Replayed later, the listener
takes that port again when it is free, else another, and the messages are
rewritten to name it (ports the system picks have five digits, so the text
keeps its length).
"""

from __future__ import annotations

import re
import socket
import threading
import time
from dataclasses import dataclass, field

from ..addressing.iiop import IIOPProfile, encode_profile
from ..codec.cdr import CDRWriter
from ..codec.ior import IOR, ior_to_string, write_ior
from ..codec.tcmarshal import write_typecode
from ..codec.typecode import value_tc
from ..giop.header import HEADER_SIZE
from ..giop.messages import ReferenceAddr, Request, decode_message, encode_message
from ..giop.service_contexts import SendingContextRunTime
from .mutators import Mutation, _path, _pick, _replace_sequence, fix_size

HOST = "127.0.0.1"
TOKEN_PREFIX = "pycdrcb"
TOKEN_RE = re.compile(rb"pycdrcb([0-9a-f]{8})")
# How long a case's call-out is waited for when it is replayed alone (the
# ORB calls out while it reads the request, before it answers; a slow JVM
# may take a while).
CALLBACK_SETTLE = 0.5
# Bytes of a call-out's first message kept in the finding.
KEPT = 200
# The share of mutations that plant the listener's address (when --callback).
PLANT_SHARE = 0.2
CODEBASE_TYPE_ID = "IDL:omg.org/SendingContext/CodeBase:1.0"
# The tag of a value with a codebase URL and one repository id (CORBA 3.x
# Part 2, 9.3.4.1: 0x7fffff00 | 1 codebase | 2 single repository id).
VALUE_TAG_CODEBASE = 0x7FFFFF03


def token_for(index: int) -> str:
    return f"{TOKEN_PREFIX}{index & 0xFFFFFFFF:08x}"


def tokens_in(data: bytes) -> set:
    """The case indexes of the tokens ``data`` holds."""
    return {int(m.group(1), 16) for m in TOKEN_RE.finditer(data)}


@dataclass
class CallOut:
    """One connection to the listener."""
    at: float                  # time.monotonic() of the accept
    peer: str
    head: bytes                # the first bytes the target sent (up to KEPT)
    protocol: str              # http | giop | silent | other
    tokens: set
    read: threading.Event = field(default_factory=threading.Event)   # head, tokens known

    def to_json(self) -> dict:
        return {"peer": self.peer, "protocol": self.protocol,
                "first_bytes": self.head.decode("latin-1"),
                "planted_by": sorted(self.tokens)}


class CallbackListener:
    """The campaign's listener on HOST: every connection is kept (in
    ``calls``), read for up to a second, answered (a 404 to HTTP), closed."""

    def __init__(self, port: int = 0):
        self.sock = self._bind(port)
        self.port = self.sock.getsockname()[1]
        self.calls: list[CallOut] = []
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @staticmethod
    def _bind(port: int) -> socket.socket:
        """A listening socket on ``port`` (when given and free), else on a
        port of five digits the system picks (replay rewrites keep lengths)."""
        for wanted in ([port] if port else []) + [0] * 8:
            sock = socket.socket()
            # (The port of a campaign just ended is taken again on replay: its
            # closed connections may still be in TIME_WAIT.)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((HOST, wanted))
            except OSError:
                sock.close()
                continue
            if sock.getsockname()[1] >= 10000:
                sock.listen(16)
                return sock
            sock.close()
        raise OSError("no free port of five digits for the call-out listener")

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"

    def count(self) -> int:
        with self._lock:
            return len(self.calls)

    def since(self, count: int, settle: float = 0.0) -> list:
        """The call-outs after the first ``count``, waited for up to ``settle`` s."""
        deadline = time.monotonic() + settle
        while self.count() <= count and time.monotonic() < deadline:
            time.sleep(0.02)
        with self._lock:
            calls = self.calls[count:]
        for call in calls:
            call.read.wait(1.5)          # (what it sent names the case that planted it)
        return calls

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            call = CallOut(time.monotonic(), f"{peer[0]}:{peer[1]}", b"", "silent", set())
            with self._lock:
                self.calls.append(call)
            threading.Thread(target=self._read, args=(conn, call), daemon=True).start()

    def _read(self, conn: socket.socket, call: CallOut) -> None:
        with conn:
            conn.settimeout(1.0)
            data = b""
            try:
                while len(data) < 4096:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                    if data.startswith(b"GIOP") and len(data) >= HEADER_SIZE and \
                            len(data) >= HEADER_SIZE + int.from_bytes(
                                data[8:12], "little" if data[6] & 1 else "big"):
                        break
                    if b"\r\n\r\n" in data or (not data.startswith(b"GIOP") and b"\n" in data):
                        break
                if data[:4] in (b"GET ", b"POST", b"HEAD"):
                    conn.sendall(b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            except OSError:
                pass
        call.head = data[:KEPT]
        call.tokens = tokens_in(data)
        call.protocol = ("giop" if data.startswith(b"GIOP") else
                         "http" if data[:4] in (b"GET ", b"POST", b"HEAD") else
                         "silent" if not data else "other")
        call.read.set()

    def close(self) -> None:
        self._closed = True
        try:
            # (A close alone leaves the port listening while the thread
            # waits in accept(); a shutdown wakes it.)
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass


# --------------------------------------------------------------------------
# Planting
class Planter:
    """What the planting mutation needs: the listener's address and the
    token of the case being made (set by the campaign before each case)."""

    def __init__(self, port: int):
        self.port = port
        self.token = token_for(0)
        self.share = PLANT_SHARE

    def ior(self, key: str | None = None) -> IOR:
        profile = encode_profile(IIOPProfile((1, 2), HOST, self.port,
                                             (key or self.token).encode(), (), False))
        return IOR(CODEBASE_TYPE_ID, (profile,))

    def urls(self) -> tuple:
        t, where = self.token, f"{HOST}:{self.port}"
        return (f"corbaloc:iiop:1.2@{where}/{t}", f"corbaloc::{where}/{t}",
                f"corbaname::{where}/{t}#{t}", f"http://{where}/{t}/x.jar",
                ior_to_string(self.ior()))

    def plant(self, msgs, i, rng, ctx, body_types=None):
        """One planting in message ``i`` (a Mutation), or None."""
        m = msgs[i]
        if len(m) < HEADER_SIZE or m[:4] != b"GIOP" or m[7] != 0:
            return None
        fields = ctx.fields(bytes(m), body_types)
        strings = [f for f in fields if f.path.startswith("request.body.")
                   and f.path.endswith(".length") and f.kind == "length"
                   and any(g.path == f.path[:-len("length")] + "nul" for g in fields)]
        anys = [f for f in fields if f.path.startswith("request.body.")
                and f.path.endswith(".typecode.kind")]
        ways = ["sending_context", "reference_target"] + ["string"] * bool(strings) + \
            ["valuetype"] * bool(anys)
        way = _pick(rng, ways)
        if way == "string":
            f = _pick(rng, strings)
            url = _pick(rng, self.urls())
            old = int.from_bytes(m[f.offset:f.offset + 4], "little" if m[6] & 1 else "big")
            if f.offset + 4 + old > len(m):
                return None
            _replace_sequence(m, f.offset, old, url.encode(), nul=True)
            return Mutation("callback", _path(i, f.path[:-len(".length")]), url[:60])
        if way == "valuetype":
            f = _pick(rng, anys)
            msgs[i] = m = bytearray(m[:f.offset]) + self._value_any(f.offset, bool(m[6] & 1))
            fix_size(m)
            # The CodeBase too: an RMI-IIOP ORB asks it for the class it lacks.
            self._with_context(msgs, i)
            return Mutation("callback", _path(i, f.path[:-len(".typecode.kind")]),
                            "valuetype with a codebase URL, SendingContext CodeBase")
        if way == "sending_context":
            if not self._with_context(msgs, i):
                return None
            return Mutation("callback", _path(i, "request.service_context"),
                            "SendingContext RunTime: CodeBase IOR")
        try:
            request, _ = decode_message(bytes(m), lenient=True)
        except Exception:         # (a mutated message that does not decode)
            return None
        if not isinstance(request, Request) or request.version < (1, 2):
            return None
        request.target = ReferenceAddr(0, self.ior())
        try:
            msgs[i] = bytearray(encode_message(request))
        except Exception:
            return None
        return Mutation("callback", _path(i, "request.target"), "ReferenceAddr IOR")

    def _value_any(self, offset: int, little: bool) -> bytes:
        """An any holding a value of a class no target has, its codebase URL
        the listener's: a TypeCode, then the value (an RMI repository id:
        the ORB hands it to its RMI-IIOP value handler)."""
        repo_id = f"RMI:{self.token}.Payload:0000000000000000"
        w = CDRWriter(little=little, offset=offset)
        write_typecode(w, value_tc(repo_id, "Payload"))
        w.write_long(VALUE_TAG_CODEBASE)
        w.write_string(f"http://{HOST}:{self.port}/{self.token}/")
        w.write_string(repo_id)
        return w.getvalue()

    def _with_context(self, msgs, i) -> bool:
        """Message ``i`` with a SendingContext RunTime context naming the
        listener's CodeBase; its body where it was modulo 8 (GIOP 1.0 and
        1.1 bodies follow the header unpadded)."""
        try:
            request, _ = decode_message(bytes(msgs[i]), lenient=True)
        except Exception:
            return False
        if not isinstance(request, Request) or request.body_offset is None:
            return False
        contexts = [c for c in request.service_contexts if c.context_id != 6]
        request.service_contexts = contexts + [SendingContextRunTime(ior=self.ior())]
        try:
            data = encode_message(request)
        except Exception:
            return False
        again, _ = decode_message(data, lenient=True)
        pad = (request.body_offset - again.body_offset) % 8
        if pad:
            # Trailing octets in the context's encapsulation move the body.
            w = CDRWriter().encapsulation_writer()
            write_ior(w, self.ior())
            request.service_contexts[-1] = _Padded(w.getvalue() + bytes(pad))
            data = encode_message(request)
        msgs[i] = bytearray(data)
        return True


@dataclass
class _Padded:
    """A SendingContext RunTime context with octets after its IOR."""
    data: bytes
    context_id: int = 6

    def encode_data(self, version=(1, 2)) -> bytes:
        return self.data


# --------------------------------------------------------------------------
class CallOuts:
    """The campaign's side (mixed into pycdr.fuzz.engine.Campaign, whose
    state it uses): the listener, the token of each case made, the call-outs
    a run of cases caused."""

    listener: CallbackListener | None = None

    def _setup_callback(self, enabled: bool, port: int = 0) -> None:
        if enabled:
            self.listener = CallbackListener(port)
            self.ctx.callback = Planter(self.listener.port)

    def _plant_token(self, index: int) -> None:
        if self.ctx.callback is not None:
            self.ctx.callback.token = token_for(index)

    def _callout_mark(self) -> int:
        return 0 if self.listener is None else self.listener.count()

    def _callouts(self, mark: int, settle: float = 0.0, messages=None) -> list:
        """The call-outs since ``mark`` (waited for up to ``settle`` s);
        given the ``messages`` of a case run alone, only those naming one
        of its tokens or none (a late call-out of an earlier case is not
        this case's)."""
        if self.listener is None:
            return []
        calls = self.listener.since(mark, settle)
        if messages is not None:
            planted = tokens_in(b"".join(messages))
            calls = [c for c in calls if not c.tokens or c.tokens & planted]
        return calls

    def _callout_details(self, calls) -> dict:
        return {"listener": self.listener.address, "callouts": len(calls),
                "calls": [c.to_json() for c in calls[:4]]}

    def _callout_suspect(self, calls, cases):
        """The case whose token the first call-out names, among ``cases``
        and the cases in flight; None when none does."""
        named = set().union(*(c.tokens for c in calls)) if calls else set()
        for case in list(cases) + list(self._in_flight):
            if case.index in named:
                return case
        return None

    def _close_callback(self) -> None:
        if self.listener is not None:
            self.listener.close()


# --------------------------------------------------------------------------
# Replay
def _port_forms(port: int) -> list:
    host = HOST.encode() + b"\0"
    binary = [host + port.to_bytes(2, "big"), host + port.to_bytes(2, "little")]
    return ([f"{HOST}:{port}".encode()] + binary +
            [b.hex().encode() for b in binary] + [b.hex().upper().encode() for b in binary])


def planted_port(messages) -> int | None:
    """The listener port ``messages`` name (as text or in a profile), if any."""
    data = b"".join(messages)
    m = re.search(rb"127\.0\.0\.1:(\d{5})", data)
    if m:
        return int(m.group(1))
    m = re.search(rb"127\.0\.0\.1\x00(..)", data, re.S)
    if m:
        # (The profile's byte order is the encapsulation's: try both.)
        for order in ("big", "little"):
            port = int.from_bytes(m.group(1), order)
            if port >= 10000:
                return port
    return None


def retarget(messages, old: int, new: int) -> list:
    """``messages`` naming port ``new`` where they named ``old``."""
    if old == new:
        return list(messages)
    out = []
    for data in messages:
        for before, after in zip(_port_forms(old), _port_forms(new)):
            data = data.replace(before, after)
        out.append(data)
    return out
