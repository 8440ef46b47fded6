"""A campaign guided by feedback (pycdr.fuzz.feedback): cases are mutated
from a corpus that learns instead of from the seeds alone.

With feedback, case ``i`` is no longer made from the seed and its index
alone: which input it mutates depends on what the campaign kept so far.
Cases run in groups and pipelined batches as without feedback, the corpus
learning between them.  Under ``state`` a batch's answers go back to their
cases by request id (a MessageError to the case whose violation came next;
a case sharing a request id with another goes in a group).  Before the first
case every input of the corpus (the seeds and a --corpus-dir folder's inputs)
runs once, unmutated, so that what they reach
is known (under ``state`` in pipelined batches where a batch can hold
them, the others together, each on a connection of its own: _first_run;
under ``sancov`` in groups: _first_run_grouped);
under ``sancov`` the map is first watched while the target is idle, and the
edges that flicker are masked.  A kept input is minimized first (feedback.trim);
under ``state`` the tries still to come if none held run together, each on a
connection of its own, and the first that held is taken (the same result as
one try at a time).

Under ``sancov`` (each target process writes an edge map of its own: a
standby starting up writes into its own, see _target_started) and under
``jacoco:HOST:PORT`` (a JVM target started with the JaCoCo agent,
pycdr.fuzz.jacoco, a feature is a probe that ran: a class and a probe
index) what a case did is the whole target's, not a connection's: the map
is read (the agent's probes dumped), and reset, once a group or a batch is
done, SANCOV_GROUP or JACOCO_GROUP cases.  A group that passed edges (ran
probes) not seen before is *bisected*: its halves run again, each on its
own, down to the cases that pass the new ones alone, which are kept (under
sancov once they pass them again, run once more: _repeated).  Edges passed
(probes run) while the target was idle are masked first."""

from __future__ import annotations

import random
import time
from collections import Counter, deque

from ..errors import PycdrError
from .case import Case
from .feedback import (FEEDBACK_KINDS, SETTLE, Corpus, EdgeMap, Entry, kept_open_state,
                       load_folder, state_features, state_of, trim)
from .havoc import fix_lengths, havoc
from .jacoco import PROBE_BITS, JacocoAgent, JacocoError, class_of, parse_address
from .mutators import Mutation, fix_size, mutate
from .prediction import framing, predict, suspicion
from .target import runnable_threads
from .window import FIRST_BATCH, LINGER, _Pipe

# Share of cases mutated by havoc (byte level) rather than the structure-aware mutators.
HAVOC_SHARE = 0.5
# Cases judged together between two looks at the corpus, with state feedback:
# as many as a group without feedback (engine.GROUP_CASES).  A group's end
# costs a wait for its slowest connection and a look at the target's health;
# at a quarter of that, feedback cost some 40 % of the cases per second, and
# new states are rare enough past the first groups that learning a group
# later finds the same ones.
FEEDBACK_GROUP = 1024
# The cases whose states in pipelined batches were new run again alone
# (_rerun_new_states) once this many wait, or the first of them waited this
# many cases: a round of the target's answers for all of them, where one
# each cost a campaign of a few thousand cases a tenth of its time.
RERUN_BATCH = 8
RERUN_DELAY = 256
# Runs spent minimizing one kept input.
TRIM_BUDGET = 12
# How long a case's connection is watched past its answers under sancov
# (window.LINGER otherwise): the edge map, not the connection, shows what the
# case did, and more answers than due are still looked at longer (see check).
SANCOV_LINGER = 0.001
# How long a connection that brought more answers than due is watched again
# for a flood: 0.5 s, but under sancov, where a kept input that draws an
# answer pycdr does not predict (a message refused before its end, a
# fragment taken whole) is mutated again and again, 0.1 s (no shorter: check
# looks again at connections watched less than 0.1 s).
RECHECK_LINGER = 0.5
SANCOV_RECHECK_LINGER = 0.1
# Seconds the edge map is watched while the target is idle, before the campaign.
IDLE_WATCH = 0.5
# Before the edge map is read, the target is left SANCOV_SETTLE seconds, then
# up to SANCOV_SETTLE_MAX more until it has no thread running or waiting to
# run, twice in a row: a connection's end is handled after it closed, and a
# run read before that and one read after differ by those edges (masked as
# flickering: a third of omniORB's edges were, so).  No longer: a target
# left spinning by a case, as omniORB often is, has a thread running all
# along.
SANCOV_SETTLE = 0.001
SANCOV_SETTLE_MAX = 0.005
# Cases judged together between two reads of the edge map, under sancov (the
# corpus's first run too): a group whose edges are all known costs one read
# of the map; one that passed new edges is bisected (below) as a JaCoCo
# group is, at about two runs of a part per halving: a group of 64 is
# resolved to a case in some 12 runs of a few cases each.  (In 60-s
# campaigns against omniORB, groups of 256 kept a third of the inputs groups
# of 64 kept, their bisections out of runs, and passed fewer edges.)
SANCOV_GROUP = 64
# Cases run between two dumps of a JaCoCo agent's probes: a bisection of a
# group costs about two runs per halving, and a group whose probes are all
# known one dump.
JACOCO_GROUP = 64
# Runs of parts of a group spent finding the cases that ran its new probes.
BISECTION_RUNS = 24
# Seconds left to the JVM after a run's connections are done, before its
# probes are dumped (the end of a connection is handled after it closed).
JACOCO_SETTLE = 0.01
# Cases found by bisection listed in the summary (the last ones).
IDENTIFIED_SHOWN = 20
# Bisections a new probe is looked for in before it counts as seen with no
# case kept for it: the bisection runs out of runs when a group ran many new
# probes (as the first groups do), and a later group that runs it again
# tries once more; a probe of the JVM's timing is not looked for forever.
BISECTION_TRIES = 3


class Learning:
    """The feedback part of a Campaign (mixed into it)."""

    def _setup_feedback(self, feedback: str, spawn: str | None, corpus_dir: str | None):
        """Checks the feedback kind; under ``sancov``, what makes each spawned
        target process its own edge map (SpawnedTarget's ``per_launch``),
        else None."""
        self.agent = None              # a JacocoAgent, under jacoco:HOST:PORT
        if feedback.startswith("jacoco:"):
            self.agent = JacocoAgent(*parse_address(feedback[len("jacoco:"):]))
            feedback = "jacoco"
        elif feedback not in FEEDBACK_KINDS:
            raise PycdrError(f"unknown coverage kind {feedback!r}: one of "
                             + ", ".join(FEEDBACK_KINDS) + ", jacoco:HOST:PORT")
        self.feedback = feedback
        self.feedback_group = JACOCO_GROUP if self.agent is not None else \
            SANCOV_GROUP if feedback == "sancov" else FEEDBACK_GROUP
        self.masked_probes: set = set()     # probes that run without input, under jacoco
        self.initial_probes = 0
        self.bisections = 0            # groups bisected
        self.bisection_runs = 0
        self.unattributed = 0          # new probes no case ran alone, given up on
        self._missed = Counter()       # new probe -> bisections that did not find it
        self.identified: list = []     # the last cases found by bisection
        self.edge_map = None           # the current target process's, under sancov
        # Edges that flicker, edges whose counts vary: the binary's, shared by the maps
        # of all its processes (EdgeMap.masked, .uncounted).
        self.masked_edges: set = set()
        self.uncounted_edges: set = set()
        self._edges_seen: set = set()  # the edges of corpus.seen, under sancov
        self.linger = SANCOV_LINGER if feedback == "sancov" else LINGER
        self.recheck_linger = SANCOV_RECHECK_LINGER if feedback == "sancov" else RECHECK_LINGER
        self.kept = 0                  # inputs kept by this campaign
        self.initial_features = 0      # features of the corpus before the first case
        self.initial_edges = 0         # ... and their edges, under sancov
        self._trimming = None          # the features of the input being minimized
        # Cases whose states in pipelined batches were new, waiting to run
        # again alone: (case, its new features, the case count then).
        self._new_in_batches: list = []
        self.corpus = Corpus(folder=corpus_dir)
        self._resumed = load_folder(corpus_dir) if corpus_dir else []
        if feedback == "sancov":
            if not spawn:
                raise PycdrError("--coverage sancov needs --spawn: the fuzzer starts the "
                                 "target with the edge map in its environment")
            return lambda: EdgeMap(masked=self.masked_edges, uncounted=self.uncounted_edges)
        return None

    def _target_started(self) -> None:
        """The spawned target was (re)started: under sancov its process's map
        is read from now on, emptied first (what its start-up passed is no
        case's; a standby may have been started long ago)."""
        if self.feedback == "sancov":
            self.edge_map = self.spawned.own
            self.edge_map.reset()

    def _start_feedback(self) -> None:
        """After the target answers: idle edges masked, the corpus's inputs
        run once."""
        if self.feedback == "none":
            return
        if self.edge_map is not None:
            # (The probes of _calibrate handled first: on a loaded machine an
            # instrumented target may still be at them, and their edges are
            # no idle thread's.)
            self._settle(IDLE_WATCH)
            self.edge_map.calibrate(IDLE_WATCH)
        if self.agent is not None:
            self._calibrate_probes()
        for seed in self.seeds:
            self.corpus.entries.append(Entry(list(seed.messages), seed.name,
                                             body_types=seed.body_types))
        self.corpus.entries += self._resumed          # (origin "corpus": no seed of theirs)
        if self.feedback == "sancov":
            self._first_run_grouped(self.corpus.entries)
        else:
            together = self._first_run(self.corpus.entries) if self.feedback == "state" else {}
            for k, entry in enumerate(self.corpus.entries):
                features = together.get(k)
                if features is None:
                    features = self._features_of(entry.messages, entry.origin)
                if features is None:
                    continue
                entry.features = self.corpus.new_features(features)
                self._observe(features)
        self.initial_features = len(self.corpus.seen)
        if self.edge_map is not None:
            self.initial_edges = len(self._edges_seen)
        self.initial_probes = len(self.corpus.seen) if self.agent is not None else 0

    def _first_run_grouped(self, entries) -> None:
        """The corpus's first run under sancov: its inputs in groups, as the
        campaign's cases (Campaign._run_group: each on a connection of its
        own; a target one of them broke is restarted, and the input that did
        it found, a finding as a case's).  A group's edges are the corpus's;
        an input found by bisection to pass new ones alone gets them as its
        features (_learn_found)."""
        cases = [_rerun_case(entry) for entry in entries]
        for case, entry in zip(cases, entries):
            case.rerun_of = entry
        for at in range(0, len(cases), self.feedback_group):
            if self.dead:
                return
            self._run_group(cases[at:at + self.feedback_group], again=True)

    def _first_run(self, entries) -> dict:
        """The corpus's first run under state feedback: position -> features.
        The inputs a pipelined batch can hold go in batches, as cases do
        (their answers back to them by request id: _pipelined_states), at a
        fraction of the cost of a connection each; of those, an input whose
        state in its batch shows a feature no input before it showed runs
        again on a connection of its own (a state in a batch may be owed to
        the inputs before it: what it shows alone is its features).  Those,
        and the inputs no batch held, run as _states_together runs them.
        A target that grew or logged a defect over the batches has every
        input run alone after (as there)."""
        cases = [_rerun_case(entry) for entry in entries]
        rss_before = self.spawned.rss() if self.spawned is not None else None
        logged = self._logged_count()
        states = self._pipelined_states(cases)
        if states and (self._rss_growth(rss_before) is not None
                       or self._logged_defects(logged)):
            self._fresh_target(restart=True)
            return {}
        out, shown = {}, set()
        for k, state in sorted(states.items()):
            features = state_features(state)
            if features <= shown:
                out[k] = features
            shown |= features
        rest = [k for k in range(len(entries)) if k not in out]
        got = self._states_together([entries[k] for k in rest], cases=[cases[k] for k in rest])
        out.update((rest[j], features) for j, features in got.items())
        return out

    def _pipelined_states(self, cases) -> dict:
        """Position -> state (kept_open_state) of each of ``cases`` that went
        in a pipelined batch as predicted.  Batches as the campaign's (the
        first of FIRST_BATCH cases, each that went as predicted twice the
        last, up to --batch; no two cases of one with a request id in
        common); after one that did not go as predicted, none (the target
        answers otherwise: the rest run on connections of their own)."""
        if self.batch_size <= 1 or self.rate:
            return {}
        batches, batch, ids = [], [], set()
        size = min(FIRST_BATCH, self.batch_size)
        for k, case in enumerate(cases):
            rids = case.prediction.request_ids
            if not case.batchable or len(set(rids)) != len(rids):
                continue
            if len(batch) >= size or not ids.isdisjoint(rids):
                batches.append(batch)
                batch, ids = [], set()
                size = min(2 * size, self.batch_size)
            batch.append(k)
            ids.update(rids)
        batches += [batch] if batch else []
        out: dict = {}
        pipe = None
        try:
            for batch in batches:
                part = [cases[k] for k in batch]
                answers: list = []
                try:
                    pipe = pipe or _Pipe(self.target.host, self.target.port,
                                         self.target.object_key, self.target.tls)
                    ok = pipe.run(b"".join(b"".join(c.messages) for c in part),
                                  sum(c.prediction.answers for c in part),
                                  self.answer_timeout(), answers=answers)
                except OSError:
                    ok = False
                states = answers_by_case(part, answers) if ok else None
                if states is None:
                    break
                out.update(zip(batch, states))
        finally:
            if pipe is not None:
                pipe.close()
        return out

    def _states_together(self, entries, *, again: bool = True, cases=None) -> dict:
        """Under state feedback, the corpus's inputs run once each on a
        connection of its own, up to ``connections`` at once (as a group of
        cases runs), instead of one after the other: position -> features.
        An input whose connection flooded or brought more answers than due
        is left out (run alone after, as check() judges it); when the target
        turns out grown, or logged a defect, all are (run alone after, on a
        fresh target: the input that did it is then found, a finding as a
        case's, and the others learned from); when it turns out broken, all
        but those whose connections went as with a conforming server (what
        they showed is what the target did, broken later or not, as a
        group's cases: see Campaign._run_group); those run together again
        on the fresh target (``again``: once), judged the same way.  (A
        target that some input leaves spinning, omniORB 4.2.5 after a
        ProfileAddr flood, would otherwise have every input run alone, each
        a look at the target's health.)"""
        if cases is None:
            cases = [_rerun_case(entry) for entry in entries]
        rss_before = self.spawned.rss() if self.spawned is not None else None
        logged = self._logged_count()
        observations = self._observe_group(cases)
        reasons = [suspicion(obs, case.prediction, case.messages)
                   for case, obs in zip(cases, observations)]
        broken = any(r is not None for r in reasons) and self._broken() is not None
        if self._rss_growth(rss_before) is not None or self._logged_defects(logged):
            self._fresh_target(restart=True)
            return {}
        if broken:
            self._fresh_target(restart=True)
        out, rerun = {}, []
        for k, (case, obs, reason) in enumerate(zip(cases, observations, reasons)):
            if reason in ("flood", "more_answers", "unreachable"):
                continue
            if broken and reason is not None:
                rerun.append(k)
                continue
            if reason in ("closed", "reset"):
                self._outcome(reason, case.prediction)
            out[k] = state_features(state_of(obs))
        if rerun and again and not self.dead:
            got = self._states_together([entries[k] for k in rerun], again=False)
            out.update((rerun[j], features) for j, features in got.items())
        return out

    def _calibrate_probes(self) -> None:
        """The agent's probes that run while nothing is sent to the target
        (timers, housekeeping threads), watched over IDLE_WATCH seconds, are
        masked; the agent is checked reachable on the way."""
        time.sleep(SETTLE)
        self.agent.reset()
        time.sleep(IDLE_WATCH)
        self.masked_probes |= self.agent.dump().features()

    def _reset_coverage(self) -> None:
        if self.edge_map is not None:
            if not self.dead:              # (a target that could not restart: its map is gone)
                self.edge_map.reset()
        elif self.agent is not None:
            self._agent_call(self.agent.reset)

    def _observe(self, features) -> None:
        """``features`` were shown: seen by the corpus (and, under sancov,
        their edges)."""
        self.corpus.observe(features)
        if self.feedback == "sancov":
            self._edges_seen.update(f >> 4 for f in features)

    def _agent_call(self, call):
        """``call()`` on the agent; None (and a note, once) when the agent
        failed: the campaign goes on without that run's probes."""
        try:
            return call()
        except JacocoError as e:
            text = f"coverage: {e}"
            if text not in self.notes:
                self.notes.append(text)
            return None

    def _probes(self) -> frozenset:
        """The probes that ran since the last reset (masked ones left out);
        then reset."""
        time.sleep(JACOCO_SETTLE)
        dump = self._agent_call(self.agent.dump)
        return frozenset(dump.features() - self.masked_probes) if dump else frozenset()

    def _features_of(self, messages, origin: str):
        """The features of ``messages`` (an input from seed ``origin``) run
        alone; None when they broke the target (then a finding is looked
        for as for any case, and the target restarted)."""
        self._reset_coverage()
        verdict = self.check(messages)
        if verdict.kind is not None:
            # What a variant of a kept input broke is a finding as any other
            # (a cost was measured for it alone: the others in flight are no suspects).
            case = Case(self.stats.cases, origin, list(messages),
                        [Mutation("corpus", "payload", "a kept input, rerun or minimized")])
            self._attribute(verdict.kind, verdict.details, first=case,
                            in_flight=[case] if verdict.kind == "cpu" else None)
            return None
        return self._read_features(verdict.observation)

    def _read_features(self, obs) -> frozenset:
        if self.edge_map is not None:
            return self._map_features()
        if self.agent is not None:
            return self._probes()
        return state_features(state_of(obs)) if obs is not None else frozenset()

    def _before_case(self) -> None:
        self._reset_coverage()

    def _before_group(self) -> None:
        self._reset_coverage()

    def _group_features(self) -> frozenset | None:
        """Under sancov and jacoco, the features a group of cases showed
        together (read as soon as they are done; the map's or the agent's
        are the whole target's); None otherwise (each case's are its own)."""
        if self.edge_map is not None:
            return self._map_features()
        return self._probes() if self.agent is not None else None

    def _map_features(self) -> frozenset:
        """The edge map's features, once the target has settled."""
        if self.dead:
            return frozenset()
        self._settle(SANCOV_SETTLE_MAX)
        return self.edge_map.features()

    def _settle(self, longest: float) -> None:
        """Wait SANCOV_SETTLE seconds, then up to ``longest`` more until the
        target has no thread running or waiting to run, twice in a row."""
        time.sleep(SANCOV_SETTLE)
        process = self.spawned.process
        deadline = time.monotonic() + longest
        quiet = 0
        while quiet < 2 and time.monotonic() < deadline and process.poll() is None:
            quiet = 0 if runnable_threads(process.pid) else quiet + 1
            if quiet < 2:
                time.sleep(SANCOV_SETTLE / 2)

    def _units(self, features) -> set:
        """What of ``features`` a group is searched for: under sancov their
        edges (a group's hit counts are its cases' added up: a bucket is a
        case's only when it runs alone), else the features."""
        return {f >> 4 for f in features} if self.feedback == "sancov" else set(features)

    def _learn_group(self, cases, observations, features: frozenset | None) -> None:
        """What a group of cases showed.  Under sancov and jacoco
        (``features``: the group's edges or probes, _group_features): when
        some are new (under sancov, an edge not seen before), the cases that
        show them alone are found by bisection (_bisect) and kept
        (_learn_found).  What no case was found to show is looked for again
        when a later group shows it, BISECTION_TRIES times at most (but in
        the corpus's first run: its inputs are all kept)."""
        if features is None:
            for case, obs in zip(cases, observations):
                self._learn(case, obs)
            return
        if self.feedback == "sancov":
            new = self._units(features) - self._edges_seen
        else:
            new = set(self.corpus.new_features(features))
        if not new:
            self._observe(features)
            return
        self.bisections += 1
        attributed = set()
        for case, wanted, ran in self._bisect(list(cases), new, features):
            attributed |= wanted
            self._learn_found(case, wanted, ran)
        missed = new - attributed
        if all(case.rerun_of is not None for case in cases):
            missed = set()
        self._missed.update(missed)
        again = {f for f in missed if self._missed[f] < BISECTION_TRIES}
        self.unattributed += len(missed) - len(again)
        if again:
            features = [f for f in features if not self._units((f,)) & again]
        self._observe(features)

    def _run_part(self, cases) -> frozenset:
        """Under sancov and jacoco, the features ``cases`` (a part of a group,
        or a case alone) show, run again on a connection each, as a group
        runs but not judged: one that crashed the target is looked for
        when the campaign runs it (the target is restarted here and they
        show nothing)."""
        self._reset_coverage()
        # (Not judged: a connection is watched past its answers no longer than
        # a case alone is, under sancov; what the target does after, the map
        # shows once it settled.)
        self._observe_group(cases, linger=self.linger)
        if self.spawned is not None and self.spawned.exited() is not None:
            self._fresh_target(restart=True)
            return frozenset()
        return self._group_features()

    def _learn_found(self, case: Case, wanted: set, ran: frozenset) -> None:
        """``case`` alone showed ``ran``, the features of its group ``wanted``
        among them: kept (with them, and under sancov the edges it passes
        again: _repeated), or in the corpus's first run (a kept input run
        again) their input's features."""
        if self.feedback == "sancov":
            new = self.corpus.new_features(ran)
            self._observe(ran)          # (a group's counts are not a case's: these are)
            new = self._repeated(case, ran, new)
        else:
            new = frozenset(wanted)
        if not new:
            return
        if case.rerun_of is not None:
            case.rerun_of.features = case.rerun_of.features | new
            return
        entry = self._keep(case, new)
        if self.agent is not None:
            self.identified.append({
                "case": case.index, "input": entry.name, "probes": len(new),
                "classes": sorted({class_of(f, self.agent.class_names) for f in new})[:5]})
            del self.identified[:-IDENTIFIED_SHOWN]

    def _bisect(self, cases: list, new: set, ran: frozenset) -> list:
        """The cases of ``cases`` (a group that showed the features ``ran``,
        ``new`` among their units (_units) not seen before) that show some of
        them alone: each with those of ``new`` it showed (one goes to the
        first case found to show it) and what it showed alone, in at most
        BISECTION_RUNS runs: a part's first half runs again, on its own, and
        is searched for what of ``new`` it showed; the second half for the
        rest.  A part of one case is that case alone."""
        budget = [BISECTION_RUNS]
        found = []

        def run(part) -> frozenset:
            budget[0] -= 1
            self.bisection_runs += 1
            return self._run_part(part)

        def search(part, wanted: set, ran: frozenset | None = None) -> set:
            """What of ``wanted`` the cases of ``part`` were found to show."""
            if ran is None:
                if budget[0] <= 0 or self.dead:
                    return set()
                ran = run(part)
            wanted = wanted & self._units(ran)
            if not wanted:
                return set()
            if len(part) == 1:
                found.append((part[0], wanted, ran))
                return wanted
            half = len(part) // 2
            got = search(part[:half], wanted)
            rest = wanted - got
            return got | (search(part[half:], rest) if rest else set())
        search(cases, new, ran)
        return found

    def _learn_pipelined(self, cases, states) -> None:
        """What the cases of a pipelined batch showed (under state feedback),
        each its ``states`` entry. A new state counts only when the case shows it
        again alone, on a connection of its own: in a batch it may owe it to the
        cases before it on the connection.  Such cases wait (_rerun_new_states)."""
        for case, state in zip(cases, states):
            features = state_features(state)
            new = self.corpus.new_features(features)
            self._observe(features)
            if new:
                self._new_in_batches.append((case, new, self.stats.cases))
        waiting = self._new_in_batches
        if waiting and (len(waiting) >= RERUN_BATCH
                        or self.stats.cases - waiting[0][2] >= RERUN_DELAY):
            self._rerun_new_states()

    def _rerun_new_states(self) -> None:
        """The cases whose states in pipelined batches were new, run again
        alone: together, each on a connection of its own (_states_together:
        one round of the target's answers for all of them, not one each; a
        case left out there runs alone, judged as any case); a case whose
        new features it shows again is kept (with those)."""
        waiting, self._new_in_batches = self._new_in_batches, []
        if not waiting or self.dead:
            return
        got = self._states_together([Entry(list(case.messages), case.seed_name)
                                     for case, _, _ in waiting])
        for k, (case, new, _) in enumerate(waiting):
            features = got[k] if k in got else self._features_of(case.messages, case.seed_name)
            new = new & (features or frozenset())
            if new and not self.dead:
                self._keep(case, new)

    def _learn(self, case: Case, obs) -> None:
        """What ``case`` showed: kept (minimized first) when it is new."""
        if self.feedback == "none":
            return
        features = self._read_features(obs)
        new = self.corpus.new_features(features)
        self._observe(features)
        if not new:
            return
        if self.agent is not None:
            # Only what it runs again counts (a probe of a thread that ran
            # meanwhile is not the case's).
            again = self._features_of(case.messages, case.seed_name)
            new = new & (again or frozenset())
        if self.edge_map is not None:
            new = self._repeated(case, features, new)
        if new:
            self._keep(case, new)

    def _repeated(self, case: Case, features: frozenset, new: frozenset) -> frozenset:
        """Under sancov, of the ``new`` features ``case`` showed alone (all
        it showed: ``features``), those it shows again, run once more --
        calibrated as AFL does.  Edges passed the first time and not the
        second flicker (the target's timing, not the input: a connection's
        end handled after the map was read) and are masked from now on
        (edges passed the second time only are not: on a loaded machine the
        first run's answer may come after its wait, its edges after the
        read); edges passed as many times as another bucket (a read loop's
        turns follow TCP's segments) count as passed or not, from now on.
        What the second run showed is seen.  (Run as a bisection's part is,
        and its minimization's tries: see _run_part.)"""
        again = self._run_part([case])
        self._observe(again)
        first, second = {f >> 4 for f in features}, {f >> 4 for f in again}
        changed = {f >> 4 for f in features ^ again} & first
        flicker = first - second
        self.masked_edges |= flicker
        self.uncounted_edges |= changed - flicker
        return frozenset(f for f in new & again if f >> 4 not in changed)

    def _keep(self, case: Case, new: frozenset) -> Entry:
        """``case`` brought the features ``new``: kept, minimized first (the
        corpus's entry: an equal one it had, or the new one)."""
        messages = case.messages
        if self.minimize and self._trimming is None:
            self._trimming = new
            # (Under state feedback the tries go together, each on a
            # connection of its own; sancov's map and JaCoCo's probes are
            # the whole target's: one at a time.)
            together = (lambda candidates: self._trim_together(candidates, new, case.seed_name)) \
                if self.feedback == "state" else None
            if self.feedback == "sancov":
                def features(m):
                    return self._run_part([_rerun_case(Entry(list(m), case.seed_name))])
            else:
                def features(m):
                    return self._features_of(m, case.seed_name) or set()
            try:
                messages = trim(messages, lambda m: new <= features(m),
                                TRIM_BUDGET, lambda m, at, n: cut_fixed(m, at, n, self.ctx),
                                together)
            finally:
                self._trimming = None
        parent = case.parent
        before = len(self.corpus.entries)
        entry = self.corpus.add(Entry(list(messages), case.seed_name, features=new,
                                      found_at=self.stats.cases,
                                      body_types=None if parent is None else parent.body_types))
        if len(self.corpus.entries) > before:
            self.kept += 1                   # (else merged into an equal one)
            # (Every message of it: havoc mutates any of an input's messages.)
            for k, message in enumerate(entry.messages):
                self.ctx.remember(message, entry.body_types if k == 0 else None)
        return entry

    def _trim_together(self, candidates, new: frozenset, origin: str):
        """Whether each of minimization's ``candidates`` still shows the
        features ``new``, in order (a generator: read up to the first that
        does), the candidates run at once as the corpus's first inputs are
        (_states_together); one left out there (its connection flooded or
        brought more answers, or the target broke) runs alone, judged as
        any case."""
        got = self._states_together([Entry(list(m), origin) for m in candidates])
        for k, messages in enumerate(candidates):
            features = got.get(k)
            if features is None:
                features = self._features_of(messages, origin)
            yield new <= (features or set())

    def _feedback_case(self, index: int) -> Case:
        rng = random.Random(f"{self.seed}:{index}")
        entry = self.corpus.pick(rng, self.stats.cases)
        if rng.random() < HAVOC_SHARE:
            other = rng.choice(self.corpus.entries).messages
            messages, mutations = havoc(entry.messages, rng, self.ctx, other, entry.body_types)
        else:
            messages, mutations = mutate(entry.messages, rng, self.ctx, entry.body_types)
        return Case(index, entry.origin, messages, mutations, parent=entry)

    def feedback_summary(self) -> dict:
        out = {"kind": self.feedback}
        if self.feedback == "none":
            return out
        out.update(features=len(self.corpus.seen), initial_features=self.initial_features,
                   corpus=len(self.corpus.entries),
                   kept=self.kept)
        if self.feedback == "sancov":
            out.update(edges=len(self._edges_seen), initial_edges=self.initial_edges,
                       masked_edges=len(self.masked_edges), bisections=self.bisections,
                       bisection_runs=self.bisection_runs,
                       unattributed_edges=self.unattributed)
        if self.agent is not None:
            # (probes: those seen, and those run but to be looked for again)
            pending = sum(1 for f, n in self._missed.items()
                          if n < BISECTION_TRIES and f not in self.corpus.seen)
            out.update(agent=self.agent.address, probes=len(self.corpus.seen) + pending,
                       initial_probes=self.initial_probes,
                       masked_probes=len(self.masked_probes),
                       classes=len({f >> PROBE_BITS for f in self.corpus.seen}),
                       dumps=self.agent.dumps, agent_seconds=round(self.agent.seconds, 2),
                       bisections=self.bisections, bisection_runs=self.bisection_runs,
                       unattributed_probes=self.unattributed, identified=list(self.identified))
        return out

    def _close_feedback(self) -> None:
        if self.agent is not None:
            self.agent.close()
        # (Under sancov each target process's map goes with it: SpawnedTarget.stop.)


def _rerun_case(entry) -> Case:
    """A kept input (a corpus Entry) run again as it is, as a case."""
    case = Case(-1, entry.origin, list(entry.messages),
                [Mutation("corpus", "payload", "a kept input, rerun")])
    case.prediction = predict(case.messages)
    case.batchable, case.tail = framing(case.prediction, case.messages)
    return case


def answers_by_case(cases, answers) -> list | None:
    """A pipelined batch's answers (request id, answer_state) given back to
    their cases, in the order they came: per case, its state as on a
    connection of its own that the target kept open. A Reply or LocateReply
    goes to the case whose request has its id; a MessageError (it names no
    request) to the case whose violation is next in the order sent, as the
    target reads the connection's bytes in order. None when an answer names no
    case of the batch, or a case got other than its due answers."""
    owner = {rid: k for k, case in enumerate(cases) for rid in case.prediction.request_ids}
    # (a case's answers due that name no request: its MessageErrors)
    violations = deque(k for k, case in enumerate(cases)
                       for _ in range(case.prediction.answers - len(case.prediction.request_ids)))
    parts: list = [[] for _ in cases]
    for rid, state in answers:
        if rid is None:
            if not violations:
                return None
            parts[violations.popleft()].append(state)
            continue
        k = owner.get(rid)
        if k is None:
            return None
        parts[k].append(state)
    if violations or any(len(part) != case.prediction.answers
                         for part, case in zip(parts, cases)):
        return None
    return [kept_open_state(part) for part in parts]

def cut_fixed(message: bytes, at: int, n: int, ctx) -> bytes:
    """``message`` without ``n`` bytes at ``at``, the lengths the layout
    knows around them and its message_size fixed up."""
    cut = bytearray(message[:at] + message[at + n:])
    fix_lengths(cut, message, at, -n, ctx)
    fix_size(cut)
    return bytes(cut)
