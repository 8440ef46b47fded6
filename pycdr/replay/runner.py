"""The replay's I/O: the capture streamed once, each recorded connection replayed
on a connection of its own to its target, the connections concurrently.

One thread, one loop (a selector over the target connections): no thread
hand-offs, and the GIL never passes between a reader and the senders (measured:
threads per connection made a replay 10 times slower than this loop).
Each recorded TCP connection has a queue of its messages in capture order
(client messages to send, the recorded server's messages to compare with); the
capture is read on only while no queue holds QUEUE_MESSAGES, so memory stays
flat whatever the capture's size.  A connection's client messages are sent in
order; when its queue comes to a recorded reply, it waits for the target's
reply to the same call before it goes on, so the replay keeps the recording's
causality (a client that waited for a reply before its next request waits here
too; one that pipelined pipelines) and keys learned from a reply are known
before the requests that follow it.  The other connections go on meanwhile.

With ``window`` N > 1 (``--window``) a connection does not wait for the replies the
recording waited for: up to N of its calls are outstanding, their requests
written in one go on a non-blocking socket as the target takes them, the replies
matched by request id; it waits only for a reply that may teach a key.

A connection's steady state -- requests of shapes seen before, replies that
repeat the recorded bytes but for the request id -- runs in C when
pycdr._replaylane is built (and PYCDR_PURE=1 is not set) and the caller takes its
calls counted (``tally``): see Replay._lane_enter.  The calls it finishes are
counted, not reported one by one; anything it cannot judge comes back here as
ordinary Calls first.  While such lanes hold plain TCP connections, their sockets
are polled, read and written in C too (pycdr._replaylane.pump, Replay._pump_turn):
a reply's arrival and the next request's send cost no Python.
"""

from __future__ import annotations

import selectors
import socket
import ssl
import time
from dataclasses import dataclass, field

from ..giop.header import MsgType
from ..orb.tls import DEFAULT_TLS, TLSOptions, TransportError, connect
from ..capture.giop import CaptureDecoder
from ..capture.read import CaptureReader
from ..capture.write import StreamPcapWriter
from ..capture.tcp import TcpReassembler
from .capture_feed import _only_flows, _SelectedSink, _Sink, capture_error_line
from .compare import Comparison, KeyMap
from .lanes import PUMP_MAX, SHORT_RUNS, ReplayLanes, _Lane, _pump
from .pacing import SPIN, SPIN_CHECK, RateLimit, _cores_free
from .recorded import _END, QUEUE_MESSAGES, _Recorded
from .references import ArgumentReferences
from .session import (CLIENT_MESSAGES, DIFFERENT, FAILED, SAME,
                      OperationFilter, RawReply, Reencoding, ReplaySession, reply_message)
from .targets import Target

# Segments read before the connections are served again: more calls a write and a turn
# of the loop (256 against 64: 18 % more calls/s pipelined, four connections; as recorded
# the same).
READ_BATCH = 256
RECV_SIZE = 1 << 16
_REQUEST = MsgType.Request.value
_SERVER_FIRST = frozenset((MsgType.Reply.value, MsgType.LocateReply.value))


@dataclass
class ReplayOptions:
    default_target: Target | None = None
    targets: dict = field(default_factory=dict)      # recorded server text -> Target
    keys: dict = field(default_factory=dict)
    comparison: Comparison | None = None
    selected: OperationFilter = field(default_factory=OperationFilter)
    rate: float | None = None                        # requests per second, all connections
    timeout: float = 10.0                            # waiting for one reply
    tls: TLSOptions = DEFAULT_TLS
    ports: tuple | None = None
    pcap: str | None = None
    dry_run: bool = False
    reencoding: Reencoding | None = None             # --giop / --byte-order
    window: int = 1                                  # requests outstanding per connection


class SkippedServers:
    def __init__(self):
        self.connections: dict = {}      # server text -> connections
        self.requests: dict = {}         # server text -> client messages not sent


class Replay(ReplayLanes):
    """Replays a capture (see the module doc).  ``report(call)`` hears of every
    call as it is decided -- but with ``tally``, the same and skipped calls a
    connection's lane finishes in C: ``tally(operation, same, skipped,
    recorded latencies, replayed latencies)`` counts those
    (ReplaySummary.add_counted)."""

    def __init__(self, options: ReplayOptions, report, listing=None, selection=None,
                 tally=None):
        self.options = options
        # --jobs (pycdr.replay.jobs): this process replays only the connections of
        # ``selection`` (its ``flows``: their 4-tuples both ways, the others' segments
        # dropped before reassembly; ``index_of(flow)``: the planned index, or None).
        self.selection = selection
        self.comparison = options.comparison or Comparison()
        defaults = {}
        for server, target in options.targets.items():
            if target.key is not None:
                defaults[server] = target.key
        self.keys = KeyMap(options.keys, defaults)
        self.comparison.keys = self.keys
        # With the IDL: references to a recorded server in the arguments go to its target
        # (every --target OLD=NEW now, the default target's server when it starts).
        idl = self.comparison.idl
        self.references = None if idl is None else ArgumentReferences(idl.arguments, self.keys)
        self._routed: set = set()
        for server, target in options.targets.items():
            if self.references is not None:
                self._routed.add(server)
                self.references.route(server, target.endpoint.host, target.endpoint.port)
        self.report = report
        self.listing = listing           # dry run: listing(call, data, recorded) per message
        self.timeout = options.timeout
        self._dry_run = options.dry_run
        self.window = max(1, options.window)
        self._spin = 0.0                 # how long _poll polls now (see SPIN)
        self._spin_checked = -SPIN_CHECK
        self.rate = RateLimit(options.rate)
        self.skipped = SkippedServers()
        self.capture_errors: list = []
        self.capture_error_count = 0
        self.connections = 0
        self._recorded: dict = {}        # capture.tcp Connection -> _Recorded
        self._live: set = set()          # _Recorded being replayed
        self._ready: set = set()         # _Recorded with items to handle
        self._full = 0                   # how many have QUEUE_MESSAGES items waiting
        self._default_used_by = None     # the recorded server the plain --target went to
        self._pcap = None
        self._selector = selectors.DefaultSelector()
        self._registered = 0             # sockets the selector watches
        # Lanes only where nothing needs each call as it goes: the calls counted, no
        # --rate, --pcap, --giop/--byte-order, no worker's selection.
        self.tally = tally
        self._lanes = _Lane is not None and tally is not None and \
            not options.rate and not options.pcap and options.reencoding is None and \
            selection is None and not options.dry_run
        # Non-blocking sockets, written through _Recorded.outbuf: with a window, and with
        # lanes as recorded too (a socket with a timeout polls before each send and
        # receive: a system call more each time).
        self._nonblocking = self.window > 1 or self._lanes
        # Lanes on plain TCP sockets served in C while at most PUMP_MAX sockets are open
        # (pump() polls them all each round; more go through the selector).
        self._pumping = self._lanes and _pump is not None
        self._read_all = False           # the capture read to its end
        self.pump_turns = 0              # turns whose sockets pump() served
        self._lane_ops: list = []        # a lane's operation indexes -> names
        self._lane_value_table = None    # Lane.values for the operations so far
        self.lane_calls = 0              # calls the lanes finished (counted, not reported)
        # The connections with a lane, open: what their lanes finished is counted when
        # one hands its connection back or closes, before progress(), and at the end.
        self._with_lanes: set = set()
        self._lane_op_index: dict = {}

    # -- before the capture ------------------------------------------------------------
    def check_targets(self, timeout: float = 3.0) -> None:
        """Connect to each target once (and close): TransportError when one cannot
        be reached, before anything of the capture is sent."""
        targets = list(self.options.targets.values())
        if self.options.default_target is not None:
            targets.append(self.options.default_target)
        for target in targets:
            connect(target.endpoint, self.options.tls, timeout=timeout).close()

    # -- the loop ------------------------------------------------------------------------
    def run(self, reader: CaptureReader, progress=None) -> None:
        """Replay every connection of ``reader``'s capture; returns when all are
        done.  ``progress()`` is called now and then."""
        if self.options.pcap and not self.options.dry_run:
            self._pcap = StreamPcapWriter(self.options.pcap)
        decoder = CaptureDecoder(self._capture_error, self.options.ports, True,
                                 raw_message=self._message)
        sink = _Sink(decoder, self._closed, self._gap)
        tcp = TcpReassembler(sink if self.selection is None else
                             _SelectedSink(sink, self.selection))
        if self.selection is None:
            feed = tcp.in_order_feed(decoder.take_whole)
        else:       # (every segment through the selection's sink, which counts them)
            feed = _only_flows(tcp.feed, self.selection.flows)
        try:
            with reader:
                segments = iter(reader)
                n = 0
                while True:
                    # Read on while no connection has a full queue (memory stays flat).
                    while not self._full:
                        segment = next(segments, None)
                        if segment is None:
                            break
                        feed(segment)
                        n += 1
                        if (self._ready or self._pumping and self._with_lanes) and \
                                n % READ_BATCH == 0:
                            break
                        if progress is not None and n % 1024 == 0:
                            self._lane_tallies()
                            progress()
                    else:
                        segment = True
                    if segment is None:
                        tcp.finish()
                        self._read_all = True
                        break
                    self._turn(block=bool(self._full))
                while self._live or self._ready:
                    self._turn(block=True)
        finally:
            for rec in list(self._live):
                self._close(rec)
            self._lane_tallies()
            self._selector.close()
            if self._pcap is not None:
                self._pcap.close()
            if progress is not None:
                progress()

    def _turn(self, block: bool) -> None:
        """Handle the connections' items as far as they go, then what the targets
        sent (waiting for it when ``block``)."""
        ready = self._ready
        while ready:
            self._advance(ready.pop())
        live = self._live
        if not live:
            return
        timeout = 0.0
        if block:
            deadlines = [r.deadline for r in live if r.waiting or
                         r.lane_on and r.lane.waiting] + \
                [r.write_deadline for r in live if r.outbuf]
            timeout = max(0.0, min(deadlines) - time.monotonic()) if deadlines else 0.0
        if self._registered:
            if self._pumping and self._registered <= PUMP_MAX:
                pumped = self._pump_turn(block, timeout)
                if pumped is None:
                    got = self._poll(timeout) if timeout else self._selector.select(0.0)
                elif pumped[0] or not timeout:
                    got = ()
                else:       # nothing came while pump() polled: sleep on the selector
                    got = self._selector.select(max(0.0, timeout - pumped[1]))
            else:
                got = self._poll(timeout) if timeout else self._selector.select(0.0)
            for key, events in got:
                rec = key.data
                if events & selectors.EVENT_WRITE:
                    self._write(rec)
                if events & selectors.EVENT_READ and rec.sock is not None:
                    self._receive(rec)
        elif timeout:
            time.sleep(timeout)
        now = time.monotonic()
        for rec in live:        # (neither _send_failed nor _settle ends a connection)
            if rec.lane_on and rec.lane.waiting and rec.deadline <= now:
                self._lane_exit(rec)        # (the oldest call's time-out, in Python)
            if rec.outbuf and rec.write_deadline <= now:
                self._send_failed(rec, f"sending to the target failed: it took no bytes "
                                       f"for {self.timeout:g} s")
            if rec.waiting and rec.deadline <= now:
                self._settle(rec, now, timed_out=True)

    def _spin_for(self, now: float, timeout: float) -> float:
        """The seconds to poll without sleeping before sleeping up to ``timeout``:
        SPIN as recorded (--window 1) while a core is free (looked at every SPIN_CHECK
        seconds), else none."""
        if self.window != 1:
            return 0.0
        if now - self._spin_checked >= SPIN_CHECK:
            self._spin = SPIN if _cores_free() else 0.0
            self._spin_checked = now
        return min(self._spin, timeout)

    def _poll(self, timeout: float) -> list:
        """What the selector reports within ``timeout`` seconds: polled for up to SPIN
        seconds (--window 1, a core free), then slept on."""
        select = self._selector.select
        monotonic = time.monotonic
        start = monotonic()
        until = start + self._spin_for(start, timeout)
        while monotonic() < until:
            got = select(0.0)
            if got:
                return got
        return select(max(0.0, timeout - (monotonic() - start)))

    def _capture_error(self, entry: dict) -> None:
        self.capture_error_count += 1
        if len(self.capture_errors) < 20:
            self.capture_errors.append(capture_error_line(entry))

    # -- the reader's side ----------------------------------------------------------------
    def _message(self, flow, raw: bytes, frame: int, ts: int) -> None:
        conn = flow.connection
        rec = self._recorded.get(conn)
        if rec is not None and rec.session is not None and not self._dry_run:
            self._put(rec, (flow.key == rec.client_key, raw, ts))   # the common case
            return
        if rec is None:
            rec = self._recorded[conn] = _Recorded()
        if rec.client_key is None:
            t = raw[7]
            if t in CLIENT_MESSAGES:
                rec.client_key, rec.server = flow.key, flow.dst
            elif t in _SERVER_FIRST:
                rec.client_key = (flow.key[2], flow.key[3], flow.key[0], flow.key[1])
                rec.server = flow.src
            else:
                return                   # which side is which is not known yet
            if self.selection is None:
                self._start(rec, conn.index)
            else:
                index = self.selection.index_of(flow)
                if index is not None:    # (else another worker's: rec.target stays None)
                    self._start(rec, index)
        from_client = flow.key == rec.client_key
        if rec.target is None:
            if from_client and raw[7] in CLIENT_MESSAGES:
                self.skipped.requests[rec.server] = self.skipped.requests.get(rec.server, 0) + 1
            return
        if self.options.dry_run:
            if from_client:
                data, call = rec.session.outgoing(raw, ts)
                if call is not None or data is not None:
                    self.listing(call, data, rec)
            else:       # a call is forgotten at its recorded reply (memory stays flat)
                for call in rec.session.recorded(raw, ts):
                    rec.session.finished(call)
            return
        self._put(rec, (from_client, raw, ts))

    def _put(self, rec: _Recorded, item) -> None:
        rec.items.append(item)
        if len(rec.items) == QUEUE_MESSAGES:
            self._full += 1
        self._ready.add(rec)

    def _start(self, rec: _Recorded, index: int) -> None:
        target = self.options.targets.get(rec.server)
        if target is None and self.options.default_target is not None and \
                self._default_used_by in (None, rec.server):
            target = self.options.default_target
            if self._default_used_by is None and target.key is not None:
                self.keys.defaults[rec.server] = target.key
            self._default_used_by = rec.server
        if target is None:
            self.skipped.connections[rec.server] = self.skipped.connections.get(rec.server, 0) + 1
            return
        rec.target = target
        self.connections += 1
        if self.references is not None and rec.server not in self._routed:
            self._routed.add(rec.server)
            self.references.route(rec.server, target.endpoint.host, target.endpoint.port)
        rec.session = ReplaySession(self.keys, connection=index, server=rec.server,
                                    selected=self.options.selected,
                                    reencoding=self.options.reencoding,
                                    references=self.references)
        if not self.options.dry_run:
            self._live.add(rec)

    def _gap(self, flow) -> None:
        rec = self._recorded.get(flow.connection)
        if rec is not None and rec.client_key is not None and flow.key != rec.client_key:
            rec.replies_lost = True

    def _closed(self, connection) -> None:
        rec = self._recorded.pop(connection, None)
        if rec is not None and rec in self._live:
            self._put(rec, _END)

    # -- a connection's replay ----------------------------------------------------------------
    def _advance(self, rec: _Recorded) -> None:
        """Handle ``rec``'s items until one has to wait for the target.

        With --window N > 1, client messages are sent in order while fewer than N of
        its calls wait for their replayed reply, not waiting for each one's reply as
        the recording did -- but for a reply that may teach a key (a forward, a
        reference the IDL says a result may hold): nothing is sent after it before it
        comes.  A call is decided once both its replies are there (or cannot come)."""
        if self._lanes and (rec.lane_on or self._lane_enter(rec)) and self._lane_advance(rec):
            return
        self._advance_in_python(rec)

    def _advance_in_python(self, rec: _Recorded) -> None:
        """_advance, with no lane holding ``rec``."""
        session = rec.session
        items = rec.items
        windowed = self.window > 1
        if rec.prepared is not None and not rec.waiting:
            self._send_prepared(rec)
        while items and rec.barrier is None and len(rec.waiting) < self.window:
            if rec.waiting and self._lanes and not rec.undecided and items[0] is not _END \
                    and items[0][0] and not rec.failure and session.target_closed is None \
                    and session.shapes and (rec.short_runs < SHORT_RUNS or rec.lane_stamp != (
                        session.shapes_version, len(session.shapes), self.keys.version)):
                # The calls sent are let finish before the next request, so that the
                # lane takes the connection on (Python could go on forever with a window
                # full): a round trip's wait.  Not while a call awaits its recorded
                # reply (it may lie behind this request), nor before a request shape is
                # known (a GIOP 1.0/1.1 connection never has one), nor when the lane
                # handed the last runs back at once (but for shapes or keys new since).
                break
            if len(items) == QUEUE_MESSAGES:
                self._full -= 1
            item = items.popleft()
            if item is _END:
                rec.ended = True
                for call in session.abandoned():
                    self.report(call)
                # The recording ends here: calls it holds no reply to.
                if windowed:        # decided now, or as their replayed reply comes (or not)
                    for call in list(rec.undecided.values()):
                        self._decide(rec, call)
                    rec.undecided.clear()
                    if rec.waiting:
                        self._settle(rec, time.monotonic())
                else:
                    self._wait_for(rec, session.pending())
                break
            from_client, raw, ts = item
            if from_client:
                self._send(rec, raw, ts)
            elif not windowed:
                self._wait_for(rec, session.recorded(raw, ts))
            else:
                for call in session.recorded(raw, ts):
                    if rec.undecided.pop(call.replay_id, None) is not None or \
                            call.sent_at is None or session.target_closed:
                        self._decide(rec, call)
                    elif self.comparison.may_teach(call.operation, call.recorded_reply):
                        rec.barrier = call
        if windowed:
            self._flush(rec)
        elif rec.waiting and items and rec.prepared is None:
            self._prepare(rec)
        if rec.ended and not rec.waiting and not items and not rec.outbuf:
            self._close(rec)

    def _prepare(self, rec: _Recorded) -> None:
        """(--window 1) Rewrite the next client message while the replies it follows
        are awaited, when none of them may teach a key that its rewrite would need:
        the replayed reply's arrival then costs a send before anything else, as a
        client's next call follows its last reply."""
        item = rec.items[0]
        # (Requests only: a CancelRequest names a call the replies awaited may finish.)
        if item is _END or not item[0] or item[1][7] != _REQUEST or rec.sock is None or \
                rec.failure or self.rate.interval:
            return
        if self._lanes and rec.session.shapes and rec.short_runs < SHORT_RUNS:
            return          # the lane takes the connection on once the replies came
        may_teach = self.comparison.may_teach
        for call in rec.waiting:
            if may_teach(call.operation, call.recorded_reply):
                return
        if len(rec.items) == QUEUE_MESSAGES:
            self._full -= 1
        rec.items.popleft()
        rec.prepared = rec.session.outgoing(item[1], item[2])

    def _send_prepared(self, rec: _Recorded) -> None:
        data, call = rec.prepared
        rec.prepared = None
        self._transmit(rec, data, call)

    def _flush(self, rec: _Recorded) -> None:
        """Send the messages gathered by a windowed _advance in one go (as far as the
        target takes them now; the rest as it reads)."""
        if not rec.unsent:
            return
        if not rec.failure:
            if not rec.outbuf:
                rec.write_deadline = time.monotonic() + self.timeout
            rec.outbuf += b"".join(rec.unsent)
        rec.unsent.clear()
        if rec.outbuf:
            self._write(rec)

    def _write(self, rec: _Recorded) -> None:
        """Write what the target takes of ``rec.outbuf`` now; wait to write the rest
        (the selector tells when) or stop."""
        try:
            n = rec.sock.send(rec.outbuf)
        except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
            n = 0
        except OSError as e:
            self._send_failed(rec, f"sending to the target failed: {e}")
            return
        if n:
            del rec.outbuf[:n]
            rec.write_deadline = time.monotonic() + self.timeout
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if rec.outbuf else 0)
        key = self._selector.get_map().get(rec.sock)
        if key is None:                     # the target closed its side
            if rec.outbuf:
                self._send_failed(rec, rec.session.target_closed or "the target closed "
                                  "the connection")
            return
        if key.events != events:
            self._selector.modify(rec.sock, events, rec)
        if not rec.outbuf:
            self._ready.add(rec)            # (a connection whose recording ended closes)

    def _send_failed(self, rec: _Recorded, why: str) -> None:
        """The target takes no more bytes: the calls waiting for a reply fail, and the
        ones after them."""
        if rec.lane_on:
            self._lane_exit(rec)
        rec.failure = why
        rec.outbuf.clear()
        rec.session.target_closed = rec.session.target_closed or why
        self._settle(rec, time.monotonic())

    def _wait_for(self, rec: _Recorded, calls) -> None:
        for call in calls:
            if call.replayed_reply is not None or call.sent_at is None or \
                    rec.session.target_closed:
                self._decide(rec, call)
            else:
                if not rec.waiting:
                    rec.deadline = time.monotonic() + self.timeout
                rec.waiting.append(call)

    def _send(self, rec: _Recorded, raw: bytes, ts: int) -> None:
        data, call = rec.session.outgoing(raw, ts)
        self._transmit(rec, data, call)

    def _transmit(self, rec: _Recorded, data, call) -> None:
        """Send ``data`` (None: nothing) for ``call`` (None: no call), as
        ReplaySession.outgoing gave them."""
        session = rec.session
        if call is not None and call.outcome is not None:
            self.report(call)
            return
        if data is None:
            return
        if not rec.failure and rec.sock is None:
            self._connect(rec)
        if not rec.failure and session.target_closed:
            rec.failure = session.target_closed
        if not rec.failure:
            self.rate.wait()
            if self.window > 1:
                rec.unsent.append(data)         # sent by _flush
                if self.rate.interval:
                    self._flush(rec)
            elif self._nonblocking:             # as recorded, with lanes: sent now
                rec.unsent.append(data)
                self._flush(rec)
            else:
                try:
                    if rec.outbuf:          # what a lane left unsent goes first
                        rec.sock.sendall(rec.outbuf)
                        rec.outbuf.clear()
                    rec.sock.sendall(data)
                except OSError as e:
                    rec.failure = f"sending to the target failed: {e}"
        if rec.failure:
            if call is not None:
                call.outcome, call.reason = FAILED, rec.failure
                session.finished(call)
                self.report(call)
            return
        if rec.pcap_flow is not None:
            rec.pcap_flow.sends(True, data)
        if call is not None:
            call.sent_at = time.monotonic()
            if not call.expects_reply:
                call.outcome = SAME
                self.report(call)
            elif self.window > 1:
                if not rec.waiting:
                    rec.deadline = call.sent_at + self.timeout
                rec.waiting.append(call)

    def _connect(self, rec: _Recorded) -> None:
        try:
            rec.sock = connect(rec.target.endpoint, self.options.tls, timeout=self.timeout)
        except TransportError as e:
            rec.failure = str(e)
            return
        try:    # a request goes out at once, as an ORB sends it (Nagle would hold it back)
            rec.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        if self._nonblocking:
            rec.sock.setblocking(False)     # see _Recorded.outbuf
        self._selector.register(rec.sock, selectors.EVENT_READ, rec)
        self._registered += 1
        if self._pcap is not None:
            try:
                rec.pcap_flow = self._pcap.connection(rec.sock.getsockname()[:2],
                                                      rec.sock.getpeername()[:2])
            except OSError:
                rec.pcap_flow = None

    def _receive(self, rec: _Recorded) -> None:
        """What the target sent (the socket is readable)."""
        sock = rec.sock
        session = rec.session
        judged: list = []       # calls the lane gave back to compare (see _lane_judge)
        while True:
            try:
                data = sock.recv(RECV_SIZE)
            except (BlockingIOError, ssl.SSLWantReadError):
                break
            except OSError as e:
                session.target_closed = f"receiving from the target failed: {e}"
                data = b""
            if data and rec.pcap_flow is not None:
                rec.pcap_flow.sends(False, data)
            now = time.monotonic()
            if rec.lane_on:
                self._lane_left(rec, data, rec.lane.replayed(data, now) if data else data, now,
                                judged)
            else:
                session.replayed(data, now)
            if not data:
                self._receive_end(rec)
                break
            if not (isinstance(sock, ssl.SSLSocket) and sock.pending()):
                break
        self._received(rec, judged)

    def _receive_end(self, rec: _Recorded) -> None:
        """The target closed its side (or reading failed)."""
        self._selector.unregister(rec.sock)
        self._registered -= 1
        if rec.session.target_closed is None:
            rec.session.target_closed = "the target closed the connection"

    def _received(self, rec: _Recorded, judged: list) -> None:
        """After a read: the next request out (as recorded), the calls decided."""
        session = rec.session
        if rec.lane_on:
            self._lane_deadline(rec)
            if self.window == 1 and not rec.lane.waiting:
                self._advance(rec)          # the next request out at once, as a client's
            else:
                self._ready.add(rec)        # (the window may have room again)
            for call in judged:             # (compared once the next request is out)
                self._decide(rec, call)
            return
        waiting = rec.waiting
        if waiting:
            prepared = rec.prepared
            if prepared is not None and prepared[0] is not None and \
                    prepared[1] is not None and prepared[1].outcome is None and \
                    prepared[1].expects_reply and session.target_closed is None and \
                    all(call.replayed_reply is not None for call in waiting):
                # The next request out first; the replies that came are compared after.
                # (Anything else prepared -- a oneway, a skipped call, a call that fails
                # -- waits for _advance, which keeps the order calls are reported in.)
                self._send_prepared(rec)
            self._settle(rec, time.monotonic())

    def _settle(self, rec: _Recorded, now: float, timed_out: bool = False) -> None:
        """Decide the waited-for calls whose reply came (or cannot come, or, when
        ``timed_out``, the first one); handle the items after them."""
        waiting = rec.waiting
        closed = rec.session.target_closed is not None
        windowed = self.window > 1
        while waiting:
            call = waiting[0]
            if call.replayed_reply is None and not closed and not timed_out:
                break
            waiting.popleft()
            timed_out = False
            if rec.barrier is call:
                rec.barrier = None
            if not windowed or call.recorded_reply is not None or rec.ended:
                self._decide(rec, call)
            else:
                rec.undecided[call.replay_id] = call    # until its recorded reply is read
            if waiting:
                rec.deadline = max(now, waiting[0].sent_at + self.timeout) if windowed \
                    else now + self.timeout
        if not waiting or windowed:
            self._ready.add(rec)

    def _decide(self, rec: _Recorded, call) -> None:
        session = rec.session
        session.finished(call)
        if call.outcome is not None:
            return
        recorded, replayed = call.recorded_reply, call.replayed_reply
        if type(replayed) is RawReply and \
                self.comparison.judged_by_bytes(call.operation, recorded.status):
            # The recorded bytes but for the request id, nothing read from them: the same
            # (nearly every call of a target that answers as the old one did).
            call.outcome = SAME
        elif call.sent_at is None:
            call.outcome, call.reason = FAILED, rec.failure or "not sent"
        elif replayed is None and session.target_closed and recorded is not None:
            call.outcome, call.reason = FAILED, session.target_closed
        elif recorded is None and rec.replies_lost:
            call.outcome, call.reason = FAILED, "the recorded reply is lost: bytes the " \
                "server sent are missing from the capture"
        elif call.cancelled and (recorded is None or replayed is None):
            call.outcome, call.reason = SAME, "cancelled: a reply may or may not come"
        else:
            call.differences = self.comparison.replies(
                call.operation, reply_message(recorded), reply_message(replayed))
            if replayed is None and recorded is not None:
                call.reason = f"no reply within {self.timeout:g} s"
                if session.stray_replies:
                    call.reason += f" (the target sent {session.stray_replies} " \
                        f"{'reply' if session.stray_replies == 1 else 'replies'} to request " \
                        f"ids it was not sent, the first {session.first_stray})"
            call.outcome = DIFFERENT if call.differences else SAME
        self.report(call)

    def _close(self, rec: _Recorded) -> None:
        if rec.lane is not None:
            self._lane_results(rec.lane)
            self._with_lanes.discard(rec)
        self._live.discard(rec)
        self._ready.discard(rec)
        if len(rec.items) >= QUEUE_MESSAGES:
            self._full -= 1
        rec.items.clear()
        rec.outbuf.clear()
        if rec.sock is not None:
            if self._selector.get_map() is not None and rec.sock in self._selector.get_map():
                self._selector.unregister(rec.sock)
                self._registered -= 1
            try:
                rec.sock.close()
            except OSError:
                pass
            rec.sock = None
            if rec.pcap_flow is not None:
                rec.pcap_flow.close()
