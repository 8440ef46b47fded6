"""`pycdr monitor` against `pycdr pcap --json` and the floor, in one run.

    .venv/bin/python benchmarks/bench_monitor.py CAPTURE [CAPTURE2 ...] [--repeat 3]

Each contender runs as its own process on each capture, output to /dev/null (Parquet to
a temporary directory), file in page cache; the numbers are bench_pcap.py's (median wall
and CPU seconds, peak RSS).  Contenders:

- ``ref-frame``: bench_pcap.py's reference reader, framing only: the floor;
- ``pcap-json``: ``pycdr pcap --json``;
- ``monitor-json``, ``monitor-text``, ``monitor-parquet``, ``monitor-idl``:
  ``pycdr monitor`` with ``--json -``, the text form, ``--parquet DIR`` and
  ``--json - --idl FILE``.

It prints, per capture, the table and the ratios the targets are stated in (issue 43):
monitor --json to pcap --json (target <= 1.3, CPU) and to the floor; peak RSS of
monitor --json (target <= 100 MB); and, given several captures (e.g. 80 MB and 1 GB),
how much that peak varies between them (target: within 10 %).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def _bench_pcap():
    spec = importlib.util.spec_from_file_location("bench_pcap", os.path.join(HERE,
                                                                          "bench_pcap.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench_pcap = _bench_pcap()
PYCDR = [sys.executable, "-c", "from pycdr.cli.main import main; main()"]
TARGET_PCAP_RATIO = 1.3
TARGET_RSS_MB = 100
TARGET_FLAT = 0.10
# The flatness target is stated from 80 MB up: a tiny capture's peak is the
# interpreter's alone and says nothing of how memory grows with the input.
FLAT_FROM = 50e6
# The run benchmarks/README.md's table comes from, on the ~85 MB capture bench_pcap.py
# uses and a small real one, median of 3, and monitor --json alone once on the ~1.1 GB
# one for its peak RSS: about 4 minutes on 2 cores.
FULL_RUN = ("python benchmarks/bench_monitor.py /tmp/pycdr-bench/load.pcapng "
            "captures/real/omniorbpy-to-pycdr-giop12.pcap "
            "--large /tmp/pycdr-bench/big.pcapng --results")


def contenders(capture, idl, scratch):
    monitor = PYCDR + ["monitor", "--sensor", "bench"]
    return [("ref-frame", [sys.executable, os.path.join(HERE, "bench_pcap.py"), "--reference",
                           "frame", capture]),
            ("pcap-json", PYCDR + ["pcap", "--no-progress", "--json", capture]),
            ("monitor-json", monitor + ["--json", "-", capture]),
            ("monitor-text", monitor + [capture]),
            ("monitor-parquet", monitor + ["--parquet", os.path.join(scratch, "calls"),
                                           capture]),
            ("monitor-idl", monitor + ["--json", "-", "--idl", idl, capture])]


def run(captures, repeat=3, idl=bench_pcap.ECHO_IDL, only=None, large=()) -> dict:
    """Every contender on each of ``captures``; on each of ``large``, monitor --json alone,
    once (a gigabyte's worth of every contender, three times, takes the best part of an
    hour; its peak RSS against the smaller captures' is what the large one is for)."""
    results = []
    for capture in list(captures) + list(large):
        if capture in large:
            only, repeat = {"monitor-json"}, 1
        with open(capture, "rb") as f:           # into the page cache
            while f.read(1 << 24):
                pass
        rows = {}
        with tempfile.TemporaryDirectory() as scratch:
            for name, argv in contenders(capture, idl, scratch):
                if only and name not in only:
                    continue
                print(f"  {os.path.basename(capture)}: {name} ...", file=sys.stderr,
                      flush=True)
                rows[name] = bench_pcap.measure(argv, repeat)
                shutil.rmtree(os.path.join(scratch, "calls"), ignore_errors=True)
        results.append({"capture": capture, "size": os.path.getsize(capture),
                        "repeat": repeat, "rows": rows})
    return {"captures": results}


def format_table(results) -> str:
    lines = []
    for one in results["captures"]:
        rows = one["rows"]
        lines.append(f"{one['capture']}: {one['size'] / 1e6:.1f} MB; median of "
                     f"{one['repeat']}")
        lines.append(f"{'':16} {'wall s':>8} {'cpu s':>8} {'peak MB':>8}")
        for name, (wall, rss, cpu) in rows.items():
            lines.append(f"{name:16} {wall:8.2f} {cpu:8.2f} {rss:8.0f}")
        for a, b, text, target in (
                ("monitor-json", "pcap-json", "monitor --json / pcap --json",
                 TARGET_PCAP_RATIO),
                ("monitor-json", "ref-frame", "monitor --json / floor", None),
                ("monitor-parquet", "monitor-json", "monitor --parquet / --json", None),
                ("monitor-idl", "monitor-json", "monitor --idl / --json", None)):
            if a in rows and b in rows:
                wall, cpu = rows[a][0] / rows[b][0], rows[a][2] / rows[b][2]
                verdict = "" if target is None else \
                    f"  (target <= {target} cpu: {'met' if cpu <= target else 'NOT met'})"
                lines.append(f"{text:32} wall {wall:5.2f}x  cpu {cpu:5.2f}x{verdict}")
        if "monitor-json" in rows:
            rss = rows["monitor-json"][1]
            lines.append(f"{'monitor --json peak RSS':32} {rss:.0f} MB  (target <= "
                         f"{TARGET_RSS_MB}: {'met' if rss <= TARGET_RSS_MB else 'NOT met'})")
        lines.append("")
    peaks = [one["rows"]["monitor-json"][1] for one in results["captures"]
             if "monitor-json" in one["rows"] and one["size"] >= FLAT_FROM]
    if len(peaks) > 1:
        spread = max(peaks) / min(peaks) - 1
        lines.append(f"monitor --json peak RSS across captures: {min(peaks):.0f} to "
                     f"{max(peaks):.0f} MB, {spread:.1%} apart (target within "
                     f"{TARGET_FLAT:.0%}: {'met' if spread <= TARGET_FLAT else 'NOT met'})")
    return "\n".join(lines)


def results_tables(results) -> list:
    """format_table's figures as a results file's tables: one per capture."""
    import results as results_format
    x = results_format.RATIO
    ratio = results_format.ratio
    tables = []
    for one in results["captures"]:
        rows = one["rows"]
        table_rows = [[name, round(wall, 2), round(cpu, 2), round(rss), None, None, None]
                      for name, (wall, rss, cpu) in rows.items()]
        for a, b, text, target in (
                ("monitor-json", "pcap-json", "monitor --json / pcap --json",
                 f"CPU <= {TARGET_PCAP_RATIO}"),
                ("monitor-json", "ref-frame", "monitor --json / floor", None),
                ("monitor-parquet", "monitor-json", "monitor --parquet / --json", None),
                ("monitor-idl", "monitor-json", "monitor --idl / --json", None)):
            if a in rows and b in rows:
                table_rows.append([text, None, None, None, ratio(rows[a][0], rows[b][0]),
                                   ratio(rows[a][2], rows[b][2]), target])
        tables.append(results_format.table(
            f"{os.path.basename(one['capture'])}: {one['size'] / 1e6:.1f} MB; median of "
            f"{one['repeat']} (monitor --json peak RSS target <= {TARGET_RSS_MB} MB)",
            ["contender or ratio", "wall s", "CPU s", "peak MB", f"wall {x}", f"CPU {x}",
             "target"], table_rows))
    peaks = [(one, one["rows"]["monitor-json"][1]) for one in results["captures"]
             if "monitor-json" in one["rows"] and one["size"] >= FLAT_FROM]
    if len(peaks) > 1:
        low = min(peak for _one, peak in peaks)
        tables.append(results_format.table(
            f"monitor --json peak RSS by capture size, captures from {FLAT_FROM / 1e6:.0f} MB "
            f"(target: within {TARGET_FLAT:.0%} of each other)",
            ["capture", "MB", "peak RSS MB", f"to the smallest peak {x}"],
            [[os.path.basename(one["capture"]), round(one["size"] / 1e6, 1), round(peak),
              ratio(peak, low)] for one, peak in peaks]))
    return tables


def main(argv=None) -> None:
    import results as results_format
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("captures", nargs="+")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--idl", default=bench_pcap.ECHO_IDL)
    ap.add_argument("--only", help="comma-separated contenders")
    ap.add_argument("--large", nargs="+", default=[], metavar="CAPTURE",
                    help="captures to run monitor --json alone on, once (peak RSS)")
    ap.add_argument("--json", dest="json_file", help="also write the results here")
    results_format.add_argument(ap)
    args = ap.parse_args(argv)
    results = run(args.captures, args.repeat, args.idl,
                  set(args.only.split(",")) if args.only else None, args.large)
    print(format_table(results))
    if args.json_file:
        with open(args.json_file, "w") as f:
            json.dump(results, f, indent=1)
    largest = max(one["size"] for one in results["captures"])
    results_format.write(args.results, "monitor", results_format.record(
        "monitor", script=__file__, argv=sys.argv[1:] if argv is None else argv,
        quick=largest < 50e6, path={"codec": results_format.codec_path()},
        settings={"captures_mb": [round(one["size"] / 1e6, 1) for one in results["captures"]],
                  "repeat": args.repeat, "large_repeat": 1},
        tables=results_tables(results)))


if __name__ == "__main__":
    main()
