"""The campaign's connections: a case's own connection in a window of them
(``_Slot``, read without blocking; ``Window``, mixed into Campaign in
pycdr.fuzz.engine, whose state it uses, keeps the window) and the reused
connection of pipelined batches (``_Pipe``)."""

from __future__ import annotations

import selectors
import socket
import time
from collections import deque

from ..giop.connection import GiopConnection, Role
from ..giop.events import NEED_DATA, ConnectionClosed, MessageReceived, ProtocolViolation
from ..giop.messages import CloseConnection, KeyAddr, LocateReply, LocateRequest, encode_message
from ..conformance.wire import FLOOD_BYTES, FLOOD_FACTOR, FLOOD_MESSAGES, Observation, Wire
from ..orb.tls import open_socket
from .feedback import answer_state

SENTINEL_ID = 0x7E570000       # request ids of the pipelining sentinels (and probes)
# How long a case's connection is watched after the answers it was to get
# (a close, unsolicited messages); with no answer due, twice as long.
LINGER = 0.005
# Cases held for a later batch at most (see Batches).
HELD = 64
# The first batch (and the first after a failed one) holds this many cases,
# each batch that went as predicted twice as many as the last, up to --batch:
# the cases of a failed batch are all sent again, each on a connection of
# its own (a target that never answers as predicted, the OpenJDK ORB at
# some 35 ms of its CPU a case, was sent a whole batch twice each time).
FIRST_BATCH = 4


class _Slot:
    """One case's connection in a window (Campaign._observe_group): what
    Wire.observe does, a read at a time, without blocking."""

    def __init__(self, wire: Wire, obs: Observation, want: int, timeout: float, sent: int,
                 linger: float = LINGER):
        self.wire = wire
        self.obs = obs
        self.want = want
        self.linger = linger
        self.start = time.monotonic()
        self.until = self.start + timeout        # the wait, then the linger's end
        self.lingering = False
        self.flood_bytes = max(FLOOD_BYTES, FLOOD_FACTOR * sent)
        self._answered(self.start)

    def _answered(self, now: float) -> None:
        if not self.lingering and len(self.obs.messages) >= self.want:
            self.lingering = True
            if self.want:
                self.obs.answer_time = now - self.start
            self.until = min(self.until, now + self.linger) if self.want else self.until

    def read(self) -> bool:
        """Take what came; True when the connection is done."""
        obs = self.obs
        try:
            data = self.wire.sock.recv(65536)
        except BlockingIOError:
            return False
        except (ConnectionResetError, ConnectionAbortedError):
            obs.reset = obs.closed = True
            self.wire.peer.receive_data(b"")
            self.wire._drain(obs)
            return True
        except OSError as e:
            obs.connect_error = str(e)
            return True
        obs.total_received += len(data)
        if len(obs.received) < self.flood_bytes:
            obs.received += data[:self.flood_bytes - len(obs.received)]
        self.wire.peer.receive_data(data)
        self.wire._drain(obs, limit=self.want + FLOOD_MESSAGES)
        if not data:
            obs.closed = True
            return True
        if obs.total_received > self.flood_bytes or \
                len(obs.messages) > self.want + FLOOD_MESSAGES:
            obs.flooded = True
            return True
        self._answered(time.monotonic())
        return False

    def expired(self, now: float) -> bool:
        if now < self.until:
            return False
        if not self.lingering:
            self.obs.timed_out = True
        return True


class Window:
    """Campaign's window of connections, one a case."""

    def _observe_group(self, cases: list, more=None, linger: float = LINGER) -> list:
        """Each case on a connection of its own, up to ``connections`` open
        at once: a new one opens as soon as one is done (its answers in and
        ``linger`` past them, or closed, or its wait over), so a case the target
        is silent on holds one connection, not the others.  ``more``: once
        every case of ``cases`` is sent, the next one for a free connection
        (appended to ``cases`` by it), until it gives None.  The
        observations, in the order of ``cases``."""
        observations = [Observation() for _ in cases]
        selector = selectors.DefaultSelector()
        waiting = deque(range(len(cases)))
        open_: dict = {}              # case position -> _Slot
        made = 0
        try:
            while waiting or open_ or more is not None:
                while len(open_) < self.connections:
                    if not waiting:
                        if more is None or more() is None:
                            more = None
                            break
                        observations.append(Observation())
                        waiting.append(len(observations) - 1)
                    k = waiting.popleft()
                    slot = self._open_slot(cases[k], observations[k], linger)
                    if slot is not None:
                        open_[k] = slot
                        selector.register(slot.wire.sock, selectors.EVENT_READ, k)
                now = time.monotonic()
                wait = max(0.0, min((slot.until for slot in open_.values()), default=now) - now)
                if wait > 0 and made < len(cases):
                    # While the target works: the next cases (see _make_ahead).
                    if self._make_ahead(1):
                        made += 1
                        wait = 0.0
                    else:
                        made = len(cases)
                ready = selector.select(wait) if open_ else []
                for key, _ in ready:
                    slot = open_.get(key.data)
                    if slot is not None and slot.read():
                        selector.unregister(slot.wire.sock)
                        slot.wire.close()
                        del open_[key.data]
                now = time.monotonic()
                for k in [k for k, slot in open_.items() if slot.expired(now)]:
                    slot = open_.pop(k)
                    selector.unregister(slot.wire.sock)
                    slot.wire.close()
        finally:
            for slot in open_.values():
                slot.wire.close()
            selector.close()
        for obs in observations:
            if obs.answer_time is not None:
                self.latency.add(obs.answer_time)
        return observations

    def _open_slot(self, case, obs: Observation, linger: float = LINGER):
        try:
            wire = self.target.wire(connect_timeout=self.probe_timeout)
        except OSError as e:
            obs.connect_error = str(e)
            return None
        for data in case.messages:
            if not wire.send(data):
                break
        wire.sock.setblocking(False)
        want = case.prediction.wanted
        return _Slot(wire, obs, want, self.answer_timeout() if want else linger * 2,
                     sum(map(len, case.messages)), linger)


class Batches:
    """The batchable cases waiting for the reused connection: the next
    batch and, with ``distinct_ids`` (state feedback: answers_by_case tells a
    batch's answers apart by their request ids), the cases held for a later
    one, a request id of theirs being one a case of the batch has (mutated
    from one input, most cases have its ids).  At most HELD cases are held:
    one more is refused (it goes on a connection of its own)."""

    def __init__(self, distinct_ids: bool = False):
        self.distinct_ids = distinct_ids
        self.batch: list = []
        self.ids: set = set()
        self.held: list = []

    def __len__(self) -> int:
        """The cases of the next batch (none: none held either)."""
        return len(self.batch)

    def add(self, case) -> bool:
        """Whether ``case`` was taken (in the batch, or held)."""
        ids = case.prediction.request_ids
        if not self.distinct_ids or self.ids.isdisjoint(ids):
            self.batch.append(case)
            self.ids.update(ids)
        elif len(self.held) < HELD:
            self.held.append(case)
        else:
            return False
        return True

    def take(self) -> list:
        """The batch; the next starts with the held cases that go together."""
        out, held = self.batch, self.held
        self.batch, self.ids, self.held = [], set(), []
        for case in held:
            self.add(case)
        return out


class _Pipe:
    """A reused connection for pipelined batches."""

    def __init__(self, host, port, object_key, tls=None):
        self.sock = open_socket(host, port, tls, timeout=3.0)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.key = object_key
        self.conn = GiopConnection(Role.CLIENT, version=(1, 3), lenient=True,
                                   check_request_ids=False)
        self.sentinels = 0
        # Under state feedback: (request id or None, answer_state) of each answer
        # of the batch but the sentinel's, in the order they came.
        self.answers: list | None = None

    def run(self, data: bytes, want: int, timeout: float, *, sentinel: bool = True,
            while_waiting=None, answers: list | None = None) -> bool:
        """Send a batch and its sentinel; True when exactly the predicted
        answers and the sentinel's came back and the connection stays up.
        Without a sentinel (a batch that ends the connection), True when the
        predicted answers came back. ``answers``, when given, gets what each
        answer was (see self.answers)."""
        self.answers = answers
        self.sentinels += 1
        sentinel_id = SENTINEL_ID + (self.sentinels & 0xFFFF)
        if sentinel:
            data += encode_message(LocateRequest(request_id=sentinel_id,
                                                 target=KeyAddr(self.key)))
            want += 1
        self.sock.sendall(data)
        if while_waiting is not None:
            while_waiting()
        got = 0
        seen_sentinel = not sentinel
        deadline = time.monotonic() + timeout
        while got < want or not seen_sentinel:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                return False
            if not chunk:
                return False
            self.conn.receive_data(chunk)
            n, sentinel_seen, bad = self._drain(sentinel_id)
            got += n
            seen_sentinel = seen_sentinel or sentinel_seen
            if bad or got > want + FLOOD_MESSAGES:
                return False
        if got != want:
            return False
        # Anything already waiting beyond the answers is unsolicited.
        try:
            self.sock.setblocking(False)
            extra = self.sock.recv(65536)
            if not sentinel:
                return self._no_more_messages(extra)
            return False if extra or extra == b"" else True
        except BlockingIOError:
            return True
        finally:
            self.sock.setblocking(True)

    def _no_more_messages(self, extra: bytes) -> bool:
        if not extra:
            return True            # closed, as the tail case may do
        self.conn.receive_data(extra)
        n, _, bad = self._drain(None)
        return n == 0 and not bad

    def _drain(self, sentinel_id):
        n = 0
        seen = False
        bad = False
        while True:
            event = self.conn.next_event()
            if event is NEED_DATA:
                return n, seen, bad
            if isinstance(event, MessageReceived):
                n += 1
                msg = event.message
                if isinstance(msg, (CloseConnection,)):
                    bad = True
                if isinstance(msg, LocateReply) and msg.request_id == sentinel_id:
                    seen = True
                elif self.answers is not None:
                    self.answers.append((getattr(msg, "request_id", None), answer_state(msg)))
            elif isinstance(event, (ProtocolViolation, ConnectionClosed)):
                return n, seen, True

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
