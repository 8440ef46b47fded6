"""The results file every benchmark writes with ``--results FILE`` and render.py reads.

One JSON object per benchmark run::

    {"format": 1,
     "benchmark": "ttcp",                       # bench_ttcp.py
     "command": "python benchmarks/bench_ttcp.py --results ...",   # reproduces the run
     "quick": false,                            # a smoke run: figures not meaningful
     "date": "2026-12-06T05:00:00Z",            # UTC, when the run ended
     "commit": "83d2475c1a2b", "dirty": false,  # the checkout measured
     "machine": {"cpu", "cores", "ram_gb", "os", "python"},
     "path": {"codec": "c"|"python", "orb": "..."},    # which code paths ran
     "settings": {...},                          # trial counts, sizes: what the run used
     "tables": [{"title": str, "columns": [str, ...], "rows": [[cell, ...], ...]}],
     "notes": [str, ...]}

A cell is a number, a string or null (not measured).  A column whose name ends in
``×`` holds ratios (rendered as ``1.23x``); the benchmark computes them from its own
measurements of the same run, as it prints them.  ``--results`` without a file name
writes ``benchmarks/results/<benchmark>.json``.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS_DIR = os.path.join(HERE, "results")
FORMAT = 1
RATIO = "×"
KEYS = ("format", "benchmark", "command", "quick", "date", "commit", "dirty", "machine",
        "path", "settings", "tables", "notes")
DEFAULT = "<default>"
# The captures full runs read (FULL_RUN commands name them), and how each is made: real
# omniORBpy traffic recorded on loopback (tshark and capture rights needed), about 85 MB
# and about 1.1 GB.
CAPTURES = {"/tmp/pycdr-bench/load.pcapng":
            "python benchmarks/record_load.py /tmp/pycdr-bench/load.pcapng --megabytes 85",
            "/tmp/pycdr-bench/big.pcapng":
            "python benchmarks/record_load.py /tmp/pycdr-bench/big.pcapng --megabytes 1100"}


def add_argument(parser) -> None:
    """``--results [FILE]``: write the results file (default benchmarks/results/NAME.json)."""
    parser.add_argument("--results", metavar="FILE", nargs="?", const=DEFAULT, default=None,
                        help="also write the results in the format render.py reads "
                             "(without FILE: benchmarks/results/<benchmark>.json)")


def default_path(benchmark: str) -> str:
    return os.path.join(RESULTS_DIR, f"{benchmark}.json")


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def machine() -> dict:
    """The CPU model, its cores, the RAM, the OS and the Python that ran the benchmark."""
    cpu = next((line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines()
                if line.startswith("model name")), None) or platform.processor() or \
        platform.machine()
    mem = next((line.split()[1] for line in _read("/proc/meminfo").splitlines()
                if line.startswith("MemTotal:")), None)
    return {"cpu": cpu, "cores": os.cpu_count(),
            "ram_gb": round(int(mem) / 1024 / 1024, 1) if mem else None,
            "os": platform.platform(terse=True),
            "python": f"{platform.python_implementation()} {platform.python_version()}"}


def commit() -> tuple[str | None, bool]:
    """(the checkout's commit, whether tracked files differ from it)."""
    def git(*args):
        done = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else None
    head = git("rev-parse", "--short=12", "HEAD")
    # The results and the README they render are written by the run itself.
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".",
                  ":!benchmarks/results", ":!benchmarks/README.md")
    return head, bool(changed)


def codec_path() -> str:
    """``c`` when pycdr's C extension runs the plans in this process, else ``python``."""
    try:
        import pycdr  # noqa: F401  (importing pycdr loads the extension if there is one)
    except ImportError:
        return "python"
    return "c" if "pycdr.codec._speedups" in sys.modules else "python"


def loop_name() -> str:
    """The event loop the reference ORB's asyncio peers run on (pycdr.orb.aio)."""
    if os.environ.get("PYCDR_LOOP") == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def command(script: str, argv) -> str:
    """The command line that reproduces a run, from the repository's root."""
    return shlex.join(["python", os.path.relpath(os.path.abspath(script), ROOT), *argv])


def table(title: str, columns, rows) -> dict:
    return {"title": title, "columns": list(columns), "rows": [list(row) for row in rows]}


def ratio(a, b, digits: int = 2):
    """a / b rounded, or None when either is missing or b is 0."""
    return round(a / b, digits) if a and b else None


def record(benchmark: str, *, script: str, argv, tables, path: dict, settings: dict,
           quick: bool = False, notes=()) -> dict:
    head, dirty = commit()
    return {"format": FORMAT, "benchmark": benchmark, "command": command(script, argv),
            "quick": bool(quick),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "commit": head, "dirty": dirty, "machine": machine(), "path": path,
            "settings": settings, "tables": list(tables), "notes": list(notes)}


def write(target: str | None, benchmark: str, rec: dict) -> str | None:
    """Write ``rec`` to ``target`` (the --results value); returns the path written."""
    if target is None:
        return None
    if target == DEFAULT:
        target = default_path(benchmark)
    problems = check(rec)
    if problems:
        raise ValueError(f"results of {benchmark}: {'; '.join(problems)}")
    os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
    with open(target, "w") as f:
        json.dump(rec, f, indent=1, sort_keys=False, ensure_ascii=False)
        f.write("\n")
    print(f"results written to {target}", file=sys.stderr)
    return target


def check(rec) -> list[str]:
    """What is wrong with a results record ([] when it conforms)."""
    if not isinstance(rec, dict):
        return ["not a JSON object"]
    problems = [f"missing {key!r}" for key in KEYS if key not in rec]
    if problems:
        return problems
    if rec["format"] != FORMAT:
        problems.append(f"format {rec['format']!r}, expected {FORMAT}")
    if not isinstance(rec["command"], str) or not rec["command"].startswith("python benchmarks/"):
        problems.append("command is not a python benchmarks/... command line")
    for key in ("cpu", "cores", "ram_gb", "os", "python"):
        if key not in rec["machine"]:
            problems.append(f"machine has no {key!r}")
    return problems + check_tables(rec["tables"])


def check_tables(tables) -> list[str]:
    """What is wrong with a results record's tables ([] when they conform)."""
    problems = [] if tables else ["no tables"]
    for t in tables:
        if not isinstance(t, dict) or set(t) != {"title", "columns", "rows"}:
            problems.append(f"table {t!r:.60} is not title/columns/rows")
            continue
        for row in t["rows"]:
            if len(row) != len(t["columns"]):
                problems.append(f"table {t['title']!r}: a row of {len(row)} cells under "
                                f"{len(t['columns'])} columns")
            elif not all(cell is None or isinstance(cell, (int, float, str)) for cell in row):
                problems.append(f"table {t['title']!r}: a cell is not a number, text or null")
            elif not all(cell is None or isinstance(cell, (int, float))
                         for cell, column in zip(row, t["columns"]) if column.endswith(RATIO)):
                problems.append(f"table {t['title']!r}: a ratio that is not a number")
    return problems
