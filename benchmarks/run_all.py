"""Run every benchmark's FULL_RUN (its results file), then render.py: benchmarks/README.md.

    python benchmarks/run_all.py                  # every benchmark, then the README
    python benchmarks/run_all.py ttcp param       # these, then the README
    python benchmarks/run_all.py --list           # the commands, without running them

Run it on a quiet machine from the repository's root, in the project's venv (with the
test and bench extras, the peers of .ci/install-peers.sh, tshark and capture rights for
the captures).  The captures a command names under /tmp/pycdr-bench are recorded first
when missing (record_load.py).  A benchmark that fails is reported and the others run;
its old results file stays as it was.  Each FULL_RUN's comment gives its duration on an
otherwise idle 2-core machine; all of them take about 25-30 minutes, but for
fuzz_baselines (its 30 ten-minute fuzzing campaigns and their replays: about 6 hours), run
on its own when wanted.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import render  # noqa: E402
from results import CAPTURES  # noqa: E402


def commands(names) -> list[tuple[str, str]]:
    return [(name, render.module_facts(name)[1]) for name in names]


def run(command: str) -> int:
    argv = shlex.split(command)
    if argv[0] == "python":
        argv[0] = sys.executable
    return subprocess.run(argv, cwd=ROOT).returncode


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    ap.add_argument("--list", action="store_true", help="print the commands only")
    args = ap.parse_args(argv)
    known = render.benchmark_names()
    unknown = [n for n in args.names if n not in known]
    if unknown:
        ap.error(f"unknown benchmarks {unknown}; known: {', '.join(known)}")
    todo = commands(args.names or known)
    if args.list:
        for name, command in todo:
            print(f"{name}: {command}")
        return 0
    failed = []
    started_all = time.monotonic()
    for name, command in todo:
        for capture, make in CAPTURES.items():
            if capture in command.split() and not os.path.exists(capture):
                os.makedirs(os.path.dirname(capture), exist_ok=True)
                print(f"== recording {capture}: {make}", flush=True)
                if run(make) != 0:
                    print(f"run_all: could not record {capture}", file=sys.stderr)
        print(f"== {name}: {command}", flush=True)
        started = time.monotonic()
        status = run(command)
        print(f"== {name}: exit status {status}, {time.monotonic() - started:.0f} s", flush=True)
        if status != 0:
            failed.append(name)
    render.main([])
    print(f"== all: {(time.monotonic() - started_all) / 60:.1f} minutes", flush=True)
    if failed:
        print(f"run_all: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
