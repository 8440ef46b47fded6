"""One recorded connection replayed, sans I/O: the client's messages rewritten
for the target, the recorded and the replayed replies matched to their calls.

    session = ReplaySession(keys, server="10.0.0.2:2809")
    data, call = session.outgoing(raw)        # bytes to send (None: not sent)
    done = session.recorded(raw, ts)           # calls whose recorded reply is complete
    got = session.replayed(data_from_target)   # calls whose replayed reply came

A message is sent as recorded -- GIOP version, byte order, flags, service
contexts, fragmentation -- but for its request id (renumbered from 1 on the new
connection; CancelRequests and GIOP 1.2 Fragments follow their request) and its
object key (mapped by the :class:`~pycdr.replay.compare.KeyMap`).  When only the
request id changes, its four bytes are replaced in place; a new key means
encoding the header again, and in GIOP 1.0/1.1, where the body's alignment
counts from the start of the message, the requesting principal (deprecated,
ignored by ORBs) is lengthened so that the body keeps its alignment modulo 8.
"""

from __future__ import annotations

import dataclasses
import struct

from ..errors import NotSupportedError, PycdrError
from ..giop.connection import GiopConnection, Role
from ..giop.events import NEED_DATA, ConnectionClosed, MessageReceived, ProtocolViolation
from ..giop.header import (FLAG_MORE_FRAGMENTS, GIOP_MAGIC, HEADER_SIZE, MAX_MESSAGE_SIZE,
                           MsgType)
from ..giop.messages import (CancelRequest, KeyAddr, LocateReply, MessageError,
                             ProfileAddr, ReferenceAddr, Reply, Request, decode_message,
                             encode_fragments, encode_message)
from ..addressing.iiop import IIOPProfile, decode_profile
from ..codec.marshal import read_value, write_value
from ..capture.stats import LOCATE_OPERATION  # noqa: F401 (one spelling, the statistics')

_ULONG = {False: struct.Struct(">I"), True: struct.Struct("<I")}
_REQUEST, _LOCATE_REQUEST, _CANCEL = (MsgType.Request.value, MsgType.LocateRequest.value,
                                      MsgType.CancelRequest.value)
_FRAGMENT = MsgType.Fragment.value
_REPLY = MsgType.Reply.value
CLIENT_MESSAGES = frozenset((_REQUEST, _LOCATE_REQUEST, _CANCEL))
CANCEL_OPERATION = "(CancelRequest)"

# Outcomes of a call.
SAME, DIFFERENT, FAILED, SKIPPED = "same", "different", "failed", "skipped"
OUTCOMES = (SAME, DIFFERENT, FAILED, SKIPPED)


class Call:
    """One client message of the recording and what became of it."""
    __slots__ = ("connection", "server", "operation", "kind", "recorded_id", "replay_id",
                 "request_ts", "recorded_reply", "recorded_raw", "recorded_latency",
                 "replayed_reply", "replayed_raw", "sent_at", "replayed_latency",
                 "outcome", "differences", "reason", "cancelled", "sent_bytes",
                 "rewritten_references")

    def __init__(self, connection: int, server: str, operation: str, kind: str,
                 recorded_id: int | None, request_ts: int):
        self.connection = connection
        self.server = server
        self.operation = operation
        self.kind = kind                    # request, oneway, locate, cancel
        self.recorded_id = recorded_id
        self.replay_id: int | None = None
        self.request_ts = request_ts        # capture time (ns) of the recorded request
        self.recorded_reply = None          # the recorded reply message, once complete
        self.recorded_raw = b""
        self.recorded_latency: float | None = None     # seconds
        self.replayed_reply = None
        self.replayed_raw = b""
        self.sent_at: float | None = None   # time.monotonic() of the send
        self.replayed_latency: float | None = None
        self.outcome: str | None = None
        self.differences: list = []
        self.reason = ""                    # why failed or skipped
        self.cancelled = False
        self.sent_bytes = b""
        # references in the arguments moved to a target (pycdr.replay.references)
        self.rewritten_references: list = []

    @property
    def expects_reply(self) -> bool:
        return self.kind in ("request", "locate")

    def to_json(self) -> dict:
        return {"connection": self.connection, "server": self.server,
                "operation": self.operation, "kind": self.kind, "outcome": self.outcome,
                "recorded_request_id": self.recorded_id, "replay_request_id": self.replay_id,
                "differences": self.differences, "reason": self.reason or None,
                "recorded_latency": self.recorded_latency,
                "replayed_latency": self.replayed_latency,
                "sent": self.sent_bytes.hex(),
                "rewritten_references": self.rewritten_references,
                "recorded_reply": bytes(self.recorded_raw).hex(),
                "replayed_reply": bytes(self.replayed_raw).hex()}


class OperationFilter:
    """--only / --skip (LocateRequests are "(LocateRequest)"; a CancelRequest
    goes with the request it cancels)."""

    def __init__(self, only=(), skip=()):
        self.only = frozenset(only)
        self.skip = frozenset(skip)

    def __call__(self, operation: str) -> bool:
        return (not self.only or operation in self.only) and operation not in self.skip


class RawReply:
    """A whole GIOP 1.2+ Reply kept as its bytes, decoded only if it must be: a recorded
    reply, and a replayed one that is the recorded one's bytes but for the request id
    (nearly every replayed reply of a servant that answers as the old one did)."""
    __slots__ = ("raw", "request_id", "_message")

    def __init__(self, raw: bytes, request_id: int):
        self.raw = raw
        self.request_id = request_id
        self._message = None

    @property
    def status(self) -> int:
        """The reply status (GIOP 1.2+: the ulong after the request id)."""
        return _ULONG[bool(self.raw[6] & 1)].unpack_from(self.raw, 16)[0] \
            if len(self.raw) >= 20 else -1

    def same_but_id(self, raw) -> bool:
        """Whether ``raw`` is this reply's bytes but for the request id."""
        mine = self.raw
        return len(raw) == len(mine) and raw[:12] == mine[:12] and raw[16:] == mine[16:]

    def message(self):
        """The decoded Reply (the lean decoder, else leniently as the replies' lenient
        connection reads it: None when that finds no reply in it)."""
        if self._message is None:
            try:
                self._message = decode_message(self.raw, field_offsets=False)[0]
            except PycdrError:
                events = ReplyStream()._through_connection(self.raw)
                self._message = next((e.message for e in events
                                      if isinstance(e, MessageReceived)), False)
        return self._message or None


def reply_message(reply):
    """A call's reply as a decoded message (or None)."""
    return reply.message() if isinstance(reply, RawReply) else reply


class ReplyStream:
    """The replies of one direction, as events of a lenient GiopConnection (fragments
    joined, violations told, no request-id books: the ids are the session's).  A whole
    GIOP 1.2+ Reply -- nearly every one -- is not given to the connection: with ``lazy``
    (the recorded replies) it is kept as a :class:`RawReply`, else it is one when
    ``expected(request_id)`` gives the bytes it repeats but for the request id, else the
    ORB's lean decoder decodes it (a third of the connection's time); anything else goes
    to the connection."""

    def __init__(self, lazy: bool = False):
        self.conn = GiopConnection(Role.CLIENT, version=(1, 3), lenient=True,
                                   check_request_ids=False)
        self._buf = bytearray()
        self.lazy = lazy

    @property
    def idle(self) -> bool:
        """Nothing buffered, no fragmented message begun: a whole reply is taken as is."""
        return not self._buf and not self.conn.has_partial_message

    def whole_reply(self, raw: bytes):
        """``raw`` as a RawReply when it is one whole GIOP 1.2+ Reply and nothing is
        buffered (a recorded reply as the capture's framer hands it over), else None."""
        if len(raw) < 20 or raw[7] != _REPLY or raw[4:6] < b"\x01\x02" or \
                raw[6] & FLAG_MORE_FRAGMENTS or raw[:4] != GIOP_MAGIC or self._buf or \
                self.conn.has_partial_message:
            return None
        u = _ULONG[bool(raw[6] & 1)]
        if u.unpack_from(raw, 8)[0] != len(raw) - HEADER_SIZE:
            return None
        return RawReply(raw, u.unpack_from(raw, 12)[0])

    def feed(self, data, expected=None) -> list:
        events: list = []
        buf = self._buf
        if buf:
            buf += data
            b = buf
        else:
            b = data                    # framed in place (slices of bytes are bytes)
        n = len(b)
        bytes_in = type(b) is bytes
        lazy = self.lazy
        partial = self.conn.has_partial_message
        pos = 0
        while not partial and n - pos >= HEADER_SIZE:
            if b[pos:pos + 4] != GIOP_MAGIC:
                break                   # bytes the connection judges
            flags = b[pos + 6]
            ulong = _ULONG[flags & 1]
            size = ulong.unpack_from(b, pos + 8)[0]
            if size > MAX_MESSAGE_SIZE:
                break
            end = pos + HEADER_SIZE + size
            if end > n:
                break
            raw = b[pos:end] if bytes_in else bytes(b[pos:end])
            msg = None
            if raw[7] == _REPLY and raw[4:6] >= b"\x01\x02" and \
                    not flags & FLAG_MORE_FRAGMENTS and size >= 4:
                rid = ulong.unpack_from(raw, 12)[0]
                if lazy:
                    msg = RawReply(raw, rid)
                elif expected is not None:
                    old = expected(rid)
                    if old is not None and old.same_but_id(raw):
                        msg = RawReply(raw, rid)
                if msg is None:
                    try:
                        msg = MessageReceived(decode_message(raw, field_offsets=False)[0], raw)
                    except PycdrError:
                        msg = None      # the lenient connection says what is wrong
            if msg is None:
                events += self._through_connection(raw)
                partial = self.conn.has_partial_message     # a fragment chain begun
            else:
                events.append(msg)
            pos = end
        conn = self.conn
        rest = bytes(b[pos:]) if pos < n else b""
        buf.clear()
        if rest and (conn.has_partial_message or len(rest) >= HEADER_SIZE and (
                rest[:4] != GIOP_MAGIC or _ULONG[bool(rest[6] & 1)].unpack_from(rest, 8)[0]
                > MAX_MESSAGE_SIZE)):
            events += self._through_connection(rest)
        else:
            buf += rest
        if not data:                    # the end of the stream: what is left, then the close
            if buf:
                events += self._through_connection(bytes(buf))
                buf.clear()
            events += self._through_connection(b"")
        return events

    def _through_connection(self, data) -> list:
        conn = self.conn
        conn.receive_data(data)
        events = []
        while True:
            event = conn.next_event()
            if event is NEED_DATA:
                return events
            events.append(event)
            if isinstance(event, ConnectionClosed):
                return events


def _decode_client_message(raw: bytes):
    """A recorded client message: a well-formed GIOP 1.2+ one by the ORB's lean
    decoder (a third of the time), anything else leniently with every field's offset
    (a 1.0/1.1 Request's request id is found by it)."""
    if raw[4:6] >= b"\x01\x02" and raw[:4] == GIOP_MAGIC:
        try:
            return decode_message(raw, field_offsets=False)[0]
        except PycdrError:
            pass            # the lenient decoder below takes what it can
    return decode_message(raw, lenient=True)[0]


class Reencoding:
    """--giop / --byte-order: requests sent in another GIOP version or byte order than
    recorded, their arguments read with the IDL (``arguments``: operation -> (name,
    TypeCode) of its in and inout parameters) and written again."""

    def __init__(self, arguments: dict, version: tuple | None = None,
                 little: bool | None = None):
        self.arguments = arguments
        self.version = version
        self.little = little

    def message(self, msg, new_id: int, key: bytes | None,
                fragment_size: int | None = None, values: list | None = None) -> bytes:
        """``msg`` encoded again; a Request cut into fragments of at most
        ``fragment_size`` bytes where its version allows it (not GIOP 1.0); ``values``:
        its arguments as they are to be sent (read from its body when None)."""
        version = self.version or msg.version
        little = msg.little if self.little is None else self.little
        target = msg.target if key is None or isinstance(msg, CancelRequest) else KeyAddr(key)
        if version < (1, 2) and not isinstance(msg, CancelRequest) and \
                not isinstance(target, KeyAddr):
            raise NotSupportedError(f"a {type(target).__name__} target cannot be sent in "
                                    f"GIOP {version[0]}.{version[1]}")
        if not isinstance(msg, Request):
            fields = {} if isinstance(msg, CancelRequest) else {"target": target}
            return encode_message(dataclasses.replace(msg, version=version, little=little,
                                                      request_id=new_id, **fields))
        items = self.arguments.get(msg.operation)
        if items is None:
            raise NotSupportedError(f"{msg.operation}: not in the IDL given, so its "
                                    f"arguments cannot be encoded again")
        if values is None:
            r = msg.body_reader()
            values = [read_value(r, tc) for _, tc, *_ in items]

        def write_body(w):
            for (_, tc, *_), value in zip(items, values):
                write_value(w, tc, value)
        changed = dataclasses.replace(msg, version=version, little=little, request_id=new_id,
                                      target=target, body=b"", body_offset=None,
                                      more_fragments=False, segments=None)
        write_body = write_body if items else None
        data = encode_message(changed, write_body=write_body)
        if fragment_size is None:
            return data
        return b"".join(encode_fragments(changed, data, max(fragment_size, 24),
                                         write_body=write_body))


def _profile_key(target) -> bytes | None:
    """The object key of a ProfileAddr's or ReferenceAddr's IIOP profile."""
    if isinstance(target, ProfileAddr):
        profiles = (target.profile,)
    elif isinstance(target, ReferenceAddr):
        profiles = target.ior.profiles[target.selected_profile_index:] + target.ior.profiles
    else:
        return None
    for profile in profiles:
        p = decode_profile(profile, lenient=True)
        if isinstance(p, IIOPProfile):
            return p.object_key
    return None


# Request shapes kept per connection (a client calling operations of many shapes is
# decoded as before beyond them).
MAX_SHAPES = 256


def _name_end(raw: bytes, ulong) -> int | None:
    """Where the operation name of a GIOP 1.2+ KeyAddr Request ends (after its NUL), if
    the lengths before it fit in ``raw``."""
    n = len(raw)
    if n < 28:
        return None
    key_end = 28 + ulong.unpack_from(raw, 24)[0]
    at = key_end + (-key_end & 3)
    if at + 4 > n:
        return None
    end = at + 4 + ulong.unpack_from(raw, at)[0]
    return end if end <= n else None


class _RequestShape:
    """What the bytes of a GIOP 1.2+ Request between its request id and its body
    (response flags, KeyAddr target, operation, service contexts, padding) decoded
    to, and those bytes rewritten for each target key they were sent to."""
    __slots__ = ("operation", "kind", "key", "rewritten")

    def __init__(self, operation: str, kind: str, key: bytes):
        self.operation = operation
        self.kind = kind
        self.key = key
        self.rewritten: dict = {}       # target key -> bytes 16.. of the body's offset


class ReplaySession:
    def __init__(self, keys, *, connection: int = 0, server: str = "",
                 selected=OperationFilter(), reencoding: Reencoding | None = None,
                 references=None):
        self.keys = keys
        self.reencoding = reencoding
        # pycdr.replay.references.ArgumentReferences: recorded references in arguments
        # moved to the targets (None: arguments sent as recorded)
        self.references = references
        self.connection = connection
        self.server = server
        self.selected = selected
        self.next_id = 1
        self.calls: dict = {}           # recorded request id -> Call (its reply awaited)
        self.by_replay_id: dict = {}    # replay request id -> Call (its reply awaited)
        self._skipped_fragments: set = set()   # recorded ids of 1.2 requests not sent
        self._open_11 = None            # the GIOP 1.1 fragmented request being sent: sent?
        self._recorded = ReplyStream(lazy=True)
        self._replayed = ReplyStream()
        self.target_closed: str | None = None   # why the target's side ended
        # Replies from the target to request ids it was not sent (a late reply to a call
        # decided already is not one): how many, and the first id.
        self.stray_replies = 0
        self.first_stray: int | None = None
        # bytes 4..8 + 16..the name's end -> [(body offset, the bytes between, shape)]
        self._shapes: dict = {}
        self._shape_count = 0
        self.shapes_version = 0         # counts what _learn_shape added
        self._joining = None            # a GiopConnection joining fragmented requests
        self._joined: dict = {}         # see _join_first
        self._failed_joins: list = []
        self.not_sent = 0               # client messages that are no calls (Close, Error...)

    @property
    def quiet(self) -> bool:
        """No call awaits a reply, no fragmented request is under way, both reply
        streams idle: pycdr._replaylane may take the connection on."""
        return not self.calls and not self.by_replay_id and self.target_closed is None and \
            not self._joined and not self._skipped_fragments and self._open_11 is None and \
            self._replayed.idle and self._recorded.idle

    @property
    def shapes(self) -> dict:
        """The request shapes known: bytes 4..8 + 16..the name's end -> [(body offset,
        the bytes between name and body, _RequestShape)] (see _learn_shape)."""
        return self._shapes

    # -- the client's side -------------------------------------------------------------
    def outgoing(self, raw: bytes, ts: int = 0):
        """(bytes to send or None, the Call it starts or None) for one recorded
        client message; the Call of a skipped request comes with None."""
        t = raw[7]
        if t == _REQUEST and self._shapes:
            sent = self._outgoing_shaped(raw, ts)
            if sent is not None:
                return sent
        if t == _FRAGMENT:
            if self._joined:
                joined = self._join_fragment(raw)
                if joined is not None:
                    return joined
            return self._fragment(raw), None
        if t not in CLIENT_MESSAGES:
            self.not_sent += 1
            return None, None
        if self.reencoding is not None and t == _REQUEST and raw[6] & FLAG_MORE_FRAGMENTS \
                and raw[4:6] >= b"\x01\x01":
            # Encoded again once its last fragment is read (a first fragment may not
            # even hold the whole request header).
            return self._join_first(raw, ts) or (None, None)
        try:
            msg = _decode_client_message(raw)
        except PycdrError as e:
            call = Call(self.connection, self.server, "(undecodable)", "request", None, ts)
            call.outcome, call.reason = FAILED, f"recorded message undecodable: {e}"
            return None, call
        if isinstance(msg, CancelRequest):
            call = Call(self.connection, self.server, CANCEL_OPERATION, "cancel",
                        msg.request_id, ts)
            cancelled = self.calls.get(msg.request_id)
            if cancelled is None:
                call.outcome, call.reason = SKIPPED, "cancels a request not sent"
                return None, call
            cancelled.cancelled = True
            call.replay_id = cancelled.replay_id
            if self.reencoding is not None:
                return self.reencoding.message(msg, cancelled.replay_id, None), call
            return self._patch_id(raw, msg, cancelled.replay_id), call
        return self._outgoing_decoded(raw, msg, ts)

    def _outgoing_decoded(self, raw: bytes, msg, ts: int, fragment_size: int | None = None):
        """outgoing() of a decoded Request or LocateRequest (``raw``: its recorded bytes;
        ``fragment_size``: joined from fragments, the recorded first one's size)."""
        if isinstance(msg, Request):
            operation = msg.operation
            kind = "request" if msg.response_expected else "oneway"
        else:
            operation, kind = LOCATE_OPERATION, "locate"
        call = Call(self.connection, self.server, operation, kind, msg.request_id, ts)
        more = msg.more_fragments
        if not self.selected(operation):
            call.outcome, call.reason = SKIPPED, "not selected (--only/--skip)"
            if more:
                self._note_fragmented(msg, sent=False)
            return None, call
        values = None
        if self.references is not None and isinstance(msg, Request) and not more:
            values, call.rewritten_references = self.references.rewrite(msg)
        if self.reencoding is not None or values is not None:
            return self._reencoded(msg, call, fragment_size, values)
        data = self._rewrite(raw, msg, self.next_id)
        if more:
            self._note_fragmented(msg, sent=True)
        elif isinstance(msg, Request):
            self._learn_shape(raw, msg, data, kind)
        return self._started(call, data), call

    def _started(self, call: Call, data: bytes) -> bytes:
        """``call`` sent as ``data`` with the next request id."""
        call.replay_id = self.next_id
        self.next_id += 1
        if call.expects_reply:
            self.calls[call.recorded_id] = call
            self.by_replay_id[call.replay_id] = call
        call.sent_bytes = data
        return data

    def _reencoded(self, msg, call: Call, fragment_size: int | None, values=None):
        """``msg`` encoded again for ``call``: in another version or byte order
        (--giop/--byte-order), cut into fragments of at most ``fragment_size`` bytes where
        the version allows it, and with ``values`` as its arguments when given (references
        moved to the targets)."""
        reencoding = self.reencoding or Reencoding(self.references.arguments)
        try:
            old_key = msg.object_key or _profile_key(msg.target)
            key = None if old_key is None else self.keys.target_key(old_key, self.server)
            data = reencoding.message(msg, self.next_id, key, fragment_size, values)
        except PycdrError as e:
            call.outcome, call.reason = FAILED, f"cannot encode it again: {e}"
            return None, call
        return self._started(call, data), call

    # A fragmented request sent in another version or byte order: its fragments joined
    # (by a lenient GiopConnection, which knows 1.1's and 1.2's rules), then encoded
    # again and cut as recorded (no fragment longer than the recorded first one).
    # (``_joined``: recorded request id -- None for GIOP 1.1, whose fragments carry none
    # and come one message at a time -- -> (first fragment's capture time, size, request
    # id or None).)
    def _join_first(self, raw: bytes, ts: int):
        rid = _ULONG[bool(raw[6] & 1)].unpack_from(raw, 12)[0] \
            if raw[5] >= 2 and len(raw) >= 16 else None
        earlier = self._joined.pop(rid, None)
        if earlier is not None:     # it fails; this one is joined afresh when it is alone
            self._failed_joins += self._unjoined(
                (earlier,), "another request began before its last fragment")
            if not self._joined:
                self._joining = None
        if self._joining is None:
            self._joining = GiopConnection(Role.SERVER, version=(1, 3), lenient=True,
                                           check_request_ids=False)
        self._joined[rid] = (ts, len(raw), rid)
        return self._feed_joining(raw)

    def _join_fragment(self, raw: bytes):
        """(data, call) when ``raw`` is the last fragment of a request being joined,
        (None, None) for another of its fragments, None when it is not one of them."""
        if raw[5] >= 2:
            if len(raw) < 16 or _ULONG[bool(raw[6] & 1)].unpack_from(raw, 12)[0] \
                    not in self._joined:
                return None
        elif None not in self._joined:
            return None
        return self._feed_joining(raw) or (None, None)

    def _feed_joining(self, raw: bytes):
        conn = self._joining
        conn.receive_data(raw)
        while True:
            event = conn.next_event()
            if event is NEED_DATA:
                return None
            if isinstance(event, MessageReceived):
                msg = event.message
                entry = self._joined.pop(msg.request_id if msg.version >= (1, 2) else None,
                                         None)
                if entry is not None and isinstance(msg, Request):
                    ts, fragment_size, _ = entry
                    return self._outgoing_decoded(event.raw, msg, ts, fragment_size)
            elif isinstance(event, (ProtocolViolation, ConnectionClosed)):
                # The fragments cannot be joined: their requests fail, joining starts over.
                why = getattr(event, "error", None) or getattr(event, "reason", "")
                self._joining = None
                failed = self._unjoined(self._joined.values(),
                                        f"its fragments cannot be joined: {why}")
                self._joined.clear()
                self._failed_joins += failed[1:]         # told by abandoned()
                return (None, failed[0]) if failed else None

    def _unjoined(self, entries, reason: str) -> list:
        """Requests being joined (``_joined`` entries), as failed calls."""
        calls = []
        for ts, _, rid in entries:
            call = Call(self.connection, self.server, "(fragmented request)", "request",
                        rid, ts)
            call.outcome, call.reason = FAILED, reason
            calls.append(call)
        return calls

    def abandoned(self) -> list:
        """The calls whose fragments could not be joined, or the recording ends before
        the last of (failed), not told yet."""
        calls = self._failed_joins + self._unjoined(
            self._joined.values(), "the recording ends before its last fragment")
        self._joined.clear()
        self._failed_joins = []
        return calls

    # Requests whose bytes between the request id and the body are those of a request
    # decoded before are rewritten without decoding them (nearly every request of a
    # recording: a client calls few operations, each with the same service contexts).
    # Shapes are found by the bytes up to the end of the operation name (a GIOP 1.2+
    # KeyAddr request has them at offsets its key's and its name's lengths give), then
    # the rest up to the body compared.
    def _learn_shape(self, raw: bytes, msg, data: bytes, kind: str) -> None:
        start = msg.body_offset
        # A shape's requests are sent without reading their arguments: not for operations
        # whose arguments may hold a reference to move.
        if self.references is not None and self.references.holds(msg.operation):
            return
        if msg.version < (1, 2) or not msg.body or start is None or \
                start + len(msg.body) != len(raw) or raw[:4] != GIOP_MAGIC or \
                not isinstance(msg.target, KeyAddr) or raw[6] & ~1 or \
                self._shape_count >= MAX_SHAPES:
            return
        name_end = _name_end(raw, _ULONG[bool(raw[6] & 1)])
        if name_end is None or name_end > start:
            return
        known = self._shapes.setdefault(raw[4:8] + raw[16:name_end], [])
        tail = raw[name_end:start]
        shape = next((sh for at, t, sh in known if at == start and t == tail), None)
        if shape is None:
            shape = _RequestShape(msg.operation, kind, msg.object_key)
            known.append((start, tail, shape))
            self._shape_count += 1
        new_key = self.keys.target_key(shape.key, self.server)
        if len(data) >= len(msg.body) + 16 and data.endswith(msg.body):
            rewritten = data[16:len(data) - len(msg.body)]
            if shape.rewritten.get(new_key) != rewritten:
                shape.rewritten[new_key] = rewritten
                self.shapes_version += 1

    def _outgoing_shaped(self, raw: bytes, ts: int):
        """outgoing() of a request of a known shape, or None (not one)."""
        ulong = _ULONG[raw[6] & 1]
        n = len(raw)
        if raw[6] & ~1 or self.reencoding is not None or raw[:4] != GIOP_MAGIC or \
                n < 16 or ulong.unpack_from(raw, 8)[0] != n - HEADER_SIZE:
            return None
        name_end = _name_end(raw, ulong)
        if name_end is None:
            return None
        known = self._shapes.get(raw[4:8] + raw[16:name_end])
        if known is None:
            return None
        for start, tail, shape in known:
            if n > start and raw[name_end:start] == tail:
                break
        else:
            return None
        new_key = self.keys.target_key(shape.key, self.server)
        rewritten = shape.rewritten.get(new_key)
        if rewritten is None:
            return None             # a key not seen yet for this shape: decoded
        call = Call(self.connection, self.server, shape.operation, shape.kind,
                    ulong.unpack_from(raw, 12)[0], ts)
        if not self.selected(shape.operation):
            call.outcome, call.reason = SKIPPED, "not selected (--only/--skip)"
            return None, call
        # (one allocation: the body is not sliced out first)
        data = b"".join((raw[:8], ulong.pack(4 + len(rewritten) + n - start),
                         ulong.pack(self.next_id), rewritten, memoryview(raw)[start:]))
        return self._started(call, data), call

    def _note_fragmented(self, msg, sent: bool) -> None:
        if msg.version >= (1, 2):
            if not sent:
                self._skipped_fragments.add(msg.request_id)
        else:
            self._open_11 = sent

    def _fragment(self, raw: bytes):
        more = bool(raw[6] & FLAG_MORE_FRAGMENTS)
        if raw[4:6] < b"\x01\x02":
            sent, self._open_11 = self._open_11, (self._open_11 if more else None)
            return raw if sent else None
        little = bool(raw[6] & 1)
        if len(raw) < 16:
            return None
        rid = _ULONG[little].unpack_from(raw, 12)[0]
        if rid in self._skipped_fragments:
            if not more:
                self._skipped_fragments.discard(rid)
            return None
        call = self.calls.get(rid)
        if call is None:
            return None                 # its request is not in the capture
        return raw[:12] + _ULONG[little].pack(call.replay_id) + raw[16:]

    def _patch_id(self, raw: bytes, msg, new_id: int) -> bytes:
        # Decoded without the analyzer's offsets, a message whose request id comes first
        # (a 1.2+ Request, any LocateRequest or CancelRequest) has it at byte 12.
        at = msg.offsets.get("request_id", 12)
        if raw[:4] != GIOP_MAGIC:       # ZIOP: written again, uncompressed
            return encode_message(dataclasses.replace(msg, request_id=new_id))
        return raw[:at] + _ULONG[msg.little].pack(new_id) + raw[at + 4:]

    def _rewrite(self, raw: bytes, msg, new_id: int) -> bytes:
        old_key = msg.object_key
        if old_key is None:
            # A GIOP 1.2 ProfileAddr/ReferenceAddr names the recorded server's host: the
            # target is addressed by the key of its IIOP profile instead.
            old_key = _profile_key(msg.target)
            if old_key is None:
                return self._patch_id(raw, msg, new_id)
            new_key = self.keys.target_key(old_key, self.server)
        else:
            new_key = self.keys.target_key(old_key, self.server)
            if new_key == old_key:
                return self._patch_id(raw, msg, new_id)
        changed = dataclasses.replace(msg, request_id=new_id, target=KeyAddr(new_key))
        data = encode_message(changed)
        if isinstance(msg, Request) and msg.version < (1, 2) and msg.body:
            shift = (len(data) - len(msg.body) - msg.body_offset) % 8
            if shift:
                changed = dataclasses.replace(changed, requesting_principal=(
                    msg.requesting_principal + bytes(8 - shift)))
                data = encode_message(changed)
        return data

    # -- the recorded server's side ------------------------------------------------------
    def recorded(self, raw: bytes, ts: int = 0) -> list:
        """Calls whose recorded reply this message completes (their
        ``recorded_reply`` set)."""
        reply = self._recorded.whole_reply(raw)
        if reply is not None:         # the common case, without the stream's framing
            call = self.calls.get(reply.request_id)
            if call is None or call.recorded_reply is not None:
                return []
            call.recorded_reply, call.recorded_raw = reply, raw
            call.recorded_latency = max(0, ts - call.request_ts) / 1e9
            return [call]
        return self._replies(self._recorded, raw, self.calls, recorded_ts=ts)

    def replayed(self, data: bytes, now: float = 0.0) -> list:
        """Calls whose replayed reply these bytes from the target complete (b"": the
        target closed)."""
        # The common case first: the bytes are one whole reply, nothing buffered, that
        # repeats its call's recorded reply but for the request id (what the stream's
        # framing would make of it too, without its events).
        reply = self._replayed.whole_reply(data)
        if reply is not None:
            call = self.by_replay_id.get(reply.request_id)
            if call is not None and call.replayed_reply is None:
                recorded = call.recorded_reply
                if type(recorded) is RawReply and recorded.same_but_id(data):
                    call.replayed_reply, call.replayed_raw = reply, data
                    if call.sent_at is not None:
                        call.replayed_latency = max(0.0, now - call.sent_at)
                    return [call]
        return self._replies(self._replayed, data, self.by_replay_id, now=now,
                             expected=self._recorded_raw)

    def _recorded_raw(self, replay_id: int):
        """The recorded reply of the call replayed as ``replay_id``, if kept as bytes."""
        call = self.by_replay_id.get(replay_id)
        reply = call.recorded_reply if call is not None else None
        return reply if isinstance(reply, RawReply) else None

    def _replies(self, stream: ReplyStream, data, calls: dict, recorded_ts=None, now=0.0,
                 expected=None):
        done = []
        for event in stream.feed(data, expected):
            if type(event) is RawReply:
                msg = raw = event
            elif isinstance(event, MessageReceived):
                msg = event.message
                raw = event.raw
                if not isinstance(msg, (Reply, LocateReply)):
                    if isinstance(msg, MessageError) and recorded_ts is None and \
                            self.target_closed is None:
                        # The target found a message it was sent malformed: no reply
                        # will come on this connection (omniORB's client, reading a reply,
                        # makes it a terminal error of the connection).
                        self.target_closed = "the target sent MessageError: it found a " \
                            "message sent to it malformed"
                    continue
            else:
                msg = None
            if msg is not None:
                call = calls.get(msg.request_id)
                if call is None:
                    if recorded_ts is None and not 0 < msg.request_id < self.next_id:
                        self.stray_replies += 1         # to a request id never sent
                        if self.first_stray is None:
                            self.first_stray = msg.request_id
                    continue
                if type(raw) is RawReply:
                    raw = raw.raw
                if recorded_ts is not None:
                    if call.recorded_reply is None:
                        call.recorded_reply, call.recorded_raw = msg, bytes(raw)
                        call.recorded_latency = max(0, recorded_ts - call.request_ts) / 1e9
                        done.append(call)
                elif call.replayed_reply is None:
                    call.replayed_reply, call.replayed_raw = msg, bytes(raw)
                    if call.sent_at is not None:
                        call.replayed_latency = max(0.0, now - call.sent_at)
                    done.append(call)
            elif isinstance(event, ProtocolViolation):
                if recorded_ts is None and self.target_closed is None and \
                        event.answer.name != "DISCARD":
                    self.target_closed = f"protocol violation by the target: {event.error}"
            elif isinstance(event, ConnectionClosed):
                if recorded_ts is None and self.target_closed is None:
                    self.target_closed = f"the target closed the connection ({event.reason})"
        return done

    def finished(self, call: Call) -> None:
        """Forget a call once compared."""
        if self.calls.get(call.recorded_id) is call:
            del self.calls[call.recorded_id]
        if call.replay_id is not None and self.by_replay_id.get(call.replay_id) is call:
            del self.by_replay_id[call.replay_id]

    def pending(self) -> list:
        """Calls still waiting for a reply (recorded or replayed), in send order."""
        return sorted(self.by_replay_id.values(), key=lambda c: c.replay_id)
