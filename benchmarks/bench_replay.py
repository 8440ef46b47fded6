"""`pycdr replay` calls/s beside omniORBpy's own client making the same calls, in one run.

    .venv/bin/python benchmarks/bench_replay.py [--calls 4000] [--clients 1] [--repeat 3]
                                                [--window 64] [--jobs 1 [2 ...]] [--memory]

1. An omniORBpy client calls an omniORBpy server (ReplayEcho::Echo of
   tests/idl/replay/echo_items.idl: echo_long, echo_double, echo_string, a
   300-byte echo_octets and a five-item echo_items in turn), ``--clients``
   processes of ``--calls`` calls in all, recorded on loopback by dumpcap
   (capture rights needed: root or CAP_NET_RAW).
2. The peer: the same client making the same calls to a fresh omniORBpy server,
   not recorded, and to pycdr's reference ORB; calls/s from the calls and the
   client loop's time (the ORB's start and the IDL's compilation not counted).
3. ``pycdr replay`` of the capture with ``--idl`` (every reply compared: by its bytes
   but for the request id where they are the recorded ones, else value by value)
   against a fresh omniORBpy server and against pycdr's reference ORB (``pycdr
   serve``; ``--threads``: ``pycdr serve --threads``), as recorded (``--window 1``: each reply the client waited for is
   waited for) and pipelined (``--window N``); calls/s from the replayed calls and
   the replay's time (Replay.run in a process of its own: reading the capture,
   rewriting, sending, receiving, comparing; the interpreter's start not counted).
   With ``--jobs N`` (several values: each), the replay as ``pycdr replay --jobs N``
   runs it: N worker processes (each scans a shard of the capture, the parent plans,
   each replays its share), timed from the start to the last worker's end, their CPU
   time counted with the parent's.

4. The floor against a fresh omniORBpy server: the least a Python program does to
   replay the capture's calls pipelined (``--window N``) and check their replies
   (``floor_child``: bench_pcap's struct-based reader, request ids renumbered, replies
   compared by their bytes); the pipelined replay to omniORBpy is shown as a ratio to
   it.  (No floor as recorded: the least program waits on one connection at a time.)

Each process also reports the CPU time of its timed part (user + system, per call)
and its peak RSS.  ``--memory``: the peak RSS of ``pycdr replay --idl`` processes
replaying the capture and one of four times as many calls (memory flat in the
capture's size).

Each is run ``--repeat`` times; the table shows the median and the spread (min-max)
and the ratios the target is stated in: a replay / omniORBpy's client calling the
omniORBpy server >= 1.0 (against either target), and a replay to the reference ORB /
omniORBpy's client calling the reference ORB (the same calls to the same target: the
first ratio of a replay to the reference ORB measures the two servers too).  The
machine is shared: read the ratios, measured in the same run, not the rates.

Peer: omniORBpy's own client making the recorded calls.  Floor: the plain socket
replay (step 4).  Target: a replay's calls/s >= 1.0x omniORBpy's client, as recorded
and pipelined.  With several client connections on a 2-core machine the replay, the
target server and the client share the cores, so the figure to trust is a run with a
core free for each.
"""

from __future__ import annotations

# The run benchmarks/README.md's table comes from (it records its own capture; dumpcap
# and capture rights needed; 4,000 calls, 3 repetitions, --jobs 1 and 2): about 3
# minutes on 2 cores.
FULL_RUN = "python benchmarks/bench_replay.py --calls 4000 --repeat 3 --jobs 1 2 --results"

import argparse
import json
import os
import resource
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
import json, resource, sys, time
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
print("ready", flush=True)    # every client's loop starts together (see run_clients)
sys.stdin.readline()
cpu = time.process_time()
start = time.monotonic()
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
end = time.monotonic()
print(json.dumps({"calls": calls + 1, "start": start, "end": end,
                  "cpu": time.process_time() - cpu,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
orb.destroy()
'''


class Measured:
    """Calls/s, CPU seconds a call, peak RSS (bytes) of one measured run."""

    def __init__(self, rate: float, cpu_per_call: float, rss: int):
        self.rate, self.cpu_per_call, self.rss = rate, cpu_per_call, rss


def run_clients(ior: str, calls: int, clients: int) -> Measured:
    """omniORBpy's calls/s: every client's calls from the first client loop's start to the
    last one's end (CPU: all the clients' loops; RSS: the largest client's).  The clients
    start their loops together, once each has its ORB up and its connection open: the
    processes start at different times, and taking the calls over the longest loop would
    count loops that did not overlap as running side by side (four clients that each make
    35k calls/s could then show 138k)."""
    per = -(-calls // clients)
    procs = [subprocess.Popen([sys.executable, "-c", CLIENT, os.path.join(ROOT, "tests", "peers"),
                               IDL, ior, str(per)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
             for _ in range(clients)]
    for p in procs:
        if p.stdout.readline().strip() != "ready":
            sys.exit(f"an omniORBpy client failed to start ({p.wait(timeout=60)})")
    for p in procs:     # (CLOCK_MONOTONIC, which time.monotonic reads, is the machine's)
        p.stdin.write("go\n")
        p.stdin.flush()
    made, first, last, cpu, rss = 0, None, None, 0.0, 0
    for p in procs:
        out, _ = p.communicate(timeout=600)
        if p.returncode:
            sys.exit(f"an omniORBpy client failed ({p.returncode})")
        got = json.loads(out)
        made += got["calls"] - 1      # the first call is not timed
        first = got["start"] if first is None else min(first, got["start"])
        last = got["end"] if last is None else max(last, got["end"])
        cpu += got["cpu"]
        rss = max(rss, got["rss"])
    return Measured(made / (last - first), cpu / made, rss)


def replay_child(capture: str, target: str, window: int, jobs: int = 1) -> None:
    """(--child) Replay ``capture`` to ``target`` with --idl (in ``jobs`` processes) and
    print what it took."""
    from pycdr import idl
    from pycdr.capture.giop import IdlBodyDecoder
    from pycdr.capture.read import CaptureReader
    from pycdr.replay.compare import Comparison
    from pycdr.replay.runner import Replay, ReplayOptions
    from pycdr.replay.targets import parse_targets
    from pycdr.replay.summary import ReplaySummary
    default, mapped = parse_targets([target])
    comparison = Comparison(IdlBodyDecoder([idl.load(IDL, register=False)]))
    summary = ReplaySummary()
    options = ReplayOptions(default_target=default, targets=mapped, comparison=comparison,
                            window=window)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time()
    start = time.perf_counter()
    if jobs > 1:
        from pycdr.replay.jobs import run_jobs
        run_jobs(capture, options, jobs, summary.add, False)
    else:
        Replay(options, summary.add, tally=summary.add_counted).run(CaptureReader(capture))
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    after = resource.getrusage(resource.RUSAGE_CHILDREN)      # the workers, joined
    cpu += after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    totals = summary.totals()
    print(json.dumps({"calls": totals["calls"], "same": totals["same"], "seconds": elapsed,
                      "cpu": cpu,
                      "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))


def floor_child(capture: str, host: str, port: int, key: bytes, window: int) -> None:
    """(--floor-child) The floor: the least a Python program does to replay the capture's
    calls and check their replies -- bench_pcap's reference reader (struct over the file,
    in-order reassembly, GIOP framing), each connection's GIOP 1.2 Requests sent again
    with new request ids (the target serves the recorded key), at most ``window`` of
    them waiting for their replies, half a window a write, each reply compared by its bytes but for the request id with the
    recorded one.  No key mapping, no decoding, no report: pycdr replay's job without its
    generality.  Prints what it took, as replay_child."""
    import collections
    import socket
    import struct
    from bench_pcap import reference_messages
    ulong = {0: struct.Struct(">I"), 1: struct.Struct("<I")}

    class Conn:
        def __init__(self):
            self.sock = socket.create_connection((host, port))
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.next_id = 1
            self.unsent: list = []
            self.ids: dict = {}             # recorded request id -> replayed
            self.recorded: dict = {}        # replayed id -> the recorded reply
            self.replayed: dict = {}        # replayed id -> the replayed reply, early
            self.buf = bytearray()
            self.outstanding = collections.deque()

        def flush(self):
            if self.unsent:
                self.sock.sendall(b"".join(self.unsent))
                self.unsent.clear()

        def read_replies(self, until: int):
            """Read until at most ``until`` calls wait for their reply."""
            buf = self.buf
            while len(self.outstanding) > until:
                data = self.sock.recv(262144)
                if not data:
                    sys.exit("the floor: the target closed a connection")
                buf += data
                pos = 0
                while len(buf) - pos >= 12:
                    size = ulong[buf[pos + 6] & 1].unpack_from(buf, pos + 8)[0]
                    if len(buf) - pos < 12 + size:
                        break
                    reply = bytes(buf[pos:pos + 12 + size])
                    pos += 12 + size
                    rid = ulong[reply[6] & 1].unpack_from(reply, 12)[0]
                    self.outstanding.remove(rid)
                    self.check(rid, replayed=reply)
                del buf[:pos]

        def check(self, rid, recorded=None, replayed=None):
            nonlocal same
            if recorded is None:
                recorded = self.recorded.pop(rid, None)
            if replayed is None:
                replayed = self.replayed.pop(rid, None)
            if recorded is None:
                self.replayed[rid] = replayed
            elif replayed is None:
                self.recorded[rid] = recorded
            else:
                # (omniORB leaves padding uninitialised: such replies count as different
                # here, where pycdr replay --idl compares their values)
                same += recorded[:12] == replayed[:12] and recorded[16:] == replayed[16:]

    conns: dict = {}
    calls = same = 0
    batch = max(1, window // 2)
    cpu = time.process_time()
    start = time.perf_counter()
    for src, dst, msg in reference_messages(capture):
        kind = msg[7]
        if kind in (0, 3):                      # a Request or LocateRequest: to the server
            conn = conns.get((src, dst))
            if conn is None:
                conn = conns[(src, dst)] = Conn()
            u = ulong[msg[6] & 1]
            at = 24 if kind == 0 else 20        # a KeyAddr's key length
            if msg[5] < 2 or u.unpack_from(msg, at)[0] != len(key) or \
                    msg[at + 4:at + 4 + len(key)] != key:
                sys.exit("the floor replays GIOP 1.2 requests to the recorded key only")
            calls += 1
            new_id = conn.next_id
            conn.next_id += 1
            if kind == 3 or msg[16] & 3:        # a reply expected (else a oneway)
                conn.ids[u.unpack_from(msg, 12)[0]] = new_id
                conn.outstanding.append(new_id)
            else:
                same += 1
            conn.unsent.append(msg[:12] + u.pack(new_id) + msg[16:])
            if len(conn.unsent) >= batch:       # half a window a write: the other half
                conn.flush()                    # is answered meanwhile
                conn.read_replies(window - batch)
        elif kind in (1, 4):                    # a recorded (Locate)Reply: to the client
            conn = conns.get((dst, src))
            if conn is not None:
                new_id = conn.ids.pop(ulong[msg[6] & 1].unpack_from(msg, 12)[0], None)
                if new_id is not None:
                    conn.check(new_id, recorded=msg)
    for conn in conns.values():
        conn.flush()
        conn.read_replies(0)
        conn.sock.close()
    elapsed = time.perf_counter() - start
    print(json.dumps({"calls": calls, "same": same, "seconds": elapsed,
                      "cpu": time.process_time() - cpu,
                      "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))


def floor_rate(capture: str, server, window: int) -> tuple:
    """(Measured, calls, same) of floor_child against an omniORBpy ``server``."""
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--floor-child", capture,
                           server.host, str(server.port), server.object_key.hex(), str(window)],
                          capture_output=True, text=True, timeout=600)
    if done.returncode:
        sys.exit(f"the floor failed ({done.returncode}): {done.stderr[-2000:]}")
    got = json.loads(done.stdout)
    return (Measured(got["calls"] / got["seconds"], got["cpu"] / got["calls"], got["rss"]),
            got["calls"], got["same"])


def replay_rate(capture: str, target: str, window: int = 1, jobs: int = 1) -> tuple:
    """(Measured, calls, same) of pycdr replay --idl --window ``window`` --jobs ``jobs`` to
    ``target``, in a process of its own (and its workers)."""
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", capture, target,
                           str(window), str(jobs)], capture_output=True, text=True, timeout=600)
    if done.returncode:
        sys.exit(f"the replay failed ({done.returncode}): {done.stderr[-2000:]}")
    got = json.loads(done.stdout)
    return (Measured(got["calls"] / got["seconds"], got["cpu"] / got["calls"], got["rss"]),
            got["calls"], got["same"])


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
    """pycdr serve of the same IDL (the reference ORB), its IOR from --ready-file;
    ``threads``: --threads (a thread per connection, its reads in C)."""

    def __init__(self, folder: str, threads: bool = False):
        ready = os.path.join(folder, "ior")
        if os.path.exists(ready):           # the previous run's: not this server's IOR
            os.unlink(ready)
        self.proc = subprocess.Popen([sys.executable, "-c", "from pycdr.cli.main import main; "
                                      "main()", "serve", IDL, "--interface", INTERFACE,
                                      "--ready-file", ready] + (["--threads"] if threads
                                                                 else []),
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


def spread(values, scale: float = 1.0, digits: int = 0) -> str:
    values = [v * scale for v in values]
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-" \
           f"{max(values):.{digits}f})"


def main(argv=None) -> None:
    import results as results_format
    if argv is None and sys.argv[1:2] == ["--child"]:
        replay_child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
        return
    if argv is None and sys.argv[1:2] == ["--floor-child"]:
        floor_child(sys.argv[2], sys.argv[3], int(sys.argv[4]), bytes.fromhex(sys.argv[5]),
                    int(sys.argv[6]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=4000)
    ap.add_argument("--clients", type=int, default=1, help="client processes (connections)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--window", type=int, default=64,
                    help="the pipelined replays' --window (calls outstanding a connection)")
    ap.add_argument("--jobs", type=int, nargs="+", default=[1],
                    help="the replays' --jobs (several: each, in every repeat)")
    ap.add_argument("--threads", action="store_true",
                    help="the reference ORB as pycdr serve --threads (a thread per "
                         "connection, blocking reads in C), not its event loop")
    ap.add_argument("--memory", action="store_true",
                    help="also the peak RSS of a replay of the capture and of one 4x its size")
    results_format.add_argument(ap)
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

    windowed = f"--window {args.window}"
    reference = "reference ORB (threads)" if args.threads else "reference ORB"
    replays = []                # (name, target "omni" or "ref", window, jobs)
    for jobs in args.jobs:
        with_jobs = f", --jobs {jobs}" if args.jobs != [1] else ""
        replays += [(f"replay -> omniORBpy, --window 1{with_jobs}", "omni", 1, jobs),
                    (f"replay -> omniORBpy, {windowed}{with_jobs}", "omni", args.window, jobs),
                    (f"replay -> {reference}, --window 1{with_jobs}", "ref", 1, jobs),
                    (f"replay -> {reference}, {windowed}{with_jobs}", "ref", args.window,
                     jobs)]
    floor = f"floor (plain socket replay) -> omniORBpy, {windowed}"
    # omniORBpy's client calling the reference ORB: the same calls to the same target as
    # the replays to it (the ratio to the omniORBpy server's client measures the servers too)
    client_ref = f"omniORBpy client -> {reference}"
    names = ["omniORBpy client", floor, client_ref] + [r[0] for r in replays]
    runs: dict = {name: [] for name in names}
    counts = set()
    for _ in range(args.repeat):
        with start_omni_echo_server(idl=IDL, interface=INTERFACE) as server:
            runs[names[0]].append(run_clients(server.ior, args.calls, args.clients))
        ref = ReferenceServer(folder, args.threads)
        try:
            runs[client_ref].append(run_clients(ref.ior, args.calls, args.clients))
        finally:
            ref.close()
        with start_omni_echo_server(idl=IDL, interface=INTERFACE) as server:
            measured, calls, same = floor_rate(capture, server, args.window)
        runs[floor].append(measured)
        counts.add((floor, calls, same))
        # Causal and pipelined replays interleaved with the floor, each to a fresh server.
        for name, target, window, jobs in replays:
            if target == "omni":
                with start_omni_echo_server(idl=IDL, interface=INTERFACE) as server:
                    measured, calls, same = replay_rate(capture, server.ior, window, jobs)
            else:
                ref = ReferenceServer(folder, args.threads)
                try:
                    measured, calls, same = replay_rate(capture, ref.ior, window, jobs)
                finally:
                    ref.close()
            runs[name].append(measured)
            counts.add((name, calls, same))
    width = max(len(n) for n in names) + 2
    print(f"{'':{width}}{'calls/s median (min-max)':>28}{'CPU us/call':>22}{'peak RSS MB':>22}")
    for name, measured in runs.items():
        print(f"{name:{width}}{spread([m.rate for m in measured]):>28}"
              f"{spread([m.cpu_per_call for m in measured], 1e6, 1):>22}"
              f"{spread([m.rss for m in measured], 1e-6, 1):>22}")
    for name, calls, same in sorted(counts):
        print(f"{name}: {calls} calls, {same} the same")
    print("(the floor compares bytes only: replies whose padding omniORB left uninitialised "
          "count as different there; pycdr replay --idl compares their values)")

    def ratio(name: str, base: str, tail: str) -> None:
        rates, bases = [m.rate for m in runs[name]], [m.rate for m in runs[base]]
        per_run = ", ".join(f"{v / f:.2f}" for v, f in zip(rates, bases))
        print(f"ratio {name} / {base}: "
              f"{statistics.median(rates) / statistics.median(bases):.2f}x (per run {per_run}{tail})")
    for name in names[3:]:
        ratio(name, names[0], "; target >= 1.0")
    for name, target, _, _ in replays:
        if target == "ref":
            ratio(name, client_ref, "; the same target")
    ratio(floor, names[0], "")
    for name, target, window, _ in replays:
        if target == "omni" and window == args.window:
            ratio(name, floor, "")
    if not args.results:
        return

    def median_ratio(name: str, base: str):
        return results_format.ratio(statistics.median(m.rate for m in runs[name]),
                                    statistics.median(m.rate for m in runs[base]))
    same_target = {name: client_ref for name, target, _, _ in replays if target == "ref"}
    on_floor = {name: floor for name, target, window, _ in replays
                if target == "omni" and window == args.window}
    rows = []
    for name, measured in runs.items():
        rates = [m.rate for m in measured]
        rows.append([name, round(statistics.median(rates)), round(min(rates)), round(max(rates)),
                     round(statistics.median(m.cpu_per_call for m in measured) * 1e6, 1),
                     round(statistics.median(m.rss for m in measured) / 1e6, 1),
                     median_ratio(name, names[0]) if name != names[0] else None,
                     median_ratio(name, same_target[name]) if name in same_target else None,
                     median_ratio(name, on_floor[name]) if name in on_floor else None])
    x = results_format.RATIO
    results_format.write(args.results, "replay", results_format.record(
        "replay", script=__file__, argv=sys.argv[1:] if argv is None else argv,
        quick=args.calls < 4000 or args.repeat < 3,
        path={"codec": results_format.codec_path(),
              "reference ORB": "threads" if args.threads else results_format.loop_name()},
        settings={"calls": args.calls, "clients": args.clients, "repeat": args.repeat,
                  "window": args.window, "jobs": args.jobs},
        tables=[results_format.table(
                    f"medians of {args.repeat} runs (target: a replay / omniORBpy client >= 1.0)",
                    ["run", "calls/s median", "min", "max", "CPU us/call", "peak RSS MB",
                     f"/ omniORBpy client {x}", f"/ omniORBpy client -> same target {x}",
                     f"/ floor {x}"], rows),
                results_format.table("calls replayed and replies the same",
                                     ["run", "calls", "the same"],
                                     [list(count) for count in sorted(counts)])]))


if __name__ == "__main__":
    main()
