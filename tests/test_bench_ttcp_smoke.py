"""Smoke tests of the network benchmarks (benchmarks/bench_ttcp.py, bench_param.py) and of
`pycdr bench`: each runs in its quickest mode against the real peers (omniORBpy from the
test extra) and produces positive numbers for every point, and the servers count exactly
the elements the clients sent. No timing assertions: the numbers themselves are not tested.
"""

import importlib.util
import json
import os
import sys

import pytest
from click.testing import CliRunner

from pycdr.cli.main import main

BENCH_DIR = os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks")
sys.path.insert(0, BENCH_DIR)
import results as results_format  # noqa: E402

pytest.importorskip("omniORB", reason="the omniORBpy peer (salome-omniorb) is not installed")


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(BENCH_DIR, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def ttcp():
    return load("bench_ttcp")


@pytest.fixture(scope="module")
def param():
    return load("bench_param")


def test_ttcp_quick_run_moves_every_byte_through_every_transport(ttcp):
    results = ttcp.run(quick=True, sizes_kb=(1, 4), megabytes=0.05,
                       transports=("pycdr", "blocking", "arrays", "omniORBpy", "socket"))
    rows = results["results"]
    got = {(r["transport"], r["type"], r["size_kb"], r["mode"]) for r in rows}
    for transport in ("pycdr", "blocking", "omniORBpy", "socket"):
        for type_name in ttcp.TYPES:
            for mode in ttcp.MODES:
                assert {(transport, type_name, 1, mode), (transport, type_name, 4, mode)} <= got
    # The array mapping runs for the numeric sequences only.
    assert {r["type"] for r in rows if r["transport"] == "arrays"} == {"short", "long", "double"}
    for row in rows:
        assert row["received"] == row["expected"] == row["calls"] * row["payload_bytes"] \
            // {"short": 2, "long": 4, "double": 8, "char": 1, "octet": 1, "BinStruct": 32}[
                row["type"]]
        assert row["calls"] >= 1 and row["best"] > 0 and row["min"] > 0
    assert results["meta"]["pycdr"] in ("c", "python")
    # Every ORB's client says its CPU per message (the socket stream has no ORB).
    assert all((row["client_cpu_us"] is not None) == (row["transport"] != "socket")
               for row in rows)
    table = ttcp.format_tables(results)
    assert "oneway sequence<BinStruct>" in table and "/omniORB" in table and "/socket" in table
    assert "bl/omni" in table and "cpu us" in table
    (rows_table,) = ttcp.results_tables(results)
    assert results_format.check_tables([rows_table]) == []
    assert len(rows_table["rows"]) == len({(r["type"], r["size_kb"], r["mode"]) for r in rows})


def test_ttcp_points_move_the_requested_megabytes(ttcp):
    for point in ttcp.plan_points("pycdr", ["double", "BinStruct"], [1, 128], ["oneway"], 64):
        moved = point["calls"] * (point["size_bytes"] // {"double": 8, "BinStruct": 32}[
            point["type"]]) * {"double": 8, "BinStruct": 32}[point["type"]]
        assert abs(moved - (64 << 20)) <= point["size_bytes"]


def test_param_quick_run_measures_every_pair_and_checks_answers(param):
    # run() raises BenchmarkError when a client's first answer differs from what it sent,
    # so every row here comes from calls that returned the right (result, inout, out).
    results = param.run(quick=True, seconds=0.02)
    rows = results["results"]
    # Named here, not taken from param.CLIENTS: dropping a client must fail this test.
    clients = ("pycdr", "pycdr-sync", "pycdr-DII", "omniORBpy", "omniORBpy-DII", "socket")
    servers = ("pycdr", "pycdr-threads", "omniORBpy")
    expected = {(c, s, o) for c in clients for s in servers for o in param.OPERATIONS}
    assert {(r["client"], r["server"], r["operation"]) for r in rows} == expected
    assert len(rows) == len(expected)
    for row in rows:
        assert row["best"] > 0
    table = param.format_tables(results)
    for column in ("py->py", "pyDII->py", "omni->omni", "omDII->omni", "omDII->py",
                   "pySy->pyTh", "omni->pyTh", "pySy->omni", "sock->omni", "sock->pyTh"):
        assert column in table
    for ratio in ("py/omni", "pyDII/st", "omDII/st", "DII py/om", "bl/omni", "cliSy@om",
                  "srvTh@om", "omni/flr", "pySy/flr"):
        assert ratio in table
    # test_short has a calls/s row with a number in every column, server and client CPU
    # rows (microseconds per call: the server's read from /proc, the client's own) and a
    # ratio row with every ratio computed (a missing cell shows as "-").
    calls_row, server_cpu_row, client_cpu_row, ratio_row = [
        line.split() for line in table.splitlines() if line.startswith("test_short")]
    columns = len(clients) * len(servers)
    assert len(calls_row) == 1 + columns and all(float(cell) > 0 for cell in calls_row[1:])
    assert "server CPU us per call" in table and "client CPU us per call" in table
    for cpu_row in (server_cpu_row, client_cpu_row):
        assert len(cpu_row) == 1 + columns and all(float(cell) >= 0 for cell in cpu_row[1:])
    assert all(row["server_cpu_us"] is not None and row["client_cpu_us"] is not None
               for row in rows)
    assert len(ratio_row) == 1 + 11 and all(cell.endswith("x") for cell in ratio_row[1:])
    tables = param.results_tables(results)
    assert results_format.check_tables(tables) == [] and len(tables) == 4
    assert len(param.results_notes(results)) == 12       # 11 ratios and omniORBpy's DII


def test_cli_bench_ttcp_writes_tables_json_and_plots(tmp_path):
    pytest.importorskip("matplotlib")
    json_file = tmp_path / "ttcp.json"
    result = CliRunner().invoke(main, [
        "bench", "ttcp", "--quick", "--json", str(json_file), "--plot", str(tmp_path / "plots"),
        "--types", "double,BinStruct", "--sizes", "1", "--mb", "0.05", "--modes", "oneway"])
    assert result.exit_code == 0, result.output
    assert "oneway sequence<double>" in result.output
    rows = json.loads(json_file.read_text())["results"]
    assert {r["transport"] for r in rows} == {"pycdr", "blocking", "omniORBpy", "socket"}
    assert (tmp_path / "plots" / "ttcp_oneway.png").stat().st_size > 0


def test_cli_bench_param_and_marshal_run(tmp_path):
    result = CliRunner().invoke(main, ["bench", "param", "--quick", "--operations",
                                       "test_short", "--seconds", "0.02"])
    assert result.exit_code == 0, result.output
    assert "test_short" in result.output and "omDII->omni" in result.output
    result = CliRunner().invoke(main, ["bench", "marshal", "--quick", "--types", "octet",
                                       "--orders", "BE"])
    assert result.exit_code == 0, result.output
    assert "sequence<octet>" in result.output


def test_cli_bench_rejects_unknown_options():
    result = CliRunner().invoke(main, ["bench", "ttcp", "--no-such-option"])
    assert result.exit_code == 2


def test_cli_bench_param_tls_measures_both_orbs_over_tcp_and_tls(tmp_path):
    """`pycdr bench param --tls`: the reference ORB and omniORB C++ (built here; skipped
    without its tools), each over plain TCP and TLS, with the TLS/TCP ratios."""
    pytest.importorskip("cryptography")
    if not os.path.exists("/usr/include/omniORB4/sslContext.h"):
        pytest.skip("omniORB C++ headers missing: run .ci/install-peers.sh")
    json_file = tmp_path / "tls.json"
    result = CliRunner().invoke(main, ["bench", "param", "--quick", "--tls", "--json",
                                       str(json_file), "--operations",
                                       "test_short,test_struct_sequence", "--seconds", "0.02"])
    assert result.exit_code == 0, result.output
    rows = json.loads(json_file.read_text())["results"]
    assert {(r["orb"], r["transport"], r["operation"]) for r in rows} == {
        (orb, transport, operation) for orb in ("pycdr", "omniORB") for transport in ("TCP", "TLS")
        for operation in ("test_short", "test_struct_sequence")}
    assert all(r["best"] > 0 for r in rows)
    row = next(line.split() for line in result.stdout.splitlines()
               if line.startswith("test_short"))
    assert len(row) == 1 + 4 + 2 + 1          # calls/s, the two TLS/TCP ratios, py/omni
    (table,) = load("bench_param_tls").results_tables(json.loads(json_file.read_text()))
    assert results_format.check_tables([table]) == [] and len(table["rows"]) == 2
