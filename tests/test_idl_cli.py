"""`pycdr idl show` and `pycdr idl padding`."""

from __future__ import annotations

import json
import os

from click.testing import CliRunner

from pycdr.cli.main import main

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = os.path.join(HERE, "idl", "oracle")
UNIT = os.path.join(HERE, "idl", "unit")


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_show_text_lists_ids_and_operations():
    result = run("idl", "show", os.path.join(ORACLE, "interfaces.idl"))
    assert result.exit_code == 0, result.stderr
    assert "IDL:Ifaces/Store:1.0" in result.stdout
    assert "long swap(inout string value, out long previous, in long slot)" in result.stdout
    assert "oneway void forget(in string key)" in result.stdout


def test_show_json():
    result = run("idl", "show", "--json", os.path.join(ORACLE, "prefixes.idl"), "-I", ORACLE)
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    ids = {d["name"]: d["repository_id"] for d in data["declarations"]}
    assert ids["Ids::Explicit"] == "LOCAL:my-explicit-id"
    assert ids["Pre::B"] == "IDL:inner.example.com/B:1.0"


def test_show_reports_errors_with_exit_code_1():
    result = run("idl", "show", os.path.join(UNIT, "errors.idl"))
    assert result.exit_code == 1
    assert "errors.idl:2:11: error:" in result.stderr
    assert "3 error(s)" in result.stderr


def test_padding_text_and_json():
    path = os.path.join(UNIT, "benchmark.idl")
    result = run("idl", "padding", path)
    assert result.exit_code == 0, result.stderr
    assert "padding overhead: 43.8%" in result.stdout
    result = run("idl", "padding", "--json", path)
    data = {r["name"]: r for r in json.loads(result.stdout)}
    assert data["benchmark::Struct"]["bytes_saved"] == 7
    assert data["benchmark::Struct"]["best_member_order"] == ["ll", "c1"]
