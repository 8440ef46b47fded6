"""What polling before sleeping costs and gains (issue 21): the blocking client's calls
to a server that answers each after a set delay, with the ORB's poll_wait off and on.

    python benchmarks/bench_poll.py [--calls 2000] [--delays 0,0.0002,0.001,0.01]
                                    [--repeat 3]

The server is a plain socket loop in a process of its own, written without pycdr: it
reads each GIOP message, sleeps the delay, and answers a Request with a fixed
NO_EXCEPTION Reply (echo_long's long).  For each delay the client (SyncORB's
echo_long, pinned to CPU 0; the server on CPU 1) makes ``--calls`` calls with
``poll_wait=0`` (sleep on every reply, as other ORBs do) and with the default 300 us,
alternated ``--repeat`` times; it reports calls/s, its CPU time per call (user +
system, the whole process) and how its reads went (``_speedups.poll_counts``).  At a
delay well past poll_wait the polls miss, and the backoff should keep the extra CPU a
call small; at no delay the poll takes every reply.

The comparison is the ORB against itself: poll_wait 0 is the way of the peer ORBs
(omniORB, JacORB: a blocking read that sleeps until the reply), and the ratios of the
300 us row to it say what polling gains in calls/s and costs in CPU per call at each
delay.  Polling pays only with a core free for the client while the server works; on
a machine without one the backoff should bring the figures back to the sleeping ones.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# The run benchmarks/README.md's table comes from (2,000 calls, 4 delays, best of 3):
# about 1 minute on 2 cores.
FULL_RUN = "python benchmarks/bench_poll.py --results"

SERVER = r'''
import os, socket, struct, sys, time
delay = float(sys.argv[1])
if (os.cpu_count() or 1) > 1:
    os.sched_setaffinity(0, {1})
listener = socket.create_server(("127.0.0.1", 0))
print(listener.getsockname()[1], flush=True)
sock, _ = listener.accept()
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

def read_exactly(n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            sys.exit(0)
        data += chunk
    return data

while True:
    head = read_exactly(12)
    little = head[6] & 1
    order = "<" if little else ">"
    (size,) = struct.unpack(order + "I", head[8:12])
    body = read_exactly(size)
    if head[7] != 0:            # only Requests are answered
        continue
    (request_id,) = struct.unpack(order + "I", body[:4])
    if delay:
        time.sleep(delay)
    # GIOP 1.2 Reply: request id, NO_EXCEPTION, no service contexts, then the long
    # (at offset 24 of the message: aligned to 8 already).
    reply_body = struct.pack(order + "IIIi", request_id, 0, 0, 7)
    sock.sendall(b"GIOP\x01\x02" + bytes([little, 1]) +
                 struct.pack(order + "I", len(reply_body)) + reply_body)
'''


def measure(delay: float, poll_wait: float, calls: int) -> dict:
    """One client run against a fresh server answering after ``delay`` seconds."""
    server = subprocess.Popen([sys.executable, "-c", SERVER, repr(delay)],
                              stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())
        return run_client(port, poll_wait, calls)
    finally:
        server.kill()
        server.wait()


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_client(port: int, poll_wait: float, calls: int) -> dict:
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from orb_echo_values import ECHO_INTERFACE, load_echo_module
    from pycdr.codec import _speedups
    from pycdr.orb.sync import SyncORB
    echo_interface = load_echo_module().interfaces[ECHO_INTERFACE]
    with SyncORB(timeout=30, poll_wait=poll_wait) as orb:
        echo = orb.string_to_object(f"corbaloc:iiop:1.2@127.0.0.1:{port}/Echo",
                                    echo_interface)
        for _ in range(3):          # the connection, CodeSets and the lane made
            echo.echo_long(7)
        before = _speedups.poll_counts()
        cpu = cpu_seconds()
        start = time.perf_counter()
        for _ in range(calls):
            echo.echo_long(7)
        elapsed = time.perf_counter() - start
        cpu = cpu_seconds() - cpu
        after = _speedups.poll_counts()
    counts = {k: after[k] - before[k] for k in ("got", "missed", "backed_off", "no_slot")}
    return {"rate": calls / elapsed, "cpu_us": cpu / calls * 1e6, "counts": counts}


def main(argv=None) -> None:
    import results as results_format
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--delays", default="0,0.0002,0.001,0.01",
                    help="the server's delay before each Reply, seconds (comma list)")
    ap.add_argument("--repeat", type=int, default=3)
    results_format.add_argument(ap)
    args = ap.parse_args(argv)
    rows = []
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {0})
    delays = [float(x) for x in args.delays.split(",")]
    print(f"{'delay':>8} {'poll_wait':>10} {'calls/s median (min-max)':>28} "
          f"{'CPU us/call':>22}  reads: got/missed/backed off/no slot (last run)")
    for delay in delays:
        calls = args.calls if delay < 0.002 else max(50, args.calls // 10)
        runs: dict = {0.0: [], 300e-6: []}
        for _ in range(args.repeat):
            for poll_wait in runs:
                runs[poll_wait].append(measure(delay, poll_wait, calls))
        for poll_wait, results in runs.items():
            rates = [r["rate"] for r in results]
            cpus = [r["cpu_us"] for r in results]
            c = results[-1]["counts"]
            print(f"{delay * 1e6:>6.0f}us {poll_wait * 1e6:>8.0f}us "
                  f"{statistics.median(rates):>12.0f} ({min(rates):.0f}-{max(rates):.0f})"
                  f"{statistics.median(cpus):>12.1f} ({min(cpus):.1f}-{max(cpus):.1f})"
                  f"  {c['got']}/{c['missed']}/{c['backed_off']}/{c['no_slot']}")
            rows.append([round(delay * 1e6), round(poll_wait * 1e6),
                         round(statistics.median(rates)), round(min(rates)), round(max(rates)),
                         round(statistics.median(cpus), 1),
                         f"{c['got']}/{c['missed']}/{c['backed_off']}/{c['no_slot']}"])
        off, on = rows[-2], rows[-1]
        rows[-1] = rows[-1] + [results_format.ratio(on[2], off[2]),
                               results_format.ratio(on[5], off[5])]
        rows[-2] = rows[-2] + [None, None]
    x = results_format.RATIO
    results_format.write(args.results, "poll", results_format.record(
        "poll", script=__file__, argv=sys.argv[1:] if argv is None else argv,
        quick=args.calls < 2000 or args.repeat < 3,
        path={"codec": results_format.codec_path(), "orb": "blocking (SyncORB)"},
        settings={"calls": args.calls, "repeat": args.repeat},
        tables=[results_format.table(
            "SyncORB echo_long calls to a plain socket server answering after a delay, "
            "poll_wait 0 (the peer ORBs' way: sleep on every read) and 300 us",
            ["delay us", "poll_wait us", "calls/s median", "min", "max", "CPU us/call median",
             "reads got/missed/backed off/no slot", f"calls/s vs poll_wait 0 {x}",
             f"CPU/call vs poll_wait 0 {x}"], rows)]))


if __name__ == "__main__":
    main()
