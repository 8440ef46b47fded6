"""``pycdr monitor --engine dask``: capture files as tasks on Dask's distributed
scheduler, each writing its own Parquet parts; the table is the one one process writes.

    with Client(LocalCluster(n_workers=2, threads_per_worker=1)) as client:
        run = monitor_files(client, ["a.pcap", "b.pcap"], "calls/")

A task is a file, or, for a file above ``shard_size`` bytes, a connection shard of it
(:class:`pycdr.capture.monitor.CaptureCalls`'s ``shard=(k, n)``: every shard reads the
whole file and decodes the connections whose index is k modulo n).  A task writes its
rows through a :class:`pycdr.calls.output.ParquetDirectory` whose prefix is made of the
file (its absolute path, hashed) and the shard (``part-<file>-all-000000.parquet``,
``part-<file>-2of4-000000.parquet``): the same rows give the same files, so a task run
again (a retry after its worker died, the command run again) replaces its parts and
never adds rows; at the end, parts of the file that the final tasks did not write (an
earlier run's shards, a dead worker's temporary files) are removed.

One process shares two things between connections and files that separate tasks do
not: the interfaces learned from the traffic (``interfaces``: a reference seen in one
file names the interface of a key called in another), and, within a file, the table of
requests waiting for a reply (bounded by count and age over all connections).  Each
task reports what it learned, which keys it looked up without having learned them, how
many requests it held at most and how long it held one; the driver then runs again, as
one process would, what these show could differ:

- a sharded file whose shards looked up keys another shard learned, or whose shards
  together held ``max_pending`` requests, or held one past ``max_age_ns`` (one process
  may have let it go): the file again as one task;
- a file that looked up a key an earlier file learned: that file and the ones after it
  in one task, in order, seeded with what the files before them learned.

So the rows (sorted: the order of the tasks is the scheduler's) are one process's.
"""

from __future__ import annotations

import glob
import hashlib
import os
import time
from collections import OrderedDict
from functools import lru_cache

from ..calls.output import ParquetDirectory
from ..calls.tracker import MAX_AGE_NS, MAX_INTERFACES, MAX_PENDING, CallCounts
from ..errors import PycdrError
from .monitor import CaptureCalls
from .read import CaptureReader

# Files above this size are split into connection shards (one task each).
SHARD_SIZE = 256 * 1024 * 1024
MAX_SHARDS = 64


def shard_count(size: int, shard_size: int = SHARD_SIZE) -> int:
    """The tasks a file of ``size`` bytes becomes: 1 up to ``shard_size``, then one a
    ``shard_size`` started, at most MAX_SHARDS."""
    return max(1, min(MAX_SHARDS, -(-size // shard_size)))


def file_id(path: str) -> str:
    """The file's part of its part names: its absolute path, hashed."""
    return hashlib.sha256(os.path.abspath(path).encode("utf-8", "surrogateescape")
                          ).hexdigest()[:16]


def part_prefix(path: str, shard: tuple | None) -> str:
    return f"{file_id(path)}-{'all' if shard is None else f'{shard[0]}of{shard[1]}'}"


def task_name(label: str, shard: tuple | None) -> str:
    """How messages name a task: the file, and its shard."""
    return label if shard is None else \
        f"{label} (connections {shard[0]} modulo {shard[1]})"


class _Interfaces(OrderedDict):
    """The tracker's object key -> repository id map, noting the keys this task
    learned and those it looked up before learning them itself."""

    def __init__(self, seed=()):
        super().__init__()
        self.learned: set = set()
        self.asked: set = set()
        for key, value in dict(seed).items():
            OrderedDict.__setitem__(self, key, value)

    def get(self, key, default=None):
        if key not in self.learned:
            self.asked.add(key)
        return OrderedDict.get(self, key, default)

    def __setitem__(self, key, value):
        self.learned.add(key)
        OrderedDict.__setitem__(self, key, value)

    def learned_items(self) -> list:
        """What this task learned, oldest first (as the map holds it)."""
        return [(k, v) for k, v in self.items() if k in self.learned]


def _bodies(idl_paths) -> object:
    """The CallBodies of the IDL files, loaded once a worker (again when one changed:
    a cluster outlives a command)."""
    if not idl_paths:
        return None
    return _loaded_bodies(tuple((p, os.stat(p).st_mtime_ns) for p in idl_paths))


@lru_cache(maxsize=8)
def _loaded_bodies(files: tuple):
    from .. import idl
    from ..calls.bodies import CallBodies
    return CallBodies([idl.load(p, register=False) for p, _ in files])


def run_task(path: str, shard: tuple | None, directory: str, options: dict,
             label: str | None = None, interfaces=None) -> dict:
    """The calls of the capture at ``path`` (its connections k modulo n with ``shard``)
    as Parquet parts under ``directory``; ``label``: the ``capture_file`` column (default
    ``path``); ``options``: ``ports``, ``idl`` (paths), ``interfaces`` (the seed map),
    ``sensor``, ``max_pending``, ``max_age_ns``.  Returns the task's report (a dict of
    plain values: it travels back from a worker).  Runs anywhere (no Dask in it): a
    Dask worker runs it, and so do the tests and the one-task fallback."""
    label = path if label is None else label
    if interfaces is None:
        interfaces = _Interfaces(options.get("interfaces") or ())
    out = ParquetDirectory(directory, prefix=part_prefix(path, shard))
    counts = CallCounts()
    longest = [0]
    error = None
    try:
        try:
            bodies = _bodies(options.get("idl"))
        except OSError as e:
            raise PycdrError(f"{e.filename}: cannot read ({e.strerror})") from None
        calls = CaptureCalls(None, ports=options.get("ports"), bodies=bodies,
                             sensor=options.get("sensor"), capture_file=label,
                             max_pending=options.get("max_pending", MAX_PENDING),
                             max_age_ns=options.get("max_age_ns", MAX_AGE_NS),
                             interfaces=interfaces, shard=shard, counts=counts)

        def emit(row, add=out.add):
            # How long a request was held waiting: to its reply, else to now (the
            # segment being read when it was let go).
            if row["message_type"] in ("Request", "LocateRequest") and \
                    row["outcome"] != "oneway":
                end = row["reply_ts"]
                held = (calls._ts if end is None else end) - row["ts"]
                if held > longest[0]:
                    longest[0] = held
            add(row)
        calls.tracker.emit = emit
        feed = calls.feed
        try:
            reader = CaptureReader(path)
        except OSError as e:
            raise PycdrError(f"{label}: cannot read ({e.strerror or e})") from None
        with reader:
            try:
                for segment in reader:
                    feed(segment)
            finally:
                calls.finish()          # the rows read so far, even of a damaged file
    except PycdrError as e:
        error = str(e).replace(path, label) if path != label else str(e)
        if label not in error:
            error = f"{label}: {error}"
    except OSError as e:                # (reading the capture, or writing a part)
        error = f"{label}: {e.strerror or e}"
    finally:
        try:
            out.close()
        except OSError as e:
            error = error or f"{label}: cannot write its Parquet parts under " \
                             f"{directory} ({e.strerror or e})"
    return {"path": path, "label": label, "shard": shard, "rows": out.rows_written,
            "parts": [os.path.relpath(p, directory) for p in out.written],
            "counts": counts.to_json(), "learned": interfaces.learned_items(),
            "asked": sorted(interfaces.asked), "longest_wait_ns": longest[0],
            "error": error}


def run_chain(paths: list, labels: list, directory: str, options: dict,
              seed: list) -> list:
    """Files one after the other sharing the interfaces learned, as one process reads
    them (``seed``: the (key, repository id) pairs learned before the first, in order,
    after the options' own); their reports."""
    interfaces = _Interfaces(options.get("interfaces") or ())
    for key, value in seed:
        OrderedDict.__setitem__(interfaces, key, value)
        interfaces.move_to_end(key)
    return [run_task(p, None, directory, options, label=lab, interfaces=interfaces)
            for p, lab in zip(paths, labels)]


class MonitorRun:
    """What :func:`monitor_files` did: the final report of each task, in file order,
    the tasks' failures (one line each), and how many tasks ran (reruns counted)."""

    def __init__(self):
        self.reports: list = []
        self.failures: list = []
        self.tasks = 0
        self.shards = 0             # files that ran as several connection shards
        self.reruns = 0
        self.seconds = 0.0

    @property
    def rows(self) -> int:
        return sum(r["rows"] for r in self.reports)

    @property
    def parts(self) -> int:
        return sum(len(r["parts"]) for r in self.reports)

    def counts(self) -> CallCounts:
        """The tasks' counts together (the most requests waiting: one task's most)."""
        total = CallCounts()
        for r in self.reports:
            c = r["counts"]
            total.rows += c["rows"]
            total.evicted += c["evicted"]
            total.connections += c["connections"]
            total.pending_peak = max(total.pending_peak, c["pending_peak"])
            for outcome, n in c["outcomes"].items():
                total.outcomes[outcome] = total.outcomes.get(outcome, 0) + n
        return total


def monitor_files(client, files: list, directory: str, *, options: dict | None = None,
                  shard_size: int = SHARD_SIZE) -> MonitorRun:
    """``pycdr monitor FILES --parquet DIR`` on the Dask ``client``'s cluster (see the
    module doc).  ``files``: paths as the user gave them (the ``capture_file`` column);
    the workers open them by absolute path (a shared file system beyond one machine)."""
    options = dict(options or {})
    options["idl"] = [os.path.abspath(p) for p in options.get("idl") or ()]
    max_pending = options.get("max_pending", MAX_PENDING)
    max_age_ns = options.get("max_age_ns", MAX_AGE_NS)
    directory = os.path.abspath(directory)
    os.makedirs(directory, exist_ok=True)
    run = MonitorRun()
    started = time.monotonic()
    paths = [os.path.abspath(f) for f in files]
    plans = []
    for path in paths:
        try:
            size = os.path.getsize(path)
        except OSError:
            size = 0            # (the task says it cannot be read)
        n = shard_count(size, shard_size)
        plans.append([None] if n == 1 else [(k, n) for k in range(n)])
    run.shards = sum(len(p) > 1 for p in plans)

    def submit(function, *args, key):
        run.tasks += 1
        return client.submit(function, *args, key=f"pycdr-monitor-{key}-{run.tasks}",
                             pure=False)

    def results(futures: list) -> list:
        """Each future's report (a list of them for a chain), or a _Failed."""
        out = []
        for future, names in futures:
            try:
                out.append(future.result())
            except Exception as e:      # the worker died (KilledWorker), or a bug
                what = "the worker running it died" if type(e).__name__ == "KilledWorker" \
                    else f"the task failed ({type(e).__name__}: {e})"
                out.append(_Failed(f"{names}: {what}"))
        return out

    # Round 1: every file, or its shards.
    futures = []
    for i, shards in enumerate(plans):
        for shard in shards:
            futures.append((submit(run_task, paths[i], shard, directory, options, files[i],
                                   key=part_prefix(paths[i], shard)),
                            task_name(files[i], shard)))
    flat = results(futures)
    by_file, at = [], 0
    for shards in plans:
        by_file.append(flat[at:at + len(shards)])
        at += len(shards)

    # Round 2: the sharded files whose shards could differ from the file read whole.
    again = [i for i, reports in enumerate(by_file)
             if len(reports) > 1 and not _failed(reports) and
             not _shards_agree(reports, max_pending, max_age_ns)]
    if again:
        run.reruns += len(again)
        redone = results([(submit(run_task, paths[i], None, directory, options, files[i],
                                  key=part_prefix(paths[i], None)), files[i])
                          for i in again])
        for i, report in zip(again, redone):
            by_file[i] = [report]

    # Round 3: from the first file that looked up what an earlier one learned (or an
    # earlier sharded file learned something whose order between shards is lost), the
    # files in one task, in order.
    first = _first_dependent(by_file, len(options.get("interfaces") or ()))
    if first is not None:
        seed = [item for reports in by_file[:first] if not _failed(reports)
                for r in reports for item in r["learned"]]
        run.reruns += len(files) - first
        chained = results([(submit(run_chain, paths[first:], files[first:], directory,
                                   options, seed, key=f"chain-{file_id(paths[first])}"),
                            ", ".join(files[first:]))])[0]
        for offset in range(len(files) - first):
            by_file[first + offset] = [chained if isinstance(chained, _Failed)
                                       else chained[offset]]

    for i, reports in enumerate(by_file):
        final = [r for r in reports if not isinstance(r, _Failed)]
        run.reports += final
        for r in reports:       # (the shards of a damaged file: one line)
            error = r.text if isinstance(r, _Failed) else r["error"]
            if error is not None and error not in run.failures:
                run.failures.append(error)
        if len(final) == len(reports):
            _remove_others(directory, paths[i], {p for r in final for p in r["parts"]})
    run.seconds = time.monotonic() - started
    return run


class _Failed:
    """A task that returned no report: why, as its line says it."""
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


def _failed(reports: list) -> bool:
    return any(isinstance(r, _Failed) for r in reports)


def _shards_agree(reports: list, max_pending: int, max_age_ns: int) -> bool:
    """Whether the shards of one file hold the rows the whole file read in one task
    gives: no interface learned by one shard and looked up by another, and no request
    that one process's pending table could have let go (the shards' peaks together
    below its count, no request held past its age, none evicted)."""
    if sum(r["counts"]["pending_peak"] for r in reports) >= max_pending or \
            any(r["counts"]["evicted"] or r["longest_wait_ns"] > max_age_ns
                for r in reports):
        return False
    for r in reports:
        asked = set(r["asked"])
        if any(key in asked for other in reports if other is not r
               for key, _ in other["learned"]):
            return False
    return True


def _first_dependent(by_file: list, seeded: int) -> int | None:
    """The first file whose rows may depend on interfaces earlier files learned."""
    learned: set = set()
    total = seeded
    sharded_learned = None
    for i, reports in enumerate(by_file):
        if _failed(reports):
            continue
        asked = set().union(*(r["asked"] for r in reports))
        if asked & learned:
            return i if sharded_learned is None else sharded_learned
        for r in reports:
            learned.update(k for k, _ in r["learned"])
            total += len(r["learned"])
        if total > MAX_INTERFACES:          # one process's map would have let some go
            return 0
        if len(reports) > 1 and any(r["learned"] for r in reports) and \
                sharded_learned is None:
            sharded_learned = i
    return None


def _remove_others(directory: str, path: str, keep: set) -> None:
    """The file's parts (and temporary files) that its final tasks did not write."""
    fid = file_id(path)
    for pattern in (f"part-{fid}-*.parquet", f".part-{fid}-*.parquet.tmp"):
        for found in glob.glob(os.path.join(directory, "date=*", "hour=*", pattern)):
            if os.path.relpath(found, directory) not in keep:
                try:
                    os.remove(found)
                except FileNotFoundError:
                    pass
