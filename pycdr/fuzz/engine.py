"""The campaign loop.

Case ``i`` of a run with ``--seed S`` is derived from ``random.Random(f"{S}:{i}")``
alone (which seed, which mutations), so any case can be rebuilt from the seed
and its index.  A case's messages go to the target in one of two ways:

- pipelined: cases whose framing the fuzzer can predict (every message whole,
  no fragment chain left open, no close expected) share one connection, a
  batch at a time, closed by a LocateRequest "sentinel"; the number of
  answers is predicted by pycdr's own sans-I/O GIOP connection (the reference
  ORB's logic), so waiting stops as soon as they are in.  After batches that
  did not go as predicted, pipelining pauses (a target that answers otherwise
  is not pipelined for long);
- in groups: every other case (and every case while pipelining pauses) on a
  connection of its own, up to ``connections`` at once in a sliding window.

Waits are learned from the target's own answer times (a high percentile
times a factor, with a floor, at most ``timeout``); no answer is waited for
where the bytes end inside a message by the headers' own sizes (a target may
rightly wait for the rest).  While the target works, the next cases are made.

What a connection shows beyond what a conforming server does (no answer, a
close without MessageError, answers beyond the predicted ones, a flood) leads
to one look at the target's health per group or batch: probes on fresh
connections, a LocateRequest (the ORB core) and a Request (``_non_existent``,
or an --idl operation: past the core), and when either is silent both again
with the longest wait.  A close in answer to a malformed message is an
outcome counted against the spec, not a finding.  Probes also run every
``probe_interval`` seconds (alternating the two kinds), and under --spawn the
target's exit, RSS growth, CPU while nothing is sent to it (a spin) and the
CPU each case costs it (pycdr.fuzz.cost: a case past 100x the median) are
watched.

Attribution: when the target is broken (crash, hang, memory, spin), floods or
costs too much CPU, the cases in flight since it last answered a probe are
the suspects.  A finding
is *confirmed* only when one case, alone, does the same against a fresh
target (under --spawn restarted and answering) REPRODUCTIONS times in a row
after minimization (the run that blamed it the first of them when
minimization left it whole); the suspect whose connection showed it is
tried alone first, then the others together and narrowed by delta
debugging (such searches take at most SEARCH_SHARE of the campaign's time,
see there).  Otherwise the finding is kept *unconfirmed*, listing every
case in flight.  Under --spawn a standby process is started beside the
target, so a restart takes it at once (see SpawnedTarget).  A finding is one
fault (see _fault): a case that does a confirmed one again is listed under
it.  A defect a group logged beside another breakage that no case did alone
is searched for on its own (it would otherwise be hidden by the breakage).
Only the target given is ever contacted (under --callback the campaign also
listens, for the target to contact it: pycdr.fuzz.callback).
"""

from __future__ import annotations

import random
import time
from collections import Counter, deque
from dataclasses import dataclass, field

from ..errors import PycdrError
from ..conformance.wire import Observation
from ..orb.tls import DEFAULT_TLS, TLSOptions
from .callback import CALLBACK_SETTLE, CallOuts
from .threads import DeadThreads
from .case import _TYPE_NAMES, Case, Verdict, trigger_location, trigger_signature
from .cost import CaseCost
from .findings import Finding, ddmin, known_hit, minimize
from .learning import Learning, answers_by_case
from .health import (BROKEN, BROKEN_BY_STATUS, LOG_SETTLE,
                     SPIN_WINDOW, TIMEOUT_FLOOR, Latency, TargetHealth)
from .mutators import MutationContext, mutate, target_profile
from .prediction import Prediction, framing, predict, suspicion
from .target import SpawnedTarget, resolve
from .window import FIRST_BATCH, LINGER, Batches, Window, _Pipe

# A search's look for a spin: shorter than SPIN_CONFIRM (see _reproduces_together).
SEARCH_SPIN_CONFIRM = 0.1
# A finding is confirmed when its (minimized) case alone does it this many
# times in a row, each time against a fresh target.
REPRODUCTIONS = 3
# Runs of the cases in flight (together, then fewer) spent looking for
# the one that broke the target when several were in flight.
ATTRIBUTION_TESTS = 24
# After this many searches among the cases in flight that found no case
# doing a kind of breakage alone, its next ones are not searched (the cases
# in flight are listed, the target restarted): a breakage that only many
# cases together bring about (omniORB 4.2.5 spins after a group with
# several ProfileAddr floods, never after one alone) would cost each time
# ATTRIBUTION_TESTS runs of up to a whole group.
FRUITLESS_SEARCHES = 2
# Searches among the cases in flight take at most this share of the
# campaign's time so far (one starts only while under it): a target that
# breaks every few hundred cases in ways no case does alone (or in many
# ways: omniORB 4.2.5 spins after single Requests, Fragments and
# CancelRequests of several kinds) would otherwise be searched more than
# fuzzed.  A search starts only when what it is expected to take fits in
# the share (see _search_estimate), but the first for each kind of breakage
# other than a spin; otherwise the breakage is kept unconfirmed with its
# cases in flight.
SEARCH_SHARE = 0.25
MAX_UNCONFIRMED = 64
# Cases judged together as a group (on up to --connections connections at
# once).  A group whose every case is known to be its (pipelining pauses past
# its last) is sent once it holds --connections cases, its further cases made
# as connections free up, while the target works on the ones sent -- not all
# made first, the target idle meanwhile (a campaign's first group: hundreds
# of milliseconds).  It is judged as a whole all the same.
GROUP_CASES = 1024
# A memory finding's (minimized) input is at most this many bytes.
MEMORY_INPUT = 64 << 10
# How long a replayed case's memory growth is waited for.
MEMORY_SETTLE = 0.3
# Kinds after which a spawned target is restarted: its growth is judged
# from its start, a spinning one spins on, a logged defect may have killed
# a thread of it; after an expensive case, as for the confirmation's runs,
# the next look starts from a fresh target.
RESTART_AFTER = ("memory", "spin", "exception", "cpu")
# At most this many batchable cases go as groups after failed batches.
MAX_PIPE_PAUSE = 4096


# --------------------------------------------------------------------------
@dataclass
class Stats:
    cases: int = 0
    pipelined: int = 0
    isolated: int = 0
    probes: int = 0
    restarts: int = 0
    findings: Counter = field(default_factory=Counter)    # breakages seen, per kind
    # Closes judged against the spec (allowed after a malformed message, but
    # not without MessageError): outcomes, not findings.
    outcomes: Counter = field(default_factory=Counter)
    slow_probes: int = 0
    coverage: Counter = field(default_factory=Counter)   # (type, version, mutator) -> n
    started: float = field(default_factory=time.monotonic)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def rate(self) -> float:
        return self.cases / self.elapsed if self.elapsed > 0 else 0.0


class Campaign(TargetHealth, Learning, CallOuts, DeadThreads, CaseCost, Window):
    def __init__(self, target_text: str | None, *, seed: int = 0, spawn: str | None = None,
                 timeout: float = 1.0, probe_timeout: float = 1.0,
                 probe_interval: float = 2.0, rate: float | None = None, batch: int = 32,
                 connections: int = 32,
                 rss_limit: int = 256 << 20, seeds=None, seed_sources=None, minimize=True,
                 on_finding=None, on_unconfirmed=None, probe_request=None,
                 request_probes: bool = True, standby: bool = True, log=None,
                 tls: TLSOptions = DEFAULT_TLS, coverage: str = "none",
                 corpus_dir: str | None = None, stop_on_finding: bool = False,
                 callback: bool = False, callback_port: int = 0):
        self.seed = seed
        self.stop_on_finding = stop_on_finding   # the campaign ends at its first finding
        self.tls = tls                 # TLS options, for targets that speak TLS
        self._setup_cost(REPRODUCTIONS)  # (what cases cost a --spawn target: pycdr.fuzz.cost)
        # Feedback (see pycdr.fuzz.learning): under sancov, each target
        # process's own edge map.
        per_launch = self._setup_feedback(coverage, spawn, corpus_dir)
        if self.agent is not None:
            # The agent's port is the target process's: one process at a time.
            standby = False
        # (standby: the next process started while the current one runs, see SpawnedTarget)
        self.spawned = SpawnedTarget(spawn, standby=standby, per_launch=per_launch) \
            if spawn else None
        self.target_text = target_text
        if self.spawned is not None:
            try:
                self.target_text = self.spawned.start()
            except BaseException:
                self._close_feedback()
                raise
            self._target_started()              # (under sancov: its edge map)
            self._note_start_threads()          # (a JVM's: see pycdr.fuzz.threads)
        self.target = resolve(self.target_text, tls)
        self.timeout = timeout
        self.probe_timeout = probe_timeout
        # The longest wait, after a first silent probe, before calling it a hang.
        self.hang_timeout = max(timeout, probe_timeout)
        self.latency = Latency(timeout)
        self.probe_latency = {"locate": Latency(probe_timeout), "request": Latency(probe_timeout)}
        self.baseline: dict = {}            # probe kind -> median answer time at the start
        # target -> the Request probe's bytes (default, or None: _non_existent)
        self.probe_request = probe_request
        self.request_probes = request_probes
        self._probe_turn = 0
        self.notes: list[str] = []
        self.probe_interval = probe_interval
        self.rate = rate
        self.batch_size = max(1, batch)
        self.connections = max(1, connections)
        self.rss_limit = rss_limit
        self.minimize = minimize
        self.on_finding = on_finding
        self.on_unconfirmed = on_unconfirmed
        self.log = log or (lambda text: None)
        self.stats = Stats()
        self.findings: dict = {}           # fault (see _fault) -> confirmed Finding
        self.unconfirmed: list = []        # Findings no case in flight did alone
        # Cases sent since the target last answered a probe (the suspects
        # when it turns out broken).
        self._in_flight: deque[Case] = deque(maxlen=4 * GROUP_CASES)
        self._attributed = 0               # confirmed (or known) findings so far
        self._fruitless: Counter = Counter()   # kind -> searches that found no culprit
        self._searching = 0.0              # seconds spent in searches among cases in flight
        self._searches = 0                 # ... in this many
        self._searched_kinds: set = set()
        self._pipe_failures = 0            # batches in a row not as predicted
        self._pipe_pause = 0               # cases to send as groups before pipelining again
        self._batch_now = min(FIRST_BATCH, self.batch_size)   # the next batch's size
        self._needs_restart = False
        self.dead = False                  # the target is gone and cannot be restarted
        self._pipe: _Pipe | None = None
        self._last_probe = time.monotonic()
        self.last_received = b""
        self.last_verdict: Verdict | None = None
        # Cases made ahead, while the target works on the ones sent (the
        # fuzzer's CPU and the target's then overlap): see _make_ahead.
        self._ahead: deque[Case] = deque()
        self._taken: int | None = None       # index of the case in hand; None outside run()
        self._ahead_end: int | None = None   # index where the current run stops
        self._attributing = 0                # inside _attribute (no cases made ahead)
        self.seeds = seeds if seeds is not None else (seed_sources or (lambda t: []))(self.target)
        if not self.seeds:
            raise PycdrError("no seeds: nothing to mutate")
        profile, ior = target_profile(self.target)
        self.ctx = MutationContext(self.seeds, self.target.object_key, profile, ior)
        try:
            self._setup_callback(callback, callback_port)     # (--callback: pycdr.fuzz.callback)
            self._calibrate()
            self._start_feedback()
        except BaseException:
            self.close()               # (a spawned target is stopped)
            raise

    # --- cases ---------------------------------------------------------------------
    def make_case(self, index: int) -> Case:
        self._plant_token(index)
        reads = self.ctx.address_reads
        if self.feedback != "none":
            case = self._feedback_case(index)
            messages = case.messages
        else:
            rng = random.Random(f"{self.seed}:{index}")
            seed = self.seeds[rng.randrange(len(self.seeds))]
            messages, mutations = mutate(seed.messages, rng, self.ctx, seed.body_types)
            case = Case(index, seed.name, messages, mutations)
        case.addressed = self.ctx.address_reads != reads
        case.prediction = predict(messages)
        case.batchable, case.tail = framing(case.prediction, messages)
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
        # With feedback, groups of the feedback's size (the corpus learns between
        # them); batches under state feedback, whose answers go back to their
        # cases by request id, and under sancov, whose edges are the whole
        # target's, a batch's as a group's (see _run_batch).
        group_cases = GROUP_CASES if self.feedback == "none" else self.feedback_group
        # Batchable cases for the reused connection (under state feedback, no
        # two of a batch with a request id in common).
        batches = Batches(distinct_ids=self.feedback == "state")
        group: list[Case] = []         # cases that need a connection each

        def ended() -> bool:
            return self.dead or (max_cases is not None and index >= start_index + max_cases) \
                or (self.stop_on_finding and bool(self.findings)) \
                or (end_time is not None and time.monotonic() >= end_time)

        def feed() -> Case | None:
            """The group's next case, made while the target works on the
            ones sent (see GROUP_CASES); None once the group is whole."""
            nonlocal index
            if len(group) >= group_cases or ended():
                return None
            case = self._take_case(index)
            index += 1
            self._cover(case)
            self._grouped(case, group)
            self._sent([case])
            return case

        while not ended():
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
            concurrent = self.batch_size > 1 and not self.rate
            # Pipelining pays while batches go as predicted; after a batch
            # that did not, the next ones go as groups for a while (longer
            # after each failure in a row: a target that answers otherwise
            # than pycdr's prediction is not pipelined for long).
            pipelining = concurrent and self._pipe_pause == 0 and self.agent is None
            if self.feedback == "state" and pipelining:
                # Only cases whose answers can be told from the others': no
                # request id twice (answers_by_case; one another case of the
                # batch has: held for a later one, see Batches).
                ids = case.prediction.request_ids
                batchable = case.batchable and len(set(ids)) == len(ids) and batches.add(case)
                tail = False
            else:
                batchable, tail = case.batchable, case.tail
                if batchable and pipelining:
                    batches.add(case)
            if batchable and pipelining:
                if len(batches) >= self._batch_now:
                    self._run_batch(batches.take())
            elif tail and pipelining:
                self._run_batch(batches.take(), tail=case)
            elif concurrent:
                self._grouped(case, group)
                if len(group) >= group_cases:
                    self._run_group(group)
                    group = []
                elif len(group) >= self.connections and self.feedback in ("none", "state") \
                        and self._pipe_pause >= group_cases - len(group):
                    # Every case up to the group's last goes to it (pipelining
                    # pauses that long): sent from now on, the rest made meanwhile.
                    self._run_group(group, more=feed)
                    group = []
            else:
                self._run_isolated_case(case)
            if time.monotonic() - self._last_probe >= self.probe_interval:
                self._periodic_probe()
            if progress is not None:
                progress(self)
        while len(batches) and not self.dead:
            self._run_batch(batches.take())
        if group and not self.dead:
            self._run_group(group)
        self._rerun_new_states()            # (under state feedback: see there)
        self._close_pipe()
        self._ahead.clear()
        self._taken = self._ahead_end = None
        return self.stats

    def _grouped(self, case: Case, group: list) -> None:
        """``case`` goes to the group (while pipelining pauses, a batchable
        case so sent counts against the pause)."""
        if case.batchable or case.tail:
            self._pipe_pause = max(0, self._pipe_pause - 1)
        group.append(case)

    def _take_case(self, index: int) -> Case:
        """Case ``index``: made ahead already, or now."""
        self._taken = index
        if self._ahead and self._ahead[0].index == index:
            return self._ahead.popleft()
        self._ahead.clear()
        return self.make_case(index)

    def _make_ahead(self, sent: int) -> int:
        """Called between sending bytes and reading the answer: make as many
        of the next cases as were just sent (up to two batches or a group
        ahead), so the target's processing and ours overlap instead of
        taking turns.  Cases depend on their index only, so making them
        early changes nothing.  How many were made."""
        if self._taken is None or self._attributing:
            # Not inside run(); or replaying cases in flight, between
            # restarts (under --spawn with a standby the target's address
            # changes at each: the cases made ahead that hold it would be
            # made again, see _restart).
            return 0
        limit = max(2 * self.batch_size, GROUP_CASES)
        for made in range(sent):
            index = self._ahead[-1].index + 1 if self._ahead else self._taken + 1
            if len(self._ahead) >= limit or \
                    (self._ahead_end is not None and index >= self._ahead_end):
                return made
            self._ahead.append(self.make_case(index))
        return sent

    def _run_batch(self, cases: list, tail: Case | None = None) -> None:
        """Cases on the reused connection, then a sentinel -- or, when a
        ``tail`` case (one that closes the connection or leaves it waiting)
        ends the batch, no sentinel and a new connection for the next batch."""
        if tail is not None:
            cases = cases + [tail]
        want = sum(c.prediction.answers for c in cases)
        self._sent(cases)
        rss_before = self.spawned.rss() if self.spawned is not None else None
        logged, called = self._logged_count(), self._callout_mark()
        cost_mark = self._cost_mark()
        self._before_group()
        try:
            if self._pipe is None:
                self._pipe = _Pipe(self.target.host, self.target.port, self.target.object_key,
                                   self.target.tls)
            answers = [] if self.feedback == "state" else None
            ok = self._pipe.run(b"".join(b"".join(c.messages) for c in cases), want,
                                self.answer_timeout(), sentinel=tail is None,
                                while_waiting=lambda: self._make_ahead(len(cases)),
                                answers=answers)
        except OSError:
            ok = False
        # (Under sancov, the batch's edges: its sentinel's are known from the first.)
        group_features = self._group_features()
        states = None
        if ok and answers is not None:
            states = answers_by_case(cases, answers)
            ok = states is not None      # an answer that names no case: judged case by case
        if ok and rss_before is not None and self._rss_growth(rss_before) is not None:
            ok = False           # one of them made the target grow: which, alone
        if ok and (self._logged_defects(logged) or self._callouts(called)):
            ok = False           # (the same: which one, on a connection of its own)
        if ok and self._group_cost(cost_mark, cases) is not None:
            ok = False           # (the same: the group's cost is looked at per case)
        if ok:
            self._pipe_failures = 0
            self._batch_now = min(self.batch_size, 2 * self._batch_now)
            self.stats.cases += len(cases)
            self.stats.pipelined += len(cases)
            if tail is not None:
                self._close_pipe()
            if states is not None:
                self._learn_pipelined(cases, states)
            elif group_features is not None:
                self._learn_group(cases, None, group_features)
            return
        self._close_pipe()
        self._pipe_failures += 1
        self._batch_now = min(FIRST_BATCH, self.batch_size)
        # (x4 after each failure in a row past the first: a target that
        # never answers as predicted, omniORB, pays a few failed batches.)
        self._pipe_pause = min(MAX_PIPE_PAUSE,
                               self.batch_size << (2 * self._pipe_failures - 1))
        if len(cases) > 1:
            # Not as predicted: the cases again on a connection each (a case
            # may have closed the connection under the others, or flooded
            # it), the target's health looked at after them whatever their
            # connections show -- one look for both runs: a target the batch
            # broke shows it to the group's connections and probes alike.
            # (They go in flight again with the group.)
            for _ in cases:
                self._in_flight.pop()
            self._run_group(cases, look=True)
            return
        broken = self._broken()
        if broken is not None:
            self.stats.cases += len(cases)
            self.stats.isolated += len(cases)
            culprit = self._attribute(*broken)
            if culprit is not None and not self.dead:
                self._run_group([c for c in cases if c is not culprit], again=True)
            return
        # Not as predicted, the target fine: the case again on a connection
        # of its own.
        self._run_group(cases)

    def _close_pipe(self) -> None:
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None

    def _run_isolated_case(self, case: Case) -> None:
        self.stats.cases += 1
        self.stats.isolated += 1
        self._sent([case])
        self._before_case()
        verdict = self.check(case.messages, case.prediction, linger=self.linger,
                             while_waiting=lambda: self._make_ahead(1))
        if verdict.kind is None:         # (a broken target showed part of what it did)
            self._learn(case, verdict.observation)
            self._add_cost(self.last_cost)
        if verdict.kind is not None:
            # (A cost was measured for this case alone: the others in flight are no suspects.)
            self._attribute(verdict.kind, verdict.details, first=case,
                            in_flight=[case] if verdict.kind == "cpu" else None)

    def check(self, messages, prediction: Prediction | None = None, *,
              linger: float = LINGER, while_waiting=None, look_after: bool = False,
              settle: float = 0.0) -> Verdict:
        """Send ``messages`` on a fresh connection and judge what happens
        (``while_waiting`` is called once they are sent, before the answer is
        read).  The target's health is looked at when the connection showed
        something a conforming server does not do, or always with
        ``look_after`` (a case replayed to see whether it breaks the target);
        its memory growth for up to ``settle`` seconds."""
        p = prediction or predict(messages)
        obs = Observation()
        rss_before = self.spawned.rss() if self.spawned is not None else None
        logged, called = self._logged_count(), self._callout_mark()
        cost_mark = self._cost_mark()
        try:
            with self.target.wire(connect_timeout=self.probe_timeout) as wire:
                for data in messages:
                    if not wire.send(data):
                        break
                if while_waiting is not None:
                    while_waiting()
                wire.observe(obs, want=p.wanted,
                             timeout=self.answer_timeout() if p.wanted
                             else 2 * min(linger, LINGER),
                             linger=linger, sent=sum(map(len, messages)))
        except OSError as e:
            obs.connect_error = str(e)
        # (Before the health look below: a case still costing CPU is no spin.)
        costly = self._cost_verdict(cost_mark, obs, p, watch_all=settle > 0)
        if obs.answer_time is not None:
            self.latency.add(obs.answer_time)
        calls = self._callouts(called, CALLBACK_SETTLE if look_after else 0.0, messages)
        if calls:
            return Verdict("callback", self._callout_details(calls), obs)
        reason = suspicion(obs, p, messages, more_answers=linger < 0.1)
        if reason == "flood":
            details = {"bytes": obs.total_received, "messages": len(obs.messages)}
            if look_after:
                # A flood may leave the target broken (omniORB's flooding
                # thread spins on after the connection is gone).
                status = self._health()
                kind = BROKEN_BY_STATUS.get(status.split("(")[0])
                if kind is not None:
                    return Verdict(kind, self._with_sanitizer(dict(details, probe=status), status),
                                   obs)
            return Verdict("flood", details, obs)
        if reason == "more_answers":
            # More than a conforming server sends: look longer for a flood.
            return self.check(messages, p, linger=self.recheck_linger, look_after=look_after,
                              settle=settle)
        grown = self._rss_growth(rss_before, settle)
        if grown is not None:
            return Verdict("memory", {"rss_growth": grown}, obs)
        defects = self._logged_defects(logged, LOG_SETTLE if look_after else 0.0)
        if defects:
            return Verdict("exception", defects[0], obs)
        if costly is not None:
            return costly
        if reason is None and not look_after:
            return Verdict(None, {}, obs)
        status = self._health()
        details = self._with_sanitizer(
            {"observed": reason, "answers": len(obs.messages), "probe": status}, status)
        kind = BROKEN_BY_STATUS.get(status.split("(")[0])
        if kind is None and reason in ("closed", "reset"):
            self._outcome(reason, p)
        kind, details = self._with_dead_threads(kind, details)
        return Verdict(kind, details, obs)

    def _rss_growth(self, before: int | None, settle: float = 0.0) -> int | None:
        """The spawned target's RSS growth since ``before`` when it passes the
        limit, looked at for up to ``settle`` seconds (a target may still be
        allocating when its answer is late or not due)."""
        if before is None:
            return None
        deadline = time.monotonic() + settle
        while True:
            after = self.spawned.rss()
            if after is not None and after - before > self.rss_limit:
                return after - before
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)

    def _run_group(self, cases: list, *, again: bool = False, look: bool = False,
                   more=None) -> None:
        """Cases that need a connection each, all sent at once (one connection
        per case, at most ``connections`` of them) and their answers read
        after, so the target works on all of them while we read.  Whatever a
        connection shows that a conforming server would not do, the target's
        health is then looked at once for the group: when it is broken (or
        grew), the cases in flight are searched for the one that does it
        alone (_attribute), and the others run again (``again``: not counted
        twice) -- what they would have shown was hidden by the breakage; a
        flood is put to the case whose connection it came on; otherwise what
        the connections showed are outcomes, not findings.  With ``look``
        (the cases of a batch that did not go as predicted), the target's
        health is looked at whatever the connections show.  ``more``: the
        group's further cases, one a call, appended to ``cases`` (see
        _observe_group), judged with them."""
        if len(cases) == 1 and not again:
            self._run_isolated_case(cases[0])
            return
        self._sent(cases)
        rss_before = self.spawned.rss() if self.spawned is not None else None
        logged, called = self._logged_count(), self._callout_mark()
        self._before_group()
        cost_mark = self._cost_mark()
        observations = self._observe_group(cases, more)
        reasons = [suspicion(obs, case.prediction, case.messages)
                   for case, obs in zip(cases, observations)]
        # (Before the health look below; a group that flooded is not watched
        # until idle: see CaseCost._cost_since.)
        costly = self._group_cost(cost_mark, cases, going_on=True,
                                  watch="flood" not in reasons)
        # (Read before the health probes below: what they run is not the cases'.)
        group_features = self._group_features()
        if not again:
            self.stats.cases += len(cases)
            self.stats.isolated += len(cases)
        # (A cost still going on, its answer due, is no spin: pycdr.fuzz.cost.)
        broken, in_flight = self._costly_pending(costly, cases, observations)
        if broken is None and (look or any(r not in (None, "flood", "more_answers")
                                           for r in reasons)):
            broken = self._broken()
        if broken is None or (broken[0] == "hang" and self._new_class_logged(logged)):
            # (A defect not found yet first: a group may log both.  Before a JVM's
            # growth or hang, which a group of its cases often shows on a loaded machine.)
            defects = self._new_defects(logged) or self._logged_defects(logged)
            if defects:
                broken, in_flight = ("exception", defects[0]), list(cases)
        if broken is None and self._rss_growth(rss_before) is not None:
            # (The probes above saw a live target and forgot the cases before.)
            broken, in_flight = ("memory", {"rss_growth": True}), list(cases)
        calls = self._callouts(called) if broken is None else []
        if calls:
            broken, in_flight = ("callback", self._callout_details(calls)), list(cases)
        if broken is not None:
            if group_features is None and not again:
                # A connection that went as with a conforming server shows
                # what the target did, broken later or not: learned from (a
                # target that breaks in most groups, omniORB 4.2.5 spinning,
                # is still learned from).  Under sancov and jacoco the
                # group's edges or probes are the breakage's too: not (the
                # cases but the one that did it run again after).
                clean = [k for k, r in enumerate(reasons) if r is None]
                self._learn_group([cases[k] for k in clean],
                                  [observations[k] for k in clean], None)
            # A case whose connection flooded is the first suspect (a flood
            # may leave the target broken), tried alone before the others.
            flooded = [c for c, r in zip(cases, reasons) if r == "flood"]
            # (A call-out names the case that planted its address.)
            first = self._callout_suspect(calls, cases) or (flooded[0] if flooded else None)
            # (Read before the attribution restarts the target.)
            logged_too = [] if broken[0] == "exception" else self._new_defects(logged)
            culprit = self._attribute(*broken, first, in_flight=in_flight)
            if culprit is not None and not self.dead:
                self._run_group([c for c in cases if c is not culprit], again=True)
            elif logged_too and not self.dead:
                # A defect the group logged beside the breakage (that no case did
                # alone): searched for on its own, then the others again (as above).
                blamed = self._attribute("exception", logged_too[0], in_flight=list(cases))
                if blamed is not None and not self.dead:
                    self._run_group([c for c in cases if c is not blamed], again=True)
            return
        # (Not from a broken target: it showed part of what it did.  Run
        # again after one, the cases are learned from then.)
        self._learn_group(cases, observations, group_features)
        for case, obs, reason in zip(cases, observations, reasons):
            if reason in ("closed", "reset"):
                self._outcome(reason, case.prediction)
        for case, obs, reason in zip(cases, observations, reasons):
            if reason == "flood":
                self._attribute("flood", {"bytes": obs.total_received,
                                          "messages": len(obs.messages)}, first=case)
            elif reason == "more_answers":
                # More than a conforming server sends: alone, looked at longer.
                verdict = self.check(case.messages, case.prediction, linger=self.recheck_linger)
                if verdict.kind is not None:
                    self._attribute(verdict.kind, verdict.details, first=case)
        self._blame_cost(costly, cases)

    def _outcome(self, reason: str, p: Prediction) -> None:
        """A close judged against the spec: allowed after a malformed
        message, but not without MessageError; not a finding."""
        self.stats.outcomes[f"{reason}, " + ("MessageError expected" if p.message_error
                                             else "well-formed case")] += 1

    # --- attribution --------------------------------------------------------------------
    def _sent(self, cases) -> None:
        """Cases go in flight: sent since the target last answered a probe."""
        self._in_flight.extend(cases)

    def _attribute(self, *args, **options) -> Case | None:
        self._attributing += 1
        try:
            return self._attribute_now(*args, **options)
        finally:
            self._attributing -= 1

    def _attribute_now(self, kind: str, details: dict, first: Case | None = None, *,
                       in_flight: list | None = None, skip=()) -> Case | None:
        """The target broke (crash, hang, memory, spin) or flooded with cases in
        flight.  A case is blamed only when it does the same alone against a
        fresh target, REPRODUCTIONS times (see _record).  ``first`` (the case
        whose connection showed it) is tried alone first; then the others in
        flight (but those in ``skip``, run alone already) are run again
        together, in order, on a fresh target, and when that does it too,
        delta debugging narrows them to the one that does it alone.  When
        none does, the finding is unconfirmed and lists them all.  The case
        blamed, if one is."""
        in_flight = list(self._in_flight) if in_flight is None else in_flight
        restarts = self.stats.restarts
        if first is not None and first not in in_flight:
            in_flight.append(first)
        self._in_flight.clear()
        self._close_pipe()
        self.stats.findings[kind] += 1
        self.log(f"{kind} with {len(in_flight)} case(s) in flight"
                 + (f"; case {first.index} at {first.path}" if first is not None else ""))
        culprit = None
        known = self._known(kind, first) if first is not None else None
        if known is None and kind == "exception" and in_flight:
            # The same exception and stack as a confirmed finding's: the
            # same defect, whichever case in flight did it; counted, and
            # the target, which answers, goes on (a target that logs it on
            # many cases would otherwise be restarted for each).
            known = self.findings.get(self._fault(kind, [], [], Verdict(kind, details)))
            if known is not None:
                self._attributed += 1
                known_hit(known, first or in_flight[-1])
                return None
        if known is not None:
            # The same trigger through the same fields did it before,
            # confirmed: counted, not tried again.
            self._attributed += 1
            known_hit(known, first)
            self._fresh_target(restart=kind in BROKEN)
            return first
        others, searched = [], False
        if first is not None and self.reproduces(kind, first.messages, fresh=True):
            culprit = first
        else:
            skip = {id(c) for c in skip} | {id(first)}
            others = [c for c in in_flight if id(c) not in skip]
            # (Logged defects of two exception classes are two kinds of breakage here.)
            breakage = (kind, details.get("exception")) if kind == "exception" else kind
            self._sought_exception = details.get("exception")   # (what a search looks for)
            fruitless = self._fruitless[breakage] >= FRUITLESS_SEARCHES
            # The first search for a kind of breakage is made whatever it
            # costs -- but for a spin: seen by the target's CPU alone (no
            # connection showed it), any case in flight may have started it,
            # and omniORB 4.2.5 spins after many kinds of case: one search
            # there costs more than the campaign's first thousands of cases.
            guaranteed = kind != "spin" and breakage not in self._searched_kinds
            over_budget = not guaranteed and \
                self._searching + self._search_estimate(len(others)) > \
                SEARCH_SHARE * self.stats.elapsed
            searched = len(others) > 1 and not fruitless and not over_budget
            budget = [ATTRIBUTION_TESTS if searched or len(others) == 1 else 0]

            def together(cases) -> bool:
                if budget[0] <= 0 or self.dead:
                    return False
                budget[0] -= 1
                return self._reproduces_together(kind, cases)
            began = time.monotonic()
            if others and together(others):
                narrowed = ddmin(others, together)
                if len(narrowed) == 1 and \
                        self.reproduces(kind, narrowed[0].messages, fresh=True):
                    culprit = narrowed[0]
            if searched:
                self._searching += time.monotonic() - began
                self._searches += 1
                self._searched_kinds.add(breakage)
        if culprit is None:
            if self.dead:
                why = "the target could not be restarted"
            elif len(others) > 1 and not searched:
                why = "not searched among the cases in flight: " + (
                    f"{FRUITLESS_SEARCHES} searches for a {kind} found none" if fruitless
                    else f"it would take searches past {100 * SEARCH_SHARE:.0f} % "
                         f"of the campaign's time")
            else:
                why = "no case in flight did it alone against a fresh target"
            self._fruitless[breakage] += searched
            self._unconfirmed(kind, details, in_flight, why)
        elif self._known(kind, culprit, self.last_verdict) is not None:
            # A known fault, done again.
            self._attributed += 1
            known_hit(self._known(kind, culprit, self.last_verdict), culprit)
        else:
            self._record(kind, culprit, details, in_flight)
            return culprit
        # (A target that grew is restarted too: its growth is judged from its
        # start; and one that spins, as it spins on -- unless a run alone
        # replaced it since, and left the new one well.)
        self._fresh_target(restart=self._needs_restart or (
            kind in RESTART_AFTER and self.stats.restarts == restarts))
        return culprit

    def _search_estimate(self, suspects: int) -> float:
        """Seconds a search among ``suspects`` cases in flight is expected
        to take: the mean of the searches so far; before the first, two runs
        of them all at the campaign's pace so far (delta debugging's runs
        halve) and, for each halving, two of what a run costs besides its
        cases (a restart, a look at the target)."""
        if self._searches:
            return self._searching / self._searches
        pace = self.stats.elapsed / max(1, self.stats.cases)
        return 2 * pace * suspects + 2 * suspects.bit_length() * (
            SPIN_WINDOW + SEARCH_SPIN_CONFIRM + TIMEOUT_FLOOR)

    def _reproduces_together(self, kind: str, cases) -> bool:
        """Whether ``cases``, each on its own connection and up to
        ``connections`` at once (as the campaign sent them), do ``kind`` to
        a fresh target."""
        if not self._fresh_target(restart=True):
            return False
        self._needs_restart = True
        if kind == "cpu":
            return self._costly_together(cases)
        rss_before = self.spawned.rss() if self.spawned is not None else None
        logged, called = self._logged_count(), self._callout_mark()
        observations = self._observe_group(cases)
        if kind == "callback":
            return bool(self._callouts(called, CALLBACK_SETTLE))
        if kind == "exception":
            return self._logs_sought(logged)
        if kind == "flood":
            return any(suspicion(obs, case.prediction, case.messages) == "flood"
                       for case, obs in zip(cases, observations))
        if kind == "memory":
            return self._rss_growth(rss_before, MEMORY_SETTLE) is not None
        if kind == "spin":
            # A shorter look than the campaign's: a run here only steers the
            # search; the case it ends on is confirmed alone with the full one.
            return self._spinning(confirm=SEARCH_SPIN_CONFIRM)
        broken = self._broken()
        return broken is not None and broken[0] == kind

    def _fault(self, kind: str, messages, original, verdict: Verdict | None) -> tuple:
        """What tells one fault from another: the kind, the symptom the
        target showed (a hang of the ORB core or past it), the trigger's
        signature (the GIOP message types of the minimized case, in order)
        and where it ends (trigger_location: two faults of one kind and
        symptom read at other places are two findings).  Cases that reach
        one fault through different fields share it."""
        symptom = kind
        if kind == "hang" and verdict is not None:
            symptom = verdict.details.get("probe", kind)
        if kind == "thread" and verdict is not None:
            symptom = tuple(verdict.details.get("threads_gone", ()))
        if kind == "exception" and verdict is not None and verdict.kind == kind:
            # A logged defect is told by its exception and top frames, by
            # whatever message types it was reached through.
            return (kind, verdict.details.get("exception"),
                    tuple(verdict.details.get("frames", ())))
        sanitizer = verdict.details.get("sanitizer") if verdict is not None else None
        if kind == "crash" and sanitizer:
            # Two memory errors are two faults: the error and where it happened.
            symptom = (sanitizer["kind"], *sanitizer["frames"][:1])
        return (kind, symptom, trigger_signature(messages),
                trigger_location(messages, original))

    def _known(self, kind: str, case: Case, verdict: Verdict | None = None):
        """The confirmed finding ``case`` hits again, if any: one of ``kind``
        first done by a case of the same message types through the same
        fields, or (given the ``verdict`` of its run alone) with its fault."""
        shape = (trigger_signature(case.messages), case.field_keys)
        for finding in self.findings.values():
            if finding.kind == kind and \
                    shape == (trigger_signature(finding.case.messages), finding.case.field_keys):
                return finding
        if verdict is None:
            return None
        return self.findings.get(self._fault(kind, case.messages, case.messages, verdict))

    def _record(self, kind: str, case: Case, details: dict, in_flight: list) -> None:
        """``case`` did ``kind`` alone once, against a fresh target: minimize
        it, then confirm."""
        finding = Finding(kind, case.path, case, details, self.seed, self.seed_of(case),
                          in_flight=in_flight)
        if self.minimize:
            minimize(self, finding)
        # The run that blamed the case is the first reproduction of its
        # messages when minimizing left them as they were.
        counted = int(finding.messages == case.messages)
        finding.reproductions = counted + self._confirm(kind, finding.messages,
                                                        REPRODUCTIONS - counted)
        runs = finding.reproductions + 1 - counted
        if finding.reproductions < REPRODUCTIONS and finding.minimized:
            # The minimized case is flaky where the whole one was not.
            finding.minimized = []
            finding.reproductions = self._confirm(kind, finding.messages)
            runs = finding.reproductions + 1
        finding.confirmed = finding.reproductions == REPRODUCTIONS
        finding.details = dict(finding.details, **self._cost_runs(kind))
        if kind == "memory" and sum(map(len, finding.messages)) > MEMORY_INPUT:
            # Growth in proportion to a large input is no defect.
            self._keep_unconfirmed(finding, f"its input is over {MEMORY_INPUT} bytes")
            self._fresh_target(restart=False)
            return
        fault = self._fault(kind, finding.messages, case.messages, self.last_verdict)
        if finding.confirmed and fault in self.findings:
            # Minimized, it is the trigger of a fault found before.
            self._attributed += 1
            known_hit(self.findings[fault], case)
        elif finding.confirmed:
            self._attributed += 1
            self.findings[fault] = finding
            if self.on_finding is not None:
                self.on_finding(finding)
        else:
            self._keep_unconfirmed(finding, f"did it alone {runs} time(s), then not")
        self._fresh_target(restart=False)

    def _confirm(self, kind: str, messages, times: int = REPRODUCTIONS) -> int:
        """How many times in a row (at most ``times``) ``messages`` do
        ``kind`` alone against a fresh target."""
        for n in range(times):
            if not self.reproduces(kind, messages, fresh=True):
                return n
        return times

    def _unconfirmed(self, kind: str, details: dict, in_flight: list, why: str) -> None:
        case = in_flight[-1] if in_flight else Case(-1, "none", [], [])
        self._keep_unconfirmed(Finding(kind, case.path, case, details, self.seed,
                                       self.seed_of(case), in_flight=in_flight), why)

    def _keep_unconfirmed(self, finding, why: str) -> None:
        finding.confirmed = False
        finding.details = dict(finding.details, unconfirmed=why)
        self.log(f"{finding.kind}: unconfirmed ({why}); in flight: "
                 f"{[c.index for c in finding.in_flight]}")
        if len(self.unconfirmed) < MAX_UNCONFIRMED:
            self.unconfirmed.append(finding)
            if self.on_unconfirmed is not None:
                self.on_unconfirmed(finding)

    def seed_of(self, case: Case):
        for s in self.seeds:
            if s.name == case.seed_name:
                return s
        return None

    def reproduces(self, kind: str, messages, *, fresh: bool = False) -> bool:
        """Whether ``messages`` alone do ``kind`` to the target: run on a
        fresh target (restarted first under --spawn when ``fresh``, or when
        the last run broke it), and the target's health looked at after."""
        if not self._fresh_target(restart=fresh or self._needs_restart):
            self.last_verdict = Verdict(None, {"unreachable": True})
            return False
        self._needs_restart = False
        self._in_flight.clear()
        verdict = self.check(messages, look_after=kind in BROKEN or kind in RESTART_AFTER
                             or kind == "callback",
                             settle=MEMORY_SETTLE if kind == "memory" else 0.0)
        self._in_flight.clear()
        self.last_verdict = verdict
        self.last_received = verdict.observation.received if verdict.observation else b""
        if verdict.kind in BROKEN or verdict.kind in RESTART_AFTER:
            self._needs_restart = True
        return verdict.kind == kind

    def close(self) -> None:
        self._close_pipe()
        if self.spawned is not None:
            self.spawned.stop()
        self._close_feedback()
        self._close_callback()

