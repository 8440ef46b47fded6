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


def test_summary_piped_to_a_file_is_whole_lines():
    """Issue 27: `pycdr fuzz` with its output in a file (not a terminal) writes its status
    once, unwrapped, and the summary line on a line of its own (the live display's redraws
    and 80-column wrapping broke them)."""
    import subprocess
    pycdr = os.path.join(os.path.dirname(sys.executable), "pycdr")
    done = subprocess.run([pycdr, "fuzz", "--spawn", SERVE, "--max-cases", "200", "--seed",
                           "3"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    status = [line for line in lines if line.startswith("target ")]
    assert len(status) == 1 and "cases 200" in status[0] and "cases/s" in status[0], lines
    assert lines[-1].startswith("200 cases in "), lines[-3:]
    assert not any(len(line) > 200 for line in lines)


def test_coverage_table_keeps_its_columns_whatever_versions_the_mutations_made():
    """havoc flips a message's version bytes: a campaign's cases carry dozens of GIOP
    versions. The status table has a column for 1.0-1.3 and "?" each and one "other" for
    the rest (a column a version squeezed the table into 600-column lines of empty cells)."""
    from collections import Counter
    from types import SimpleNamespace

    from rich.console import Console
    from pycdr.cli.fuzz import _coverage_table
    coverage = Counter({("request", "1.2", "havoc"): 5, ("request", "1.0", "field"): 2})
    coverage.update({("request", f"{major}.{minor}", "havoc"): 1
                     for major in range(0, 256, 7) for minor in range(0, 256, 31)})
    table = _coverage_table(SimpleNamespace(coverage=coverage))
    assert [c.header for c in table.columns] == ["mutator", "1.0", "1.2", "other"]
    console = Console(width=80, record=True, file=open(os.devnull, "w"))
    console.print(table)
    text = console.export_text()
    assert "other" in text and max(map(len, text.splitlines())) <= 80
    havoc_row = next(line for line in text.splitlines() if "havoc" in line)
    assert str(sum(n for (_, v, m), n in coverage.items()
                   if m == "havoc" and v not in ("1.0", "1.1", "1.2", "1.3"))) in havoc_row
