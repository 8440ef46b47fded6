"""`pycdr monitor --engine dask`: 2 workers against 1 on 8 files, in one run.

    .venv/bin/python benchmarks/bench_monitor_dask.py CAPTURE [CAPTURE2 ...] [--files 8]

The captures are used in turn as ``--files`` files (links in a temporary directory, so
each has a name of its own, as distinct files would).  For each worker count (``--workers
1 2``) a LocalCluster of that many processes (one thread each, on 127.0.0.1) is started
and warmed (pycdr imported on every worker), then
:func:`pycdr.capture.dask_monitor.monitor_files` runs on the files into a fresh Parquet
directory, timed (wall seconds: the cluster's start is not in it).  One process
(``pycdr monitor FILES --parquet DIR``) runs too, as the reference (its wall time holds
the interpreter's start, half a second: compare it with the workers' on large files).

It prints the throughput of each (MB of capture a second), the ratio of the most
workers to one worker (issue 43's target: 2 workers >= 1.6x one worker on 8 files; it
needs 2 free cores), and whether every run's table equals one process's row for row
once sorted.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYCDR = [sys.executable, "-c", "from pycdr.cli.main import main; main()"]
TARGET_RATIO = 1.6
# The run benchmarks/README.md's table comes from, 8 files of the ~80 MB capture
# bench_pcap.py uses: about 3 minutes on 2 cores.
FULL_RUN = "python benchmarks/bench_monitor_dask.py /tmp/pycdr-bench/load.pcapng --results"


def table(directory) -> list:
    """The rows under a Parquet directory, sorted (every column: a total order)."""
    import pyarrow.dataset as ds
    t = ds.dataset(str(directory), format="parquet", partitioning="hive").to_table()
    t = t.drop_columns([c for c in ("date", "hour") if c in t.column_names])
    # Timestamps as their nanoseconds: a pcapng's are finer than a datetime holds.
    import pyarrow as pa
    for i, field in enumerate(t.schema):
        if pa.types.is_timestamp(field.type):
            t = t.set_column(i, field.name, t.column(i).cast(pa.int64()))
    return sorted(t.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _warm() -> None:
    import pycdr.capture.dask_monitor  # noqa: F401 (imported once, before the timing)


def dask_run(files, directory, workers: int, repeat: int = 1) -> dict:
    """The best wall time of ``repeat`` runs on a LocalCluster of ``workers``."""
    from distributed import Client, LocalCluster

    from pycdr.capture.dask_monitor import monitor_files
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           host="127.0.0.1", scheduler_port=0, dashboard_address=None,
                           silence_logs=logging.ERROR)
    try:
        with Client(cluster) as client:
            client.run(_warm)
            best = None
            for _ in range(repeat):
                start = time.perf_counter()
                run = monitor_files(client, files, directory)
                wall = time.perf_counter() - start
                if run.failures:
                    raise RuntimeError("; ".join(run.failures))
                best = wall if best is None else min(best, wall)
            return {"wall": best, "rows": run.rows, "tasks": run.tasks}
    finally:
        cluster.close()


def one_process(files, directory, repeat: int = 1) -> dict:
    best = None
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(PYCDR + ["monitor"] + list(files) + ["--parquet", directory],
                              capture_output=True, text=True)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(f"pycdr monitor exited {done.returncode}: {done.stderr}")
        best = wall if best is None else min(best, wall)
    return {"wall": best}


def run(captures, files: int = 8, workers=(1, 2), repeat: int = 1) -> dict:
    with tempfile.TemporaryDirectory() as scratch:
        made = []
        for i in range(files):
            source = os.path.abspath(captures[i % len(captures)])
            link = os.path.join(scratch, f"{i:02d}-{os.path.basename(source)}")
            os.symlink(source, link)
            made.append(link)
        size = sum(os.path.getsize(p) for p in made)
        for path in set(map(os.path.realpath, made)):      # into the page cache
            with open(path, "rb") as f:
                while f.read(1 << 24):
                    pass
        print(f"  one process on {files} files ...", file=sys.stderr, flush=True)
        reference_dir = os.path.join(scratch, "one")
        results = {"files": files, "bytes": size, "repeat": repeat,
                   "one_process": one_process(made, reference_dir, repeat), "dask": {}}
        reference = table(reference_dir)
        for n in workers:
            print(f"  {n} worker{'s' if n > 1 else ''} ...", file=sys.stderr, flush=True)
            out = os.path.join(scratch, f"dask-{n}")
            one = dask_run(made, out, n, repeat)
            one["identical"] = table(out) == reference
            results["dask"][n] = one
    return results


def format_table(results) -> str:
    mb = results["bytes"] / 1e6
    lines = [f"{results['files']} files, {mb:.1f} MB; best of {results['repeat']}",
             f"{'':16} {'wall s':>8} {'MB/s':>8}  identical to one process"]
    wall = results["one_process"]["wall"]
    lines.append(f"{'one process':16} {wall:8.2f} {mb / wall:8.1f}")
    dask = results["dask"]
    for n, one in dask.items():
        lines.append(f"{f'dask {n} worker' + ('s' if n > 1 else ''):16} {one['wall']:8.2f} "
                     f"{mb / one['wall']:8.1f}  {'yes' if one['identical'] else 'NO'}")
    if len(dask) > 1 and 1 in dask:
        most = max(dask)
        ratio = dask[1]["wall"] / dask[most]["wall"]
        target = f"  (target >= {TARGET_RATIO}: {'met' if ratio >= TARGET_RATIO else 'NOT met'})" \
            if most == 2 else ""
        lines.append(f"throughput {most} workers / 1 worker: {ratio:.2f}x{target}")
    return "\n".join(lines)


def results_tables(results) -> list:
    """format_table's figures as a results file's table."""
    import results as results_format
    mb = results["bytes"] / 1e6
    one = results["one_process"]["wall"]
    dask = results["dask"]
    x = results_format.RATIO
    rows = [["one process", round(one, 2), round(mb / one, 1), None, None]]
    for n, run in dask.items():
        rows.append([f"dask {n} worker" + ("s" if int(n) > 1 else ""), round(run["wall"], 2),
                     round(mb / run["wall"], 1), run["identical"],
                     results_format.ratio(dask[1]["wall"], run["wall"]) if 1 in dask else None])
    return [results_format.table(
        f"{results['files']} files, {mb:.1f} MB; best of {results['repeat']} (target: 2 "
        f"workers >= {TARGET_RATIO}x one worker)",
        ["run", "wall s", "MB/s", "table identical to one process's",
         f"throughput / 1 worker {x}"], rows)]


def main(argv=None) -> None:
    import results as results_format
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("captures", nargs="+")
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", dest="json_file", help="also write the results here")
    results_format.add_argument(ap)
    args = ap.parse_args(argv)
    results = run(args.captures, args.files, tuple(args.workers), args.repeat)
    print(format_table(results))
    if args.json_file:
        with open(args.json_file, "w") as f:
            json.dump(results, f, indent=1)
    results_format.write(args.results, "monitor_dask", results_format.record(
        "monitor_dask", script=__file__, argv=sys.argv[1:] if argv is None else argv,
        quick=results["bytes"] < 100e6, path={"codec": results_format.codec_path()},
        settings={"files": args.files, "workers": args.workers, "repeat": args.repeat},
        tables=results_tables(results)))


if __name__ == "__main__":
    main()
