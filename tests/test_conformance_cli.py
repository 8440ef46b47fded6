"""`pycdr conformance` as a user runs it: against the reference ORB by default,
against a given endpoint, with its reports."""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

from pycdr.conformance.reference import reference_endpoint
from pycdr.capture.giop import decode_capture

PYCDR = [sys.executable, "-c", "from pycdr.cli.main import main; main()"]


def run(*args, timeout=120):
    return subprocess.run([*PYCDR, "conformance", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_default_target_is_the_reference_orb_and_every_case_passes(tmp_path):
    out = run("--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml"),
              "--pcap", str(tmp_path / "pcaps"))
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    verdicts = {r["verdict"] for r in report["results"]}
    assert verdicts <= {"pass", "not run"} and "pass" in verdicts
    assert report["target"]["echo"] is True
    # Every run case has the bytes it sent, and its JUnit entry.
    ran = [r for r in report["results"] if r["verdict"] == "pass"]
    assert all(r["sent"] for r in ran)
    suite = ET.parse(tmp_path / "r.xml").getroot()
    assert int(suite.get("tests")) == len(report["results"])
    assert int(suite.get("failures")) == 0
    # The pcaps decode as GIOP: the request the case sent and the answer.
    pcaps = sorted(os.listdir(tmp_path / "pcaps"))
    assert len(pcaps) == len(ran)
    decoded = decode_capture(str(tmp_path / "pcaps" / "locate.existing-key_1.2-BE.pcap"))
    assert [m["type"] for m in decoded] == ["LocateRequest", "LocateReply"]
    assert decoded[1]["locate_status"] == "OBJECT_HERE" and not decoded[0]["warnings"]


def test_explicit_target_groups_and_exit_codes():
    with reference_endpoint() as ior:
        out = run(ior, "--group", "locate", "--group", "version")
        assert out.returncode == 0, out.stdout + out.stderr
        assert "locate" in out.stdout and "version" in out.stdout and "echo " not in out.stdout
        listing = run(ior, "--group", "malformed", "--list")
        assert listing.returncode == 0
        assert "malformed.bad-magic[1.2-BE]" in listing.stdout
        assert "47494f58" in listing.stdout       # the bytes it sends: magic GIOX
    # Nobody listens there any more: exit status 3.
    dead = run("127.0.0.1:9", timeout=60)
    assert dead.returncode in (1, 3)
