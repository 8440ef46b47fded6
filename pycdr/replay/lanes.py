"""A replay connection's steady state in C (pycdr._replaylane): the part of Replay
(pycdr.replay.runner) that gives a connection to its Lane while Python holds nothing
of it, serves the lanes' sockets in C (pump), and takes a connection back as ordinary
Calls.  Mixed into Replay, whose state it uses."""

from __future__ import annotations

import os
import select
import ssl
import struct
import time

from ..fastpath import c_allowed

_Lane = _pump = _c_read = None
PUMP_MAX = 0
if c_allowed():
    try:
        from .._replaylane import PUMP_MAX, Lane as _Lane, pump as _pump
        from ..codec._speedups import read as _c_read
    except ImportError:          # not built: every call in Python
        pass

from ..capture.stats import LatencyHistogram
from ..errors import PycdrError
from ..giop.header import MAX_MESSAGE_SIZE
from ..giop.messages import Reply, decode_message
from .recorded import QUEUE_MESSAGES, _Recorded
from .session import Call, RawReply, ReplaySession

# A pipelined connection waits for the calls it has out before its next request, so that
# its lane takes it on -- but not after SHORT_RUNS runs of the lane in a row that took
# fewer than LANE_RUN items each (a round trip lost for each; see _advance).
LANE_RUN = 16
SHORT_RUNS = 4
# The lanes' sockets are served in C (pycdr._replaylane.pump) for at most PUMP_BUDGET
# seconds before the loop's own checks (time-outs, progress) run again.  Between turns
# the capture is read READ_BATCH segments at a time, as without pump() (measured, the
# four-connection capture to omniORBpy as recorded: 64 at a time 27k calls/s against
# 33k for 256, 1,024 34k; smaller batches, or the lanes served within a batch, no
# better; benchmarks/bench_replay.py measures the replay).
PUMP_BUDGET = 0.02
_EV_READY, _EV_LEFT, _EV_RECV_ERROR, _EV_CLOSED, _EV_HANDED, _EV_UNSENT = range(6)
_POLL_ANY = select.POLLIN | select.POLLERR | select.POLLHUP
_POLL_WRITE = select.POLLOUT | select.POLLERR | select.POLLHUP
_ULONG = (struct.Struct(">I"), struct.Struct("<I"))


class ReplayLanes:
    """Replay's methods for its connections' lanes (see the module doc)."""

    def _pump_turn(self, block: bool, timeout: float):
        """Serve the sockets in C (pycdr._replaylane.pump) while the lanes need no
        Python; then what they handed back, as _receive and _advance would.  None when
        no lane is on a plain socket (the selector serves them all); else whether
        anything happened, and the seconds it took."""
        entries, recs, lanes = [], [], []
        for key in self._selector.get_map().values():
            rec = key.data
            if rec.lane_on and not rec.outbuf and not isinstance(rec.sock, ssl.SSLSocket):
                entries.append((key.fd, 0, rec.lane, rec.items))
                lanes.append((rec, len(rec.items)))
            else:
                entries.append((key.fd, select.POLLIN | (select.POLLOUT if rec.outbuf else 0),
                                None, None))
            recs.append(rec)
        if not lanes:
            return None
        start = time.monotonic()
        spin = 0.0
        if block and timeout:
            spin = self._spin_for(start, timeout)
            budget = min(timeout, PUMP_BUDGET)
        else:
            budget = PUMP_BUDGET
        events, progressed = _pump(entries, spin, budget, -1 if self._read_all else self._full,
                                   QUEUE_MESSAGES)
        self.pump_turns += 1
        for rec, before in lanes:
            after = len(rec.items)
            rec.lane_taken += before - after
            if before >= QUEUE_MESSAGES > after:
                self._full -= 1
            self._lane_deadline(rec)
        for i, kind, payload, now in events:
            rec = recs[i]
            if rec.sock is None:
                continue
            if kind == _EV_READY:
                if payload & _POLL_WRITE and rec.outbuf:
                    self._write(rec)
                if payload & _POLL_ANY and rec.sock is not None:
                    self._receive(rec)
                continue
            judged: list = []
            if kind == _EV_LEFT:
                self._lane_left(rec, True, payload, now, judged)
                self._received(rec, judged)
            elif kind == _EV_RECV_ERROR or kind == _EV_CLOSED:
                if kind == _EV_RECV_ERROR:
                    rec.session.target_closed = f"receiving from the target failed: " \
                        f"{OSError(payload, os.strerror(payload))}"
                self._lane_left(rec, False, b"", now, judged)
                self._receive_end(rec)
                self._received(rec, judged)
            elif kind == _EV_HANDED:        # as _lane_advance hands back
                if payload:
                    rec.unsent.append(payload)
                self._flush(rec)
                if rec.lane_on:
                    self._lane_exit(rec)
                self._advance_in_python(rec)
            else:                           # _EV_UNSENT: the rest as the target reads
                rec.unsent.append(payload)
                self._flush(rec)
        return bool(events or progressed), time.monotonic() - start

    def _lane_enter(self, rec: _Recorded) -> bool:
        """Give ``rec`` to its lane when Python holds nothing of it: no call awaits a
        reply or a decision, no barrier, no fragmented message under way, the reply
        streams idle, the target connected and open, request shapes known."""
        session = rec.session
        if rec.waiting or rec.undecided or rec.barrier is not None or rec.sock is None or \
                rec.failure or rec.ended or rec.prepared is not None or not session.quiet \
                or not session.shapes:
            return False
        lane = rec.lane
        if lane is None:
            lane = rec.lane = _Lane(self.window, MAX_MESSAGE_SIZE, LatencyHistogram.BUCKETING)
            self._with_lanes.add(rec)
        stamp = (session.shapes_version, len(session.shapes), self.keys.version)
        if stamp != rec.lane_stamp:
            lane.shapes = self._lane_table(session)
            lane.values = self._lane_values()
            rec.lane_stamp = stamp
            rec.short_runs = 0
        lane.next_id = session.next_id
        rec.lane_on = True
        rec.lane_taken = 0
        return True

    def _lane_table(self, session: ReplaySession) -> dict:
        """The lane's shapes: request bytes 4..8 + 16..the name's end -> ((body offset,
        the bytes between the name and the body, bytes 16..the body rewritten for the
        key the shape's requests go to now or None, operation index, flags), ...), in
        the order ReplaySession._outgoing_shaped tries them.  Flags: 1 oneway, 2 not
        selected, bit 8 + s: a reply of status s that repeats the recorded bytes is the
        same (Comparison.judged_by_bytes; any other may teach a key)."""
        table = {}
        selected = self.options.selected
        judged = self.comparison.judged_by_bytes
        index = self._lane_op_index
        for prefix, known in session.shapes.items():
            entries = []
            for start, tail, shape in known:
                operation = shape.operation
                op = index.get(operation)
                if op is None:
                    op = index[operation] = len(self._lane_ops)
                    self._lane_ops.append(operation)
                flags = (1 if shape.kind == "oneway" else 0) | (0 if selected(operation) else 2)
                for status in range(6):
                    if judged(operation, status):
                        flags |= 1 << (8 + status)
                rewritten = shape.rewritten.get(self.keys.target_key(shape.key, session.server))
                entries.append((start, tail, rewritten, op, flags))
            table[prefix] = tuple(entries)
        return table

    def _lane_values(self):
        """Lane.values: per operation index, how the lanes judge a reply whose bytes
        differ from the recorded one's (Comparison.value_nodes), with the C decoder's
        read(); rebuilt when operations are added."""
        ops = self._lane_ops
        if self._lane_value_table is None or len(self._lane_value_table[1]) != len(ops):
            nodes = self.comparison.value_nodes
            self._lane_value_table = (_c_read, tuple(nodes(op) for op in ops)) \
                if _c_read is not None else None
        return self._lane_value_table

    def _lane_advance(self, rec: _Recorded) -> bool:
        """The lane takes ``rec``'s items as far as it can; False when it handed the
        connection back (its calls are Calls again: Python goes on)."""
        lane, items = rec.lane, rec.items
        was_full = len(items) >= QUEUE_MESSAGES
        before = len(items)
        data, handed_over = lane.advance(items)
        rec.lane_taken += before - len(items)
        if was_full and len(items) < QUEUE_MESSAGES:
            self._full -= 1
        if data:
            rec.unsent.append(data)
        if handed_over:
            self._flush(rec)        # (before anything Python sends; as recorded, it would not)
            self._lane_exit(rec)
            return False
        self._lane_deadline(rec)
        self._flush(rec)
        return True

    def _lane_deadline(self, rec: _Recorded) -> None:
        sent = rec.lane.oldest_sent
        if sent is not None:
            rec.deadline = sent + self.timeout

    def _lane_tallies(self) -> None:
        for rec in self._with_lanes:
            self._lane_results(rec.lane)

    def _lane_results(self, lane) -> None:
        ops, tally = self._lane_ops, self.tally
        for op, same, skipped, recorded, replayed in lane.results():
            self.lane_calls += same + skipped
            tally(ops[op], same, skipped, recorded, replayed)

    def _lane_judge(self, rec: _Recorded, left: bytes, now: float, judged: list):
        """Bytes the lane handed back: while they begin with the replayed reply of a
        call it holds whose bytes differ from the recorded reply's (an ORB that leaves
        padding uninitialised, as omniORB does), that call leaves the lane, its reply
        decoded as Python's stream would have it, onto ``judged`` (to be compared value
        by value: _decide), and the lane goes on with the rest.  What is left for the
        stream (None: nothing)."""
        lane, session = rec.lane, rec.session
        while left:
            if len(left) < 12 or left[:4] != b"GIOP":
                return left
            end = 12 + _ULONG[left[6] & 1].unpack_from(left, 8)[0]
            if end > len(left) or end - 12 > MAX_MESSAGE_SIZE:
                return left
            raw = left[:end]
            try:
                msg = decode_message(raw, field_offsets=False)[0]
            except PycdrError:
                return left         # (the stream's lenient connection says what is wrong)
            if not isinstance(msg, Reply):
                return left
            taken = lane.take_differing(raw)
            if taken is None:
                return left
            op, recorded_id, replay_id, request_ts, sent, sent_at, recorded, recorded_ts = taken
            call = Call(session.connection, session.server, self._lane_ops[op], "request",
                        recorded_id, request_ts)
            call.replay_id, call.sent_bytes, call.sent_at = replay_id, sent, sent_at
            call.recorded_reply, call.recorded_raw = RawReply(recorded, recorded_id), recorded
            call.recorded_latency = max(0, recorded_ts - request_ts) / 1e9
            call.replayed_reply, call.replayed_raw = msg, raw
            call.replayed_latency = max(0.0, now - sent_at)
            judged.append(call)
            left = lane.replayed(left[end:], now) if len(left) > end else None
        return left

    def _lane_exit(self, rec: _Recorded) -> None:
        """Take ``rec`` back from its lane: the calls it holds become Calls, in the
        state Python's own handling would have left them in, and Python goes on."""
        lane = rec.lane
        rec.lane_on = False
        rec.short_runs = 0 if rec.lane_taken >= LANE_RUN else rec.short_runs + 1
        self._lane_results(lane)
        session = rec.session
        session.next_id = lane.next_id
        ops = self._lane_ops
        held = []
        for (op, recorded_id, replay_id, request_ts, sent, sent_at, recorded, recorded_ts,
             replayed, replayed_at, settled, awaited_at) in lane.materialize():
            call = Call(session.connection, session.server, ops[op], "request", recorded_id,
                        request_ts)
            call.replay_id, call.sent_bytes, call.sent_at = replay_id, sent, sent_at
            session.calls[recorded_id] = call
            session.by_replay_id[replay_id] = call
            held.append((call, recorded, recorded_ts, replayed, replayed_at, settled,
                         awaited_at))
        # (a call holds one reply at most: the lane finishes one that has both)
        for call, recorded, recorded_ts, replayed, replayed_at, *_ in held:
            if recorded is not None:
                session.recorded(recorded, recorded_ts)
            elif replayed is not None:
                session.replayed(replayed, replayed_at)
        now = time.monotonic()
        if self.window == 1:
            # As recorded (Replay._wait_for): a call waits once its recorded reply is read;
            # the others wait for it in the session's books.
            for call, recorded, *_, awaited_at in held:
                if recorded is not None:
                    if not rec.waiting:
                        rec.deadline = max(now, awaited_at + self.timeout)
                    rec.waiting.append(call)
            return self._lane_rest(rec)
        for call, *_, settled, _ in held:
            if settled:         # its replayed reply came, and every earlier call's
                rec.undecided[call.replay_id] = call
            else:
                rec.waiting.append(call)
        if rec.waiting:
            rec.deadline = max(now, rec.waiting[0].sent_at + self.timeout)
        self._lane_rest(rec)

    def _lane_rest(self, rec: _Recorded) -> None:
        rest = rec.lane.take_buffer()       # (a reply cut short: completes nothing yet)
        if rest:
            rec.session.replayed(rest, time.monotonic())

    def _lane_left(self, rec: _Recorded, data, left, now: float, judged: list) -> None:
        """``left``, what the lane handed back of the bytes read (``data``; b"": the end)."""
        if left:
            left = self._lane_judge(rec, left, now, judged)
        if left is not None:        # a reply the lane does not judge, or the end
            for call in judged:
                self._decide(rec, call)
            judged.clear()
            self._lane_exit(rec)
            if left or not data:
                rec.session.replayed(left, now)
