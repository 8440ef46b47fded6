"""Brief campaigns against real ORBs: omniORBpy, omniNames and JacORB.
Findings are reported (printed, and written to the pytest log), not failed
on -- except that omniORB 4.2.5's known flood (endless replies to a
hand-made ProfileAddr Request) must be among them."""

import json

import pytest

from peers.fixtures import start_peer  # noqa: F401 (pytest fixture)
from peers.jacorb import start_jacorb_echo_server
from peers.omni import start_omni_echo_server, start_omni_names
from peers.process import PeerNotInstalled

from pycdr.fuzz.engine import Campaign
from pycdr.fuzz.seeds import catalog_seeds

# Brief: a few hundred cases each (most end in a short timeout against these ORBs).
CASES = 400


def _campaign(ior):
    campaign = Campaign(ior, seed=3, timeout=0.5, probe_timeout=1.0, minimize=False,
                        seed_sources=lambda t: catalog_seeds(t, echo=False))
    try:
        stats = campaign.run(max_cases=CASES)
    finally:
        campaign.close()
    report = [{"kind": f.kind, "path": f.path, "seed": f.case.seed_name,
               "case": f.case.index, "details": f.details} for f in campaign.findings.values()]
    print(json.dumps({"cases": stats.cases, "rate": round(stats.rate), "dead": campaign.dead,
                      "findings": report}, indent=1))
    assert stats.cases > 0
    return campaign


@pytest.mark.parametrize("launcher,name", [(start_omni_echo_server, "omniORBpy"),
                                           (start_omni_names, "omniNames"),
                                           (start_jacorb_echo_server, "JacORB")])
def test_brief_campaign(start_peer, launcher, name):  # noqa: F811
    try:
        peer = start_peer(launcher)
    except PeerNotInstalled as e:
        pytest.skip(str(e))
    campaign = _campaign(peer.ior)
    if name.startswith("omni"):
        floods = [f for f in campaign.findings.values() if f.kind == "flood"]
        assert floods or campaign.dead, "omniORB's ProfileAddr flood was not found"
