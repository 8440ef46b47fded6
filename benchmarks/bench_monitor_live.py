"""`pycdr monitor -i lo` on live omniORBpy calls at a paced rate: packets dropped, calls
lost, CPU per call and durations against the clients' own, step by step.

    .venv/bin/python benchmarks/bench_monitor_live.py [--rates 500 1000 2000 4000 8000]
    .venv/bin/python benchmarks/bench_monitor_live.py --quick      # one low rate, seconds

Needs capture rights (root, or CAP_NET_RAW and CAP_NET_ADMIN) and omniORBpy.  One
omniORBpy echo server (tests/peers/echo.idl) on 127.0.0.1 for the whole run; for each
offered rate (calls a second, all clients together) a fresh ``pycdr monitor -i lo
--filter 'tcp port P' --json FILE`` is started, then ``--clients`` omniORBpy client
processes (record_load.py's client and call mix, small calls unless ``--big``) each
call at its share of the rate for ``--seconds``, paced: call k of a client starts at
``start + k / share`` (at once when it is late, so a client that cannot keep up makes
fewer calls, and the achieved rate says so).  Each client times every call itself
(``time.monotonic_ns()`` around it) and finds the local port of its connection to the
server (its sockets in /proc/self/fd, looked up in /proc/net/tcp).

Per step it reports:

- packets the monitor's libpcap dropped (the monitor's last stderr line, read from
  ``pcap_stats`` when the capture ends);
- calls lost: the calls the clients made against the monitor's rows of that port with
  outcome ``success`` (other outcomes are counted beside: no_reply, gap, orphan_reply...);
- the lag: seconds from the clients' end to the monitor's last row (past a second the
  monitor was behind, the kernel's buffer holding what it had not read: at that rate a
  longer step would drop packets);
- CPU microseconds per call of the monitor (its process, from the clients' start to the
  last row written) beside the load's (the clients' calling loops plus the server's
  process over the same time);
- durations: the monitor's ``duration_ns`` of each call against its client's own
  measurement.  omniORBpy does not show a call's request id, so rows are matched by
  order: a client makes its calls one after the other on one connection, so its rows
  (that connection's client port, echo operations, sorted by request id, which omniORB
  increases on a connection) are its calls in the order it made them; a row whose
  operation is not the call's counts as a mismatch, and a client whose row count is not
  its call count is left out of the comparison.  The capture times a call from its
  request on the wire to its reply on the wire, inside the client's measurement: the
  share of calls where duration_ns <= the client's (target >= 99 %) and the median of
  (client's - duration_ns) (target <= 200 us).

The steps go up until one drops a packet or loses a call, or the clients cannot make
the rate offered (achieved < 90 % of it: the load is the limit there, not the monitor);
the results are the highest rate offered with no packet dropped and no call lost, and
the highest at which the monitor also kept up.  The
clients, the server and the monitor share the machine's CPUs: on a machine also busy
with other work the figures move from run to run.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import benchprocs  # noqa: E402  (puts tests/ on sys.path: the peers)
import record_load  # noqa: E402

PYCDR = [sys.executable, "-c", "from pycdr.cli.main import main; main()"]
RATES = (500, 1000, 2000, 4000, 8000, 16000)
# The run benchmarks/README.md's table comes from: 10 s a rate, up to the first loss;
# about 2 minutes on 2 cores.
FULL_RUN = "python benchmarks/bench_monitor_live.py --results"
QUICK_RATE = 200
TARGET_WITHIN = 0.99
TARGET_MEDIAN_US = 200
# A step whose clients made fewer calls than this share of the rate offered: the load is
# the limit, not the monitor; no higher rate is tried.
ACHIEVED_SHARE = 0.9
# The monitor kept up with a step when its rows were all written within this many seconds
# of the clients' end; past it the kernel's buffer held what it had not read yet, and a
# longer step at that rate would fill it and drop packets.
KEPT_UP_SECONDS = 1.0
ECHO_OPERATIONS = ("echo_long", "echo_double", "echo_string", "echo_octets")

# argv[4] rate (calls a second, this client), [5] seconds, [6] seed, [7] calls in 50
# that are big, [8] the server's port, [9] the output file.  It says READY on stdout
# once connected, and starts on a line on stdin.
CLIENT = record_load.CLIENT_SETUP + r'''
import json, time

def connection_ports(server_port):
    """The local ports of this process's TCP connections to server_port."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            local, remote, inode = f[1], f[2], f[9]
            if inode in inodes and int(remote.rsplit(":", 1)[1], 16) == server_port:
                ports.append(int(local.rsplit(":", 1)[1], 16))
    return ports

rate, seconds = float(sys.argv[4]), float(sys.argv[5])
rng = random.Random(int(sys.argv[6]))
big_calls, server_port, out = int(sys.argv[7]), int(sys.argv[8]), sys.argv[9]
calls = []
now = time.monotonic_ns
start = now()
calls.append(("echo_long", start, (target.echo_long(0), now())[1]))    # connects
ports = connection_ports(server_port)
print("READY", flush=True)
sys.stdin.readline()
interval = 1e9 / rate
cpu = time.process_time()
begin = now()
end = begin + int(seconds * 1e9)
i = 1
while True:
    due = begin + int((i - 1) * interval)
    t = now()
    if due >= end:
        break
    if t < due:
        time.sleep((due - t) / 1e9)
    s = now()
    op = one_call(rng, i, big_calls)
    calls.append((op, s, now()))
    i += 1
wall = (now() - begin) / 1e9
cpu = time.process_time() - cpu
ports_after = connection_ports(server_port)
with open(out, "w") as f:
    json.dump({"ports": sorted(set(ports) | set(ports_after)), "calls": calls, "cpu": cpu,
               "wall": wall, "timed": len(calls) - 1}, f)
orb.destroy()
'''


def _dropped(stderr: str) -> int | None:
    """Packets dropped, from the monitor's last line (None when it did not say)."""
    for line in reversed(stderr.splitlines()):
        if "dropped (libpcap's count)" in line:
            return int(line.split(" dropped")[0].rsplit(", ", 1)[1])
    return None


def _rows(path) -> list:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class _RowsOfCalls:
    """How many rows of the clients' operations a growing JSON Lines file holds so far
    (read on from where it was left: the file grows to tens of MB).  Other rows (the
    _is_a of a client's narrow) are not counted: with them the count would reach the
    clients' before the last calls' rows came."""

    MARKS = tuple(f'"operation": "{op}"'.encode() for op in ECHO_OPERATIONS)

    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.rows = 0

    def count(self) -> int:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return self.rows
        whole = data.rfind(b"\n") + 1
        for line in data[:whole].splitlines():
            self.rows += any(mark in line for mark in self.MARKS)
        self.offset += whole
        return self.rows


def start_monitor(port: int, out: str, scratch: str):
    err_path = os.path.join(scratch, "monitor.err")
    err = open(err_path, "w+")
    monitor = subprocess.Popen(PYCDR + ["monitor", "-i", "lo", "--filter", f"tcp port {port}",
                                        "--json", out], stdout=subprocess.DEVNULL, stderr=err,
                               text=True)
    deadline = time.monotonic() + 60
    while True:
        with open(err_path) as f:
            said = f.read()
        if said.startswith("capturing on"):
            return monitor, err, err_path
        if monitor.poll() is not None or time.monotonic() > deadline:
            monitor.kill()
            monitor.wait()
            err.close()
            raise RuntimeError(f"pycdr monitor did not start: {said.strip()}")
        time.sleep(0.05)


def step(server, rate: float, seconds: float, clients: int, big: int, scratch: str) -> dict:
    """One offered rate: the monitor, the clients, and what each saw."""
    from peers.omni import ECHO_IDL
    rows_path = os.path.join(scratch, f"rows-{rate:g}.jsonl")
    monitor, err, err_path = start_monitor(server.port, rows_path, scratch)
    procs = []
    outs = [os.path.join(scratch, f"client-{rate:g}-{k}.json") for k in range(clients)]
    try:
        for k in range(clients):
            procs.append(subprocess.Popen(
                [sys.executable, "-c", CLIENT, os.path.join(ROOT, "tests"), ECHO_IDL,
                 server.ior, str(rate / clients), str(seconds), str(k), str(big),
                 str(server.port), outs[k]],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        for p in procs:
            for line in p.stdout:
                if line.strip() == "READY":
                    break
            else:
                raise RuntimeError(f"a client did not start (status {p.wait()})")
        monitor_cpu = benchprocs.process_cpu_seconds(monitor.pid)
        server_cpu = benchprocs.process_cpu_seconds(server.pid)
        started = time.monotonic()
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            p.stdin.close()
            if p.wait(timeout=seconds + 120) != 0:
                raise RuntimeError(f"a client failed (status {p.returncode})")
        load_wall = time.monotonic() - started
        server_cpu = benchprocs.process_cpu_seconds(server.pid) - server_cpu
        made = [json.load(open(path)) for path in outs]
        expected = sum(len(m["calls"]) for m in made)
        # The rows still coming: until every call has one, or none came for 5 seconds.
        last, quiet = -1, time.monotonic()
        rows_of_calls = _RowsOfCalls(rows_path)
        while time.monotonic() - quiet < 5:
            n = rows_of_calls.count()
            if n >= expected:
                break
            if n != last:
                last, quiet = n, time.monotonic()
            time.sleep(0.1)
        drained = time.monotonic() - started
        monitor_cpu = benchprocs.process_cpu_seconds(monitor.pid) - monitor_cpu
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        monitor.send_signal(signal.SIGINT)
        try:
            monitor.wait(timeout=120)
        except subprocess.TimeoutExpired:
            monitor.kill()
            monitor.wait()
        err.close()
    with open(err_path) as f:
        said = f.read()
    if monitor.returncode != 0:
        raise RuntimeError(f"pycdr monitor exited {monitor.returncode}: {said.strip()}")
    result = compare(made, _rows(rows_path), server.port)
    timed = sum(m["timed"] for m in made)
    client_cpu = sum(m["cpu"] for m in made)
    result.update(
        offered=rate, seconds=seconds, clients=clients,
        achieved=round(timed / max(m["wall"] for m in made), 1), load_wall=round(load_wall, 3),
        drain_wall=round(drained - load_wall, 3),
        dropped=_dropped(said),
        monitor_cpu_us_per_call=round(monitor_cpu / result["calls"] * 1e6, 1),
        load_cpu_us_per_call=round((client_cpu + server_cpu) / result["calls"] * 1e6, 1),
        client_cpu_us_per_call=round(client_cpu / timed * 1e6, 1),
        server_cpu_us_per_call=round(server_cpu / result["calls"] * 1e6, 1),
        monitor_summary=[line for line in said.splitlines() if line][-2:])
    result["clean"] = result["dropped"] == 0 and result["lost"] == 0
    result["kept_up"] = result["clean"] and result["drain_wall"] <= KEPT_UP_SECONDS
    return result


def compare(made: list, rows: list, port: int) -> dict:
    """The clients' calls (``made``: each client's output) against the monitor's rows."""
    ours = [r for r in rows if r["server_port"] == port]
    outcomes: dict = {}
    for r in ours:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
    by_port: dict = {}
    for r in ours:
        if r["outcome"] == "success" and r["operation"] in ECHO_OPERATIONS:
            by_port.setdefault(r["client_port"], []).append(r)
    calls = sum(len(m["calls"]) for m in made)
    seen = sum(len(v) for v in by_port.values())
    diffs, within, mismatched, unmatched_clients = [], 0, 0, 0
    for m in made:
        mine = [r for p in m["ports"] for r in by_port.get(p, ())]
        if len(m["ports"]) != 1 or len(mine) != len(m["calls"]):
            unmatched_clients += 1
            continue
        mine.sort(key=lambda r: r["request_id"])
        for (op, start, end), r in zip(m["calls"], mine):
            if r["operation"] != op:
                mismatched += 1
                continue
            client_ns = end - start
            diffs.append(client_ns - r["duration_ns"])
            within += r["duration_ns"] <= client_ns
    compared = len(diffs)
    return {"calls": calls, "rows_success": seen, "lost": max(0, calls - seen),
            "extra_rows": max(0, seen - calls), "outcomes": dict(sorted(outcomes.items())),
            "compared": compared, "mismatched": mismatched,
            "clients_not_compared": unmatched_clients,
            "within_share": round(within / compared, 5) if compared else None,
            "median_diff_us": round(statistics.median(diffs) / 1e3, 1) if compared else None,
            "p99_diff_us": round(sorted(diffs)[int(0.99 * (compared - 1))] / 1e3, 1)
            if compared else None,
            "max_excess_us": round(-min(diffs) / 1e3, 1) if compared and min(diffs) < 0
            else 0.0}


def run(rates=RATES, seconds: float = 10.0, clients: int = 4, big: int = 0,
        stop_at_loss: bool = True) -> dict:
    from peers.omni import start_omni_echo_server
    steps = []
    with tempfile.TemporaryDirectory(prefix="pycdr-bench-monitor-live-") as scratch, \
            start_omni_echo_server(giop=(1, 2)) as server:
        for rate in rates:
            print(f"  {rate:g} calls/s offered, {clients} clients, {seconds:g} s ...",
                  file=sys.stderr, flush=True)
            one = step(server, rate, seconds, clients, big, scratch)
            steps.append(one)
            for name in os.listdir(scratch):          # the rows of a step: tens of MB
                if name.startswith("rows-"):
                    os.unlink(os.path.join(scratch, name))
            if stop_at_loss and (not one["clean"] or one["achieved"] < ACHIEVED_SHARE * rate):
                break
    clean = [s for s in steps if s["clean"]]
    best = max(clean, key=lambda s: s["offered"]) if clean else None
    kept = [s for s in clean if s["kept_up"]]
    return {"steps": steps,
            "highest_clean_offered": best["offered"] if best else None,
            "highest_clean_achieved": best["achieved"] if best else None,
            "highest_kept_up_offered": max(s["offered"] for s in kept) if kept else None,
            "load_limited": bool(steps) and steps[-1]["clean"]
            and steps[-1]["achieved"] < ACHIEVED_SHARE * steps[-1]["offered"],
            "targets": {"within_share": TARGET_WITHIN, "median_diff_us": TARGET_MEDIAN_US}}


def _verdict(ok) -> str:
    return "met" if ok else "NOT met"


def format_table(results) -> str:
    lines = [f"{'offered':>8} {'achieved':>8} {'calls':>7} {'dropped':>7} {'lost':>5} "
             f"{'mon us/c':>8} {'load us/c':>9} {'mon/load':>8} {'<=client':>8} "
             f"{'med us':>7} {'p99 us':>7} {'lag s':>6}  other outcomes"]
    for s in results["steps"]:
        other = {k: v for k, v in s["outcomes"].items() if k != "success"}
        ratio = s["monitor_cpu_us_per_call"] / s["load_cpu_us_per_call"] \
            if s["load_cpu_us_per_call"] else float("nan")
        within = "-" if s["within_share"] is None else f"{s['within_share']:.2%}"
        lines.append(f"{s['offered']:8g} {s['achieved']:8.0f} {s['calls']:7d} "
                     f"{'?' if s['dropped'] is None else s['dropped']:>7} {s['lost']:5d} "
                     f"{s['monitor_cpu_us_per_call']:8.1f} {s['load_cpu_us_per_call']:9.1f} "
                     f"{ratio:8.2f} {within:>8} {s['median_diff_us'] or 0:7.1f} "
                     f"{s['p99_diff_us'] or 0:7.1f} {s['drain_wall']:6.2f}  {other or ''}")
    for s in results["steps"]:
        if s["clients_not_compared"] or s["mismatched"]:
            lines.append(f"  {s['offered']:g}/s: {s['clients_not_compared']} clients' calls "
                         f"not compared (rows and calls differ in number), {s['mismatched']} "
                         "rows whose operation was not the call's")
    best = results["highest_clean_offered"]
    lines.append("highest rate with no packet dropped and no call lost: " + (
        f"{best:g} calls/s offered ({results['highest_clean_achieved']:.0f} achieved)"
        if best is not None else "none") + (
        "  (the clients could not make the next rate: the load is the limit)"
        if results["load_limited"] else ""))
    kept = results["highest_kept_up_offered"]
    lines.append(f"highest rate the monitor kept up with (its rows all out within "
                 f"{KEPT_UP_SECONDS:g} s of the load's end; 'lag s'): "
                 + (f"{kept:g} calls/s offered" if kept is not None else "none"))
    for s in results["steps"]:
        if s["within_share"] is None:
            continue
        lines.append(
            f"{s['offered']:g}/s durations: duration_ns <= client's in {s['within_share']:.2%} "
            f"(target >= {TARGET_WITHIN:.0%}: {_verdict(s['within_share'] >= TARGET_WITHIN)}); "
            f"median client - monitor {s['median_diff_us']:.1f} us (target <= "
            f"{TARGET_MEDIAN_US}: {_verdict(s['median_diff_us'] <= TARGET_MEDIAN_US)})")
    return "\n".join(lines)


def results_tables(results) -> list:
    """format_table's figures as a results file's tables."""
    import results as results_format
    x = results_format.RATIO
    rows = []
    for s in results["steps"]:
        rows.append([s["offered"], round(s["achieved"]), s["calls"], s["dropped"], s["lost"],
                     round(s["monitor_cpu_us_per_call"], 1),
                     round(s["load_cpu_us_per_call"], 1),
                     results_format.ratio(s["monitor_cpu_us_per_call"],
                                          s["load_cpu_us_per_call"]),
                     None if s["within_share"] is None else round(100 * s["within_share"], 2),
                     None if s["median_diff_us"] is None else round(s["median_diff_us"], 1),
                     round(s["drain_wall"], 2)])
    best, kept = results["highest_clean_offered"], results["highest_kept_up_offered"]
    return [results_format.table(
        "omniORBpy clients at a paced rate, pycdr monitor -i lo beside them (targets: no "
        "packet dropped, no call lost; duration_ns <= the client's own for >= "
        f"{TARGET_WITHIN:.0%} of calls, median difference <= {TARGET_MEDIAN_US} us); highest "
        f"clean rate offered: {best if best is not None else 'none'}, kept up with: "
        f"{kept if kept is not None else 'none'}",
        ["offered calls/s", "achieved calls/s", "calls", "packets dropped", "calls lost",
         "monitor cpu us/call", "load cpu us/call", f"monitor/load {x}",
         "duration <= client's %", "median client - monitor us", "lag s"], rows)]


def main(argv=None) -> None:
    import results as results_format
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", type=float, nargs="+", default=list(RATES),
                    help="offered calls a second, all clients together, in turn")
    ap.add_argument("--seconds", type=float, default=10.0, help="of calls at each rate")
    ap.add_argument("--clients", type=int, default=4, help="client processes")
    ap.add_argument("--big", type=int, default=0,
                    help="calls in 50 that send 20 KB (GIOP fragments)")
    ap.add_argument("--all", action="store_true",
                    help="run every rate, even past the first loss")
    ap.add_argument("--quick", action="store_true",
                    help=f"one rate ({QUICK_RATE}/s), 2 clients, 3 seconds")
    ap.add_argument("--json", dest="json_file", help="also write the results here")
    results_format.add_argument(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.rates, args.seconds, args.clients = [QUICK_RATE], 3.0, 2
    started = time.monotonic()
    results = run(args.rates, args.seconds, args.clients, args.big, not args.all)
    results["wall_seconds"] = round(time.monotonic() - started, 1)
    print(format_table(results))
    if args.json_file:
        with open(args.json_file, "w") as f:
            json.dump(results, f, indent=1)
    results_format.write(args.results, "monitor_live", results_format.record(
        "monitor_live", script=__file__, argv=sys.argv[1:] if argv is None else argv,
        quick=args.quick, path={"codec": results_format.codec_path()},
        settings={"rates": args.rates, "seconds": args.seconds, "clients": args.clients,
                  "big": args.big},
        tables=results_tables(results)))


if __name__ == "__main__":
    main()
