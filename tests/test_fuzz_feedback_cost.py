"""What state feedback costs a campaign beyond the cases: the corpus's first
run, the new states of pipelined batches run again alone, the power
schedule's picks.  Against the reference ORB (spawned `pycdr serve`)."""

import os
import sys

import pytest

from pycdr.fuzz.engine import Campaign
from pycdr.fuzz.seeds import catalog_seeds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVE = (f"{os.path.join(os.path.dirname(sys.executable), 'pycdr')} serve "
         f"{os.path.join(ROOT, 'conformance', 'echo.idl')} --interface EchoAll::Echo")


class CountingCampaign(Campaign):
    """Counts the cases run each on a connection of its own, and the
    pipelined batches."""

    def _observe_group(self, cases):
        self.alone = getattr(self, "alone", 0) + len(cases)
        return super()._observe_group(cases)


@pytest.fixture
def campaign():
    made = []

    def make(**options):
        made.append(CountingCampaign(None, seed=5, spawn=SERVE, coverage="state",
                                     seed_sources=catalog_seeds, minimize=False, **options))
        return made[-1]
    yield make
    for c in made:
        c.close()


def test_the_corpus_first_run_pipelines_what_a_batch_can_hold(campaign):
    """The seeds a pipelined batch can hold go in batches (only those whose
    state showed something new run again alone), and what the first run knows is
    what running every seed on a connection of its own shows."""
    c = campaign()
    seeds = len(c.seeds)
    batchable = sum(1 for e in c.corpus.entries if _batchable(e))
    assert batchable > seeds / 2
    assert c.alone < seeds - batchable / 2, (c.alone, seeds, batchable)
    first = set(c.corpus.seen)
    alone = c._states_together(c.corpus.entries)
    assert len(alone) == seeds
    assert set().union(*alone.values()) == first


def test_without_pipelining_the_first_run_is_a_connection_each(campaign):
    c = campaign(batch=1)
    assert c.alone == len(c.seeds)


def _batchable(entry):
    from pycdr.fuzz.prediction import framing, predict
    p = predict(entry.messages)
    return framing(p, entry.messages)[0] and len(set(p.request_ids)) == len(p.request_ids)
