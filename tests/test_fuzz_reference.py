"""The reference ORB (spawned `pycdr serve` of the conformance Echo) survives a
bounded campaign with no finding.  20,000 cases: about 16 s on 2 cores."""

import os
import sys

from pycdr.fuzz.engine import Campaign
from pycdr.fuzz.seeds import catalog_seeds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVE = (f"{os.path.join(os.path.dirname(sys.executable), 'pycdr')} serve "
         f"{os.path.join(ROOT, 'conformance', 'echo.idl')} --interface EchoAll::Echo")
CASES = 20000


def test_reference_orb_survives_campaign():
    campaign = Campaign(None, seed=7, spawn=SERVE, timeout=1.0, seed_sources=catalog_seeds)
    try:
        stats = campaign.run(max_cases=CASES)
    finally:
        campaign.close()
    assert stats.cases == CASES
    assert not campaign.findings, [(f.kind, f.path, f.details) for f in
                                   campaign.findings.values()]
    assert stats.restarts == 0 and not campaign.dead
