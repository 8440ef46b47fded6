"""Cases per second of `pycdr fuzz` against each target, beside two floors
measured in the same run:

- the issue's floor: a plain socket loop that opens a fresh connection,
  sends one LocateRequest and reads the answer (or the close), as fast as it
  can, one after the other;
- the same-job floor: a plain socket loop that sends the very cases the
  fuzzer makes (the same seed, the same bytes), each on a fresh connection,
  up to as many at once as the fuzzer's window, and reads the answers a
  conforming server gives (or the close; a case with no answer due is
  watched as long as the fuzzer does, one that gets none is given the
  fuzzer's learned wait).  It does no judging, probing or attribution: what
  is left is the target's own cost of the malformed cases.  A target the
  fuzzer restarts (omniORBpy) is restarted by the same-job floor too when a
  case killed it (a connection refused: its restart, from a standby as the
  campaign's, is timed, and the case sent again), so a dead target's fast
  refusals never count as cases; the restarts are printed.  Printed too:
  how busy the floor's target is just after its last case (omniORB 4.2.5
  is left spinning by ProfileAddr floods: the floor goes on beside the
  spin, where the campaign has to see it -- about a tenth of a second --
  and restart its target, a cost of the job the floor does not pay).

Each target's campaigns run without feedback (``--coverage none``) and with
the default state feedback, ``--repeats`` of each taking turns (A/B/B/A...:
a shared machine's load drifts); rates are medians, each repeat's printed
too.  Printed per target: each kind's cases/s against the issue's floor and
the same-job floor, and feedback's cost (the state campaign's cases/s over
the none campaign's beside it).  The goals: the fuzzer at 50 % of the
same-job floor or more on omniORBpy, 80 % on JacORB and the OpenJDK ORB;
feedback costing at most 10 % of the cases/s.  Fuzzer and target CPU
milliseconds per case are printed beside (steadier than the wall-time
rates on a loaded machine).  A rate counts from the campaign's start after
its target answered: under feedback, the corpus's first run is in it (the
ratio past the start, without it, is printed too).  The
same-job floor sends the cases of the campaign without feedback (a
campaign with feedback makes others, from what it kept).  Each
measurement (floors, each campaign) gets a target of its own, started
fresh: a case may leave a target slower (omniORB 4.2.5 spins a thread
after a ProfileAddr Request).

Targets: the reference ORB (`pycdr serve` of the conformance Echo),
omniORBpy (spawned by the fuzzer, which restarts it after a finding that
broke it), JacORB and the OpenJDK ORB (the test peers; skipped when not
installed), and tests/raw_giop_server.py, a GIOP server written without
pycdr, with its planted faults left out (--no-faults: a finding's
confirmation and minimization would be timed, not the fuzzing).

    .venv/bin/python benchmarks/bench_fuzz.py [CASES [FLOOR_CONNECTIONS]] [--repeats N]
        [--only TARGET]...
"""

import argparse
import collections
import dataclasses
import os
import selectors
import socket
import sys
import time

from benchprocs import REPO_ROOT  # noqa: F401 (puts tests/ on sys.path for `peers`)
from peers.jacorb import JACORB, peers_echo_interface, start_jacorb_echo_server
from peers.java_orb import start_java_echo_server
from peers.jdk_orbs import OPENJDK_ORB
from peers.omni import ECHO_IDL, OMNI_SERVER_SCRIPT
from peers.process import PeerError

from pycdr.conformance.target import resolve_target
from pycdr.fuzz.engine import Campaign, SpawnedTarget
from pycdr.fuzz.window import LINGER
from pycdr.fuzz.seeds import catalog_seeds
from pycdr.giop.messages import KeyAddr, LocateRequest, encode_message

PYCDR = os.path.join(os.path.dirname(sys.executable), "pycdr")
# The run benchmarks/README.md's table comes from: 1,500 cases (the Java ORBs a half
# and a tenth of them) and 1,000 floor connections a target, two campaigns of each
# kind, each target started fresh per step: about 6 minutes on 2 cores.
FULL_RUN = "python benchmarks/bench_fuzz.py 1500 1000 --results"


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc); NaN once it is gone
    (a spawned target the fuzzer restarted)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def complete_messages(data: bytes) -> int:
    """How many whole GIOP messages ``data`` starts with."""
    pos = count = 0
    while len(data) - pos >= 12:
        end = pos + 12 + int.from_bytes(data[pos + 8:pos + 12],
                                        "little" if data[pos + 6] & 1 else "big")
        if end > len(data):
            break
        pos, count = end, count + 1
    return count


def recv_answer(sock) -> None:
    """One GIOP message, or the close."""
    data = b""
    need = 12
    while len(data) < need:
        chunk = sock.recv(65536)
        if not chunk:
            return
        data += chunk
        if len(data) >= 12 and need == 12:
            need = 12 + int.from_bytes(data[8:12], "little" if data[6] & 1 else "big")


def floor(target, rounds: int, pid: int) -> dict:
    message = encode_message(LocateRequest(version=min(tuple(target.version), (1, 2)),
                                           request_id=1, target=KeyAddr(target.object_key)))
    target_cpu = process_cpu_seconds(pid)
    own_cpu = time.process_time()
    start = time.perf_counter()
    for _ in range(rounds):
        with socket.create_connection((target.host, target.port)) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.sendall(message)
            recv_answer(sock)
    wall = time.perf_counter() - start
    return {"rate": rounds / wall, "cpu": time.process_time() - own_cpu,
            "target_cpu": process_cpu_seconds(pid) - target_cpu, "wall": wall}


def same_job(target, jobs: list, connections: int, wait: float, pid: int,
             restart=None, cpu_seconds=None) -> dict:
    """The same-job floor (see the module's text): ``jobs`` are (bytes,
    answers due) pairs, each sent on a fresh connection, up to
    ``connections`` open at once.  A target that refuses a connection (one
    a case killed) is restarted by ``restart`` (which returns its new
    address; its time is the floor's) and the case sent to the new one;
    ``cpu_seconds``: the CPU of every process the target was (restarted:
    several)."""
    selector = selectors.DefaultSelector()
    todo = collections.deque(jobs)
    open_: dict = {}                 # socket -> [answers due, bytes read, deadline]
    cpu_seconds = cpu_seconds or (lambda: process_cpu_seconds(pid))
    restarts = 0
    target_cpu = cpu_seconds()
    own_cpu = time.process_time()
    start = time.perf_counter()
    while todo or open_:
        while todo and len(open_) < connections:
            data, due = todo.popleft()
            try:
                sock = socket.create_connection((target.host, target.port))
            except ConnectionRefusedError:
                if restart is None:
                    raise
                target = resolve_target(restart())
                restarts += 1
                todo.appendleft((data, due))
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.sendall(data)
            sock.setblocking(False)
            open_[sock] = [due, b"", time.monotonic() + (wait if due else 2 * LINGER)]
            selector.register(sock, selectors.EVENT_READ)
        soonest = min(state[2] for state in open_.values())
        for key, _ in selector.select(max(0.0, soonest - time.monotonic())):
            state = open_[key.fileobj]
            try:
                chunk = key.fileobj.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            state[1] = (state[1] + chunk)[:1 << 16]
            if not chunk or (state[0] and complete_messages(state[1]) >= state[0]):
                state[2] = 0.0
        now = time.monotonic()
        for sock in [sock for sock, state in open_.items() if state[2] <= now]:
            selector.unregister(sock)
            sock.close()
            del open_[sock]
    selector.close()
    wall = time.perf_counter() - start
    return {"rate": len(jobs) / wall, "cpu": time.process_time() - own_cpu,
            "target_cpu": cpu_seconds() - target_cpu, "wall": wall, "restarts": restarts}


def campaign_for(address: str, echo, coverage: str = "none", **options) -> Campaign:
    return Campaign(address, seed=11, minimize=False, coverage=coverage,
                    seed_sources=lambda t: catalog_seeds(t, echo=echo), **options)


def fuzz(address: str, cases: int, pid: int, echo, spawn=None, coverage: str = "none") -> dict:
    """One campaign of ``cases`` cases; its rate counts from the campaign's
    start (under feedback, the corpus's first run included)."""
    own_cpu = time.process_time()      # (the corpus's first run is the campaign's too)
    campaign = campaign_for(address, echo, coverage, spawn=spawn)
    if spawn is not None:
        # (Restarted, the target is another process: the CPU of all of them.)
        def target_cpu_now():
            return campaign.spawned.total_cpu_seconds()
    else:
        def target_cpu_now():
            return process_cpu_seconds(pid)
    try:
        target_cpu = target_cpu_now()
        began = time.monotonic()
        stats = campaign.run(max_cases=cases)
        run_wall = time.monotonic() - began
        own_cpu = time.process_time() - own_cpu
        target_cpu = target_cpu_now() - target_cpu
    finally:
        campaign.close()
    return {"rate": stats.rate, "run_rate": stats.cases / run_wall, "cpu": own_cpu, "target_cpu": target_cpu, "wall": stats.elapsed,
            "cases": stats.cases, "pipelined": stats.pipelined, "probes": stats.probes,
            "findings": len(campaign.findings), "unconfirmed": len(campaign.unconfirmed),
            "timeout": campaign.answer_timeout(), "restarts": stats.restarts,
            "standby": campaign.spawned.standby_used if campaign.spawned is not None else 0,
            "connections": campaign.connections}


class _Spawned:
    """A target started from a command line (the fuzzer's own way).  With
    ``restarts``, the campaign starts its own from the same ``command`` (and
    restarts it after a finding that broke it)."""

    def __init__(self, command, restarts=False):
        self.command = command if restarts else None
        # (With a standby, as the campaign's: a restart of the same-job
        # floor's target costs it what one costs the campaign.)
        self.spawned = SpawnedTarget(command, standby=restarts)
        self.address = self.spawned.start()
        self.pid = self.spawned.process.pid
        # (The same-job floor restarts a target a case killed, as the campaign does.)
        self.restart = self.spawned.restart if restarts else None
        self.cpu_seconds = self.spawned.total_cpu_seconds

    def stop(self):
        self.spawned.stop()


class _Peer:
    command = None
    restart = None       # (the campaign cannot restart it either)
    cpu_seconds = None

    def __init__(self, launcher):
        self.peer = launcher()
        self.address = self.peer.ior
        self.pid = self.peer.pid

    def stop(self):
        self.peer.stop()


# Targets whose own cost of a malformed case is high get this share of CASES
# (the OpenJDK ORB: some 35 ms of its CPU per case), so a run ends in minutes.
CASE_SHARE = {"OpenJDK ORB": 0.1, "JacORB": 0.5,
              "OpenJDK ORB, logging off": 0.1, "JacORB, logging off": 0.5}

# The Java ORBs as the tests run them log every malformed message (JacORB a
# stack trace, ~600 bytes of stderr a case; the OpenJDK ORB ~3.6 KB); the
# "logging off" rows run them with java.util.logging off and, for JacORB,
# jacorb.log.default.verbosity 0, as an operator fuzzing at speed would.
LOGGING_OFF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "logging-off.properties")
JACORB_QUIET = {"jacorb.log.default.verbosity": "0"}


def logging_off(orb):
    return dataclasses.replace(orb, system_properties={
        **orb.system_properties, "java.util.logging.config.file": LOGGING_OFF})

TARGETS = [
    ("reference ORB", lambda: _Spawned(f"{PYCDR} serve "
                                       f"{os.path.join(REPO_ROOT, 'conformance', 'echo.idl')} "
                                       f"--interface EchoAll::Echo"), None),
    # (Listening on a port of its choosing, so the fuzzer can keep a standby
    # process started beside the running one: see SpawnedTarget.)
    ("omniORBpy", lambda: _Spawned(f"{sys.executable} {OMNI_SERVER_SCRIPT} --idl {ECHO_IDL} "
                                   f"--interface PycdrTest::Echo --object-id Echo -- "
                                   f"-ORBendPoint giop:tcp:127.0.0.1:",
                                   restarts=True), False),
    ("JacORB", lambda: _Peer(start_jacorb_echo_server), False),
    ("JacORB, logging off", lambda: _Peer(lambda: start_java_echo_server(
        logging_off(JACORB), peers_echo_interface(), properties=JACORB_QUIET)), False),
    ("OpenJDK ORB", lambda: _Peer(lambda: start_java_echo_server(OPENJDK_ORB,
                                                                 peers_echo_interface())), False),
    ("OpenJDK ORB, logging off", lambda: _Peer(lambda: start_java_echo_server(
        logging_off(OPENJDK_ORB), peers_echo_interface())), False),
    ("raw GIOP server", lambda: _Spawned(f"{sys.executable} "
                                         f"{os.path.join(REPO_ROOT, 'tests', 'raw_giop_server.py')}"
                                         f" --no-faults"), None),
]


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def listed(values, spec: str = ".0f") -> str:
    return ", ".join(format(v, spec) for v in values)


def per_case_ms(run: dict, key: str) -> float:
    return 1000 * run[key] / max(1, run["cases"])


def measure(name: str, start, echo, cases: int, rounds: int, repeats: int) -> dict:
    """The floors, then campaigns without and with feedback taking turns
    (A/B/B/A...: the machine's load drifts), then the same-job floor; each
    on a target started fresh."""
    runs = {kind: [] for kind in FEEDBACK}
    # (A/B, then B/A: neither kind always runs first.)
    order = [kind for r in range(repeats) for kind in (FEEDBACK if r % 2 == 0 else FEEDBACK[::-1])]
    for step in ["floors"] + order:
        target = start()
        try:
            if step == "floors":
                resolved = resolve_target(target.address)
                base = floor(resolved, rounds, target.pid)
                maker = campaign_for(target.address, echo)
                jobs = [(b"".join(c.messages), c.prediction.wanted)
                        for c in map(maker.make_case, range(cases))]
                maker.close()
            else:
                if target.command is not None:
                    target.stop()       # the campaign starts its own
                runs[step].append(fuzz(target.address, cases, target.pid, echo,
                                       spawn=target.command, coverage=step))
        finally:
            target.stop()
    # With the fuzzer's window and the wait the campaign without feedback learned.
    plain = runs["none"][-1]
    target = start()
    try:
        resolved = resolve_target(target.address)
        job = same_job(resolved, jobs, plain["connections"], plain["timeout"], target.pid,
                       restart=target.restart, cpu_seconds=target.cpu_seconds)
        # (Whether the cases left the floor's target spinning, as omniORB 4.2.5's
        # ProfileAddr floods do: it is not waited for, where the campaign must
        # see the spin and restart its target.)
        idle_cpu = target.cpu_seconds() if target.cpu_seconds else process_cpu_seconds(target.pid)
        time.sleep(0.5)
        idle_now = target.cpu_seconds() if target.cpu_seconds else process_cpu_seconds(target.pid)
        job["spin"] = (idle_now - idle_cpu) / 0.5
    finally:
        target.stop()
    job["cases"] = len(jobs)
    return {"floor": base, "job": job, "runs": runs}


# The campaigns compared: without feedback, and with the default (state).
FEEDBACK = ("none", "state")


def main(argv=None) -> None:
    import results as results_format
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", type=int, nargs="?", default=5000)
    parser.add_argument("rounds", metavar="floor_connections", type=int, nargs="?", default=3000,
                        help="LocateRequests of the issue's floor")
    parser.add_argument("--only", action="append", choices=[t[0] for t in TARGETS],
                        help="measure only this target (repeatable)")
    parser.add_argument("--repeats", type=int, default=2,
                        help="campaigns of each kind (without, with feedback), taking turns")
    results_format.add_argument(parser)
    args = parser.parse_args(argv)
    rows = []
    cases, rounds, repeats = args.cases, args.rounds, max(1, args.repeats)
    print(f"configurations: the Java ORBs as the tests run them (logging on), and 'logging off' "
          f"(-Djava.util.logging.config.file={os.path.relpath(LOGGING_OFF)}; JacORB also "
          f"{', '.join(f'{k}={v}' for k, v in JACORB_QUIET.items())})")
    print(f"campaigns without feedback (none) and with state feedback (state), {repeats} of "
          f"each taking turns; rates are medians, per-repeat figures in brackets.  The "
          f"machine's load moves them: read the ratios as noisy, the CPU ms/case as steadier.")
    all_cases = cases
    for name, start, echo in TARGETS:
        if args.only and name not in args.only:
            continue
        cases = max(100, int(all_cases * CASE_SHARE.get(name, 1.0)))
        try:
            got = measure(name, start, echo, cases, rounds, repeats)
        except PeerError as e:
            print(f"{name}: not run: {str(e).splitlines()[0]}", flush=True)
            rows.append([name] + [None] * 17 + [f"not run: {str(e).splitlines()[0]}"])
            continue
        base, job, runs = got["floor"], got["job"], got["runs"]
        rate = {k: median([r["rate"] for r in runs[k]]) for k in FEEDBACK}
        cpu = {k: median([per_case_ms(r, "cpu") for r in runs[k]]) for k in FEEDBACK}
        target_cpu = {k: median([per_case_ms(r, "target_cpu") for r in runs[k]])
                      for k in FEEDBACK}
        # Feedback's cost: each repeat's state rate against the none run beside it.
        pair = [s["rate"] / n["rate"] for n, s in zip(runs["none"], runs["state"])]
        cpu_pair = [per_case_ms(s, "cpu") / per_case_ms(n, "cpu")
                    for n, s in zip(runs["none"], runs["state"])]
        feedback_ratio, cpu_ratio = median(pair), median(cpu_pair)
        # (The same past the campaign's start: the corpus's first run left out.)
        run_pair = [s["run_rate"] / n["run_rate"] for n, s in zip(runs["none"], runs["state"])]
        print(f"{name}: floor {base['rate']:.0f}/s (cpu loop/target {base['cpu']:.2f}/"
              f"{base['target_cpu']:.2f} s), same-job {job['rate']:.0f}/s "
              f"(cpu {job['cpu']:.2f}/{job['target_cpu']:.2f} s, target "
              f"{per_case_ms(job, 'target_cpu'):.2f} ms/case, {job['restarts']} restarts, "
              f"target after it {100 * job['spin']:.0f} % of a core busy)")
        for k in FEEDBACK:
            last = runs[k][-1]
            print(f"  {k:5} {rate[k]:6.0f}/s [{listed(r['rate'] for r in runs[k])}]"
                  f"  /floor {100 * rate[k] / base['rate']:5.1f}%"
                  f"  /same-job {100 * rate[k] / job['rate']:5.1f}%"
                  f"  CPU ms/case fuzzer {cpu[k]:.3f} "
                  f"[{listed((per_case_ms(r, 'cpu') for r in runs[k]), '.3f')}]"
                  f" target {target_cpu[k]:.3f}"
                  f"  ({last['cases']} cases, {last['pipelined']} pipelined, "
                  f"{last['probes']} probes, {last['restarts']} restarts "
                  f"({last['standby']} to a standby), wait {1000 * last['timeout']:.0f} ms, "
                  f"findings {last['findings']} (+{last['unconfirmed']} unconfirmed))")
        print(f"  with/without feedback: rate {100 * feedback_ratio:.1f}% "
              f"[{listed((100 * r for r in pair), '.1f')}] (cost "
              f"{100 * (1 - feedback_ratio):.1f}% of the cases/s; goal <= 10 %), "
              f"fuzzer CPU/case x{cpu_ratio:.2f} [{listed(cpu_pair, '.2f')}]; "
              f"past the start (the corpus's first run left out) "
              f"{100 * median(run_pair):.1f}% [{listed((100 * r for r in run_pair), '.1f')}]",
              flush=True)
        rows.append([name, round(base["rate"]), round(job["rate"]),
                     round(rate["none"]), round(rate["state"]),
                     round(feedback_ratio, 3), round(min(pair), 3), round(max(pair), 3),
                     round(rate["none"] / base["rate"], 3), round(rate["state"] / base["rate"], 3),
                     round(rate["none"] / job["rate"], 3), round(rate["state"] / job["rate"], 3),
                     round(median(run_pair), 3),
                     round(cpu["none"], 3), round(cpu["state"], 3), round(cpu_ratio, 3),
                     round(target_cpu["state"], 3), round(per_case_ms(job, "target_cpu"), 3),
                     f"{cases} cases x {repeats} repeats; state run: "
                     f"{runs['state'][-1]['pipelined']} pipelined, "
                     f"{runs['state'][-1]['probes']} probes, "
                     f"{runs['state'][-1]['restarts']} restarts, "
                     f"{runs['state'][-1]['findings']} findings"])
    if rows:
        x = results_format.RATIO
        results_format.write(args.results, "fuzz", results_format.record(
            "fuzz", script=__file__, argv=sys.argv[1:] if argv is None else argv,
            quick=all_cases < 1000, path={"codec": results_format.codec_path()},
            settings={"cases": all_cases, "floor_connections": rounds, "repeats": repeats,
                      "java_case_share": CASE_SHARE},
            tables=[results_format.table(
                "cases/s of the fuzzer without and with state feedback (medians of the "
                "repeats, taking turns) and of the two floors, each target started fresh",
                ["target", "floor/s", "same-job floor/s", "fuzz/s (no feedback)",
                 "fuzz/s (state feedback)", f"with/without feedback {x}",
                 f"with/without feedback, lowest {x}", f"with/without feedback, highest {x}",
                 f"no feedback/floor {x}", f"state feedback/floor {x}",
                 f"no feedback/same-job {x}", f"state feedback/same-job {x}",
                 f"with/without feedback past the start {x}",
                 "fuzzer CPU ms/case (no feedback)", "fuzzer CPU ms/case (state feedback)",
                 f"fuzzer CPU per case, with/without {x}",
                 "target CPU ms/case (state feedback)", "target CPU ms/case (same-job)",
                 "notes"], rows)]))


if __name__ == "__main__":
    main()
