"""Calls per second through `pycdr proxy` beside a plain byte relay, in one run.

An omniORBpy client (1 and 16 threads, one connection each) calls an omniORBpy echo
server (tests/peers/echo.idl) three ways:

1. direct: client to server;
2. relay: through a byte relay (in this file: it copies bytes both ways and decodes
   nothing; the floor of any proxy);
3. proxy: through `pycdr proxy` (no rules, call lines off).

Two payloads: ``echo_long`` (a small call) and ``echo_octets`` of 64 KB.  Reported:
calls/s of each, the ratio proxy / relay (the target: >= 0.8), and the latency a call
adds through the proxy against direct calls (p50 and p99 of the one-client runs).

    python benchmarks/bench_proxy.py [--calls N] [--clients 1,16] [--json FILE]

The relay and the client run as processes of this file (``--relay``, ``--client``).
"""

from __future__ import annotations

import argparse
import asyncio
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
# The run benchmarks/README.md's table comes from (2,000 calls, 1 and 16 clients):
# about 1 minute on 2 cores.
FULL_RUN = "python benchmarks/bench_proxy.py --results"
PAYLOADS = {"long": ("echo_long", 42), "octets64k": ("echo_octets", 65536)}


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
    "calls"}) in this one process (omniORBpy starts once); a JSON row each on stdout."""
    import threading

    from omniORB import CORBA

    import omni_idl
    from peers.omni import ECHO_IDL
    orb = CORBA.ORB_init([sys.argv[0], "-ORBoneCallPerConnection", "1"], CORBA.ORB_ID)
    omni_idl.import_idl(ECHO_IDL)
    cls, _ = omni_idl.interface_classes("PycdrTest::Echo")

    def measure(ior, threads, calls, payload) -> dict:
        operation, size = PAYLOADS[payload]
        argument = b"x" * size if operation == "echo_octets" else size
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
        began = time.perf_counter()
        start.set()
        for w in workers:
            w.join()
        seconds = time.perf_counter() - began
        latencies.sort()
        return {"calls": len(latencies), "seconds": seconds,
                "calls_per_s": len(latencies) / seconds,
                "p50_us": latencies[len(latencies) // 2] * 1e6,
                "p99_us": latencies[min(len(latencies) - 1,
                                        int(len(latencies) * 0.99))] * 1e6}
    for payload in plan["payloads"]:
        n = plan["calls"] if payload == "long" else max(1, plan["calls"] // 10)
        for threads in plan["clients"]:
            row = {"payload": payload, "clients": threads}
            for name, ior in plan["targets"].items():
                row[name] = measure(ior, threads, max(1, n // threads), payload)
            print(json.dumps(row), flush=True)
    orb.destroy()


# -- the run ----------------------------------------------------------------------------
def _corbaloc(port: int) -> str:
    return f"corbaloc:iiop:1.2@127.0.0.1:{port}/Echo"


def _start(argv) -> tuple:
    """A process that prints its port (the relay) or an IOR first (the proxy)."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True)
    return process, process.stdout.readline().strip()


def run(calls: int = 2000, clients=(1, 16), payloads=tuple(PAYLOADS)) -> dict:
    from peers.omni import start_omni_echo_server
    results: dict = {"calls": calls, "rows": []}
    with start_omni_echo_server(object_id="Echo") as server:
        relay, relay_port = _start([sys.executable, os.path.abspath(__file__), "--relay",
                                    f"{server.host}:{server.port}"])
        proxy, proxy_ior = _start([PYCDR, "proxy", "--listen", "127.0.0.1:0", "--target",
                                   server.ior, "-q"])
        try:
            proxy_port = proxy_ior and _port_of(proxy_ior)
            targets = {"direct": server.ior, "relay": _corbaloc(int(relay_port)),
                       "proxy": _corbaloc(proxy_port)}
            plan = {"targets": targets, "payloads": list(payloads), "clients": list(clients),
                    "calls": calls}
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--client",
                                  json.dumps(plan)], capture_output=True, text=True,
                                 timeout=3600)
            if out.returncode != 0:
                raise RuntimeError(f"the client failed: {out.stderr[-2000:]}")
            results["rows"] = [json.loads(line) for line in out.stdout.splitlines()]
        finally:
            for p in (relay, proxy):
                p.send_signal(signal.SIGTERM)
                p.wait(20)
    return results


def _port_of(ior_text: str) -> int:
    from pycdr.codec.ior import ior_from_string
    from pycdr.orb.client import first_iiop_profile
    return first_iiop_profile(ior_from_string(ior_text)).port


def format_table(results: dict) -> str:
    lines = ["payload    clients  direct/s  relay/s  proxy/s  proxy/relay  "
             "added p50 us  added p99 us"]
    for row in results["rows"]:
        d, r, p = row["direct"], row["relay"], row["proxy"]
        lines.append(f"{row['payload']:<10} {row['clients']:>7} {d['calls_per_s']:>9.0f} "
                     f"{r['calls_per_s']:>8.0f} {p['calls_per_s']:>8.0f} "
                     f"{p['calls_per_s'] / r['calls_per_s']:>12.2f} "
                     f"{p['p50_us'] - d['p50_us']:>13.0f} {p['p99_us'] - d['p99_us']:>13.0f}")
    return "\n".join(lines)


def results_tables(results: dict) -> list:
    """format_table's figures as a results file's table."""
    import results as results_format
    rows = []
    for row in results["rows"]:
        d, r, p = row["direct"], row["relay"], row["proxy"]
        rows.append([row["payload"], row["clients"], round(d["calls_per_s"]),
                     round(r["calls_per_s"]), round(p["calls_per_s"]),
                     results_format.ratio(p["calls_per_s"], r["calls_per_s"]),
                     results_format.ratio(p["calls_per_s"], d["calls_per_s"]),
                     round(p["p50_us"] - d["p50_us"]), round(p["p99_us"] - d["p99_us"])])
    x = results_format.RATIO
    return [results_format.table(
        "an omniORBpy client and server: direct, through the byte relay (the floor) and "
        "through pycdr proxy (target: proxy/relay >= 0.8)",
        ["payload", "clients", "direct calls/s", "relay calls/s", "proxy calls/s",
         f"proxy/relay {x}", f"proxy/direct {x}", "added p50 us", "added p99 us"], rows)]


def main(argv=None) -> None:
    import results as results_format
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--clients", default="1,16")
    parser.add_argument("--json", dest="json_out")
    parser.add_argument("--relay", help=argparse.SUPPRESS)
    parser.add_argument("--client", help=argparse.SUPPRESS)
    results_format.add_argument(parser)
    args = parser.parse_args(argv)
    if args.relay:
        host, port = args.relay.rsplit(":", 1)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        asyncio.run(_relay(0, host, int(port)))
        return
    if args.client:
        _client(json.loads(args.client))
        return
    results = run(args.calls, tuple(int(c) for c in args.clients.split(",")))
    print(format_table(results))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=2)
    results_format.write(args.results, "proxy", results_format.record(
        "proxy", script=__file__, argv=sys.argv[1:] if argv is None else argv,
        quick=args.calls < 2000, path={"codec": results_format.codec_path(),
                                       "loop": results_format.loop_name()},
        settings={"calls": args.calls, "clients": args.clients},
        tables=results_tables(results)))


if __name__ == "__main__":
    main()
