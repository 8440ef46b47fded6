"""Cases per second of `pycdr fuzz` against the reference ORB on loopback
(a spawned `pycdr serve` of the conformance Echo; the goal is >= 2,000 on
2 vCPUs).  Also prints the CPU seconds the fuzzer and the target used: their
sum against the wall time says how well the two overlap (on 2 idle cores the
wall time can drop to the larger of the two).

    .venv/bin/python benchmarks/bench_fuzz.py [CASES [REPEATS]]
"""

import os
import sys
import time

from pycdr.fuzz.engine import Campaign
from pycdr.fuzz.seeds import catalog_seeds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a child process (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(cases: int) -> float:
    serve = (f"{os.path.join(os.path.dirname(sys.executable), 'pycdr')} serve "
             f"{os.path.join(ROOT, 'conformance', 'echo.idl')} --interface EchoAll::Echo")
    campaign = Campaign(None, seed=11, spawn=serve, seed_sources=catalog_seeds)
    try:
        pid = campaign.spawned.process.pid
        target_cpu = process_cpu_seconds(pid)
        fuzzer_cpu = time.process_time()
        stats = campaign.run(max_cases=cases)
        fuzzer_cpu = time.process_time() - fuzzer_cpu
        target_cpu = process_cpu_seconds(pid) - target_cpu
    finally:
        campaign.close()
    print(f"{stats.cases} cases in {stats.elapsed:.2f} s: {stats.rate:.0f} cases/s "
          f"({stats.pipelined} pipelined, {stats.isolated} on fresh connections, "
          f"{stats.probes} probes, {len(campaign.findings)} findings); CPU s: "
          f"fuzzer {fuzzer_cpu:.2f}, target {target_cpu:.2f}", flush=True)
    return stats.rate


def main() -> None:
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    rates = sorted(one_run(cases) for _ in range(repeats))
    if repeats > 1:
        print(f"cases/s over {repeats} runs: min {rates[0]:.0f}, "
              f"median {rates[len(rates) // 2]:.0f}, max {rates[-1]:.0f}")


if __name__ == "__main__":
    main()
