"""The proxy's protocol core, sans I/O: bytes from either side in, what to send out.

    core = ProxyCore(rewriter=..., rules=..., emit=rows.append)
    conn = core.connection(stream, client=("10.0.0.1", 40000), server=("10.0.0.2", 2809))
    for out in conn.data(CLIENT, chunk, ts_ns):      # Send(to, pieces, ...) / Close(...)
        ...

Each side's bytes are cut into GIOP messages by their headers; each message goes
through a passive :class:`~pycdr.giop.connection.GiopConnection` (every version,
both byte orders, bidirectional) that checks it, joins fragments and decodes it.
A message nothing changes is passed on as it came, its fragments as they were
cut; the fragments of one message are held until its last one (a rule or a
rewrite needs the whole).  A reply whose object references point at a routed
server (results and out parameters by the operation's IDL, ``any`` values by
their TypeCodes, LOCATION_FORWARD and OBJECT_FORWARD) goes on with them moved
(:class:`~pycdr.addressing.rewrite.ReferenceRewriter`; their new bytes spliced in,
or the message encoded again: :mod:`pycdr.proxy.references`), message size and
fragments made anew.  Each call is a row of the call table
(:class:`~pycdr.calls.tracker.CallTracker`), with the rules that hit it in
``faults``.

Bytes the proxy cannot frame or refuses (not GIOP, a version or a fragment rule
broken, a message that does not decode) are not answered by the proxy: they go on
to the other side as they came, and the connection is relayed byte for byte from
then on, undecoded, so that the peer's own answer (a MessageError, a close, a
wait, an acceptance) is what the sender sees.  The proxy stays transparent where
its own checks are stricter than the peers (as GiopConnection is).

Memory: a message's size, the bytes one connection holds (an incomplete message
and the fragments of messages not yet whole) and the bytes all connections hold
are bounded (:class:`ProxyLimits`); past a bound what is held goes on and the
connection is relayed byte for byte from then on, holding nothing.  What waits to
be written is the I/O layer's to bound (it stops reading a side whose output waits).
"""

from __future__ import annotations

import dataclasses
import random
import re
import struct
from dataclasses import dataclass, field
from types import SimpleNamespace

from ..addressing.rewrite import ReferenceRewriter, address_text
from ..calls.bodies import CallBodies
from ..calls.tracker import CallTracker, message_entry
from ..codec.marshal import read_value, write_value
from ..codec.references import may_hold_reference
from ..errors import PycdrError
from ..giop.connection import GiopConnection, Role
from ..giop.events import NEED_DATA, Answer, MessageReceived, ProtocolViolation
from ..giop.header import HEADER_SIZE, MAX_MESSAGE_SIZE, MsgType, encode_header, parse_header
from ..giop.layout import message_fields
from ..giop.messages import (KeyAddr, LocateReply, LocateStatus, Reply, ReplyStatus,
                             Request, decode_message, encode_fragments, encode_message)
from ..giop.sysexc import OMG_VMCID, TRANSIENT, CompletionStatus
from .references import moved_body, moved_forward
from .rules import Rules, bind_exceptions

CLIENT, SERVER = 0, 1
SIDE_NAMES = ("client", "server")


@dataclass(frozen=True)
class ProxyLimits:
    """The proxy's memory budget (bytes)."""
    max_message_size: int = MAX_MESSAGE_SIZE        # a message's message_size
    max_connection_bytes: int = 64 << 20            # held by one connection
    max_total_bytes: int = 256 << 20                # held by all connections

    def __post_init__(self):
        if self.max_connection_bytes < self.max_message_size + HEADER_SIZE:
            raise ValueError("max_connection_bytes is below max_message_size: a message "
                             "of the largest size could never pass")
        if self.max_total_bytes < self.max_connection_bytes:
            raise ValueError("max_total_bytes is below max_connection_bytes")


@dataclass(slots=True)
class Send:
    """Write ``pieces`` to side ``to`` after ``delay`` seconds, ``interval`` seconds
    between pieces (0: all at once)."""
    to: int
    pieces: list
    delay: float = 0.0
    interval: float = 0.0


def coalesced(actions: list) -> list:
    """``actions`` with each run of Sends to the same side, at once (no delay, no
    interval), made one Send of all their pieces: the messages of one read go on in one
    write (one writev) instead of one each; the same bytes, in the same order."""
    out: list = []
    for a in actions:
        if out and type(a) is Send and not a.delay and not a.interval:
            last = out[-1]
            if type(last) is Send and last.to == a.to and not last.delay and \
                    not last.interval:
                out[-1] = Send(a.to, last.pieces + a.pieces)
                continue
        out.append(a)
    return out


@dataclass(slots=True)
class Close:
    """Close side ``which`` once what was queued for it before is written; ``abrupt``:
    a reset (RST) instead of a close."""
    which: int
    abrupt: bool = False


@dataclass(slots=True)
class _Call:
    request_id: int
    operation: str | None
    object_key: str | None
    interface: str | None
    version: tuple
    little: bool
    response_expected: bool
    faults: list = field(default_factory=list)
    arguments: dict | None = None       # decoded for a hook


class ProxyCore:
    """What every connection of a proxy shares: the reference rewriter, the rules, the
    call tracker (rows to ``emit``), the IDL (``bodies``) and the memory budget."""

    def __init__(self, *, rewriter: ReferenceRewriter | None = None, rules: Rules | None = None,
                 emit=None, bodies: CallBodies | None = None, limits: ProxyLimits | None = None,
                 open_route=None, hooks=None, seed: int | None = None, explain=None):
        self.rewriter = rewriter or ReferenceRewriter({})
        # --callbacks: fn(host, port) -> the proxy's (host, port) that relays to that
        # server from now on (or None: no more routes), for references in requests
        self.open_route = open_route
        self.rules = rules or Rules([])
        self.hooks = hooks                  # pycdr.proxy.hooks.Hooks, or None
        self.limits = limits or ProxyLimits()
        self.emit = emit
        # decodes bodies for the rows only with --idl; references are rewritten with the
        # operations every object has even without it
        # (``explain``: the tracker's, --explain: each request a system exception answered)
        # (no emit: no row is wanted, and the tracker makes none it need not; its
        # counts are kept all the same)
        self.tracker = CallTracker(None if emit is None else self._row, bodies=bodies,
                                   explain=explain)
        self.operations = bodies or CallBodies()
        bind_exceptions(self.rules, self.operations.exceptions)
        self.held_total = 0
        self.random = random.Random(seed)
        self._faults: dict = {}             # (stream, request_id) -> faults of its row
        self._streams = 0
        self._result_types: dict = {}        # Operation -> result_types(op)
        self._argument_types: dict = {}      # Operation -> argument_types(op)
        self.moves_result: dict = {}        # (interface, operation) -> bool (_may_move_result)
        # fn(text) told when a connection becomes a byte relay and why, or None
        self.notice = None

    def argument_types(self, op) -> list | None:
        """The TypeCodes of ``op``'s in and inout parameters when they may hold an object
        reference, else None."""
        known = self._argument_types.get(op, False)
        if known is False:
            items = [p.type for p in op.in_params]
            known = self._argument_types[op] = items \
                if any(may_hold_reference(tc) for tc in items) else None
        return known

    def result_types(self, op) -> list | None:
        """The TypeCodes of ``op``'s return value and out parameters when they may hold
        an object reference, else None (known once per operation)."""
        known = self._result_types.get(op, False)
        if known is False:
            items = [] if op.result.kind().name == "tk_void" else [op.result]
            items += [p.type for p in op.out_params]
            known = self._result_types[op] = items \
                if any(may_hold_reference(tc) for tc in items) else None
        return known

    def connection(self, client: tuple, server: tuple, stream: int | None = None
                   ) -> ProxyConnection:
        if stream is None:
            stream = self._streams
        self._streams = max(self._streams, stream + 1)
        return ProxyConnection(self, stream, client, server)

    def _row(self, row: dict) -> None:
        faults = self._faults.pop((row["stream"], row["request_id"]), None) \
            if self._faults and row["message_type"] == "Request" else None
        row["faults"] = faults
        if self.emit is not None:
            self.emit(row)


class _Direction:
    """What one side sends: its framing, its checker, the fragments it holds."""

    def __init__(self, role: Role, limits: ProxyLimits):
        self.buf = bytearray()
        # Strict, for the decoder's fast path; a message it refuses whole is decoded
        # again leniently (ProxyConnection._frame): what passes is what peers accept.
        self.checker = GiopConnection(role, version=(1, 3), lenient=False, bidirectional=True,
                                      check_request_ids=False, field_offsets=False,
                                      body_views=True,
                                      max_message_size=limits.max_message_size,
                                      max_reassembly_size=limits.max_connection_bytes)
        self.held: dict = {}            # fragment chain key -> [frame, ...]
        self.held_bytes = 0
        self.closed = False             # it sent CloseConnection, or broke framing

    @property
    def holding(self) -> int:
        return len(self.buf) + self.held_bytes


class ProxyConnection:
    """One client connection and the upstream connection it is relayed to."""

    def __init__(self, core: ProxyCore, stream: int, client: tuple, server: tuple):
        self.core = core
        self.stream = stream
        self.client, self.server = client, server
        self.sides = (_Direction(Role.SERVER, core.limits), _Direction(Role.CLIENT, core.limits))
        self.track = core.tracker.connection(stream, client[0], client[1], server[0],
                                             server[1], client=CLIENT)
        self.calls: dict = {}               # request id -> _Call (Requests from the client)
        self.upstream_down: str | None = None
        self.finished = False
        self.relaying = False               # relayed byte for byte, undecoded (_relay)
        # None: a message's books (its call, its row) are kept as data() takes it.  A
        # list (the I/O layer's): the common path's wait there for track_later(), called
        # once what data() returned is written (a call's latency does not wait for its
        # books); whatever else keeps books (another message, the end) keeps them first.
        self.later: list | None = None

    # -- input ------------------------------------------------------------------------
    def data(self, side: int, data, ts: int) -> list:
        """Bytes ``side`` sent: what to send and close because of them."""
        d = self.sides[side]
        if d.closed or self.finished:
            return []
        if self.relaying:
            return [Send(1 - side, [bytes(data)])] if data else []
        # Whole messages are cut from the bytes as they came when nothing waits before
        # them (one copy a message, none for a read that is one message; a message that
        # came in several reads is copied once, into d.buf).  held_total counts what
        # d.buf holds at every step.
        if d.buf:
            d.buf += data
            self.core.held_total += len(data)
            source = d.buf
        else:
            source = data if isinstance(data, bytes) else bytes(data)
        pos, size = 0, len(source)
        limit = self.core.limits.max_message_size
        out: list = []
        # (a fragmented message whose last fragment completes what d.buf holds: its
        # bytes, to be taken whole as below)
        fast = source if source is data else _buffered_chain(source)
        if fast is not None:
            # Runs of common messages framed and decoded in one call (what
            # receive_message gives for each), and a fragmented message whose fragments
            # are all here (what the last one gives); the general loop below frames
            # from the first other message.
            checker = d.checker
            while True:
                taken, _ = checker.receive_common(fast, pos)
                for raw, msg in taken:
                    pos += len(raw)
                    self._common(side, msg, raw, ts, out)
                    if d.closed or self.finished or self.relaying:
                        break
                else:
                    chain = checker.receive_chain(fast, pos) \
                        if len(fast) - pos >= HEADER_SIZE else None
                    if chain is not None:
                        frames, event = chain
                        pos += sum(map(len, frames))
                        if type(event) is MessageReceived:
                            self._common(side, event.message, event.raw, ts, out, frames,
                                         event)
                        else:               # (as _frame relays a violation)
                            self._relay(side, str(event.error), frames, out)
                        if not (d.closed or self.finished or self.relaying):
                            continue
                break
            if pos == size and source is data and \
                    not (d.closed or self.finished or self.relaying):
                # all taken: nothing to hold, and the budget checks below as they say
                limits = self.core.limits
                if d.held_bytes <= limits.max_connection_bytes and \
                        self.core.held_total <= limits.max_total_bytes:
                    return out
        while size - pos >= HEADER_SIZE and not d.closed and not self.finished \
                and not self.relaying:
            try:
                header = parse_header(source, pos)
            except PycdrError as e:
                self._relay(side, str(e), [], out)
                break
            if header.size > limit:
                self._relay(side, f"message of {header.size} bytes exceeds the limit of "
                            f"{limit}", [], out)
                break
            total = header.total_size
            if size - pos < total:
                break
            if source is data:
                frame = source[pos:pos + total]
            elif pos == 0 and total == size:
                # the buffer holds just this message (one that came in several reads):
                # it goes on itself, not a copy, and a new buffer takes its place
                frame = source
                d.buf = bytearray()
                self.core.held_total -= total
            elif pos == 0 and size - total <= total:
                # the buffer holds this message and less than as much after it: the
                # message goes on as the buffer itself, cut to its size, and the smaller
                # part, what follows, is copied into a new buffer
                frame = source
                source = d.buf = frame[total:]
                del frame[total:]
                self.core.held_total -= total
                size = len(source)
                self._frame(side, header, frame, ts, out)
                continue
            else:
                frame = bytes(memoryview(source)[pos:pos + total])
            pos += total
            self._frame(side, header, frame, ts, out)
        if self.relaying:
            # what this side sent after the bytes that started the relay goes on too
            rest = bytes(memoryview(source)[pos:])
            if source is d.buf:
                self.core.held_total -= len(d.buf)
                d.buf.clear()
            if rest:
                out.append(Send(1 - side, [rest]))
            return out
        if d.closed or self.finished:
            self._release(d)
            return out
        if source is d.buf:
            del d.buf[:pos]
            self.core.held_total -= pos
        elif pos < size:
            d.buf += memoryview(source)[pos:]
            self.core.held_total += size - pos
        limits = self.core.limits
        if d.holding > limits.max_connection_bytes:
            self._relay(side, f"more than {limits.max_connection_bytes} bytes held for "
                        "this connection", [], out)
        elif self.core.held_total > limits.max_total_bytes:
            self._relay(side, f"more than {limits.max_total_bytes} bytes held for all "
                        "connections", [], out)
        if self.relaying and d.buf:
            out.append(Send(1 - side, [bytes(d.buf)]))
            self.core.held_total -= len(d.buf)
            d.buf.clear()
        if d.closed or self.finished:
            self._release(d)
        return out

    def track_later(self) -> None:
        """Keep the books of the messages data() left in ``later``, in their order."""
        waiting, self.later = self.later, []
        for track, args in waiting:
            track(*args)

    def eof(self, side: int, ts: int) -> list:
        """``side`` closed its connection: the other one is closed too."""
        if self.finished:
            return []
        self._finish()
        return [Close(1 - side)]

    def upstream_failed(self, reason: str) -> None:
        """The target could not be reached: requests are answered TRANSIENT, as the
        client's ORB would raise it when it could not connect."""
        self.upstream_down = reason

    def closed(self) -> None:
        """Both connections are gone."""
        self._finish()

    # -- framing ----------------------------------------------------------------------
    def _frame(self, side, header, frame, ts, out) -> None:
        d = self.sides[side]
        checker = d.checker
        event = checker.receive_message(header, frame)
        if type(event) is MessageReceived and event.fragments == 1:
            # the usual case: a message in one piece (no chain to look up)
            self._common(side, event.message, frame, ts, out, event=event)
            return
        key = _chain_key(header, frame)
        if event is NEED_DATA:
            if checker.has_partial_message:
                d.held.setdefault(key, []).append(frame)
                d.held_bytes += len(frame)
                self.core.held_total += len(frame)
            return
        if isinstance(event, ProtocolViolation) and event.answer in (
                Answer.SEND_MESSAGE_ERROR, Answer.DISCARD) and not header.more_fragments \
                and header.msg_type != MsgType.Fragment and key not in d.held:
            try:
                msg, _ = decode_message(frame, lenient=True)
                event = MessageReceived(msg, frame, 1, 0)
            except PycdrError:
                pass
        frames = [frame]
        if isinstance(event, MessageReceived) and event.fragments > 1 or \
                isinstance(event, ProtocolViolation):
            chain = d.held.pop(key, None)
            if chain is not None:
                n = sum(map(len, chain))
                d.held_bytes -= n
                self.core.held_total -= n
                frames = chain + frames
        if isinstance(event, MessageReceived):
            self._common(side, event.message, event.raw, ts, out, frames, event)
        elif isinstance(event, ProtocolViolation):
            self._relay(side, str(event.error), frames, out)
        else:                                   # ConnectionClosed: framing is gone
            self._relay(side, event.reason, frames, out)

    def _release(self, d: _Direction) -> None:
        self.core.held_total -= d.holding
        d.buf.clear()
        d.held.clear()
        d.held_bytes = 0

    def _finish(self) -> None:
        if not self.finished:
            self.finished = True
            for d in self.sides:
                self._release(d)
            if self.later:
                self.track_later()
            self.core.tracker.closed(self.track)

    # -- bad input --------------------------------------------------------------------
    def _relay(self, side: int, reason: str, frames: list, out: list) -> None:
        """``side`` sent what the proxy cannot frame, refuses or will not hold: not the
        proxy's to judge. What either side holds goes on (``frames``, the bytes that
        started it, last of ``side``'s), and the connection is relayed byte for byte
        from now on: the peer answers, or closes, or waits, as it would without the
        proxy. data() sends on what ``side`` sent after ``frames``."""
        self.relaying = True
        for s in (1 - side, side):
            d = self.sides[s]
            held = [f for chain in d.held.values() for f in chain]
            pending = [bytes(d.buf)] if d.buf and s != side else []
            pieces = held + (frames if s == side else []) + pending
            if pieces:
                out.append(Send(1 - s, pieces))
            self.core.held_total -= d.held_bytes + (len(d.buf) if s != side else 0)
            d.held.clear()
            d.held_bytes = 0
            if s != side:
                d.buf.clear()
        if self.core.notice is not None:
            self.core.notice(f"{SIDE_NAMES[side]} {address_text(*self._address(side))}: "
                             f"{reason}; relayed byte for byte from here on")

    def _address(self, side: int) -> tuple:
        return self.client if side == CLIENT else self.server

    # -- messages ---------------------------------------------------------------------
    def _message(self, side, event: MessageReceived, frames, ts, out) -> None:
        msg = event.message
        if self.later:
            self.track_later()          # (the books in the order the messages came)
        t = msg.msg_type
        tracked = True
        if side == CLIENT and t == MsgType.Request:
            self._request(msg, event, frames, ts, out)
            tracked = False
        elif side == SERVER and t == MsgType.Reply and msg.request_id in self.calls:
            self._reply(msg, event, frames, ts, out)
            tracked = False
        elif side == SERVER and t == MsgType.LocateReply and \
                msg.locate_status in (LocateStatus.OBJECT_FORWARD,
                                      LocateStatus.OBJECT_FORWARD_PERM):
            moved = self._moved_forward(msg, event.raw)
            if moved is not None:
                msg = moved[0]                  # (the row holds what the client got)
                frames = self._refragment(*moved, frames)
            out.append(Send(CLIENT, frames))
        elif side == CLIENT and t == MsgType.LocateRequest and self.upstream_down:
            out.append(Send(CLIENT, [encode_message(LocateReply(
                version=msg.version, little=msg.little, request_id=msg.request_id,
                locate_status=LocateStatus.LOC_SYSTEM_EXCEPTION,
                system_exception=TRANSIENT(OMG_VMCID | 0, CompletionStatus.COMPLETED_NO)))
                if msg.version >= (1, 2) else encode_header(msg.version, msg.little,
                                                            MsgType.MessageError, 0)]))
        elif side == CLIENT and t == MsgType.CancelRequest:
            self.calls.pop(msg.request_id, None)
            # fragments of the cancelled request still held never reach the server
            chain = self.sides[CLIENT].held.pop(msg.request_id, None)
            if chain is not None:
                n = sum(map(len, chain))
                self.sides[CLIENT].held_bytes -= n
                self.core.held_total -= n
            out.append(Send(SERVER, frames))
        else:
            out.append(Send(1 - side, frames))
        if tracked:
            self._track(side, msg, event, ts)
        if t == MsgType.CloseConnection:
            # the sender will read no more: the other side's connection ends once the
            # CloseConnection is through (its requests not yet answered may be retried)
            self.sides[side].closed = True
            out.append(Close(1 - side))
            out.append(Close(side))
            self._finish()

    def _common(self, side, msg, raw, ts, out, frames=None, event=None) -> None:
        """What _message does with a whole message (``raw``, its bytes; ``frames``, the
        messages it came in, when not just ``raw``; ``event``, its MessageReceived if
        one was made): a call's request or its NO_EXCEPTION reply that no rule, hook,
        route to open or reference to move concerns goes on and is tracked without an
        event or an entry; anything else through _message."""
        core = self.core
        if not core.rules.rules and core.hooks is None and core.open_route is None and \
                self.upstream_down is None:
            kind = type(msg)
            if kind is Request and side == CLIENT and type(msg.target) is KeyAddr:
                out.append(Send(SERVER, frames or [raw]))
                args = (msg, ts, raw, 1 if event is None else event.fragments)
                if self.later is None:
                    return self._common_request(*args)
                return self.later.append((self._common_request, args))
            if kind is Reply and side == SERVER and msg.reply_status == 0:
                call = self.calls.get(msg.request_id)
                if call is not None and not self._may_move_result(call):
                    del self.calls[msg.request_id]
                    frames = frames or [raw]
                    out.append(Send(CLIENT, frames))
                    args = (self.track, SERVER, msg, ts, raw, len(frames))
                    if self.later is None:
                        return core.tracker.common_reply(*args)
                    return self.later.append((core.tracker.common_reply, args))
        self._message(side, event or MessageReceived(msg, raw, 1, 0), frames or [raw], ts, out)

    def _common_request(self, msg, ts, raw, fragments) -> None:
        """The books of a Request _common passed on: its call (its reply's), its row."""
        key = msg.target.object_key.hex()
        call = _Call(msg.request_id, msg.operation, key, self.core.tracker.interfaces.get(key),
                     msg.version, msg.little, msg.response_flags != 0)
        if call.response_expected:
            self.calls[msg.request_id] = call
        self.core.tracker.common_request(self.track, CLIENT, msg, ts, raw, fragments, key)

    def _may_move_result(self, call) -> bool:
        """Whether the results of ``call`` may hold a reference to move (by its IDL, or
        the operations every object has; known once per interface and operation)."""
        key = (call.interface, call.operation)
        known = self.core.moves_result.get(key)
        if known is None:
            op = self.core.operations.operation(call.interface, call.operation)
            known = op is not None and self.core.result_types(op) is not None
            moves = self.core.moves_result
            if len(moves) >= 4096:          # (names a client made up, all different)
                moves.clear()
            moves[key] = known
        return known

    def _track(self, side, msg, event, ts) -> None:
        # (not msg.to_json(): its service contexts, offsets and body hex cost more than
        # the rest of the relay, and the tracker reads none of them)
        entry = message_entry(msg)
        if event.fragments > 1:
            entry["reassembled"] = {"fragments": event.fragments}
        self.core.tracker.message(self.track, side, entry, ts, msg, event.raw)

    def _request(self, msg, event, frames, ts, out) -> None:
        target = msg.target
        key = getattr(target, "object_key", None)
        key_hex = key.hex() if key is not None else None
        call = _Call(msg.request_id, msg.operation, key_hex,
                     self.core.tracker.interfaces.get(key_hex) if key_hex else None,
                     msg.version, msg.little, msg.response_expected)
        actions = self.core.rules.applying("request", call.operation, call.interface, key_hex)
        if self.core.hooks is not None:
            actions += self.core.hooks.actions("request", self._hook_call(call, msg))
        if actions:
            faults = call.faults
            faults += [_fault(i, "request", a) for i, a in actions]
            if self.core.emit is not None:          # (for its row: _row takes them)
                self.core._faults[(self.stream, msg.request_id)] = faults
        if msg.response_expected:
            self.calls[msg.request_id] = call
        self._track(CLIENT, msg, event, ts)
        if self.core.open_route is not None:
            moved = self._moved_arguments(msg, event.raw, call)
            if moved is not None:
                msg, raw, write_body = moved
                frames = self._refragment(msg, raw, write_body, frames)
                event = dataclasses.replace(event, raw=raw)
        if self.upstream_down is not None:
            self._answer(call, TRANSIENT(OMG_VMCID | 0, CompletionStatus.COMPLETED_NO), out,
                         ts=ts)
            return
        self._shape(CLIENT, call, msg, event.raw, frames, actions, out, ts)

    def _reply(self, msg, event, frames, ts, out) -> None:
        call = self.calls.pop(msg.request_id)
        raw = event.raw
        moved = self._moved_reply(msg, raw, call)
        if moved is not None:
            msg, raw, _ = moved
            frames = self._refragment(*moved, frames)
        actions = self.core.rules.applying("reply", call.operation, call.interface,
                                           call.object_key)
        if self.core.hooks is not None:
            actions += self.core.hooks.actions("reply", self._hook_call(call, msg))
        if actions:
            faults = call.faults
            faults += [_fault(i, "reply", a) for i, a in actions]
            if self.core.emit is not None:
                self.core._faults[(self.stream, msg.request_id)] = faults
        if not any(a.answering and a.type not in ("drop", "stall") for _, a in actions):
            if len(frames) != event.fragments:
                event = dataclasses.replace(event, fragments=len(frames))
            self._track(SERVER, msg, event, ts)
        self._shape(SERVER, call, msg, raw, frames, actions, out, ts)

    def _hook_call(self, call: _Call, msg) -> SimpleNamespace:
        """What a hook sees of a call (pycdr.proxy.hooks): its request's fields and
        arguments; with a Reply, its status, exception id and result."""
        ops = self.core.operations
        op = ops.operation(call.interface, call.operation)
        seen = SimpleNamespace(operation=call.operation, interface=call.interface,
                               object_key=call.object_key, request_id=call.request_id,
                               arguments=call.arguments)
        if msg.msg_type == MsgType.Request:
            if op is not None:
                seen.arguments = call.arguments = ops.arguments(op, msg, None, _ignore)[0]
        else:
            status = _status_name(msg.reply_status)
            seen.reply_status, seen.exception_id = status, msg.exception_id
            seen.result = None if op is None else \
                ops.result(op, msg, status, msg.exception_id, None, _ignore)[0]
        return seen

    # -- rewriting --------------------------------------------------------------------
    def _moved_forward(self, msg, raw):
        """(message, bytes, None) with its forward reference moved, or None."""
        return moved_forward(msg, raw, self.core.rewriter.rewrite_encoded)

    def _moved_reply(self, msg, raw, call):
        status = msg.reply_status
        if status in (ReplyStatus.LOCATION_FORWARD, ReplyStatus.LOCATION_FORWARD_PERM):
            return self._moved_forward(msg, raw) if msg.forward is not None else None
        if status != ReplyStatus.NO_EXCEPTION:
            return None
        op = self.core.operations.operation(call.interface, call.operation)
        if op is None:
            return None
        items = self.core.result_types(op)
        if items is None:
            return None
        return moved_body(msg, raw, items, self.core.rewriter.rewrite_encoded)

    def _moved_arguments(self, msg, raw, call):
        """--callbacks: (Request, bytes, body writer) with the references among its
        arguments moved to the proxy (a server not yet routed gets a route), or None."""
        op = self.core.operations.operation(call.interface, call.operation)
        items = None if op is None else self.core.argument_types(op)
        if items is None:
            return None
        rewriter, open_route = self.core.rewriter, self.core.open_route

        def move(data, little, reference):
            for profile in _iiop_profiles(reference):
                if rewriter.route(profile.host, profile.port) is None and \
                        profile.port != 0 and (profile.host, profile.port) not in \
                        rewriter.routes.values():
                    local = open_route(profile.host, profile.port)
                    if local is not None:
                        rewriter.routes[(profile.host.lower(), profile.port)] = local
            return rewriter.rewrite_encoded(data, little, reference)
        return moved_body(msg, raw, items, move, whole=True)

    def _refragment(self, msg, raw, write_body, frames) -> list:
        """``raw`` (a message changed) cut as the message it replaces was
        (``write_body``: its body's writer, which GIOP 1.1 fragments need)."""
        if len(frames) <= 1:
            return [raw]
        return encode_fragments(msg, raw, len(frames[0]), write_body=write_body)

    # -- rules ------------------------------------------------------------------------
    def _shape(self, side, call, msg, raw, frames, actions, out, ts) -> None:
        """Send ``msg`` on (as ``frames``) through the actions of the rules that hit it."""
        dest = 1 - side
        if not actions:
            out.append(Send(dest, frames))
            return
        pieces = list(frames)
        delay = interval = 0.0
        copies = 1
        for n, (_, action) in enumerate(actions):
            p, t = action.params, action.type
            fault = call.faults[len(call.faults) - len(actions) + n]
            if t == "set":
                try:
                    msg, raw = self._set(call, bytes(raw), p["path"], p["value"])
                    pieces = [raw]
                except _NotApplied as e:
                    fault["applied"] = False
                    fault["why"] = str(e)
            elif t == "corrupt":
                data = _corrupt(bytes(raw), p["path"], p["value"], fault)
                if data is not None:
                    raw, pieces = data, [data]
            elif t == "fragment":
                if msg.version >= (1, 2):
                    # each fragment carries ``size`` body bytes, rounded up to GIOP
                    # 1.2's multiple of 8 (a fragment header is 16 bytes)
                    size = max(24, -(-(p["size"] + 16) // 8) * 8)
                    pieces = encode_fragments(msg, bytes(raw), size)
                else:
                    fault["applied"] = False
                    fault["why"] = "GIOP 1.0 and 1.1 messages are not cut again"
            elif t == "duplicate":
                copies = 2
            elif t == "delay":
                delay += (p["ms"] + self.core.random.uniform(0, p.get("jitter_ms", 0))) / 1e3
            elif t == "trickle":
                data = b"".join(pieces)
                step = p["bytes"]
                pieces = [data[i:i + step] for i in range(0, len(data), step)]
                interval = p["interval_ms"] / 1e3
            else:
                self._answering(side, call, msg, t, p, pieces, delay, out, ts)
                return
        out.append(Send(dest, pieces * copies, delay, interval))

    def _set(self, call: _Call, raw: bytes, path: str, value) -> tuple:
        """(message, bytes) with the argument or result at ``path`` set to ``value``
        (JSON, by the IDL): ``v``, ``return``, ``v.member``, ``v[2]``.  _NotApplied
        says why not."""
        msg, _ = decode_message(raw)
        ops = self.core.operations
        op = ops.operation(call.interface, call.operation)
        if op is None:
            raise _NotApplied(f"no IDL for {call.operation}")
        if msg.msg_type == MsgType.Request:
            items = [(p.name, p.type) for p in op.in_params]
        elif msg.reply_status == ReplyStatus.NO_EXCEPTION:
            items = [] if op.result.kind().name == "tk_void" else [("return", op.result)]
            items += [(p.name, p.type) for p in op.out_params]
        else:
            raise _NotApplied("the reply carries no results")
        try:
            r = msg.body_reader()
            values = [read_value(r, tc) for _, tc in items]
        except (PycdrError, ValueError) as e:
            raise _NotApplied(f"the body does not read by the IDL ({e})") from None
        values = _with_value(items, values, path, value)

        def write_body(w):
            for (_, tc), v in zip(items, values):
                write_value(w, tc, v)
        moved = dataclasses.replace(msg, body=b"")
        try:
            return moved, encode_message(moved, write_body=write_body)
        except (PycdrError, ValueError, TypeError, OverflowError) as e:
            raise _NotApplied(f"{path}: the value does not encode ({e})") from None

    def _answering(self, side, call, msg, t, p, pieces, delay, out, ts) -> None:
        if t == "system_exception":
            self._answer(call, p["exception"], out, delay, ts)
        elif t == "user_exception":
            self.calls.pop(call.request_id, None)
            if call.response_expected:
                reply = Reply(version=call.version, little=call.little,
                              request_id=call.request_id,
                              reply_status=ReplyStatus.USER_EXCEPTION)
                data = encode_message(reply, write_body=lambda w: write_value(
                    w, p["tc"], p["exception"]))
                out.append(Send(CLIENT, [data], delay))
                decoded, _ = decode_message(data)
                self.core.tracker.message(self.track, SERVER, decoded.to_json(), ts, decoded,
                                          data)
        elif t == "forward":
            ior, _ = self.core.rewriter.rewrite(p["ior"])
            status = ReplyStatus.LOCATION_FORWARD_PERM if p.get("permanent") else \
                ReplyStatus.LOCATION_FORWARD
            self._answer(call, None, out, delay, ts, status=status, forward=ior)
        elif t == "message_error":
            self.calls.pop(call.request_id, None)
            out.append(Send(CLIENT, [encode_header(msg.version, msg.little,
                                                   MsgType.MessageError, 0)], delay))
        elif t == "close":
            if side == CLIENT and p["when"] == "after":
                out.append(Send(SERVER, pieces, delay))
            self.calls.pop(call.request_id, None)
            out.append(Send(CLIENT, [encode_header(msg.version, msg.little,
                                                   MsgType.CloseConnection, 0)], delay))
            out += [Close(CLIENT), Close(SERVER)]
            self._finish()
        elif t == "reset":
            out += [Close(CLIENT, abrupt=True), Close(SERVER, abrupt=True)]
            self._finish()
        elif t == "stall" and "ms" in p:
            out.append(Send(1 - side, pieces, delay + p["ms"] / 1e3))
        # drop, and stall without ms: nothing is sent (the call waits for its timeout)

    def _answer(self, call: _Call, exc, out, delay: float = 0.0, ts: int | None = None, *,
                status=ReplyStatus.SYSTEM_EXCEPTION, forward=None) -> None:
        """Answer ``call`` to the client in the server's stead (a oneway: nothing)."""
        self.calls.pop(call.request_id, None)
        if not call.response_expected:
            return
        reply = Reply(version=call.version, little=call.little, request_id=call.request_id,
                      reply_status=status, system_exception=exc, forward=forward)
        data = encode_message(reply)
        out.append(Send(CLIENT, [data], delay))
        if ts is not None:
            decoded, _ = decode_message(data)
            self.core.tracker.message(self.track, SERVER, decoded.to_json(), ts or 0, decoded,
                                      data)


class _NotApplied(Exception):
    """A rule's action that the message has no room for (why)."""


_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")
_PATH = re.compile(r"([^.\[\]]+)((?:\.[^.\[\]]+|\[\d+\])*)")


def _with_value(items, values, path: str, value) -> list:
    """``values`` (of ``items``: (name, TypeCode)) with the one at ``path`` replaced by
    the JSON ``value`` converted by its TypeCode."""
    from ..codec.typecode import TCKind, resolve
    from ..codec.values import field_names
    from ..orb.jsonvalues import from_json
    whole = _PATH.fullmatch(path)
    if whole is None:
        raise _NotApplied(f"bad path {path}: NAME, then .member or [index] steps")
    name, rest = whole.groups()
    names = [n for n, _ in items]
    if name not in names:
        raise _NotApplied(f"no argument or result {name} (there are: "
                          f"{', '.join(names) or 'none'})")
    i = names.index(name)
    steps = [(m.group(1), m.group(2)) for m in _STEP.finditer(rest)]
    tc = items[i][1]
    holder, key, current = values, i, values[i]
    for member, index in steps:
        tc = resolve(tc)
        while tc.kind() == TCKind.tk_alias:
            tc = resolve(tc.content_type())
        if member is not None:
            if tc.kind() not in (TCKind.tk_struct, TCKind.tk_except):
                raise _NotApplied(f"{path}: {member} is not a struct member")
            members = [tc.member_name(j) for j in range(tc.member_count())]
            if member not in members:
                raise _NotApplied(f"{path}: no member {member}")
            j = members.index(member)
            attr = field_names(members)[j]
            holder, key, current, tc = current, attr, getattr(current, attr), tc.member_type(j)
        else:
            if tc.kind() not in (TCKind.tk_sequence, TCKind.tk_array) or \
                    int(index) >= len(current):
                raise _NotApplied(f"{path}: no element {index}")
            if isinstance(current, (bytes, str)):
                raise _NotApplied(f"{path}: set the whole {type(current).__name__} instead")
            holder, key, current, tc = current, int(index), current[int(index)], \
                tc.content_type()
    try:
        new = from_json(tc, value)
    except (ValueError, TypeError, KeyError) as e:
        raise _NotApplied(f"{path}: {e}") from None
    if isinstance(key, str):
        setattr(holder, key, new)
    else:
        holder[key] = new
    return values


def _fault(index, direction: str, action) -> dict:
    """A fault as the call's row lists it: the rule's number in the file (or "hook")."""
    return {"rule": index + 1 if isinstance(index, int) else index, "direction": direction,
            **action.to_json()}


def _ignore(_reference) -> None:
    """(the references a hook's view of a call holds are not learned from)"""


def _status_name(status: int) -> str:
    try:
        return ReplyStatus(status).name
    except ValueError:
        return str(status)


def _iiop_profiles(ior):
    from ..addressing.iiop import IIOPProfile, decode_profile
    for tagged in ior.profiles:
        try:
            profile = decode_profile(tagged, lenient=True)
        except PycdrError:
            continue
        if isinstance(profile, IIOPProfile):
            yield profile


_CHAIN_WALK = 8          # the most messages of a chain _buffered_chain looks for


def _buffered_chain(buf: bytearray) -> bytes | None:
    """A copy of the fragmented message ``buf`` starts with (first message and
    fragments, at most _CHAIN_WALK) when all of it is there, for receive_chain to judge
    whole; None when it is not (or does not look like one: the general framing's)."""
    size = len(buf)
    if size < HEADER_SIZE or not buf[6] & 2 or buf[0:4] != b"GIOP":
        return None
    pos = 0
    for _ in range(_CHAIN_WALK):
        if size - pos < HEADER_SIZE:
            return None
        flags = buf[pos + 6]
        pos += HEADER_SIZE + struct.unpack_from("<I" if flags & 1 else ">I", buf, pos + 8)[0]
        if pos > size:
            return None
        if not flags & 2:
            return bytes(memoryview(buf)[:pos])
    return None


def _chain_key(header, frame) -> int | None:
    """Which fragment chain a message belongs to: its request id (GIOP 1.2+), or the
    one chain GIOP 1.1 has."""
    if header.version >= (1, 2) and len(frame) >= 16:
        return struct.unpack_from("<I" if header.little else ">I", frame, HEADER_SIZE)[0]
    return None


def _corrupt(data: bytes, path: str, value, fault: dict) -> bytes | None:
    """``data`` with the field at ``path`` (pycdr.giop.layout) set to ``value``."""
    for f in message_fields(data):
        if f.path == path:
            break
    else:
        fault["applied"] = False
        fault["why"] = f"this message has no field {path}"
        return None
    if isinstance(value, int):
        little = parse_header(data).little
        new = (value & ((1 << 8 * f.size) - 1)).to_bytes(f.size, "little" if little else "big")
    else:
        new = value
        if len(new) != f.size:
            fault["applied"] = False
            fault["why"] = f"{path} is {f.size} bytes, the value {len(new)}"
            return None
    return data[:f.offset] + new + data[f.offset + f.size:]
