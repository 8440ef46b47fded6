"""What a case costs a --spawn target in CPU: a case that costs more than
CPU_FACTOR times the median case (and at least CPU_FLOOR) is a ``cpu``
finding, an algorithmic denial of service (omniORB 4.2.5's C++ ORB copies an
``any`` holding an ``any`` twice per level: its CPU doubles with each level of
nesting).

The target's CPU is read from its process CPU clock (nanoseconds, every
thread) before a case (or a group, or a batch) is sent and once its answers
are in or its wait is over; a case that has already cost WATCH_FACTOR times
the median by then, or whose target still has a thread running or waiting
to run, is watched until the target is idle again (a servant may still be
working when its answer's wait is over), for at most SETTLE_CPU seconds of
its CPU and SETTLE_MAX seconds in all (before the median is known, when
nothing is judged, UNJUDGED_WATCH seconds).  A target still busy then, with
the answer of a case still due (its connection neither answered nor closed) and
still answering probes, is still working on that case: the case is a
``cpu`` finding whose cost is at least what was watched (``still_running``
in its details: omniORB's nested anys cost 1 s at 20 levels, 18 minutes at
30), not a spin; a case alone is so judged as soon as it has cost
PENDING_FACTOR times the threshold.  A target busy with no answer due is
left to the spin check: a spin is CPU that nothing sent asks for.  A target
busy already when a case is sent (BUSY_WAIT) is not watched: what it spends
is not known to be the case's, and the spin check sees a spin.  A group
or a batch that may hold an expensive case is run again in halves
(_cost_culprit) down to the case; one whose cost goes on past the watch,
each half against a fresh target (_costly_together).

The median is taken over the latest cases the campaign sent (a group's or a
batch's cost shared among its cases); replays (attribution, minimization,
confirmation) are judged against it and add nothing to it.  A finding's
details keep the median and the threshold it was judged by: ``--replay``
judges the saved case against the saved median (``cost_reference``).

CaseCost is mixed into Campaign (pycdr.fuzz.engine), whose state it uses."""

from __future__ import annotations

import json
import os
import time
from collections import deque

from .case import Verdict
from .health import SPIN_SHARE
from .target import process_cpu_seconds, runnable_threads

# A case costing more than CPU_FACTOR times the median case is expensive (the
# issue's "100x the median case"), when it costs at least CPU_FLOOR seconds:
# the median of cheap cases is tens of microseconds to a millisecond, and
# 100x that is within what a target spends now and then on a case for
# reasons of its own (a page fault storm, an allocator growing its heap, a
# JVM loading the classes of a path on its first run, its compiler threads,
# a garbage collection: tens of ms); and /proc's CPU times, the fallback
# when the process CPU clock cannot be read, tick every 10 ms.
CPU_FACTOR = 100.0
CPU_FLOOR = 0.1
# The latest per-case costs the median is taken over (a group of 1024
# cases adds its mean 1024 times), and how many before any case is judged.
COST_SAMPLES = 4096
MIN_COST_SAMPLES = 32
# A case (or a group, past what its cases cost at the median) that has
# already cost WATCH_FACTOR times the median and WATCH_FLOOR seconds, or
# whose target has a thread running or waiting to run when it is done, is
# watched (every WATCH_STEP seconds at most) until the target, twice in a
# row (once after a cheap case), used less than SPIN_SHARE of a core over the step and has no thread
# running or waiting to run (on a loaded machine a busy target may get
# little CPU for a step, but its thread stays runnable); until it has spent
# SETTLE_CPU seconds of CPU since the case was sent, or SETTLE_MAX seconds
# at most.  A target still busy then is left to the spin check (which a
# spin reaches SETTLE_CPU seconds of CPU later than without this watch: a
# cost past that is judged a spin; omniORB 4.2.5's nested anys cost 2.4 s
# at 21 levels, and a loaded machine gives 2.4 s of CPU in several seconds).
WATCH_FACTOR = 10.0
WATCH_FLOOR = 0.01
WATCH_STEP = 0.02
SETTLE_CPU = 3.0
SETTLE_MAX = 15.0
# A target with a thread running or waiting to run before cases are sent,
# still so after BUSY_WAIT seconds (a servant finishing the last case's
# answer is idle within a millisecond), is busy with something else than
# them: a spin (omniORB 4.2.5's after a ProfileAddr flood) or an earlier
# case's work.  What it spends past them is not known to be theirs: not
# watched (the watch would wait SETTLE_CPU seconds of a spin out, for each
# case sent to a spinning target), nor judged; the spin check sees a spin.
BUSY_WAIT = 0.01
# Before the median is known (the first MIN_COST_SAMPLES cases: under
# feedback, the corpus's first run) no cost is judged, and the watch only
# waits for an idle target, for the median's samples: for UNJUDGED_WATCH
# seconds at most (a case that leaves the target spinning, as omniORB
# 4.2.5's ProfileAddr cases do, would otherwise be watched for SETTLE_CPU
# seconds of its spin, for nothing).
UNJUDGED_WATCH = 0.05
# A case alone whose answer is still due once it has cost PENDING_FACTOR
# times the threshold, its target still busy, is expensive at once: it has
# cost past the threshold already, and watching it to SETTLE_CPU would cost
# each run of its confirmation and minimization seconds more.
PENDING_FACTOR = 4.0
# Of a group's cases whose answers are due when its cost goes on past the
# watch, how many are run alone to find the one that costs (see
# _costly_pending).
PENDING_TRIES = 3


def process_cpu(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (all its threads) so
    far: from its process CPU clock (Linux: the clock id of a pid is
    ``~pid << 3 | CPUCLOCK_SCHED``; nanoseconds), else /proc's ticks; None
    when neither can be read (the process is gone)."""
    try:
        return time.clock_gettime(((~pid) << 3) | 2)
    except (OSError, OverflowError, ValueError):
        return process_cpu_seconds(pid)


def _longest_watch(threshold: float | None, watch_all: bool = False) -> float:
    """How long cases are watched until their target is idle: SETTLE_MAX
    when their cost is judged; UNJUDGED_WATCH before the median is known
    (see there) but with ``watch_all``."""
    return SETTLE_MAX if threshold is not None or watch_all else UNJUDGED_WATCH


def _still_busy(pid: int) -> bool:
    """Whether process ``pid`` has a thread running or waiting to run now
    and still after BUSY_WAIT seconds (see there)."""
    if not runnable_threads(pid):
        return False
    deadline = time.monotonic() + BUSY_WAIT
    step = WATCH_STEP / 16
    while time.monotonic() < deadline:
        time.sleep(step)
        if not runnable_threads(pid):
            return False
        step = min(WATCH_STEP, 2 * step)
    return True


def saved_median(folder: str) -> float | None:
    """The median a saved ``cpu`` finding was judged against (its details'
    ``median_cpu_seconds``), or None."""
    try:
        with open(os.path.join(folder, "finding.json"), encoding="utf-8") as f:
            value = json.load(f).get("details", {}).get("median_cpu_seconds")
    except (OSError, ValueError, AttributeError, RecursionError):
        return None
    return float(value) if isinstance(value, (int, float)) and value >= 0 else None


class CaseCost:
    """Campaign's account of what its cases cost the target (see the module doc)."""

    def _setup_cost(self, reproductions: int) -> None:
        self._costs: deque = deque(maxlen=COST_SAMPLES)
        self._cost_median: float | None = None
        self._cost_added = 0
        # A saved finding's median, judged against instead of the campaign's (--replay).
        self.cost_reference: float | None = None
        self.last_cost: float | None = None   # what the last check's case cost, if known
        # What the latest runs judged expensive cost (a finding's confirmation's).
        self._expensive_runs: deque = deque(maxlen=reproductions)

    # --- the median ----------------------------------------------------------------
    def _add_cost(self, seconds: float | None, cases: int = 1) -> None:
        """``cases`` cases sent by the campaign cost ``seconds`` together."""
        if seconds is None or cases < 1:
            return
        self._costs.extend([seconds / cases] * min(cases, COST_SAMPLES))
        self._cost_added += 1
        if self._cost_median is None or self._cost_added % 64 == 0:
            self._cost_median = None

    def cost_median(self) -> float | None:
        """The median case's CPU seconds (None until MIN_COST_SAMPLES cases)."""
        if self.cost_reference is not None:
            return self.cost_reference
        if len(self._costs) < MIN_COST_SAMPLES:
            return None
        if self._cost_median is None:
            ordered = sorted(self._costs)
            self._cost_median = ordered[len(ordered) // 2]
        return self._cost_median

    def cost_threshold(self) -> float | None:
        median = self.cost_median()
        return None if median is None else max(CPU_FLOOR, CPU_FACTOR * median)

    def _cost_details(self, spent: float, cases: int = 1) -> dict:
        median = self.cost_median()
        details = {"median_cpu_seconds": median,
                   "threshold_seconds": round(self.cost_threshold(), 6)}
        if cases > 1:
            return dict(details, cases=cases)
        return dict(details, cpu_seconds=round(spent, 4),
                    times_median=round(spent / median) if median else None)

    # --- measuring -----------------------------------------------------------------
    def _cost_mark(self):
        """Where the target's CPU stands before cases are sent (None when
        it is not known: no spawned process), and whether it is busy then
        (see BUSY_WAIT)."""
        process = self.spawned.process if self.spawned is not None else None
        if process is None:
            return None
        busy = _still_busy(process.pid)
        cpu = process_cpu(process.pid)
        return None if cpu is None else (process.pid, cpu, busy)

    def _cost_since(self, mark, cases: int = 1, *, answered: bool = False,
                    enough: float = SETTLE_CPU, watch: bool = True,
                    longest: float = SETTLE_MAX):
        """(CPU seconds the target spent since ``mark``, whether it is idle
        again), the target watched until idle when ``cases`` cost more than
        the median would say (see WATCH_FACTOR) or, unless they were
        ``answered`` (a servant answers once done), a thread of it is
        running or waiting to run, up to ``enough`` seconds of CPU (at most
        SETTLE_CPU) and ``longest`` seconds; None when not known (no mark, the target restarted or
        gone; or busy already when the cases were sent and busy still,
        see BUSY_WAIT).  Without ``watch`` (the cases flooded: a flooding
        thread may spin on after its connection is gone, omniORB 4.2.5's
        does, and no cost could be told from that spin, which the flood's
        health look sees in about a tenth of a second, where the watch would wait
        SETTLE_CPU seconds of it out), a target found busy is not idle, and
        not waited for."""
        process = self.spawned.process if self.spawned is not None else None
        if mark is None or process is None or process.pid != mark[0] or \
                process.poll() is not None:
            return None            # (a target that exited is a crash, whatever it cost)
        pid, before, busy_before = mark
        now = process_cpu(pid)
        if now is None:
            return None
        median = self.cost_median() or 0.0
        if now - before - cases * median < max(WATCH_FLOOR, WATCH_FACTOR * median) and \
                (answered or not runnable_threads(pid)):
            return now - before, True
        if busy_before:
            return None
        if not watch:
            return now - before, False
        deadline = time.monotonic() + min(longest, SETTLE_MAX)
        # (Short steps first: a thread seen running is most often a servant's
        # finishing its answer, idle a few hundred microseconds later; such
        # a cheap case is idle once seen idle once.)
        step, quiet = WATCH_STEP / 16, 0
        wanted = 1 if now - before < WATCH_FLOOR else 2
        while time.monotonic() < deadline and now - before < min(enough, SETTLE_CPU):
            time.sleep(step)
            later = process_cpu(pid)
            if later is None:
                return None
            # Idle: little CPU over the step, and no thread running or
            # waiting to run (on a loaded machine a busy target may get
            # little CPU for a step, but its thread stays runnable).
            idle = later - now < SPIN_SHARE * step and not runnable_threads(pid)
            quiet = quiet + 1 if idle else 0
            now, step = later, min(WATCH_STEP, 2 * step)
            if quiet >= wanted:
                return now - before, True
        return now - before, False

    def _cost_verdict(self, mark, obs, p=None, *, watch_all: bool = False) -> Verdict | None:
        """After one case on its own connection (sent after ``mark``; its
        prediction ``p``): a ``cpu`` Verdict when it cost past the threshold
        and the target is idle again, or is still working on it (see the
        module doc; judged at PENDING_FACTOR times the threshold unless
        ``watch_all``); what it cost kept in ``last_cost``."""
        threshold = self.cost_threshold()
        due = _due(obs, p)
        enough = SETTLE_CPU if watch_all or threshold is None or not due \
            else PENDING_FACTOR * threshold
        measured = self._cost_since(mark, answered=obs.answer_time is not None, enough=enough,
                                    watch=not obs.flooded,
                                    longest=_longest_watch(threshold, watch_all))
        self.last_cost = measured[0] if measured is not None and measured[1] else None
        if measured is None or threshold is None:
            return None
        spent, idle = measured
        if spent > threshold and (idle or (due and self._serving())):
            self._expensive_runs.append(round(spent, 4))
            details = self._cost_details(spent)
            return Verdict("cpu", details if idle else dict(details, still_running=True), obs)
        return None

    def _serving(self) -> bool:
        """Whether the target answers a LocateRequest on a new connection,
        given the longest wait (a target busy with a case, not hung: a busy
        Python or JVM servant may answer late)."""
        return self._probe(("locate",), timeout=self.hang_timeout) in ("alive", "slow")

    def _costly_pending(self, costly: dict | None, cases: list, observations: list) -> tuple:
        """(kind, details, in flight) of a group (sent on a connection each)
        whose cost went on past the watch (``costly`` from _group_cost,
        ``still_running``), some of whose answers are still due, the target
        still answering: ``cpu`` with the case that costs as much alone
        against a fresh target (of the first PENDING_TRIES due; the target
        is restarted before its next look); else ``spin`` with the group's
        cases (the CPU was not a case's: a spin's, which delayed those
        answers).  (None, None) otherwise: the group is judged as before."""
        if costly is None or not costly.get("still_running"):
            return None, None
        pending = [case for case, obs in zip(cases, observations) if _due(obs, case.prediction)]
        if not pending or not self._serving():
            return None, None
        suspects = list(self._in_flight)
        for case in pending[:PENDING_TRIES]:
            if self.reproduces("cpu", case.messages, fresh=True):
                self._needs_restart = True
                return ("cpu", costly), [case]
        self._in_flight.extend(suspects)
        return ("spin", {"probe": "spinning", "cost": costly}), list(cases)

    def _costly_together(self, cases: list) -> bool:
        """Whether ``cases`` (sent together, as a group) cost past the
        threshold on a fresh target (a search among a group's cases)."""
        mark = self._cost_mark()
        self._observe_group(cases)
        return self._group_cost(mark, cases, sample=False, going_on=True) is not None

    def _cost_runs(self, kind: str) -> dict:
        """For a ``cpu`` finding's details, once confirmed: what its case
        cost in the last runs judged expensive (as many as a confirmation
        has: the confirmation's)."""
        return {"cpu_seconds_runs": list(self._expensive_runs)} if kind == "cpu" else {}

    def _group_cost(self, mark, cases, *, sample: bool = True,
                    going_on: bool = False, watch: bool = True) -> dict | None:
        """After ``cases`` sent together (a group, a batch) after ``mark``:
        the details when one of them may be expensive, else None (and, with
        ``sample``, their cost goes to the median).  One may be when, the
        target idle again, they cost more than the threshold past what they
        cost at the median, and more than twice that: the cost of a group
        of many cases varies by more than a case's 100 times the median
        (a garbage collection, the JIT's threads, the scheduler), and a
        group whose cost is judged is run again in halves (_cost_culprit).
        With ``going_on``, also when the target is still busy at the end of
        the watch (``still_running``: see _costly_pending).  ``watch``: see
        _cost_since."""
        threshold, median = self.cost_threshold(), self.cost_median()
        measured = self._cost_since(mark, len(cases), watch=watch,
                                    longest=_longest_watch(threshold))
        if measured is None:
            return None
        spent, idle = measured
        if threshold is not None and \
                spent - len(cases) * median > max(threshold, len(cases) * median):
            details = dict(self._cost_details(spent, len(cases)), group_cpu_seconds=round(spent, 4))
            # (Still busy: a cost that goes on past the watch, or a spin.)
            if idle or going_on:
                return details if idle else dict(details, still_running=True)
        if sample and idle:
            self._add_cost(spent, len(cases))
        return None

    def _cost_culprit(self, cases: list):
        """The case of an expensive group (see _group_cost) that costs it:
        halves of the group run again, each on its own, against the target
        as it is (a cost is no breakage: no restart), the half that costs
        past the threshold kept, down to one case (the engine then confirms
        it alone against a fresh target).  None when neither half does (the
        group's cost was noise, or several cases make it together)."""
        suspects = list(cases)
        while len(suspects) > 1 and not self.dead:
            half = len(suspects) // 2
            for part in (suspects[:half], suspects[half:]):
                mark = self._cost_mark()
                self._observe_group(part)
                if self._group_cost(mark, part, sample=False) is not None:
                    suspects = part
                    break
            else:
                return None
        return suspects[0] if suspects and not self.dead else None

    def _blame_cost(self, costly: dict | None, cases: list) -> None:
        """After a group that may hold an expensive case, the target not
        broken: the case that costs it, searched for and confirmed."""
        if costly is None or costly.get("still_running") or self.dead:
            return        # (a cost that goes on is judged with the group's breakage)
        culprit = self._cost_culprit(cases)
        if culprit is not None:
            self._attribute("cpu", costly, culprit, in_flight=[culprit])


def _due(obs, p) -> bool:
    """Whether a servant's answer is still due on a connection: its case
    (prediction ``p``) wants replies, with no message or fragment chain left
    incomplete and no CancelRequest (omniORB 4.2.5 spins after such cases:
    CPU no servant spends on an answer; a Request a conforming server would
    answer with MessageError may still be served, a response flag of 0x7f
    taken for true), and the connection timed out waiting, unanswered and
    not closed."""
    return p is not None and p.wanted > 0 and not (p.partial or p.uncertain) \
        and obs.timed_out and not obs.closed and obs.answer_time is None
