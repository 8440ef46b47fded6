"""The campaign loop.

Case ``i`` of a run with ``--seed S`` is derived from ``random.Random(f"{S}:{i}")``
alone (which seed, which mutations), so any case can be rebuilt from the seed
and its index.  A case's messages go to the target in one of two ways:

- pipelined: cases whose framing the fuzzer can predict (every message whole,
  no fragment chain left open, no close expected) share one connection, a
  batch at a time, closed by a LocateRequest "sentinel"; the number of
  answers is predicted by pycdr's own sans-I/O GIOP connection (the reference
  ORB's logic), so waiting stops as soon as they are in;
- isolated: a fresh connection (the other cases, and every case of a batch
  that did not go as predicted).

Detection on an isolated case: a close or reset without MessageError, fewer
answers than predicted within the timeout, answers beyond them (then a
longer look for a flood), and after every such case a liveness probe (a
fresh connection and a LocateRequest); with ``--spawn`` the target's exit
(and signal) and its RSS growth too.  A probe also runs every
``probe_interval`` seconds.  Only the target given is ever contacted.
"""

from __future__ import annotations

import os
import random
import re
import shlex
import socket
import subprocess
import threading
import queue
import time
from collections import Counter
from dataclasses import dataclass, field

from ..errors import PycdrError
from ..giop.connection import GiopConnection, Role
from ..giop.events import (NEED_DATA, Answer, ConnectionClosed, MessageReceived,
                           ProtocolViolation)
from ..giop.header import HEADER_SIZE, MsgType
from ..giop.messages import (CloseConnection, KeyAddr, LocateReply, LocateRequest,
                             MessageError, Request, encode_message)
from ..conformance.wire import FLOOD_MESSAGES, Observation, Wire
from .layout import message_fields
from .mutators import MUTATOR_NAMES, MutationContext, mutate, target_profile

SENTINEL_ID = 0x7E570000       # request ids of the pipelining sentinels (and probes)
CLOSING_TYPES = (MsgType.CloseConnection, MsgType.MessageError)


# --------------------------------------------------------------------------
# Prediction: what a conforming server does with a case's bytes.
@dataclass
class Prediction:
    answers: int = 0           # messages the server sends back
    closes: bool = False       # it closes the connection
    partial: bool = False      # a message or fragment chain is left incomplete
    uncertain: bool = False    # a CancelRequest may or may not suppress a reply


def predict(messages) -> Prediction:
    p = Prediction()
    conn = GiopConnection(Role.SERVER, version=(1, 2))
    for data in messages:
        if p.closes:
            break
        conn.receive_data(data)
        while True:
            event = conn.next_event()
            if event is NEED_DATA:
                break
            if isinstance(event, MessageReceived):
                msg = event.message
                if isinstance(msg, Request):
                    p.answers += msg.response_flags != 0
                elif isinstance(msg, LocateRequest):
                    p.answers += 1
                elif msg.msg_type == MsgType.CancelRequest:
                    p.uncertain = True
                elif isinstance(msg, CloseConnection):
                    p.closes = True
                    break
            elif isinstance(event, ProtocolViolation):
                p.answers += bool(event.reply)
                if event.answer in (Answer.SEND_MESSAGE_ERROR_AND_CLOSE, Answer.CLOSE):
                    p.closes = True
                    break
            elif isinstance(event, ConnectionClosed):
                p.closes = True
                break
    if not p.closes:
        p.partial = conn.has_partial_message
    return p


def sends_closing_message(messages) -> bool:
    """Whether the case itself sends CloseConnection or MessageError (after
    which the server may close without further ado)."""
    return any(len(m) >= 8 and m[7] in CLOSING_TYPES for m in messages)


# --------------------------------------------------------------------------
@dataclass
class Case:
    index: int
    seed_name: str
    messages: list
    mutations: list
    prediction: Prediction | None = None
    batchable: bool = False
    tail: bool = False

    @property
    def path(self) -> str:
        return "+".join(sorted({m.path for m in self.mutations})) or "unmutated"

    @property
    def field_keys(self) -> set:
        """The mutated field paths without message and element indexes (one
        bug reached through the third fragment or the fifth is one finding)."""
        return {normalize_path(m.path) for m in self.mutations} or {"unmutated"}

    def to_json(self) -> dict:
        return {"index": self.index, "seed": self.seed_name,
                "mutations": [m.to_json() for m in self.mutations],
                "messages": [m.hex() for m in self.messages]}


def normalize_path(path: str) -> str:
    return re.sub(r"\[\d+\]", "[]", re.sub(r"^msg\[\d+\]\.", "", path))


@dataclass
class Verdict:
    """What one isolated run showed: ``kind`` is None (nothing wrong) or a
    finding kind: crash, hang, flood, closed, reset, memory."""
    kind: str | None
    details: dict = field(default_factory=dict)
    observation: Observation | None = None


# --------------------------------------------------------------------------
# The target: an address, maybe a process we started.
IOR_RE = re.compile(r"(IOR:[0-9A-Fa-f]+|corbaloc:\S+)")


class SpawnedTarget:
    """A target process the fuzzer starts from a command line and restarts
    after a finding; its IOR or corbaloc URL is read from its output."""

    def __init__(self, command: str, *, start_timeout: float = 30.0):
        self.command = command
        self.start_timeout = start_timeout
        self.process: subprocess.Popen | None = None
        self.address_text = ""
        self.restarts = 0
        self.baseline_rss = None

    def start(self) -> str:
        self.process = subprocess.Popen(shlex.split(self.command), stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, errors="replace")
        lines: queue.Queue = queue.Queue()

        def pump(stream):
            # Keep reading so the child never blocks on a full pipe.
            for line in stream:
                lines.put(line)
        threading.Thread(target=pump, args=(self.process.stdout,), daemon=True).start()
        deadline = time.monotonic() + self.start_timeout
        seen = []
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.1)
            except queue.Empty:
                if self.process.poll() is not None:
                    break
                continue
            seen.append(line)
            m = IOR_RE.search(line)
            if m:
                self.address_text = m.group(1)
                self.baseline_rss = None
                return self.address_text
        self.stop()
        raise PycdrError(f"the spawned target printed no IOR or corbaloc URL: "
                         f"{''.join(seen)[-500:]!r}")

    def exited(self):
        """None while running, else the exit code (negative: the signal)."""
        return None if self.process is None else self.process.poll()

    def rss(self) -> int | None:
        try:
            with open(f"/proc/{self.process.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024
        except (OSError, AttributeError):
            return None
        return None

    def stop(self) -> None:
        p = self.process
        if p is None:
            return
        if p.poll() is None:
            p.kill()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass
        for stream in (p.stdin, p.stdout):
            try:
                stream.close()
            except (OSError, AttributeError):
                pass
        self.process = None

    def restart(self) -> str:
        self.stop()
        self.restarts += 1
        return self.start()


def resolve(text: str):
    from ..conformance.target import resolve_target
    return resolve_target(text)


# --------------------------------------------------------------------------
@dataclass
class Stats:
    cases: int = 0
    pipelined: int = 0
    isolated: int = 0
    probes: int = 0
    restarts: int = 0
    findings: Counter = field(default_factory=Counter)
    coverage: Counter = field(default_factory=Counter)   # (type, version, mutator) -> n
    started: float = field(default_factory=time.monotonic)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def rate(self) -> float:
        return self.cases / self.elapsed if self.elapsed > 0 else 0.0


_TYPE_NAMES = {t.value: t.name for t in MsgType}


class Campaign:
    def __init__(self, target_text: str | None, *, seed: int = 0, spawn: str | None = None,
                 timeout: float = 1.0, probe_timeout: float = 1.0,
                 probe_interval: float = 2.0, rate: float | None = None, batch: int = 32,
                 rss_limit: int = 256 << 20, seeds=None, seed_sources=None, minimize=True,
                 on_finding=None, log=None):
        self.seed = seed
        self.spawned = SpawnedTarget(spawn) if spawn else None
        self.target_text = target_text
        if self.spawned is not None:
            self.target_text = self.spawned.start()
        self.target = resolve(self.target_text)
        self.timeout = timeout
        self.probe_timeout = probe_timeout
        self.probe_interval = probe_interval
        self.rate = rate
        self.batch_size = max(1, batch)
        self.rss_limit = rss_limit
        self.minimize = minimize
        self.on_finding = on_finding
        self.log = log or (lambda text: None)
        self.stats = Stats()
        self.findings: dict = {}           # (kind, path) -> Finding
        self.dead = False                  # the target is gone and cannot be restarted
        self._pipe: _Pipe | None = None
        self._last_probe = time.monotonic()
        self._recent: list[Case] = []
        self.last_received = b""
        self._last_tail: Case | None = None
        self.seeds = seeds if seeds is not None else (seed_sources or (lambda t: []))(self.target)
        if not self.seeds:
            raise PycdrError("no seeds: nothing to mutate")
        profile, ior = target_profile(self.target)
        self.ctx = MutationContext(self.seeds, self.target.object_key, profile, ior)
        self._fields = [[message_fields(m, s.body_types if k == 0 else None)
                         for k, m in enumerate(s.messages)] for s in self.seeds]

    # --- cases ---------------------------------------------------------------------
    def make_case(self, index: int) -> Case:
        rng = random.Random(f"{self.seed}:{index}")
        k = rng.randrange(len(self.seeds))
        seed = self.seeds[k]
        messages, mutations = mutate(seed.messages, rng, self.ctx, self._fields[k],
                                     seed.body_types)
        case = Case(index, seed.name, messages, mutations)
        case.prediction = predict(messages)
        p = case.prediction
        case.batchable = not (p.closes or p.partial or p.uncertain
                              or sends_closing_message(messages))
        # A case that leaves the connection waiting for bytes can still end a
        # batch (one that closes it cannot: the server may drop the replies
        # to the batch's requests still in progress).
        case.tail = p.partial and not (p.closes or p.uncertain
                                       or sends_closing_message(messages))
        return case

    def _cover(self, case: Case) -> None:
        first = case.messages[0] if case.messages else b""
        kind = _TYPE_NAMES.get(first[7], "invalid") if len(first) >= 8 else "short"
        version = f"{first[4]}.{first[5]}" if len(first) >= 8 else "?"
        for m in case.mutations or [None]:
            self.stats.coverage[(kind, version, m.mutator if m else "none")] += 1

    # --- running -------------------------------------------------------------------
    def run(self, *, max_cases: int | None = None, duration: float | None = None,
            start_index: int = 0, progress=None) -> Stats:
        index = start_index
        end_time = time.monotonic() + duration if duration else None
        pending: list[Case] = []
        while not self.dead:
            if max_cases is not None and index >= start_index + max_cases:
                break
            if end_time is not None and time.monotonic() >= end_time:
                break
            if self.rate:
                wait = self.stats.started + (index - start_index) / self.rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            case = self.make_case(index)
            index += 1
            self._cover(case)
            pipelining = self.batch_size > 1 and not self.rate
            if case.batchable and pipelining:
                pending.append(case)
                if len(pending) >= self.batch_size:
                    self._run_batch(pending)
                    pending = []
            elif case.tail and pipelining:
                self._run_batch(pending, tail=case)
                pending = []
            else:
                if pending:
                    self._run_batch(pending)
                    pending = []
                self._run_isolated_case(case)
            if time.monotonic() - self._last_probe >= self.probe_interval:
                self._periodic_probe()
            if progress is not None:
                progress(self)
        if pending and not self.dead:
            self._run_batch(pending)
        self._close_pipe()
        return self.stats

    def _run_batch(self, cases: list, tail: Case | None = None) -> None:
        """Cases on the reused connection, then a sentinel -- or, when a
        ``tail`` case (one that closes the connection or leaves it waiting)
        ends the batch, no sentinel and a new connection for the next batch."""
        if tail is not None:
            cases = cases + [tail]
        want = sum(c.prediction.answers for c in cases)
        try:
            if self._pipe is None:
                self._pipe = _Pipe(self.target.host, self.target.port, self.target.object_key)
            ok = self._pipe.run(b"".join(b"".join(c.messages) for c in cases), want,
                                self.timeout, sentinel=tail is None)
        except OSError:
            ok = False
        previous_tail = self._last_tail
        if ok:
            self.stats.cases += len(cases)
            self.stats.pipelined += len(cases)
            self._recent = cases[-4:]
            if tail is not None:
                self._close_pipe()
            self._last_tail = tail
            return
        self._last_tail = None
        if previous_tail is not None and self._probe() != "alive":
            # The target broke after the last batch's tail, whose effect was
            # not waited for: that case goes first.
            self.stats.cases -= 1
            cases = [previous_tail] + cases
        # Not as predicted: each case again, alone, with full detection -- on
        # a working target (a case of the batch may have broken it; the
        # isolated runs find which).
        self._close_pipe()
        if self._probe() != "alive" and not self.recover():
            return
        for case in cases:
            if self.dead:
                break
            self._run_isolated_case(case)

    def _close_pipe(self) -> None:
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None

    def _run_isolated_case(self, case: Case) -> None:
        self.stats.cases += 1
        self.stats.isolated += 1
        self._recent = (self._recent + [case])[-4:]
        verdict = self.check(case.messages, case.prediction)
        if verdict.kind is not None:
            self._record(case, verdict)

    def check(self, messages, prediction: Prediction | None = None, *,
              linger: float = 0.005) -> Verdict:
        """Send ``messages`` on a fresh connection and judge what happens."""
        p = prediction or predict(messages)
        obs = Observation()
        try:
            with Wire(self.target.host, self.target.port,
                      connect_timeout=self.probe_timeout) as wire:
                for data in messages:
                    if not wire.send(data):
                        break
                wire.observe(obs, want=p.answers, timeout=self.timeout if p.answers else 0.01,
                             linger=linger, sent=sum(map(len, messages)))
        except OSError as e:
            obs.connect_error = str(e)
        if obs.connect_error:
            return self._after_suspicion("unreachable", obs)
        if obs.flooded:
            return Verdict("flood", {"bytes": obs.total_received,
                                     "messages": len(obs.messages)}, obs)
        got_error = any(isinstance(e.message, (MessageError, CloseConnection))
                        for e in obs.messages)
        if len(obs.messages) > p.answers and linger < 0.1:
            # More than a conforming server sends: look longer for a flood.
            return self.check(messages, p, linger=0.5)
        if obs.closed and not got_error and not p.closes and not sends_closing_message(messages):
            return self._after_suspicion("reset" if obs.reset else "closed", obs)
        if obs.timed_out:
            return self._after_suspicion("no_answer", obs)
        return Verdict(None, {}, obs)

    def _after_suspicion(self, reason: str, obs: Observation) -> Verdict:
        """Is the target still there? Decide the finding kind."""
        status = self._probe()
        if status == "silent":
            # A dying process may still accept a connection and then drop it:
            # look again before calling it a hang.
            time.sleep(0.1)
            status = self._probe()
        details = {"observed": reason, "answers": len(obs.messages), "probe": status}
        if status == "alive":
            if reason in ("closed", "reset"):
                return Verdict(reason, details, obs)
            return Verdict(None, details, obs)
        if status.startswith("exited") or status == "refused":
            return Verdict("crash", details, obs)
        return Verdict("hang", details, obs)

    def _probe(self) -> str:
        """alive | exited(CODE) | refused | silent | memory(BYTES)."""
        self.stats.probes += 1
        self._last_probe = time.monotonic()
        if self.spawned is not None:
            code = self.spawned.exited()
            if code is not None:
                return f"exited({code})"
        try:
            with Wire(self.target.host, self.target.port,
                      connect_timeout=self.probe_timeout) as wire:
                wire.send(encode_message(LocateRequest(
                    request_id=SENTINEL_ID, target=KeyAddr(self.target.object_key))))
                obs = wire.observe(Observation(), want=1, timeout=self.probe_timeout)
        except OSError:
            if self.spawned is not None:
                time.sleep(0.05)
                code = self.spawned.exited()
                if code is not None:
                    return f"exited({code})"
            return "refused"
        if any(isinstance(e.message, LocateReply) for e in obs.messages):
            return "alive"
        if self.spawned is not None:
            code = self.spawned.exited()
            if code is not None:
                return f"exited({code})"
        return "silent"

    def _periodic_probe(self) -> None:
        status = self._probe()
        rss = self.spawned.rss() if self.spawned is not None else None
        if rss is not None:
            if self.spawned.baseline_rss is None:
                self.spawned.baseline_rss = rss
            elif rss - self.spawned.baseline_rss > self.rss_limit and self._recent:
                self._record(self._recent[-1], Verdict("memory", {
                    "rss": rss, "baseline": self.spawned.baseline_rss}))
                return
        if status != "alive" and self._recent:
            kind = "hang" if status == "silent" else "crash"
            self._record(self._recent[-1], Verdict(kind, {"probe": status, "periodic": True}))

    # --- findings ------------------------------------------------------------------
    def _record(self, case: Case, verdict: Verdict) -> None:
        from .findings import Finding, minimize
        self._close_pipe()
        keys = case.field_keys
        key = (verdict.kind, "+".join(sorted(keys)))
        duplicate = key in self.findings or any((verdict.kind, k) in self.findings
                                                for k in keys)
        self.stats.findings[verdict.kind] += 1
        self.log(f"case {case.index}: {verdict.kind} at {case.path} ({case.seed_name})")
        target_broken = verdict.kind in ("crash", "hang", "memory")
        if target_broken:
            self.recover()
        if duplicate or self.dead:
            return
        finding = Finding(verdict.kind, case.path, case, verdict.details, self.seed,
                          self.seed_of(case))
        self.findings[key] = finding
        if self.minimize:
            minimize(self, finding)
        if self.on_finding is not None:
            self.on_finding(finding)

    def seed_of(self, case: Case):
        for s in self.seeds:
            if s.name == case.seed_name:
                return s
        return None

    def recover(self) -> bool:
        """After a crash or hang: restart a spawned target; without --spawn
        the campaign ends unless the target answers again."""
        if self.spawned is not None:
            self.target_text = self.spawned.restart()
            self.target = resolve(self.target_text)
            self.ctx.object_key = self.target.object_key
            self.stats.restarts += 1
            return True
        if self._probe() == "alive":
            return True
        self.dead = True
        return False

    def reproduces(self, kind: str, messages) -> bool:
        """Whether ``messages`` alone trigger a finding of ``kind`` (the target
        is restarted first if the last test broke it)."""
        if self.spawned is not None and self._probe() != "alive":
            self.recover()
        verdict = self.check(messages)
        self.last_received = verdict.observation.received if verdict.observation else b""
        if verdict.kind in ("crash", "hang", "memory"):
            self.recover()
        return verdict.kind == kind

    def close(self) -> None:
        self._close_pipe()
        if self.spawned is not None:
            self.spawned.stop()


class _Pipe:
    """A reused connection for pipelined batches."""

    def __init__(self, host, port, object_key):
        self.sock = socket.create_connection((host, port), timeout=3.0)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.key = object_key
        self.conn = GiopConnection(Role.CLIENT, version=(1, 3), lenient=True,
                                   check_request_ids=False)
        self.sentinels = 0

    def run(self, data: bytes, want: int, timeout: float, *, sentinel: bool = True) -> bool:
        """Send a batch and its sentinel; True when exactly the predicted
        answers and the sentinel's came back and the connection stays up.
        Without a sentinel (a batch that ends the connection), True when the
        predicted answers came back."""
        self.sentinels += 1
        sentinel_id = SENTINEL_ID + (self.sentinels & 0xFFFF)
        if sentinel:
            data += encode_message(LocateRequest(request_id=sentinel_id,
                                                 target=KeyAddr(self.key)))
            want += 1
        self.sock.sendall(data)
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
            elif isinstance(event, (ProtocolViolation, ConnectionClosed)):
                return n, seen, True

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
