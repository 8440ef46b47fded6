"""A sans-I/O GIOP connection: bytes in, events out; messages in, bytes out.

    conn = GiopConnection(Role.CLIENT)
    sock.sendall(conn.send(Request(request_id=conn.next_request_id(), ...)))
    conn.receive_data(sock.recv(65536))          # b"" means end of stream
    while (event := conn.next_event()) is not NEED_DATA:
        ...

A transport feeds it with ``receive_data(bytes)``, or, to save copies
(asyncio's BufferedProtocol), by writing into ``receive_buffer()`` and calling
``received(n)``: complete messages are then copied once out of the read buffer,
and a large message is received straight into a buffer of its own size.

It frames the byte stream into messages (any chunking, several messages per
chunk), reassembles fragments (GIOP 1.1 by stream order, 1.2 by request_id,
fragments of different requests interleaved), keeps request-id books for its
role, and turns every protocol violation into a :class:`ProtocolViolation`
event that says what to answer.  Memory is bounded by ``max_message_size``,
``max_reassembly_size`` and ``max_pending_fragmented``; a header that claims
more than the limit is refused before its body is buffered, and a ZIOP message
may inflate to no more than ``max_message_size`` either (checked while it
inflates).  Such a ZIOP message leaves the framing intact: a server answers the
Request in it with IMP_LIMIT (a MessageError when its start cannot be read, nothing
for a oneway); a client drops the Reply and the violation names its request.

A reassembled message is the first message's header and body followed by the
fragments' data.  GIOP 1.2 fragments keep the message's alignment (16-byte
fragment headers, 8-multiple fragment sizes).  GIOP 1.1 fragment data is
aligned relative to its own fragment: the message remembers where each
fragment's data starts (``segments``) and is read with a
:class:`pycdr.codec.cdr.SegmentedReader`, which aligns each part from its own origin.
"""

from __future__ import annotations

import collections
import enum
import itertools
import struct

from ..codec.cdr import CDRReader, DecodeWarning
from ..errors import (DecodeError, GIOPError, LocalProtocolError, MessageTooLargeError,
                      PycdrError, UnsupportedVersionError)
from . import service_contexts as sc
from .events import (NEED_DATA, TAKEN, Answer, ConnectionClosed, MessageReceived,
                     ProtocolViolation)
from .header import (FLAG_MORE_FRAGMENTS, GIOP_MAGIC, HEADER_SIZE, MAX_MESSAGE_SIZE, GiopHeader,
                     MsgType, encode_header, message_error_bytes, may_fragment, parse_header)
from .messages import (CloseConnection, Message, MessageError, MessageTemplate, Reply,
                       ReplyStatus, Request, decode_message, encode_fragments,
                       encode_message)
from .messages.fast12 import frame_chain_12, frame_common_12
from .sysexc import IMP_LIMIT, OMG_VMCID, CompletionStatus

__all__ = ["GiopConnection", "Role", "NEED_DATA"]

# A fragmented message's request id (its size checked first: 4 bytes are there).
_ULONG = {False: struct.Struct(">I"), True: struct.Struct("<I")}

# receive_buffer(): reads go into a scratch buffer of SCRATCH_SIZE, several messages to
# a read; the complete messages are copied out of it, and the bytes of an incomplete one
# are appended to the connection's own buffer, which so holds what was received and
# no more.  Many connections share one scratch (the ``scratch`` argument: the ORB passes
# one per event loop), so an idle or stalled connection holds no read buffer at all.
# Why one large scratch: each read costs a turn of the transport's loop, and the fewer
# messages a read brings, the more turns a message costs.  Measured on a 2-vCPU machine
# with a stream of oneway requests, server CPU per message: in place from 16 KB with a
# 256 KB scratch, 62-64 us at 64 KB and 98-102 us at 128 KB; through a 1 MB scratch,
# 49-52 us and 78-81 us.  (Each connection used to keep a scratch of its own, 256 KB
# and doubled to 1 MB while busy, which a thousand stalled connections held at once:
# issue 22.)
#
# An incomplete message missing IN_PLACE_MIN or more bytes (up to IN_PLACE_MAX in all)
# is received in place, in a buffer of its own that becomes the message, once
# IN_PLACE_START of it have come: that buffer grows as reads fill it, to at most twice
# the bytes received, never to what the header claims before they come.
IN_PLACE_MIN = 256 * 1024
IN_PLACE_MAX = 1 << 20
IN_PLACE_START = 64 * 1024
SCRATCH_SIZE = 1 << 20


class Role(enum.Enum):
    CLIENT = "client"
    SERVER = "server"


# Who may send what (without bidirectional GIOP).
_CLIENT_SENDS = frozenset({MsgType.Request, MsgType.CancelRequest, MsgType.LocateRequest,
                           MsgType.MessageError, MsgType.Fragment})
_SERVER_SENDS = frozenset({MsgType.Reply, MsgType.LocateReply, MsgType.CloseConnection,
                           MsgType.MessageError, MsgType.Fragment})


class _Reassembly:
    """The parts of one fragmented message."""

    def __init__(self, header: GiopHeader, first: bytes, offset: int):
        self.header = header
        # (views, not copies: the parts are copied once, into the whole message)
        self.parts = [memoryview(first)[HEADER_SIZE:]]
        self.size = len(first) - HEADER_SIZE
        self.offset = offset
        self.count = 1
        self.warnings: list = []


class GiopConnection:
    def __init__(self, role: Role, *, version: tuple[int, int] = (1, 2),
                 lenient: bool = False, bidirectional: bool = False,
                 check_request_ids: bool = True, max_message_size: int = MAX_MESSAGE_SIZE,
                 max_reassembly_size: int = 64 << 20,
                 max_pending_fragmented: int = 64, field_offsets: bool = True,
                 body_views: bool = False, scratch: bytearray | None = None):
        self.role = role
        # False (an ORB): messages come without the analyzer's offsets and padding
        # (decode_message's field_offsets), decoded faster.
        self.field_offsets = field_offsets
        # True (an ORB, with field_offsets False): a message's body may be a view of
        # the message's bytes (decode_message's body_view) rather than a copy.  An
        # octet sequence in a received Request or Reply is then copied, after the
        # read into the receive buffer: once into the message (from the scratch
        # buffer, or appended to _buf when it came in several reads) and once into
        # its bytes value; a large message received in place, only into the value.
        # (Before: message, then body, then value, and _buf to bytes on top.)
        self.body_views = body_views
        self.version = version          # the highest version this side speaks
        self.lenient = lenient
        self.bidirectional = bidirectional
        # A passive observer of one direction (capture analysis) has no books
        # to check replies against: it turns this off.
        self.check_request_ids = check_request_ids
        self.max_message_size = max_message_size
        self.max_reassembly_size = max_reassembly_size
        self.max_pending_fragmented = max_pending_fragmented
        self._buf = bytearray()
        self._stream_offset = 0         # stream offset of the next message handed out
        # receive_buffer()/received(): bytes arrive in _scratch (shared, or made at
        # the first read); the complete messages among them wait in _ready as
        # (checked header, bytes or bytearray), the rest goes to _buf.  A large
        # message's bytes go straight into a buffer of its own (_in_place, filled up to
        # _in_place_filled, grown as they come).  Stream order: _ready, then
        # _in_place, then _buf.
        self._scratch: memoryview | None = memoryview(scratch) if scratch is not None \
            else None
        self._in_place: bytearray | None = None
        self._in_place_header: GiopHeader | None = None
        self._in_place_filled = 0
        self._ready: collections.deque = collections.deque()
        self._ready_bytes = 0
        self._eof = False
        self._closed: ConnectionClosed | None = None
        # Fragment reassembly: 1.2+ by request_id, 1.1 one message at a time.
        self._fragmented: dict[int, _Reassembly] = {}
        self._fragmented_11: _Reassembly | None = None
        self._dropped_fragment_ids: set[int] = set()   # cancelled or over a limit
        # Request-id books.  Client: requests sent that await a reply.
        # Server: requests received that await our reply.
        self.outstanding: set[int] = set()
        self.outstanding_locates: set[int] = set()
        self._ids = itertools.count(1)
        # An ORB's fast path: take_directly(raw) is offered each whole Request or
        # Reply (not a fragment of one, no GIOP 1.1 fragments pending); True: it
        # took the message itself (a server answered the Request, a client got
        # its Reply's values) and next_event returns TAKEN; False: the message is
        # decoded and handed out as usual.  What it does is the ORB's business:
        # it has the books to keep (outstanding) for the message it took.
        self.take_directly = None

    @property
    def has_partial_message(self) -> bool:
        """Whether part of a message is buffered: an incomplete message or the
        fragments of one (an ORB times these out)."""
        return bool(self._buf) or self._in_place is not None or bool(self._fragmented) \
            or self._fragmented_11 is not None

    @property
    def idle(self) -> bool:
        """Nothing received waits here (no bytes, messages or fragments) and the stream
        is open: the next bytes read start a message.  (An ORB may then read and handle
        a whole message itself, and tell took_whole.)"""
        return not (self._buf or self._ready or self._in_place is not None or
                    self._fragmented or self._fragmented_11 is not None or self._eof or
                    self._closed is not None)

    def took_whole(self, nbytes: int) -> None:
        """The ORB read and handled a whole message of ``nbytes`` itself while idle
        (a Reply to a request it never booked here): the stream's offsets move past it."""
        self._stream_offset += nbytes

    @property
    def buffered(self) -> int:
        """Bytes received and not yet handed out as events (a transport pauses
        reading above a limit)."""
        return len(self._buf) + self._in_place_filled + self._ready_bytes

    @property
    def awaiting_handout(self) -> int:
        """Bytes of complete messages received and not yet handed out by
        next_event(): what a transport bounds by pausing its reading.  The message
        still arriving is not counted, since only more reading completes it (its
        size is bounded by max_message_size and the ORB's memory budget): counting
        it would pause the reading of any message larger than the pause limit for
        good."""
        waiting = self._ready_bytes
        if self._in_place is not None:
            if not self._receiving_in_place():
                waiting += self._in_place_filled
            waiting += len(self._buf)       # (what follows a message received in place)
        elif len(self._buf) >= HEADER_SIZE:
            # received() leaves at most a partial message here; receive_data() does
            # not frame, so its bytes count whole once their first message is.
            try:
                complete = parse_header(self._buf).total_size <= len(self._buf)
            except PycdrError:
                complete = False
            if complete:
                waiting += len(self._buf)
        return waiting

    @property
    def incomplete_bytes(self) -> int:
        """Bytes of memory held for messages not complete yet: the buffer of the
        partial message (its own when received in place) and pending fragments (an
        ORB budgets these across its connections).  Complete messages waiting to
        be handed out are not counted (``buffered`` bounds them)."""
        held = len(self._buf)
        if self._in_place is not None:
            held += len(self._in_place)
        for entry in self._fragmented.values():
            held += entry.size
        if self._fragmented_11 is not None:
            held += self._fragmented_11.size
        return held

    @property
    def stream_offset(self) -> int:
        """Stream offset of the next message to hand out: it moves whenever a
        message (or fragment) is complete, so an ORB can tell a partial message
        that makes progress from one that stalls."""
        return self._stream_offset

    def refuse_partial_message(self, reason: str) -> ProtocolViolation:
        """Give up on what is buffered (an ORB over its memory budget): drop it,
        close, and return the violation whose ``reply`` is a MessageError in the
        version of the incomplete message when it is one this side speaks."""
        version = None
        try:
            partial = self._in_place_header or (parse_header(self._buf)
                                                if len(self._buf) >= HEADER_SIZE else None)
        except PycdrError:
            partial = None
        if partial is not None:
            version = partial.version
        elif self._fragmented_11 is not None:
            version = self._fragmented_11.header.version
        elif self._fragmented:
            version = next(iter(self._fragmented.values())).header.version
        self.release_buffers()
        self._closed = ConnectionClosed(f"refused: {reason}", False, self._pending())
        return ProtocolViolation(GIOPError(reason, self._stream_offset),
                                 Answer.SEND_MESSAGE_ERROR_AND_CLOSE,
                                 message_error_bytes(self._answer_version(version)), None,
                                 self._stream_offset)

    def release_buffers(self) -> None:
        """Drop everything received and not handed out (the connection is done:
        its transport is closed)."""
        self._buf = bytearray()
        self._in_place = self._in_place_header = None
        self._in_place_filled = 0
        self._ready.clear()
        self._ready_bytes = 0
        self._fragmented.clear()
        self._fragmented_11 = None

    # --- receiving ---------------------------------------------------------------
    def receive_data(self, data: bytes) -> None:
        """Feed bytes from the peer; ``b""`` means the peer closed the stream."""
        if not data:
            self._eof = True
            return
        if self._closed is None:
            if self._in_place is not None:
                data = self._fill_in_place(data)
            self._buf += data

    def receive_message(self, header: GiopHeader, raw):
        """The event of one whole message the caller framed (``raw``: its bytes,
        ``header``: parse_header(raw)), as receive_data(raw) then next_event() give it,
        without copying ``raw`` into the framing buffer or parsing its header again.
        Only while nothing else is buffered; otherwise it is those two calls."""
        if self._closed is not None or self._buf or self._ready or \
                self._in_place is not None:
            self.receive_data(raw)
            return self.next_event()
        problem = self._header_problem(header)
        if problem is not None:
            return self._fatal(problem, Answer.SEND_MESSAGE_ERROR_AND_CLOSE)
        event = self._framed(header, raw)
        return self._at_end_of_data() if event is None else event

    def receive_common(self, data: bytes, pos: int = 0) -> tuple[list, int]:
        """``([(bytes, message), ...], end)``: the whole messages at ``data[pos:]`` (bytes)
        that decode_message's common-case decoder takes (GIOP 1.2/1.3 Requests with a
        KeyAddr target and NO_EXCEPTION Replies, not fragmented, within
        max_message_size), framed and decoded in one call: for each, receive_message
        would give MessageReceived(message, bytes, 1, its offset).  ``end``: where the
        first other message starts, for the caller to frame (receive_message).  Only
        for a connection that keeps no books and judges no direction (a proxy's:
        check_request_ids off, bidirectional, speaking GIOP 1.3) decoding strictly
        without offsets, into body views, while nothing is buffered; otherwise nothing
        is taken."""
        if self.check_request_ids or not self.bidirectional or self.lenient or \
                self.version < (1, 3) or \
                self.field_offsets or not self.body_views or \
                self.take_directly is not None or not self.idle or \
                self._fragmented_11 is not None:
            return [], pos
        taken, end = frame_common_12(data, pos, self.max_message_size)
        self._stream_offset += end - pos
        return taken, end

    def receive_chain(self, data: bytes, pos: int = 0):
        """``(frames, event)`` of a fragmented GIOP 1.2/1.3 Request or Reply whose first
        message and Fragments (its own, in its byte order, each a multiple of 8 bytes
        but the last, together within max_reassembly_size) are all whole at
        ``data[pos:]``, one after the other: what receive_message gives for each
        (nothing until the last, then ``event``), in one call; ``frames`` are views of
        ``data`` when the chain is all of it (copied once, into the whole message), else
        copies.  None, with nothing
        taken, for anything else; when receive_common would take nothing, too."""
        if self.check_request_ids or not self.bidirectional or self.lenient or \
                self.version < (1, 3) or self.field_offsets or not self.body_views or \
                self.take_directly is not None or not self.idle or \
                self._fragmented_11 is not None or self.max_pending_fragmented < 1:
            return None
        got = frame_chain_12(data, pos, self.max_message_size, self.max_reassembly_size)
        if got is None:
            return None
        frames, whole, msg, end = got
        offset = self._stream_offset
        self._stream_offset += end - pos
        self._dropped_fragment_ids.discard(msg.request_id)
        # (as _deliver hands out what decode_message gives: decode_common_12's message)
        problem = self._check_received(msg)
        if problem is not None:
            error, answer = problem
            return frames, self._violation(error, parse_header(whole), offset,
                                           msg.request_id, answer)
        return frames, MessageReceived(msg, whole, len(frames), offset)

    def _framed(self, header: GiopHeader, raw) -> object:
        """A whole message, framed: to ``take_directly`` when it takes it (TAKEN), else
        its event (None while it is a fragment of a message not yet whole)."""
        offset = self._stream_offset
        self._stream_offset += header.total_size
        if header.msg_type <= 1 and self.take_directly is not None and \
                self._fragmented_11 is None and self.take_directly(raw):
            return TAKEN
        return self._handle(header, raw, offset)

    def receive_buffer(self, sizehint: int = -1) -> memoryview:
        """Where the peer's next bytes may be written (``asyncio.BufferedProtocol
        .get_buffer``); call :meth:`received` with how many were written at its start,
        before any other connection sharing the scratch asks for its buffer (asyncio's
        selector transports call get_buffer, recv_into and buffer_updated in one go).

        While a message missing IN_PLACE_MIN or more bytes (IN_PLACE_MAX in all) is
        incomplete and IN_PLACE_START of it have come, this is the rest of the
        message's own buffer, so its bytes are received in place, without being
        copied through the framing buffer.  The header is checked as next_event()
        checks it first, and the buffer is grown as reads fill it, to at most twice
        the bytes received."""
        if self._in_place is None and len(self._buf) >= IN_PLACE_START:
            self._start_in_place()
        if self._receiving_in_place():
            if self._in_place_filled == len(self._in_place):
                self._grow_in_place()
            return memoryview(self._in_place)[self._in_place_filled:]
        # (bytes after a complete in-place message, not yet handed out, go to _buf)
        if self._scratch is None:
            self._scratch = memoryview(bytearray(SCRATCH_SIZE))
        return self._scratch

    def received(self, nbytes: int) -> None:
        """``nbytes`` were written at the start of the last receive_buffer()."""
        if self._receiving_in_place():
            self._in_place_filled += nbytes
        elif self._closed is None:
            data = self._scratch[:nbytes]
            if self._in_place is None:      # (else _buf's bytes follow it: keep them there)
                data = self._frame_ready(data)
            self._buf += data

    def _frame_ready(self, data: memoryview) -> memoryview:
        """Move the complete messages that ``data`` (the newest bytes) completes to
        _ready, each copied once; the bytes to keep in _buf.  The partial message
        _buf holds is completed with just the bytes it lacks, and handed out as it is.  Stops at anything
        next_event() must judge (a bad header, several messages in _buf).  Of a
        message whose header next_event() refuses (and then closes the connection),
        only the header is kept: a claim of gigabytes costs 12 bytes, not a read."""
        buf = self._buf
        if buf:
            if len(buf) < HEADER_SIZE:
                take = HEADER_SIZE - len(buf)
                buf += data[:take]
                data = data[take:]
                if len(buf) < HEADER_SIZE:
                    return data
            header = self._frameable_header(buf, 0)
            if header is None:
                return data[:0]
            missing = header.total_size - len(buf)
            if not 0 < missing <= len(data):
                return data
            buf += data[:missing]
            data = data[missing:]
            # _buf itself, not a copy: _buf starts again empty.
            self._ready.append((header, buf))
            self._ready_bytes += len(buf)
            self._buf = bytearray()
        pos, end = 0, len(data)
        while end - pos >= HEADER_SIZE:
            header = self._frameable_header(data, pos)
            if header is None:
                return data[pos:pos + HEADER_SIZE]
            total = header.total_size
            if total > end - pos:
                break
            self._ready.append((header, bytes(data[pos:pos + total])))
            self._ready_bytes += total
            pos += total
        return data[pos:]

    def _frameable_header(self, data, pos: int) -> GiopHeader | None:
        """The header at ``data[pos:]`` if next_event() would accept it, else None."""
        try:
            header = parse_header(data, pos)
        except PycdrError:
            return None
        return header if self._header_problem(header) is None else None

    def _receiving_in_place(self) -> bool:
        return self._in_place is not None and \
            self._in_place_filled < self._in_place_header.total_size

    @property
    def receiving_in_place(self) -> bool:
        """A large message is being received in place (receive_buffer) and is not
        complete: next_event() has nothing new until it is, so a transport need
        not wake its reader for each of the message's reads."""
        return self._receiving_in_place()

    def _start_in_place(self) -> None:
        try:
            header = parse_header(self._buf)
        except PycdrError:
            return          # next_event() reports it
        total = header.total_size
        missing = total - len(self._buf)
        if missing < IN_PLACE_MIN or total > IN_PLACE_MAX or \
                self._header_problem(header) is not None:
            return
        self._in_place = self._buf                # (the bytes received, no more yet)
        self._in_place_header = header
        self._in_place_filled = len(self._buf)
        self._buf = bytearray()

    def _grow_in_place(self) -> None:
        """Room for the next read: the buffer doubles, up to the message's size.
        (Called from receive_buffer(), when no view of the buffer is left.)"""
        size = min(self._in_place_header.total_size, 2 * self._in_place_filled)
        # bytes(n) comes from calloc: its pages are not touched before the copy.
        self._in_place += bytes(size - len(self._in_place))

    def _fill_in_place(self, data):
        """Put what fits of ``data`` into the in-place message; the rest."""
        take = min(self._in_place_header.total_size - self._in_place_filled, len(data))
        del self._in_place[self._in_place_filled:]
        self._in_place += data[:take]
        self._in_place_filled += take
        return data[take:]

    def _header_problem(self, header: GiopHeader):
        """The error that stops framing at a (parsed) header, or None."""
        if header.version > self.version:
            return UnsupportedVersionError(
                f"GIOP {header.version[0]}.{header.version[1]} is above this connection's "
                f"{self.version[0]}.{self.version[1]}", self._stream_offset + 4)
        if header.size > self.max_message_size:
            return MessageTooLargeError(f"message of {header.size} bytes exceeds the limit of "
                                        f"{self.max_message_size}", self._stream_offset + 8)
        return None

    def next_event(self):
        """The next event, or NEED_DATA."""
        while True:
            if self._closed is not None:
                return self._closed
            if self._ready:
                header, raw = self._ready.popleft()
                self._ready_bytes -= len(raw)
            elif self._in_place is not None:
                if self._receiving_in_place():
                    return self._at_end_of_data()
                # The buffer itself, not a copy: nothing else holds it now.
                raw = self._in_place
                header = self._in_place_header        # (checked by _start_in_place)
                self._in_place = self._in_place_header = None
                self._in_place_filled = 0
            else:
                if len(self._buf) < HEADER_SIZE:
                    return self._at_end_of_data()
                try:
                    header = parse_header(self._buf)
                except PycdrError as e:
                    # No framing without a header: answer and close (the spec's
                    # answer for an unsupported version too).
                    return self._fatal(e, Answer.SEND_MESSAGE_ERROR_AND_CLOSE)
                problem = self._header_problem(header)
                if problem is not None:
                    return self._fatal(problem, Answer.SEND_MESSAGE_ERROR_AND_CLOSE)
                if len(self._buf) < header.total_size:
                    return self._at_end_of_data()
                size = header.total_size
                if size == len(self._buf):
                    # the usual case, one message buffered: _buf itself, not a copy
                    raw, self._buf = self._buf, bytearray()
                else:
                    raw = bytes(memoryview(self._buf)[:size])   # one copy, not two
                    del self._buf[:size]
            event = self._framed(header, raw)
            if event is not None:
                return event

    def _at_end_of_data(self):
        if not self._eof:
            return NEED_DATA
        if self._buf or self._in_place is not None:
            n = self.buffered
            self._buf.clear()
            self._in_place = self._in_place_header = None
            self._in_place_filled = 0
            return self._fatal(GIOPError(f"stream ends inside a message ({n} bytes)",
                                         self._stream_offset), Answer.CLOSE)
        self._closed = ConnectionClosed("end of stream", True, self._pending())
        return self._closed

    def _pending(self) -> tuple:
        return tuple(sorted(self.outstanding | self.outstanding_locates))

    def _fatal(self, error: PycdrError, answer: Answer) -> ProtocolViolation:
        self._closed = ConnectionClosed(f"protocol violation: {error}", False, self._pending())
        self.release_buffers()          # (nothing more is read)
        reply = message_error_bytes(self._answer_version()) \
            if answer is Answer.SEND_MESSAGE_ERROR_AND_CLOSE else b""
        return ProtocolViolation(error, answer, reply, None, self._stream_offset)

    def _answer_version(self, version=None) -> tuple[int, int]:
        # Answer in the peer's version when we speak it, else our highest.
        if version is not None and version <= self.version:
            return version
        return self.version

    def _violation(self, error: PycdrError, header: GiopHeader, offset: int,
                   request_id=None, answer=Answer.SEND_MESSAGE_ERROR) -> ProtocolViolation:
        reply = message_error_bytes(self._answer_version(header.version)) \
            if answer is Answer.SEND_MESSAGE_ERROR else b""
        return ProtocolViolation(error, answer, reply, request_id, offset)

    def _handle(self, header: GiopHeader, raw: bytes, offset: int):
        if header.msg_type == MsgType.Fragment:
            return self._handle_fragment(header, raw, offset)
        if self._fragmented_11 is not None and header.msg_type in (MsgType.Request, MsgType.Reply):
            pending = self._fragmented_11
            self._fragmented_11 = None
            return self._violation(GIOPError(
                f"a {MsgType(header.msg_type).name} arrived before the last fragment of "
                f"the GIOP 1.1 message at offset {pending.offset}", offset), header, offset)
        if header.more_fragments and not header.is_ziop:
            if not may_fragment(header.version, header.msg_type):
                return self._violation(GIOPError(
                    f"more-fragments bit on a GIOP {header.version[0]}.{header.version[1]} "
                    f"{_type_name(header.msg_type)}, which may not be fragmented", offset + 6),
                    header, offset)
            return self._start_reassembly(header, raw, offset)
        return self._deliver(raw, offset, 1, [], header=header)

    def _start_reassembly(self, header: GiopHeader, raw: bytes, offset: int):
        entry = _Reassembly(header, raw, offset)
        if header.version == (1, 1):
            self._fragmented_11 = entry
            return None
        if header.size < 4:
            return self._violation(GIOPError("fragmented message too short for its "
                                             "request_id", offset + 8), header, offset)
        request_id = _ULONG[header.little].unpack_from(raw, HEADER_SIZE)[0]
        if request_id in self._fragmented:
            del self._fragmented[request_id]
            return self._violation(GIOPError(
                f"request {request_id} starts again while its fragments are pending",
                offset), header, offset, request_id)
        if len(self._fragmented) >= self.max_pending_fragmented:
            self._dropped_fragment_ids.add(request_id)
            return self._violation(GIOPError(
                f"more than {self.max_pending_fragmented} fragmented messages pending",
                offset), header, offset, request_id)
        self._dropped_fragment_ids.discard(request_id)
        self._fragmented[request_id] = entry
        if len(raw) % 8:
            return self._fragment_size_problem(entry, raw, header, offset, request_id)
        return None

    def _fragment_size_problem(self, entry, raw, header, offset, request_id):
        """GIOP 1.2+: every fragment but the last is a multiple of 8 bytes long,
        so the next one continues the body's alignment (CORBA 3.x Part 2, 9.4.9).
        Lenient: a warning; strict: MessageError and the message is dropped."""
        text = f"GIOP 1.2 fragment of {len(raw)} bytes is not a multiple of 8"
        if self.lenient:
            entry.warnings.append(DecodeWarning("fragment-not-multiple-of-8", text, offset))
            return None
        self._drop(entry, request_id)
        self._dropped_fragment_ids.add(request_id)
        return self._violation(GIOPError(text, offset + 8), header, offset, request_id)

    def _handle_fragment(self, header: GiopHeader, raw: bytes, offset: int):
        if header.version == (1, 0):
            return self._violation(GIOPError("GIOP 1.0 has no Fragment message", offset + 7),
                                   header, offset)
        if header.version == (1, 1):
            entry = self._fragmented_11
            data = memoryview(raw)[HEADER_SIZE:]
            request_id = None
            if entry is None:
                return self._violation(GIOPError(
                    "GIOP 1.1 Fragment without a fragmented message before it", offset),
                    header, offset)
        else:
            if header.size < 4:
                return self._violation(GIOPError("GIOP 1.2 Fragment without its "
                                                 "request_id", offset + 8), header, offset)
            request_id = _ULONG[header.little].unpack_from(raw, HEADER_SIZE)[0]
            data = memoryview(raw)[HEADER_SIZE + 4:]
            entry = self._fragmented.get(request_id)
            if entry is None:
                if request_id in self._dropped_fragment_ids:
                    # Cancelled or refused earlier: the spec says drop quietly.
                    if not header.more_fragments:
                        self._dropped_fragment_ids.discard(request_id)
                    return None
                return self._violation(GIOPError(
                    f"Fragment for request {request_id}, which has no fragmented "
                    "message pending", offset), header, offset, request_id)
            if len(raw) % 8 and header.more_fragments:
                problem = self._fragment_size_problem(entry, raw, header, offset, request_id)
                if problem is not None:
                    return problem
        first = entry.header
        if header.version != first.version:
            self._drop(entry, request_id)
            return self._violation(GIOPError(
                f"Fragment version {header.version[0]}.{header.version[1]} differs from "
                f"its message's {first.version[0]}.{first.version[1]}", offset + 4),
                header, offset, request_id)
        if header.little != first.little:
            entry.warnings.append(DecodeWarning(
                "fragment-byte-order", "a fragment's byte order differs from its message's; "
                "its data is read in the message's byte order", offset + 6))
        entry.size += len(data)
        entry.count += 1
        if entry.size > self.max_reassembly_size:
            self._drop(entry, request_id)
            if request_id is not None and header.more_fragments:
                self._dropped_fragment_ids.add(request_id)
            return self._violation(GIOPError(
                f"fragmented message exceeds {self.max_reassembly_size} bytes", offset),
                header, offset, request_id)
        entry.parts.append(data)
        if header.more_fragments:
            return None
        self._drop(entry, request_id)
        first_flags = first.flags & ~FLAG_MORE_FRAGMENTS
        # (header and parts copied once, together)
        whole = b"".join([encode_header(first.version, first.little, first.msg_type,
                                        entry.size, extra_flags=first_flags & ~1,
                                        magic=first.magic), *entry.parts])
        segments = None
        if first.version == (1, 1):
            # 1.1 fragment data is aligned relative to its own fragment: each part
            # keeps its origin (its data starts 12 bytes after it).
            segments, pos = [(0, 0)], HEADER_SIZE + len(entry.parts[0])
            for part in entry.parts[1:]:
                segments.append((pos, pos - HEADER_SIZE))
                pos += len(part)
        return self._deliver(whole, entry.offset, entry.count, entry.warnings, segments)

    def _drop(self, entry: _Reassembly, request_id) -> None:
        if entry is self._fragmented_11:
            self._fragmented_11 = None
        elif request_id is not None:
            self._fragmented.pop(request_id, None)

    def _deliver(self, raw: bytes, offset: int, fragments: int, extra_warnings: list,
                 segments=None, header=None):
        # (the header is parsed again only for a violation: decode_message has it)
        try:
            msg, warnings = decode_message(raw, lenient=self.lenient, segments=segments,
                                           header=header, field_offsets=self.field_offsets,
                                           body_view=self.body_views,
                                           max_message_size=self.max_message_size)
        except MessageTooLargeError as e:
            e.offset += offset
            return self._too_large(e, parse_header(raw), offset)
        except DecodeError as e:
            if e.offset is not None:
                e.offset += offset if fragments == 1 else 0
            header = parse_header(raw)
            return self._violation(e, header, offset, _request_id_of(raw, header))
        except PycdrError as e:
            header = parse_header(raw)
            return self._violation(e, header, offset, _request_id_of(raw, header))
        warnings.extend(extra_warnings)
        problem = self._check_received(msg)
        if problem is not None:
            error, answer = problem
            return self._violation(error, parse_header(raw), offset,
                                   getattr(msg, "request_id", None), answer)
        return MessageReceived(msg, raw, fragments, offset)

    def _too_large(self, error: MessageTooLargeError, header: GiopHeader, offset: int):
        """A ZIOP message that inflates past max_message_size (its framing is intact)."""
        request = _request_of_head(error.head) if error.head is not None else None
        if request is None:
            return self._violation(error, header, offset)
        msg_type, request_id, version, little, response_expected = request
        if self.role is Role.CLIENT and msg_type == MsgType.Reply:
            # The server broke no rule: the caller of that request gets the error.
            self.outstanding.discard(request_id)
            return ProtocolViolation(error, Answer.DISCARD, b"", request_id, offset)
        if self.role is Role.SERVER and msg_type == MsgType.Request:
            if not response_expected:
                return ProtocolViolation(error, Answer.DISCARD, b"", request_id, offset)
            # IMP_LIMIT: "an implementation limit was exceeded in the ORB run time
            # ... the size of a parameter may have exceeded the allowed maximum"
            # (CORBA 3.x Part 1, system exceptions).  No standard minor code names a
            # size limit: 0 in the OMG's set, as for this ORB's other unspecific answers.
            reply = Reply(version=self._answer_version(version), little=little,
                          request_id=request_id, reply_status=ReplyStatus.SYSTEM_EXCEPTION,
                          system_exception=IMP_LIMIT(OMG_VMCID | 0,
                                                     CompletionStatus.COMPLETED_NO))
            return ProtocolViolation(error, Answer.SEND_SYSTEM_EXCEPTION,
                                     encode_message(reply), request_id, offset)
        return self._violation(error, header, offset, request_id)

    def _check_received(self, msg: Message):
        """Role and request-id rules; None if the message is fine."""
        t = msg.msg_type
        allowed = _SERVER_SENDS if self.role is Role.CLIENT else _CLIENT_SENDS
        if t not in allowed and not self.bidirectional and t != MsgType.CloseConnection:
            return (GIOPError(f"a {self.role.value} does not receive {t.name} messages "
                              "(bidirectional GIOP is off)"), Answer.SEND_MESSAGE_ERROR)
        if t == MsgType.CloseConnection:
            self._closed = ConnectionClosed("peer sent CloseConnection", True, self._pending())
            return None
        rid = getattr(msg, "request_id", None)
        if not self.check_request_ids:
            return None
        if self.role is Role.CLIENT:
            if t == MsgType.Reply:
                if rid not in self.outstanding:
                    return (GIOPError(f"Reply for request {rid}, which is not outstanding"),
                            Answer.DISCARD)
                self.outstanding.discard(rid)
            elif t == MsgType.LocateReply:
                if rid not in self.outstanding_locates:
                    return (GIOPError(f"LocateReply for request {rid}, which is not "
                                      "outstanding"), Answer.DISCARD)
                self.outstanding_locates.discard(rid)
        else:
            if t == MsgType.Request and msg.response_expected:
                if rid in self.outstanding:
                    return (GIOPError(f"request id {rid} reused while that request is "
                                      "outstanding"), Answer.SEND_MESSAGE_ERROR)
                self.outstanding.add(rid)
            elif t == MsgType.LocateRequest:
                self.outstanding_locates.add(rid)
            elif t == MsgType.CancelRequest:
                self.outstanding.discard(rid)
                pending = self._fragmented.pop(rid, None)
                if pending is not None:
                    self._dropped_fragment_ids.add(rid)
                elif self._fragmented_11 is not None and \
                        _request_id_of(bytes(self._fragmented_11.parts[0]),
                                       self._fragmented_11.header, body_only=True) == rid:
                    self._fragmented_11 = None
        return None

    # --- sending -----------------------------------------------------------------
    def next_request_id(self) -> int:
        """A request id not outstanding on this connection."""
        while True:
            rid = next(self._ids) & 0xFFFFFFFF
            if rid not in self.outstanding and rid not in self.outstanding_locates:
                return rid

    def send(self, msg: Message, *, write_body=None, fragment_size: int | None = None) -> bytes:
        """The bytes to send for ``msg`` (fragments concatenated when
        ``fragment_size`` is given), after checking it against the books."""
        self._check_sendable(msg)
        data = encode_message(msg, write_body=write_body)
        self._book_sent(msg, getattr(msg, "request_id", None))
        if fragment_size is not None and len(data) > fragment_size:
            return b"".join(encode_fragments(msg, data, fragment_size, write_body=write_body))
        return data

    def template(self, msg: Request | Reply) -> MessageTemplate:
        """A template of ``msg`` (its request id left open) for send_templated,
        checked as send() checks a message."""
        self._check_sendable(msg)
        return MessageTemplate(msg)

    def send_templated(self, template: MessageTemplate, request_id: int, write_body, *,
                       fragment_size: int | None = None, tail=None):
        """What send(template.message_with(request_id), write_body=write_body, ...)
        returns (as a bytearray when it is one message), without making the message:
        the per-call path of an ORB.

        ``tail`` (not with ``fragment_size``): bytes that end the message after what
        ``write_body`` writes, not copied into it: the message is then the list
        ``[bytearray, tail]``, to be sent in that order (``socket.sendmsg``,
        ``transport.writelines``), so a large octet sequence goes from the caller's
        object to the socket with no copy of its own."""
        if tail is not None:
            if fragment_size is not None:
                raise ValueError("a message with a tail is not fragmented")
            data = template.encode(request_id, write_body, tail)
            self.book_templated(template, request_id)
            return [data, tail]
        data = template.encode(request_id, write_body)
        self.book_templated(template, request_id)
        if fragment_size is not None and len(data) > fragment_size:
            return b"".join(encode_fragments(template.message_with(request_id), data,
                                             fragment_size, write_body=write_body))
        return data

    def book_templated(self, template: MessageTemplate, request_id: int) -> None:
        """send_templated's checks and books for a message of ``template`` with
        ``request_id`` encoded elsewhere (an ORB's encoder in C), to be sent whole."""
        if self._closed is not None:
            raise LocalProtocolError(f"connection is closed ({self._closed.reason})")
        self._book_sent(template.message, request_id)

    def _check_sendable(self, msg: Message) -> None:
        if self._closed is not None and not isinstance(msg, (MessageError, CloseConnection)):
            raise LocalProtocolError(f"connection is closed ({self._closed.reason})")
        if msg.version > self.version:
            raise LocalProtocolError(f"GIOP {msg.version[0]}.{msg.version[1]} is above this "
                                     f"connection's {self.version[0]}.{self.version[1]}")
        t = msg.msg_type
        allowed = _CLIENT_SENDS if self.role is Role.CLIENT else _SERVER_SENDS
        if t not in allowed and not self.bidirectional:
            raise LocalProtocolError(f"a {self.role.value} does not send {t.name} messages")

    def _book_sent(self, msg: Message, rid) -> None:
        """Enter an encoded message (request id ``rid``) in the books."""
        t = msg.msg_type
        if t == MsgType.Request and msg.response_expected:
            if rid in self.outstanding:
                raise LocalProtocolError(f"request id {rid} is already outstanding")
            self.outstanding.add(rid)
        elif t == MsgType.LocateRequest:
            if rid in self.outstanding_locates:
                raise LocalProtocolError(f"locate request id {rid} is already outstanding")
            self.outstanding_locates.add(rid)
        elif t == MsgType.CancelRequest:
            self.outstanding.discard(rid)
        elif t == MsgType.Reply:
            if rid not in self.outstanding:
                raise LocalProtocolError(f"no request {rid} awaits a reply")
            self.outstanding.discard(rid)
        elif t == MsgType.LocateReply:
            if rid not in self.outstanding_locates:
                raise LocalProtocolError(f"no locate request {rid} awaits a reply")
            self.outstanding_locates.discard(rid)
        elif t == MsgType.CloseConnection:
            self._closed = ConnectionClosed("we sent CloseConnection", True, self._pending())


def _type_name(msg_type: int) -> str:
    return MsgType(msg_type).name if msg_type in MsgType._value2member_map_ else str(msg_type)


def _request_of_head(head: bytes):
    """``(msg_type, request_id, version, little, response_expected)`` of the
    Request or Reply whose first bytes ``head`` holds, or None if they do not tell."""
    try:
        header = parse_header(head)
        if header.msg_type not in (MsgType.Request, MsgType.Reply):
            return None
        r = CDRReader(head, start=HEADER_SIZE, little=header.little, version=header.version)
        if header.version < (1, 2):
            sc.read_service_contexts(r)
        request_id = r.read_ulong()
        # 1.0/1.1: the boolean response_expected; 1.2: response_flags, 0 for no reply.
        expected = r.read_octet() != 0 if header.msg_type == MsgType.Request else False
    except PycdrError:
        return None
    return header.msg_type, request_id, header.version, header.little, expected


def _request_id_of(raw: bytes, header: GiopHeader, body_only: bool = False) -> int | None:
    """The request id of a (possibly partial or malformed) message, if it can
    be read: 1.2 puts it first; 1.0/1.1 Request/Reply after the service contexts."""
    if header.is_ziop:
        return None         # it is in the compressed data
    start = 0 if body_only else HEADER_SIZE
    origin = -HEADER_SIZE if body_only else 0
    r = CDRReader(raw, start=start, origin=origin, little=header.little, version=header.version)
    try:
        if header.version >= (1, 2) or header.msg_type in (
                MsgType.CancelRequest, MsgType.LocateRequest, MsgType.LocateReply,
                MsgType.Fragment):
            return r.read_ulong()
        if header.msg_type in (MsgType.Request, MsgType.Reply):
            sc.read_service_contexts(r)
            return r.read_ulong()
    except PycdrError:
        return None
    return None

