"""Smoke test of benchmarks/bench_marshal.py: it runs, reports numbers, and the payloads it
times are the ones omniORB marshals too (no timing assertions: the numbers are not tested)."""

import importlib.util
import math
import os
import random

import pytest

from oracle import PaddingRecorder, masked, omni, omni_typecode
from pycdr import encode, encode_encapsulation
from pycdr.codec.marshal import read_value

BENCH = os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks", "bench_marshal.py")


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_marshal", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quick_run_reports_positive_rates_for_every_case(bench):
    results = bench.run(quick=True, sizes=[1])
    rows = results["results"]
    impls = {"pycdr", "copy"}
    if bench.pycdr_path() == "c":
        impls.add("pycdr-py")        # the Python path, measured in the same run
    if results["meta"]["omniORBpy"]:
        impls.add("omniORBpy")
    if results["meta"]["pycdr2"]:
        impls.add("pycdr2")
    got = {(r["type"], r["order"], r["op"], r["impl"]) for r in rows}
    want = {(t, order, op, impl) for t in bench.TYPES for order in ("BE", "LE")
            for op in ("encode", "decode") for impl in impls}
    # The opt-in array mapping and the standard library's reference, for the numeric
    # sequences they apply to.
    want |= {(t, order, op, impl) for t in bench.ARRAY_CODES for impl in ("pycdr-arr", "stdlib")
             for order in ("BE", "LE") for op in ("encode", "decode")}
    assert got == want
    for r in rows:
        assert r["size_kb"] == 1 and 0 < r["payload_bytes"] <= 1024
        assert math.isfinite(r["mb_per_s"]) and r["mb_per_s"] > 0, r
    table = bench.format_tables(results)
    for t in bench.TYPES:
        assert f"sequence<{t}>" in table
    assert "stdlib" in table and "std/pycdr2" in table


@pytest.mark.parametrize("little", [False, True], ids=["BE", "LE"])
@pytest.mark.parametrize("name", ["short", "long", "double"])
def test_stdlib_reference_converts_the_sequences_elements(bench, name, little):
    # The reference must do the list mapping's whole conversion (every element, in the
    # payload's byte order, after the length and any padding), or its ratios mean nothing.
    case = bench._cases()[name]
    value = bench._pycdr_value(case, 1024, random.Random(name))
    data = encode(case.tc, value, little=little)
    std_encode, std_decode = bench._stdlib_reference(bench.ARRAY_CODES[name], data, little)
    assert std_decode() == value
    elements = std_encode(value)
    assert len(elements) == len(value) * case.wire_stride
    assert data.endswith(elements)


def raw_padding_positions(data, tc, little):
    """Padding positions in pycdr's own raw (origin 0, no byte-order octet) encoding."""
    r = PaddingRecorder(data, little=little, lenient=True, check_padding=True)
    r.pads = set()
    r.context = {}
    read_value(r, tc)
    assert r.pos == len(data)
    return r.pads


@pytest.mark.oracle
@pytest.mark.parametrize("little", [False, True], ids=["BE", "LE"])
def test_benchmark_payloads_are_omniorbs_bytes(bench, little):
    omniORB = omni()
    if omniORB is None:
        pytest.skip("omniORBpy (salome-omniorb) is not installed")
    for name, case in bench._cases().items():
        value = bench._pycdr_value(case, 1024, random.Random(name))
        ours = encode(case.tc, value, little=little)
        otc = omni_typecode(case.tc)
        theirs = omniORB.cdrMarshal(otc, omniORB.cdrUnmarshal(
            otc, encode_encapsulation(case.tc, value, little=little)), 1 if little else 0)
        pads = raw_padding_positions(ours, case.tc, little)
        assert masked(theirs, pads) == ours, name
        if name in ("string", "BinStruct", "CharLongLong", "double"):
            assert pads, f"{name}: the layout has padding, the mask must cover it"
