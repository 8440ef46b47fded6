"""Param_Test twoway calls/s over TLS against plain TCP (issue 29, `pycdr bench param --tls`):
the reference ORB (its client and server) and omniORB C++ (its client and server on its SSL
transport, libomnisslTP4; omniORBpy's wheel has no SSL transport) in one run, each ORB
against itself, plain and TLS alternating per operation so that machine-speed drift is
shared.  The figure of merit is each ORB's TLS/plain ratio: how much of its speed survives
TLS (the target: the reference ORB's ratio >= omniORB's).

The certificate is made here (the openssl command: a self-signed RSA 2048 certificate for
127.0.0.1); the omniORB programs (param/omni_cxx/param_tls.cc) are compiled here with g++
and Debian's omniidl and libomniorb4-dev (.ci/install-peers.sh); without them the omniORB
rows are left out and the table says so.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

import benchprocs
import param_common
from benchprocs import LOOPBACK, PeerError, PeerProcess
from peers.process import RunningPeer, free_port, run_client_process, start_server_with_retries

from pycdr.addressing.iiop import SSLSecTrans
from pycdr.codec.ior import ior_from_string
from pycdr.orb.client import first_iiop_profile

PARAM_DIR = param_common.PARAM_DIR
OMNI_SOURCE = os.path.join(PARAM_DIR, "omni_cxx", "param_tls.cc")
# serve_servant.h, shared with the test peers' omniORB server
OMNI_INCLUDE = os.path.join(os.path.dirname(PARAM_DIR), os.pardir, "tests", "peers", "omni_ssl")
OMNIIDL = "/usr/bin/omniidl"          # Debian's, with the C++ back end
TRANSPORTS = ("TCP", "TLS")
# Run through bench_param.py --tls; benchmarks/README.md's table comes from this run:
# about 2 minutes on 2 cores (omniORB C++ compiled first).
FULL_RUN = "python benchmarks/bench_param.py --tls --results benchmarks/results/param_tls.json"


class BenchmarkError(Exception):
    """A client got back other values than it sent: its numbers would be meaningless."""


def _make_certificate(folder: str) -> tuple[str, str, str]:
    """(cert, key, cert+key) PEM files of a self-signed certificate for 127.0.0.1."""
    cert, key = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-keyout", key, "-out", cert, "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=120)
    both = os.path.join(folder, "cert-and-key.pem")
    with open(both, "w") as out:
        for part in (cert, key):
            with open(part) as f:
                out.write(f.read())
    return cert, key, both


def build_omni(folder: str) -> str | None:
    """The compiled omniORB program, or None when the tools are missing."""
    if not (shutil.which("g++") and os.path.exists(OMNIIDL)
            and os.path.exists("/usr/include/omniORB4/sslContext.h")):
        return None
    shutil.copy(param_common.IDL_PATH, folder)
    for argv in ([OMNIIDL, "-bcxx", "param.idl"],
                 ["g++", "-O2", "-o", "param_tls", OMNI_SOURCE, "paramSK.cc", "-I.",
                  f"-I{OMNI_INCLUDE}",
                  "-lomniORB4", "-lomnithread", "-lomnisslTP4", "-lssl", "-lcrypto",
                  "-lpthread"]):
        done = subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise PeerError(f"building {OMNI_SOURCE} failed: {done.stderr[-2000:]}")
    return os.path.join(folder, "param_tls")


def _taskset(cpu) -> list:
    return ["taskset", "-c", str(cpu)] if cpu is not None and shutil.which("taskset") else []


def _start_pycdr(cert, key, cpu, env):
    """The reference ORB's Param_Test server with a plain and a TLS port: (peer, tcp URL,
    TLS URL)."""
    argv = [sys.executable, os.path.join(PARAM_DIR, "pycdr_server.py"), "--tls", cert, key]
    server = benchprocs.start_server("param-pycdr-tls-server", argv, cpu, env=env)
    profile = first_iiop_profile(ior_from_string(server.ior))
    tls_port = profile.component(SSLSecTrans).port
    return (server, f"corbaloc:iiop:1.2@{LOOPBACK}:{server.port}/Param_Test",
            f"corbaloc:ssliop:1.2@{LOOPBACK}:{tls_port}/Param_Test")


def _start_omni(binary, cert, both, cpu):
    def start_once(port):
        tls_port = free_port()
        process = PeerProcess("param-omniORB-tls-server",
                              [*_taskset(cpu), binary, "server", cert, both, str(port),
                               str(tls_port)])
        try:
            process.wait_for_line(lambda line: line == "READY", 60)
        except PeerError:
            process.stop()
            raise
        ior = next(line for line in process.stdout_text().splitlines()
                   if line.startswith("IOR:"))
        return RunningPeer(process, ior=ior, host=LOOPBACK, port=port, object_key=b"")
    return start_server_with_retries(start_once, None)


def run(*, operations=param_common.OPERATIONS, seconds: float = 1.0, repeat: int = 3,
        quick: bool = False, pure: bool | None = None, pin: bool = True,
        progress=None, poll_wait: float | None = None) -> dict:
    """{"meta": {..., "kind": "tls", "omniORB": bool}, "results": [{"orb", "transport",
    "operation", "calls_per_s", "best"}, ...]}"""
    if quick:
        seconds = 0.05 if seconds == 1.0 else seconds
        repeat = 1 if repeat == 3 else repeat
    client_cpu, server_cpu = cpus = benchprocs.cpu_plan() if pin else (None, None)
    env = benchprocs.python_env(pure, poll_wait)
    rows, implementation, pinned = [], None, False
    work = tempfile.mkdtemp(prefix="pycdr-bench-tls-")
    try:
        cert, key, both = _make_certificate(work)
        binary = build_omni(work)
        timeout = 120 + 2 * seconds * repeat
        # The reference ORB, client and server.
        server, tcp_url, tls_url = _start_pycdr(cert, key, server_cpu, env)
        try:
            for operation in operations:
                for transport, url in (("TCP", tcp_url), ("TLS", tls_url)):
                    if progress:
                        progress(f"pycdr {transport} {operation}")
                    argv = [sys.executable, os.path.join(PARAM_DIR, "pycdr_client.py"),
                            "--ior", url, "--cacert", cert, "--operations", operation,
                            "--seconds", str(seconds), "--repeat", str(repeat)]
                    argv = benchprocs.env_command(env, argv)
                    output = benchprocs.run_client("param-pycdr", argv, client_cpu,
                                                   timeout=timeout)
                    pinned = pinned or output["pinned"]
                    implementation = output["implementation"]
                    rows += _rows("pycdr", transport, output["results"])
        finally:
            server.stop()
        # omniORB C++, client and server.
        if binary is not None:
            server = _start_omni(binary, cert, both, server_cpu)
            try:
                for operation in operations:
                    for transport in TRANSPORTS:
                        if progress:
                            progress(f"omniORB {transport} {operation}")
                        rule = "ssl" if transport == "TLS" else "tcp"
                        lines = run_client_process(
                            "param-omniORB", [*_taskset(client_cpu), binary, "client", cert,
                                              both, server.ior, rule, str(seconds),
                                              str(repeat), operation], timeout)
                        rows += _rows("omniORB", transport, json.loads(lines[-1])["results"])
            finally:
                server.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    meta = {"kind": "tls", "pycdr": implementation, "python": platform.python_version(),
            "machine": f"{platform.machine()} {os.cpu_count()} CPUs", "seconds": seconds,
            "repeat": repeat, "pinned": pinned, "cpus": list(cpus),
            "omniORB": binary is not None}
    return {"meta": meta, "results": rows}


def _rows(orb: str, transport: str, results: list) -> list:
    out = []
    for result in results:
        if not result["correct"]:
            raise BenchmarkError(f"{orb} over {transport} "
                                            f"{result['operation']}: wrong answer")
        rates = result["calls_per_s"]
        out.append({"orb": orb, "transport": transport, "operation": result["operation"],
                    "calls_per_s": rates, "best": max(rates)})
    return out


def ratios(results: dict) -> dict:
    """{operation: {orb: TLS/plain}} from the best timings."""
    best = {(r["orb"], r["transport"], r["operation"]): r["best"] for r in results["results"]}
    out: dict = {}
    for (orb, transport, operation), tls in best.items():
        if transport == "TLS" and best.get((orb, "TCP", operation)):
            out.setdefault(operation, {})[orb] = tls / best[(orb, "TCP", operation)]
    return out


def format_tables(results: dict) -> str:
    meta = results["meta"]
    best = {(r["orb"], r["transport"], r["operation"]): r["best"] for r in results["results"]}
    operations = list(dict.fromkeys(r["operation"] for r in results["results"]))
    orbs = list(dict.fromkeys(r["orb"] for r in results["results"]))
    pinned = (f"client on CPU {meta['cpus'][0]}, server on CPU {meta['cpus'][1]}"
              if meta["pinned"] else "not pinned")
    py = "pycdr-C" if meta.get("pycdr") == "c" else "pycdr-Py"
    lines = [f"Param_Test twoway calls/s over plain TCP and TLS (best of {meta['repeat']} x "
             f"{meta['seconds']:g} s), each ORB client and server; pycdr = {py}, Python "
             f"{meta['python']}, {meta['machine']}, {pinned}", ""]
    columns = [(orb, t) for orb in orbs for t in TRANSPORTS]
    header = f"{'operation':<22}" + "".join(f"{orb + ' ' + t:>14}" for orb, t in columns) \
        + "".join(f"{orb + ' TLS/TCP':>17}" for orb in orbs) \
        + (f"{'py/omni ratio':>15}" if len(orbs) == 2 else "")
    lines += [header, "-" * len(header)]
    by_operation = ratios(results)
    for operation in operations:
        cells = "".join(f"{best[(o, t, operation)]:14.0f}" if (o, t, operation) in best
                        else f"{'-':>14}" for o, t in columns)
        r = by_operation.get(operation, {})
        cells += "".join(f"{r[o]:17.2f}" if o in r else f"{'-':>17}" for o in orbs)
        if len(orbs) == 2 and all(o in r for o in orbs):
            cells += f"{r['pycdr'] / r['omniORB']:15.2f}"
        lines.append(f"{operation:<22}{cells}")
    lines.append("")
    lines.append("TLS/TCP: calls/s over TLS / calls/s over plain TCP, the same ORB at both ends; "
                 "py/omni ratio: the reference ORB's TLS/TCP over omniORB's (>= 1: the "
                 "reference ORB keeps at least as much of its speed under TLS).")
    if not meta["omniORB"]:
        lines.append("omniORB C++ left out: g++, Debian's omniidl or libomniorb4-dev missing "
                     "(.ci/install-peers.sh installs them).")
    return "\n".join(lines)


def results_tables(results: dict) -> list:
    """format_tables' figures as a results file's table."""
    import results as results_format
    best = {(r["orb"], r["transport"], r["operation"]): r["best"] for r in results["results"]}
    operations = list(dict.fromkeys(r["operation"] for r in results["results"]))
    orbs = list(dict.fromkeys(r["orb"] for r in results["results"]))
    columns = ([f"{orb} {t} calls/s" for orb in orbs for t in TRANSPORTS]
               + [f"{orb} TLS/TCP {results_format.RATIO}" for orb in orbs]
               + ([f"pycdr/omniORB TLS/TCP {results_format.RATIO}"] if len(orbs) == 2 else []))
    by_operation = ratios(results)
    rows = []
    for operation in operations:
        r = by_operation.get(operation, {})
        rows.append([operation]
                    + [round(best[(o, t, operation)]) if (o, t, operation) in best else None
                       for o in orbs for t in TRANSPORTS]
                    + [round(r[o], 2) if o in r else None for o in orbs]
                    + ([results_format.ratio(r.get("pycdr"), r.get("omniORB"))]
                       if len(orbs) == 2 else []))
    return [results_format.table("twoway calls/s over plain TCP and TLS, each ORB against "
                                 "itself", ["operation"] + columns, rows)]


def plot(results: dict, directory: str) -> list[str]:
    from benchplot import bar_panels
    series: dict = {}
    for row in results["results"]:
        series.setdefault(f"{row['orb']} {row['transport']}", {})[
            row["operation"].replace("test_", "")] = row["best"]
    if not series:
        return []
    return [bar_panels(os.path.join(directory, "param_test_tls.png"),
                       "Param_Test twoway calls/s, plain TCP and TLS",
                       {"calls per second": series}, ylabel="calls/s")]
