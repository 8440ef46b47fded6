"""Brief campaigns against real ORBs: omniORBpy, omniNames, JacORB and the
OpenJDK ORB (as WildFly ships it).
What they find is reported (printed, and written to the pytest log); what
is asserted is that no confirmed finding is false: each one, saved, replays
with `pycdr fuzz --replay` (its case, alone, does it again) -- and
omniORB 4.2.5's known flood (endless replies to a hand-made ProfileAddr
Request) is among them.  (The peers are not spawned by the fuzzer, so a
crash or hang of theirs could not be confirmed against a restarted one: it
would be kept unconfirmed.)  The OpenJDK ORB costs itself some 35 ms of
CPU per malformed case (its polling reads of a message cut short), so its
campaign is shorter."""

import json
import os
import subprocess
import sys

import pytest

from peers.fixtures import start_peer  # noqa: F401 (pytest fixture)
from peers.jacorb import peers_echo_interface, start_jacorb_echo_server
from peers.java_orb import start_java_echo_server
from peers.jdk_orbs import OPENJDK_ORB
from peers.omni import start_omni_echo_server, start_omni_names
from peers.process import PeerNotInstalled

from pycdr.fuzz.engine import REPRODUCTIONS, Campaign
from pycdr.fuzz.findings import save
from pycdr.fuzz.seeds import catalog_seeds

PYCDR = os.path.join(os.path.dirname(sys.executable), "pycdr")

# Brief: a few hundred cases each.
CASES = 400


def start_openjdk_echo_server():
    return start_java_echo_server(OPENJDK_ORB, peers_echo_interface())


def _campaign(ior, cases=CASES):
    campaign = Campaign(ior, seed=3, timeout=0.5, probe_timeout=1.0, minimize=False,
                        seed_sources=lambda t: catalog_seeds(t, echo=False))
    try:
        stats = campaign.run(max_cases=cases)
    finally:
        campaign.close()
    report = [{"kind": f.kind, "path": f.path, "seed": f.case.seed_name, "case": f.case.index,
               "details": f.details} for f in campaign.findings.values()]
    unconfirmed = [{"kind": f.kind, "details": f.details,
                    "in_flight": [c.index for c in f.in_flight]} for f in campaign.unconfirmed]
    print(json.dumps({"cases": stats.cases, "rate": round(stats.rate), "dead": campaign.dead,
                      "outcomes": dict(stats.outcomes), "findings": report,
                      "unconfirmed": unconfirmed}, indent=1))
    assert stats.cases > 0
    return campaign


def _replays(ior, folder) -> dict:
    result = subprocess.run([PYCDR, "fuzz", ior, "--timeout", "0.5", "--json", "--replay", folder],
                            capture_output=True, text=True, timeout=120)
    out = json.loads(result.stdout)
    assert result.returncode == (1 if out["reproduced"] else 0), result.stderr
    return out


@pytest.mark.parametrize("launcher,name,cases", [(start_omni_echo_server, "omniORBpy", CASES),
                                                 (start_omni_names, "omniNames", CASES),
                                                 (start_jacorb_echo_server, "JacORB", CASES),
                                                 (start_openjdk_echo_server, "OpenJDK ORB", 150)])
def test_brief_campaign(start_peer, launcher, name, cases, tmp_path):  # noqa: F811
    try:
        peer = start_peer(launcher)
    except PeerNotInstalled as e:
        pytest.skip(str(e))
    campaign = _campaign(peer.ior, cases)
    for number, finding in enumerate(campaign.findings.values(), 1):
        assert finding.confirmed and finding.reproductions == REPRODUCTIONS
        folder = save(finding, str(tmp_path), number, target_text=peer.ior, spawn=None)
        out = _replays(peer.ior, folder)
        assert out["reproduced"] and out["observed"] == finding.kind, (finding.path, out)
    if name.startswith("omni"):
        floods = [f for f in campaign.findings.values() if f.kind == "flood"]
        assert floods or campaign.dead, "omniORB's ProfileAddr flood was not found"
