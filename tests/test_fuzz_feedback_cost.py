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

    def _observe_group(self, cases, more=None, **kw):
        observations = super()._observe_group(cases, more, **kw)
        # (Counted after: a group's further cases are appended to it meanwhile.)
        self.alone = getattr(self, "alone", 0) + len(cases)
        return observations

    def check(self, messages, *args, **options):
        self.checks = getattr(self, "checks", 0) + 1
        return super().check(messages, *args, **options)

    def _run_batch(self, cases, tail=None):
        self.batched = getattr(self, "batched", set()) | {c.index for c in cases}
        return super()._run_batch(cases, tail)

    def _keep(self, case, new):
        self.kept_cases = getattr(self, "kept_cases", []) + [case.index]
        return super()._keep(case, new)


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


def test_new_states_of_pipelined_batches_run_again_together(campaign):
    """A case whose state in a pipelined batch is new is kept only when it
    shows it again alone; those cases run again together, each on a
    connection of its own, not one check (a round of the target's answers)
    each."""
    c = campaign()
    stats = c.run(max_cases=1500)
    assert stats.cases == 1500 and stats.pipelined > 0 and not c.findings
    from_batches = [k for k in c.kept_cases if k in c.batched]
    assert len(from_batches) >= 2, (c.kept_cases, stats.pipelined)
    assert getattr(c, "checks", 0) < len(from_batches), (c.checks, from_batches)


def test_a_case_whose_request_id_the_batch_has_waits_for_the_next_batch():
    """Under state feedback a batch's answers go back to their cases by request
    id: a case with an id of the batch's is held for a later batch (mutated from
    one input, most cases share its ids), not sent on a connection of its own."""
    from types import SimpleNamespace

    from pycdr.fuzz.prediction import Prediction
    from pycdr.fuzz.window import HELD, Batches

    def case(*ids):
        return SimpleNamespace(prediction=Prediction(answers=len(ids), request_ids=ids))
    batches = Batches(distinct_ids=True)
    a, b, c, d = case(1), case(1, 2), case(3), case(1)
    assert all(batches.add(x) for x in (a, b, c, d))
    assert len(batches) == 2
    assert batches.take() == [a, c]
    assert batches.take() == [b]           # (b and d share id 1)
    assert batches.take() == [d] and len(batches) == 0
    for _ in range(HELD + 1):
        assert batches.add(case(7))
    assert not batches.add(case(7))        # past HELD held: on a connection of its own
    plain = Batches()
    assert plain.add(a) and plain.add(d) and plain.take() == [a, d]
