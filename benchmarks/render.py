"""Write benchmarks/README.md from the benchmarks' docstrings and their results files.

    python benchmarks/render.py            # rewrite benchmarks/README.md
    python benchmarks/render.py --check    # exit 1 if README.md is not what it would write

Per benchmark (every benchmarks/bench_*.py): what it measures (the module's docstring),
the command that reproduces its results (the module's ``FULL_RUN``), and the tables of
benchmarks/results/<name>.json with the machine, date and commit they were measured
on.  A benchmark without a results file says so and gives the command: no figure in
the README comes from anywhere but a results file.
"""

from __future__ import annotations

import argparse
import ast
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import results as results_format  # noqa: E402

README = os.path.join(HERE, "README.md")

def intro() -> str:
    captures = "".join(f"\n    {make}" for make in results_format.CAPTURES.values())
    return INTRO + (f"""
The capture benchmarks read a recording of real omniORBpy traffic that run_all.py makes
when it is missing (tshark and capture rights needed):
{captures}
""" if captures else "")


INTRO = """\
# Benchmarks

<!-- Written by benchmarks/render.py from the benchmarks' docstrings and
     benchmarks/results/*.json: edit those, then run `python benchmarks/render.py`. -->

Benchmarks, not tests: each program measures pycdr next to a peer (another
implementation doing the same work) and a floor (the least work that can do it), in
the same run, and prints its tables with the ratios; none asserts anything about its
figures (tests/test_bench_*.py only check that they run and what they move).

Setup (in the project's venv) and a run of every benchmark as recorded here:

    .venv/bin/pip install -e '.[test,bench]'
    .venv/bin/python benchmarks/run_all.py          # every FULL_RUN below, then render.py

One benchmark: its command below.  `--results` (every bench_*.py has it) writes
benchmarks/results/<name>.json; `python benchmarks/render.py` then rewrites this file
from those files (`--check`: exit 1 when this file is not what it would write, which CI
runs).  The tables below are only ever those files' figures; a benchmark without one
says "no results recorded".  `pycdr bench marshal|ttcp|param [--tls]` runs the same code
from a checkout, with `--plot DIR` for PNG plots (the `bench` extra).
"""

READING = """\
## Reading the figures

- **Peer**: another implementation doing the same work in the same run (omniORBpy,
  omniORB C++, pycdr2, tshark's built-in dissector, an omniORBpy client).  A ratio
  `pycdr/peer` above 1x in a throughput column means pycdr is faster; in a time or
  CPU column, that pycdr takes longer.  Each table's columns say which.
- **Floor**: the least work that can give the same result (a byte copy, a plain
  socket stream carrying the same bytes, a reader that only frames the messages, a
  plain-socket replay).  No implementation can beat it, so its ratio says how much of
  a figure is the code under test and how much is the machine.
- **Same run, interleaved**: the contenders of one point are timed in turn, again and
  again, each keeping its best (or median, as stated).  A shared machine's speed drifts
  by tens of percent over seconds; interleaving puts the drift on every contender alike,
  so ratios hold where absolute figures move.  Compare ratios between machines, not
  absolute figures.
- **CPU per call or message** (read from each process's own accounting, `/proc/<pid>/stat`
  for servers) moves far less with other load than calls/s does: it is the figure to
  compare servers by on a shared machine.  A clock tick is 10 ms, so CPU figures need
  enough calls to resolve.
- **Heap trimming**: from 128 KB messages on, whether glibc gives a freed heap top back
  to the system (and the next message faults its pages in again) depends on what else
  sits at the top of the heap, and can differ between two starts of the same server.
  The benchmarks leave glibc's defaults alone (the figures of a default deployment); to
  compare two builds of the ORB, set `MALLOC_TRIM_THRESHOLD_=67108864
  MALLOC_MMAP_THRESHOLD_=67108864` in the environment.
- **Paths**: `codec` is `c` when pycdr's C extension runs the marshaling plans,
  `python` with `PYCDR_PURE=1`; `loop` is the event loop of the reference ORB's asyncio
  peers (uvloop when installed, asyncio with `PYCDR_LOOP=asyncio`).
- **Smoke runs** (`--quick` and the like) only prove a benchmark runs; their figures
  are not results and are marked as such.
"""


def benchmark_names() -> list[str]:
    return sorted(os.path.basename(p)[len("bench_"):-len(".py")]
                  for p in glob.glob(os.path.join(HERE, "bench_*.py")))


def module_facts(name: str) -> tuple[str, str]:
    """(the module's docstring, its FULL_RUN command), read without importing it."""
    path = os.path.join(HERE, f"bench_{name}.py")
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    doc = ast.get_docstring(tree) or ""
    full = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "FULL_RUN"
                                                for t in node.targets):
            full = ast.literal_eval(node.value)
    if not full:
        raise SystemExit(f"render: benchmarks/bench_{name}.py has no FULL_RUN command")
    return doc, full


def load(name: str) -> dict | None:
    path = results_format.default_path(name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        rec = json.load(f)
    problems = results_format.check(rec)
    if problems or rec["benchmark"] != name:
        raise SystemExit(f"render: {os.path.relpath(path, HERE)}: "
                         + "; ".join(problems or [f"benchmark {rec['benchmark']!r}"]))
    return rec


def cell(value, is_ratio: bool) -> str:
    """A figure as the results file holds it (the benchmark rounded it), ratios with an x."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        if is_ratio:
            return f"{value:.2f}x" if abs(value) >= 0.1 or value == 0 else f"{value:.2g}x"
        return f"{value:,}"
    return str(value).replace("|", "\\|")


def markdown_table(t: dict) -> list[str]:
    columns = t["columns"]
    ratios = [c.endswith(results_format.RATIO) for c in columns]
    heads = [c[:-1].rstrip() + " (x)" if r else c for c, r in zip(columns, ratios)]
    numeric = [all(row[i] is None or isinstance(row[i], (int, float)) for row in t["rows"])
               for i in range(len(columns))]
    lines = [f"**{t['title']}**", "", "| " + " | ".join(heads) + " |",
             "|" + "|".join("--:" if n else "---" for n in numeric) + "|"]
    for row in t["rows"]:
        lines.append("| " + " | ".join(cell(v, r) for v, r in zip(row, ratios)) + " |")
    return lines + [""]


def describe_run(rec: dict) -> list[str]:
    m = rec["machine"]
    ram = f", {m['ram_gb']:g} GB RAM" if m.get("ram_gb") else ""
    commit = f"`{rec['commit']}`" + (" (with uncommitted changes)" if rec["dirty"] else "")
    path = ", ".join(f"{k} {v}" for k, v in rec["path"].items()).rstrip(".")
    settings = ", ".join(f"{k} {v}" for k, v in rec["settings"].items()).rstrip(".")
    lines = [f"Measured {rec['date']} on commit {commit}: {m['cpu']}, {m['cores']} cores"
             f"{ram}, {m['os']}, {m['python']}.",
             "", f"Command: `{rec['command']}`"]
    if path:
        lines += ["", f"Paths: {path}."]
    if settings:
        lines += ["", f"Settings: {settings}."]
    if rec["quick"]:
        lines += ["", "**A smoke run: these figures only show that the benchmark runs; "
                      "they are not results.**"]
    return lines + [""]


def section(name: str) -> list[str]:
    doc, full = module_facts(name)
    lines = [f"## {name}: `bench_{name}.py`", "", doc, ""]
    rec = load(name)
    if rec is None:
        return lines + [f"No results recorded; run: `{full}`", ""]
    lines += ["Reproduce:", "", f"    {full}", ""] + describe_run(rec)
    for t in rec["tables"]:
        lines += markdown_table(t)
    lines += [f"- {note}" for note in rec["notes"]]
    return lines + ([""] if rec["notes"] else [])


def render() -> str:
    names = benchmark_names()
    lines = [intro(), "Benchmarks: " + ", ".join(f"[{n}](#{n}-bench_{n}py)" for n in names)
             + ".", "", READING]
    for name in names:
        lines += section(name)
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if README.md differs from what would be written")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        try:
            with open(README) as f:
                current = f.read()
        except OSError:
            current = ""
        if current != text:
            print("benchmarks/README.md is not what benchmarks/render.py writes from the "
                  "docstrings and results: run `python benchmarks/render.py`", file=sys.stderr)
            return 1
        return 0
    with open(README, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
