"""Calls per second through `pycdr proxy` beside a plain byte relay, in one run.

An omniORBpy client (1 and 16 threads, one connection each) calls an omniORBpy echo
server (tests/peers/echo.idl) three ways:

1. direct: client to server;
2. relay: through a byte relay (in this file: it copies bytes both ways and decodes
   nothing; the floor of any proxy), on the proxy's event loop (uvloop's when it is
   installed, as `pycdr proxy` runs);
3. proxy: through `pycdr proxy` (no rules, call lines off).

Two payloads: ``echo_long`` (a small call) and ``echo_octets`` of 64 KB.  Reported:
calls/s of each, the ratio proxy / relay (the target: >= 0.8), the latency a call
adds through the proxy against direct calls (p50 and p99), and the CPU time a call
costs the relay's and the proxy's process (Linux: /proc; steadier than calls/s on a
machine other work shares).  Each measurement is taken in ``--rounds`` parts, the
contenders in turn, so that a change in the machine's load weighs on all alike.

Then the cost of rewriting references: a second server (bench_proxy_refs.idl) echoes
the object reference each call passes, through `pycdr proxy --idl` (which reads every
reply's result by the IDL).  The same proxy is called with a reference to that server,
which the proxy rewrites in each reply (re-encoding it), and with one to another port,
which it reads and passes unchanged.  Reported: calls/s of both and the cost of
rewriting, 1 - rewritten / unchanged (the target: <= 10 %).

    python benchmarks/bench_proxy.py [--calls N] [--clients 1,16] [--rounds 3] [--quick]
                                     [--json FILE]

``--quick``: a smoke run (few calls, 1 and 2 clients), its numbers meaningless.  The
relay and the client run as processes of this file (``--relay``, ``--client``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "peers"))      # (omni_idl, for the client)
PYCDR = os.path.join(os.path.dirname(sys.executable), "pycdr")
# The run benchmarks/README.md's table comes from (100,000 calls in 20 rounds, 1 and 16
# clients): about 2 minutes on 2 cores. Fewer calls make a run of a few seconds (a small
# call takes 25-100 us) whose ratios swing by more than the margins the targets are
# judged by: 20,000 calls gave 0.75 and 0.90 for the same code minutes apart.
FULL_RUN = "python benchmarks/bench_proxy.py --calls 100000 --rounds 20 --results"
PAYLOADS = {"long": ("echo_long", 42), "octets64k": ("echo_octets", 65536)}
REFS_IDL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_proxy_refs.idl")
REFS_INTERFACE = "PycdrBench::Refs"
RELAY_TARGET, REWRITE_TARGET = 0.8, 0.10       # proxy/relay at least; rewriting at most


# -- the byte relay ---------------------------------------------------------------------
async def _relay(listen_port: int, target_host: str, target_port: int) -> None:
    async def pipe(reader, writer):
        try:
            while data := await reader.read(256 * 1024):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()

    async def accepted(reader, writer):
        up_reader, up_writer = await asyncio.open_connection(target_host, target_port)
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(accepted, "127.0.0.1", listen_port)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


# -- the client -------------------------------------------------------------------------
def _client(plan: dict) -> None:
    """Every measurement of ``plan`` ({"targets": {name: IOR}, "payloads", "clients",
    "calls", "rounds", "pids": {name: the pid whose CPU time a call costs}, "refs":
    {"proxy": IOR, "rewritten": IOR, "unchanged": IOR, "pid"} or None}) in this one
    process (omniORBpy starts once); a JSON row each on stdout."""
    import threading

    from omniORB import CORBA

    import omni_idl
    from peers.omni import ECHO_IDL
    orb = CORBA.ORB_init([sys.argv[0], "-ORBoneCallPerConnection", "1"], CORBA.ORB_ID)
    omni_idl.import_idl(ECHO_IDL)
    echo_cls, _ = omni_idl.interface_classes("PycdrTest::Echo")

    def measure(ior, cls, threads, calls, operation, argument, pid=None) -> dict:
        latencies: list = []
        lock = threading.Lock()
        start = threading.Event()
        ready = threading.Barrier(threads + 1)

        def work():
            # its own reference, so its own connection (oneCallPerConnection)
            target = orb.string_to_object(ior)._narrow(cls)
            call = getattr(target, operation)
            call(argument)                      # the connection, before timing
            mine = []
            ready.wait()
            start.wait()
            for _ in range(calls):
                t = time.perf_counter()
                call(argument)
                mine.append(time.perf_counter() - t)
            with lock:
                latencies.extend(mine)
        workers = [threading.Thread(target=work) for _ in range(threads)]
        for w in workers:
            w.start()
        ready.wait()
        cpu = _cpu_seconds(pid)
        began = time.perf_counter()
        start.set()
        for w in workers:
            w.join()
        seconds = time.perf_counter() - began
        cpu = None if cpu is None else _cpu_seconds(pid) - cpu
        return {"calls": len(latencies), "seconds": seconds, "latencies": latencies,
                "cpu_s": cpu}

    def interleaved(contenders: dict, threads, calls, operation) -> dict:
        """{name: measurement} of contenders ({name: (ior, class, argument, pid)}), each
        measured in ``rounds`` parts in turn (the order rotating), so that a change of
        the machine's load during the run weighs on all alike."""
        rounds = plan["rounds"]
        names = list(contenders)
        parts: dict = {name: [] for name in names}
        for r in range(rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                ior, cls, arg, pid = contenders[name]
                parts[name].append(measure(ior, cls, threads, max(1, calls // rounds),
                                           operation, arg, pid))
        return {name: _combined(p) for name, p in parts.items()}

    pids = plan.get("pids", {})
    for payload in plan["payloads"]:
        operation, size = PAYLOADS[payload]
        argument = b"x" * size if operation == "echo_octets" else size
        n = plan["calls"] if payload == "long" else max(1, plan["calls"] // 10)
        for threads in plan["clients"]:
            row = {"payload": payload, "clients": threads}
            row.update(interleaved({name: (ior, echo_cls, argument, pids.get(name))
                                    for name, ior in plan["targets"].items()},
                                   threads, max(1, n // threads), operation))
            print(json.dumps(row), flush=True)
    refs = plan.get("refs")
    if refs:
        omni_idl.import_idl(REFS_IDL)
        refs_cls, _ = omni_idl.interface_classes(REFS_INTERFACE)
        proxied = orb.string_to_object(refs["proxy"])._narrow(refs_cls)
        for name, port in (("rewritten", _port_of(refs["proxy"])),
                           ("unchanged", _port_of(refs["unchanged"]))):
            got = proxied.echo_object(orb.string_to_object(refs[name]))
            if _port_of(orb.object_to_string(got)) != port:
                raise SystemExit(f"the {name} reference came back with another port")
        for threads in plan["clients"]:
            row = {"payload": "refs", "clients": threads}
            row.update(interleaved(
                {name: (refs["proxy"], refs_cls, orb.string_to_object(refs[name]),
                        refs["pid"]) for name in ("unchanged", "rewritten")},
                threads, max(1, plan["calls"] // threads), "echo_object"))
            print(json.dumps(row), flush=True)
    orb.destroy()


def _cpu_seconds(pid) -> float | None:
    """The CPU time process ``pid`` used so far, all its threads (Linux's
    /proc/PID/task/*/schedstat, in ns), or None."""
    if pid is None:
        return None
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        total = 0
        for task in tasks:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total / 1e9


def _combined(parts: list) -> dict:
    calls = sum(p["calls"] for p in parts)
    seconds = sum(p["seconds"] for p in parts)
    latencies = sorted(x for p in parts for x in p["latencies"])
    cpu = None if any(p["cpu_s"] is None for p in parts) else sum(p["cpu_s"] for p in parts)
    return {"calls": calls, "seconds": seconds, "calls_per_s": calls / seconds,
            "p50_us": latencies[len(latencies) // 2] * 1e6,
            "p99_us": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1e6,
            "cpu_us_per_call": None if cpu is None else cpu / calls * 1e6}


# -- the run ----------------------------------------------------------------------------
def _corbaloc(port: int, key: str = "Echo") -> str:
    return f"corbaloc:iiop:1.2@127.0.0.1:{port}/{key}"


def _start(argv) -> tuple:
    """A process that prints its port (the relay) or an IOR first (the proxy)."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True)
    return process, process.stdout.readline().strip()


def _proxy(target_ior: str, *options) -> tuple:
    """`pycdr proxy` to ``target_ior``: (process, its port)."""
    process, ior = _start([PYCDR, "proxy", "--listen", "127.0.0.1:0", "--target", target_ior,
                           "-q", *options])
    if not ior:
        process.kill()
        raise RuntimeError("pycdr proxy did not start")
    return process, _port_of(ior)


def run(calls: int = 2000, clients=(1, 16), payloads=tuple(PAYLOADS),
        refs: bool = True, rounds: int = 3) -> dict:
    from peers.omni import start_omni_echo_server
    results: dict = {"calls": calls, "rounds": rounds, "rows": []}
    processes: list = []
    with contextlib.ExitStack() as stack:
        try:
            plan = {"targets": {}, "payloads": list(payloads), "clients": list(clients),
                    "calls": calls, "rounds": rounds, "refs": None, "pids": {}}
            if payloads:
                server = stack.enter_context(start_omni_echo_server(object_id="Echo"))
                relay, relay_port = _start([sys.executable, os.path.abspath(__file__),
                                            "--relay", f"{server.host}:{server.port}"])
                processes.append(relay)
                proxy, proxy_port = _proxy(server.ior)
                processes.append(proxy)
                plan["targets"] = {"direct": server.ior, "relay": _corbaloc(int(relay_port)),
                                   "proxy": _corbaloc(proxy_port)}
                plan["pids"] = {"relay": relay.pid, "proxy": proxy.pid}
            if refs:
                refs_server = stack.enter_context(start_omni_echo_server(
                    object_id="Refs", idl=REFS_IDL, interface=REFS_INTERFACE))
                refs_proxy, refs_port = _proxy(refs_server.ior, "--idl", REFS_IDL)
                processes.append(refs_proxy)
                # (another port: a reference the proxy reads and has no route for)
                elsewhere = refs_server.port + 1 if refs_server.port < 65535 else 1
                plan["refs"] = {"proxy": _corbaloc(refs_port, "Refs"),
                                "rewritten": _corbaloc(refs_server.port, "Refs"),
                                "unchanged": _corbaloc(elsewhere, "Refs"),
                                "pid": refs_proxy.pid}
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--client",
                                  json.dumps(plan)], capture_output=True, text=True,
                                 timeout=3600)
            if out.returncode != 0:
                raise RuntimeError(f"the client failed: {out.stderr[-2000:]}")
            results["rows"] = [json.loads(line) for line in out.stdout.splitlines()]
        finally:
            for p in processes:
                p.send_signal(signal.SIGTERM)
                p.wait(20)
    return results


def _port_of(ior_text: str) -> int:
    """The port of an IOR's or a corbaloc's first IIOP address."""
    if ior_text.startswith("corbaloc:"):
        return int(ior_text.rsplit("/", 1)[0].rsplit(":", 1)[1])
    from pycdr.codec.ior import ior_from_string
    from pycdr.orb.client import first_iiop_profile
    return first_iiop_profile(ior_from_string(ior_text)).port


def format_table(results: dict) -> str:
    relayed = [row for row in results["rows"] if "relay" in row]
    rewriting = [row for row in results["rows"] if "rewritten" in row]
    lines = ["payload    clients  direct/s  relay/s  proxy/s  proxy/relay  "
             "added p50 us  added p99 us  relay cpu us  proxy cpu us"] if relayed else []
    for row in relayed:
        d, r, p = row["direct"], row["relay"], row["proxy"]
        lines.append(f"{row['payload']:<10} {row['clients']:>7} {d['calls_per_s']:>9.0f} "
                     f"{r['calls_per_s']:>8.0f} {p['calls_per_s']:>8.0f} "
                     f"{p['calls_per_s'] / r['calls_per_s']:>12.2f} "
                     f"{p['p50_us'] - d['p50_us']:>13.0f} {p['p99_us'] - d['p99_us']:>13.0f} "
                     f"{_cpu(r):>13} {_cpu(p):>13}")
    if rewriting:
        lines += [""] if lines else []
        lines += ["references  clients  unchanged/s  rewritten/s  rewriting cost  "
                  "unchanged cpu us  rewritten cpu us"]
        for row in rewriting:
            u, w = row["unchanged"], row["rewritten"]
            lines.append(f"{'refs':<10} {row['clients']:>8} {u['calls_per_s']:>12.0f} "
                         f"{w['calls_per_s']:>12.0f} {rewriting_cost(row):>14.1%} "
                         f"{_cpu(u):>17} {_cpu(w):>17}")
    lines += ["", "targets (a --quick run: too few calls to judge them):" if
              results["calls"] < 100 else "targets:"]
    for row in relayed:
        ratio = row["proxy"]["calls_per_s"] / row["relay"]["calls_per_s"]
        lines.append(f"  proxy/relay {row['payload']}, {row['clients']} clients: "
                     f"{ratio:.2f} (>= {RELAY_TARGET}: "
                     f"{'met' if ratio >= RELAY_TARGET else 'NOT met'})")
    for row in rewriting:
        cost = rewriting_cost(row)
        lines.append(f"  rewriting cost, {row['clients']} clients: {cost:.1%} "
                     f"(<= {REWRITE_TARGET:.0%}: "
                     f"{'met' if cost <= REWRITE_TARGET else 'NOT met'})")
    return "\n".join(lines)


def _cpu(measured: dict) -> str:
    """The CPU time a call cost the relay or the proxy (its process's, per call)."""
    cpu = measured.get("cpu_us_per_call")
    return "-" if cpu is None else f"{cpu:.0f}"


def rewriting_cost(row: dict) -> float:
    """The share of calls/s that rewriting the replies' references costs."""
    return 1 - row["rewritten"]["calls_per_s"] / row["unchanged"]["calls_per_s"]


def _cpu_figure(measured: dict):
    cpu = measured.get("cpu_us_per_call")
    return None if cpu is None else round(cpu)


def results_tables(results: dict) -> list:
    """format_table's figures as a results file's tables."""
    import results as results_format
    x = results_format.RATIO
    relayed, rewriting = [], []
    for row in results["rows"]:
        if "relay" in row:
            d, r, p = row["direct"], row["relay"], row["proxy"]
            relayed.append([row["payload"], row["clients"], round(d["calls_per_s"]),
                            round(r["calls_per_s"]), round(p["calls_per_s"]),
                            results_format.ratio(p["calls_per_s"], r["calls_per_s"]),
                            results_format.ratio(p["calls_per_s"], d["calls_per_s"]),
                            round(p["p50_us"] - d["p50_us"]), round(p["p99_us"] - d["p99_us"]),
                            _cpu_figure(r), _cpu_figure(p)])
        if "rewritten" in row:
            u, w = row["unchanged"], row["rewritten"]
            rewriting.append([row["clients"], round(u["calls_per_s"]),
                              round(w["calls_per_s"]), round(100 * rewriting_cost(row), 1),
                              _cpu_figure(u), _cpu_figure(w)])
    tables = [results_format.table(
        "an omniORBpy client and server: direct, through the byte relay (the floor) and "
        f"through pycdr proxy (target: proxy/relay >= {RELAY_TARGET})",
        ["payload", "clients", "direct calls/s", "relay calls/s", "proxy calls/s",
         f"proxy/relay {x}", f"proxy/direct {x}", "added p50 us", "added p99 us",
         "relay cpu us/call", "proxy cpu us/call"], relayed)] if relayed else []
    if rewriting:
        tables.append(results_format.table(
            "replies carrying an object reference: the proxy rewriting it against the same "
            f"proxy passing one it need not rewrite (target: cost <= {REWRITE_TARGET:.0%})",
            ["clients", "unchanged calls/s", "rewritten calls/s", "rewriting cost %",
             "unchanged cpu us/call", "rewritten cpu us/call"], rewriting))
    return tables


def main(argv=None) -> None:
    import results as results_format
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--clients", default="1,16")
    parser.add_argument("--rounds", type=int, default=3,
                        help="each measurement in this many parts, the contenders in turn")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 20 calls, 1 and 2 clients")
    # (the module doc is benchmarks/README.md's text: the option is told by --help)
    parser.add_argument("--only", choices=("relay", "refs"),
                        help="only the first table (relay: direct, relay and proxy) or the "
                             "second (refs: rewriting), only its servers and proxy started; "
                             "its results only to a --results FILE named")
    parser.add_argument("--json", dest="json_out")
    parser.add_argument("--relay", help=argparse.SUPPRESS)
    parser.add_argument("--client", help=argparse.SUPPRESS)
    results_format.add_argument(parser)
    args = parser.parse_args(argv)
    if args.relay:
        host, port = args.relay.rsplit(":", 1)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        from pycdr.orb.aio import run as run_loop
        run_loop(_relay(0, host, int(port)))     # (the proxy's event loop: uvloop's if any)
        return
    if args.client:
        _client(json.loads(args.client))
        return
    if args.only and args.results == results_format.DEFAULT:
        parser.error("--only measures part of the run: name the --results FILE")
    rounds = args.rounds
    if args.quick:
        args.calls, args.clients, rounds = 20, "1,2", 1
    results = run(args.calls, tuple(int(c) for c in args.clients.split(",")),
                  payloads=() if args.only == "refs" else tuple(PAYLOADS),
                  refs=args.only != "relay", rounds=rounds)
    print(format_table(results))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=2)
    results_format.write(args.results, "proxy", results_format.record(
        "proxy", script=__file__, argv=sys.argv[1:] if argv is None else argv,
        quick=args.quick or args.calls < 2000,
        path={"codec": results_format.codec_path(), "loop": results_format.loop_name()},
        settings={"calls": args.calls, "clients": args.clients, "rounds": rounds,
                  **({"only": args.only} if args.only else {})},
        tables=results_tables(results)))


if __name__ == "__main__":
    main()
