"""The processes of the network benchmarks (bench_ttcp.py, bench_param.py).

Each server and each client runs in a process of its own, so that a client and its server
never share a GIL, and where the machine has two CPUs or more the client is pinned to one and
the server to another (on a small VM a wake-up that crosses CPUs costs more than a small call;
pinning makes runs comparable). Starting, banner reading and stopping reuse the test peers'
process handling (tests/peers/process.py): servers print "IOR:...", "KEY <hex>", "READY" and
exit when their stdin closes; clients print one JSON document on stdout.

Both sides import this module: the orchestrators for start_server/run_client, the peer
scripts (benchmarks/ttcp/*.py, benchmarks/param/*.py) for pin_to_cpu/print_banner/
stop_when_stdin_closes.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH_DIR)
TESTS_DIR = os.path.join(REPO_ROOT, "tests")
if TESTS_DIR not in sys.path:
    sys.path.insert(0, TESTS_DIR)     # for `peers` (the test peers' process handling)

from peers.process import (LOOPBACK, PeerError, PeerProcess, RunningPeer,  # noqa: E402
                           read_echo_server_banner, run_client_process,
                           start_server_with_retries)

__all__ = ["LOOPBACK", "PeerError", "cpu_plan", "pin_to_cpu", "start_server", "run_client",
           "print_banner", "stop_when_stdin_closes", "omni_available"]


# --------------------------------------------------------------------------
# CPUs
# --------------------------------------------------------------------------
def process_cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds the process ``pid`` (all its threads) has used so far,
    from /proc (None without a pid or /proc): the server's CPU per call, read by the
    client around its timings (bench_param, bench_ttcp)."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class ServerCPU:
    """Server CPU microseconds per call over a client's timings:

        meter = ServerCPU(pid); ... timings, counting calls ...; meter.per_call(calls)"""

    def __init__(self, pid: int | None):
        self.pid = pid
        self.start = process_cpu_seconds(pid)

    def per_call(self, calls: int) -> float | None:
        end = process_cpu_seconds(self.pid)
        if self.start is None or end is None or not calls:
            return None
        return (end - self.start) / calls * 1e6


class OwnCPU:
    """This process's CPU microseconds per call over a client's timings (all its
    threads: an ORB's loop thread counts):

        meter = OwnCPU(); ... timings, counting calls ...; meter.per_call(calls)"""

    def __init__(self):
        self.start = time.process_time()

    def per_call(self, calls: int) -> float | None:
        return (time.process_time() - self.start) / calls * 1e6 if calls else None


def cpu_plan() -> tuple[int | None, int | None]:
    """(client CPU, server CPU): two different CPUs of this process's affinity set, or
    (None, None) when there are fewer than two or affinity cannot be set here."""
    if not hasattr(os, "sched_getaffinity"):
        return None, None
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None, None
    return cpus[0], cpus[1]


def pin_to_cpu(cpu: int | None) -> bool:
    """Pin this process (and the threads it starts from now on) to ``cpu``; False if it
    could not be done (no such call, or the CPU is not allowed)."""
    if cpu is None or not hasattr(os, "sched_setaffinity"):
        return False
    try:
        os.sched_setaffinity(0, {cpu})
    except OSError:
        return False
    return True


def cpu_args(cpu: int | None) -> list:
    return [] if cpu is None else ["--cpu", str(cpu)]


# --------------------------------------------------------------------------
# Orchestrator side
# --------------------------------------------------------------------------
def omni_available() -> bool:
    try:
        import omniORB  # noqa: F401
    except ImportError:
        return False
    return True


def start_server(name: str, argv: list, cpu: int | None, *, env=None,
                 timeout: float = 60) -> RunningPeer:
    """Start a peer server script (``argv`` without --port/--cpu) on a free loopback port."""
    def start_once(port):
        process = PeerProcess(name, [*argv, "--port", str(port), *cpu_args(cpu)], env=env)
        ior, key = read_echo_server_banner(process, timeout)
        return RunningPeer(process, ior=ior, host=LOOPBACK, port=port, object_key=key)
    return start_server_with_retries(start_once, None)


def run_client(name: str, argv: list, cpu: int | None, *, timeout: float) -> dict:
    """Run a peer client script to its end; the JSON document it prints."""
    lines = run_client_process(name, [*argv, *cpu_args(cpu)], timeout)
    try:
        return json.loads("\n".join(lines))
    except ValueError:
        raise PeerError(f"{name} client printed no JSON:\n" + "\n".join(lines[-20:])) from None


def python_env(pure: bool | None, poll_wait: float | None = None) -> dict | None:
    """The environment for peer scripts: PYCDR_PURE=1 forces pycdr's Python path there;
    PYCDR_POLL_WAIT sets the reference ORB's poll_wait (None: as this environment says)."""
    if pure is None and poll_wait is None:
        return None
    env = dict(os.environ)
    if pure:
        env["PYCDR_PURE"] = "1"
    elif pure is not None:
        env.pop("PYCDR_PURE", None)
    if poll_wait is not None:
        env["PYCDR_POLL_WAIT"] = repr(float(poll_wait))
    return env


def poll_wait_in_effect(poll_wait: float | None) -> str:
    """The reference ORB's poll_wait its benchmark processes get, for the tables."""
    if poll_wait is None:
        text = os.environ.get("PYCDR_POLL_WAIT")
        if not text:
            return "300 us (default)"
        poll_wait = float(text)
    return f"{poll_wait * 1e6:g} us" if poll_wait > 0 else "0 (sleeps on every read)"


def env_command(env: dict | None, argv: list) -> list:
    """``argv`` run under ``env`` (python_env's) through env(1): for run_client, which
    takes no environment."""
    if env is None:
        return argv
    settings = [f"{name}={env[name]}" for name in ("PYCDR_PURE", "PYCDR_POLL_WAIT")
                if name in env]
    unset = [x for name in ("PYCDR_PURE", "PYCDR_POLL_WAIT") if name not in env
             for x in ("-u", name)]
    return ["env", *unset, *settings, *argv]


# --------------------------------------------------------------------------
# Peer script side
# --------------------------------------------------------------------------
def print_banner(ior: str, key: bytes) -> None:
    print(ior)
    print("KEY " + key.hex())
    print("READY", flush=True)


def stop_when_stdin_closes(stop) -> None:
    """Call ``stop()`` (from a daemon thread) once stdin reaches EOF."""
    def wait():
        sys.stdin.buffer.read()
        stop()
    threading.Thread(target=wait, daemon=True).start()


def import_omni_idl(idl_path: str):
    """Compile and import omniORBpy stubs for ``idl_path`` (tests/peers/omni_idl.py)."""
    from peers import omni_idl
    omni_idl.import_idl(idl_path)
    return omni_idl


def serve_pycdr(servant, key: bytes, port: int, tls=None, threads: bool = False) -> None:
    """Serve ``servant`` (a pycdr.orb Servant) under ``key`` on 127.0.0.1:``port`` with the
    reference ORB (also over TLS on another port with ``tls``, a server SSLContext; with a
    thread per connection, ThreadedServer, with ``threads``); print the banner; return once
    stdin closes."""
    import asyncio

    from pycdr.orb import Server, ThreadedServer
    from pycdr.orb.aio import run as run_loop

    async def serve():
        server = (ThreadedServer if threads else Server)(host=LOOPBACK, port=port, tls=tls)
        server.activate(servant, key)
        await server.start()
        print_banner(server.ior_string(key), key)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        stop_when_stdin_closes(lambda: loop.call_soon_threadsafe(stop.set))
        await stop.wait()
        await server.stop()
    run_loop(serve())


def serve_omni(idl_path: str, interface: str, make_servant, key: bytes, port: int) -> None:
    """Serve ``make_servant(skeleton class)`` under ``key`` on 127.0.0.1:``port`` with
    omniORBpy (the stubs compiled from ``idl_path``); print the banner; exit once stdin
    closes (os._exit: see below). Pin the process before calling: omniORB's
    threads inherit the affinity."""
    from omniORB import CORBA
    orb = CORBA.ORB_init([sys.argv[0], "-ORBendPoint", f"giop:tcp:{LOOPBACK}:{port}"],
                         CORBA.ORB_ID)
    omni_idl = import_omni_idl(idl_path)
    _stub, skeleton = omni_idl.interface_classes(interface)
    poa = orb.resolve_initial_references("omniINSPOA")
    poa.activate_object_with_id(key, make_servant(skeleton))
    poa._get_the_POAManager().activate()
    print_banner(orb.object_to_string(poa.id_to_reference(key)), key)
    stop_when_stdin_closes(lambda: orb.shutdown(False))
    orb.run()
    orb.destroy()
    # Straight out, past the interpreter's finalization: there the thread still reading
    # stdin is unwound through omniORB's thread handlers and aborts (a core file each).
    sys.stdout.flush()
    os._exit(0)


def omni_client(idl_path: str, interface: str, ior: str):
    """(orb, narrowed object reference) of an omniORBpy client for ``ior``."""
    from omniORB import CORBA
    orb = CORBA.ORB_init([sys.argv[0]], CORBA.ORB_ID)
    omni_idl = import_omni_idl(idl_path)
    stub_class, _skeleton = omni_idl.interface_classes(interface)
    return orb, orb.string_to_object(ior)._narrow(stub_class)


def bench_main(module, name: str, argv=None) -> int:
    """The command line of bench_ttcp.py / bench_param.py: ``module``'s add_arguments,
    run_from_arguments, format_tables and plot, plus --json and --plot."""
    import argparse

    import results as results_format
    parser = argparse.ArgumentParser(description=module.__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    module.add_arguments(parser)
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--plot", metavar="DIR", help="also write PNG plots there")
    results_format.add_argument(parser)
    args = parser.parse_args(argv)
    try:
        results = module.run_from_arguments(
            args, progress=lambda text: print(f"  {text}", file=sys.stderr))
    except (ValueError, module.BenchmarkError, PeerError) as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 1
    print(module.format_tables(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.plot:
        for path in module.plot(results, args.plot):
            print(f"wrote {path}", file=sys.stderr)
    if args.results:
        meta = results["meta"]
        benchmark = name.removeprefix("bench_") + ("_tls" if meta.get("kind") == "tls" else "")
        path = {"codec": meta["pycdr"], "loop": results_format.loop_name()}
        if "poll_wait" in meta:
            path["poll_wait"] = meta["poll_wait"]
        results_format.write(args.results, benchmark, results_format.record(
            benchmark, script=module.__file__, argv=sys.argv[1:] if argv is None else argv,
            tables=module.results_tables(results), quick=args.quick, path=path,
            notes=getattr(module, "results_notes", lambda _: [])(results),
            settings={key: meta[key] for key in ("repeat", "seconds", "megabytes", "pinned")
                      if key in meta}))
    return 0
