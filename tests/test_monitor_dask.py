"""pycdr monitor --engine dask: capture files and connection shards as tasks on a Dask
LocalCluster (2 workers on 127.0.0.1, one for the module), the Parquet table equal to
one process's row for row, retried tasks adding no rows, failures one line each, and
the DuckDB queries of docs/monitor.md run on the table."""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import subprocess

import pytest
from click.testing import CliRunner

from pycdr.addressing.iiop import IIOPProfile, make_ior
from pycdr.capture.dask_monitor import monitor_files, run_task
from pycdr.capture.monitor import iter_calls
from pycdr.capture.write import TcpSession, write_pcap
from pycdr.cli.main import main
from pycdr.codec.cdr import CDRWriter
from pycdr.giop.messages import ReplyStatus

from test_monitor import CAPTURES, HERE, PYCDR, ROOT, _shared_names_capture, reply, request

distributed = pytest.importorskip("distributed")
pa_dataset = pytest.importorskip("pyarrow.dataset")

LABEL = "IDL:Demo/Label:1.0"
STORE = "IDL:Demo/Store:1.0"


def _system_exception(name: str, minor: int) -> bytes:
    w = CDRWriter()
    w.write_string(f"IDL:omg.org/CORBA/{name}:1.0")
    w.write_ulong(minor)
    w.write_ulong(1)                    # COMPLETED_NO
    return w.getvalue()


def _forward(rid, key, repo_id):
    return reply(rid, status=ReplyStatus.LOCATION_FORWARD,
                 forward=make_ior(repo_id, [IIOPProfile((1, 2), "10.0.0.2", 2809, key)]))


def _write(path, build):
    packets = []
    build(packets)
    write_pcap(str(path), packets)
    return str(path)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Three small captures with known calls, and messages.pcap: the first forwards to
    the Label (its interface learned), the second calls the Label (on two connections,
    with failures), the third learns the Store on one connection and calls it on
    another (its shards cannot know it: the file runs again as one task)."""
    where = tmp_path_factory.mktemp("captures")

    def forwards(packets):
        s = TcpSession(packets, client_port=41000)
        s.client_sends(request(1, "reading", b"old"))
        s.server_sends(_forward(1, b"l", LABEL))
        s.client_sends(request(2, "reading", b"l"))
        s.time += 0.004
        s.server_sends(reply(2))
        s.close()

    def uses(packets):
        for port, slow in ((42000, 0.002), (42001, 0.009)):
            s = TcpSession(packets, client_port=port)
            s.client_sends(request(1, "reading", b"l"))
            s.time += slow
            s.server_sends(reply(1))
            s.client_sends(request(2, "reset", b"l"))
            s.server_sends(reply(2, status=ReplyStatus.SYSTEM_EXCEPTION,
                                 body=_system_exception("NO_PERMISSION", 0x4F4D0001)))
            s.client_sends(request(3, "reading", b"m"))
            s.server_sends(reply(3))
            s.close()

    def learns_across_connections(packets):
        s = TcpSession(packets, client_port=43000)
        s.client_sends(request(1, "open", b"x"))
        s.server_sends(_forward(1, b"s", STORE))
        s.close()
        for port in (43001, 43002, 43003):
            s = TcpSession(packets, client_port=port)
            s.client_sends(request(7, "put", b"s"))
            s.time += 0.001 * (port - 43000)
            s.server_sends(reply(7))
            s.client_sends(request(8, "get", b"s"))
            s.server_sends(reply(8, status=ReplyStatus.USER_EXCEPTION, body=b""))
            s.close()

    made = [_write(where / "forwards.pcap", forwards), _write(where / "uses.pcap", uses),
            _write(where / "stores.pcap", learns_across_connections)]
    shutil.copy(os.path.join(CAPTURES, "messages.pcap"), where / "messages.pcap")
    return made + [str(where / "messages.pcap")]


@pytest.fixture(scope="module")
def client():
    import dask
    # A task whose worker dies is not tried again (test_a_worker_that_dies_...).
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                           processes=True, host="127.0.0.1",
                                           scheduler_port=0, dashboard_address=None,
                                           silence_logs=logging.ERROR)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def table(directory) -> list:
    """The rows under a Parquet directory, sorted (every column: a total order)."""
    t = pa_dataset.dataset(str(directory), format="parquet", partitioning="hive").to_table()
    t = t.drop_columns([c for c in ("date", "hour") if c in t.column_names])
    return sorted(t.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


def one_process(files, directory) -> list:
    done = subprocess.run(PYCDR + list(files) + ["--parquet", str(directory)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return table(directory)


@pytest.fixture(scope="module")
def reference(files, tmp_path_factory):
    return one_process(files, tmp_path_factory.mktemp("one") / "calls")


@pytest.fixture(scope="module")
def dask_calls(files, client, tmp_path_factory):
    """The command on the module's cluster, the larger files in connection shards."""
    out = tmp_path_factory.mktemp("dask") / "calls"
    done = subprocess.run(PYCDR + ["--engine", "dask", "--scheduler",
                                   client.scheduler.address, "--shard-size", "2000"] +
                          files + ["--parquet", str(out)],
                          capture_output=True, text=True, timeout=120)
    return out, done


def test_the_table_is_one_process_s_row_for_row(dask_calls, reference):
    out, done = dask_calls
    assert done.returncode == 0, done.stderr
    rows = table(out)
    assert rows == reference
    # The learned interfaces crossed files and connections as in one process.
    assert {r["interface"] for r in rows if r["object_key"] == b"l".hex()} == {LABEL}
    assert {r["interface"] for r in rows if r["object_key"] == b"s".hex()} == {STORE}
    said = done.stderr.splitlines()
    assert len(said) == 2 and said[0].startswith(f"{len(rows)} calls (")
    assert said[1].startswith("4 files, ") and "in connection shards" in said[1]
    assert f": {len(rows)} calls in " in said[1] and "run again as one process would" \
        in said[1] and said[1].endswith(f"on the scheduler at {client_address(said[1])}")


def monitor(args):
    """`pycdr monitor ARGS` in this process (the result's exit_code, stdout, stderr)."""
    return CliRunner().invoke(main, ["monitor"] + args)


def client_address(line: str) -> str:
    return line.rsplit("on the scheduler at ", 1)[1]


def test_shards_that_could_differ_run_again_and_files_chain(files, client, tmp_path,
                                                           reference):
    run = monitor_files(client, files, str(tmp_path / "calls"), shard_size=2000)
    assert not run.failures and run.shards >= 2
    # stores.pcap's shards did not know the Store; uses.pcap did not know the Label:
    # from uses.pcap on, the files ran again in order.
    assert run.reruns >= 3
    assert table(tmp_path / "calls") == reference
    names = {os.path.basename(p) for r in run.reports for p in r["parts"]}
    on_disk = {n for _, _, found in os.walk(tmp_path / "calls") for n in found}
    assert on_disk == names           # the shards' parts replaced, nothing left beside


def test_shards_that_agree_are_kept(files, client, tmp_path):
    """messages.pcap's connections share nothing: its shards' rows are the table."""
    run = monitor_files(client, [files[3]], str(tmp_path / "calls"), shard_size=2000)
    n = -(-os.path.getsize(files[3]) // 2000)
    assert n > 2 and (run.shards, run.tasks, run.reruns) == (1, n, 0)
    assert not run.failures
    assert table(tmp_path / "calls") == one_process([files[3]], tmp_path / "one")


def test_a_retried_task_replaces_its_parts(files, tmp_path):
    out = str(tmp_path / "calls")
    first = run_task(files[3], (1, 3), out, {})
    again = run_task(files[3], (1, 3), out, {})
    assert first["parts"] == again["parts"] and first["rows"] == again["rows"] > 0
    rows = table(out)
    assert len(rows) == first["rows"]
    expected = [r for r in iter_calls(files[3]) if r["stream"] % 3 == 1]
    assert len(rows) == len(expected)


def test_the_same_command_again_replaces_its_parts(files, client, tmp_path, reference):
    out = str(tmp_path / "calls")
    monitor_files(client, files, out, shard_size=2000)
    monitor_files(client, files, out)           # no shards this time: theirs removed
    assert table(out) == reference


def test_a_damaged_file_is_one_line_the_others_all_written(files, client, tmp_path):
    data = open(files[3], "rb").read()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[:3000])
    out = tmp_path / "calls"
    done = monitor(["--engine", "dask", "--scheduler", client.scheduler.address, files[0],
                    str(cut), files[1], "--parquet", str(out)])
    assert done.exit_code == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {cut}: frame ")
    assert "Traceback" not in done.stderr
    rows = table(out)
    by_file = {}
    for r in rows:
        by_file[r["capture_file"]] = by_file.get(r["capture_file"], 0) + 1
    assert by_file[files[0]] == len(list(iter_calls(files[0])))
    assert by_file[files[1]] == len(list(iter_calls(files[1])))
    assert by_file[str(cut)] == 10          # what one process writes before the error


def test_a_file_the_workers_cannot_read_is_one_line(files, client, tmp_path):
    gone = tmp_path / "gone.pcap"
    run = monitor_files(client, [files[0], str(gone)], str(tmp_path / "calls"))
    assert run.failures == [f"{gone}: cannot read (No such file or directory)"]
    assert run.rows == len(list(iter_calls(files[0])))
    # On the command line a FILE that does not exist is a usage error (status 2).
    done = monitor(["--engine", "dask", str(gone), "--parquet", str(tmp_path / "x")])
    assert done.exit_code == 2 and "does not exist" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("args, said", [
    (["--engine", "dask"], "--engine dask reads FILEs and writes Parquet only"),
    (["--engine", "dask", "--parquet", "d", "--json", "-"], "writes Parquet only"),
    (["--engine", "dask", "--parquet", "d", "--workers", "2", "--scheduler", "x:1"],
     "--scheduler and --workers: one of them"),
    (["--workers", "2"], "go with --engine dask"),
    (["--engine", "dask", "--parquet", "d", "SAME"], "a FILE is given twice"),
])
def test_usage_errors_are_one_line(files, args, said, tmp_path):
    args = [a if a != "d" else str(tmp_path / "d") for a in args]
    args = [files[0] if a == "SAME" else a for a in args]
    done = monitor([files[0]] + args)
    assert done.exit_code == 2 and said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_the_command_s_own_local_cluster(files, tmp_path, reference):
    """No --scheduler: the command starts 2 worker processes on 127.0.0.1, closes them."""
    out = tmp_path / "calls"
    done = subprocess.run(PYCDR + ["--engine", "dask", "--workers", "2"] + files +
                          ["--parquet", str(out)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1].endswith("on 2 local workers")
    assert table(out) == reference


# -- the queries of docs/monitor.md ----------------------------------------------------

def _queries() -> list:
    with open(os.path.join(ROOT, "docs", "monitor.md")) as f:
        page = f.read()
    return [block.split("```", 1)[0] for block in page.split("```sql\n")[1:]]


def _p99(values):
    values = sorted(values)
    at = 0.99 * (len(values) - 1)
    low = int(at)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (at - low)


def test_the_docs_queries_on_the_dask_table(dask_calls, reference):
    duckdb = pytest.importorskip("duckdb")
    out, done = dask_calls
    assert done.returncode == 0, done.stderr
    p99, errors, slowest = (duckdb.sql(q.replace("calls/", f"{out}/")).fetchall()
                            for q in _queries())
    rows = reference
    # p99 by operation: calls answered, failures, the 99th percentile in ms.
    operations = {r["operation"] for r in rows}
    assert {r[0] for r in p99} == operations
    for operation, answered, failures, p99_ms in p99:
        mine = [r for r in rows if r["operation"] == operation]
        durations = [r["duration_ns"] for r in mine if r["duration_ns"] is not None]
        assert answered == len(durations)
        assert failures == sum(r["outcome"] == "failure" for r in mine)
        if durations:
            assert p99_ms == pytest.approx(_p99(durations) / 1e6)
        else:
            assert p99_ms is None
    # Error rate by interface: of the calls answered, the failures.
    assert [r[0] for r in errors if r[0] != "(unknown)"] and \
        {r[0] for r in errors} >= {LABEL, STORE}
    for interface, answered, failures, error_pct in errors:
        mine = [r for r in rows if (r["interface"] or "(unknown)") == interface and
                r["outcome"] in ("success", "failure")]
        assert answered == len(mine)
        assert failures == sum(r["outcome"] == "failure" for r in mine)
        assert error_pct == pytest.approx(round(100 * failures / answered, 2))
    label = next(r for r in errors if r[0] == LABEL)
    assert label[1:3] == (5, 2)                     # forwards.pcap 1, uses.pcap 2 x 2
    # The slowest calls: the ten longest durations, longest first.
    answered = sorted((r for r in rows if r["duration_ns"] is not None),
                      key=lambda r: (-r["duration_ns"], r["ts"], r["capture_file"],
                                     r["stream"], r["request_id"]))[:10]
    assert [(s[1], s[3], s[4], s[6]) for s in slowest] == \
        [(r["capture_file"], r["interface"], r["operation"], r["duration_ns"] / 1e6)
         for r in answered]
    assert slowest[0][4] == "reading" and slowest[0][1].endswith("uses.pcap")


def test_a_shard_alone_lacks_what_another_connection_taught(files, client, tmp_path):
    """stores.pcap's shards alone do not know the Store: the file runs again whole."""
    n = 2
    alone = [r for k in range(n) for r in
             run_task_rows(files[2], (k, n), tmp_path / f"s{k}")]
    whole = list(iter_calls(files[2]))
    assert {r["interface"] for r in whole if r["object_key"] == b"s".hex()} == {STORE}
    assert None in {r["interface"] for r in alone if r["object_key"] == b"s".hex()}
    run = monitor_files(client, [files[2]], str(tmp_path / "calls"), shard_size=2000)
    assert not run.failures and run.shards == 1 and run.reruns == 1
    assert table(tmp_path / "calls") == one_process([files[2]], tmp_path / "one")


def run_task_rows(path, shard, directory, options=None):
    """The rows one task writes alone."""
    report = run_task(path, shard, str(directory), options or {})
    assert report["error"] is None
    return table(directory)


def test_a_pending_table_one_process_bounds_by_age(files, client, tmp_path):
    """A request held past --max-age: one process lets it go (no_reply, its reply an
    orphan) when another connection's request comes; a shard alone could not, so the
    file runs again whole and the table is still one process's."""
    def overlapping(packets):
        slow = TcpSession(packets, client_port=44000)
        fast = TcpSession(packets, client_port=44001)
        clock = max(slow.time, fast.time)
        for session, send, message, step in (
                (slow, "client_sends", request(1, "slow", b"q"), 0.001),
                (fast, "client_sends", request(1, "fast", b"q"), 0.002),
                (fast, "server_sends", reply(1), 0.001),
                (slow, "server_sends", reply(1), 0.001)):
            clock += step
            session.time = clock
            getattr(session, send)(message)
        slow.close()
        fast.close()
    mine = [_write(tmp_path / "overlapping.pcap", overlapping)]
    reference = one_process(mine + ["--max-age", "0.0015"], tmp_path / "one")
    assert sorted(r["outcome"] for r in reference) == ["no_reply", "orphan_reply", "success"]
    options = {"max_age_ns": 1_500_000}
    n = -(-os.path.getsize(mine[0]) // 500)
    shards = [r for k in range(n) for r in
              run_task_rows(mine[0], (k, n), tmp_path / f"s{k}", options)]
    assert sorted(r["outcome"] for r in shards) == ["success", "success"]
    run = monitor_files(client, mine, str(tmp_path / "calls"), shard_size=500,
                        options=options)
    assert not run.failures and run.shards == 1 and run.reruns == 1
    assert table(tmp_path / "calls") == reference


def test_idl_bodies_and_ior_files_on_the_workers(client, tmp_path):
    """--idl: the second file's calls are decoded by the interfaces the first file's
    factory answers taught (in one process, and so on Dask); --ior seeds every task."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    factory, meter_ior, label_ior = _shared_names_capture(tmp_path / "a", with_factory=True)
    calls, _, _ = _shared_names_capture(tmp_path / "b", with_factory=False)
    idl = ["--idl", os.path.join(HERE, "idl", "monitor", "shared_names.idl")]
    reference = one_process([factory, calls] + idl, tmp_path / "one")
    decoded = {r["request_id"]: json.loads(r["arguments"]) for r in reference
               if r["capture_file"] == calls}
    assert decoded == {3: {"channel": 7}, 4: {"prefix": "ab", "upper": True}}
    out = tmp_path / "calls"
    done = monitor(["--engine", "dask", "--scheduler", client.scheduler.address, factory,
                    calls, "--parquet", str(out)] + idl)
    assert done.exit_code == 0, done.stderr
    assert "1 run again as one process would" in done.stderr
    assert table(out) == reference
    from pycdr.codec.ior import ior_to_string
    iors = tmp_path / "refs.txt"
    iors.write_text(f"{ior_to_string(meter_ior)}\n{ior_to_string(label_ior)}\n")
    reference = one_process([calls] + idl + ["--ior", str(iors)], tmp_path / "one-ior")
    done = monitor(["--engine", "dask", "--scheduler", client.scheduler.address, calls,
                    "--parquet", str(tmp_path / "ior"), "--ior", str(iors)] + idl)
    assert done.exit_code == 0, done.stderr
    assert table(tmp_path / "ior") == reference
    assert {r["request_id"]: json.loads(r["arguments"]) for r in reference} == decoded


def test_a_scheduler_that_cannot_be_reached_is_one_line(files, tmp_path, monkeypatch):
    from pycdr.cli import monitor_dask
    monkeypatch.setattr(monitor_dask, "CONNECT_SECONDS", 1.0)
    with socket.socket() as s:              # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = monitor(["--engine", "dask", "--scheduler", f"tcp://127.0.0.1:{port}",
                    files[0], "--parquet", str(tmp_path / "calls")])
    assert done.exit_code == 3
    assert done.stderr.splitlines() == [done.stderr.strip()] and done.stderr.startswith(
        f"error: cannot reach the Dask scheduler at tcp://127.0.0.1:{port} (")
    done = monitor(["--engine", "dask", "--scheduler", "no::such::", files[0],
                    "--parquet", str(tmp_path / "calls")])
    assert done.exit_code == 2 and "--scheduler no::such::" in done.stderr


class _KillingOne:
    """A Dask client whose task for ``victim`` kills its worker process."""

    def __init__(self, client, victim):
        self.client = client
        self.victim = victim

    def submit(self, function, *args, **options):
        if args[0] == self.victim:
            def die(*_):
                os._exit(3)
            function = die
        return self.client.submit(function, *args, **options)


def test_a_worker_that_dies_is_one_line_naming_its_file(files, client, tmp_path):
    """(Last in the module: the nanny starts the dead worker again.)"""
    run = monitor_files(_KillingOne(client, os.path.abspath(files[1])), files[:2],
                        str(tmp_path / "calls"))
    assert run.failures == [f"{files[1]}: the worker running it died"]
    assert run.rows == len(list(iter_calls(files[0])))
