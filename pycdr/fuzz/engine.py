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
  that did not go as predicted).  With a target the fuzzer can restart
  (``--spawn``), up to ``connections`` of them go at once, each on its own
  connection; any that does not go as predicted runs again alone.

While the target works on what was sent, the next cases are made (they
depend on their index only), so the fuzzer and the target use a core each.

Detection on an isolated case: a close or reset without MessageError, fewer
answers than predicted within the timeout, answers beyond them (then a
longer look for a flood), and after every such case a liveness probe (a
fresh connection and a LocateRequest); with ``--spawn`` the target's exit
(and signal) and its RSS growth too.  A probe also runs every
``probe_interval`` seconds.  Only the target given is ever contacted.
"""

from __future__ import annotations

import random
import re
import shlex
import socket
import subprocess
import threading
import queue
import time
from collections import Counter, deque
from dataclasses import dataclass, field

from ..errors import PycdrError
from ..giop.connection import GiopConnection, Role
from ..giop.events import (NEED_DATA, Answer, ConnectionClosed, MessageReceived,
                           ProtocolViolation)
from ..giop.header import MsgType
from ..giop.messages import (CloseConnection, KeyAddr, LocateReply, LocateRequest,
                             MessageError, Request, encode_message)
from ..conformance.wire import FLOOD_MESSAGES, Observation
from ..orb.tls import DEFAULT_TLS, TLSOptions, open_socket
from .mutators import MutationContext, mutate, target_profile

SENTINEL_ID = 0x7E570000       # request ids of the pipelining sentinels (and probes)
CLOSING_TYPES = (MsgType.CloseConnection, MsgType.MessageError)
# How long a case's connection is watched after the answers it was to get
# (a close, unsolicited messages); with no answer due, twice as long.
LINGER = 0.005


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


def suspicion(obs: Observation, p: Prediction, messages, *,
              more_answers: bool = True) -> str | None:
    """What one connection's observation shows beyond what a conforming
    server does with ``messages``: None, or unreachable, flood,
    more_answers (when ``more_answers``), reset, closed or no_answer."""
    if obs.connect_error:
        return "unreachable"
    if obs.flooded:
        return "flood"
    if more_answers and len(obs.messages) > p.answers:
        return "more_answers"
    got_error = any(isinstance(e.message, (MessageError, CloseConnection))
                    for e in obs.messages)
    if obs.closed and not got_error and not p.closes and not sends_closing_message(messages):
        return "reset" if obs.reset else "closed"
    if obs.timed_out:
        return "no_answer"
    return None


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
        started = threading.Event()

        def pump(stream):
            # Keep reading so the child never blocks on a full pipe; once its
            # address is known, what it prints (a reference ORB logs every bad
            # message) is dropped, not piled up for the whole campaign.
            for line in stream:
                if not started.is_set():
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
                started.set()
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


def resolve(text: str, tls: TLSOptions = DEFAULT_TLS):
    from ..conformance.target import resolve_target
    return resolve_target(text, tls=tls)


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
                 connections: int = 8,
                 rss_limit: int = 256 << 20, seeds=None, seed_sources=None, minimize=True,
                 on_finding=None, log=None, tls: TLSOptions = DEFAULT_TLS):
        self.seed = seed
        self.tls = tls                 # TLS options, for targets that speak TLS
        self.spawned = SpawnedTarget(spawn) if spawn else None
        self.target_text = target_text
        if self.spawned is not None:
            self.target_text = self.spawned.start()
        self.target = resolve(self.target_text, tls)
        self.timeout = timeout
        self.probe_timeout = probe_timeout
        self.probe_interval = probe_interval
        self.rate = rate
        self.batch_size = max(1, batch)
        self.connections = max(1, connections)
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
        # Cases made ahead, while the target works on the ones sent (the
        # fuzzer's CPU and the target's then overlap): see _make_ahead.
        self._ahead: deque[Case] = deque()
        self._taken: int | None = None       # index of the case in hand; None outside run()
        self._ahead_end: int | None = None   # index where the current run stops
        self.seeds = seeds if seeds is not None else (seed_sources or (lambda t: []))(self.target)
        if not self.seeds:
            raise PycdrError("no seeds: nothing to mutate")
        profile, ior = target_profile(self.target)
        self.ctx = MutationContext(self.seeds, self.target.object_key, profile, ior)

    # --- cases ---------------------------------------------------------------------
    def make_case(self, index: int) -> Case:
        rng = random.Random(f"{self.seed}:{index}")
        k = rng.randrange(len(self.seeds))
        seed = self.seeds[k]
        messages, mutations = mutate(seed.messages, rng, self.ctx, seed.body_types)
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
        self._ahead.clear()
        self._taken = start_index - 1
        self._ahead_end = start_index + max_cases if max_cases is not None else None
        pending: list[Case] = []       # batchable cases for the reused connection
        # Cases that need a connection each: those the target is to close
        # and those whose connection stays open (their groups wait out the
        # linger once, see _run_isolated_group).
        solo = {True: [], False: []}
        while not self.dead:
            if max_cases is not None and index >= start_index + max_cases:
                break
            if end_time is not None and time.monotonic() >= end_time:
                break
            if self.rate:
                wait = self.stats.started + (index - start_index) / self.rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            case = self._take_case(index)
            index += 1
            self._cover(case)
            # Cases are independent (each its own request ids, seeds and
            # connection effects), so batches and groups need not keep the
            # index order: a case that needs its own connection does not cut
            # the batch short.  --rate sends them one at a time, in order.
            pipelining = self.batch_size > 1 and not self.rate
            # Several cases on their own connections at once only when the
            # target can be restarted: if they break it, each is run again
            # alone to tell which did; a target we cannot restart gets one
            # case at a time, so that the one breaking it is known.
            grouping = pipelining and self.spawned is not None
            if case.batchable and pipelining:
                pending.append(case)
                if len(pending) >= self.batch_size:
                    self._run_batch(pending)
                    pending = []
            elif case.tail and pipelining:
                self._run_batch(pending, tail=case)
                pending = []
            elif grouping:
                closes = case.prediction.closes
                solo[closes].append(case)
                if len(solo[closes]) >= self.connections:
                    self._run_isolated_group(solo[closes])
                    solo[closes] = []
            else:
                self._run_isolated_case(case)
            if time.monotonic() - self._last_probe >= self.probe_interval:
                self._periodic_probe()
            if progress is not None:
                progress(self)
        if pending and not self.dead:
            self._run_batch(pending)
        for group in solo.values():
            if group and not self.dead:
                self._run_isolated_group(group)
        self._close_pipe()
        self._ahead.clear()
        self._taken = self._ahead_end = None
        return self.stats

    def _take_case(self, index: int) -> Case:
        """Case ``index``: made ahead already, or now."""
        self._taken = index
        if self._ahead and self._ahead[0].index == index:
            return self._ahead.popleft()
        self._ahead.clear()
        return self.make_case(index)

    def _make_ahead(self, sent: int) -> None:
        """Called between sending bytes and reading the answer: make as many
        of the next cases as were just sent (up to two batches ahead), so the
        target's processing and ours overlap instead of taking turns.  Cases
        depend on their index only, so making them early changes nothing."""
        if self._taken is None:
            return       # not inside run()
        limit = 2 * self.batch_size
        for _ in range(sent):
            index = self._ahead[-1].index + 1 if self._ahead else self._taken + 1
            if len(self._ahead) >= limit or \
                    (self._ahead_end is not None and index >= self._ahead_end):
                return
            self._ahead.append(self.make_case(index))

    def _run_batch(self, cases: list, tail: Case | None = None) -> None:
        """Cases on the reused connection, then a sentinel -- or, when a
        ``tail`` case (one that closes the connection or leaves it waiting)
        ends the batch, no sentinel and a new connection for the next batch."""
        if tail is not None:
            cases = cases + [tail]
        want = sum(c.prediction.answers for c in cases)
        try:
            if self._pipe is None:
                self._pipe = _Pipe(self.target.host, self.target.port, self.target.object_key,
                                   self.target.tls)
            ok = self._pipe.run(b"".join(b"".join(c.messages) for c in cases), want,
                                self.timeout, sentinel=tail is None,
                                while_waiting=lambda: self._make_ahead(len(cases)))
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
        verdict = self.check(case.messages, case.prediction,
                             while_waiting=lambda: self._make_ahead(1))
        if verdict.kind is not None:
            self._record(case, verdict)

    def check(self, messages, prediction: Prediction | None = None, *,
              linger: float = LINGER, while_waiting=None) -> Verdict:
        """Send ``messages`` on a fresh connection and judge what happens
        (``while_waiting`` is called once they are sent, before the answer is
        read)."""
        p = prediction or predict(messages)
        obs = Observation()
        try:
            with self.target.wire(connect_timeout=self.probe_timeout) as wire:
                for data in messages:
                    if not wire.send(data):
                        break
                if while_waiting is not None:
                    while_waiting()
                wire.observe(obs, want=p.answers,
                             timeout=self.timeout if p.answers else LINGER * 2,
                             linger=linger, sent=sum(map(len, messages)))
        except OSError as e:
            obs.connect_error = str(e)
        reason = suspicion(obs, p, messages, more_answers=linger < 0.1)
        if reason == "flood":
            return Verdict("flood", {"bytes": obs.total_received,
                                     "messages": len(obs.messages)}, obs)
        if reason == "more_answers":
            # More than a conforming server sends: look longer for a flood.
            return self.check(messages, p, linger=0.5)
        if reason is not None:
            return self._after_suspicion(reason, obs)
        return Verdict(None, {}, obs)

    def _run_isolated_group(self, cases: list) -> None:
        """Cases that need a connection each, all sent at once (one connection
        per case) and their answers read after, so the target works on all
        of them while we read.  A case whose connection shows anything but
        what a conforming server does is run again alone with the full
        detection of check() -- first on a working target: the case that
        broke it may be another one of the group (or the last tail)."""
        if len(cases) == 1:
            self._run_isolated_case(cases[0])
            return
        suspects = []
        wires = []
        try:
            for case in cases:
                try:
                    wire = self.target.wire(connect_timeout=self.probe_timeout)
                except OSError:
                    wires.append(None)
                    continue
                wires.append(wire)
                for data in case.messages:
                    if not wire.send(data):
                        break
            self._make_ahead(len(cases))
            # First every case's answers; then, all at once, the linger that
            # check() gives each: what comes after them (a close, unsolicited
            # messages) during at least LINGER from when they were in.
            deadline = time.monotonic() + self.timeout
            observations = []
            for case, wire in zip(cases, wires):
                p = case.prediction
                obs = Observation()
                observations.append(obs)
                if wire is None:
                    obs.connect_error = "refused"
                    continue
                try:
                    wire.observe(obs, want=p.answers,
                                 timeout=max(deadline - time.monotonic(), 0.001)
                                 if p.answers else LINGER * 2, sent=sum(map(len, case.messages)))
                except OSError as e:
                    obs.connect_error = str(e)
            linger_end = time.monotonic() + LINGER
            for case, wire, obs in zip(cases, wires, observations):
                if wire is None or wire.eof or obs.connect_error or obs.timed_out \
                        or obs.flooded:
                    continue
                try:
                    # Past linger_end, still one read: what came meanwhile.
                    wire.observe(obs, want=case.prediction.answers, timeout=LINGER * 2,
                                 linger=max(linger_end - time.monotonic(), 0.001),
                                 sent=sum(map(len, case.messages)))
                except OSError as e:
                    obs.connect_error = str(e)
            for case, obs in zip(cases, observations):
                if suspicion(obs, case.prediction, case.messages) is None:
                    self.stats.cases += 1
                    self.stats.isolated += 1
                else:
                    suspects.append(case)
        finally:
            for wire in wires:
                if wire is not None:
                    wire.close()
        self._recent = (self._recent + cases)[-4:]
        if not suspects:
            self._last_tail = None
            return
        previous_tail = self._last_tail
        self._last_tail = None
        if self._probe() != "alive":
            # Broken: which case did it is not known -- every case of the
            # group again, alone (after the last tail, if there was one).
            counted = len(cases) - len(suspects)
            self.stats.cases -= counted
            self.stats.isolated -= counted
            suspects = cases
            if previous_tail is not None:
                self.stats.cases -= 1
                suspects = [previous_tail] + suspects
            if not self.recover():
                return
        for case in suspects:
            if self.dead:
                break
            self._run_isolated_case(case)

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
            with self.target.wire(connect_timeout=self.probe_timeout) as wire:
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
            self.target = resolve(self.target_text, self.tls)
            self.ctx.object_key = self.target.object_key
            self.ctx.profile, self.ctx.ior = target_profile(self.target)
            # Cases made ahead hold the old object key and address.
            self._ahead.clear()
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

    def __init__(self, host, port, object_key, tls=None):
        self.sock = open_socket(host, port, tls, timeout=3.0)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.key = object_key
        self.conn = GiopConnection(Role.CLIENT, version=(1, 3), lenient=True,
                                   check_request_ids=False)
        self.sentinels = 0

    def run(self, data: bytes, want: int, timeout: float, *, sentinel: bool = True,
            while_waiting=None) -> bool:
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
            elif isinstance(event, (ProtocolViolation, ConnectionClosed)):
                return n, seen, True

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
