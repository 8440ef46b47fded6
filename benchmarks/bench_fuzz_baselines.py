"""Code coverage of JacORB and of omniORB 4.2.5 reached by `pycdr fuzz` with coverage
feedback, by `pycdr fuzz` without feedback, and by boofuzz 0.4.2 driving a GIOP block model
(boofuzz_giop.py), in campaigns of the same length against the same target.

Each campaign's connections are recorded as they go (recording_relay.py: a TCP relay that
forwards each connection to the server and keeps every byte the fuzzer sent on it), and
coverage is measured afterwards the same way for all three kinds: every distinct recorded
connection is sent again, on a connection of its own, to a fresh server built or started
for measuring.  The three campaigns:

- pycdr, feedback: ``pycdr fuzz --coverage jacoco:HOST:PORT`` on JacORB, ``--coverage
  sancov`` on omniORB (the target's own coverage steers it);
- pycdr, no feedback: ``pycdr fuzz --coverage none`` (cases from the seeds alone);
- boofuzz: boofuzz 0.4.2 on the block model, a connection per case.

Both pycdr campaigns get the IDL (--idl/--interface) and the conformance catalog's seeds.

JacORB (``--target jacorb``): a fresh JacORB echo server (tests/peers/echo.idl's
PycdrTest::Echo, logging off, its POA's thread pool unbounded: see JACORB_POOL) started
with the JaCoCo agent, fuzzed through a relay in this process.  The replay goes to another fresh JacORB with the agent, whose probes are
reset once it is up and dumped after the last connection.  The figure is the probes run
in JacORB's GIOP, IIOP, CDR and TypeCode classes (org/jacorb/orb/giop/*,
org/jacorb/orb/iiop/*, org/jacorb/orb/CDR*, org/jacorb/orb/TypeCode*); the probes of all
JacORB classes are printed beside it.

omniORB (``--target omniorb``): the C++ echo servant of conformance/echo.idl on omniORB
4.2.5 as benchmarks/omniorb/build.sh builds it, twice.  The campaigns fuzz its build for
feedback (trace-pc-guard and the coverage shim, AddressSanitizer).  pycdr spawns it
(``--spawn``, restarting it after a crash) through recording_relay.py, which forks a relay
and becomes the server, so the process the fuzzer watches is the server itself; boofuzz,
which restarts nothing, reaches it through a relay in this process that starts it again
when it has died.  The replay goes to its source-coverage build (clang's
-fprofile-instr-generate -fcoverage-mapping, ASan) by benchmarks/omniorb/measure.py:
restarted when a connection kills it, every process's profile merged by llvm-profdata.
The figure is the branches llvm-cov counts covered in omniORB's GIOP, CDR and TypeCode
sources (src/lib/omniORB/orbcore/giop*.cc, GIOP_C.cc, GIOP_S.cc, cdr*.cc,
src/lib/omniORB/dynamic/typecode.cc, tcParser.cc, include/omniORB4/cdrStream.h); those
of all of src/lib/omniORB/orbcore/ are printed beside it.  Not measured (a note says why)
where either build is missing.

Per ORB and campaign kind: the median over the trials, and the Vargha-Delaney A12 of
pycdr with feedback against each baseline (the chance that a trial of pycdr with feedback
covers more than a trial of the baseline; 0.5: no difference).  The goal: pycdr with
feedback at 1.5x boofuzz's median coverage or more, and at 1.2x pycdr without feedback's.

    .venv/bin/python benchmarks/bench_fuzz_baselines.py [--target jacorb|omniorb]...
        [--seconds S] [--trials N] [--only KIND]... [--keep DIR] [--results]

Both ORBs by default: 30 ten-minute campaigns in the full run."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

from benchprocs import BENCH_DIR  # (also puts tests/ on sys.path for `peers`)
from peers.jacoco import agent_option
from peers.jacorb import JACORB, PEERS_ECHO_IDL, peers_echo_interface
from peers.java_orb import start_java_echo_server
from peers.process import free_port

from recording_relay import (REPLAY_WAIT, RecordingRelay, read_journals, replay_connection,
                             save_connections)
import results as results_format

from pycdr.fuzz.jacoco import JacocoAgent

# The run: 10-minute campaigns, 5 trials of each kind on each ORB (5 hours of
# campaigns, about 6 with their replays, on 2 cores).
FULL_RUN = "python benchmarks/bench_fuzz_baselines.py --seconds 600 --trials 5 --results"
KINDS = ("pycdr, feedback", "pycdr, no feedback", "boofuzz")
GOALS = {"pycdr, no feedback": 1.2, "boofuzz": 1.5}
BOOFUZZ_VERSION = "0.4.2"
BOOFUZZ_SCRIPT = os.path.join(BENCH_DIR, "boofuzz_giop.py")
OMNIORB_DIR = os.path.join(BENCH_DIR, "omniorb")
RELAY_SCRIPT = os.path.join(BENCH_DIR, "recording_relay.py")
OMNIORB_KEY = b"Echo"          # (the echo servant's object, under omniINSPOA)
LOGGING_OFF = os.path.join(BENCH_DIR, "logging-off.properties")
JACORB_QUIET = {"jacorb.log.default.verbosity": "0"}
# JacORB's POA thread pool, fuzzed and measuring alike: each Request whose response_flags
# are not 0, 1 or 3 kills a thread of it for good (docs/FINDINGS.md), and at the default
# 20 the feedback campaigns stopped JacORB within two minutes (the campaign then ends: the
# fuzzer cannot restart a target it did not start) and a replay stopped measuring.
JACORB_POOL = {"jacorb.poa.thread_pool_max": "1000000"}
# The classes whose probes are the figure (JaCoCo names classes with slashes).
MEASURED_PACKAGES = ("org/jacorb/orb/giop/", "org/jacorb/orb/iiop/")
MEASURED_PREFIXES = ("org/jacorb/orb/CDR", "org/jacorb/orb/TypeCode")
# Replay into JacORB: connections at once.
REPLAY_CONNECTIONS = 64


def measured(name: str) -> bool:
    return name.startswith(MEASURED_PACKAGES) or (
        name.startswith(MEASURED_PREFIXES) and "/" not in name[len("org/jacorb/orb/"):])


def a12(xs, ys) -> float:
    """Vargha-Delaney A12: P(x > y) + P(x = y) / 2 over all pairs."""
    wins = sum((x > y) + 0.5 * (x == y) for x in xs for y in ys)
    return wins / (len(xs) * len(ys))


def boofuzz_version() -> str | None:
    try:
        from importlib.metadata import PackageNotFoundError, version
        return version("boofuzz")
    except PackageNotFoundError:
        return None


def start_jacorb():
    """A JacORB echo server, logging off, with the JaCoCo agent: (server, agent port)."""
    agent_port = free_port()
    orb = dataclasses.replace(JACORB, system_properties={
        **JACORB.system_properties, "java.util.logging.config.file": LOGGING_OFF})
    server = start_java_echo_server(orb, peers_echo_interface(),
                                    properties={**JACORB_QUIET, **JACORB_POOL},
                                    jvm_options=[agent_option(agent_port)])
    return server, agent_port


def corbaloc(port: int, key: bytes) -> str:
    return f"corbaloc::1.2@127.0.0.1:{port}/{urllib.parse.quote_from_bytes(key, safe='')}"


def run_pycdr(where: list, coverage: str, idl: str, interface: str, seconds: float,
              seed: int, work: str, env: dict | None = None) -> dict:
    """A `pycdr fuzz` campaign against ``where`` (a target, or --spawn and its command)."""
    argv = [os.path.join(os.path.dirname(sys.executable), "pycdr"), "fuzz", *where,
            "--coverage", coverage, "--idl", idl, "--interface", interface,
            "--duration", str(seconds), "--seed", str(seed), "--no-minimize",
            "--corpus-dir", os.path.join(work, "corpus"), "--out", os.path.join(work, "findings"),
            "--json", "-"]
    began = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 300,
                          env=None if env is None else {**os.environ, **env})
    elapsed = time.monotonic() - began
    try:
        out = json.loads(done.stdout)
    except ValueError:
        raise RuntimeError(f"pycdr fuzz ended with {done.returncode}: "
                           f"{(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    # (A campaign ends early when the fuzzer judges the target dead: it is not restarted.)
    return {"elapsed": elapsed, "cases": out["cases"], "fuzz_seconds": out["elapsed"],
            "target_dead": out["target_dead"], "findings": len(out["findings"]),
            "target_restarts": out.get("restarts")}


def run_boofuzz(relay_port: int, key: bytes, seconds: float, work: str) -> dict:
    argv = [sys.executable, BOOFUZZ_SCRIPT, "127.0.0.1", str(relay_port), key.hex(),
            "--seconds", str(seconds), "--db", os.path.join(work, "boofuzz.db")]
    began = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 120,
                          cwd=work)
    elapsed = time.monotonic() - began
    if done.returncode != 0:
        raise RuntimeError(f"boofuzz ended with {done.returncode}: "
                           f"{(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    return {"elapsed": elapsed, "cases": None, "fuzz_seconds": None, "target_dead": None,
            "findings": None, "target_restarts": None, "finished": "sent all" in done.stderr}


class JacORB:
    """JacORB with the JaCoCo agent: the campaigns through a relay in this process, the
    probes of a fresh JacORB the recorded connections are sent again to."""
    name = "JacORB"
    unit, parts, whole = "probes", "classes", "all JacORB"
    measured_text = "probes run in JacORB's GIOP, IIOP, CDR and TypeCode classes"
    path = "JacORB (JaCoCo agent)"

    def missing(self) -> str | None:
        return None            # (a missing JVM or jar fails the run, naming it)

    def campaign(self, kind: str, seconds: float, trial: int, work: str) -> tuple:
        """(what the campaign says, the connections it made, how many were cut)."""
        server, agent_port = start_jacorb()
        relay = RecordingRelay((server.host, server.port))
        try:
            if kind == "boofuzz":
                run = run_boofuzz(relay.port, server.object_key, seconds, work)
            else:
                coverage = f"jacoco:127.0.0.1:{agent_port}" if kind == "pycdr, feedback" \
                    else "none"
                run = run_pycdr([corbaloc(relay.port, server.object_key)], coverage,
                                PEERS_ECHO_IDL, "PycdrTest::Echo", seconds, 1000 + trial, work)
            time.sleep(1.0)              # the last connections' ends reach the relay
        finally:
            connections = relay.close()
            server.stop()
        return run, connections, relay.cut

    def coverage(self, connections: list) -> dict:
        """Probes a fresh JacORB with the agent runs for ``connections`` sent again."""
        server, agent_port = start_jacorb()
        agent = JacocoAgent("127.0.0.1", agent_port, timeout=60)
        try:
            agent.reset()
            began = time.monotonic()
            with ThreadPoolExecutor(REPLAY_CONNECTIONS) as pool:
                list(pool.map(lambda data: replay_connection(server.host, server.port, data),
                              connections))
            seconds = time.monotonic() - began
            time.sleep(0.5)
            dump = agent.dump(reset=False)
        finally:
            agent.close()
            server.stop()
        ran = total = 0
        classes = 0
        for name, _, bits in dump.classes.values():
            count = bin(bits).count("1")
            total += count
            if measured(name):
                ran += count
                classes += count > 0
        return {"covered": ran, "parts": classes, "all_covered": total,
                "replay_seconds": seconds, "restarts": None, "spins": None}


def omniorb_modules():
    """benchmarks/omniorb/campaign.py and measure.py (imported when omniORB is measured)."""
    if OMNIORB_DIR not in sys.path:
        sys.path.insert(0, OMNIORB_DIR)
    import campaign
    import measure
    return campaign, measure


class OmniORB:
    """omniORB 4.2.5's C++ echo servant of benchmarks/omniorb/build.sh: campaigns against
    its sancov build (pycdr's spawned through recording_relay.py, boofuzz's through a
    relay in this process that starts it again when it has died), branch coverage from
    its source-coverage build (benchmarks/omniorb/measure.py)."""
    name = "omniORB"
    unit, parts, whole = "branches", "files", "all orbcore"
    measured_text = ("branches covered in omniORB's GIOP, CDR and TypeCode sources "
                     "(benchmarks/omniorb/measure.py's MEASURED)")
    path = "omniORB 4.2.5 C++ servant (sancov + ASan; measured: source coverage + ASan)"

    def missing(self) -> str | None:
        omni, measure = omniorb_modules()
        fuzzed = omni.spawn_command("cxx").split()[0]
        if not os.path.exists(fuzzed):
            return f"{fuzzed} is missing: run benchmarks/omniorb/build.sh"
        return measure.missing()

    def campaign(self, kind: str, seconds: float, trial: int, work: str) -> tuple:
        omni, _ = omniorb_modules()
        from pycdr.fuzz.target import SpawnedTarget, endpoint
        server = omni.spawn_command("cxx")
        env = {"ASAN_OPTIONS": omni.ASAN_OPTIONS}
        if kind != "boofuzz":
            journal = os.path.join(work, "journal")
            spawn = f"{sys.executable} {RELAY_SCRIPT} --journal {journal} -- {server}"
            run = run_pycdr(["--spawn", spawn], "sancov" if kind == "pycdr, feedback"
                            else "none", omni.IDL, omni.INTERFACE, seconds, 1000 + trial, work,
                            env)
            time.sleep(1.0)              # the last relays see their server's end
            connections, cut = read_journals(journal)
            return run, [data for data in connections if data], cut
        target = SpawnedTarget(server, env=env)
        address = [endpoint(target.start())]
        lock = threading.Lock()

        def current():
            with lock:
                if target.exited() is not None:
                    address[0] = endpoint(target.restart())
                return address[0]
        relay = RecordingRelay(current)
        try:
            run = run_boofuzz(relay.port, OMNIORB_KEY, seconds, work)
            time.sleep(1.0)
        finally:
            connections = relay.close()
            target.stop()
        return {**run, "target_restarts": target.restarts}, connections, relay.cut

    def coverage(self, connections: list) -> dict:
        _, measure = omniorb_modules()
        r = measure.replay_coverage(connections)
        return {"covered": r["covered"], "parts": r["files"], "all_covered": r["all_covered"],
                "replay_seconds": r["replay_seconds"], "restarts": r["restarts"],
                "spins": r["spins"],
                "branches": r["branches"], "all_branches": r["all_branches"]}


TARGETS = {"jacorb": JacORB, "omniorb": OmniORB}


def one_campaign(target, kind: str, seconds: float, trial: int, keep: str | None) -> dict:
    work = tempfile.mkdtemp(prefix="pycdr-bench-baselines-")
    try:
        run, connections, cut = target.campaign(kind, seconds, trial, work)
        distinct = list(dict.fromkeys(connections))
        if keep:
            os.makedirs(keep, exist_ok=True)
            save_connections(distinct, os.path.join(
                keep, f"{target.name}-{kind.replace(', ', '-').replace(' ', '-')}-{trial}.bin"))
        coverage = target.coverage(distinct)
        return {"kind": kind, "trial": trial, "connections": len(connections),
                "distinct": len(distinct), "cut": cut, **run, **coverage}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def summary(target, kinds: list, runs: dict) -> list:
    """Per kind: its medians, and pycdr with feedback's against it (printed too)."""
    reference = [r["covered"] for r in runs.get("pycdr, feedback", [])]
    rows = []
    print(f"\n{target.name}: {target.measured_text}")
    for kind in kinds:
        covered = [r["covered"] for r in runs[kind]]
        median = statistics.median(covered)
        ratio = results_format.ratio(statistics.median(reference), median) \
            if reference and kind != "pycdr, feedback" else None
        effect = round(a12(reference, covered), 2) \
            if reference and kind != "pycdr, feedback" else None
        goal = GOALS.get(kind)
        print(f"{kind:22} median {median:7} {target.unit} (trials: {covered})"
              + (f"; feedback/this {ratio}x (goal {goal}x), A12 {effect}"
                 if ratio is not None else ""))
        rows.append([target.name, kind, len(covered), median, min(covered), max(covered),
                     statistics.median([r["all_covered"] for r in runs[kind]]),
                     round(statistics.median([r["connections"] for r in runs[kind]])),
                     ratio, goal, effect])
    return rows


def dash(value) -> str:
    return "-" if value is None else str(value)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", action="append", choices=tuple(TARGETS),
                        help="the ORB fuzzed and measured (repeatable; default: both)")
    parser.add_argument("--seconds", type=float, default=600.0, help="one campaign's length")
    parser.add_argument("--trials", type=int, default=5, help="campaigns of each kind")
    parser.add_argument("--only", action="append", choices=KINDS,
                        help="run only this kind of campaign (repeatable)")
    parser.add_argument("--keep", metavar="DIR", default=None,
                        help="save each campaign's distinct recorded connections in DIR")
    results_format.add_argument(parser)
    args = parser.parse_args(argv)
    kinds = [k for k in KINDS if not args.only or k in args.only]
    notes = []
    if "boofuzz" in kinds and boofuzz_version() != BOOFUZZ_VERSION:
        found = boofuzz_version()
        notes.append(f"boofuzz: not run (boofuzz {BOOFUZZ_VERSION} is not installed"
                     f"{'' if found is None else f'; {found} is'}: pip install "
                     f"'.[benchmarks]')")
        print(notes[-1])
        kinds.remove("boofuzz")
    targets = []
    for name in args.target or tuple(TARGETS):
        target = TARGETS[name]()
        why = target.missing()
        if why:
            notes.append(f"{target.name}: not measured ({why})")
            print(notes[-1])
        else:
            targets.append(target)
    if not targets:
        return 1
    runs = {(target.name, kind): [] for target in targets for kind in kinds}
    print(f"{'ORB':8} {'campaign':22} {'trial':>5} {'seconds':>7} {'conns':>7} {'distinct':>8} "
          f"{'covered':>7} {'parts':>7} {'whole':>10} {'replay s':>8} "
          f"{'restarts (target/replay, spinning)'}")
    # Trials interleaved (one of each kind, then the next): a load that changes during the
    # run falls on every kind alike.
    for trial in range(args.trials):
        for target in targets:
            for kind in kinds:
                r = one_campaign(target, kind, args.seconds, trial, args.keep)
                runs[target.name, kind].append(r)
                print(f"{target.name:8} {kind:22} {trial:5} {r['elapsed']:7.1f} "
                      f"{r['connections']:7} {r['distinct']:8} {r['covered']:7} "
                      f"{r['parts']:7} {r['all_covered']:10} {r['replay_seconds']:8.1f} "
                      f"{dash(r['target_restarts'])}/{dash(r['restarts'])}"
                      + ("" if r["spins"] is None else f", {r['spins']}")
                      + ("" if r["cases"] is None else
                         f"  ({r['cases']} cases in {r['fuzz_seconds']} s of fuzzing, "
                         f"{r['findings']} findings"
                         f"{', target judged dead' if r['target_dead'] else ''})"),
                      flush=True)
    rows = []
    for target in targets:
        rows += summary(target, kinds, {kind: runs[target.name, kind] for kind in kinds})
        finished = sum(bool(r.get("finished")) for r in runs.get((target.name, "boofuzz"), []))
        if finished:
            notes.append(f"{target.name}: boofuzz sent all its model's cases before the time "
                         f"was up in {finished} of {len(runs[target.name, 'boofuzz'])} "
                         f"campaigns")
        totals = [r for kind in kinds for r in runs[target.name, kind] if "branches" in r]
        if totals:
            notes.append(f"{target.name}: of {totals[0]['branches']} branches in the "
                         f"measured sources, {totals[0]['all_branches']} in all of orbcore")
    for note in notes:
        print(f"note: {note}")
    x = results_format.RATIO
    results_format.write(args.results, "fuzz_baselines", results_format.record(
        "fuzz_baselines", script=__file__, argv=sys.argv[1:] if argv is None else argv,
        quick=args.seconds < 600 or args.trials < 5 or len(targets) < len(TARGETS),
        path={"codec": results_format.codec_path(),
              "orb": "; ".join(target.path for target in targets)},
        settings={"seconds": args.seconds, "trials": args.trials, "boofuzz": boofuzz_version(),
                  "replay_connections": REPLAY_CONNECTIONS, "replay_wait": REPLAY_WAIT,
                  **({"omniorb_replay_batch": omniorb_modules()[1].REPLAY_BATCH}
                     if any(isinstance(target, OmniORB) for target in targets) else {})},
        tables=[results_format.table(
            "; ".join(f"{target.name}: {target.measured_text} (whole: {target.whole})"
                      for target in targets)
            + ", by each campaign's inputs replayed into a fresh instrumented server",
            ["ORB", "campaign", "trials", "median covered", "min", "max",
             "median covered, whole", "median connections", f"feedback/this {x}", f"goal {x}",
             "A12 feedback vs this"],
            rows),
            results_format.table(
            "each campaign", ["ORB", "campaign", "trial", "seconds", "connections", "distinct",
                              "covered", "parts covered", "covered, whole", "replay seconds",
                              "target restarts", "replay restarts",
                              "replay restarts of a spinning server", "pycdr cases",
                              "pycdr fuzzing seconds", "findings", "notes"],
            [[target.name, r["kind"], r["trial"], round(r["elapsed"], 1), r["connections"],
              r["distinct"], r["covered"], r["parts"], r["all_covered"],
              round(r["replay_seconds"], 1), r["target_restarts"], r["restarts"], r["spins"],
              r["cases"],
              r["fuzz_seconds"], r["findings"],
              "target judged dead: ended early" if r["target_dead"] else
              "boofuzz sent all its cases" if r.get("finished") else ""]
             for target in targets for kind in kinds for r in runs[target.name, kind]])],
        notes=notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
