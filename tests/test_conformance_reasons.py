"""Tolerated verdicts carry a reason code (impl-limit, spec-silent, lenient, ...), in the
catalog, in every report, and as a filter; the three verdicts decided from the spec text."""

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from pycdr.conformance.cases import (TOLERANCE_CODES, Tolerance, catalog, echo_catalog)
from pycdr.conformance.echo import ECHO_IDL, ECHO_INTERFACE, load_echo_module
from pycdr.conformance.runner import FAIL, TOLERATED, Outcome, judge

from peers.omni import start_omni_echo_server

PYCDR = [sys.executable, "-c", "from pycdr.cli.main import main; main()"]


@pytest.fixture(scope="module")
def cases():
    module = load_echo_module()
    found = catalog() + echo_catalog(module, module.interfaces[ECHO_INTERFACE])
    return {c.id: c for c in found}


def test_every_tolerance_has_a_known_code(cases):
    tolerances = [t for c in cases.values() for t in c.tolerate]
    assert tolerances and all(isinstance(t, Tolerance) for t in tolerances)
    assert {t.code for t in tolerances} == set(TOLERANCE_CODES)
    with pytest.raises(ValueError):
        Tolerance(tolerances[0].expect, "because", "no such code")


def test_odd_fragments_dropped_silently_is_spec_silent(cases):
    case = cases["fragment.request-odd[1.2-LE]"]
    assert judge(case, Outcome("silent")) == (
        TOLERATED, "drops the request without a word (the client waits)", "spec-silent")
    assert judge(case, Outcome("reply", {}))[2] == "lenient"
    assert "binds the sender" in case.rationale


def test_ucs2_without_bom_in_a_little_endian_stream_is_spec_silent(cases):
    wrong_echo = Outcome("reply", {"echo_ok": False})
    verdict, _, code = judge(cases["echo.wstring-ucs2[1.2-LE]"], wrong_echo)
    assert (verdict, code) == (TOLERATED, "spec-silent")
    # Big-endian: both readings agree, so a wrong echo is a failure.
    assert judge(cases["echo.wstring-ucs2[1.2-BE]"], wrong_echo)[0] == FAIL
    # GIOP 1.1 wchars follow the stream's byte order: no room for a second reading.
    assert judge(cases["echo.wstring-ucs2[1.1-LE]"], wrong_echo)[0] == FAIL
    assert "4008" in cases["echo.wstring-ucs2[1.2-LE]"].rationale


def test_big_payload_closed_is_an_implementation_limit(cases):
    case = cases["echo.echo_octets.1mib[1.2-BE]"]
    assert judge(case, Outcome("closed", {"reset": False}))[::2] == (TOLERATED, "impl-limit")
    assert judge(case, Outcome("system_exception", {"name": "IMP_LIMIT"}))[2] == "impl-limit"
    assert judge(cases["echo.echo_long[1.2-BE]"], Outcome("closed", {}))[0] == FAIL


def test_reason_codes_in_text_json_junit_and_the_filter(tmp_path):
    """omniORBpy reads a boolean octet 2 as TRUE (lenient) and the suite tolerates it."""
    with start_omni_echo_server(idl=ECHO_IDL, interface=ECHO_INTERFACE,
                                object_id="Echo") as peer:
        out = subprocess.run([*PYCDR, "conformance", peer.ior, "--group", "malformed",
                              "--no-wide", "--json", str(tmp_path / "r.json"),
                              "--junit", str(tmp_path / "r.xml"),
                              "--tolerated-reason", "spec-silent"],
                             capture_output=True, text=True, timeout=120)
        listing = subprocess.run([*PYCDR, "conformance", peer.ior, "--group", "malformed",
                                  "--list"], capture_output=True, text=True, timeout=120)
    report = json.loads((tmp_path / "r.json").read_text())
    lax = [r for r in report["results"] if r["id"].startswith("malformed.boolean-2[")]
    assert lax and all((r["verdict"], r["reason_code"]) == ("tolerated", "lenient")
                       for r in lax), lax
    assert report["tolerated_by_reason"]["lenient"] >= 2
    assert all(r["reason_code"] is None for r in report["results"]
               if r["verdict"] != "tolerated")
    junit = ET.parse(tmp_path / "r.xml").getroot()
    case = junit.find("testcase[@name='malformed.boolean-2[1.0-BE]']")
    assert case.find("properties/property[@name='tolerated_reason']").get("value") == "lenient"
    assert case.find("system-out").text.startswith("tolerated deviation [lenient]: ")
    # The filter: lenient deviations are counted, but only spec-silent ones are listed.
    assert "tolerated by reason: " in out.stdout and "lenient " in out.stdout
    assert "tolerated [lenient]" not in out.stdout, out.stdout
    assert "tolerated [lenient]: reply - lax boolean" in listing.stdout
