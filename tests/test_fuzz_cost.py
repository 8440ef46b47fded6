"""The fuzzer's CPU cost finding (pycdr.fuzz.cost) against
tests/raw_giop_server.py (no pycdr in it) started with ``--burn``: a Request
for the operation ``burn`` costs the server 0.3 s of CPU, the other
operations well under a millisecond.  A campaign whose seeds hold one such
Request among cheap ones reports a ``cpu`` finding, confirmed (its case cost
past the threshold alone, against a restarted server, REPRODUCTIONS times),
minimized to the request's head, with the median it was judged by saved;
``pycdr fuzz --replay`` reproduces it from the saved folder; and against the
same server without --burn (``burn`` as cheap as the rest) nothing is
reported although every case's cost was measured.

Cases run one at a time (batch=1, as under --coverage sancov): each case's
cost is read on its own; a group of cases sent at once is searched by
halves.  And the mutation that nests an any deeper keeps a request valid."""

import json
import os
import subprocess
import sys

import pytest

from pycdr.fuzz.cost import CPU_FACTOR, CPU_FLOOR
from pycdr.fuzz.engine import REPRODUCTIONS, Campaign
from pycdr.fuzz.findings import save
from pycdr.fuzz.seeds import Seed
from pycdr.giop.messages import KeyAddr, Request, encode_message

HERE = os.path.dirname(os.path.abspath(__file__))
RAW = f"{sys.executable} {os.path.join(HERE, 'raw_giop_server.py')} --no-faults"
PYCDR = os.path.join(os.path.dirname(sys.executable), "pycdr")
BURN_SECONDS = 0.3
SEED = 3
MAX_CASES = 160           # seed 3 finds it by case 60
KEY = b"RawEcho"


def request(operation: str, request_id: int, version=(1, 2)) -> bytes:
    return encode_message(Request(version=version, little=True, request_id=request_id,
                                  target=KeyAddr(KEY), operation=operation, response_flags=3))


def seeds() -> list:
    """Cheap requests of each GIOP version, and one for ``burn``: a case in
    eight or so is mutated from it (most mutations leave its operation)."""
    out = [Seed(f"ping{n}", [request(f"ping{n}", 10 + n, version)])
           for n, version in enumerate([(1, 0), (1, 1), (1, 2)] * 2)]
    return out + [Seed("burn", [request("burn", 99)])]


def campaign_against(command, out):
    # (Ended at its finding: the burn cases after it are known hits, at
    # BURN_SECONDS each.)
    campaign = Campaign(None, seed=SEED, spawn=command, timeout=2.0, probe_timeout=2.0,
                        seeds=seeds(), batch=1, standby=False, stop_on_finding=True,
                        log=lambda text: print(text, flush=True))
    saved = []
    campaign.on_finding = lambda f: saved.append(
        save(f, str(out), len(saved) + 1, target_text=None, spawn=command, answers=f.answers))
    try:
        campaign.run(max_cases=MAX_CASES)
    finally:
        campaign.close()
    return campaign, saved


@pytest.fixture(scope="module")
def burning(tmp_path_factory):
    command = f"{RAW} --burn {BURN_SECONDS}"
    return (*campaign_against(command, tmp_path_factory.mktemp("cost-findings")), command)


def test_expensive_case_found_confirmed_and_minimized(burning):
    campaign, saved, _ = burning
    found = [f for f in campaign.findings.values() if f.kind == "cpu"]
    assert len(found) == 1, {k: f.path for k, f in campaign.findings.items()}
    finding = found[0]
    assert finding.confirmed and finding.reproductions == REPRODUCTIONS
    # A case of the burn seed, minimized to the head of the Request (the
    # server burns as soon as it has read the operation's name; a
    # fragmented one keeps its fragments).
    assert finding.case.seed_name == "burn"
    assert finding.messages[-1].endswith(b"burn\0") or len(finding.messages) > 1
    details = finding.details
    median, threshold = details["median_cpu_seconds"], details["threshold_seconds"]
    assert 0 < median < BURN_SECONDS / CPU_FACTOR
    assert threshold == pytest.approx(max(CPU_FLOOR, CPU_FACTOR * median), rel=1e-3)
    runs = details["cpu_seconds_runs"]
    assert len(runs) == REPRODUCTIONS and all(threshold < run for run in runs), details
    assert details["cpu_seconds"] >= 0.8 * BURN_SECONDS
    # No cheap case was taken for an expensive one on the way.
    assert not campaign.unconfirmed


def test_saved_finding_replays(burning):
    campaign, saved, command = burning
    (folder,) = saved
    with open(os.path.join(folder, "finding.json")) as f:
        data = json.load(f)
    assert data["kind"] == "cpu" and data["details"]["median_cpu_seconds"] > 0
    assert data["replay"].endswith(f"--replay {folder}")
    done = subprocess.run([PYCDR, "fuzz", "--spawn", command, "--replay", folder, "--json", "-"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["reproduced"] and result["observed"] == "cpu"
    # Judged against the saved median, not one measured by the replay.
    assert result["details"]["median_cpu_seconds"] == data["details"]["median_cpu_seconds"]
    assert result["details"]["cpu_seconds"] > result["details"]["threshold_seconds"]


def test_replay_without_saved_median_refused(burning, tmp_path):
    _, saved, command = burning
    with open(os.path.join(saved[0], "finding.json")) as f:
        data = json.load(f)
    del data["details"]["median_cpu_seconds"]
    (tmp_path / "finding.json").write_text(json.dumps(data))
    done = subprocess.run([PYCDR, "fuzz", "--spawn", command, "--replay", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "cannot replay" in done.stderr and "median_cpu_seconds" in done.stderr and "Traceback" not in done.stderr


def test_no_expensive_case_no_finding(tmp_path):
    campaign, saved = campaign_against(RAW, tmp_path)
    # The costs were measured (a median is known) and none stood out.
    assert campaign.cost_median() is not None and campaign.cost_median() < CPU_FLOOR
    assert not campaign.findings and not saved
    assert not [f for f in campaign.unconfirmed if f.kind == "cpu"]



def test_expensive_case_found_in_a_group(tmp_path):
    """Cases sent as a group (a connection each, all at once): a group that
    cost past the threshold (and twice what its cases cost at the median)
    is run again in halves, down to the case that costs it alone, which is
    then confirmed as above."""
    from pycdr.fuzz.case import Case
    from pycdr.fuzz.prediction import predict
    command = f"{RAW} --burn {BURN_SECONDS}"
    cheap = [s for s in seeds() if s.name != "burn"]
    campaign = Campaign(None, seed=SEED, spawn=command, timeout=2.0, probe_timeout=2.0,
                        seeds=cheap, batch=1, standby=False)
    try:
        campaign.run(max_cases=40)           # (the median: cheap cases, one at a time)
        assert campaign.cost_median() is not None and not campaign.findings
        messages = [[request(f"ping{n}", 200 + n)] for n in range(23)]
        messages.insert(17, [request("burn", 299)])
        cases = [Case(1000 + k, "group", m, [], predict(m)) for k, m in enumerate(messages)]
        campaign._sent(cases)
        campaign._run_group(cases)
    finally:
        campaign.close()
    found = [f for f in campaign.findings.values() if f.kind == "cpu"]
    assert len(found) == 1 and found[0].confirmed, campaign.unconfirmed
    assert found[0].case is cases[17]
    assert found[0].details["cases"] == len(cases)          # (found as a group's cost)
    assert found[0].details["group_cpu_seconds"] >= 0.8 * BURN_SECONDS


@pytest.mark.parametrize("version,little", [((1, 0), False), ((1, 1), True), ((1, 2), False),
                                            ((1, 2), True)])
def test_nest_any_puts_the_value_inside_more_anys(version, little):
    """The mutation behind omniORB's nested anys: the request stays valid,
    its any N levels deeper, the innermost value as it was (what follows
    keeps its alignment: a double after the any)."""
    import random
    from pycdr.codec import tc
    from pycdr.codec.marshal import read_value, write_value
    from pycdr.codec.values import Any
    from pycdr.fuzz.mutators import ANY_TYPECODE, NEST_LEVELS, nest_any
    from pycdr.giop.layout import message_fields
    from pycdr.giop.messages import decode_message
    types = [tc.any, tc.double]
    data = encode_message(
        Request(version=version, little=little, request_id=5, target=KeyAddr(KEY),
                operation="echo_any", response_flags=3),
        write_body=lambda w: (write_value(w, tc.any, Any(tc.long, 7)),
                              write_value(w, tc.double, 2.5)))
    (field,) = [f for f in message_fields(data, types) if f.path.endswith(ANY_TYPECODE)]
    message = bytearray(data)
    detail = nest_any(message, field, random.Random(1))
    levels = int(detail.split()[2])
    assert levels in NEST_LEVELS and len(message) == len(data) + 4 * levels
    decoded, _ = decode_message(bytes(message))
    reader = decoded.body_reader()
    value, depth = read_value(reader, tc.any), 1
    while value.tc.kind() == tc.any.kind():
        value, depth = value.value, depth + 1
    assert depth == 1 + levels and value.value == 7
    assert read_value(reader, tc.double) == 2.5


def test_case_still_running_past_the_watch_is_cpu_not_spin(tmp_path):
    """A case whose cost goes on past the watch (``burn`` costing far more
    CPU than SETTLE_CPU), sent in a group: its answer still due and the
    server still answering LocateRequests, it is a ``cpu`` finding marked
    ``still_running``, not a spin; confirmed alone against a restarted
    server, each run judged once it has cost PENDING_FACTOR times the
    threshold, not after a wait for a cost that does not end."""
    import time
    from pycdr.fuzz.case import Case
    from pycdr.fuzz.cost import PENDING_FACTOR, SETTLE_CPU
    from pycdr.fuzz.prediction import predict
    command = f"{RAW} --burn 600"
    cheap = [s for s in seeds() if s.name != "burn"]
    campaign = Campaign(None, seed=SEED, spawn=command, timeout=2.0, probe_timeout=2.0,
                        seeds=cheap, batch=1, standby=False, minimize=False)
    try:
        campaign.run(max_cases=40)
        assert campaign.cost_median() is not None and not campaign.findings
        messages = [[request(f"ping{n}", 200 + n)] for n in range(7)]
        messages.append([request("burn", 299)])
        cases = [Case(1000 + k, "group", m, [], predict(m)) for k, m in enumerate(messages)]
        campaign._sent(cases)
        began = time.monotonic()
        campaign._run_group(cases)
        took = time.monotonic() - began
    finally:
        campaign.close()
    assert not [f for f in campaign.unconfirmed if f.kind == "spin"], campaign.unconfirmed
    found = [f for f in campaign.findings.values()]
    assert [f.kind for f in found] == ["cpu"], ([(f.kind, f.details) for f in found],
                                               [(f.kind, f.details) for f in campaign.unconfirmed])
    finding = found[0]
    assert finding.confirmed and finding.case is cases[-1]
    assert finding.details["still_running"] is True
    assert finding.details["group_cpu_seconds"] >= 0.5 * SETTLE_CPU
    # Each confirmation stopped at PENDING_FACTOR times the threshold, not at SETTLE_CPU.
    runs = finding.details["cpu_seconds_runs"]
    assert len(runs) == REPRODUCTIONS and all(
        finding.details["threshold_seconds"] < r < SETTLE_CPU for r in runs), runs
    assert PENDING_FACTOR * CPU_FLOOR < SETTLE_CPU and took < 120


def test_target_busy_before_a_case_is_not_watched_for_its_cost():
    """The raw server starting a thread that loops for good at its 40th
    connection (past the calibration's probes): once it spins, a case sent
    to it finds it busy already, and what it spends after is not known to
    be the case's: not watched, not judged, not a sample of the median
    (the watch would wait out SETTLE_CPU seconds of the spin); the spin
    check sees the spin."""
    campaign = Campaign(None, seed=SEED, spawn=f"{RAW} --spin-after 40", timeout=2.0,
                        probe_timeout=2.0, seeds=seeds(), batch=1, standby=False,
                        minimize=False)
    try:
        idle = campaign._cost_mark()
        assert idle is not None and idle[2] is False
        for _ in range(40):
            campaign._probe(("locate",))
        assert campaign._spinning()
        busy = campaign._cost_mark()
        assert busy is not None and busy[2] is True
        assert campaign._cost_since(busy) is None
        verdict = campaign.check([request("ping0", 7)])
        assert verdict.kind is None and campaign.last_cost is None
    finally:
        campaign.close()
