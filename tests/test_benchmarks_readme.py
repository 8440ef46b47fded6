"""benchmarks/README.md is what benchmarks/render.py writes from the benchmarks' docstrings
and results files, and the benchmarks' results files conform to benchmarks/results.py
(the smoke tests of the network and capture benchmarks check theirs too)."""

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)
BENCH_DIR = os.path.join(ROOT, "benchmarks")
sys.path.insert(0, BENCH_DIR)

import render  # noqa: E402
import results  # noqa: E402


def test_readme_is_what_render_writes():
    done = subprocess.run([sys.executable, os.path.join(BENCH_DIR, "render.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_every_benchmark_says_what_it_measures_and_how_to_reproduce_it():
    names = render.benchmark_names()
    assert len(names) >= 13
    for name in names:
        doc, full = render.module_facts(name)
        assert len(doc.split()) >= 40, f"bench_{name}.py: its docstring says too little"
        assert full.startswith("python benchmarks/") and "--results" in full, name


def test_a_benchmark_without_results_gives_its_command_and_no_figure(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "RESULTS_DIR", str(tmp_path))
    text = render.render()
    for name in render.benchmark_names():
        assert f"No results recorded; run: `{render.module_facts(name)[1]}`" in text
    assert "| " not in text                # not a single table without a results file


def test_a_results_file_renders_its_tables_machine_and_commit(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "RESULTS_DIR", str(tmp_path))
    rec = results.record("poll", script=os.path.join(BENCH_DIR, "bench_poll.py"),
                         argv=["--results"], path={"codec": "c"}, settings={"calls": 7},
                         tables=[results.table("t", ["delay us", f"on/off {results.RATIO}"],
                                               [[200, 1.234], [0, None]])])
    assert results.check(rec) == []
    results.write(str(tmp_path / "poll.json"), "poll", rec)
    text = render.render()
    poll = text.split("## poll:", 1)[1].split("\n## ", 1)[0]
    assert "| delay us | on/off (x) |" in poll and "| 200 | 1.23x |" in poll
    assert "| 0 | - |" in poll
    assert rec["commit"] in poll and rec["machine"]["cpu"] in poll and rec["date"] in poll
    assert "Command: `python benchmarks/bench_poll.py --results`" in poll
    assert "No results recorded" not in poll


def test_check_names_what_does_not_conform():
    rec = results.record("poll", script=os.path.join(BENCH_DIR, "bench_poll.py"), argv=[],
                         path={}, settings={}, tables=[results.table("t", ["a", "b"], [[1]])])
    assert any("a row of 1 cells under 2 columns" in p for p in results.check(rec))
    assert results.check({"format": 1}) and results.check([])


def run_with_results(tmp_path, name, argv, timeout=120):
    out = tmp_path / f"{name}.json"
    done = subprocess.run([sys.executable, os.path.join(BENCH_DIR, f"bench_{name}.py"),
                           *argv, "--results", str(out)],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    rec = json.loads(out.read_text())
    assert results.check(rec) == [], results.check(rec)
    assert rec["benchmark"] == name and rec["quick"] is True
    assert rec["command"].startswith(f"python benchmarks/bench_{name}.py ")
    return rec, done.stdout


def test_marshal_writes_conforming_results(tmp_path):
    rec, stdout = run_with_results(tmp_path, "marshal", ["--quick", "--types", "octet",
                                                         "--orders", "BE"])
    assert "sequence<octet>" in stdout           # the tables still printed
    (t,) = rec["tables"]
    assert t["rows"] and all(row[0] == "octet" for row in t["rows"])
    assert rec["path"]["codec"] in ("c", "python")


def test_poll_writes_conforming_results(tmp_path):
    pytest.importorskip("pycdr.codec._speedups")
    rec, _ = run_with_results(tmp_path, "poll", ["--calls", "20", "--delays", "0",
                                                 "--repeat", "1"])
    (t,) = rec["tables"]
    assert [row[1] for row in t["rows"]] == [0, 300]   # poll_wait off, then on


def test_fuzz_writes_conforming_results(tmp_path):
    rec, _ = run_with_results(tmp_path, "fuzz", ["60", "60", "--only", "raw GIOP server"])
    (t,) = rec["tables"]
    assert [row[0] for row in t["rows"]] == ["raw GIOP server"]
    row = dict(zip(t["columns"], t["rows"][0]))
    # measured in this run: both kinds' rates, and each against the floor
    for column in ("fuzz/s (no feedback)", "fuzz/s (state feedback)", "no feedback/floor ×",
                   "with/without feedback ×"):
        assert isinstance(row[column], (int, float)) and row[column] > 0, (column, row)


def test_dissector_writes_conforming_results(tmp_path):
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed")
    if os.environ.get("PYCDR_PURE") == "1":
        pytest.skip("tshark's timings: nothing of pycdr's codec path (the C pass runs it)")
    rec, _ = run_with_results(tmp_path, "dissector", ["--mb", "1", "--runs", "1"])
    (t,) = rec["tables"]
    assert [row[-1] for row in t["rows"]][1] == 1.0    # the built-in against itself
    assert rec["command"].endswith(f"--mb 1 --runs 1 --results {tmp_path}/dissector.json")


def test_results_files_in_the_tree_conform():
    for path in glob.glob(os.path.join(BENCH_DIR, "results", "*.json")):
        with open(path) as f:
            assert results.check(json.load(f)) == [], path
