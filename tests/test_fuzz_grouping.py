"""How findings are told apart: by kind, symptom, the trigger's message
types and the fields its case mutated.  tests/raw_giop_server.py with
--profile-crash has two planted crashes that are both one GIOP 1.2 Request
and the same symptom (the process aborts): one by a service context with id
15, one by a ProfileAddr target.  They are two confirmed findings, each
replayed with `pycdr fuzz --replay`; a case doing the first again through
the same field is listed under it, not tried again."""

import os
import subprocess
import sys

from pycdr.fuzz.case import Case
from pycdr.fuzz.engine import REPRODUCTIONS, Campaign
from pycdr.fuzz.findings import save
from pycdr.fuzz.mutators import Mutation
from pycdr.fuzz.seeds import catalog_seeds

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import raw_giop_server as raw  # noqa: E402

COMMAND = f"{sys.executable} {os.path.join(HERE, 'raw_giop_server.py')} --profile-crash"
PYCDR = os.path.join(os.path.dirname(sys.executable), "pycdr")


def request_1_2(*, profile=False, context_id=None):
    """A GIOP 1.2 Request for _non_existent (big-endian), addressed by the
    raw server's key or by a profile, with one service context or none."""
    w = raw.Writer(False)
    w.ulong(7)
    w.octet(3)
    w.buf += b"\0\0\0"
    if profile:
        w.put("H", 2, 1)
        w.ulong(0)                                   # TAG_INTERNET_IOP
        w.ulong(4)
        w.buf += b"\0\0\0\0"
    else:
        w.put("H", 2, 0)
        w.ulong(len(raw.OBJECT_KEY))
        w.buf += raw.OBJECT_KEY
    w.string(b"_non_existent")
    contexts = [] if context_id is None else [context_id]
    w.ulong(len(contexts))
    for context in contexts:
        w.ulong(context)
        w.ulong(0)
    return w.message((1, 2), False, raw.REQUEST)


def hand_case(index, message, path):
    return Case(index, "by hand", [message], [Mutation("set", path)])


def test_two_crashes_of_one_shape_are_two_findings(tmp_path):
    by_context = hand_case(0, request_1_2(context_id=15), "msg[0].request.service_context[0].id")
    by_profile = hand_case(1, request_1_2(profile=True), "msg[0].request.target")
    again = hand_case(2, request_1_2(context_id=15), "msg[0].request.service_context[0].id")
    campaign = Campaign(None, seed=1, spawn=COMMAND, timeout=0.5, probe_timeout=0.5,
                        seed_sources=catalog_seeds)
    try:
        assert campaign.check([request_1_2()]).kind is None        # the plain Request is fine
        for case in (by_context, by_profile, again):
            assert campaign._attribute("crash", {"probe": "exited(-6)"}, first=case) is case
    finally:
        campaign.close()
    findings = list(campaign.findings.values())
    assert [f.case for f in findings] == [by_context, by_profile]
    for finding in findings:
        assert finding.kind == "crash" and finding.confirmed
        assert finding.reproductions == REPRODUCTIONS
    assert findings[0].hits == [again] and findings[1].hits == []
    for number, finding in enumerate(findings, 1):
        folder = save(finding, str(tmp_path), number, target_text=None, spawn=COMMAND)
        result = subprocess.run([PYCDR, "fuzz", "--spawn", COMMAND, "--timeout", "0.5",
                                 "--replay", folder], capture_output=True, text=True, timeout=120)
        assert result.returncode == 1 and "REPRODUCED" in result.stdout, result.stdout
