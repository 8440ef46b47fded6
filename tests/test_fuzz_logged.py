"""Findings a target shows only in its output, against tests/defect_server.py
(a small raw GIOP server with one planted defect): a StackOverflowError that
kills a thread, a NegativeArraySizeException (each an `exception` finding
told by its exception and top frames).  Each is found by a short campaign
whose seeds hold the trigger, confirmed alone against a restarted target,
minimized, and replayed with `pycdr fuzz --replay`; cases that hit it again
are counted under it."""

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from pycdr.fuzz.engine import REPRODUCTIONS, Campaign
from pycdr.fuzz.findings import save
from pycdr.fuzz.seeds import Seed
from pycdr.giop.messages import KeyAddr, LocateRequest, Request, encode_message

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import defect_server  # noqa: E402

PYCDR = os.path.join(os.path.dirname(sys.executable), "pycdr")
SERVER = os.path.join(HERE, "defect_server.py")
KEY = KeyAddr(defect_server.OBJECT_KEY)


def _seeds():
    plant = encode_message(Request(version=(1, 2), request_id=7, target=KEY,
                                   operation=defect_server.PLANT.decode()))
    plain = encode_message(LocateRequest(version=(1, 2), request_id=8, target=KEY))
    return [Seed("plant", [plant], source="catalog"),
            Seed("locate", [plain], source="catalog")]


def _campaign(plant, tmp_path, cases=48):
    command = f"{sys.executable} {SERVER} --plant {plant}"
    campaign = Campaign(None, seed=2, spawn=command, timeout=0.5, probe_timeout=0.5,
                        seeds=_seeds(), standby=False)
    try:
        campaign.run(max_cases=cases)
    finally:
        campaign.close()
    findings = list(campaign.findings.values())
    folders = [save(f, str(tmp_path), n, target_text=None, spawn=command, answers=f.answers)
               for n, f in enumerate(findings, 1)]
    return command, findings, folders


def _replay(command, folder):
    done = subprocess.run([PYCDR, "fuzz", "--spawn", command, "--timeout", "0.5", "--json",
                           "--replay", folder], capture_output=True, text=True, timeout=60)
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize("plant,exception,top", [
    ("stack-overflow", "java.lang.StackOverflowError", "org.example.cdr.ValueReader.readValue"),
    ("negative-array", "java.lang.NegativeArraySizeException",
     "org.example.cdr.InputStream.read_octet_array")])
def test_logged_defect_found_minimized_and_replayed(plant, exception, top, tmp_path):
    command, findings, folders = _campaign(plant, tmp_path)
    # Many cases hit it; one defect, one finding (its exception and top frames).
    assert [f.kind for f in findings] == ["exception"]
    finding = findings[0]
    assert finding.confirmed and finding.reproductions == REPRODUCTIONS
    assert finding.details["exception"] == exception
    printed = [line.split("at ", 1)[1].split("(")[0]
               for line in defect_server.STACKS[plant] if line.startswith("\tat ")]
    assert finding.details["frames"] == printed[:3] and printed[0] == top
    assert finding.details.get("uncaught", False) == (plant == "stack-overflow")
    assert defect_server.PLANT in b"".join(finding.messages)
    assert len(finding.hits) > 0
    code, out = _replay(command, folders[0])
    assert code == 1 and out["reproduced"] and out["details"]["exception"] == exception


def test_quiet_target_has_no_such_finding(tmp_path):
    """The same server and campaign with seeds that never plant: nothing."""
    command = f"{sys.executable} {SERVER} --plant stack-overflow"
    campaign = Campaign(None, seed=2, spawn=command, timeout=0.5, probe_timeout=0.5,
                        seeds=_seeds()[1:], standby=False)
    try:
        campaign.run(max_cases=48)
    finally:
        campaign.close()
    assert not campaign.findings and not campaign.unconfirmed


def test_finding_at_the_campaign_start_is_saved(tmp_path):
    """A kept input (--corpus-dir) that does it is run as the campaign starts:
    its finding is saved like the others, and replays."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "plant.hex").write_text(_seeds()[0].messages[0].hex() + "\n")
    command = f"{sys.executable} {SERVER} --plant stack-overflow"
    out = tmp_path / "out"
    done = subprocess.run([PYCDR, "fuzz", "--spawn", command, "--timeout", "0.5", "--max-cases",
                           "1", "--seed", "1", "--corpus-dir", str(corpus), "--out", str(out),
                           "--json"], capture_output=True, text=True, timeout=120)
    summary = json.loads(done.stdout)
    folders = [f["folder"] for f in summary["findings"]]
    assert done.returncode == 1 and folders and all(folders), done.stderr
    assert [f["kind"] for f in summary["findings"]] == ["exception"]
    code, replayed = _replay(command, folders[0])
    assert code == 1 and replayed["reproduced"]


def test_defects_past_the_kept_ones_are_seen():
    """A target that logs more defects in one run than are kept (a group of
    many cases that each log one) still shows those after a given count."""
    from pycdr.fuzz.target import MAX_LOGGED, SpawnedTarget, endpoint
    target = SpawnedTarget(f"{sys.executable} {SERVER} --plant negative-array")
    try:
        host, port = endpoint(target.start())[:2]
        plant = _seeds()[0].messages[0]
        total = MAX_LOGGED + 6
        with socket.create_connection((host, port), timeout=10) as conn:
            conn.sendall(plant * total)
            received = b""
            while received.count(b"GIOP") < total:
                received += conn.recv(65536)
        deadline = time.monotonic() + 10
        while target.logged() < total and time.monotonic() < deadline:
            time.sleep(0.02)
        assert target.logged() == total
        since = target.defects_since(total - 2)
        assert [d["exception"] for d in since] == ["java.lang.NegativeArraySizeException"] * 2
        assert target.defects_since(total) == []
    finally:
        target.stop()


def test_group_defect_of_a_new_class_comes_first_and_is_searched_for_alone(tmp_path):
    """A group may log a defect of an exception class a finding has (at
    another place: a new fault all the same) beside one of a class no finding
    has: the new class is the group's breakage (before its growth, or a hang
    its probes saw), and a search among its cases looks for that class only
    (a case that logs the other does not steer it)."""
    from pycdr.fuzz.case import Case
    command = f"{sys.executable} {SERVER} --plant mixed"
    campaign = Campaign(None, seed=2, spawn=command, timeout=0.5, probe_timeout=0.5,
                        seeds=_seeds()[1:], standby=False)

    def request(word: bytes, request_id: int) -> bytes:
        return encode_message(Request(version=(1, 2), request_id=request_id, target=KEY,
                                      operation=word.decode()))

    try:
        plant = [request(b"plant", 1)]
        assert campaign.reproduces("exception", plant, fresh=False)
        campaign._record("exception", Case(1, "plant", plant, []), campaign.last_verdict.details,
                         [])
        known = {f.details["exception"] for f in campaign.findings.values()}
        assert known == {"java.lang.NegativeArraySizeException"}
        since = campaign._logged_count()
        # Logged in this order: the known class (new frames), then the new class.
        for n, word in enumerate((b"header", b"overflow")):
            assert campaign.check([request(word, 10 + n)]).kind == "exception"
        assert [d["exception"] for d in campaign._new_defects(since)] == [
            "java.lang.StackOverflowError", "java.lang.NegativeArraySizeException"]
        campaign._sought_exception = "java.lang.StackOverflowError"
        header_only = campaign._logged_count()
        campaign.check([request(b"header", 20)])
        assert not campaign._logs_sought(header_only)
        assert campaign._logs_sought(since)
        # (What puts a group's defect before a hang its probes saw: a class no finding has.)
        assert not campaign._new_class_logged(header_only)
        assert campaign._new_class_logged(since)
    finally:
        campaign.close()
