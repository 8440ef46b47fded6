"""Branch coverage of omniORB 4.2.5's sources reached by recorded connections, sent again
into the source-coverage build of build.sh (srccov/: clang's -fprofile-instr-generate
-fcoverage-mapping, and ASan): what benchmarks/bench_fuzz_baselines.py --target omniorb
measures a campaign by.

    python benchmarks/omniorb/measure.py FILE...     # files bench_fuzz_baselines --keep saved

The connections go to the C++ echo servant, a batch of REPLAY_BATCH at once, each on a
connection of its own (recording_relay.replay_connection: sent whole, its sending side
shut, the answers read until the server closes or stops answering).  Some cases kill
omniORB 4.2.5: when the server has died in a batch, it is started again and that batch's
connections are sent again one at a time, the server started again after each one that
kills it (each connection is then measured on a server that was whole when it came); one
that burns a core after a batch with nothing sent to it (a thread left spinning) is
started again too.  Every process writes its own profile (LLVM_PROFILE_FILE with %p, and
%m for each of its instrumented modules), kept up to date as it runs (%c: continuous
mode), so a process ASan or a signal ends has kept its counts; llvm-profdata merges them,
llvm-cov export sums the branches (each condition's true and false outcomes) covered:

- measured: the GIOP, CDR and TypeCode code, MEASURED below: src/lib/omniORB/orbcore/
  giop*.cc and GIOP_C.cc, GIOP_S.cc (the protocol's streams, its 1.0/1.1/1.2
  implementations, server, worker, strands), cdr*.cc (the CDR streams), and
  src/lib/omniORB/dynamic/typecode.cc, tcParser.cc (TypeCodes and the values they
  describe), with include/omniORB4/cdrStream.h (the CDR stream's inline marshalling);
- beside it, all of src/lib/omniORB/orbcore/.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]         # campaign, recording_relay

from campaign import ASAN_OPTIONS, BUILD, ENDPOINT   # noqa: E402
from recording_relay import load_connections, replay_connection  # noqa: E402

from pycdr.fuzz.target import SpawnedTarget, endpoint  # noqa: E402

SRCCOV = os.path.join(BUILD, "srccov")
SERVER = os.path.join(SRCCOV, "echo", "echo_server")
# The instrumented modules the servant runs (libomnithread's few branches are not GIOP's).
OBJECTS = (SERVER, os.path.join(SRCCOV, "build", "lib", "libomniORB4.so"),
           os.path.join(SRCCOV, "build", "lib", "libomniDynamic4.so"))
# The measured sources, relative to the source tree (fnmatch patterns).
ORBCORE = "src/lib/omniORB/orbcore/"
MEASURED = (ORBCORE + "giop*.cc", ORBCORE + "GIOP_*.cc", ORBCORE + "cdr*.cc",
            "src/lib/omniORB/dynamic/typecode.cc", "src/lib/omniORB/dynamic/tcParser.cc",
            "include/omniORB4/cdrStream.h")
# Connections sent at once.
REPLAY_BATCH = 32
# After each batch: seconds the server's CPU is watched, and the share of a core that
# makes it a spinning server, started again.
SPIN_WINDOW = 0.1
SPIN_SHARE = 0.9
LLVM_TOOLS = ("clang", "llvm-profdata", "llvm-cov")


def missing() -> str | None:
    """Why the measurement cannot run here, or None."""
    for path in OBJECTS:
        if not os.path.exists(path):
            return f"{path} is missing: run benchmarks/omniorb/build.sh"
    for tool in LLVM_TOOLS[1:]:
        if shutil.which(tool) is None:
            return f"{tool} is not on PATH"
    versions = {tool: tool_version(tool) for tool in LLVM_TOOLS}
    if len(set(versions.values())) != 1:
        return f"clang, llvm-profdata and llvm-cov differ in version: {versions}"
    return None


def tool_version(tool: str) -> str | None:
    """The LLVM major version a tool says it is (its profile format follows it)."""
    # (llvm-profdata answers --version for a command only.)
    argv = [tool, "merge", "--version"] if tool == "llvm-profdata" else [tool, "--version"]
    out = subprocess.run(argv, capture_output=True, text=True).stdout
    for word in out.replace("-", " ").split():
        head = word.split(".")[0]
        if word.count(".") >= 2 and head.isdigit():
            return head
    return None


def relative_source(path: str) -> str:
    """A source file's path relative to the source tree ('' when it is not in it)."""
    path = os.path.normpath(path)
    marker = "omniorb-dfsg-4.2.5+ds1" + os.sep
    return path.split(marker, 1)[1] if marker in path else ""


def measured(source: str) -> bool:
    return any(fnmatch.fnmatchcase(source, pattern) for pattern in MEASURED)


class Server:
    """The source-coverage servant, started again when it has died."""

    def __init__(self, profiles: str):
        env = {"ASAN_OPTIONS": ASAN_OPTIONS,
               "LLVM_PROFILE_FILE": os.path.join(profiles, "%p-%m%c.profraw")}
        self.target = SpawnedTarget(f"{SERVER} {ENDPOINT}", env=env)
        self.address = endpoint(self.target.start())
        self.restarts = 0
        self.spins = 0                 # restarts of a spinning server

    def whole(self) -> bool:
        """Whether it still runs; started again when not (False)."""
        if self.target.exited() is None:
            return True
        self.restart()
        return False

    def restart(self) -> None:
        self.restarts += 1
        self.address = endpoint(self.target.restart())

    def spinning(self) -> bool:
        """Whether it burns a core with nothing sent to it (a case left a thread spinning:
        omniORB 4.2.5 after some CancelRequests), which would slow every connection
        after."""
        before = self.target.cpu_seconds()
        time.sleep(SPIN_WINDOW)
        after = self.target.cpu_seconds()
        return before is not None and after is not None and \
            after - before >= SPIN_SHARE * SPIN_WINDOW

    def stop(self) -> None:
        self.target.stop()


def replay(connections: list, profiles: str) -> dict:
    server = Server(profiles)
    began = time.monotonic()
    try:
        with ThreadPoolExecutor(REPLAY_BATCH) as pool:
            for start in range(0, len(connections), REPLAY_BATCH):
                batch = connections[start:start + REPLAY_BATCH]
                address = server.address
                list(pool.map(lambda data: replay_connection(*address, data), batch))
                if server.whole():
                    if server.spinning():
                        server.spins += 1
                        server.restart()
                    continue
                for data in batch:
                    replay_connection(*server.address, data)
                    server.whole()
    finally:
        server.stop()
    return {"replay_seconds": time.monotonic() - began, "restarts": server.restarts,
            "spins": server.spins}


def branches(profiles: str) -> dict:
    """Branches covered (and in all) in the measured sources and in orbcore, from the
    profiles in ``profiles``."""
    raw = [os.path.join(profiles, name) for name in os.listdir(profiles)
           if name.endswith(".profraw")]
    merged = os.path.join(profiles, "merged.profdata")
    listing = os.path.join(profiles, "inputs.txt")
    with open(listing, "w") as f:
        f.write("\n".join(raw) + "\n")
    subprocess.run(["llvm-profdata", "merge", "-sparse", f"--input-files={listing}",
                    "-o", merged], check=True, capture_output=True)
    argv = ["llvm-cov", "export", "-summary-only", f"-instr-profile={merged}", OBJECTS[0]]
    for path in OBJECTS[1:]:
        argv += ["-object", path]
    export = json.loads(subprocess.run(argv, check=True, capture_output=True).stdout)
    out = {"covered": 0, "files": 0, "branches": 0, "all_covered": 0, "all_branches": 0}
    for entry in export["data"][0]["files"]:
        source = relative_source(entry["filename"])
        summary = entry["summary"]["branches"]
        if measured(source):
            out["covered"] += summary["covered"]
            out["branches"] += summary["count"]
            out["files"] += summary["covered"] > 0
        if source.startswith(ORBCORE):
            out["all_covered"] += summary["covered"]
            out["all_branches"] += summary["count"]
    return out


def replay_coverage(connections: list) -> dict:
    """What ``connections``, sent again into the source-coverage build, cover."""
    profiles = tempfile.mkdtemp(prefix="pycdr-omniorb-profiles-")
    try:
        run = replay(connections, profiles)
        return {**branches(profiles), **run}
    finally:
        shutil.rmtree(profiles, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="connections as bench_fuzz_baselines "
                                                 "--keep saves them")
    args = parser.parse_args(argv)
    why = missing()
    if why:
        print(f"measure.py: {why}", file=sys.stderr)
        return 2
    for path in args.files:
        connections = load_connections(path)
        r = replay_coverage(connections)
        print(f"{path}: {len(connections)} connections: {r['covered']} of {r['branches']} "
              f"branches of GIOP, CDR and TypeCode ({r['files']} files), {r['all_covered']} "
              f"of {r['all_branches']} of orbcore; {r['restarts']} restarts "
              f"({r['spins']} spinning), "
              f"{r['replay_seconds']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
