"""GIOP in packet captures: pcap/pcapng in, pycdr's decodings out, as it goes.

    for entry in iter_capture("session.pcap"):
        print(entry["frame"], entry.get("type"), entry.get("operation"))

:class:`pycdr.capture.read.CaptureReader` streams the TCP segments of the file,
:class:`pycdr.capture.tcp.TcpReassembler` puts each direction's bytes in order
(out-of-order segments, retransmissions, overlaps; holes become gaps), and
:class:`CaptureDecoder` frames each GIOP stream into messages and decodes every
one with :func:`pycdr.giop.messages.decode_message` in lenient mode.
Fragmented messages are joined by :class:`pycdr.giop.connection.GiopConnection`
(GIOP 1.1 by stream order, 1.2+ by request_id) and reported once more, whole,
at the frame of their last fragment.  Replies are matched to their requests by
request_id per TCP connection, with the response time.  A connection's state is
dropped when it closes (FIN both ways, RST), so memory stays flat whatever the
size of the capture.

Each entry is ``pycdr decode --json``'s message object plus where it was seen:
``frame`` (1-based, the frame at which the message's last byte arrived in
order, as Wireshark shows a reassembled PDU), ``time`` (seconds since the
epoch), ``stream`` (TCP connection index in order of appearance), ``src``/
``dst`` and ``stream_offset``.  A reply gets ``request_frame`` and
``response_time``; its request gets ``reply_frame`` *when the reply is seen*
(after the request entry was yielded: a consumer keeping the dicts sees it,
one that wrote the request out already does not).

Error entries (stable; ``pycdr decode --json`` uses the same shape)::

    {"frame", "time", "stream", "src", "dst", "stream_offset",
     "error": {"type": <pycdr error class or "CaptureGap">,
               "kind": "truncated" | "malformed" | "gap",
               "message": <text>,
               "offset": <byte offset in the stream, as stream_offset, or null>},
     "header": {...},        # when the 12 header bytes parsed
     "bytes": <hex of the undecodable bytes, at most MAX_ERROR_BYTES>,
     "bytes_length": <their full length>}

A message that does not decode at all gives such an entry with its header; a
stream that stops being GIOP (bad header) gives one with the bytes dropped
(framing starts again at the next segment).  A gap (bytes missing from the
capture) gives one of kind ``gap`` with ``missing`` (bytes) and, when it cut
a message whose header had arrived, ``lost`` (that message's offset and
header): that message alone is lost -- framing resumes at its end.  When the
gap leaves no known message boundary, framing resumes at the next GIOP header
found in the stream.
"""

from __future__ import annotations

import json
import struct

from ..errors import MessageTooLargeError, PycdrError, error_json, undecodable_bytes_json
from ..giop.connection import GiopConnection, Role
from ..giop.events import NEED_DATA, MessageReceived, ProtocolViolation
from ..giop.header import (FLAG_MORE_FRAGMENTS, GIOP_MAGIC, HEADER_SIZE, MAX_MESSAGE_SIZE,
                          SUPPORTED_VERSIONS, ZIOP_MAGIC, MsgType, parse_header)
from ..giop.messages import Reply, ReplyStatus, Request, decode_message
from ..addressing.iiop import IIOPProfile, decode_profile
from ..codec.marshal import read_value
from ..idl.model import OBJECT_OPERATIONS
from .read import CaptureReader
from .tcp import TcpReassembler
from ..codec.typecode import NAMED_KINDS, TCKind, resolve, value_members
from ..codec.values import field_names

GIOP_PORTS = (683, 2809)
# Messages that expect an answer, and the answer's type.
_REQUEST, _REPLY = MsgType.Request.value, MsgType.Reply.value
_LOCATE_REQUEST, _LOCATE_REPLY = MsgType.LocateRequest.value, MsgType.LocateReply.value
_ANSWER_OF = {_REQUEST: _REPLY, _LOCATE_REQUEST: _LOCATE_REPLY}
_MAGICS = (GIOP_MAGIC, ZIOP_MAGIC)
_NS = 1_000_000_000
_ULONG = {False: struct.Struct(">I"), True: struct.Struct("<I")}
_LE_U32 = _ULONG[True].unpack_from
_BE_U32 = _ULONG[False].unpack_from
# magic, version (major, minor as 2 bytes), flags, message type
_FRAMING = struct.Struct(">4s2sBB").unpack_from
_VERSIONS = frozenset(bytes(v) for v in SUPPORTED_VERSIONS)


class _GiopFlow:
    """The GIOP side of one TCP direction."""
    __slots__ = ("giop", "buf", "buf_offset", "skip_until", "resync", "connection", "fed",
                 "message_frames")

    def __init__(self):
        self.giop = False                # carries GIOP (port or magic seen)
        self.buf = bytearray()           # bytes of a message not complete yet
        self.buf_offset = 0              # stream offset of buf[0]
        self.skip_until = 0              # stream offset where framing resumes after a gap
        self.resync = False              # after a gap: look for the next GIOP header
        # Fragment reassembly: a GiopConnection fed every message involved, the
        # bytes fed so far and the frame of each message by offset.
        self.connection: GiopConnection | None = None
        self.fed = 0
        self.message_frames: dict = {}


class _ShapeMemo:
    """Decodings of Requests and NO_EXCEPTION Replies, reused for the messages
    of the same shape that follow (real traffic repeats a handful of shapes).

    :func:`decode_message` takes such a message's body as opaque bytes: all it
    reports -- fields, offsets, padding, warnings -- comes from the bytes before
    the body, but for ``request_id`` (read, never judged), ``message_size`` and
    the body itself.  A message whose bytes before its body are those of one
    decoded already, but for the request id, decodes to the same message with
    those three fields its own.  Only messages with a non-empty body and, in
    GIOP 1.2+, an 8-aligned one are taken: an empty or short body changes
    whether the padding before it is there.
    ``tests/test_pcap.py`` compares the entries with and without the memo.
    """
    SHAPES_PER_KIND = 8

    def __init__(self):
        self.kinds: dict = {}       # header bytes 4..8 (version, flags, type) -> [shape]

    def lookup(self, raw: bytes):
        """(the shape of ``raw``, its request id), or None."""
        shapes = self.kinds.get(raw[4:8])
        if not shapes:
            return None
        n = len(raw)
        for i, shape in enumerate(shapes):
            rid_at = shape.rid_at
            body_at = shape.body_at
            # (startswith at an offset: the bytes compared in place, no slice made)
            if n > body_at and raw.startswith(shape.after_rid, rid_at + 4) and \
                    raw.startswith(shape.before_rid, 12):
                if i:
                    shapes.insert(0, shapes.pop(i))
                return shape, shape.unpack(raw, rid_at)[0]
        return None

    def store(self, raw: bytes, msg, msg_json: dict) -> None:
        if msg.msg_type == MsgType.Reply:
            if msg.reply_status != 0:
                return
        elif msg.msg_type != MsgType.Request:
            return
        body_at = msg.body_offset
        if msg.more_fragments or msg.ziop is not None or msg.segments or body_at is None \
                or body_at >= len(raw) or raw[:4] != GIOP_MAGIC:
            return
        if msg.version >= (1, 2) and body_at & 7:
            return      # a 1.2 body too short for its padding: a longer one is aligned
        shapes = self.kinds.setdefault(raw[4:8], [])
        shapes.insert(0, _Shape(raw, msg, msg_json))
        del shapes[self.SHAPES_PER_KIND:]


class _Shape:
    """A message decoded once, as the memo keeps it (see :class:`_ShapeMemo`)."""
    __slots__ = ("rid_at", "body_at", "before_rid", "after_rid", "msg", "json", "unpack",
                 "msg_type", "_json_parts")
    # The JSON fields each message of the shape has its own (warnings: a fresh list).
    OWN = ("message_size", "request_id", "body", "warnings")

    def __init__(self, raw: bytes, msg, msg_json: dict):
        self.rid_at = rid_at = msg.offsets["request_id"]
        self.body_at = body_at = msg.body_offset
        self.before_rid = raw[12:rid_at]
        self.after_rid = raw[rid_at + 4:body_at]
        self.msg = msg
        self.json = msg_json
        self.unpack = _ULONG[msg.little].unpack_from
        self.msg_type = msg.msg_type.value       # (an int: an enum's .value costs a lookup)
        self._json_parts = None

    def json_parts(self) -> tuple:
        """The JSON text of the shape's fields, cut where a message's own go:
        (texts, own keys, the shape's warnings), ``texts`` one longer."""
        if self._json_parts is None:
            texts, own = [], []
            text = ""
            for key, value in self.json.items():
                text += ", " + _encode_str(key) + ": "
                if key in self.OWN:
                    texts.append(text)
                    own.append(key)
                    text = ""
                else:
                    text += _dumps(value)
            texts.append(text)
            self._json_parts = (tuple(texts), tuple(own), _dumps(self.json["warnings"]))
        return self._json_parts


class ShapedEntry(dict):
    """An entry made from a :class:`_Shape`: :func:`entry_json` writes the
    shape's fields from text made once."""
    __slots__ = ("shape",)


_dumps = json.JSONEncoder().encode            # what json.dumps(obj) gives
_encode_str = json.encoder.encode_basestring_ascii
_HEAD_KEYS = 6                                 # frame ... stream_offset: CaptureDecoder._entry


def entry_json(entry: dict) -> str:
    """``json.dumps(entry)``; entries from the memo written from their shape's
    text (tests/test_pcap.py checks the two agree)."""
    if type(entry) is not ShapedEntry:
        return _dumps(entry)
    texts, own, warnings_text = entry.shape.json_parts()
    out = [f'{{"frame": {entry["frame"]}, "time": {entry["time"]!r}, '
           f'"stream": {entry["stream"]}, "src": {_encode_str(entry["src"])}, '
           f'"dst": {_encode_str(entry["dst"])}, "stream_offset": {entry["stream_offset"]}']
    template = entry.shape.json
    for text, key in zip(texts, own):
        out.append(text)
        value = entry[key]
        if key == "body":
            out.append(f'"{value}"')                # hex: nothing to escape
        elif key == "warnings":
            out.append(warnings_text if value == template["warnings"] else _dumps(value))
        else:
            out.append(str(value))
    out.append(texts[-1])
    known = _HEAD_KEYS + len(template)
    if len(entry) > known:                          # matched frames, decoded values
        for key in list(entry)[known:]:
            out.append(", " + _encode_str(key) + ": " + _dumps(entry[key]))
    out.append("}")
    return "".join(out)


class CaptureDecoder:
    """The GIOP layer over :class:`TcpReassembler`: frames, decodes and matches
    messages per connection; every entry goes to ``emit`` as soon as it is made.

    ``unanswered(request)`` (optional) hears of each request entry no reply will
    be matched to: its connection ended, or a request reused its id first;
    ``matched(request, reply)`` (optional) of each reply matched to its request.

    ``raw_message(flow, raw, frame, ts)`` (optional): each framed GIOP message's
    bytes go there instead of being decoded (``pycdr replay`` sends them again);
    ``emit`` then hears of the errors alone (gaps, bytes that are not GIOP).
    ``bodies=False``: entries without ``body`` (the hex of the message body),
    for outputs that do not show it (text, --stats, --parquet).
    ``shard=(k, n)``: only the connections whose index is k modulo n are
    decoded (:mod:`pycdr.capture.shard` runs n such decoders side by side).

    ``track(flow, entry, msg, ts, request_id, msg_type)`` (optional) takes over
    matching: it hears of every whole message (fragments joined; ``entry`` before
    it is emitted, ``ts`` in ns) and the decoder keeps no request table of its own
    (``matched``, ``unanswered``, ``decode_body`` and ``request_frame`` are then
    unused: :mod:`pycdr.capture.monitor` pairs calls itself).  With
    ``track_bodies``, ``msg`` holds its body for a message the memo knew too."""

    def __init__(self, emit, ports=None, heuristic: bool = True, user_exceptions=None,
                 decode_body=None, unanswered=None, matched=None, memo: bool = True,
                 bodies: bool = True, shard: tuple | None = None, raw_message=None,
                 track=None, track_bodies: bool = False):
        self.emit = emit
        self.track = track
        self.message_bytes = b""        # the bytes of the message being handled
        self.track_bodies = track_bodies
        self.raw_message = raw_message
        self.shard = shard
        self.ports = frozenset(GIOP_PORTS if ports is None else ports)
        self.heuristic = heuristic
        self.user_exceptions = user_exceptions
        # decode_body(msg, request) -> dict of decoded arguments/results, or None
        self.decode_body = decode_body
        self.on_unanswered = unanswered
        self.on_matched = matched
        self.memo = _ShapeMemo() if memo else None
        self.bodies = bodies

    # -- the TcpReassembler sink -------------------------------------------------
    def data(self, flow, data: bytes, frame: int, ts: int) -> None:
        st = flow.app
        if st is None:
            st = flow.app = _GiopFlow()
            if flow.connection.app is None:
                flow.connection.app = {}     # (answer type, request_id) -> (entry, ts)
        offset = flow.offset
        if not st.giop:
            # (checked until a flow is found to carry GIOP: never again on the hot path)
            if self.shard is not None and \
                    flow.connection.index % self.shard[1] != self.shard[0]:
                return
            key = flow.key
            if key[1] in self.ports or key[3] in self.ports or \
                    (self.heuristic and data[:4] in _MAGICS):
                st.giop = True
            else:
                return
        if st.skip_until > offset:
            cut = st.skip_until - offset
            if cut >= len(data):
                return
            data = data[cut:]
            offset += cut
        buf = st.buf
        if not buf:
            if st.resync:
                data, offset = self._resync(data, offset)
                if data is None:
                    return
            # The common case: whole messages in the segment, framed in place.
            pos = self._frame(flow, st, data, 0, offset, frame, ts)
            if pos is not None and pos < len(data):
                buf += data[pos:] if pos else data
                st.buf_offset = offset + pos
            return
        buf += data
        if st.resync:
            rest, start = self._resync(bytes(buf), st.buf_offset)
            buf.clear()
            if rest is None:
                return
            buf += rest
            st.buf_offset = start
        pos = self._frame(flow, st, buf, 0, st.buf_offset, frame, ts)
        if pos is None:
            buf.clear()
        elif pos:
            del buf[:pos]
            st.buf_offset += pos

    def take_whole(self, flow, data: bytes, frame: int, ts: int) -> bool:
        """What :meth:`data` does with a segment that is exactly one whole GIOP message
        of a flow known to carry GIOP, nothing buffered before it (nearly every
        segment), without the framing loop: the ``take`` of
        :meth:`TcpReassembler.in_order_feed`.  False: not such a segment (untouched)."""
        st = flow.app
        n = len(data)
        if st is None or not st.giop or st.buf or st.resync or st.skip_until > flow.offset \
                or not HEADER_SIZE <= n <= HEADER_SIZE + MAX_MESSAGE_SIZE \
                or type(data) is not bytes or data[:4] != GIOP_MAGIC \
                or data[4:6] not in _VERSIONS \
                or (_LE_U32 if data[6] & 1 else _BE_U32)(data, 8)[0] != n - HEADER_SIZE:
            return False
        if self.raw_message is not None:
            self.raw_message(flow, data, frame, ts)
        else:
            self._message(flow, st, data, GIOP_MAGIC, data[6], data[7], flow.offset, frame, ts)
        return True

    def gap(self, flow, missing: int, frame: int, ts: int) -> None:
        st = flow.app
        if st is None or not st.giop:
            return
        offset = flow.offset                    # where the missing bytes start
        entry = self._entry(flow, frame, ts, offset, error={
            "type": "CaptureGap", "kind": "gap", "offset": None,
            "message": f"{missing} bytes missing from the capture"}, missing=missing)
        gap_end = offset + missing
        if st.skip_until > offset:
            pass                                # inside a message lost already
        elif st.buf and len(st.buf) >= HEADER_SIZE and not st.resync:
            try:
                header = parse_header(st.buf)
            except PycdrError:
                header = None
            if header is not None:
                entry["lost"] = {"stream_offset": st.buf_offset, "header": header.to_json()}
                end = st.buf_offset + header.total_size
                if end >= gap_end:
                    st.skip_until = end         # framing resumes right after it
                    entry["error"]["message"] += "; the message they cut is lost"
                else:
                    st.resync = True
            else:
                st.resync = True
        elif st.buf or not st.resync:
            st.resync = True
        if st.resync:
            entry["error"]["message"] += "; framing resumes at the next GIOP header"
        st.buf.clear()
        st.buf_offset = gap_end
        self.emit(entry)

    def closed(self, connection) -> None:
        requests = connection.app
        connection.app = None
        for flow in connection.flows:
            flow.app = None
        if self.on_unanswered is not None and requests is not None:
            for entry, _ in requests.values():
                self.on_unanswered(entry)

    # -- framing -------------------------------------------------------------------
    def _resync(self, data, offset: int):
        """(data from the next plausible GIOP header on, its offset), or (None, 0)
        when ``data`` holds none (a magic cut by a segment boundary is not seen:
        framing then resumes at the header after it)."""
        pos = 0
        while True:
            hits = [i for i in (data.find(GIOP_MAGIC, pos), data.find(ZIOP_MAGIC, pos)) if i >= 0]
            if not hits:
                break
            pos = min(hits)
            if len(data) - pos < HEADER_SIZE:
                return data[pos:], offset + pos     # the rest decides
            try:
                header = parse_header(data, pos)
            except PycdrError:
                header = None
            if header is not None and header.msg_type <= MsgType.Fragment and \
                    header.size <= MAX_MESSAGE_SIZE:
                return data[pos:], offset + pos
            pos += 1
        return None, 0

    def _frame(self, flow, st: _GiopFlow, b, pos: int, offset: int, frame: int, ts: int):
        """Decode the whole messages of ``b`` from ``pos`` (at stream offset
        ``offset``); the position of the first byte left, or None when the
        rest is to be dropped."""
        st.resync = False
        n = len(b)
        base = offset - pos
        while n - pos >= HEADER_SIZE:
            # The header's framing fields read directly; parse_header (a GiopHeader,
            # or the error) only when the memo does not know the message.
            magic, version, flags, msg_type = _FRAMING(b, pos)
            size = (_LE_U32 if flags & 1 else _BE_U32)(b, pos + 8)[0]
            if magic not in _MAGICS or version not in _VERSIONS or size > MAX_MESSAGE_SIZE:
                try:
                    header = parse_header(b, pos)
                except PycdrError as e:
                    # No framing without a header: the rest of the bytes are not GIOP.
                    self.emit(self._error_entry(flow, frame, ts, base + pos, e, b, pos, n))
                    return None
                # GiopConnection's limit: not buffered; the stream cannot be framed on.
                self.emit(self._entry(flow, frame, ts, base + pos, error=error_json(
                    MessageTooLargeError(f"message of {header.size} bytes exceeds the limit "
                                         f"of {MAX_MESSAGE_SIZE}", base + pos + 8)),
                    header=header.to_json(), **undecodable_bytes_json(b, pos, n)))
                return None
            total = HEADER_SIZE + size
            if n - pos < total:
                break
            raw = b[pos:pos + total] if type(b) is bytes else bytes(b[pos:pos + total])
            if self.raw_message is not None:
                self.raw_message(flow, raw, frame, ts)
            else:
                self._message(flow, st, raw, magic, flags, msg_type, base + pos, frame, ts)
            pos += total
        return pos

    def _error_entry(self, flow, frame, ts, offset, e: PycdrError, b, pos, end, header=None):
        error = error_json(e)
        if error["offset"] is not None and b is not None:
            error["offset"] += offset - pos          # in the stream, as stream_offset
        extra = {} if header is None else {"header": header.to_json()}
        return self._entry(flow, frame, ts, offset, error=error, **extra,
                           **undecodable_bytes_json(b, pos, end))

    def _message(self, flow, st, raw: bytes, magic: bytes, flags: int, msg_type: int,
                 offset: int, frame: int, ts: int) -> None:
        self.message_bytes = raw        # (what `track` may ask of the message it hears of)
        memo = self.memo
        known = memo.lookup(raw) if memo is not None else None
        if known is not None:
            shape, request_id = known
            shape_msg = shape.msg
            shape_json = shape.json
            entry = self._entry(flow, frame, ts, offset, kind=ShapedEntry)
            entry.shape = shape
            entry.update(shape_json)
            entry["message_size"] = len(raw) - HEADER_SIZE
            entry["request_id"] = request_id
            if self.bodies:
                entry["body"] = raw[shape.body_at:].hex()
            else:
                entry.pop("body", None)
            entry["warnings"] = list(shape_json["warnings"])
            msg = shape_msg
            if self.decode_body is not None or self.track_bodies:   # its body, to decode
                msg = object.__new__(type(shape_msg))
                msg.__dict__.update(shape_msg.__dict__)
                msg.request_id = request_id
                msg.body = raw[shape.body_at:]
                msg.message_size = len(raw) - HEADER_SIZE
            self._match(flow, entry, msg, ts, request_id, shape.msg_type)
            decoded = True
        else:
            header = parse_header(raw)
            try:
                # (the budget of a message holds for what a ZIOP one inflates to as well)
                msg, _ = decode_message(raw, lenient=True, user_exceptions=self.user_exceptions,
                                        header=header, max_message_size=MAX_MESSAGE_SIZE)
            except PycdrError as e:
                entry = self._error_entry(flow, frame, ts, offset, e, raw, 0, len(raw), header)
                decoded = False
            else:
                msg_json = msg.to_json()
                if memo is not None:
                    memo.store(raw, msg, msg_json)
                entry = self._entry(flow, frame, ts, offset, msg=msg, msg_json=dict(
                    msg_json, warnings=list(msg_json["warnings"])))
                decoded = True
        self.emit(entry)
        # (more fragments: the flag, in GIOP 1.1 and later)
        if msg_type == MsgType.Fragment or (flags & FLAG_MORE_FRAGMENTS and raw[5]) or \
                (st.connection is not None and st.connection._fragmented_11 is not None):
            if magic != ZIOP_MAGIC:
                self._reassemble(flow, st, raw, frame, ts, entry, decoded)

    def _reassemble(self, flow, st, raw, frame, ts, entry, decoded) -> None:
        """Let a GiopConnection join fragments; report the joined message."""
        if st.connection is None:
            # A passive observer: no role or request-id books, every version.
            st.connection = GiopConnection(Role.SERVER, version=(1, 3), lenient=True,
                                           bidirectional=True, check_request_ids=False)
            st.fed = 0
            st.message_frames.clear()
        conn = st.connection
        st.message_frames[st.fed] = frame
        st.fed += len(raw)
        conn.receive_data(raw)
        while True:
            event = conn.next_event()
            if event is NEED_DATA:
                if not conn.has_partial_message:
                    st.message_frames.clear()       # no fragment chain open
                return
            if isinstance(event, MessageReceived):
                if event.fragments > 1:
                    e = self._entry(flow, frame, ts, entry["stream_offset"], msg=event.message,
                                    reassembled={"fragments": event.fragments, "first_frame":
                                                 st.message_frames.get(event.offset)})
                    self.emit(e)
            elif isinstance(event, ProtocolViolation):
                # Fragment misuse, or a joined message that does not decode.
                own = {w["code"] for w in entry.get("warnings", [])}
                if decoded and not own & {"may-not-fragment", "fragment-in-1.0"}:
                    entry["warnings"].append({"code": "fragment-misuse",
                                              "message": str(event.error),
                                              "offset": 0, "severity": "warning"})
            else:
                # ConnectionClosed after a fatal violation: start afresh for what follows.
                st.connection = None
                return

    def _entry(self, flow, frame, ts, offset, msg=None, msg_json=None, kind=dict,
               **extra) -> dict:
        entry = kind(frame=frame, time=round(ts / _NS, 6), stream=flow.connection.index,
                     src=flow.src, dst=flow.dst, stream_offset=offset)
        if msg is not None:
            entry.update(msg.to_json() if msg_json is None else msg_json)
            if not self.bodies:
                entry.pop("body", None)
            entry.update(extra)
            if not msg.more_fragments:
                self._match(flow, entry, msg, ts, getattr(msg, "request_id", None))
        else:
            entry.update(extra)
        return entry

    def _match(self, flow, entry, msg, ts, rid, t=None) -> None:
        """Replies to requests (``rid``: the message's request id, which a
        message taken from the memo does not hold; ``t``: its type's value)."""
        if t is None:
            t = msg.msg_type.value      # (keys of plain ints: an enum hashes in Python)
        if self.track is not None:
            self.track(flow, entry, msg, ts, rid, t)
            return
        requests = flow.connection.app
        request = None
        if t == _REPLY or t == _LOCATE_REPLY:
            request = requests.pop((t, rid), None)
        if self.decode_body is not None:
            # A reply is decoded with its request's operation.
            decoded = self.decode_body(msg, None if request is None else request[0])
            if decoded is not None:
                entry["decoded"] = decoded
        if t in _ANSWER_OF:
            # A oneway request waits for nothing (and would be held until the close).
            if t != _REQUEST or msg.response_expected:
                displaced = requests.get((_ANSWER_OF[t], rid))
                if displaced is not None and self.on_unanswered is not None:
                    self.on_unanswered(displaced[0])
                requests[(_ANSWER_OF[t], rid)] = (entry, ts)
        elif request is not None:
            request_entry, request_ts = request
            entry["request_frame"] = request_entry["frame"]
            entry["response_time"] = round((ts - request_ts) / _NS, 9)
            request_entry["reply_frame"] = entry["frame"]
            if self.on_matched is not None:
                self.on_matched(request_entry, entry)


def iter_capture(source, *, ports=None, heuristic: bool = True, user_exceptions=None,
                 decode_body=None, unanswered=None, matched=None,
                 reader: CaptureReader | None = None, memo: bool = True, bodies: bool = True):
    """Every GIOP message of a capture as a JSON-ready dict (see the module doc),
    yielded as the file is read.  ``source``: a path or binary file (or pass an
    open ``reader``); ``unanswered``, ``matched``, ``bodies``: see :class:`CaptureDecoder`."""
    out: list = []
    decoder = CaptureDecoder(out.append, ports, heuristic, user_exceptions, decode_body,
                             unanswered, matched, memo, bodies)
    tcp = TcpReassembler(decoder)
    feed = tcp.in_order_feed(decoder.take_whole)
    if reader is None:
        reader = CaptureReader(source)
    with reader:
        for segment in reader:
            feed(segment)
            if out:
                yield from out
                out.clear()
        tcp.finish()
        yield from out


def decode_capture(path, *, ports=None, heuristic: bool = True, user_exceptions=None,
                   decode_body=None) -> list[dict]:
    """Every GIOP message of a capture, as a list (small captures; see :func:`iter_capture`)."""
    return list(iter_capture(path, ports=ports, heuristic=heuristic,
                             user_exceptions=user_exceptions, decode_body=decode_body))


# ----------------------------------------------------------------------------
# Arguments and results, decoded with IDL operation descriptions.
#
# Decoded values are reported flat, as (path, text) pairs, the form the Lua
# dissector's argument fields take too: the two are compared pair for pair.
#   integers: decimal; float/double: C's %.17g; boolean: true/false;
#   char/string: the text; octet sequences/arrays: hex; enum: the item's name;
#   struct/exception: "path.member"; sequence/array: "path[i]";
#   union: "path._d" then "path.<branch>"; object reference: its type_id
#   ("nil" for nil) and, for an IIOP first profile, "path.host"/"path.port";
#   fixed: plain decimal with its scale ("-1.50"); long double: exact hex
#   (long_double_text); TypeCode: typecode_text; any: its TypeCode's text,
#   then its value under "path.value"; valuetype: "null", its repository id
#   then its members as "path.member", or "-> <path>" for a value already
#   shown (an indirection: shared or cyclic); value box: "null" or the boxed
#   value at "path".  ``seen`` (value -> path) spans one message's values.
# Kinds shown by leaf_text, as plain ints (an enum member hashes in Python).
_LEAF_KINDS = frozenset(k.value for k in (
    TCKind.tk_short, TCKind.tk_long, TCKind.tk_ushort, TCKind.tk_ulong, TCKind.tk_longlong,
    TCKind.tk_ulonglong, TCKind.tk_float, TCKind.tk_double, TCKind.tk_boolean, TCKind.tk_char,
    TCKind.tk_octet, TCKind.tk_string, TCKind.tk_wchar, TCKind.tk_wstring, TCKind.tk_enum))


def flatten_value(tc, value, path: str, out: list, seen: dict | None = None) -> list:
    if seen is None:
        seen = {}
    tc = _unaliased(tc)
    kind = tc.kind()
    if kind._value_ in _LEAF_KINDS:          # (the common case first)
        out.append([path, leaf_text(value)])
    elif kind in (TCKind.tk_struct, TCKind.tk_except):
        for i in range(tc.member_count()):
            name = tc.member_name(i)
            member = value[i] if isinstance(value, (tuple, list)) else \
                getattr(value, _py_attr(value, i, name))
            flatten_value(tc.member_type(i), member, f"{path}.{name}", out, seen)
    elif kind == TCKind.tk_union:
        flatten_value(tc.discriminator_type(), value._d, f"{path}._d", out, seen)
        branch = union_branch(tc, value._d)
        if branch is not None:
            flatten_value(tc.member_type(branch), value._v,
                          f"{path}.{tc.member_name(branch)}", out, seen)
    elif kind in (TCKind.tk_sequence, TCKind.tk_array) and not isinstance(value, (bytes, str)):
        for i, item in enumerate(value):
            flatten_value(tc.content_type(), item, f"{path}[{i}]", out, seen)
    elif kind == TCKind.tk_any:
        out.append([path, typecode_text(value.tc)])
        if resolve(value.tc).unalias().kind() not in (TCKind.tk_null, TCKind.tk_void):
            flatten_value(value.tc, value.value, f"{path}.value", out, seen)
    elif kind == TCKind.tk_TypeCode:
        out.append([path, typecode_text(value)])
    elif kind == TCKind.tk_fixed:
        out.append([path, format(value, "f")])
    elif kind == TCKind.tk_longdouble:
        out.append([path, long_double_text(value)])
    elif kind == TCKind.tk_value_box:
        if value is None:
            out.append([path, "null"])
        else:
            flatten_value(tc.content_type(), value, path, out, seen)
    elif kind in (TCKind.tk_value, TCKind.tk_event):
        if value is None:
            out.append([path, "null"])
        elif id(value) in seen:
            out.append([path, "-> " + seen[id(value)]])
        else:
            seen[id(value)] = path
            actual = resolve(value._tc)          # the type decoded (truncated to a known base)
            out.append([path, actual.id()])
            members = value_members(actual)
            for attr, (name, mtype) in zip(field_names([m[0] for m in members]), members):
                flatten_value(mtype, getattr(value, attr), f"{path}.{name}", out, seen)
    elif kind == TCKind.tk_objref:
        if value is None or value.is_nil:
            out.append([path, "nil"])
        else:
            out.append([path, value.type_id])
            first = decode_profile(value.profiles[0], lenient=True) if value.profiles else None
            if isinstance(first, IIOPProfile):
                out.append([f"{path}.host", first.host])
                out.append([f"{path}.port", str(first.port)])
    else:
        out.append([path, leaf_text(value)])
    return out


def typecode_text(tc) -> str:
    """A TypeCode in one line: its kind without "tk_", the repository id of
    named kinds, bounds and parameters of the others ("sequence<long,10>",
    "fixed<5,2>", "struct IDL:Demo/Point:1.0")."""
    tc = resolve(tc)
    kind = tc.kind()
    name = kind.name[3:]
    if kind in NAMED_KINDS:
        return f"{name} {tc.id()}"
    if kind in (TCKind.tk_string, TCKind.tk_wstring):
        return f"{name}<{tc.length()}>" if tc.length() else name
    if kind == TCKind.tk_fixed:
        return f"fixed<{tc.fixed_digits()},{tc.fixed_scale()}>"
    if kind == TCKind.tk_sequence:
        inner = typecode_text(tc.content_type())
        return f"sequence<{inner},{tc.length()}>" if tc.length() else f"sequence<{inner}>"
    if kind == TCKind.tk_array:
        return f"array<{typecode_text(tc.content_type())},{tc.length()}>"
    return name


def long_double_text(value) -> str:
    """An IEEE binary128 exactly, as C's %a writes a double: "-0x1.<28 hex
    digits>p+3"; subnormals "0x0.<...>p-16382"; "inf", "-inf", "nan"."""
    bits = value.bits
    sign = "-" if bits >> 127 else ""
    exponent = (bits >> 112) & 0x7FFF
    mantissa = bits & ((1 << 112) - 1)
    if exponent == 0x7FFF:
        return "nan" if mantissa else sign + "inf"
    if exponent == 0:
        return f"{sign}0x0.{mantissa:028x}p{-16382 if mantissa else 0:+d}"
    return f"{sign}0x1.{mantissa:028x}p{exponent - 16383:+d}"


def _unaliased(tc):
    """The TypeCode an alias (of an alias...) names, references resolved."""
    tc = resolve(tc)
    while tc.kind() == TCKind.tk_alias:
        tc = resolve(tc.content_type())
    return tc


def _items(pairs) -> tuple:
    """(name, TypeCode, shown by leaf_text alone) of each of ``pairs``."""
    return tuple((name, tc, _unaliased(tc).kind()._value_ in _LEAF_KINDS) for name, tc in pairs)


def _py_attr(value, index: int, idl_name: str) -> str:
    fields = getattr(type(value), "_fields", None)
    return fields[index] if fields else idl_name


def union_branch(tc, discriminator):
    default = None
    for i in range(tc.member_count()):
        label = tc.member_label(i)
        if tc.default_index() == i:
            default = i
        elif label == discriminator:
            return i
    return default


def leaf_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "name") and isinstance(value, int):     # an enum item
        return value.name
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "%.17g" % value
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


class IdlBodyDecoder:
    """``decode_body`` for :class:`CaptureDecoder`: decodes request arguments,
    reply results/out values and user exceptions of the operations every object
    has (``_is_a``, ``_non_existent``, ...: their signatures are the ORB's, no
    IDL needed) and of the operations of IDL modules (``pycdr.idl.load``
    results; none for the first kind alone), looked up by operation name."""

    def __init__(self, modules=(), typed: bool = False):
        # typed: also each value whole, as `pycdr call --json` gives it ("typed": {name:
        # JSON value}), for JSON output.
        self.to_json = None
        if typed:
            from ..orb.jsonvalues import to_json
            self.to_json = to_json
        self.operations: dict = {}
        self.exceptions: dict = {}
        # Per operation name: (name, TypeCode) of its arguments, and of its results.
        self.arguments: dict = {}
        self.results: dict = {}
        operations = list(OBJECT_OPERATIONS.items())
        for m in modules:
            for iface in m.interfaces.values():
                operations += iface.all_operations().items()
        for name, op in operations:
            for exc in op.raises:
                self.exceptions.setdefault(exc.id(), exc)
            if name in self.operations:
                continue
            self.operations[name] = op
            self.arguments[name] = _items((p.name, p.type) for p in op.in_params)
            self.results[name] = _items(
                (() if op.result.kind() == TCKind.tk_void else (("return", op.result),))
                + tuple((p.name, p.type) for p in op.out_params))

    def __call__(self, msg, request):
        return self.decode(msg, request)[0]

    def decode(self, msg, request, **reader_options) -> tuple:
        """(what __call__ returns, the reader that read it: where the values
        ended), or (None, None); ``reader_options``: the body reader's (tcs_c,
        tcs_w: the code sets the connection negotiated)."""
        if isinstance(msg, Request):
            op = self.operations.get(msg.operation)
            if op is None:
                return None, None
            items = self.arguments[msg.operation]
            kind = "arguments"
        elif isinstance(msg, Reply) and request is not None:
            op = self.operations.get(request.get("operation"))
            if op is None:
                return None, None
            if msg.reply_status == ReplyStatus.NO_EXCEPTION:
                items = self.results[request["operation"]]
                kind = "results"
            elif msg.reply_status == ReplyStatus.USER_EXCEPTION:
                exc = self.exceptions.get(msg.exception_id)
                if exc is None:
                    return None, None
                items = ((exc.name(), exc, False),)
                kind = "exception"
            else:
                return None, None
        else:
            return None, None
        out: list = []
        result = {"operation": op.name, "kind": kind, "values": out}
        r = msg.body_reader(lenient=True, **reader_options)
        seen: dict = {}                              # valuetypes shared between items
        to_json = self.to_json
        if to_json is not None:
            typed = result["typed"] = {}
        try:
            for name, tc, leaf in items:             # (an exception starts with its id)
                value = read_value(r, tc)
                if to_json is not None:
                    typed[name] = to_json(value)
                if leaf:                             # flatten_value's first case, straight
                    out.append([name, leaf_text(value)])
                else:
                    flatten_value(tc, value, name, out, seen)
        except PycdrError as e:
            result["error"] = error_json(e)
        if r.warnings:          # violations inside the values (bad boolean, padding, ...)
            result["warnings"] = [w.to_json() for w in r.warnings]
        return result, r
