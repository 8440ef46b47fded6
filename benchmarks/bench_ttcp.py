"""TTCP throughput (seed papers 000, 002, 004; issue 7 "TTCP"): Mbit/s of sequences sent
through the reference ORB, through omniORBpy and through a raw Python socket stream, all
measured in one run.

    python benchmarks/bench_ttcp.py                      # full run: 64 MB per point
    python benchmarks/bench_ttcp.py --quick              # smoke run in seconds
    python benchmarks/bench_ttcp.py --types double,BinStruct --sizes 64,128 --mb 16 --arrays

What runs (ttcp/ttcp.idl; every client and server in a process of its own, the client
pinned to one CPU and the server to another where the machine has two):
- pycdr:      ttcp/pycdr_client.py -> ttcp/pycdr_server.py, the reference ORB on both ends
              (label pycdr-C or pycdr-Py by the marshal path the client runs);
- arrays:     the same with the opt-in array mapping (numeric sequences sent and received as
              array.array; only short, long, double), with --arrays;
- blocking:   ttcp/pycdr_client.py --blocking -> ttcp/pycdr_server.py --threads, the
              reference ORB over blocking sockets (SyncORB's calls, ThreadedServer);
- omniORBpy:  ttcp/omni_client.py -> ttcp/omni_server.py, omniORBpy on both ends;
- socket:     ttcp/raw_socket.py: the same payload bytes over a plain TCP stream, no
              marshaling: the ceiling.
A point is (type, buffer size, mode): ``oneway void send<T>Seq(in <T>Seq)`` (or its twoway
variant ``send<T>Seq2way``) called with the same buffer until ``--mb`` MiB of payload have
gone, then ``received()`` (twoway) until the server has counted every element: the time
covers the receipt. Mbit/s = payload bits / seconds / 1e6 (payload: CDR octets of the
elements, BinStruct 32); each point is repeated ``--repeat`` times, in passes that run
every transport once (so a drift of machine speed is shared between them); tables show
the best with the min-max range, and ratios of the best values.

Peer: omniORBpy at both ends.  Floor (here a ceiling): the socket stream.  Under each
row, each ORB's CPU microseconds per message, client/server (the client's own process
time, the server's from /proc/<pid>/stat, over the timed repetitions, the lowest): the
steadier figure on a shared machine; a clock tick is 10 ms, so 64 MiB per point gives
about 10 us of resolution at 64 KB (16 MiB: 40 us).  Targets (64 KB buffers, against
omniORBpy): oneway octet >= 0.9x, oneway double >= 1.0x, every twoway type >= 1.0x.  The
reference ORB's processes poll their socket before they sleep (poll_wait, 300 us;
``--poll-wait 0`` sleeps on every read as other ORBs do); that pays only with a core
free for each side, and without one the figures are the sleeping ones.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
TTCP_DIR = os.path.join(BENCH_DIR, "ttcp")
for _folder in (BENCH_DIR, TTCP_DIR):
    if _folder not in sys.path:
        sys.path.insert(0, _folder)

import benchprocs  # noqa: E402
import ttcp_common  # noqa: E402

TYPES = ttcp_common.TYPES
MODES = ttcp_common.MODES
SIZES_KB = (1, 2, 4, 8, 16, 32, 64, 128)
TRANSPORTS = ("pycdr", "blocking", "arrays", "omniORBpy", "socket")
# The run benchmarks/README.md's table comes from (3 types, 4 sizes, both modes, 16 MiB
# a point, best of 3): about 3 minutes on 2 cores.
FULL_RUN = ("python benchmarks/bench_ttcp.py --types double,octet,BinStruct --sizes 1,8,64,128 "
            "--mb 16 --arrays --results")
QUICK = {"sizes_kb": (1, 64), "megabytes": 0.25, "repeat": 1}


class BenchmarkError(Exception):
    """A transport lost or duplicated data: its numbers would be meaningless."""


def _script(name: str) -> str:
    return os.path.join(TTCP_DIR, name)


def _commands(transport: str) -> tuple[list, list]:
    """(server argv, client argv) of a transport, without --port/--cpu/--ior/--points."""
    py = sys.executable
    if transport == "pycdr":
        return [py, _script("pycdr_server.py")], [py, _script("pycdr_client.py")]
    if transport == "arrays":
        return ([py, _script("pycdr_server.py"), "--numeric-arrays"],
                [py, _script("pycdr_client.py"), "--arrays"])
    if transport == "blocking":
        return ([py, _script("pycdr_server.py"), "--threads"],
                [py, _script("pycdr_client.py"), "--blocking"])
    if transport == "omniORBpy":
        return [py, _script("omni_server.py")], [py, _script("omni_client.py")]
    if transport == "socket":
        return [py, _script("raw_socket.py"), "serve"], [py, _script("raw_socket.py"), "send"]
    raise ValueError(f"unknown transport {transport!r}; known: {', '.join(TRANSPORTS)}")


def plan_points(transport: str, types, sizes_kb, modes, megabytes: float) -> list[dict]:
    points = []
    for type_name in types:
        if transport == "arrays" and type_name not in ttcp_common.ARRAY_CODE:
            continue      # the array mapping is for numeric sequences only
        for mode in modes:
            for size_kb in sizes_kb:
                size = size_kb * 1024
                points.append({"type": type_name, "size_bytes": size, "mode": mode,
                               "calls": ttcp_common.calls_for(type_name, size, megabytes)})
    return points


def run_transport(transport: str, points: list, repeat: int, *, pure: bool | None = None,
                  cpus=(None, None), timeout: float = 7200,
                  poll_wait: float | None = None) -> dict:
    """Start the transport's server, run its client over ``points``; the client's JSON."""
    client_cpu, server_cpu = cpus
    server_argv, client_argv = _commands(transport)
    env = benchprocs.python_env(pure, poll_wait)
    server = benchprocs.start_server(f"ttcp-{transport}-server", server_argv, server_cpu,
                                     env=env)
    try:
        argv = [*client_argv, "--ior", server.ior, "--points",
                ttcp_common.format_points(points), "--repeat", str(repeat)]
        if transport == "socket":
            argv += ["--port", str(server.port)]
        else:
            argv += ["--server-pid", str(server.pid)]
        argv = benchprocs.env_command(env, argv)
        return benchprocs.run_client(f"ttcp-{transport}", argv, client_cpu, timeout=timeout)
    finally:
        server.stop()


def run(*, types=TYPES, sizes_kb=SIZES_KB, modes=MODES, megabytes: float = 64.0,
        repeat: int = 3, transports=("pycdr", "blocking", "omniORBpy", "socket"),
        quick: bool = False,
        pure: bool | None = None, pin: bool = True, progress=None,
        poll_wait: float | None = None) -> dict:
    """Measure every (transport, type, size, mode) and return::

        {"meta": {"pycdr": "c"|"python", "python", "machine", "megabytes", "repeat",
                  "pinned": bool, "cpus": [client, server]},
         "results": [{"transport", "type", "size_kb", "mode", "calls", "payload_bytes",
                      "seconds": [...], "mbit_s": [...], "best", "min", "max",
                      "received", "expected"}, ...]}

    ``quick`` (a smoke run): sizes 1 and 64 KB, 0.25 MiB per point, one repetition unless
    given otherwise. ``pure`` True/False forces pycdr's Python/C path in the peer processes
    (None: as this environment says). omniORBpy is skipped when it is not installed.
    Raises BenchmarkError if a server did not receive exactly what was sent.
    """
    if quick:
        sizes_kb = QUICK["sizes_kb"] if sizes_kb == SIZES_KB else sizes_kb
        megabytes = QUICK["megabytes"] if megabytes == 64.0 else megabytes
        repeat = QUICK["repeat"] if repeat == 3 else repeat
    unknown = [t for t in types if t not in TYPES] + [m for m in modes if m not in MODES]
    if unknown:
        raise ValueError(f"unknown types or modes {unknown}; types: {', '.join(TYPES)}; "
                         f"modes: {', '.join(MODES)}")
    has_omni = benchprocs.omni_available()
    cpus = benchprocs.cpu_plan() if pin else (None, None)
    plans = {}
    for transport in transports:
        if transport == "omniORBpy" and not has_omni:
            continue
        points = plan_points(transport, types, sizes_kb, modes, megabytes)
        if points:
            plans[transport] = points
    # The repetitions are interleaved: pass 1 runs every transport once, then pass
    # 2, and so on; each point keeps its best pass.  A shared machine changes speed
    # by tens of percent over a minute, and a transport's repetitions run back to
    # back would carry that drift into its ratios against the others.
    collected = {}          # (transport, type, size, mode) -> the client's result
    implementation, pinned = None, False
    for round_number in range(1, repeat + 1):
        for transport, points in plans.items():
            if progress:
                progress(f"{transport}: {len(points)} points (pass {round_number} of {repeat})")
            started = time.perf_counter()
            output = run_transport(transport, points, 1, pure=pure, cpus=cpus,
                                   poll_wait=poll_wait)
            if progress:
                progress(f"{transport}: {time.perf_counter() - started:.1f} s")
            pinned = pinned or output.get("pinned", False)
            if transport in ("pycdr", "blocking", "arrays"):
                implementation = output["implementation"]
            for result in output["results"]:
                _check_received(transport, result)
                key = (transport, result["type"], result["size_bytes"], result["mode"])
                if key in collected:
                    collected[key]["seconds"] += result["seconds"]
                    for side in ("client_cpu_us", "server_cpu_us"):
                        collected[key].setdefault(f"{side}_rounds", []).append(
                            result.get(side))
                else:
                    collected[key] = dict(result, seconds=list(result["seconds"]))
    rows = [_row(key[0], result) for key, result in collected.items()]
    meta = {"pycdr": implementation, "python": platform.python_version(),
            "machine": f"{platform.machine()} {os.cpu_count()} CPUs",
            "megabytes": megabytes, "repeat": repeat, "pinned": pinned,
            "poll_wait": benchprocs.poll_wait_in_effect(poll_wait),
            "cpus": list(cpus), "omniORBpy": has_omni}
    return {"meta": meta, "results": rows}


def _check_received(transport: str, result: dict) -> None:
    if result["received"] != result["expected"]:
        raise BenchmarkError(
            f"{transport} {result['type']} {result['size_bytes']} B {result['mode']}: the "
            f"server counted {result['received']} elements, the client sent "
            f"{result['expected']}")


def _row(transport: str, result: dict) -> dict:
    bits = result["payload_bytes"] * result["calls"] * 8
    rates = [bits / seconds / 1e6 for seconds in result["seconds"]]
    return {"transport": transport, "type": result["type"],
            "size_kb": result["size_bytes"] // 1024, "mode": result["mode"],
            "calls": result["calls"], "payload_bytes": result["payload_bytes"],
            "seconds": result["seconds"], "mbit_s": rates, "best": max(rates),
            "min": min(rates), "max": max(rates), "received": result["received"],
            "expected": result["expected"],
            # CPU microseconds per message of each side, the lowest of the passes
            "client_cpu_us": _lowest(result, "client_cpu_us"),
            "server_cpu_us": _lowest(result, "server_cpu_us")}


def _lowest(result: dict, side: str) -> float | None:
    values = [v for v in [result.get(side), *result.get(f"{side}_rounds", [])]
              if v is not None]
    return min(values) if values else None


# --------------------------------------------------------------------------
# Tables and plots
# --------------------------------------------------------------------------
def _ratio(a, b) -> str:
    return f"{a / b:.2f}x" if a and b else "-"


def _cell(row) -> str:
    if row is None:
        return "-"
    if row["min"] == row["max"]:
        return f"{row['best']:.1f}"
    return f"{row['best']:.1f} ({row['min']:.0f}-{row['max']:.0f})"


def transport_label(meta: dict, transport: str) -> str:
    if transport == "pycdr":
        return "pycdr-C" if meta.get("pycdr") == "c" else "pycdr-Py"
    return transport


def format_tables(results: dict) -> str:
    """One table per mode and type: Mbit/s (best, min-max) of each transport by buffer size,
    and the reference ORB's ratios to omniORBpy and to the socket stream."""
    meta = results["meta"]
    rows = results["results"]
    index = {(r["transport"], r["type"], r["size_kb"], r["mode"]): r for r in rows}
    transports = [t for t in TRANSPORTS if any(r["transport"] == t for r in rows)]
    ratio_columns = [("/omniORB", "pycdr", "omniORBpy"), ("/socket", "pycdr", "socket"),
                     ("bl/omni", "blocking", "omniORBpy"),
                     ("arr/omni", "arrays", "omniORBpy"), ("arr/sock", "arrays", "socket")]
    ratio_columns = [c for c in ratio_columns if c[1] in transports and c[2] in transports]
    pinned = (f"client on CPU {meta['cpus'][0]}, server on CPU {meta['cpus'][1]}"
              if meta["pinned"] else "not pinned")
    lines = [f"TTCP Mbit/s: best of {meta['repeat']} (min-max), {meta['megabytes']:g} MiB per "
             f"point; {transport_label(meta, 'pycdr')}, Python {meta['python']}, "
             f"{meta['machine']}, {pinned}, reference ORB's poll_wait "
             f"{meta.get('poll_wait', '?')}"]
    header = (f"{'size':>6} " + " ".join(f"{transport_label(meta, t):>20}" for t in transports)
              + " " + " ".join(f"{c[0]:>9}" for c in ratio_columns))
    for mode in MODES:
        for type_name in TYPES:
            sizes = sorted({r["size_kb"] for r in rows
                            if r["type"] == type_name and r["mode"] == mode})
            if not sizes:
                continue
            lines += ["", f"{mode} sequence<{type_name}>", header, "-" * len(header)]
            for size in sizes:
                got = {t: index.get((t, type_name, size, mode)) for t in transports}
                ratios = [_ratio(got[a]["best"] if got[a] else None,
                                 got[b]["best"] if got[b] else None)
                          for _, a, b in ratio_columns]
                lines.append(f"{str(size) + ' KB':>6} "
                             + " ".join(f"{_cell(got[t]):>20}" for t in transports) + " "
                             + " ".join(f"{r:>9}" for r in ratios))
                cpu = [_cpu_cell(got[t]) for t in transports]
                if any(cell != "-" for cell in cpu):
                    lines.append(f"{'cpu us':>6} " + " ".join(f"{c:>20}" for c in cpu))
    lines += ["", "cpu us: CPU microseconds per message, client/server (each process, all "
              "threads, over the timed passes; the lowest pass)"]
    return "\n".join(lines)


def results_tables(results: dict) -> list:
    """format_tables' figures as a results file's rows: a row per mode, type and size."""
    import results as results_format
    meta, rows = results["meta"], results["results"]
    index = {(r["transport"], r["type"], r["size_kb"], r["mode"]): r for r in rows}
    transports = [t for t in TRANSPORTS if any(r["transport"] == t for r in rows)]
    ratio_columns = [(f"pycdr/omniORBpy {results_format.RATIO}", "pycdr", "omniORBpy"),
                     (f"pycdr/socket {results_format.RATIO}", "pycdr", "socket"),
                     (f"blocking/omniORBpy {results_format.RATIO}", "blocking", "omniORBpy"),
                     (f"arrays/omniORBpy {results_format.RATIO}", "arrays", "omniORBpy"),
                     (f"arrays/socket {results_format.RATIO}", "arrays", "socket")]
    ratio_columns = [c for c in ratio_columns if c[1] in transports and c[2] in transports]
    orbs = [t for t in transports if t != "socket"]
    columns = (["mode", "type", "size KB"]
               + [f"{transport_label(meta, t)} Mbit/s" for t in transports]
               + [c[0] for c in ratio_columns]
               + [f"{transport_label(meta, t)} CPU us client/server" for t in orbs])
    table_rows = []
    for mode in MODES:
        for type_name in TYPES:
            for size in sorted({r["size_kb"] for r in rows
                                if r["type"] == type_name and r["mode"] == mode}):
                got = {t: index.get((t, type_name, size, mode)) for t in transports}
                best = {t: got[t]["best"] if got[t] else None for t in transports}
                table_rows.append(
                    [mode, type_name, size]
                    + [round(best[t], 1) if best[t] else None for t in transports]
                    + [results_format.ratio(best[a], best[b]) for _, a, b in ratio_columns]
                    + [_cpu_cell(got[t]) for t in orbs])
    return [results_format.table(f"Mbit/s, best of {meta['repeat']} repetitions, "
                                 f"{meta['megabytes']:g} MiB per point", columns, table_rows)]


def _cpu_cell(row) -> str:
    if row is None or row.get("client_cpu_us") is None:
        return "-"
    server = row.get("server_cpu_us")
    return f"{row['client_cpu_us']:.0f}/" + (f"{server:.0f}" if server is not None else "-")


def plot(results: dict, directory: str) -> list[str]:
    """One PNG per mode: Mbit/s against buffer size, a panel per type."""
    from benchplot import line_panels
    meta = results["meta"]
    paths = []
    for mode in MODES:
        panels: dict = {}
        for row in results["results"]:
            if row["mode"] == mode:
                panel = panels.setdefault(f"sequence<{row['type']}>", {})
                panel.setdefault(transport_label(meta, row["transport"]), []).append(
                    (row["size_kb"], row["best"]))
        if panels:
            paths.append(line_panels(os.path.join(directory, f"ttcp_{mode}.png"),
                                     f"TTCP {mode}: Mbit/s (best of {meta['repeat']})",
                                     panels, xlabel="buffer (KB)", ylabel="Mbit/s",
                                     log_y=True))
    return paths


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------
def comma_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def size_list(text: str) -> list[int]:
    return [int(item.upper().rstrip("KB") or 0) for item in comma_list(text)]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--types", type=comma_list, default=list(TYPES),
                        help=f"element types (default {','.join(TYPES)})")
    parser.add_argument("--sizes", type=size_list, default=None,
                        help="buffer sizes in KB (default 1,2,...,128; quick: 1,64)")
    parser.add_argument("--modes", type=comma_list, default=list(MODES),
                        help="oneway, twoway or both (default both)")
    parser.add_argument("--mb", type=float, default=None,
                        help="MiB of payload per point (default 64; quick 0.25)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="repetitions per point (default 3; quick 1)")
    parser.add_argument("--arrays", action="store_true",
                        help="also run the reference ORB with the array mapping")
    parser.add_argument("--transports", type=comma_list, default=None,
                        help=f"subset of {','.join(TRANSPORTS)}")
    parser.add_argument("--impl", choices=("auto", "python", "c"), default="auto",
                        help="pycdr path in the peer processes (python: PYCDR_PURE=1)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin processes to CPUs")
    parser.add_argument("--poll-wait", type=float, default=None, metavar="SECONDS",
                        help="the reference ORB's poll_wait in its processes (default: "
                             "PYCDR_POLL_WAIT, else 300 us; 0: sleep on every read)")
    parser.add_argument("--quick", action="store_true", help="a smoke run in seconds")


def run_from_arguments(args, progress=None) -> dict:
    transports = args.transports or [t for t in TRANSPORTS if t != "arrays" or args.arrays]
    return run(types=args.types, sizes_kb=args.sizes or SIZES_KB, modes=args.modes,
               megabytes=args.mb if args.mb is not None else 64.0,
               repeat=args.repeat if args.repeat is not None else 3,
               transports=transports, quick=args.quick,
               pure={"auto": None, "python": True, "c": False}[args.impl],
               pin=not args.no_pin, progress=progress, poll_wait=args.poll_wait)


def main(argv=None) -> int:
    return benchprocs.bench_main(sys.modules[__name__], "bench_ttcp", argv)

if __name__ == "__main__":
    sys.exit(main())
