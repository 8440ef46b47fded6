"""Code coverage of JacORB reached by `pycdr fuzz` with coverage feedback, by `pycdr fuzz`
without feedback, and by boofuzz 0.4.2 driving a GIOP block model (boofuzz_giop.py), in
campaigns of the same length against the same target.

Each campaign fuzzes a fresh JacORB echo server (tests/peers/echo.idl's PycdrTest::Echo,
logging off) started with the JaCoCo agent, through a recording relay: a TCP relay in this
process that forwards each connection to JacORB and keeps every byte the fuzzer sent on it.
The three campaigns:

- pycdr, feedback: ``pycdr fuzz --coverage jacoco:HOST:PORT`` (the agent's probes steer it);
- pycdr, no feedback: ``pycdr fuzz --coverage none`` (cases from the seeds alone);
- boofuzz: boofuzz 0.4.2 on the block model, a connection per case.

Both pycdr campaigns get the IDL (--idl/--interface) and the conformance catalog's seeds.
Coverage is measured afterwards the same way for all three: every distinct connection the
relay recorded is sent again, on a connection of its own, to another fresh JacORB with the
agent, whose probes are reset once the server is up and dumped after the last connection.
The figure is the probes run in JacORB's GIOP, IIOP, CDR and TypeCode classes
(org/jacorb/orb/giop/*, org/jacorb/orb/iiop/*, org/jacorb/orb/CDR*, org/jacorb/orb/TypeCode*);
the probes of all JacORB classes are printed beside it.

Per campaign kind: the median over the trials, and the Vargha-Delaney A12 of pycdr with
feedback against each baseline (the chance that a trial of pycdr with feedback covers more
than a trial of the baseline; 0.5: no difference).  The goal: pycdr with feedback at 1.5x
boofuzz's median coverage or more, and at 1.2x pycdr without feedback's.

The instrumented omniORB build (sancov) is not measured here: the note the run prints says
why.

    .venv/bin/python benchmarks/bench_fuzz_baselines.py [--seconds S] [--trials N] [--results]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import shutil
import socket
import statistics
import struct
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

from pycdr.fuzz.jacoco import JacocoAgent

# The run: 10-minute campaigns, 5 trials of each kind (about 2.5 hours of campaigns
# plus their replays, on 2 cores).
FULL_RUN = "python benchmarks/bench_fuzz_baselines.py --seconds 600 --trials 5 --results"
KINDS = ("pycdr, feedback", "pycdr, no feedback", "boofuzz")
GOALS = {"pycdr, no feedback": 1.2, "boofuzz": 1.5}
BOOFUZZ_VERSION = "0.4.2"
BOOFUZZ_SCRIPT = os.path.join(BENCH_DIR, "boofuzz_giop.py")
LOGGING_OFF = os.path.join(BENCH_DIR, "logging-off.properties")
JACORB_QUIET = {"jacorb.log.default.verbosity": "0"}
# The classes whose probes are the figure (JaCoCo names classes with slashes).
MEASURED_PACKAGES = ("org/jacorb/orb/giop/", "org/jacorb/orb/iiop/")
MEASURED_PREFIXES = ("org/jacorb/orb/CDR", "org/jacorb/orb/TypeCode")
# Bytes kept of one recorded connection (a fuzzer's case is far shorter; a longer one is
# replayed cut, and counted in the notes).
MAX_CONNECTION_BYTES = 1 << 20
# Replay: connections at once, and how long one waits for the server's answer or close.
REPLAY_CONNECTIONS = 64
REPLAY_WAIT = 0.5


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
    server = start_java_echo_server(orb, peers_echo_interface(), properties=JACORB_QUIET,
                                    jvm_options=[agent_option(agent_port)])
    return server, agent_port


class RecordingRelay:
    """Forwards each connection to (host, port) and keeps what the client sent on it; runs
    its own event loop in a thread."""

    def __init__(self, host: str, port: int):
        self.target = (host, port)
        self.connections: list = []      # what the client sent, a bytearray a connection
        self.cut = 0                     # connections longer than MAX_CONNECTION_BYTES
        self.loop = asyncio.new_event_loop()
        self.port = None
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self.thread.start()
        ready.wait(10)

    def _run(self, ready):
        asyncio.set_event_loop(self.loop)
        # (A connection the fuzzer left open is cut at the end, its task with it: not an
        # error worth a message.)
        self.loop.set_exception_handler(lambda loop, context: None)
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=256))
        self.port = self.server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _serve(self, client_reader, client_writer):
        sent = bytearray()
        # (Kept from the start: a connection still open at the end counts too.)
        self.connections.append(sent)
        try:
            server_reader, server_writer = await asyncio.open_connection(*self.target)
        except OSError:
            client_writer.close()
            return

        async def upstream():
            while True:
                chunk = await client_reader.read(65536)
                if not chunk:
                    break
                if len(sent) < MAX_CONNECTION_BYTES:
                    sent.extend(chunk[:MAX_CONNECTION_BYTES - len(sent)])
                server_writer.write(chunk)
                await server_writer.drain()
            if server_writer.can_write_eof():
                server_writer.write_eof()

        async def downstream():
            while True:
                chunk = await server_reader.read(65536)
                if not chunk:
                    break
                client_writer.write(chunk)
                await client_writer.drain()
            client_writer.close()

        try:
            await asyncio.gather(upstream(), downstream())
        except (OSError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            for writer in (server_writer, client_writer):
                writer.close()

    async def _stop(self):
        self.server.close()
        for _ in range(10):              # (a connection accepted meanwhile: its task too)
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            if not tasks:
                break
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.sleep(0.05)    # (the cancelled tasks' own ends run)
        self.loop.stop()

    def close(self) -> list:
        """Stops the relay; returns the connections' bytes (the empty ones left out)."""
        asyncio.run_coroutine_threadsafe(self._stop(), self.loop)
        self.thread.join(10)
        self.cut = sum(len(sent) >= MAX_CONNECTION_BYTES for sent in self.connections)
        return [bytes(sent) for sent in self.connections if sent]


def corbaloc(port: int, key: bytes) -> str:
    return f"corbaloc::1.2@127.0.0.1:{port}/{urllib.parse.quote_from_bytes(key, safe='')}"


def run_pycdr(kind: str, relay_port: int, server, agent_port: int, seconds: float,
              seed: int, work: str) -> dict:
    coverage = f"jacoco:127.0.0.1:{agent_port}" if kind == "pycdr, feedback" else "none"
    argv = [os.path.join(os.path.dirname(sys.executable), "pycdr"), "fuzz",
            corbaloc(relay_port, server.object_key), "--coverage", coverage,
            "--idl", PEERS_ECHO_IDL, "--interface", "PycdrTest::Echo",
            "--duration", str(seconds), "--seed", str(seed), "--no-minimize",
            "--corpus-dir", os.path.join(work, "corpus"), "--out", os.path.join(work, "findings"),
            "--json", "-"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 300)
    try:
        out = json.loads(done.stdout)
    except ValueError:
        raise RuntimeError(f"pycdr fuzz ended with {done.returncode}: "
                           f"{(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    # (A campaign ends early when the fuzzer judges the target dead: it is not restarted.)
    return {"cases": out["cases"], "fuzz_seconds": out["elapsed"],
            "target_dead": out["target_dead"], "findings": len(out["findings"])}


def run_boofuzz(relay_port: int, server, seconds: float, work: str) -> dict:
    argv = [sys.executable, BOOFUZZ_SCRIPT, "127.0.0.1", str(relay_port),
            server.object_key.hex(), "--seconds", str(seconds),
            "--db", os.path.join(work, "boofuzz.db")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 120,
                          cwd=work)
    if done.returncode != 0:
        raise RuntimeError(f"boofuzz ended with {done.returncode}: "
                           f"{(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    return {"cases": None, "fuzz_seconds": None, "target_dead": None, "findings": None,
            "finished": "sent all" in done.stderr}


def save_connections(connections: list, path: str) -> None:
    """The recorded connections, each as a 4-byte big-endian length and its bytes."""
    with open(path, "wb") as f:
        for data in connections:
            f.write(struct.pack(">I", len(data)) + data)


def _replay_one(host: str, port: int, data: bytes) -> None:
    try:
        with socket.create_connection((host, port), timeout=5) as s:
            s.settimeout(REPLAY_WAIT)
            try:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
                while s.recv(65536):
                    pass
            except OSError:
                pass
    except OSError:
        pass


def replay_coverage(connections: list) -> dict:
    """Probes a fresh JacORB with the agent runs for ``connections`` sent again."""
    server, agent_port = start_jacorb()
    agent = JacocoAgent("127.0.0.1", agent_port, timeout=60)
    try:
        agent.reset()
        began = time.monotonic()
        with ThreadPoolExecutor(REPLAY_CONNECTIONS) as pool:
            list(pool.map(lambda data: _replay_one(server.host, server.port, data),
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
    return {"probes": ran, "classes": classes, "all_probes": total,
            "replay_seconds": seconds}


def one_campaign(kind: str, seconds: float, trial: int, keep: str | None) -> dict:
    work = tempfile.mkdtemp(prefix="pycdr-bench-baselines-")
    try:
        server, agent_port = start_jacorb()
        relay = RecordingRelay(server.host, server.port)
        connections = []
        try:
            began = time.monotonic()
            if kind == "boofuzz":
                run = run_boofuzz(relay.port, server, seconds, work)
            else:
                run = run_pycdr(kind, relay.port, server, agent_port, seconds, 1000 + trial, work)
            elapsed = time.monotonic() - began
            time.sleep(1.0)              # the last connections' ends reach the relay
        finally:
            connections = relay.close()
            server.stop()
        distinct = list(dict.fromkeys(connections))
        if keep:
            os.makedirs(keep, exist_ok=True)
            save_connections(distinct, os.path.join(
                keep, f"{kind.replace(', ', '-').replace(' ', '-')}-{trial}.bin"))
        coverage = replay_coverage(distinct)
        return {"kind": kind, "trial": trial, "elapsed": elapsed, "connections": len(connections),
                "distinct": len(distinct), "cut": relay.cut, **run, **coverage}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv=None) -> int:
    import results as results_format
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=600.0, help="one campaign's length")
    parser.add_argument("--trials", type=int, default=5, help="campaigns of each kind")
    parser.add_argument("--only", action="append", choices=KINDS,
                        help="run only this kind of campaign (repeatable)")
    parser.add_argument("--keep", metavar="DIR", default=None,
                        help="save each campaign's distinct recorded connections in DIR")
    results_format.add_argument(parser)
    args = parser.parse_args(argv)
    kinds = [k for k in KINDS if not args.only or k in args.only]
    notes = ["omniORB: not measured.  Its instrumented build (sancov) gives feedback to a "
             "target `pycdr fuzz --spawn` starts and connects to directly, so the relay "
             "cannot record those campaigns' cases, and some cases crash omniORB 4.2.5 "
             "(a replay into one process would need restarts); JacORB alone is measured"]
    if "boofuzz" in kinds and boofuzz_version() != BOOFUZZ_VERSION:
        found = boofuzz_version()
        notes.append(f"boofuzz: not run (boofuzz {BOOFUZZ_VERSION} is not installed"
                     f"{'' if found is None else f'; {found} is'}: pip install "
                     f"'.[benchmarks]')")
        print(notes[-1])
        kinds.remove("boofuzz")
    runs = {kind: [] for kind in kinds}
    print(f"{'campaign':22} {'trial':>5} {'seconds':>7} {'conns':>7} {'distinct':>8} "
          f"{'probes':>7} {'classes':>7} {'all JacORB':>10} {'replay s':>8}")
    # Trials interleaved (one of each kind, then the next): a load that changes during the
    # run falls on every kind alike.
    for trial in range(args.trials):
        for kind in kinds:
            r = one_campaign(kind, args.seconds, trial, args.keep)
            runs[kind].append(r)
            print(f"{kind:22} {trial:5} {r['elapsed']:7.1f} {r['connections']:7} "
                  f"{r['distinct']:8} {r['probes']:7} {r['classes']:7} {r['all_probes']:10} "
                  f"{r['replay_seconds']:8.1f}"
                  + ("" if r["cases"] is None else
                     f"  ({r['cases']} cases in {r['fuzz_seconds']} s of fuzzing, "
                     f"{r['findings']} findings{', target judged dead' if r['target_dead'] else ''})"),
                  flush=True)
    x = results_format.RATIO
    reference = [r["probes"] for r in runs.get("pycdr, feedback", [])]
    rows = []
    print()
    for kind in kinds:
        probes = [r["probes"] for r in runs[kind]]
        median = statistics.median(probes)
        ratio = results_format.ratio(statistics.median(reference), median) \
            if reference and kind != "pycdr, feedback" else None
        effect = round(a12(reference, probes), 2) \
            if reference and kind != "pycdr, feedback" else None
        goal = GOALS.get(kind)
        print(f"{kind:22} median {median:7} probes (trials: {probes})"
              + (f"; feedback/this {ratio}x (goal {goal}x), A12 {effect}"
                 if ratio is not None else ""))
        rows.append([kind, len(probes), median, min(probes), max(probes),
                     statistics.median([r["all_probes"] for r in runs[kind]]),
                     round(statistics.median([r["connections"] for r in runs[kind]])),
                     ratio, goal, effect])
    finished = sum(bool(r.get("finished")) for r in runs.get("boofuzz", []))
    if finished:
        notes.append(f"boofuzz sent all its model's cases before the time was up in {finished} "
                     f"of {len(runs['boofuzz'])} campaigns")
    for note in notes:
        print(f"note: {note}")
    results_format.write(args.results, "fuzz_baselines", results_format.record(
        "fuzz_baselines", script=__file__, argv=sys.argv[1:] if argv is None else argv,
        quick=args.seconds < 600 or args.trials < 5,
        path={"codec": results_format.codec_path(), "orb": "JacORB (JaCoCo agent)"},
        settings={"seconds": args.seconds, "trials": args.trials, "boofuzz": boofuzz_version(),
                  "replay_connections": REPLAY_CONNECTIONS, "replay_wait": REPLAY_WAIT},
        tables=[results_format.table(
            "probes run in JacORB's GIOP, IIOP, CDR and TypeCode classes by each campaign's "
            "inputs, replayed into a fresh JacORB",
            ["campaign", "trials", "median probes", "min", "max", "median probes, all JacORB",
             "median connections", f"feedback/this {x}", f"goal {x}", "A12 feedback vs this"],
            rows),
            results_format.table(
            "each campaign", ["campaign", "trial", "seconds", "connections", "distinct",
                              "probes", "classes", "probes, all JacORB", "replay seconds",
                              "pycdr cases", "pycdr fuzzing seconds", "findings", "notes"],
            [[r["kind"], r["trial"], round(r["elapsed"], 1), r["connections"], r["distinct"],
              r["probes"], r["classes"], r["all_probes"], round(r["replay_seconds"], 1),
              r["cases"], r["fuzz_seconds"], r["findings"],
              "target judged dead: ended early" if r["target_dead"] else
              "boofuzz sent all its cases" if r.get("finished") else ""]
             for kind in kinds for r in runs[kind]])],
        notes=notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
