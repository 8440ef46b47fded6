"""Running client cases: serve a crafted object, run the client command against it, record every
byte both ways, and judge what the client sent and what it reported.

The server is not pycdr's ORB: it frames the client's messages with the sans-I/O codec and answers
them from the case's script (client_cases), so it can answer wrongly on purpose.  Each case gets
its own listening socket on 127.0.0.1 (a free port), and the client command its own process
(session), killed when the case's time is up ("hung").
"""

from __future__ import annotations

import json
import shlex
import socket
import threading
import time
from dataclasses import dataclass, field

from pycdr import codesets
from pycdr.errors import PycdrError
from pycdr.giop.connection import GiopConnection, Role
from pycdr.giop.events import NEED_DATA, ConnectionClosed, MessageReceived, ProtocolViolation
from pycdr.giop.header import HEADER_SIZE, MsgType, encode_header
from pycdr.giop.messages import (AddressingDisposition, CancelRequest, CloseConnection, KeyAddr,
                                 LocateReply, LocateRequest, LocateStatus, MessageError,
                                 ProfileAddr, ReferenceAddr, Reply, ReplyStatus, Request,
                                 encode_fragments, encode_message, fragment_message)
from pycdr.giop.service_contexts import CodeSetsContext, RawServiceContext
from pycdr.giop.sysexc import CompletionStatus, system_exception
from pycdr.addressing.iiop import CodeSetsComponent, IIOPProfile, decode_profile, make_ior
from pycdr.codec.ior import ior_from_string, ior_to_string
from pycdr.codec.marshal import read_value, write_value
from pycdr.orb.invocation import write_results
from pycdr.orb.jsonvalues import from_json as value_from_json, to_json as value_to_json
from pycdr.codec.typecode import TCKind

from .client_cases import ANSWERED_KEY, OOPS_ID, OOPS_MEMBERS, ClientCase, client_catalog
from .client_processes import BATCH, BatchClient, ClientCommandError, run_once
from .echo import ECHO_INTERFACE, ECHO_REPO_ID, load_echo_module
from .runner import NOT_RUN, Outcome, Result, judge_expectations, verdict_counts

HOST = "127.0.0.1"
PRIMARY_KEY = b"PycdrClientEcho"
FORWARDED_KEY = b"PycdrClientForwarded"
OBJECT_KEYS = (PRIMARY_KEY, FORWARDED_KEY, ANSWERED_KEY.encode())
PLACEHOLDERS = ("{ior}", "{corbaloc}", "{operation}", "{args}", "{count}")
MAX_CONNECTIONS = 64                 # a client that reconnects more than this is spinning
MAX_RECORDED = 1 << 20               # bytes recorded per connection and direction
STRAY_VALUE = 99999                  # the value in a reply for a request id never used
STRAY_TEXT = "stray reply; " * 30    # ... a string one
HUGE_SIZE = 0x7FFFFFF0
PAIR_WAIT = 3.0                      # seconds a concurrent-calls case waits for the second call
SERVER_SETTLE = 1.0                  # at most this long for the server to read the client's
                                     # last bytes after it exited


def check_command(command: str) -> list[str]:
    try:
        argv = shlex.split(command)
    except ValueError as e:
        raise ClientCommandError(f"cannot split the client command: {e}") from None
    if not argv:
        raise ClientCommandError("the client command is empty")
    if BATCH in command:
        if any(p in command for p in PLACEHOLDERS):
            raise ClientCommandError("a {batch} command is given each case on its standard "
                                     "input: it takes no " + ", ".join(PLACEHOLDERS))
        return argv
    if "{ior}" not in command and "{corbaloc}" not in command:
        raise ClientCommandError("the client command must contain {ior} or {corbaloc}")
    return argv


# --------------------------------------------------------------------------
# The crafted server
# --------------------------------------------------------------------------
@dataclass
class ConnectionRecord:
    chunks: list = field(default_factory=list)       # (from_client, bytes), in order
    sizes: dict = field(default_factory=lambda: {True: 0, False: 0})
    tcs_c: int | None = None                         # from the first CodeSets context
    tcs_w: int | None = None
    sock: object = None                              # the connection (to answer on it later)

    def record(self, from_client: bool, data: bytes) -> None:
        room = MAX_RECORDED - self.sizes[from_client]
        if room > 0 and data:
            self.chunks.append((from_client, data[:room]))
        self.sizes[from_client] += len(data)


@dataclass
class SeenRequest:
    connection: int
    message: object
    key: bytes | None
    addressing: str                                  # key | profile | reference


class CraftedServer:
    """One case's server: a listening socket and a thread per connection."""

    def __init__(self, case: ClientCase, interface):
        self.case = case
        self.operation = interface.all_operations()[case.operation]
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((HOST, 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.stop_event = threading.Event()
        self.accept_stop = threading.Event()         # set by settle(): no more accepting
        self.lock = threading.Lock()
        self.connections: list[ConnectionRecord] = []
        self.requests: list[SeenRequest] = []
        self.locates = 0
        self.sent_next: list[str] = []                # CancelRequest / MessageError names
        self.violations: list[str] = []
        self.answer_errors: list[str] = []            # the server's own: values it could not send
        self.threads: list[threading.Thread] = []
        self.closed_first = False
        self.pending = None                           # a call held back for its pair
        self.pair_timer = None
        self.concurrent = None      # a second call came while the first was held (or not)
        self.interleaved = False    # two replies' fragments went out in turn on one connection
        self.refused_connections = 0

    # --- references --------------------------------------------------------------
    def profile(self, key: bytes) -> IIOPProfile:
        comps = ()
        if self.case.codesets is not None and self.case.version >= (1, 1):
            comps = (CodeSetsComponent(*self.case.codesets),)
        return IIOPProfile(self.case.version, HOST, self.port, key, comps)

    def ior_for(self, key: bytes):
        return make_ior(ECHO_REPO_ID, [self.profile(key)])

    @property
    def ior(self) -> str:
        return ior_to_string(self.ior_for(PRIMARY_KEY))

    @property
    def corbaloc(self) -> str:
        v = self.case.version
        return f"corbaloc:iiop:{v[0]}.{v[1]}@{HOST}:{self.port}/{PRIMARY_KEY.decode()}"

    # --- running -----------------------------------------------------------------
    def __enter__(self):
        t = threading.Thread(target=self._accept, name="crafted-accept", daemon=True)
        t.start()
        self.threads.append(t)
        return self

    def settle(self, timeout: float) -> None:
        """Wait (up to ``timeout`` s) until every connection handler has seen its connection
        end: the client exited, so whatever it sent has arrived by then.

        A connection the client made just before it exited can still sit in the listen
        backlog, not yet accepted (seen on a loaded machine: a JVM's oneway judged as never
        sent). So the accept thread is stopped first and whatever is still queued is
        accepted here, before the handlers are joined."""
        deadline = time.monotonic() + timeout
        self.accept_stop.set()
        self.threads[0].join(max(deadline - time.monotonic(), 0))
        self.sock.setblocking(False)
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                break
            conn.setblocking(True)
            self._start_handler(conn)
        for t in list(self.threads[1:]):
            t.join(max(deadline - time.monotonic(), 0))

    def __exit__(self, *exc):
        if self.pair_timer is not None:
            self.pair_timer.cancel()
        self.stop_event.set()
        for t in list(self.threads):
            t.join(5)
        self.sock.close()

    def _accept(self) -> None:
        self.sock.settimeout(0.05)
        while not (self.stop_event.is_set() or self.accept_stop.is_set()):
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self._start_handler(conn)

    def _start_handler(self, conn: socket.socket) -> None:
        with self.lock:
            if len(self.connections) >= MAX_CONNECTIONS:
                self.refused_connections += 1
                conn.close()
                return
            index = len(self.connections)
            self.connections.append(ConnectionRecord())
        t = threading.Thread(target=self._serve, args=(conn, index), daemon=True)
        self.threads.append(t)
        t.start()

    def _serve(self, conn: socket.socket, index: int) -> None:
        record = self.connections[index]
        record.sock = conn
        giop = GiopConnection(Role.SERVER, lenient=True, check_request_ids=False)
        conn.settimeout(0.05)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while not self.stop_event.is_set():
                try:
                    data = conn.recv(65536)
                except socket.timeout:
                    continue
                except OSError:
                    return
                record.record(True, data)
                giop.receive_data(data)
                if not self._drain(giop, conn, index, record) or not data:
                    return
        finally:
            conn.close()

    def _drain(self, giop, conn, index, record) -> bool:
        """Handle the complete messages; False once the connection is done with."""
        while True:
            event = giop.next_event()
            if event is NEED_DATA:
                return True
            if isinstance(event, ConnectionClosed):
                return False
            if isinstance(event, ProtocolViolation):
                self.violations.append(f"connection {index}: {event.error}")
                continue
            if not isinstance(event, MessageReceived):
                continue
            msg = event.message
            if isinstance(msg, CloseConnection):
                return False
            if isinstance(msg, Request):
                try:
                    actions = self._on_request(msg, index, record)
                except PycdrError as e:
                    # The case's value cannot go in the code set the client chose (a
                    # non-ASCII char under TCS-C UTF-8): answered as a server would.
                    self.answer_errors.append(str(e))
                    actions = [self.reply(msg, record, status=ReplyStatus.SYSTEM_EXCEPTION,
                                          system_exception=system_exception(
                                              "IDL:omg.org/CORBA/DATA_CONVERSION:1.0", 0,
                                              CompletionStatus.COMPLETED_NO))]
            elif isinstance(msg, LocateRequest):
                self.locates += 1
                actions = [self._locate_reply(msg)]
            elif isinstance(msg, (CancelRequest, MessageError)):
                # A client may cancel a call it gave up on, and answer bytes it cannot read
                # with MessageError: both are what it sent next, not mistakes.
                self.sent_next.append(msg.type_name)
                continue
            else:
                self.violations.append(f"connection {index}: a {msg.type_name} from a client")
                continue
            if not self._act(conn, record, actions):
                return False

    def _act(self, conn, record, actions) -> bool:
        try:
            for action in actions:
                if action == "close":
                    conn.shutdown(socket.SHUT_RDWR)
                    return False
                if isinstance(action, tuple) and action[0] == "trickle":
                    for i in range(len(action[1])):
                        conn.sendall(action[1][i:i + 1])
                        record.record(False, action[1][i:i + 1])
                        time.sleep(0.01)
                    continue
                conn.sendall(action)
                record.record(False, action)
        except OSError:
            return False
        return True

    # --- answers -------------------------------------------------------------------
    def _on_request(self, req: Request, index: int, record: ConnectionRecord) -> list:
        # GIOP 1.0 has no code set negotiation (13.10.2.6: its char data is ISO-8859-1 and it
        # has no wchar): a CodeSets context in a 1.0 request changes nothing.
        for ctx in req.service_contexts:
            if isinstance(ctx, CodeSetsContext) and record.tcs_c is None \
                    and req.version >= (1, 1):
                record.tcs_c, record.tcs_w = ctx.char_data, ctx.wchar_data
        key, addressing = _target_key(req.target)
        if req.operation != self.case.operation:
            return self._builtin(req, record)
        with self.lock:
            self.requests.append(SeenRequest(index, req, key, addressing))
            nth = len(self.requests)
        if req.response_flags & 3 == 0:
            return []
        return SCRIPTS[self.case.script](self, req, nth, index, record, key, addressing)

    def _builtin(self, req, record) -> list:
        """_is_a (true for the Echo) and _non_existent (false) the way any object answers;
        any other operation is the client's mistake (recorded by the judge)."""
        if req.operation == "_is_a":
            return [self.reply(req, record, write=lambda w: w.write_boolean(True))]
        if req.operation == "_non_existent":
            return [self.reply(req, record, write=lambda w: w.write_boolean(False))]
        self.violations.append(f"a request for {req.operation!r}, not {self.case.operation!r}")
        return [self.reply(req, record, status=ReplyStatus.SYSTEM_EXCEPTION,
                           system_exception=system_exception(
                               "IDL:omg.org/CORBA/BAD_OPERATION:1.0", 0,
                               CompletionStatus.COMPLETED_NO))]

    def _locate_reply(self, msg: LocateRequest) -> bytes:
        key, _ = _target_key(msg.target)
        forward = self.forward_target(key) if self.case.script == "forward" else None
        if forward is not None:
            return encode_message(LocateReply(version=msg.version, little=self.case.little,
                                              request_id=msg.request_id,
                                              locate_status=LocateStatus.OBJECT_FORWARD,
                                              forward=self.ior_for(forward)))
        status = LocateStatus.OBJECT_HERE if key in OBJECT_KEYS \
            else LocateStatus.UNKNOWN_OBJECT
        return encode_message(LocateReply(version=msg.version, little=self.case.little,
                                          request_id=msg.request_id, locate_status=status))

    def answer_pending_alone(self) -> None:
        with self.lock:
            pending, self.pending = self.pending, None
            if pending is not None:
                self.concurrent = False
        if pending is not None:
            req, record = pending
            self._act(record.sock, record,
                      fragment_message(self.value_reply(req, record),
                                       self.case.param("size", 64) + 16))

    def forward_target(self, key):
        """Where a forward case sends a request for ``key`` (None: serve it here)."""
        if key == PRIMARY_KEY:
            return FORWARDED_KEY
        if key == FORWARDED_KEY and self.case.param("loop"):
            return PRIMARY_KEY
        return None

    def reply(self, req, record, *, status=ReplyStatus.NO_EXCEPTION, write=None, contexts=(),
              request_id=None, **fields) -> bytes:
        msg = Reply(version=req.version, little=self.case.little,
                    request_id=req.request_id if request_id is None else request_id,
                    reply_status=status, service_contexts=list(contexts), **fields)
        return encode_message(msg, write_body=self.body_writer(record, write))

    def body_writer(self, record, write):
        if write is None:
            return None

        def with_codesets(w):
            w.tcs_c = record.tcs_c or codesets.ISO_8859_1
            w.tcs_w = record.tcs_w or codesets.UTF_16
            write(w)
        return with_codesets

    def result_writer(self, json_value):
        """Writes the reply body for ``json_value``: the result, or (for an operation with
        inout/out parameters) the list of the result and those values."""
        types = self.operation.result_types
        items = [json_value] if len(types) == 1 else list(json_value or ())
        values = [self.reference_value(item) if _is_reference(t)
                  else value_from_json(t, item) for t, item in zip(types, items)]
        return lambda w: write_results(w, self.operation, values)

    def reference_value(self, item):
        """The IOR answered for a reference given as {"type_id": ..., "object_key": ...} (this
        server's own address: the client may call it)."""
        if not isinstance(item, dict):
            return value_from_json(self.operation.result, item)
        profile = IIOPProfile(self.case.version, HOST, self.port,
                              item["object_key"].encode(), ())
        return make_ior(item["type_id"], [profile])

    def value_reply(self, req, record, value=None, **kw) -> bytes:
        """A NO_EXCEPTION reply with ``value`` (a JSON form; the case's value if None)."""
        value = self.case.expected_value if value is None else value
        return self.reply(req, record, write=self.result_writer(value), **kw)


def _target_key(target):
    if isinstance(target, KeyAddr):
        return target.object_key, "key"
    try:
        if isinstance(target, ProfileAddr):
            return decode_profile(target.profile).object_key, "profile"
        if isinstance(target, ReferenceAddr):
            profiles = target.ior.profiles
            return decode_profile(profiles[target.selected_profile_index]).object_key, \
                "reference"
    except (PycdrError, IndexError):
        pass
    return None, "unreadable"


# --------------------------------------------------------------------------
# Scripts: how the server answers the client's call
# (server, request, nth call, connection index, its record, target key, addressing) -> actions
# --------------------------------------------------------------------------
def _contexts(case: ClientCase) -> list:
    out = []
    for kind, n in case.param("contexts", ()):
        if kind == "pad":
            out.append(RawServiceContext(id=0x50594345, data=b"\x00" * n))
        elif kind == "unknown":
            out.append(RawServiceContext(id=0x50594344, data=b"\x00\x01\x02\x03pycdr"))
        elif kind == "empty":
            out.append(RawServiceContext(id=0x7FFFFF00, data=b""))
    return out


def script_reply(s, req, nth, index, record, key, addressing):
    return [s.value_reply(req, record, contexts=_contexts(s.case))]


def script_system_exception(s, req, nth, index, record, key, addressing):
    completed = CompletionStatus[s.case.param("completed", "COMPLETED_NO")]
    exc = system_exception(f"IDL:omg.org/CORBA/{s.case.param('name')}:1.0", 0x50590007,
                           completed)
    return [s.reply(req, record, status=ReplyStatus.SYSTEM_EXCEPTION, system_exception=exc)]


def script_user_exception(s, req, nth, index, record, key, addressing):
    repo_id = s.case.param("id", OOPS_ID)

    def write(w):
        w.write_string(repo_id)
        w.write_long(OOPS_MEMBERS["code"])
        w.write_string(OOPS_MEMBERS["why"])
    return [s.reply(req, record, status=ReplyStatus.USER_EXCEPTION, write=write)]


def script_forward(s, req, nth, index, record, key, addressing):
    target = s.forward_target(key)
    if target is None:
        return [s.value_reply(req, record)]
    status = ReplyStatus.LOCATION_FORWARD_PERM if s.case.param("perm") and req.version >= (1, 2) \
        else ReplyStatus.LOCATION_FORWARD
    return [s.reply(req, record, status=status, forward=s.ior_for(target))]


def script_needs_addressing(s, req, nth, index, record, key, addressing):
    if addressing == "key" and req.version >= (1, 2):
        return [s.reply(req, record, status=ReplyStatus.NEEDS_ADDRESSING_MODE,
                        addressing_disposition=AddressingDisposition.ProfileAddr)]
    return [s.value_reply(req, record)]


def script_unknown_id_first(s, req, nth, index, record, key, addressing):
    stray = s.value_reply(req, record, value=STRAY_VALUE, request_id=req.request_id ^ 0x5A5A0000)
    return [stray, s.value_reply(req, record)]


def _bare_header(req, s, msg_type) -> bytes:
    return encode_header(req.version, s.case.little, msg_type, 0)


def script_message_error(s, req, nth, index, record, key, addressing):
    return [_bare_header(req, s, MsgType.MessageError), "close"]


def script_close_connection(s, req, nth, index, record, key, addressing):
    with s.lock:
        first = not s.closed_first
        s.closed_first = True
    if first:
        return [_bare_header(req, s, MsgType.CloseConnection), "close"]
    return [s.value_reply(req, record)]


def script_abrupt_close(s, req, nth, index, record, key, addressing):
    return ["close"]


def script_fragmented(s, req, nth, index, record, key, addressing):
    size = s.case.param("size", 64)
    data = s.value_reply(req, record)
    if req.version >= (1, 2):
        pieces = fragment_message(data, size + 16)
        if not s.case.param("interleave"):
            return pieces
        # Another reply's fragments between this one's (a request id the client never used:
        # only the reassembly by request id keeps the two apart).
        stray = fragment_message(s.value_reply(req, record, value=STRAY_TEXT,
                                               request_id=req.request_id ^ 0x5A5A0000),
                                 size + 16)
        return _mixed(stray, pieces)
    msg = Reply(version=req.version, little=s.case.little, request_id=req.request_id)
    return encode_fragments(msg, data, size + HEADER_SIZE,
                            write_body=s.body_writer(record,
                                                     s.result_writer(s.case.expected_value)))


def _mixed(*fragment_lists) -> list:
    """The fragments of several messages taken in turn, one of each."""
    mixed = []
    for i in range(max(len(p) for p in fragment_lists)):
        mixed.extend(p[i] for p in fragment_lists if i < len(p))
    return mixed


def script_interleaved_calls(s, req, nth, index, record, key, addressing):
    """Two concurrent calls: the first is held until the second arrives. On one connection,
    the two replies go out as GIOP 1.2 fragments taken in turn; on two connections (a client
    that opens one per outstanding call), each as its own fragments; a second call that does
    not come within PAIR_WAIT, the first answered alone."""
    size = s.case.param("size", 64) + 16
    with s.lock:
        pending, s.pending = s.pending, None
        if pending is None and s.concurrent is None:
            s.pending = (req, record)
            s.pair_timer = threading.Timer(PAIR_WAIT, s.answer_pending_alone)
            s.pair_timer.daemon = True
            s.pair_timer.start()
            return []
        if pending is None:
            # The first call was answered alone: this one came after it, not beside it.
            return fragment_message(s.value_reply(req, record, value=s.case.param("second")),
                                    size)
        s.pair_timer.cancel()
        s.concurrent = True
    first_req, first_record = pending
    first = fragment_message(s.value_reply(first_req, first_record), size)
    second = fragment_message(s.value_reply(req, record, value=s.case.param("second")), size)
    if first_record is record:
        s.interleaved = True
        return _mixed(first, second)
    s._act(first_record.sock, first_record, first)
    return second


def script_huge_claim(s, req, nth, index, record, key, addressing):
    """The reply's header claiming HUGE_SIZE octets, 32 of them, then a close (or nothing more
    with the ``stall`` parameter)."""
    data = s.value_reply(req, record)
    order = "little" if s.case.little else "big"
    head = data[:8] + HUGE_SIZE.to_bytes(4, order) + data[HEADER_SIZE:HEADER_SIZE + 32]
    return [head] if s.case.param("stall") else [head, "close"]


def script_unpadded(s, req, nth, index, record, key, addressing):
    """A GIOP 1.2 reply whose header ends at 4 mod 8 (a 4-octet service context), its body
    written right after it without the 4 padding octets, the size reduced to match."""
    data = s.value_reply(req, record, contexts=[RawServiceContext(id=0x50594345,
                                                                  data=b"\x00" * 4)])
    header_end = HEADER_SIZE + 12 + 12       # request id, status, count; one context of 4
    order = "little" if s.case.little else "big"
    size = int.from_bytes(data[8:12], order) - 4
    return [data[:8] + size.to_bytes(4, order) + data[12:header_end] + data[header_end + 4:]]


def script_no_reply(s, req, nth, index, record, key, addressing):
    return []


def script_trickle(s, req, nth, index, record, key, addressing):
    return [("trickle", s.value_reply(req, record))]


SCRIPTS = {
    "reply": script_reply,
    "system_exception": script_system_exception,
    "user_exception": script_user_exception,
    "forward": script_forward,
    "needs_addressing": script_needs_addressing,
    "unknown_id_first": script_unknown_id_first,
    "message_error": script_message_error,
    "close_connection": script_close_connection,
    "abrupt_close": script_abrupt_close,
    "fragmented": script_fragmented,
    "interleaved_calls": script_interleaved_calls,
    "huge_claim": script_huge_claim,
    "trickle": script_trickle,
    "no_reply": script_no_reply,
    "unpadded": script_unpadded,
}


# --------------------------------------------------------------------------
# Judging
# --------------------------------------------------------------------------
@dataclass
class ClientResult(Result):
    port: int = 0
    connections: list = field(default_factory=list)   # ConnectionRecords
    stdout: str = ""
    stderr: str = ""
    command: list = field(default_factory=list)

    def conversations(self) -> list:
        return [c.chunks for c in self.connections]

    def to_json(self) -> dict:
        out = super().to_json()
        out.update(operation=self.case.operation, script=self.case.script,
                   command=self.command, client_stdout=self.stdout[-2000:],
                   client_stderr=self.stderr[-2000:],
                   connections=[[{"from": "client" if c else "server", "bytes": b.hex()}
                                 for c, b in conn.chunks] for conn in self.connections])
        return out


def parse_reports(stdout: str) -> list:
    """The client's JSON lines (the lines that are JSON objects), in order."""
    reports = []
    for line in stdout.strip().splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                reports.append(obj)
    return reports


def parse_report(stdout: str):
    """The client's JSON line (the last line that is a JSON object), or None."""
    reports = parse_reports(stdout)
    return reports[-1] if reports else None


def _exception_name(info: dict) -> str:
    name = info.get("name")
    if not name:
        repo_id = str(info.get("exception_id") or info.get("id") or "")
        name = repo_id.rsplit("/", 1)[-1].split(":", 1)[0]
    return str(name)


def _completed(value) -> str:
    if isinstance(value, int) and value in CompletionStatus._value2member_map_:
        return CompletionStatus(value).name
    return str(value)


def classify_report(case: ClientCase, report, returncode, hung: bool,
                    operation=None) -> Outcome:
    if hung:
        return Outcome("hung")
    if report is None:
        if returncode != 0:
            return Outcome("crashed", {"exit": returncode})
        return Outcome("no_report")
    if "result" in report:
        got = report["result"]
        ok = result_matches(operation, got, case.expected_value)
        details = {"ok": ok}
        if not ok:
            details["got"] = repr(got)[:200]
        return Outcome("result", details)
    if isinstance(report.get("system_exception"), dict):
        info = report["system_exception"]
        return Outcome("system_exception", {"name": _exception_name(info),
                                            "minor": info.get("minor"),
                                            "completed": _completed(info.get("completed"))})
    if isinstance(report.get("user_exception"), dict):
        info = report["user_exception"]
        return Outcome("user_exception", {"id": info.get("id"),
                                          "members_ok": info.get("members") == OOPS_MEMBERS})
    return Outcome("bad_report", {"report": json.dumps(report)[:200]})


def classify_reports(case: ClientCase, reports: list, returncode, hung: bool,
                     operation=None) -> Outcome:
    """The outcome of a case's calls: for one call, its report (the last); for concurrent
    calls, the first exception reported, or whether the results are the values answered (in
    any order: the calls were made at once)."""
    if case.calls == 1 or hung:
        return classify_report(case, reports[-1] if reports else None, returncode, hung,
                               operation)
    if len(reports) < case.calls:
        outcome = classify_report(case, None, returncode, hung, operation)
        outcome.details["reports"] = len(reports)
        return outcome
    for report in reports:
        if "result" not in report:
            return classify_report(case, report, returncode, hung, operation)
    result_type = operation.result if operation is not None else None
    got = sorted(json.dumps(_canonical(result_type, r["result"])) for r in reports)
    want = sorted(json.dumps(_canonical(result_type, v)) for v in case.expected_values)
    return Outcome("result", {"ok": got == want})


def result_matches(operation, got, want) -> bool:
    """Whether the client's "result" is the answer ``want`` (both JSON forms): one value, or
    for an operation with inout/out parameters the list of its result and those values."""
    types = operation.result_types if operation is not None else (None,)
    if len(types) == 0:
        return got is None
    if len(types) == 1:
        return _value_matches(types[0], got, want)
    return isinstance(got, list) and len(got) == len(types) and \
        all(_value_matches(t, g, w) for t, g, w in zip(types, got, want))


def _is_reference(t) -> bool:
    while t is not None and t.kind() == TCKind.tk_alias:
        t = t.content_type()
    return t is not None and t.kind() == TCKind.tk_objref


def _value_matches(t, got, want) -> bool:
    if _is_reference(t) and isinstance(want, dict):
        return _reference_matches(got, want)
    return _same(_canonical(t, got), _canonical(t, want))


def _reference_matches(got, want: dict) -> bool:
    """A reference the client printed (a stringified IOR) is the one answered when its type id
    and an IIOP profile's object key are: its ORB may stringify it anew, with other components
    or another host name."""
    if not isinstance(got, str):
        return False
    try:
        ior = ior_from_string(got)
    except (PycdrError, ValueError):
        return False
    keys = set()
    for profile in ior.profiles:
        try:
            keys.add(decode_profile(profile).object_key)
        except PycdrError:
            continue
    return ior.type_id == want["type_id"] and want["object_key"].encode() in keys


def _canonical(result_type, value):
    """``value`` in the one JSON form of its type (an octet sequence printed as a list of
    numbers or as hex, a fixed as a number or a string, compare equal); as it came when it is
    no value of the type."""
    if result_type is None or value is None:
        return value
    try:
        return value_to_json(value_from_json(result_type, value))
    except ValueError:
        return value


def _same_value(value_type, a, b) -> bool:
    """Whether two JSON forms are one value of ``value_type`` (a fixed's "0" is "0.000")."""
    try:
        return value_from_json(value_type, a) == value_from_json(value_type, b)
    except ValueError:
        return a == b


def _same(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and float(a) == b
    return a == b and type(a) is type(b)


def request_problems(server: CraftedServer, case: ClientCase) -> list[str]:
    """What is wrong with what the client sent (empty: nothing)."""
    problems = list(server.violations)
    allowed_c = allowed_w = None
    if case.codesets is not None and case.version >= (1, 1):
        char_native, char_conv, wchar_native, wchar_conv = case.codesets
        allowed_c = {char_native, *char_conv, codesets.UTF_8}
        allowed_w = {wchar_native, *wchar_conv, codesets.UTF_16}
    for seen in server.requests:
        req = seen.message
        if req.version > case.version:
            problems.append(f"a GIOP {req.version[0]}.{req.version[1]} request to a "
                            f"{case.version[0]}.{case.version[1]} profile")
        if seen.key not in OBJECT_KEYS:
            problems.append(f"a request for the object key {seen.key!r}")
        record = server.connections[seen.connection]
        for ctx in req.service_contexts:
            if isinstance(ctx, CodeSetsContext) and allowed_c is not None:
                if ctx.char_data not in allowed_c:
                    problems.append(f"TCS-C {codesets.name(ctx.char_data)}, which the IOR "
                                    "does not offer")
                # TCS-W 0 names no code set: a client that sends no wchar data may say so
                # (omniORB does in GIOP 1.1).
                if ctx.wchar_data not in allowed_w and (ctx.wchar_data or case.wide):
                    problems.append(f"TCS-W {codesets.name(ctx.wchar_data)}, which the IOR "
                                    "does not offer")
        try:
            reader = req.body_reader(tcs_c=record.tcs_c or codesets.ISO_8859_1,
                                     tcs_w=record.tcs_w or codesets.UTF_16)
            args = [value_to_json(read_value(reader, p.type))
                    for p in server.operation.in_params]
        except (PycdrError, ValueError) as e:
            problems.append(f"arguments unreadable: {e}")
            continue
        if not all(_same_value(p.type, got, want)
                   for p, got, want in zip(server.operation.in_params, args, case.args)):
            problems.append(f"arguments {args!r}, the contract says {case.args!r}")
    return problems


def request_details(server: CraftedServer) -> dict:
    reqs = server.requests
    first_ctx = next((ctx for s in reqs for ctx in s.message.service_contexts
                      if isinstance(ctx, CodeSetsContext)), None)
    details = {"requests": len(reqs), "locate_requests": server.locates,
               "sent_next": ",".join(server.sent_next) or None,
               "connections": len(server.connections),
               "reconnected": len({s.connection for s in reqs}) > 1,
               # Concurrent calls on one connection (None: there was one call).
               "multiplexed": len({s.connection for s in reqs}) == 1 if len(reqs) > 1
               else None,
               "concurrent": server.concurrent, "interleaved": server.interleaved,
               "answer_error": "; ".join(server.answer_errors)[:200] or None,
               "forwarded": any(s.key == FORWARDED_KEY for s in reqs),
               # 0 for a oneway (response_expected false; SyncScope NONE or WITH_TRANSPORT).
               "response_flags": reqs[0].message.response_flags if reqs else None,
               "readdressed": any(s.addressing != "key" for s in reqs),
               "codeset_context": first_ctx is not None,
               "tcs_c": codesets.name(first_ctx.char_data) if first_ctx else None,
               "tcs_w": codesets.name(first_ctx.wchar_data) if first_ctx else None}
    if reqs:
        m = reqs[0].message
        details.update(request_version=f"{m.version[0]}.{m.version[1]}",
                       request_little_endian=m.little)
    return details


# --------------------------------------------------------------------------
class ClientRunner:
    """Runs client cases with one client command (a template with {ior}, {corbaloc},
    {operation} and {args}, split like a shell would split it; no shell runs it), or with
    one batch process for them all (a command with {batch}: client_processes)."""

    def __init__(self, command: str, interface, *, wide_chars: bool = True, progress=None,
                 cwd: str | None = None, env: dict | None = None, unsupported=None):
        self.command = command
        # operation -> why the client command cannot express a call of it (its cases not run)
        self.unsupported = dict(unsupported or {})
        self.argv = check_command(command)
        self.interface = interface
        self.wide_chars = wide_chars
        self.progress = progress
        self.cwd = cwd
        self.env = env
        self.batch = BatchClient(self.argv, cwd=cwd, env=env) if BATCH in command else None

    def close(self) -> None:
        """End the batch process, if there is one."""
        if self.batch is not None:
            self.batch.close()

    def applicable(self, case: ClientCase) -> str:
        if case.wide and not self.wide_chars:
            return "wide characters are not asked of this client (it is known to abort)"
        if case.operation in self.unsupported:
            return f"the client command cannot call {case.operation}: " \
                   f"{self.unsupported[case.operation]}"
        if case.calls > 1 and "{count}" not in self.command and self.batch is None:
            return "the client command takes no {count}: it makes one call at a time"
        return ""

    def case_values(self, server: CraftedServer, case: ClientCase) -> dict:
        """What the command is given for ``case``: the batch contract's names -> values."""
        return {"ior": server.ior, "corbaloc": server.corbaloc, "operation": case.operation,
                "args": case.args, "count": case.calls}

    def argv_for(self, server: CraftedServer, case: ClientCase) -> list[str]:
        values = {f"{{{k}}}": v if isinstance(v, str) else json.dumps(v)
                  for k, v in self.case_values(server, case).items()}
        out = []
        for word in self.argv:
            for name, value in values.items():
                word = word.replace(name, value)
            out.append(word)
        return out

    def run(self, case: ClientCase) -> ClientResult:
        why = self.applicable(case)
        if why:
            return ClientResult(case, NOT_RUN, None, why)
        start = time.monotonic()
        with CraftedServer(case, self.interface) as server:
            if self.batch is None:
                argv = self.argv_for(server, case)
                stdout, stderr, returncode, hung = run_once(argv, case.timeout, cwd=self.cwd,
                                                            env=self.env)
            else:
                line = self.case_values(server, case)
                argv = [*self.batch.argv, json.dumps(line)]
                stdout, stderr, returncode, hung = self.batch.run(line, case.timeout)
            server.settle(SERVER_SETTLE)
        outcome = classify_reports(case, parse_reports(stdout), returncode, hung,
                                   server.operation)
        outcome.details.update(request_details(server))
        problems = request_problems(server, case)
        if problems:
            outcome.details["reported"] = outcome.kind
            outcome.kind = "bad_request"
            outcome.details["problem"] = "; ".join(problems)[:300]
        verdict, reason, code = judge_expectations(case, outcome)
        if outcome.kind == "bad_request":
            reason = f"the client sent something wrong: {outcome.details['problem']}"
        received = b"".join(b for conn in server.connections for c, b in conn.chunks if c)
        sent = [b for conn in server.connections for c, b in conn.chunks if not c]
        result = ClientResult(case, verdict, outcome, reason, reason_code=code, sent=sent,
                              received=received[:4096], elapsed=time.monotonic() - start,
                              port=server.port, connections=server.connections,
                              stdout=stdout, stderr=stderr, command=argv)
        if self.progress:
            self.progress(result)
        return result


@dataclass
class ClientRun:
    command: str
    results: list = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def counts(self) -> dict:
        return verdict_counts(self.results)

    def describe(self) -> str:
        return f"client: {self.command}"


class ClientSuite:
    """The client cases for one client command, ready to run one by one (pytest) or all."""

    def __init__(self, command: str, cases=None, *, wide_chars: bool = True, groups=None,
                 progress=None, cwd=None, env=None, unsupported=None):
        interface = load_echo_module().interfaces[ECHO_INTERFACE]
        self.runner = ClientRunner(command, interface, wide_chars=wide_chars,
                                   progress=progress, cwd=cwd, env=env, unsupported=unsupported)
        cases = client_catalog() if cases is None else cases
        self.cases = [c for c in cases if not groups or c.group in groups]
        self.run = ClientRun(command)

    def run_case(self, case: ClientCase) -> ClientResult:
        result = self.runner.run(case)
        self.run.results.append(result)
        self.run.elapsed += result.elapsed
        return result

    def run_all(self) -> ClientRun:
        try:
            for case in self.cases:
                self.run_case(case)
        finally:
            self.runner.close()
        return self.run


def run_client_suite(command: str, cases=None, **kw) -> ClientRun:
    return ClientSuite(command, cases, **kw).run_all()
