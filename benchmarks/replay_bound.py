"""How many calls a second the target allows as recorded: benchmarks/replay_bound.c (the
least a program can do to make a capture's calls one at a time a connection, in C)
beside omniORBpy's own clients and ``pycdr replay --window 1``, each against a fresh
omniORBpy server, in the same run.

    .venv/bin/python benchmarks/replay_bound.py [--calls 16000] [--clients 4] [--repeat 3]
                                                [--server omniORBpy|reference]

The calls are recorded as bench_replay.py records them (omniORBpy's clients calling an
omniORBpy server, dumpcap on loopback).  replay_bound.c sends the recorded requests
as they are (the target serves the recorded key) and frames each reply by its GIOP
length without comparing it; it waits for replies three ways: sleeping in epoll
("sleep"), a thread per connection blocking in recv ("threads"), and polling epoll
without sleeping ("poll").  ``--server reference``: every run against pycdr's reference
ORB (``pycdr serve --threads``, which serves the recorded key, Echo) instead.  Needs a
C compiler (cc).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_replay as bench  # noqa: E402
from bench_pcap import reference_messages  # noqa: E402

MODES = ("sleep", "threads", "poll")


def write_requests(capture: str, path: str) -> int:
    """The capture's client Requests, per connection in order, as replay_bound.c reads
    them; how many."""
    connections: dict = {}
    count = 0
    with open(path, "wb") as out:
        for src, dst, msg in reference_messages(capture):
            if msg[7] != 0:                 # Requests only (the recorded calls)
                continue
            number = connections.setdefault((src, dst), len(connections))
            twoway = msg[5] >= 2 and msg[16] & 3 != 0
            out.write(struct.pack("<III", number, len(msg), twoway) + msg)
            count += 1
    return count


class _Omni:
    """A fresh omniORBpy server of the benchmark's IDL: (IOR, port)."""

    def __enter__(self):
        from peers.omni import start_omni_echo_server
        self.server = start_omni_echo_server(idl=bench.IDL, interface=bench.INTERFACE)
        self.server.__enter__()
        return self.server.ior, self.server.port

    def __exit__(self, *exc):
        self.server.__exit__(*exc)


class _Reference:
    """A fresh ``pycdr serve --threads`` of the benchmark's IDL: (IOR, port)."""

    def __init__(self, folder: str):
        self.folder = folder

    def __enter__(self):
        from pycdr.replay.targets import parse_target
        self.server = bench.ReferenceServer(self.folder, threads=True)
        return self.server.ior, parse_target(self.server.ior).endpoint.port

    def __exit__(self, *exc):
        self.server.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=16000)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--server", choices=("omniORBpy", "reference"), default="omniORBpy",
                    help="the target of every run (the calls are recorded to omniORBpy)")
    args = ap.parse_args()
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        sys.exit("no C compiler (cc)")
    from peers.omni import start_omni_echo_server
    from peers.recording import CAN_RECORD, WHY_NOT, record_loopback
    if not CAN_RECORD:
        sys.exit(WHY_NOT)
    folder = tempfile.mkdtemp(prefix="pycdr-replay-bound-")
    program = os.path.join(folder, "replay_bound")
    subprocess.run([cc, "-O2", "-o", program, os.path.join(HERE, "replay_bound.c"),
                    "-lpthread"], check=True)
    capture = os.path.join(folder, "calls.pcapng")
    with start_omni_echo_server(idl=bench.IDL, interface=bench.INTERFACE) as server:
        with record_loopback(capture, server.port):
            bench.run_clients(server.ior, args.calls, args.clients)
    requests = os.path.join(folder, "requests.bin")
    count = write_requests(capture, requests)
    print(f"recorded: {capture}; {count} requests")
    def target():
        """A fresh target: a context manager giving (IOR, port)."""
        return _Reference(folder) if args.server == "reference" else _Omni()

    names = ["omniORBpy client"] + [f"replay_bound.c, {m}" for m in MODES] + \
        ["pycdr replay --window 1"]
    rates: dict = {name: [] for name in names}
    for _ in range(args.repeat):
        with target() as (ior, port):
            rates[names[0]].append(bench.run_clients(ior, args.calls, args.clients).rate)
        for mode, name in zip(MODES, names[1:]):
            with target() as (ior, port):
                done = subprocess.run([program, requests, str(port), mode],
                                      capture_output=True, text=True, timeout=600)
                if done.returncode:
                    sys.exit(f"replay_bound failed: {done.stderr}")
                got = json.loads(done.stdout)
                if got["calls"] != count:
                    sys.exit(f"replay_bound made {got['calls']} of the {count} calls")
                rates[name].append(got["calls"] / got["seconds"])
        with target() as (ior, port):
            rates[names[-1]].append(bench.replay_rate(capture, ior, 1)[0].rate)
    base = statistics.median(rates[names[0]])
    for name in names:
        median = statistics.median(rates[name])
        runs = ", ".join(f"{r:.0f}" for r in rates[name])
        print(f"{name:28} {median:8.0f} calls/s  {median / base:5.2f}x  (runs {runs})")


if __name__ == "__main__":
    main()
