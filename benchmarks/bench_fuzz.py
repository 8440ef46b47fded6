"""Cases per second of `pycdr fuzz` against the reference ORB on loopback
(a spawned `pycdr serve` of the conformance Echo; the goal is >= 2,000).

    .venv/bin/python benchmarks/bench_fuzz.py [CASES]
"""

import os
import sys

from pycdr.fuzz.engine import Campaign
from pycdr.fuzz.seeds import catalog_seeds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> None:
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    serve = (f"{os.path.join(os.path.dirname(sys.executable), 'pycdr')} serve "
             f"{os.path.join(ROOT, 'conformance', 'echo.idl')} --interface EchoAll::Echo")
    campaign = Campaign(None, seed=11, spawn=serve, seed_sources=catalog_seeds)
    try:
        stats = campaign.run(max_cases=cases)
    finally:
        campaign.close()
    print(f"{stats.cases} cases in {stats.elapsed:.2f} s: {stats.rate:.0f} cases/s "
          f"({stats.pipelined} pipelined, {stats.isolated} on fresh connections, "
          f"{stats.probes} probes, {len(campaign.findings)} findings)")


if __name__ == "__main__":
    main()
