"""Cases per second of `pycdr fuzz` against each target, beside the target's
own floor measured in the same run: a plain socket loop that opens a fresh
connection, sends one LocateRequest and reads the answer (or the close), as
fast as it can, one after the other.  The goal: the fuzzer at 25 % of the
floor or more on every target.  CPU seconds per side are printed for both
(their sum against the wall time says how well the two overlap).

Targets: the reference ORB (`pycdr serve` of the conformance Echo),
omniORBpy and JacORB (the test peers; skipped when not installed), and
tests/raw_giop_server.py, a GIOP server written without pycdr, with its
planted faults left out (--no-faults: a finding's confirmation and
minimization would be timed, not the fuzzing).  The OpenJDK ORB is not
installed by the project and has no row.

    .venv/bin/python benchmarks/bench_fuzz.py [CASES [FLOOR_ROUNDS]]
"""

import os
import socket
import sys
import time

from benchprocs import REPO_ROOT  # noqa: F401 (puts tests/ on sys.path for `peers`)
from peers.jacorb import start_jacorb_echo_server
from peers.omni import start_omni_echo_server
from peers.process import PeerError

from pycdr.conformance.target import resolve_target
from pycdr.fuzz.engine import Campaign, SpawnedTarget
from pycdr.fuzz.seeds import catalog_seeds
from pycdr.giop.messages import KeyAddr, LocateRequest, encode_message

PYCDR = os.path.join(os.path.dirname(sys.executable), "pycdr")


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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


def fuzz(address: str, cases: int, pid: int, echo) -> dict:
    campaign = Campaign(address, seed=11, minimize=False,
                        seed_sources=lambda t: catalog_seeds(t, echo=echo))
    try:
        target_cpu = process_cpu_seconds(pid)
        own_cpu = time.process_time()
        stats = campaign.run(max_cases=cases)
        own_cpu = time.process_time() - own_cpu
        target_cpu = process_cpu_seconds(pid) - target_cpu
    finally:
        campaign.close()
    return {"rate": stats.rate, "cpu": own_cpu, "target_cpu": target_cpu, "wall": stats.elapsed,
            "cases": stats.cases, "pipelined": stats.pipelined, "probes": stats.probes,
            "findings": len(campaign.findings), "unconfirmed": len(campaign.unconfirmed),
            "timeout": campaign.answer_timeout()}


class _Spawned:
    """A target started from a command line (the fuzzer's own way)."""

    def __init__(self, command):
        self.spawned = SpawnedTarget(command)
        self.address = self.spawned.start()
        self.pid = self.spawned.process.pid

    def stop(self):
        self.spawned.stop()


class _Peer:
    def __init__(self, launcher):
        self.peer = launcher()
        self.address = self.peer.ior
        self.pid = self.peer.pid

    def stop(self):
        self.peer.stop()


TARGETS = [
    ("reference ORB", lambda: _Spawned(f"{PYCDR} serve "
                                       f"{os.path.join(REPO_ROOT, 'conformance', 'echo.idl')} "
                                       f"--interface EchoAll::Echo"), None),
    ("omniORBpy", lambda: _Peer(start_omni_echo_server), False),
    ("JacORB", lambda: _Peer(start_jacorb_echo_server), False),
    ("raw GIOP server", lambda: _Spawned(f"{sys.executable} "
                                         f"{os.path.join(REPO_ROOT, 'tests', 'raw_giop_server.py')}"
                                         f" --no-faults"), None),
]


def main() -> None:
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
    print(f"{'target':16} {'floor/s':>8} {'(cpu loop/target)':>18} {'fuzz/s':>8} "
          f"{'(cpu fuzzer/target)':>20} {'ratio':>6}  notes")
    for name, start, echo in TARGETS:
        try:
            target = start()
        except PeerError as e:
            print(f"{name:16} not run: {str(e).splitlines()[0]}")
            continue
        try:
            resolved = resolve_target(target.address)
            base = floor(resolved, rounds, target.pid)
            run = fuzz(target.address, cases, target.pid, echo)
        finally:
            target.stop()
        ratio = run["rate"] / base["rate"]
        print(f"{name:16} {base['rate']:8.0f} {base['cpu']:8.2f}/{base['target_cpu']:<8.2f} "
              f"{run['rate']:9.0f} {run['cpu']:9.2f}/{run['target_cpu']:<9.2f} "
              f"{100 * ratio:5.1f}%  {run['cases']} cases, {run['pipelined']} pipelined, "
              f"{run['probes']} probes, wait {1000 * run['timeout']:.0f} ms, "
              f"findings {run['findings']} (+{run['unconfirmed']} unconfirmed)", flush=True)


if __name__ == "__main__":
    main()
