"""The reference ORB under hostile load (issue 22): server memory and an honest client's
call latency before, during and after a flood of connections that each send the start
of a message claiming far more than they send.

    python benchmarks/bench_hostile_load.py                     # the issue's scale
    python benchmarks/bench_hostile_load.py --connections 200 --body-kb 16 --hold 2   # quick
    python benchmarks/bench_hostile_load.py --server-arg=--max-connections=256
    python benchmarks/bench_hostile_load.py --waves 3       # attacks one after the other

What runs, each in a process of its own:
- the server: ``pycdr serve`` of conformance/echo.idl's EchoAll::Echo on a free loopback
  port, at its defaults plus any ``--server-arg``;
- the attacker (this file, ``--attacker``): ``--connections`` TCP connections, each sends a
  GIOP 1.2 Request header claiming ``--claim-mb`` MiB and then ``--body-kb`` KiB of body,
  and holds the connection ``--hold`` seconds after the last one is sent; then it closes
  them all and exits.  It is bounded in count and time: it never reconnects, and it stops
  by itself at its deadline (``--hold`` + 60 s at the most) even if nobody tells it to;
- the honest client (this process): ``echo_long`` calls, each on a new connection (as
  ``pycdr call`` makes one), one after the other, before, during and after the attack.

It prints per phase the server's RSS (VmRSS of /proc/PID/status; during the attack its
peak, VmHWM: the highest since the server started, so with --waves the highest so far), the honest calls' latency (p50, p99, max, connection included) and failures,
and the attack's bytes actually held by the server: the bytes sent on the attacker connections
the server has not closed, at the end of the hold (the server has long accepted and read
them all by then; while connections are being made the attacker also counts those the
kernel holds for the server, not yet accepted: that figure is shown beside it).
The issue's targets are checked and printed as PASS/FAIL lines:
- during the attack, every honest call succeeds, p99 < 1 s;
- peak RSS <= baseline + 2 x the bytes actually held;
- after the attackers leave, RSS <= baseline + 50 MB.
The exit status is 0 whatever the numbers (a benchmark, not a test); 1 if it could not run.

No peer ORB runs here: the figures are the server's against its own baseline (RSS and
latency before the attack), and the bytes the attack actually makes the server hold
are the floor the peak RSS is judged against.  With ``--server-arg=--keep-memory`` the
server does not give freed memory back (pycdr.orb.memory), for comparison.
"""

from __future__ import annotations

# The run benchmarks/README.md's table comes from (the scale): about 1 minute.
FULL_RUN = "python benchmarks/bench_hostile_load.py --results"

import argparse
import asyncio
import json
import os
import resource
import select
import socket
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH_DIR)
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

MiB = 1 << 20
ATTACKER_GRACE = 60.0        # seconds the attacker may overrun its hold, at the most
HONEST_TIMEOUT = 5.0         # per honest call (connection included)


# --------------------------------------------------------------------------
# The attacker (a process of its own)
# --------------------------------------------------------------------------
def attack_header(claim: int) -> bytes:
    """A GIOP 1.2 Request header (big-endian) whose message_size claims ``claim`` bytes."""
    return b"GIOP\x01\x02\x00\x00" + claim.to_bytes(4, "big")


def run_attacker(args) -> int:
    """Open the connections, send each its header and body, hold, close.  Reports on
    stdout, one JSON object a line: {"held": bytes, "open": n, "holding": bool} every 50 ms
    (bytes sent on the connections the server has not closed; holding: all were sent),
    {"sent": n, "failed": n, "closed": n} once all are sent, {"done": true, "closed": n}
    at the end (closed: by the server)."""
    deadline = time.monotonic() + args.hold + ATTACKER_GRACE
    message_start = attack_header(args.claim_mb * MiB) + bytes(args.body_kb * 1024)
    opened, failed, closed = [], 0, 0
    last_sample = 0.0

    def sample(holding=False):
        nonlocal opened, closed
        poller = select.poll()       # (select.select takes no descriptor above 1023)
        for sock in opened:
            poller.register(sock, select.POLLIN)
        readable = {fd for fd, _ in poller.poll(0)}
        still = [sock for sock in opened
                 if sock.fileno() not in readable or not _closed_by_peer(sock)]
        closed += len(opened) - len(still)
        opened = still
        print(json.dumps({"held": len(still) * len(message_start), "open": len(still),
                          "holding": holding}), flush=True)

    for _ in range(args.connections):
        if time.monotonic() > deadline:
            break
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(5.0)
        try:
            s.connect(("127.0.0.1", args.port))
            s.sendall(message_start)
        except OSError:           # (refused, or closed by the server while sending)
            s.close()
            failed += 1
            continue
        opened.append(s)
        now = time.monotonic()
        if now - last_sample > 0.05:
            last_sample = now
            sample()
    sample()
    print(json.dumps({"sent": args.connections - failed, "failed": failed, "closed": closed}),
          flush=True)
    hold_until = min(time.monotonic() + args.hold, deadline)
    while time.monotonic() < hold_until:
        sample(holding=True)
        time.sleep(0.05)
    sample(holding=True)
    for s in opened:
        s.close()
    print(json.dumps({"done": True, "closed": closed}), flush=True)
    return 0


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether the server closed (or reset) ``sock``, which is readable: an end of stream
    or an error.  What it sent before closing (a MessageError) is read and dropped."""
    sock.setblocking(False)
    try:
        while True:
            if not sock.recv(65536):
                sock.close()
                return True
    except BlockingIOError:
        return False
    except OSError:
        sock.close()
        return True
    finally:
        if sock.fileno() != -1:
            sock.settimeout(5.0)


# --------------------------------------------------------------------------
# The orchestrator
# --------------------------------------------------------------------------
def raise_fd_limit(needed: int) -> int:
    """Raise this process's open-file limit (inherited by its children) toward ``needed``;
    the soft limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        soft = want
    return soft


def proc_status(pid: int) -> dict:
    """VmRSS and VmHWM of ``pid`` in bytes."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) * 1024
    return out


def start_server(idl_path: str, extra_args: list, workdir: str, log_path: str | None = None):
    ready = os.path.join(workdir, "ior.txt")
    argv = [sys.executable, "-c", "from pycdr.cli.main import main; main()", "serve", idl_path,
            "--interface", "EchoAll::Echo", "--port", "0", "--ready-file", ready] + extra_args
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=open(log_path or os.path.join(workdir, "server.log"),
                                        "w"),
                            cwd=REPO_ROOT)
    started = time.monotonic()
    while not os.path.exists(ready) or not open(ready).read().strip():
        if proc.poll() is not None or time.monotonic() - started > 30:
            proc.kill()
            with open(log_path or os.path.join(workdir, "server.log")) as log:
                raise RuntimeError("the server did not start:\n" + log.read()[-2000:])
        time.sleep(0.05)
    return proc, open(ready).read().strip()


def port_of(ior_text: str) -> int:
    from pycdr.codec.ior import ior_from_string
    from pycdr.orb.client import first_iiop_profile
    return first_iiop_profile(ior_from_string(ior_text)).port


async def honest_calls(ior_text: str, interface, until, min_calls: int) -> dict:
    """echo_long calls on a new connection each, until ``until()`` and at least
    ``min_calls``: latencies (s) and failures."""
    from pycdr.orb import ORB
    latencies, failures = [], []
    n = 0
    while n < min_calls or not until():
        n += 1
        started = time.perf_counter()
        try:
            async with ORB(timeout=HONEST_TIMEOUT, connect_timeout=HONEST_TIMEOUT) as orb:
                ref = await orb.string_to_object(ior_text, interface)
                if await ref.echo_long(n) != n:
                    raise RuntimeError("wrong echo")
            latencies.append(time.perf_counter() - started)
        except Exception as e:   # (a benchmark reports every failure; it does not stop)
            failures.append(f"{type(e).__name__}: {e}")
        await asyncio.sleep(0.01)
    return {"latencies": latencies, "failures": failures}


def percentile(values, p):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def describe(calls: dict) -> str:
    lat = calls["latencies"]
    text = (f"{len(lat)} ok, {len(calls['failures'])} failed; "
            f"p50 {percentile(lat, 50) * 1e3:.1f} ms, p99 {percentile(lat, 99) * 1e3:.1f} ms, "
            f"max {max(lat, default=float('nan')) * 1e3:.1f} ms")
    if calls["failures"]:
        text += f" (first failure: {calls['failures'][0]})"
    return text


async def attack_phase(args, port, ior_text, interface, server_pid):
    """Run the attacker while honest calls go on and the server's RSS is sampled."""
    argv = [sys.executable, os.path.abspath(__file__), "--attacker", "--port", str(port),
            "--connections", str(args.connections), "--claim-mb", str(args.claim_mb),
            "--body-kb", str(args.body_kb), "--hold", str(args.hold)]
    attacker = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE)
    state = {"held_max": 0, "held_at_end": 0, "open_max": 0, "done": False,
             "sent": None, "rss_max": 0, "closed": None, "started": time.monotonic(),
             "sending_took": None}

    async def read_attacker():
        async for line in attacker.stdout:
            report = json.loads(line)
            if "held" in report:
                # While connections are made, and until the server has accepted them
                # all, the attacker also counts connections the server has not accepted
                # yet (the kernel holds their bytes); at the end of the hold, what is
                # open is what the server holds.
                state["held_max"] = max(state["held_max"], report["held"])
                state["open_max"] = max(state["open_max"], report["open"])
                if report["holding"]:
                    state["held_at_end"] = report["held"]
            if "sent" in report:
                state["sent"] = report
                state["sending_took"] = time.monotonic() - state["started"]
            if report.get("done"):
                state["done"] = True
                state["closed"] = report["closed"]

    async def sample_rss():
        while not state["done"]:
            try:
                state["rss_max"] = max(state["rss_max"], proc_status(server_pid)["VmRSS"])
            except OSError:
                return
            await asyncio.sleep(0.05)

    reader = asyncio.ensure_future(read_attacker())
    sampler = asyncio.ensure_future(sample_rss())
    try:
        calls = await honest_calls(ior_text, interface, lambda: state["done"], args.calls)
        await asyncio.wait_for(reader, args.hold + ATTACKER_GRACE + 30)
    finally:
        if attacker.returncode is None:
            try:
                attacker.kill()
            except ProcessLookupError:
                pass
        await attacker.wait()
        sampler.cancel()
    return calls, state


def main(argv=None) -> int:
    import results as results_format
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=1500)
    parser.add_argument("--claim-mb", type=int, default=16,
                        help="MiB each attacker's header claims (default 16: the server's "
                             "default message limit)")
    parser.add_argument("--body-kb", type=int, default=64, help="KiB each attacker sends")
    parser.add_argument("--hold", type=float, default=5.0,
                        help="seconds the attacker holds its connections after the last")
    parser.add_argument("--calls", type=int, default=50,
                        help="honest calls at least, per phase")
    parser.add_argument("--waves", type=int, default=1,
                        help="attacks one after the other, each with its after phase (the "
                             "targets: over all of them, RSS after the last)")
    parser.add_argument("--settle", type=float, default=3.0,
                        help="seconds after the attack before 'after' is measured")
    parser.add_argument("--server-arg", action="append", default=[],
                        help="an extra option for pycdr serve (repeatable)")
    parser.add_argument("--json", default=None, help="write the results to this file")
    parser.add_argument("--server-log", default=None,
                        help="keep the server's stderr in this file (with --server-arg=-v: "
                             "its refusals, evictions and memory trims)")
    parser.add_argument("--attacker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    results_format.add_argument(parser)
    args = parser.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else argv
    if args.attacker:
        return run_attacker(args)
    return asyncio.run(orchestrate(args))


async def run_wave(args, port, ior_text, interface, server_pid, label) -> dict:
    """One attack, then the settle and the after phase; what they measured."""
    during, state = await attack_phase(args, port, ior_text, interface, server_pid)
    status = proc_status(server_pid)
    peak = max(status["VmHWM"], state["rss_max"])
    held = state["held_at_end"]
    sent = state["sent"] or {}
    print(f"during{label}: peak RSS {peak / MiB:.1f} MiB (VmHWM); bytes actually held "
          f"{held / MiB:.1f} MiB (at the end of the hold; in the attacker's view while it "
          f"connected, up to {state['held_max'] / MiB:.1f} MiB on {state['open_max']} "
          f"connections; in {state['sending_took'] or 0:.1f} s {sent.get('sent')} sent "
          f"their bytes, {sent.get('failed')} could not, {state['closed']} closed by the "
          f"server during the attack); honest calls: {describe(during)}", flush=True)
    await asyncio.sleep(args.settle)
    after_calls = await honest_calls(ior_text, interface, lambda: True, args.calls)
    after = proc_status(server_pid)["VmRSS"]
    print(f"after{label}:  RSS {after / MiB:.1f} MiB; honest calls: {describe(after_calls)}",
          flush=True)
    return {"peak_rss": peak, "held": held, "after_rss": after, "during": during,
            "after": after_calls, "attacker": state}


async def orchestrate(args) -> int:
    from pycdr import idl
    from pycdr.conformance.echo import ECHO_IDL
    limit = raise_fd_limit(args.connections + 512)
    if limit < args.connections + 64:
        print(f"open-file limit {limit} is too low for {args.connections} connections",
              file=sys.stderr)
        return 1
    interface = idl.load(ECHO_IDL).interfaces["EchoAll::Echo"]
    with tempfile.TemporaryDirectory(prefix="bench_hostile_") as workdir:
        server, ior_text = start_server(ECHO_IDL, args.server_arg, workdir, args.server_log)
        try:
            port = port_of(ior_text)
            print(f"server pid {server.pid} port {port}; attack: {args.connections} "
                  f"connections, {args.body_kb} KiB of a {args.claim_mb} MiB claim each, "
                  f"held {args.hold} s; server options: {args.server_arg or 'defaults'}",
                  flush=True)
            before = await honest_calls(ior_text, interface, lambda: True, args.calls)
            baseline = proc_status(server.pid)["VmRSS"]
            print(f"before: RSS {baseline / MiB:.1f} MiB; honest calls: {describe(before)}",
                  flush=True)
            waves = []
            for wave in range(args.waves):
                label = f" (wave {wave + 1} of {args.waves})" if args.waves > 1 else ""
                waves.append(await run_wave(args, port, ior_text, interface, server.pid,
                                            label))
        finally:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    during = {"latencies": [x for w in waves for x in w["during"]["latencies"]],
              "failures": [x for w in waves for x in w["during"]["failures"]]}
    peak = max(w["peak_rss"] for w in waves)
    held = max(w["held"] for w in waves)
    after = waves[-1]["after_rss"]
    p99 = percentile(during["latencies"], 99)
    checks = [
        ("honest calls succeed during the attack, p99 < 1 s",
         not during["failures"] and during["latencies"] and p99 < 1.0,
         f"{len(during['failures'])} failed, p99 {p99 * 1e3:.1f} ms"),
        ("peak RSS <= baseline + 2 x bytes held", peak <= baseline + 2 * held,
         f"{peak / MiB:.1f} <= {baseline / MiB:.1f} + 2 x {held / MiB:.1f} = "
         f"{(baseline + 2 * held) / MiB:.1f} MiB"),
        ("RSS after <= baseline + 50 MB", after <= baseline + 50e6,
         f"{after / MiB:.1f} <= {(baseline + 50e6) / MiB:.1f} MiB"),
    ]
    for name, ok, detail in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"baseline_rss": baseline, "peak_rss": peak, "held": held,
                       "after_rss": after, "before": before, "waves": waves,
                       "checks": {name: bool(ok) for name, ok, _ in checks}}, f, indent=1)
    if args.results:
        write_results(args, baseline, before, waves, checks)
    return 0


def write_results(args, baseline, before, waves, checks) -> None:
    """The phases and the checks as printed, as a results file."""
    import results as results_format

    def phase(name, rss, calls, held=None):
        lat = calls["latencies"]
        return [name, round(rss / MiB, 1), None if held is None else round(held / MiB, 1),
                len(lat), len(calls["failures"]), round(percentile(lat, 50) * 1e3, 1),
                round(percentile(lat, 99) * 1e3, 1),
                round(max(lat, default=float("nan")) * 1e3, 1),
                results_format.ratio(rss, baseline)]
    rows = [phase("before", baseline, before)]
    for number, wave in enumerate(waves, 1):
        label = f" (wave {number})" if len(waves) > 1 else ""
        rows += [phase(f"during{label}: peak", wave["peak_rss"], wave["during"], wave["held"]),
                 phase(f"after{label}", wave["after_rss"], wave["after"])]
    results_format.write(args.results, "hostile_load", results_format.record(
        "hostile_load", script=__file__, argv=args.argv,
        quick=args.connections < 1500 or args.body_kb < 64,
        path={"codec": results_format.codec_path(), "loop": results_format.loop_name()},
        settings={"connections": args.connections, "claim_mb": args.claim_mb,
                  "body_kb": args.body_kb, "hold_s": args.hold, "calls": args.calls,
                  "waves": args.waves, "server_args": " ".join(args.server_arg) or "defaults"},
        tables=[results_format.table(
                    "server RSS and an honest client's echo_long calls (a new connection "
                    "each), per phase",
                    ["phase", "RSS MiB", "attack bytes held MiB", "calls ok", "calls failed",
                     "p50 ms", "p99 ms", "max ms", f"RSS / baseline {results_format.RATIO}"],
                    rows),
                results_format.table("the issue's targets", ["target", "met", "figures"],
                                     [[name, "PASS" if ok else "FAIL", detail]
                                      for name, ok, detail in checks])]))


if __name__ == "__main__":
    sys.exit(main())
