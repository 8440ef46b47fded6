"""TCP reassembly for a passive observer: each direction's byte stream, in order.

    reassembler = TcpReassembler(sink)
    for segment in CaptureReader(path):
        reassembler.feed(segment)
    reassembler.finish()

``sink`` gets, per direction (a :class:`Flow`):

- ``data(flow, data, frame, ts_ns)`` -- the next bytes of the stream, in order,
  at the frame (and time) that made them available;
- ``gap(flow, missing, frame, ts_ns)`` -- ``missing`` bytes the capture does
  not hold come next (the stream offset moves on by that much);
- ``closed(connection)`` -- the connection ended (FIN both ways, RST, or the
  end of the capture): its flows are forgotten after this call.

Segments out of order wait until the bytes before them arrive.  Bytes seen
already (retransmissions, overlaps) are dropped: the first copy wins.  A hole
is declared a gap when the peer acknowledges bytes beyond it (it got them; the
capture did not), when more than ``max_pending`` bytes wait behind it, when
the connection ends, or at :meth:`TcpReassembler.finish`.
"""

from __future__ import annotations

from .read import endpoint_text

FIN, SYN, RST, ACK = 0x01, 0x02, 0x04, 0x10
_MASK = 0xFFFFFFFF
_HALF = 0x80000000
MAX_PENDING = 4 << 20


class Connection:
    """A TCP connection: its index (order of first appearance, from 0) and two flows."""
    __slots__ = ("index", "flows", "app")

    def __init__(self, index: int):
        self.index = index
        self.flows: list = []
        self.app = None             # the sink's state for the connection


class Flow:
    """One direction of a connection."""
    __slots__ = ("connection", "key", "src", "dst", "next_seq", "offset", "pending",
                 "pending_bytes", "fin_seq", "finished", "app")

    def __init__(self, connection: Connection, key: tuple):
        self.connection = connection
        self.key = key
        src, sport, dst, dport = key
        self.src = endpoint_text(src, sport)
        self.dst = endpoint_text(dst, dport)
        self.next_seq: int | None = None    # sequence number of the next byte due
        self.offset = 0                     # stream offset of that byte
        self.pending: dict = {}             # seq -> payload, out of order
        self.pending_bytes = 0
        self.fin_seq: int | None = None
        self.finished = False               # FIN seen and every byte before it delivered
        self.app = None                     # the sink's state for the flow


class ReassemblyCounts:
    __slots__ = ("connections", "retransmitted_segments", "retransmitted_bytes",
                 "out_of_order_segments", "gaps", "gap_bytes")

    def __init__(self):
        self.connections = 0
        self.retransmitted_segments = 0     # wholly seen before
        self.retransmitted_bytes = 0        # of those and of partial overlaps
        self.out_of_order_segments = 0
        self.gaps = 0
        self.gap_bytes = 0


class TcpReassembler:
    def __init__(self, sink, max_pending: int = MAX_PENDING):
        self.sink = sink
        self.max_pending = max_pending
        self.flows: dict = {}               # (src, sport, dst, dport) -> Flow
        self.counts = ReassemblyCounts()
        self.waiting = 0                    # out-of-order segments held, all flows
        self._frame = 0
        self._ts = 0

    @property
    def open_connections(self) -> int:
        return len({id(f.connection) for f in self.flows.values()})

    def feed(self, segment) -> None:
        """One segment as :class:`pycdr.capture.read.CaptureReader` yields it."""
        frame, ts, src, sport, dst, dport, seq, ack, flags, payload = segment
        self._frame = frame
        self._ts = ts
        if self.waiting and flags & ACK:
            peer = self.flows.get((dst, dport, src, sport))
            if peer is not None and peer.pending:
                self._gaps_before(peer, ack)
        key = (src, sport, dst, dport)
        flow = self.flows.get(key)
        if flow is None:
            if not payload and not flags & SYN and \
                    not (flags & (FIN | RST) and (dst, dport, src, sport) in self.flows):
                return                       # an ACK/FIN/RST of a connection not followed
            flow = self._new_flow(key)
        elif flags & SYN and (flow.offset or flow.finished):
            # The 4-tuple used again: a new connection.
            self._close(flow.connection)
            flow = self._new_flow(key)
        if flags & SYN:
            flow.next_seq = (seq + 1) & _MASK
            seq = flow.next_seq
        if payload:
            next_seq = flow.next_seq
            if next_seq is None:
                flow.next_seq = next_seq = seq
            delta = (seq - next_seq) & _MASK
            if delta == 0:
                flow.next_seq = (seq + len(payload)) & _MASK
                self.sink.data(flow, payload, frame, ts)
                flow.offset += len(payload)
                if flow.pending:
                    self._drain(flow)
            elif delta < _HALF:
                self.counts.out_of_order_segments += 1
                held = flow.pending.get(seq)
                if held is None or len(held) < len(payload):
                    self.waiting += held is None
                    flow.pending[seq] = payload
                    flow.pending_bytes += len(payload) - (len(held) if held else 0)
                    if flow.pending_bytes > self.max_pending:
                        self._gap(flow, min((s - next_seq) & _MASK for s in flow.pending))
                        self._drain(flow)
            else:
                seen = (next_seq - seq) & _MASK
                counts = self.counts
                if seen >= len(payload):
                    counts.retransmitted_segments += 1
                    counts.retransmitted_bytes += len(payload)
                else:
                    counts.retransmitted_bytes += seen
                    flow.next_seq = (seq + len(payload)) & _MASK
                    self.sink.data(flow, payload[seen:], frame, ts)
                    flow.offset += len(payload) - seen
                    if flow.pending:
                        self._drain(flow)
        if flags & FIN:
            flow.fin_seq = (seq + len(payload)) & _MASK
            if flow.next_seq is None:           # a direction that sent nothing else
                flow.next_seq = flow.fin_seq
        if flags & RST:
            self._close(flow.connection)
            return
        if flow.fin_seq is not None and not flow.finished and not flow.pending \
                and flow.next_seq == flow.fin_seq:
            flow.finished = True
            flows = flow.connection.flows
            if len(flows) == 2 and flows[0].finished and flows[1].finished:
                self._close(flow.connection)

    def in_order_feed(self, take):
        """:meth:`feed`, with a shortcut for nearly every segment of a capture: a plain
        data segment (no SYN, FIN or RST) at its flow's next byte, while no segment waits
        out of order on any flow (so no ACK can declare a gap), is offered to ``take(flow,
        payload, frame, ts)`` first.  When ``take`` returns True it has consumed the bytes
        as ``sink.data`` would have (``flow.offset`` is still theirs) and the flow moves
        on past them; else :meth:`feed` handles the segment."""
        flows = self.flows
        feed = self.feed

        def feed_in_order(segment) -> None:
            frame, ts, src, sport, dst, dport, seq, ack, flags, payload = segment
            if payload and not flags & (SYN | FIN | RST) and not self.waiting:
                flow = flows.get((src, sport, dst, dport))
                if flow is not None and flow.next_seq == seq and flow.fin_seq is None:
                    self._frame = frame
                    self._ts = ts
                    if take(flow, payload, frame, ts):
                        flow.next_seq = (seq + len(payload)) & _MASK
                        flow.offset += len(payload)
                        return
            feed(segment)
        return feed_in_order

    def _new_flow(self, key: tuple) -> Flow:
        src, sport, dst, dport = key
        peer = self.flows.get((dst, dport, src, sport))
        if peer is not None and len(peer.connection.flows) == 1:
            connection = peer.connection
        else:
            connection = Connection(self.counts.connections)
            self.counts.connections += 1
        flow = Flow(connection, key)
        connection.flows.append(flow)
        self.flows[key] = flow
        return flow

    def _gap(self, flow: Flow, missing: int) -> None:
        self.counts.gaps += 1
        self.counts.gap_bytes += missing
        self.sink.gap(flow, missing, self._frame, self._ts)
        flow.offset += missing
        flow.next_seq = (flow.next_seq + missing) & _MASK

    def _gaps_before(self, flow: Flow, ack: int) -> None:
        """The peer acknowledged up to ``ack``: holes before it were received but
        not captured."""
        while flow.pending:
            acked = (ack - flow.next_seq) & _MASK
            if not 0 < acked < _HALF:
                return
            first = min((s - flow.next_seq) & _MASK for s in flow.pending)
            self._gap(flow, min(acked, first))
            self._drain(flow)

    def _drain(self, flow: Flow) -> None:
        """Deliver the waiting segments that are now in order."""
        pending = flow.pending
        while pending:
            next_seq = flow.next_seq
            data = pending.pop(next_seq, None)
            self.waiting -= data is not None
            if data is None:
                # A waiting segment that starts before next_seq (an overlap)?
                for seq in pending:
                    seen = (next_seq - seq) & _MASK
                    if seen < _HALF:
                        data = pending.pop(seq)
                        self.waiting -= 1
                        flow.pending_bytes -= len(data)
                        self.counts.retransmitted_bytes += min(seen, len(data))
                        data = data[seen:]
                        break
                else:
                    return
                if not data:
                    continue
            else:
                flow.pending_bytes -= len(data)
            flow.next_seq = (next_seq + len(data)) & _MASK
            self.sink.data(flow, data, self._frame, self._ts)
            flow.offset += len(data)

    def _flush(self, flow: Flow) -> None:
        """Deliver what waits behind holes, each hole a gap."""
        while flow.pending:
            next_seq = flow.next_seq
            self._gap(flow, min((s - next_seq) & _MASK for s in flow.pending))
            self._drain(flow)

    def _close(self, connection: Connection) -> None:
        for flow in connection.flows:
            self._flush(flow)
            if self.flows.get(flow.key) is flow:
                del self.flows[flow.key]
        self.sink.closed(connection)

    def finish(self) -> None:
        """The end of the capture: every connection still open ends here."""
        for flow in list(self.flows.values()):
            if self.flows.get(flow.key) is flow:
                self._close(flow.connection)
