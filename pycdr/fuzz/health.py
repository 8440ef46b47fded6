"""The target's health as a campaign watches it: probes on fresh connections (a
LocateRequest for the ORB core, a Request past it) judged against the answer times
the target showed at the start, waits learned from its answer times, and under
--spawn its CPU while nothing is sent to it (a spin); a working target again
after one broke (restarted under --spawn).  TargetHealth is mixed into
Campaign (pycdr.fuzz.engine), whose state it uses."""

from __future__ import annotations

import os
import time
from collections import deque

from ..conformance.wire import Observation
from ..giop.messages import KeyAddr, LocateReply, LocateRequest, Reply, Request, encode_message
from ..errors import PycdrError
from .case import Verdict
from .mutators import target_profile
from .sanitizer import parse_report
from .target import resolve, runnable_threads
from .window import SENTINEL_ID

# Kinds after which the target needs a restart, by the probe status that shows them.
BROKEN_BY_STATUS = {"exited": "crash", "refused": "crash", "silent": "hang",
                    "requests-silent": "hang", "spinning": "spin"}
# (thread: a hang of a JVM target that lost a thread it started with, pycdr.fuzz.threads)
BROKEN = ("crash", "hang", "memory", "spin", "thread")
# A spawned target that burns more than SPIN_SHARE of a core while nothing
# is sent to it (over SPIN_WINDOW seconds, then again over SPIN_CONFIRM
# seconds: a JVM's garbage collection or compiler is a short burst) spins:
# a thread left in a loop by some case (omniORB 4.2.5 after a ProfileAddr
# Request: the target gets slower with each, then dies).
# (A fifth of a core: on a loaded machine a spinning thread gets far less
# than a whole one.)
SPIN_SHARE = 0.2
SPIN_WINDOW = 0.05
SPIN_CONFIRM = 0.3
# The target's CPU is read this often over a window: a window ends as soon
# as its answer is known (the target used more than its share already: a
# spinning thread does in a fraction of it; or it could not any more were
# it to burn every core for the rest of the window) -- the answer the
# whole window would give -- or once the target is clearly idle: no CPU
# used in the window and no thread running or waiting to run at
# IDLE_SAMPLES reads in a row (a spinning thread always is one).
SPIN_SAMPLE = 0.005
IDLE_SAMPLES = 3
# Seconds a target that cannot be restarted gets to answer again before the
# campaign gives it up.
RECOVERY_WAIT = 10.0
# Learned waits: a high percentile of the target's answer times times a
# factor, never below the floor (scheduling noise on a busy machine).
TIMEOUT_FACTOR = 4.0
TIMEOUT_FLOOR = 0.05
TIMEOUT_PERCENTILE = 0.9
MIN_SAMPLES = 16
CALIBRATION_PROBES = MIN_SAMPLES
# A probe answered this many times slower than the target's baseline (and
# past the floor) says the target is slow: not broken, and no case is blamed.
SLOW_FACTOR = 20.0
SLOW_FLOOR = 0.05
# Seconds a case's logged defect is waited for when a case is replayed, and
# for the top of its stack once the defect's line is in.
LOG_SETTLE = 0.5
FRAMES_SETTLE = 0.1


class Latency:
    """Answer times of the target; the waits are learned from them."""

    def __init__(self, ceiling: float, keep: int = 512):
        self.ceiling = ceiling
        self.samples: deque = deque(maxlen=keep)
        self._learned: float | None = None
        self._added = 0

    def add(self, seconds: float) -> None:
        self.samples.append(seconds)
        self._added += 1
        if self._learned is None or self._added % 64 == 0:
            self._learned = None

    def percentile(self, q: float) -> float:
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def timeout(self) -> float:
        if len(self.samples) < MIN_SAMPLES:
            return self.ceiling
        if self._learned is None:
            self._learned = min(self.ceiling, max(
                TIMEOUT_FLOOR, TIMEOUT_FACTOR * self.percentile(TIMEOUT_PERCENTILE)))
        return self._learned


class TargetHealth:
    """Campaign's probes and looks at the target (see the module doc)."""

    def answer_timeout(self) -> float:
        """How long a case's answers are waited for: learned from the
        target's own answer times, at most --timeout."""
        return self.latency.timeout()

    def _build_probes(self) -> None:
        version = min(tuple(self.target.version), (1, 2))
        key = KeyAddr(self.target.object_key)
        self._probe_messages = {
            "locate": encode_message(LocateRequest(version=version, request_id=SENTINEL_ID,
                                                   target=key)),
            "request": (self.probe_request and self.probe_request(self.target)) or
            encode_message(Request(
                version=version, request_id=SENTINEL_ID + 1, target=key,
                operation="_non_existent", response_flags=3)),
        }

    def _calibrate(self) -> None:
        """Probe answer times of the target as it starts: the baseline that
        slowness is judged against.  A target that never answers the Request
        probe (no _non_existent for its key) is watched by LocateRequests only."""
        self._build_probes()
        kinds = ["locate", "request"] if self.request_probes else ["locate"]
        for _ in range(CALIBRATION_PROBES):
            for kind in kinds:
                self._probe_one(kind, self.latency.ceiling)
        if self.request_probes and not self.probe_latency["request"].samples \
                and self.probe_latency["locate"].samples:
            self.request_probes = False
            self.notes.append("the target did not answer the Request probe; "
                              "liveness by LocateRequest only")

    def _probe_one(self, kind: str, timeout: float) -> str:
        """One probe on a fresh connection: answered | silent | closed | refused."""
        self.stats.probes += 1
        try:
            with self.target.wire(connect_timeout=max(timeout, self.probe_timeout)) as wire:
                wire.send(self._probe_messages[kind])
                obs = wire.observe(Observation(), want=1, timeout=timeout)
        except OSError as e:
            # A connection not taken in time is silence, not a refusal: a
            # target too busy to accept (a JVM in a long collection, its
            # accept queue full) is judged as one that does not answer, not
            # as a crash (whose search sent the cases in flight again).
            return "silent" if isinstance(e.__cause__ or e, TimeoutError) else "refused"
        if obs.answer_time is not None and any(
                isinstance(e.message, (LocateReply, Reply)) for e in obs.messages):
            self.probe_latency[kind].add(obs.answer_time)
            if len(self.latency.samples) < MIN_SAMPLES:
                # Until the cases' answers teach it, the target's answers to
                # probes give the wait (not the ceiling: a second for each
                # silent case of the first groups).
                self.latency.add(obs.answer_time)
            if self.baseline.get(kind) is None and \
                    len(self.probe_latency[kind].samples) >= CALIBRATION_PROBES:
                self.baseline[kind] = self.probe_latency[kind].percentile(0.5)
            base = self.baseline.get(kind)
            if base is not None and obs.answer_time > max(SLOW_FACTOR * base, SLOW_FLOOR):
                self.stats.slow_probes += 1
                return "slow"
            return "answered"
        return "closed" if obs.closed else "silent"

    def _probe(self, kinds=("locate", "request"), timeout: float | None = None) -> str:
        """alive | slow | exited(CODE) | refused | silent (no answer to a
        LocateRequest) | requests-silent (LocateRequests answered, Requests
        not: a hung servant behind a working ORB core)."""
        self._last_probe = time.monotonic()
        if self.spawned is not None:
            code = self.spawned.exited()
            if code is not None:
                return f"exited({code})"
        slow = False
        for kind in kinds:
            if kind == "request" and not self.request_probes:
                continue
            answer = self._probe_one(kind, timeout or self.probe_timeout_now(kind))
            if answer in ("refused", "closed", "silent") and self.spawned is not None:
                time.sleep(0.05)         # a dying process may still accept, then drop
                code = self.spawned.exited()
                if code is not None:
                    return f"exited({code})"
            if answer == "refused":
                return "refused"
            if answer in ("silent", "closed"):
                return "silent" if kind == "locate" else "requests-silent"
            slow = slow or answer == "slow"
        self._in_flight.clear()       # what was sent before did not break it
        return "slow" if slow else "alive"

    def probe_timeout_now(self, kind: str) -> float:
        """A probe's wait: learned from the probe's answer times, at most
        probe_timeout."""
        return self.probe_latency[kind].timeout()

    def _health(self) -> str:
        """The target's state after something unexpected: both probes, and
        when either is silent both again with the longest wait (one silent
        probe is not a hang)."""
        suspects = list(self._in_flight)
        status = self._probe()
        if status in ("silent", "requests-silent"):
            status = self._probe(timeout=self.hang_timeout)
        if status in ("silent", "requests-silent") and self.spawned is None:
            # A target we cannot restart may only be slow: a JVM working off
            # a group of malformed cases (the OpenJDK ORB spends ~35 ms of
            # CPU on each) answers no probe for seconds.  It gets
            # RECOVERY_WAIT to answer again before it is judged hung (a
            # search among the cases in flight would send them all again,
            # up to ATTRIBUTION_TESTS times; and a hung target we cannot
            # restart ends the campaign anyway).
            deadline = time.monotonic() + RECOVERY_WAIT
            while status in ("silent", "requests-silent") and time.monotonic() < deadline:
                status = self._probe(timeout=self.hang_timeout)
            if status == "alive":
                status = "slow"
        # A spinning target may also answer late or not at all (the looping thread
        # starves the others: Python's GIL, a JVM's safepoints, on a loaded
        # machine most of all): the spin is the cause, the silence its symptom.
        if status in ("alive", "slow", "silent", "requests-silent") and self._spinning():
            status = "spinning"
            # (The probes' answers cleared the cases in flight: they are the
            # suspects of the spin all the same.)
            self._in_flight.clear()
            self._in_flight.extend(suspects)
        return status

    def _spinning(self, confirm: float = SPIN_CONFIRM) -> bool:
        """Whether the spawned target burns CPU while nothing is sent to it
        (see SPIN_SHARE), over SPIN_WINDOW then ``confirm`` seconds; False
        for a target not spawned (its CPU is not known)."""
        if self.spawned is None:
            return False
        return all(self._burns(window) for window in (SPIN_WINDOW, confirm))

    def _burns(self, window: float) -> bool:
        """Whether the spawned target uses more than SPIN_SHARE of a core
        over ``window`` seconds (or the seconds waited, when longer) while
        nothing is sent to it; its CPU read every SPIN_SAMPLE seconds, the
        window ended as soon as the answer is known (see SPIN_SAMPLE)."""
        before = self.spawned.cpu_seconds()
        if before is None:
            return False
        process = getattr(self.spawned, "process", None)
        began = time.monotonic()
        cores = os.cpu_count() or 1
        idle = 0
        while True:
            left = began + window - time.monotonic()
            self._wait_making(min(SPIN_SAMPLE, max(0.0, left)))
            now = self.spawned.cpu_seconds()
            if now is None:
                return False
            used, waited = now - before, time.monotonic() - began
            if used > SPIN_SHARE * max(window, waited):
                return True
            if waited >= window or used + cores * (window - waited) <= SPIN_SHARE * window:
                return False
            idle = idle + 1 if used <= 0 and process is not None and \
                not runnable_threads(process.pid) else 0
            if idle >= IDLE_SAMPLES:
                return False

    def _wait_making(self, seconds: float) -> float:
        """Wait ``seconds`` while nothing is sent to the target, the next
        cases made meanwhile (see Campaign._make_ahead: none outside a run
        or during an attribution); the seconds waited (a case being made
        when the time is up may take a little longer)."""
        began = time.monotonic()
        deadline = began + seconds
        while time.monotonic() < deadline and self._make_ahead(1):
            pass
        left = deadline - time.monotonic()
        if left > 0:
            time.sleep(left)
        return time.monotonic() - began

    def _broken(self) -> tuple | None:
        """(kind, details) when the target is broken (crash or hang), else None."""
        status = self._health()
        kind = BROKEN_BY_STATUS.get(status.split("(")[0])
        if kind is None:
            return None
        return self._with_dead_threads(kind, self._with_sanitizer({"probe": status}, status))

    def _with_sanitizer(self, details: dict, status: str) -> dict:
        """``details`` of a spawned target that exited, with what its
        sanitizer report says (``sanitizer``, pycdr.fuzz.sanitizer) and the
        report itself (``sanitizer_report``) when it left one."""
        if self.spawned is None or not status.startswith("exited"):
            return details
        text = self.spawned.sanitizer_report()
        report = parse_report(text) if text else None
        if report is None:
            return details
        return dict(details, sanitizer=report, sanitizer_report=text)

    def _periodic_probe(self) -> None:
        # Probes alternate: a LocateRequest (the ORB core), a Request (past it).
        self._probe_turn += 1
        kind = "request" if self._probe_turn % 2 and self.request_probes else "locate"
        if self._spinning():
            # (Looked at before the probe, which would clear the cases in flight.)
            self._close_pipe()
            self._attribute("spin", {"probe": "spinning", "periodic": True})
            return
        status = self._probe((kind,))
        if status not in ("alive", "slow"):
            broken = self._broken()
            if broken is not None:
                self._close_pipe()
                self._attribute(broken[0], dict(broken[1], periodic=True))
                return
        rss = self.spawned.rss() if self.spawned is not None else None
        if rss is not None:
            if self.spawned.baseline_rss is None:
                self.spawned.baseline_rss = rss
            elif rss - self.spawned.baseline_rss > self.rss_limit:
                self._close_pipe()
                self._attribute("memory", {"rss": rss, "baseline": self.spawned.baseline_rss,
                                           "periodic": True})

    # --- what a --spawn target's output shows ------------------------------
    def _logged_count(self) -> int:
        """How many defects the spawned target has logged so far (0 when there is none)."""
        return 0 if self.spawned is None else self.spawned.logged()

    def _new_defects(self, since: int) -> list:
        """The defects the target logged after the first ``since`` that are
        no confirmed finding's; those of an exception class no finding has
        first (a group of a JVM's cases may log a known OutOfMemoryError,
        from another place, beside a defect of its own)."""
        new = [d for d in self._logged_defects(since) if self.findings.get(
            self._fault("exception", [], [], Verdict("exception", d))) is None]
        known = {f.details.get("exception") for f in self.findings.values()
                 if f.kind == "exception"}
        return sorted(new, key=lambda d: d.get("exception") in known)

    def _new_class_logged(self, since: int) -> bool:
        """Whether the target logged, after the first ``since``, a defect of
        an exception class no finding has."""
        known = {f.details.get("exception") for f in self.findings.values()
                 if f.kind == "exception"}
        return any(d.get("exception") not in known for d in self._logged_defects(since))

    def _logs_sought(self, since: int) -> bool:
        """Whether the target logged, after the first ``since``, a defect of
        the exception class a search among cases in flight looks for
        (``_sought_exception``; any, when it is None): a group's cases
        may log others, which would steer the search to them."""
        sought = getattr(self, "_sought_exception", None)
        return any(sought is None or d.get("exception") == sought
                   for d in self._logged_defects(since, LOG_SETTLE))

    def _logged_defects(self, since: int, settle: float = 0.0) -> list:
        """The defects the spawned target logged after the first ``since``
        (see pycdr.fuzz.target.logged_defect), waited for up to ``settle``
        seconds."""
        if self.spawned is None:
            return []
        deadline = time.monotonic() + settle
        while not self.spawned.defects_since(since) and time.monotonic() < deadline:
            time.sleep(0.02)
        defects = self.spawned.defects_since(since)
        if defects:
            time.sleep(FRAMES_SETTLE)      # (its stack is printed after its line)
            defects = [dict(d, frames=list(d["frames"])) for d in self.spawned.defects_since(since)]
            # The root cause first: the last "Caused by:" (an ORB that converts
            # the error logs its own exception first, naming the error in its
            # message), else the first with a stack.
            causes = [d for d in defects if d["line"].startswith("Caused by:")]
            stacked = [d for d in defects if d["frames"]]
            first = causes[-1] if causes else stacked[0] if stacked else defects[0]
            defects.remove(first)
            defects.insert(0, first)
        return defects

    def _fresh_target(self, *, restart: bool) -> bool:
        """A target to run a case alone against: under --spawn restarted
        (when ``restart``, or when it does not answer) and answering probes;
        without, the one there, if it answers.  False when there is none."""
        if self.dead:
            return False
        if self.spawned is None:
            # A target we cannot restart may be slow for a while (a JVM's
            # pause on a busy machine): it gets time to answer again.
            deadline = time.monotonic() + RECOVERY_WAIT
            while True:
                if self._health() in ("alive", "slow"):
                    return True
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.2)
            self.dead = True
            return False
        if not restart and not self._needs_restart and self._health() in ("alive", "slow"):
            return True
        return self._restart()

    def _restart(self) -> bool:
        """Restart the spawned target and wait until it answers probes."""
        self._close_pipe()
        try:
            self.target_text = self.spawned.restart()
        except PycdrError as e:
            self.notes.append(f"restart failed: {e}")
            self.dead = True
            return False
        self._target_started()              # (under sancov: its edge map)
        self.target = resolve(self.target_text, self.tls)
        before = self.ctx.address()
        self.ctx.object_key = self.target.object_key
        self.ctx.profile, self.ctx.ior = target_profile(self.target)
        if self.ctx.address() != before:
            # Cases made ahead whose making read the old object key or
            # address are made again (a target restarted on its port with
            # its key keeps them; a standby listens on a port of its own,
            # and most cases hold nothing of the address).
            for k, case in enumerate(list(self._ahead)):
                if case.addressed:
                    self._ahead[k] = self.make_case(case.index)
        self._build_probes()
        self.stats.restarts += 1
        self._needs_restart = False
        deadline = time.monotonic() + self.spawned.start_timeout
        while time.monotonic() < deadline:
            if self._probe() in ("alive", "slow"):
                return True
            time.sleep(0.05)
        self.notes.append("the restarted target did not answer")
        self.dead = True
        return False

    def recover(self) -> bool:
        """A working target again (restarted under --spawn); False when the
        campaign cannot go on."""
        return self._fresh_target(restart=False)
