"""A `pycdr fuzz --coverage sancov` campaign against omniORB 4.2.5 built by
benchmarks/omniorb/build.sh, printing how the edges grow.

    python benchmarks/omniorb/campaign.py [--servant cxx|python] [--duration S]
        [--every S] [--seed N] [--out DIR] [--catalog] [--until KIND[:REGEX]]
        [--coverage sancov|none]

--servant cxx (default): the C++ echo servant (echo/echo_server); python:
omniORBpy's echo server (tests/peers/omni_server.py) in the build's
python-asan.  Both serve conformance/echo.idl; the campaign is seeded with its
operations (and the conformance catalog with --catalog).  Every --every
seconds a line: seconds, cases, edges, features, inputs kept, corpus size,
restarts, findings; at the end the JSON summary's feedback and the findings
(saved under --out, as `pycdr fuzz` saves them).  --until KIND[:REGEX] ends
the campaign at its first confirmed finding of that kind (crash, cpu, ...),
one of whose minimized messages matches REGEX in hex if given (eight tk_any
TypeCodes in a row, in either byte order, for omniORB's nested anys:
'cpu:(0b000000){8}|(0000000b){8}'), and says how many seconds from the start
(the target's start included) it took.  --coverage none runs the same
campaign without feedback (cases from the seeds alone), its processes
writing their edges into one map that is never cleared, for comparison:
`edges_past_start` (in both) counts the edges any process passed (under
sancov: each map's, every time it is cleared, masked ones too) but those of
the target's start-up and idle threads (of a process started alone, before
the campaign, and left idle 0.5 s).
A line, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)

from pycdr.fuzz import seeds as S                       # noqa: E402
from pycdr.fuzz.engine import Campaign                  # noqa: E402
from pycdr.fuzz import feedback as F                    # noqa: E402
from pycdr.fuzz.feedback import ENV, EdgeMap            # noqa: E402
from pycdr.fuzz.target import SpawnedTarget             # noqa: E402
from pycdr.fuzz.findings import save, save_unconfirmed  # noqa: E402

BUILD = os.environ.get("PYCDR_OMNIORB_COV", os.path.expanduser("~/.cache/pycdr/omniorb-4.2.5-cov"))
IDL = os.path.join(REPO, "conformance", "echo.idl")
INTERFACE = "EchoAll::Echo"
ENDPOINT = "-ORBendPoint giop:tcp:127.0.0.1:"
# Reports written at once (the crash is an exit, not a hang while it
# symbolizes); a killed target has no leaks to report; freed memory kept
# in quarantine up to 64 MB, not ASan's 256 (the campaign's RSS limit: a
# case that allocates and frees much, nested anys, grew the server by it).
ASAN_OPTIONS = "symbolize=0:detect_leaks=0:quarantine_size_mb=64"


def spawn_command(servant: str) -> str:
    if servant == "cxx":
        return f"{BUILD}/echo/echo_server {ENDPOINT}"
    server = os.path.join(REPO, "tests", "peers", "omni_server.py")
    return f"{BUILD}/omnipy/bin/python-asan {server} --idl {IDL} --interface {INTERFACE} -- {ENDPOINT}"


def raw_edges(edge_map) -> set:
    """Every edge ``edge_map`` shows, masked ones too."""
    nothing = bytes(F.MAP_SIZE)
    return {f >> 4 for f in F._features(edge_map.map, nothing, nothing, F.BUCKET)}


def start_edges(spawn: str) -> set:
    """The edges a process of ``spawn`` passes starting up and idle for 0.5 s."""
    edge_map = EdgeMap()
    target = SpawnedTarget(spawn, env=edge_map.environment())
    try:
        target.start()
        time.sleep(0.5)
        return set(edge_map.edges())
    finally:
        target.stop()
        edge_map.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--servant", choices=("cxx", "python"), default="cxx")
    parser.add_argument("--duration", type=float, default=300.0)
    parser.add_argument("--every", type=float, default=15.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="omniorb-findings")
    parser.add_argument("--catalog", action="store_true")
    parser.add_argument("--until", default="", metavar="KIND[:REGEX]")
    parser.add_argument("--coverage", choices=("sancov", "none"), default="sancov")
    options = parser.parse_args()
    os.environ.setdefault("ASAN_OPTIONS", ASAN_OPTIONS)
    spawn = spawn_command(options.servant)
    if not os.path.exists(spawn.split()[0]):
        sys.exit(f"campaign.py: {spawn.split()[0]} is missing: run benchmarks/omniorb/build.sh")

    def seed_sources(target):
        out = S.catalog_seeds(target) if options.catalog else []
        return out + S.idl_seeds(IDL, INTERFACE, target.object_key,
                                 rng=random.Random(f"{options.seed}:idl"))

    saved = []
    began = time.monotonic()
    found = {}

    class Found(Exception):
        pass

    def on_finding(f) -> None:
        saved.append(save(f, options.out, len(saved) + 1, target_text=None, spawn=spawn,
                          answers=f.answers))
        kind, _, pattern = options.until.partition(":")
        if f.kind == kind and any(re.search(pattern, m.hex()) for m in f.messages) \
                and not found:
            found.update(kind=f.kind, seconds=round(time.monotonic() - began, 1),
                         case=f.case.index, folder=f.folder,
                         details={k: v for k, v in f.details.items() if k != "sanitizer_report"})
    at_start = start_edges(spawn)
    witness = None
    if options.coverage == "none":
        witness = EdgeMap()
        os.environ[ENV] = witness.path          # (every process started writes into it)

    passed: set = set()                         # under sancov, what the maps showed
    clear = EdgeMap.reset

    def reset_keeping(edge_map) -> None:
        passed.update(raw_edges(edge_map))
        clear(edge_map)
    EdgeMap.reset = reset_keeping

    def edges(c) -> set:
        if witness is not None:
            return set(witness.edges())
        return {f >> 4 for f in c.corpus.seen}

    def all_edges(c) -> set:
        if witness is not None:
            return set(witness.edges())
        return passed | raw_edges(c.edge_map)
    campaign = Campaign(None, seed=options.seed, spawn=spawn, coverage=options.coverage,
                        seed_sources=seed_sources,
                        probe_request=S.idl_probe_request(IDL, INTERFACE))
    campaign.on_finding = on_finding
    campaign.on_unconfirmed = lambda f: saved.append(
        save_unconfirmed(f, options.out, len(saved) + 1))
    next_line = [0.0]
    print("seconds  cases  edges  features  kept  corpus  restarts  findings", flush=True)

    def line(c) -> None:
        fb = c.feedback_summary()
        print(f"{time.monotonic() - began:7.0f}  {c.stats.cases:5}  {len(edges(c)):5}  "
              f"{fb.get('features', 0):8}  {fb.get('kept', 0):4}  {fb.get('corpus', 0):6}  "
              f"{c.stats.restarts:8}  {len(c.findings)}+{len(c.unconfirmed)}u", flush=True)

    def progress(c) -> None:
        if time.monotonic() - began >= next_line[0]:
            next_line[0] += options.every
            line(c)
        if found:
            raise Found()
    try:
        line(campaign)
        try:
            campaign.run(duration=options.duration, progress=progress)
        except Found:
            pass
        line(campaign)
        seen, passed = edges(campaign), all_edges(campaign)
    finally:
        campaign.close()
        if witness is not None:
            witness.close()
    print(json.dumps({"feedback": campaign.feedback_summary(),
                      "edges": len(seen), "edges_past_start": len(passed - at_start),
                      "cases": campaign.stats.cases, "elapsed": round(campaign.stats.elapsed, 1),
                      "restarts": campaign.stats.restarts,
                      "findings": [{"kind": f.kind, "path": f.path, "folder": f.folder,
                                    "sanitizer": f.details.get("sanitizer")}
                                   for f in campaign.findings.values()],
                      "unconfirmed": [{"kind": f.kind, "details": f.details.get("probe")}
                                      for f in campaign.unconfirmed],
                      "median_case_cpu_seconds": campaign.cost_median(),
                      "until": found or None}, indent=1))


if __name__ == "__main__":
    main()
