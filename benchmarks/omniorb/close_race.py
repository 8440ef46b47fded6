"""A finding's messages sent again and again on many connections at once, each
connection reset as soon as the messages are written, against a freshly
started target: for a race between the ORB's threads that one connection
does not show (a single `pycdr fuzz --replay` sends the case once).

    python benchmarks/omniorb/close_race.py FOLDER [--spawn CMD] [--connections N]
        [--duration S] [--runs R]

FOLDER is a saved finding (its finding.json's "minimized" messages are sent,
all in one write, on each connection); --spawn the target's command line
(default: the C++ echo servant of benchmarks/omniorb/build.sh).  Each run
starts the target, hammers it for up to --duration seconds from --connections
threads, and prints whether it exited, after how many connections, and the
first lines of its sanitizer report.  Exit status 1 when the target exited in
every run, 0 otherwise.
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)

from pycdr.errors import PycdrError                     # noqa: E402
from pycdr.fuzz.findings import FindingError, load_messages  # noqa: E402
from pycdr.fuzz.sanitizer import parse_report, symbolize_frames  # noqa: E402
from pycdr.fuzz.target import SpawnedTarget, endpoint   # noqa: E402

BUILD = os.environ.get("PYCDR_OMNIORB_COV", os.path.expanduser("~/.cache/pycdr/omniorb-4.2.5-cov"))
DEFAULT_SPAWN = f"{BUILD}/echo/echo_server -ORBendPoint giop:tcp:127.0.0.1:"
# SO_LINGER on, 0 seconds: close() resets the connection instead of a FIN.
RESET_ON_CLOSE = struct.pack("ii", 1, 0)


def hammer(host: str, port: int, data: bytes, target: SpawnedTarget, until: float,
           connections: int) -> int:
    """Connections made, each sending ``data`` and reset, from ``connections``
    threads until ``until`` (monotonic) or the target's exit."""
    made = [0] * connections

    def loop(slot: int) -> None:
        while time.monotonic() < until and target.exited() is None:
            try:
                with socket.create_connection((host, port), timeout=2.0) as sock:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    sock.sendall(data)
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RESET_ON_CLOSE)
                made[slot] += 1
            except OSError:
                time.sleep(0.01)

    threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(made)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("--spawn", default=DEFAULT_SPAWN)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    try:
        _, messages = load_messages(options.folder)
    except FindingError as e:
        sys.exit(f"close_race.py: {e}")
    if not os.path.exists(options.spawn.split()[0]):
        sys.exit(f"close_race.py: {options.spawn.split()[0]} is missing "
                 f"(benchmarks/omniorb/build.sh makes the instrumented build)")
    # Reports written at once; a killed target has no leaks to report.
    env = {"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "symbolize=0:detect_leaks=0")}
    data = b"".join(messages)
    exited_every_time = True
    for run in range(1, options.runs + 1):
        target = SpawnedTarget(options.spawn, env=env)
        try:
            host, port = endpoint(target.start())
        except PycdrError as e:
            sys.exit(f"close_race.py: {e}")
        began = time.monotonic()
        try:
            made = hammer(host, port, data, target, began + options.duration, options.connections)
            seconds = time.monotonic() - began
            status = target.exited()
            report = parse_report(target.sanitizer_report()) if status is not None else None
        finally:
            target.stop()
        if status is None:
            exited_every_time = False
            print(f"run {run}: still running after {made} connections in {seconds:.1f} s")
            continue
        what = "no sanitizer report"
        if report:
            top = symbolize_frames(report["frames"][:1])
            what = f"{report['kind']} in {top[0] if top else '?'}"
        print(f"run {run}: exited ({status}) after {made} connections in {seconds:.1f} s; {what}")
    sys.exit(1 if exited_every_time else 0)


if __name__ == "__main__":
    main()
