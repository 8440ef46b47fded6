"""Decoded GIOP messages in, call rows out (sans-I/O: no sockets, no files, no clock).

    tracker = CallTracker(rows.append)
    conn = tracker.connection(stream, "10.0.0.1", 40000, "10.0.0.2", 2809, community_id)
    tracker.message(conn, 0, request_json, ts_ns)     # side 0 sent it
    tracker.message(conn, 1, reply_json, ts_ns)       # side 1: one row out
    tracker.closed(conn)                              # what still waits: rows out
    tracker.finish()

Messages are ``pycdr decode --json`` objects (``Message.to_json()``, as
:class:`pycdr.capture.giop.CaptureDecoder` makes them; ``reassembled`` when joined
from fragments).  A row (:mod:`pycdr.calls.schema`) is emitted per Request with its
Reply, oneway Request, LocateRequest with its LocateReply, CancelRequest, request
left unanswered and reply matching no request; and per gap and undecodable run of
bytes.  Requests waiting for their reply are held in a table bounded by count
(``max_pending``) and age (``max_age_ns``, in the traffic's time): what it evicts
becomes a ``no_reply`` row (``counts.evicted``), so memory is flat in the traffic's
size.
"""

from __future__ import annotations

from collections import OrderedDict
from functools import lru_cache

from ..addressing.objectkey import identify, printable
from ..codec.ior import IOR, ior_from_string
from ..errors import PycdrError
from ..giop.messages.model import KeyAddr, Reply, ReplyStatus, Request
from ..giop.minorcodes import minor_code_name
from .schema import EMPTY_ROW

MAX_PENDING = 100_000
MAX_AGE_NS = 600 * 1_000_000_000
# Object keys whose interface was learned, kept at most (the oldest learned first out).
MAX_INTERFACES = 100_000
_HEADER = 12

_FAILED = frozenset(("USER_EXCEPTION", "SYSTEM_EXCEPTION", "UNKNOWN_OBJECT",
                     "LOC_SYSTEM_EXCEPTION"))
_SUCCEEDED = frozenset(("NO_EXCEPTION", "LOCATION_FORWARD", "LOCATION_FORWARD_PERM",
                        "NEEDS_ADDRESSING_MODE", "OBJECT_HERE", "OBJECT_FORWARD",
                        "OBJECT_FORWARD_PERM", "LOC_NEEDS_ADDRESSING_MODE"))
# The waiting table's key of a request: its kind, the side that sent it and its id (a
# LocateRequest's ids are its own: GIOP lets them coincide with a Request's; with
# bidirectional GIOP each side numbers the requests it sends).
_REQUEST, _LOCATE = 0, 1
# (the common versions' text, made once)
_VERSION_TEXT = {(1, minor): f"1.{minor}" for minor in range(4)}


def message_entry(msg) -> dict:
    """What :meth:`CallTracker.message` reads of ``msg.to_json()``, made without the rest
    (service contexts, offsets, the body's hex) for a Request and for a Reply that
    carries results or a user exception; any other message: its whole ``to_json()``."""
    kind = type(msg)
    if kind is Request:
        v = msg.version
        entry = {"type": "Request", "version": f"{v[0]}.{v[1]}", "little_endian": msg.little,
                 "message_size": msg.message_size, "request_id": msg.request_id,
                 "target": _target_entry(msg.target), "operation": msg.operation,
                 "warnings": [w.to_json() for w in msg.warnings]}
        if v >= (1, 2):
            entry["response_flags"] = msg.response_flags
        else:
            entry["response_expected"] = msg.response_expected
        return entry
    if kind is Reply and msg.reply_status in _PLAIN_REPLIES:
        v = msg.version
        entry = {"type": "Reply", "version": f"{v[0]}.{v[1]}", "little_endian": msg.little,
                 "message_size": msg.message_size, "request_id": msg.request_id,
                 "reply_status": _PLAIN_REPLIES[msg.reply_status],
                 "warnings": [w.to_json() for w in msg.warnings]}
        if msg.exception_id is not None:
            entry["exception_id"] = msg.exception_id
        return entry
    return msg.to_json()


def _target_entry(target) -> dict:
    if isinstance(target, KeyAddr):
        # (its object_key_text, a join a byte, is the tracker's own to make)
        return {"disposition": "KeyAddr", "object_key": target.object_key.hex()}
    return target.to_json()


# Reply statuses whose JSON has no typed body (system exception, forward): their names.
_PLAIN_REPLIES = {s: s.name for s in (ReplyStatus.NO_EXCEPTION,
                                         ReplyStatus.USER_EXCEPTION)}


class CallCounts:
    """What the tracker did, for reports and metrics."""
    __slots__ = ("rows", "outcomes", "evicted", "pending", "pending_peak", "connections")

    def __init__(self):
        self.rows = 0
        self.outcomes: dict = {}
        self.evicted = 0            # requests the pending table let go (no_reply rows)
        self.pending = 0
        self.pending_peak = 0
        self.connections = 0

    def to_json(self) -> dict:
        return {"rows": self.rows, "outcomes": dict(sorted(self.outcomes.items())),
                "evicted": self.evicted, "pending": self.pending,
                "pending_peak": self.pending_peak, "connections": self.connections}

    def summary(self) -> str:
        """One line: rows by outcome, evictions, the most requests waiting at once."""
        outcomes = ", ".join(f"{n} {o}" for o, n in sorted(self.outcomes.items(),
                                                           key=lambda i: -i[1]))
        return f"{self.rows} calls ({outcomes or 'none'}) on {self.connections} " \
               f"connection{'' if self.connections == 1 else 's'}; {self.evicted} evicted " \
               f"from the pending table (at most {self.pending_peak} waiting)"


class CallConnection:
    """A connection as the tracker knows it: its two sides (0 and 1), a row of it
    with the fields every row of it shares set and the others null (``shared``: as each
    side as the client; rows are made as copies of it), its waiting requests, and the gaps
    seen in each direction (a request older than the last gap toward its client may
    have lost its reply in it)."""
    __slots__ = ("stream", "sides", "shared", "pending", "gaps", "client", "client_known")

    def __init__(self, stream: int, sides: tuple, common: dict, client: int | None = None):
        self.stream = stream
        self.sides = sides
        (ip0, port0), (ip1, port1) = sides
        self.shared = (dict(EMPTY_ROW, **common, client_ip=ip0, client_port=port0,
                            server_ip=ip1, server_port=port1),
                       dict(EMPTY_ROW, **common, client_ip=ip1, client_port=port1,
                            server_ip=ip0, server_port=port0))
        self.pending: dict = {}
        self.gaps = [0, 0]          # gaps in the bytes each side sent
        # The side that sent the first request; until one is seen, a guess (or None).
        self.client = client
        self.client_known = False


class _Pending:
    """A request waiting for its reply.  Its row is made when something reads it: a
    common request that no row is wanted of (CallTracker.common_request) waits without
    one, its fields in ``request`` (_common_request_row's arguments), so that counting
    it costs no row."""
    __slots__ = ("conn", "key", "_row", "side", "gaps", "cancelled", "operation", "op", "raw",
                 "ts", "request")

    def __init__(self, conn, key, row, side, gaps, operation, op, ts, request=None):
        self.conn = conn
        self.key = key
        self._row = row
        self.side = side
        self.gaps = gaps            # gaps the server had sent when the request went
        self.cancelled = False
        self.operation = operation
        self.op = op                # the IDL operation its body decoded with, or None
        self.raw = None             # the request's bytes, kept to explain an exception
        self.ts = ts                # when the request was seen (the table's age bound)
        self.request = request

    @property
    def row(self) -> dict:
        row = self._row
        if row is None:
            row = self._row = _common_request_row(self.conn.shared[self.side], self.ts,
                                                  *self.request)
            row["response_expected"] = True
            self.request = None
        return row


def _common_request_row(shared: dict, ts: int, version, little, request_id, key,
                        interface, message_size, operation, fragments) -> dict:
    """The row of a Request with a KeyAddr target (``key``: its hex) before its reply:
    what message() makes of it, ``shared`` being its connection's row as its sender the
    client."""
    row = shared.copy()
    row["ts"] = ts
    row["message_type"] = "Request"
    row["giop_version"] = _VERSION_TEXT.get(version) or f"{version[0]}.{version[1]}"
    row["little_endian"] = little
    row["request_id"] = request_id
    row["object_key"] = key
    row["object_key_text"] = object_key_text(key)
    row["interface"] = interface
    row["request_bytes"] = _HEADER + message_size
    row["operation"] = operation
    row["fragments"] = fragments - 1
    return row


@lru_cache(maxsize=4096)
def object_key_text(key_hex: str) -> str:
    """A key as a person reads it: its ORB's layout when known, else its printable text."""
    key = bytes.fromhex(key_hex)
    info = identify(key)
    return info.summary() if info is not None else printable(key)


def _violations(where: str, warnings: list, out: list | None = None) -> list | None:
    if warnings:
        if out is None:
            out = []
        out += [{"message": where, "code": w["code"], "offset": w.get("offset")}
                for w in warnings]
    return out


class CallTracker:
    """See the module doc.  ``emit(row)`` hears of every row as it is made; None: no
    row is wanted, only the counts (rows the proxy's common path need not make).
    ``bodies``: a :class:`pycdr.calls.bodies.CallBodies` (arguments and results as
    JSON), or None.  ``sensor`` and ``capture_file`` go into every row.
    ``interfaces``: object key (hex) -> repository id, known beforehand (an
    OrderedDict; learned interfaces are added to it).  ``counts``: a
    :class:`CallCounts` to add to (shared by the trackers of several files).
    ``on_request(row, entry)``: hears of each Request and LocateRequest as its row is
    made, with the message's entry (what the row does not keep: its service contexts,
    where a trace exporter finds the caller's trace context).  ``explain(request, reply)``:
    the JSON of `pycdr explain` of a request (bytes) a system exception answered (the
    reply's bytes), for the ``explain`` column, or None; given by the command (pycdr.explain
    lies above this layer).  With it each waiting request's bytes are kept until its reply."""

    def __init__(self, emit, *, max_pending: int = MAX_PENDING, max_age_ns: int = MAX_AGE_NS,
                 bodies=None, sensor: str | None = None, capture_file: str | None = None,
                 interfaces: OrderedDict | None = None, counts: CallCounts | None = None,
                 on_request=None, explain=None):
        if max_pending < 1:
            raise ValueError("max_pending must be at least 1")
        self.emit = emit
        self.max_pending = max_pending
        self.max_age_ns = max_age_ns
        self.bodies = bodies
        self.sensor = sensor
        self.capture_file = capture_file
        self.counts = CallCounts() if counts is None else counts
        self.on_request = on_request
        self.explain = explain
        self._order: OrderedDict = OrderedDict()     # _Pending -> None, oldest first
        # object key (hex) -> repository id (learned, or given: shared between trackers)
        self.interfaces: OrderedDict = OrderedDict() if interfaces is None else interfaces

    # -- connections -------------------------------------------------------------------
    def connection(self, stream: int, ip0: str, port0: int, ip1: str, port1: int,
                   community_id: str | None = None, client: int | None = None
                   ) -> CallConnection:
        """A connection between side 0 and side 1; ``client``: which side is likely
        the client (rows made before its first request, e.g. of a capture that starts
        mid-connection, take it; the first request settles it)."""
        self.counts.connections += 1
        return CallConnection(stream, ((ip0, port0), (ip1, port1)), {
            "community_id": community_id, "sensor": self.sensor,
            "capture_file": self.capture_file, "stream": stream}, client)

    def closed(self, conn: CallConnection) -> None:
        """The connection ended: requests still waiting will get no reply."""
        self._drop_all(conn, "connection_closed")

    def finish(self) -> None:
        """The traffic ended (the end of the capture): what still waits gets no reply."""
        while self._order:
            pending, _ = self._order.popitem(last=False)
            del pending.conn.pending[pending.key]
            self._unanswered(pending, "no_reply")

    # -- interfaces ----------------------------------------------------------------------
    def learn_ior(self, ior: IOR) -> None:
        """The interface of the object an IOR names (its first profile's key)."""
        if ior is None or not ior.type_id or not ior.profiles:
            return
        from ..addressing.iiop import IIOPProfile, decode_profile
        for tagged in ior.profiles:
            try:
                profile = decode_profile(tagged, lenient=True)
            except PycdrError:
                continue
            if isinstance(profile, IIOPProfile):
                self.learn(profile.object_key.hex(), ior.type_id)

    def learn(self, key_hex: str, repo_id: str) -> None:
        interfaces = self.interfaces
        interfaces[key_hex] = repo_id
        interfaces.move_to_end(key_hex)
        if len(interfaces) > MAX_INTERFACES:
            interfaces.popitem(last=False)

    # -- messages ------------------------------------------------------------------------
    def message(self, conn: CallConnection, side: int, entry: dict, ts: int, msg=None,
                raw: bytes | None = None) -> None:
        """A whole message (fragments joined) that ``side`` sent, captured at ``ts``
        (ns).  ``msg``: the decoded message itself, for its body (with ``bodies``);
        ``raw``: its bytes, for ``explain``."""
        t = entry["type"]
        if t == "Request":
            self._request(conn, side, entry, ts, msg, _REQUEST, raw)
        elif t == "Reply":
            self._reply(conn, side, entry, ts, msg, _REQUEST, raw)
        elif t == "LocateRequest":
            self._request(conn, side, entry, ts, msg, _LOCATE)
        elif t == "LocateReply":
            self._reply(conn, side, entry, ts, msg, _LOCATE)
        elif t == "CancelRequest":
            self._cancel(conn, side, entry, ts)
        elif t == "Fragment" or t == "MessageError":
            # A Fragment reaches here only when it joins no message (its violation says
            # why); a MessageError is the peer saying a message it got was malformed.
            row = self._row(conn, side, ts, "malformed")
            row["message_type"] = t
            row["giop_version"] = entry["version"]
            row["little_endian"] = entry["little_endian"]
            row["request_id"] = entry.get("request_id")
            row["violations"] = _violations("stream", entry["warnings"])
            self._out(row)

    def gap(self, conn: CallConnection, side: int, ts: int, missing: int) -> None:
        """``missing`` bytes that ``side`` sent are not in the capture."""
        conn.gaps[side] += 1
        row = self._row(conn, side, ts, "gap")
        row["request_bytes" if conn.client in (None, side) else "reply_bytes"] = missing
        self._out(row)

    def malformed(self, conn: CallConnection, side: int, ts: int, code: str,
                  offset: int | None, header: dict | None = None) -> None:
        """Bytes ``side`` sent that do not decode as GIOP (``code``: why; ``header``:
        the GIOP header's JSON when it parsed)."""
        row = self._row(conn, side, ts, "malformed")
        row["violations"] = [{"message": "stream", "code": code, "offset": offset}]
        if header is not None:
            row["message_type"] = header.get("message_type")
            row["giop_version"] = header.get("version")
            row["little_endian"] = header.get("little_endian")
            size = header.get("message_size")
            if size is not None:
                row["request_bytes" if conn.client in (None, side) else "reply_bytes"] = \
                    _HEADER + size
        self._out(row)

    # -- the rows ------------------------------------------------------------------------
    def _row(self, conn, side, ts, outcome) -> dict:
        """A row of ``conn`` as ``side`` sees it (the client when it is not known)."""
        client = side if conn.client is None else conn.client
        row = conn.shared[client].copy()
        row["ts"] = ts
        row["outcome"] = outcome
        return row

    def _request_fields(self, row, entry) -> None:
        row["giop_version"] = entry["version"]
        row["little_endian"] = entry["little_endian"]
        row["request_id"] = entry["request_id"]
        target = entry.get("target")
        if target is not None:
            key = target.get("object_key")
            if key is not None:
                row["object_key"] = key
                row["object_key_text"] = object_key_text(key)
                row["interface"] = self.interfaces.get(key)
            else:                   # ReferenceAddr: the IOR names its type
                row["interface"] = target.get("ior_type_id") or None
        row["request_bytes"] = _HEADER + entry["message_size"]

    def _request(self, conn, side, entry, ts, msg, kind, raw=None) -> None:
        row = self._request_row(conn, side, ts)
        t = row["message_type"] = entry["type"]
        self._request_fields(row, entry)
        row["operation"] = entry.get("operation")
        violations = _violations("request", entry["warnings"])
        reassembled = entry.get("reassembled")
        row["fragments"] = 0 if reassembled is None else reassembled["fragments"] - 1
        expected = entry.get("response_expected")
        if expected is None:        # GIOP 1.2: response_flags (0: none expected)
            expected = entry.get("response_flags", 3) != 0
        self._requested(conn, side, row, ts, msg, kind, raw, violations,
                        t == "Request" and not expected, entry)

    def common_request(self, conn: CallConnection, side: int, msg, ts: int,
                       raw: bytes | None = None, fragments: int = 1,
                       key: str | None = None) -> None:
        """What message(conn, side, entry, ts, msg, raw) does, ``entry`` being
        message_entry(msg) (with ``reassembled`` when it came in several ``fragments``),
        for a Request with a KeyAddr target, without making the entry (a proxy's hot
        path; ``key``: its object key's hex when the caller has it)."""
        if self.on_request is not None or msg.warnings:
            entry = message_entry(msg)
            if fragments > 1:
                entry["reassembled"] = {"fragments": fragments}
            self.message(conn, side, entry, ts, msg, raw)
            return
        # (_request_row's, a call less)
        if not conn.client_known:
            conn.client = side
            conn.client_known = True
        if key is None:
            key = msg.target.object_key.hex()
        request = (msg.version, msg.little, msg.request_id, key, self.interfaces.get(key),
                   msg.message_size, msg.operation, fragments)
        if self.emit is None and self.bodies is None:
            # No row is wanted (nor its body decoded), only the counts: a oneway is
            # counted, a twoway waits without its row (made if something reads it).
            if msg.response_flags == 0:
                self._count("oneway")
            else:
                self._wait(conn, _REQUEST, side, msg.request_id, ts, None, msg.operation,
                           None, None, request)
            return
        self._requested(conn, side, _common_request_row(conn.shared[side], ts, *request), ts,
                        msg, _REQUEST, raw, None, msg.response_flags == 0, None)

    def _request_row(self, conn, side, ts) -> dict:
        """A request's row: ``side`` is the client from now on."""
        if not conn.client_known:
            conn.client = side
            conn.client_known = True
        row = conn.shared[side].copy()
        row["ts"] = ts
        return row

    def _requested(self, conn, side, row, ts, msg, kind, raw, violations, oneway: bool,
                   entry) -> None:
        """A request's ``row`` (its fields set) out as a oneway, or waiting for its reply."""
        op = None
        if self.bodies is not None and msg is not None and kind == _REQUEST:
            op = self.bodies.operation(row["interface"], row["operation"])
            if op is not None:
                row["arguments"], violations = self.bodies.arguments(
                    op, msg, violations, self.learn_ior)
        if self.on_request is not None:
            self.on_request(row, entry)
        if oneway:
            row["response_expected"] = False
            row["violations"] = violations
            row["outcome"] = "oneway"
            self._out(row)
            return
        if kind == _REQUEST:
            row["response_expected"] = True
        row["violations"] = violations
        self._wait(conn, kind, side, row["request_id"], ts, row, row["operation"], op, raw)

    def _wait(self, conn, kind, side, request_id, ts, row, operation, op, raw,
              request=None) -> None:
        """A request (its ``row``, or None and the fields to make it of: ``request``)
        waits for its reply in the table; what it displaces or evicts gets none."""
        key = (kind, side, request_id)
        pending_table = conn.pending
        displaced = pending_table.pop(key, None)
        if displaced is not None:
            del self._order[displaced]
            displaced.row["violations"] = _violations("request", [{
                "code": "request-id-reused", "offset": None}], displaced.row["violations"])
            self._unanswered(displaced, "no_reply")
        order = self._order
        # Bounded: by age (in the traffic's time), then by count.
        while order:
            oldest = next(iter(order))
            if ts - oldest.ts <= self.max_age_ns and len(order) < self.max_pending:
                break
            order.popitem(last=False)
            del oldest.conn.pending[oldest.key]
            self.counts.evicted += 1
            self._unanswered(oldest, "no_reply")
        pending = _Pending(conn, key, row, side, conn.gaps[1 - side], operation, op, ts,
                           request)
        if self.explain is not None and raw is not None:
            pending.raw = bytes(raw)
        pending_table[key] = pending
        order[pending] = None
        counts = self.counts
        counts.pending = n = len(order)
        if n > counts.pending_peak:
            counts.pending_peak = n

    def _reply(self, conn, side, entry, ts, msg, kind, raw=None) -> None:
        pending = conn.pending.pop((kind, 1 - side, entry["request_id"]), None)
        if pending is None:
            row = self._row(conn, 1 - side, ts, "orphan_reply")
            row["message_type"] = entry["type"]
            row["giop_version"] = entry["version"]
            row["little_endian"] = entry["little_endian"]
            row["request_id"] = entry["request_id"]
            row["fragments"] = 0
            op = None
        else:
            del self._order[pending]
            self.counts.pending = len(self._order)
            row = pending.row
            op = pending.op
        row["reply_ts"] = ts
        if pending is not None:
            row["duration_ns"] = ts - row["ts"]
        status = entry.get("reply_status") or entry.get("locate_status")
        row["reply_status"] = status
        if pending is not None:
            row["outcome"] = "success" if status in _SUCCEEDED else "failure"
        row["reply_bytes"] = _HEADER + entry["message_size"]
        reassembled = entry.get("reassembled")
        if reassembled is not None:
            row["fragments"] += reassembled["fragments"] - 1
        violations = _violations("reply", entry["warnings"], row["violations"])
        exception = entry.get("system_exception")
        if exception is not None:
            row["exception_id"] = exception["exception_id"]
            minor = row["minor_code"] = exception["minor"]
            row["minor_code_name"] = minor_code_name(exception.get("name"), minor)
            row["completion_status"] = exception["completed"]
            if pending is not None and pending.raw is not None and raw is not None:
                row["explain"] = self.explain(pending.raw, bytes(raw))
        elif status == "USER_EXCEPTION":
            row["exception_id"] = entry.get("exception_id")
        forward = entry.get("forward")
        if forward is not None:
            row["forward_to"] = forward
            try:
                self.learn_ior(ior_from_string(forward, lenient=True))
            except PycdrError:
                pass
        if op is not None and msg is not None:
            violations = self._result(row, pending, op, msg, status, violations)
        row["violations"] = violations
        self._out(row)

    def common_reply(self, conn: CallConnection, side: int, msg, ts: int,
                     raw: bytes | None = None, fragments: int = 1) -> None:
        """What message(conn, side, entry, ts, msg, raw) does, ``entry`` being
        message_entry(msg) (with ``reassembled`` when it came in several ``fragments``),
        for a NO_EXCEPTION Reply, without making the entry (a proxy's hot path)."""
        pending = None if msg.warnings else \
            conn.pending.pop((_REQUEST, 1 - side, msg.request_id), None)
        if pending is None:         # (an orphan: as any other reply)
            entry = message_entry(msg)
            if fragments > 1:
                entry["reassembled"] = {"fragments": fragments}
            self.message(conn, side, entry, ts, msg, raw)
            return
        order = self._order
        del order[pending]
        self.counts.pending = len(order)
        if pending.request is not None and self.emit is None:
            self._count("success")          # (no row wanted: none made)
            return
        row = pending.row
        row["reply_ts"] = ts
        row["duration_ns"] = ts - row["ts"]
        row["reply_status"] = "NO_EXCEPTION"
        row["outcome"] = "success"
        row["reply_bytes"] = _HEADER + msg.message_size
        row["fragments"] += fragments - 1
        if pending.op is not None:
            row["violations"] = self._result(row, pending, pending.op, msg, "NO_EXCEPTION",
                                             row["violations"])
        self._out(row)

    def _result(self, row, pending, op, msg, status, violations) -> list | None:
        """The reply's values into ``row`` (by ``op``, the request's IDL operation); the
        violations, with those of its body."""
        row["result"], violations = self.bodies.result(
            op, msg, status, row["exception_id"], violations, self.learn_ior)
        # An object that names its interface (_repository_id), or says it is_a one:
        # decoded by that one from now on.
        key, result = row["object_key"], row["result"]
        if key is not None and isinstance(result, dict):
            if pending.operation == "_repository_id":
                repo_id = result.get("return")
                if isinstance(repo_id, str) and repo_id:
                    self.learn(key, repo_id)
            elif pending.operation == "_is_a" and result.get("return") is True \
                    and row["interface"] is None:
                repo_id = (row["arguments"] or {}).get("logical_type_id")
                if isinstance(repo_id, str) and repo_id:
                    self.learn(key, repo_id)
        return violations

    def _cancel(self, conn, side, entry, ts) -> None:
        row = conn.shared[side].copy()
        row["ts"] = ts
        row["outcome"] = "cancelled"
        row["message_type"] = "CancelRequest"
        rid = row["request_id"] = entry["request_id"]
        row["giop_version"] = entry["version"]
        row["little_endian"] = entry["little_endian"]
        row["request_bytes"] = _HEADER + entry["message_size"]
        row["violations"] = _violations("request", entry["warnings"])
        row["fragments"] = 0
        pending = conn.pending.get((_REQUEST, side, rid))
        if pending is not None:
            pending.cancelled = True
            for name in ("object_key", "object_key_text", "interface", "operation"):
                row[name] = pending.row[name]
        self._out(row)

    def _drop_all(self, conn, outcome) -> None:
        order = self._order
        for pending in conn.pending.values():
            del order[pending]
            self._unanswered(pending, outcome)
        conn.pending.clear()
        self.counts.pending = len(order)

    def _unanswered(self, pending: _Pending, outcome: str) -> None:
        if pending.cancelled:
            outcome = "cancelled"
        elif pending.conn.gaps[1 - pending.side] > pending.gaps:
            outcome = "gap"             # its reply may be in bytes the capture lost
        if pending.request is not None and self.emit is None:
            self._count(outcome)        # (no row wanted: none made)
            return
        row = pending.row
        row["outcome"] = outcome
        self._out(row)

    def _out(self, row: dict) -> None:
        self._count(row["outcome"])
        if self.emit is not None:
            self.emit(row)

    def _count(self, outcome: str) -> None:
        """A row made (or, when none is wanted, one that would have been)."""
        counts = self.counts
        counts.rows += 1
        counts.outcomes[outcome] = counts.outcomes.get(outcome, 0) + 1
