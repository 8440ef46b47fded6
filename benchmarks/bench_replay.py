"""`pycdr replay` calls/s beside omniORBpy's own client making the same calls, in one run.

    .venv/bin/python benchmarks/bench_replay.py [--calls 4000] [--clients 1] [--repeat 3]

1. An omniORBpy client calls an omniORBpy server (ReplayEcho::Echo of
   tests/idl/replay/echo_items.idl: echo_long, echo_double, echo_string, a
   300-byte echo_octets and a five-item echo_items in turn), ``--clients``
   processes of ``--calls`` calls in all, recorded on loopback by dumpcap
   (capture rights needed: root or CAP_NET_RAW).
2. The floor: the same client making the same calls to a fresh omniORBpy server,
   not recorded; calls/s from the calls and the client loop's time (the ORB's
   start and the IDL's compilation not counted).
3. ``pycdr replay`` of the capture with ``--idl`` (every reply decoded and compared
   value by value) against a fresh omniORBpy server and against pycdr's
   reference ORB (``pycdr serve``); calls/s from the replayed calls and the
   replay's time (Replay.run in this process: reading the capture, rewriting,
   sending, receiving, comparing; the interpreter's start not counted).

``--memory``: the peak RSS of ``pycdr replay --idl`` processes replaying the capture and
one of four times as many calls (memory flat in the capture's size).

Each is run ``--repeat`` times; the table shows the median and the spread (min-max)
and the ratios the target is stated in: replay against omniORBpy / omniORBpy's
client >= 1.0, and replay against the reference ORB / omniORBpy's client.  The
machine is shared: read the ratios, measured in the same run, not the rates.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
IDL = os.path.join(ROOT, "tests", "idl", "replay", "echo_items.idl")
INTERFACE = "ReplayEcho::Echo"

CLIENT = r'''
import sys, time
sys.path.insert(0, sys.argv[1])
from omniORB import CORBA
import omni_idl
orb = CORBA.ORB_init([sys.argv[0]], CORBA.ORB_ID)
omni_idl.import_idl(sys.argv[2])
Echo, _ = omni_idl.interface_classes("ReplayEcho::Echo")
module = sys.modules["ReplayEcho"]
echo = orb.string_to_object(sys.argv[3])._narrow(Echo)
calls = int(sys.argv[4])
octets = bytes(range(256)) + bytes(44)
items = [module.Item("item%d" % k, k, k / 3) for k in range(5)]
echo.echo_long(0)             # the connection opened before the clock starts
start = time.perf_counter()
for i in range(calls):
    k = i % 5
    if k == 0:
        echo.echo_long(i)
    elif k == 1:
        echo.echo_double(i / 7)
    elif k == 2:
        echo.echo_string("call %d" % i)
    elif k == 3:
        echo.echo_octets(octets)
    else:
        echo.echo_items(items)
print(calls + 1, time.perf_counter() - start)
orb.destroy()
'''


def run_clients(ior: str, calls: int, clients: int) -> float:
    """omniORBpy's calls/s: every client's calls over the longest client loop."""
    per = -(-calls // clients)
    procs = [subprocess.Popen([sys.executable, "-c", CLIENT, os.path.join(ROOT, "tests", "peers"),
                               IDL, ior, str(per)], stdout=subprocess.PIPE, text=True)
             for _ in range(clients)]
    made, longest = 0, 0.0
    for p in procs:
        out, _ = p.communicate(timeout=600)
        if p.returncode:
            sys.exit(f"an omniORBpy client failed ({p.returncode})")
        n, elapsed = out.split()
        made += int(n) - 1            # the first call is not timed
        longest = max(longest, float(elapsed))
    return made / longest


def replay_rate(capture: str, target: str) -> tuple:
    """(calls/s, calls, same) of pycdr replay --idl to ``target``."""
    from pycdr import idl
    from pycdr.pcap import IdlBodyDecoder
    from pycdr.pcapread import CaptureReader
    from pycdr.replay.compare import Comparison
    from pycdr.replay.runner import Replay, ReplayOptions, parse_targets
    from pycdr.replay.summary import ReplaySummary
    default, mapped = parse_targets([target])
    comparison = Comparison(IdlBodyDecoder([idl.load(IDL, register=False)]))
    summary = ReplaySummary()
    replay = Replay(ReplayOptions(default_target=default, targets=mapped,
                                  comparison=comparison), summary.add)
    start = time.perf_counter()
    replay.run(CaptureReader(capture))
    elapsed = time.perf_counter() - start
    totals = summary.totals()
    return totals["calls"] / elapsed, totals["calls"], totals["same"]


def replay_peak_rss(capture: str, target: str) -> int:
    """Peak RSS (bytes) of a ``pycdr replay --idl`` process replaying ``capture``."""
    proc = subprocess.Popen([sys.executable, "-c", "from pycdr.cli.main import main; main()",
                             "replay", capture, "--target", target, "--idl", IDL],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:     # 1: a call differed, or dumpcap missed packets (a damaged capture)
        print(f"(pycdr replay of {os.path.basename(capture)} exited with {proc.returncode})")
    return usage.ru_maxrss * 1024


class ReferenceServer:
    """pycdr serve of the same IDL (the reference ORB), its IOR from --ready-file."""

    def __init__(self, folder: str):
        ready = os.path.join(folder, "ior")
        if os.path.exists(ready):           # the previous run's: not this server's IOR
            os.unlink(ready)
        self.proc = subprocess.Popen([sys.executable, "-c", "from pycdr.cli.main import main; "
                                      "main()", "serve", IDL, "--interface", INTERFACE,
                                      "--ready-file", ready],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not (os.path.exists(ready) and os.path.getsize(ready)):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                sys.exit("pycdr serve did not start")
            time.sleep(0.05)
        with open(ready) as f:
            self.ior = f.read().strip()

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def spread(values) -> str:
    return f"{statistics.median(values):9.0f}  ({min(values):.0f}-{max(values):.0f})"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=4000)
    ap.add_argument("--clients", type=int, default=1, help="client processes (connections)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--memory", action="store_true",
                    help="also the peak RSS of a replay of the capture and of one 4x its size")
    args = ap.parse_args(argv)

    from peers.omni import start_omni_echo_server
    from peers.recording import CAN_RECORD, WHY_NOT, record_loopback
    if not CAN_RECORD:
        sys.exit(WHY_NOT)
    folder = tempfile.mkdtemp(prefix="pycdr-bench-replay-")
    capture = os.path.join(folder, "calls.pcapng")
    with start_omni_echo_server(idl=IDL, interface=INTERFACE) as server:
        with record_loopback(capture, server.port):
            run_clients(server.ior, args.calls, args.clients)
    print(f"recorded: {capture} ({os.path.getsize(capture) / 1e6:.1f} MB)")
    # Memory flat in the capture's size: the same calls four times over, recorded too.
    bigger = os.path.join(folder, "calls4.pcapng")
    if args.memory:
        with start_omni_echo_server(idl=IDL, interface=INTERFACE) as server:
            with record_loopback(bigger, server.port):
                run_clients(server.ior, 4 * args.calls, args.clients)
        with start_omni_echo_server(idl=IDL, interface=INTERFACE) as server:
            for path in (capture, bigger):
                print(f"peak RSS of pycdr replay --idl, {os.path.getsize(path) / 1e6:.1f} MB "
                      f"capture: {replay_peak_rss(path, server.ior) / 1e6:.1f} MB")

    rates: dict = {"omniORBpy client": [], "replay -> omniORBpy": [],
                   "replay -> reference ORB": []}
    counts = set()
    for _ in range(args.repeat):
        with start_omni_echo_server(idl=IDL, interface=INTERFACE) as server:
            rates["omniORBpy client"].append(run_clients(server.ior, args.calls, args.clients))
        with start_omni_echo_server(idl=IDL, interface=INTERFACE) as server:
            rate, calls, same = replay_rate(capture, server.ior)
            rates["replay -> omniORBpy"].append(rate)
            counts.add(("omniORBpy", calls, same))
        ref = ReferenceServer(folder)
        try:
            rate, calls, same = replay_rate(capture, ref.ior)
        finally:
            ref.close()
        rates["replay -> reference ORB"].append(rate)
        counts.add(("reference ORB", calls, same))
    print(f"{'':26}{'calls/s median (min-max)':>28}")
    for name, values in rates.items():
        print(f"{name:26}{spread(values):>28}")
    for target, calls, same in sorted(counts):
        print(f"replay -> {target}: {calls} calls, {same} the same")
    floor = statistics.median(rates["omniORBpy client"])
    for name in ("replay -> omniORBpy", "replay -> reference ORB"):
        values = rates[name]
        per_run = ", ".join(f"{v / f:.2f}" for v, f in zip(values, rates["omniORBpy client"]))
        print(f"ratio {name} / omniORBpy client: {statistics.median(values) / floor:.2f}x "
              f"(per run {per_run}; target >= 1.0)")


if __name__ == "__main__":
    main()
