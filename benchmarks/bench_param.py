"""Param_Test twoway calls per second (seed paper 001; DII vs static, seeds 002 and 003;
issue 7 "Benchmarks" 3): the reference ORB and omniORBpy as clients and as servers, all
measured in one run.

    python benchmarks/bench_param.py                 # full run
    python benchmarks/bench_param.py --quick         # smoke run in seconds

param/param.idl: ``T test_<T>(in T s1, inout T s2, out T s3)`` for short, string, fixed
struct, variable struct, nested struct, sequence of strings and sequence of structs; both
servers answer (s1, s1, s1). Clients (each in its own process, pinned to another CPU than
the server where the machine has two):
- pycdr:      the reference ORB with the IDL front end's operation descriptions (static);
- pycdr-DII:  the reference ORB's DII, a request described at run time on every call;
- omniORBpy:  omniORBpy's compiled stubs (the peer measure);
- pycdr-sync: the reference ORB's static calls over a blocking socket from the calling
  thread (SyncORB, pycdr.orb.blocking), no event loop;
- omniORBpy-DII: omniORBpy's dynamic invocation. omniORBpy has no CORBA::Request, so this
  is ``obj._dynamic_op(name, in TypeCodes, out TypeCodes)`` made on every call
  (param/omni_client.py); it carries in, inout and out values, so every operation runs;
- socket: the floor, a plain socket loop sending one Request's bytes again and again and
  reading each Reply whole with a struct-based reader, decoding nothing
  (param/socket_client.py).
Servers: the reference ORB (DynamicServant) on its event loop, the same with a thread per
connection (pycdr-threads: pycdr.orb.threads.ThreadedServer) and omniORBpy. Each cell is the best of
``--repeat`` timings of ``--seconds`` each, calls per second of back-to-back twoway calls.
Every client checks its first answer (result, inout, out) before it is timed.

Besides calls/s, each server's CPU per call (the client reads the server process's user +
system time from /proc/<pid>/stat around its timings) and each client's own: on a
machine shared with other jobs two calls/s cells taken seconds apart can differ by 2x,
while CPU per call moves far less, so it is the figure to compare by.  The ratios table
gives the reference ORB against omniORBpy end to end, per client and per server, DII
against static for each ORB, and omniORBpy's and the blocking client's calls/s against
the floor.

Peer: omniORBpy (stubs and DII).  Floor: the socket client.  Target: the reference ORB
>= 1.0x omniORBpy for every operation end to end, as a client against omniORBpy's server
and as a server under omniORBpy's client.  The reference ORB's asyncio peers run on
uvloop when installed (``PYCDR_LOOP=asyncio`` for asyncio's loop; it reaches the peer
processes); the blocking client and the threaded server poll their socket before they
sleep (poll_wait, 300 us; ``--poll-wait 0`` sleeps on every read, as other ORBs do), which
needs a core free for each side.  ``--tls``: bench_param_tls.py.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
PARAM_DIR = os.path.join(BENCH_DIR, "param")
for _folder in (BENCH_DIR, PARAM_DIR):
    if _folder not in sys.path:
        sys.path.insert(0, _folder)

import benchprocs  # noqa: E402
import bench_param_tls  # noqa: E402
import param_common  # noqa: E402
from bench_param_tls import BenchmarkError  # noqa: E402  (one class for both runs)

OPERATIONS = param_common.OPERATIONS
SERVERS = ("pycdr", "pycdr-threads", "omniORBpy")
CLIENTS = ("pycdr", "pycdr-sync", "pycdr-DII", "omniORBpy", "omniORBpy-DII", "socket")
QUICK = {"seconds": 0.05, "repeat": 1}
# The run benchmarks/README.md's tables come from: 126 cells, best of 3 x 0.4 s each,
# about 3 minutes on 2 cores.
FULL_RUN = "python benchmarks/bench_param.py --seconds 0.4 --results"


def _script(name: str) -> str:
    return os.path.join(PARAM_DIR, name)


def _server_argv(server: str) -> list:
    script = "omni_server.py" if server == "omniORBpy" else "pycdr_server.py"
    return [sys.executable, _script(script)] + (["--threads"] if server == "pycdr-threads"
                                                else [])


def _client_argv(client: str) -> list:
    if client == "socket":
        return [sys.executable, _script("socket_client.py")]
    script = "omni_client.py" if client.startswith("omniORBpy") else "pycdr_client.py"
    style = "dii" if client.endswith("-DII") else "static"
    return [sys.executable, _script(script), "--style", style] + \
        (["--blocking"] if client == "pycdr-sync" else [])


def run(*, operations=OPERATIONS, servers=SERVERS, clients=CLIENTS, seconds: float = 1.0,
        repeat: int = 3, quick: bool = False, pure: bool | None = None, pin: bool = True,
        progress=None, poll_wait: float | None = None) -> dict:
    """Measure every (server, client, operation) and return::

        {"meta": {"pycdr", "python", "machine", "seconds", "repeat", "pinned", "cpus"},
         "results": [{"server", "client", "operation", "calls_per_s": [...], "best",
                      "min", "max"}, ...]}

    ``quick``: 0.05 s timings, one repetition. omniORBpy is left out when not installed.
    Raises BenchmarkError when a client's answers differ from what it sent.
    """
    if quick:
        seconds = QUICK["seconds"] if seconds == 1.0 else seconds
        repeat = QUICK["repeat"] if repeat == 3 else repeat
    unknown = [o for o in operations if o not in OPERATIONS]
    if unknown:
        raise ValueError(f"unknown operations {unknown}; known: {', '.join(OPERATIONS)}")
    has_omni = benchprocs.omni_available()
    if not has_omni:
        servers = [s for s in servers if s != "omniORBpy"]
        clients = [c for c in clients if not c.startswith("omniORBpy")]
    client_cpu, server_cpu = cpus = benchprocs.cpu_plan() if pin else (None, None)
    env = benchprocs.python_env(pure, poll_wait)
    rows, implementation, pinned = [], None, False
    for server_name in servers:
        server = benchprocs.start_server(f"param-{server_name}-server",
                                         _server_argv(server_name), server_cpu, env=env)
        try:
            for client in clients:
                if progress:
                    progress(f"{client} -> {server_name}")
                argv = [*_client_argv(client), "--ior", server.ior, "--operations",
                        ",".join(operations), "--seconds", str(seconds),
                        "--repeat", str(repeat), "--server-pid", str(server.pid)]
                argv = benchprocs.env_command(env, argv)
                output = benchprocs.run_client(
                    f"param-{client}", argv, client_cpu,
                    timeout=120 + 2 * seconds * repeat * len(operations))
                pinned = pinned or output["pinned"]
                if client.startswith("pycdr"):
                    implementation = output["implementation"]
                for result in output["results"]:
                    if not result["correct"]:
                        raise BenchmarkError(f"{client} -> {server_name} "
                                             f"{result['operation']}: wrong answer")
                    rates = result["calls_per_s"]
                    rows.append({"server": server_name, "client": client,
                                 "operation": result["operation"], "calls_per_s": rates,
                                 "best": max(rates), "min": min(rates), "max": max(rates),
                                 "server_cpu_us": result.get("server_cpu_us"),
                                 "client_cpu_us": result.get("client_cpu_us")})
        finally:
            server.stop()
    meta = {"pycdr": implementation, "python": platform.python_version(),
            "machine": f"{platform.machine()} {os.cpu_count()} CPUs", "seconds": seconds,
            "repeat": repeat, "pinned": pinned, "cpus": list(cpus), "omniORBpy": has_omni,
            "poll_wait": benchprocs.poll_wait_in_effect(poll_wait)}
    return {"meta": meta, "results": rows}


# --------------------------------------------------------------------------
# Tables and plots
# --------------------------------------------------------------------------
def _ratio(a, b) -> str:
    return f"{a / b:.2f}x" if a and b else "-"


def client_label(meta: dict, client: str) -> str:
    if client.startswith("pycdr"):
        return client.replace("pycdr", "pycdr-C" if meta.get("pycdr") == "c" else "pycdr-Py")
    return client


SHORT_NAMES = {"pycdr": "py", "pycdr-DII": "pyDII", "omniORBpy": "omni",
               "omniORBpy-DII": "omDII", "pycdr-sync": "pySy", "pycdr-threads": "pyTh",
               "socket": "sock"}
# (column, numerator (client, server), denominator (client, server), meaning)
RATIOS = (("py/omni", ("pycdr", "pycdr"), ("omniORBpy", "omniORBpy"),
           "reference ORB end to end / omniORBpy end to end (static both)"),
          ("cli@omni", ("pycdr", "omniORBpy"), ("omniORBpy", "omniORBpy"),
           "reference ORB client / omniORBpy client, omniORBpy server"),
          ("srv@omni", ("omniORBpy", "pycdr"), ("omniORBpy", "omniORBpy"),
           "reference ORB server / omniORBpy server, omniORBpy client"),
          ("pyDII/st", ("pycdr-DII", "pycdr"), ("pycdr", "pycdr"),
           "DII / static invocation, reference ORB both ends"),
          ("omDII/st", ("omniORBpy-DII", "omniORBpy"), ("omniORBpy", "omniORBpy"),
           "DII (_dynamic_op) / static stubs, omniORBpy both ends"),
          ("DII py/om", ("pycdr-DII", "pycdr"), ("omniORBpy-DII", "omniORBpy"),
           "reference ORB DII end to end / omniORBpy DII end to end"),
          ("bl/omni", ("pycdr-sync", "pycdr-threads"), ("omniORBpy", "omniORBpy"),
           "blocking client -> threaded server / omniORBpy end to end"),
          ("cliSy@om", ("pycdr-sync", "omniORBpy"), ("omniORBpy", "omniORBpy"),
           "blocking client / omniORBpy client, omniORBpy server"),
          ("srvTh@om", ("omniORBpy", "pycdr-threads"), ("omniORBpy", "omniORBpy"),
           "threaded server / omniORBpy server, omniORBpy client"),
          ("omni/flr", ("omniORBpy", "omniORBpy"), ("socket", "omniORBpy"),
           "omniORBpy client / the floor (a plain socket loop), omniORBpy server"),
          ("pySy/flr", ("pycdr-sync", "omniORBpy"), ("socket", "omniORBpy"),
           "blocking client / the floor (a plain socket loop), omniORBpy server"))
OMNI_DII_NOTE = ("omDII: omniORBpy has no CORBA::Request (no Object._request/_create_request, "
                 "no ORB.create_list);\n  its dynamic invocation, "
                 "obj._dynamic_op(name, in TypeCodes, out TypeCodes), is made on every call.")


def format_tables(results: dict) -> str:
    """Two tables: calls/s per operation for each client -> server pair; then the ratios:
    the reference ORB end to end against omniORBpy end to end, each ORB's client and
    server against omniORBpy's, and DII against static invocation for each ORB.  (A --tls
    run: bench_param_tls's table.)"""
    meta = results["meta"]
    if meta.get("kind") == "tls":
        return bench_param_tls.format_tables(results)
    best = {(r["client"], r["server"], r["operation"]): r["best"] for r in results["results"]}
    pairs = list(dict.fromkeys((r["client"], r["server"]) for r in results["results"]))
    ratios = [r for r in RATIOS if r[1] in pairs and r[2] in pairs]
    operations = list(dict.fromkeys(r["operation"] for r in results["results"]))
    pinned = (f"client on CPU {meta['cpus'][0]}, server on CPU {meta['cpus'][1]}"
              if meta["pinned"] else "not pinned")
    lines = [f"Param_Test twoway calls/s (best of {meta['repeat']} x {meta['seconds']:g} s); "
             f"client->server, py = {client_label(meta, 'pycdr')}, Python {meta['python']}, "
             f"{meta['machine']}, {pinned}, reference ORB's poll_wait "
             f"{meta.get('poll_wait', '?')}", ""]
    header = (f"{'operation':<22}"
              + "".join(f"{SHORT_NAMES[c] + '->' + SHORT_NAMES[s]:>13}" for c, s in pairs))
    lines += [header, "-" * len(header)]
    for operation in operations:
        cells = [best.get((c, s, operation)) for c, s in pairs]
        lines.append(f"{operation:<22}"
                     + "".join(f"{v:13.0f}" if v else f"{'-':>13}" for v in cells))
    for side in ("server", "client"):
        cpu = {(r["client"], r["server"], r["operation"]): r.get(f"{side}_cpu_us")
               for r in results["results"]}
        if any(v is not None for v in cpu.values()):
            lines += ["", f"{side} CPU us per call (its process, all threads, over the "
                      "timings)", header, "-" * len(header)]
            for operation in operations:
                cells = [cpu.get((c, s, operation)) for c, s in pairs]
                lines.append(f"{operation:<22}" + "".join(
                    f"{v:13.1f}" if v is not None else f"{'-':>13}" for v in cells))
    if ratios:
        header = f"{'ratios':<22}" + "".join(f"{r[0]:>11}" for r in ratios)
        lines += ["", header, "-" * len(header)]
        for operation in operations:
            lines.append(f"{operation:<22}" + "".join(
                f"{_ratio(best.get((*a, operation)), best.get((*b, operation))):>11}"
                for _, a, b, _ in ratios))
        lines += [""] + [f"{name}: {meaning}" for name, _, _, meaning in ratios]
    if any(c == "omniORBpy-DII" for c, _ in pairs):
        lines.append(OMNI_DII_NOTE)
    return "\n".join(lines)


def results_tables(results: dict) -> list:
    """format_tables' figures as a results file's tables: calls/s, the server's and the
    client's CPU per call, and the ratios.  (A --tls run: bench_param_tls's.)"""
    import results as results_format
    meta = results["meta"]
    if meta.get("kind") == "tls":
        return bench_param_tls.results_tables(results)
    pairs = list(dict.fromkeys((r["client"], r["server"]) for r in results["results"]))
    operations = list(dict.fromkeys(r["operation"] for r in results["results"]))
    columns = ["operation"] + [f"{client_label(meta, c)} -> {s}" for c, s in pairs]
    tables = []
    for figure, title, digits in (("best", "twoway calls/s, client -> server", 0),
                                  ("server_cpu_us", "server CPU us per call", 1),
                                  ("client_cpu_us", "client CPU us per call", 1)):
        cell = {(r["client"], r["server"], r["operation"]): r.get(figure)
                for r in results["results"]}
        tables.append(results_format.table(title, columns, [
            [operation] + [round(cell[(c, s, operation)], digits)
                           if cell.get((c, s, operation)) is not None else None
                           for c, s in pairs] for operation in operations]))
    best = {(r["client"], r["server"], r["operation"]): r["best"] for r in results["results"]}
    ratios = [r for r in RATIOS if r[1] in pairs and r[2] in pairs]
    if ratios:
        tables.append(results_format.table(
            "ratios of calls/s (the columns: below)",
            ["operation"] + [f"{name} {results_format.RATIO}" for name, _, _, _ in ratios],
            [[operation] + [results_format.ratio(best.get((*a, operation)),
                                                 best.get((*b, operation)))
                            for _, a, b, _ in ratios] for operation in operations]))
    return tables


def results_notes(results: dict) -> list:
    """What the ratio columns of results_tables divide."""
    if results["meta"].get("kind") == "tls":
        return []
    pairs = {(r["client"], r["server"]) for r in results["results"]}
    notes = [f"{name}: {meaning}" for name, a, b, meaning in RATIOS
             if a in pairs and b in pairs]
    if any(c == "omniORBpy-DII" for c, _ in pairs):
        notes.append(" ".join(OMNI_DII_NOTE.split()))
    return notes


def plot(results: dict, directory: str) -> list[str]:
    """One PNG: calls/s per operation, a bar per client -> server pair."""
    from benchplot import bar_panels
    meta = results["meta"]
    if meta.get("kind") == "tls":
        return bench_param_tls.plot(results, directory)
    series: dict = {}
    for row in results["results"]:
        name = f"{client_label(meta, row['client'])} -> {row['server']}"
        series.setdefault(name, {})[row["operation"].replace("test_", "")] = row["best"]
    if not series:
        return []
    return [bar_panels(os.path.join(directory, "param_test.png"),
                       "Param_Test twoway calls/s", {"calls per second": series},
                       ylabel="calls/s")]


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------
def comma_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--operations", type=comma_list, default=list(OPERATIONS),
                        help=f"subset of {','.join(OPERATIONS)}")
    parser.add_argument("--seconds", type=float, default=None,
                        help="seconds per timing (default 1; quick 0.05)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="timings per cell, best kept (default 3; quick 1)")
    parser.add_argument("--clients", type=comma_list, default=list(CLIENTS),
                        help=f"subset of {','.join(CLIENTS)}")
    parser.add_argument("--servers", type=comma_list, default=list(SERVERS),
                        help=f"subset of {','.join(SERVERS)}")
    parser.add_argument("--impl", choices=("auto", "python", "c"), default="auto",
                        help="pycdr path in the peer processes (python: PYCDR_PURE=1)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin processes to CPUs")
    parser.add_argument("--poll-wait", type=float, default=None, metavar="SECONDS",
                        help="the reference ORB's poll_wait in its processes (default: "
                             "PYCDR_POLL_WAIT, else 300 us; 0: sleep on every read)")
    parser.add_argument("--quick", action="store_true", help="a smoke run in seconds")
    parser.add_argument("--tls", action="store_true",
                        help="calls/s over TLS against plain TCP: the reference ORB and "
                             "omniORB C++ (its SSL transport), each against itself")


def run_from_arguments(args, progress=None) -> dict:
    common = dict(operations=args.operations,
                  seconds=args.seconds if args.seconds is not None else 1.0,
                  repeat=args.repeat if args.repeat is not None else 3, quick=args.quick,
                  pure={"auto": None, "python": True, "c": False}[args.impl],
                  pin=not args.no_pin, progress=progress, poll_wait=args.poll_wait)
    if args.tls:
        return bench_param_tls.run(**common)
    unknown = [x for x in args.clients if x not in CLIENTS] + \
        [x for x in args.servers if x not in SERVERS]
    if unknown:
        raise ValueError(f"unknown clients or servers {unknown}")
    return run(clients=args.clients, servers=args.servers, **common)


def main(argv=None) -> int:
    return benchprocs.bench_main(sys.modules[__name__], "bench_param", argv)

if __name__ == "__main__":
    sys.exit(main())
