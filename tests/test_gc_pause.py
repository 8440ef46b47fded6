"""Decoding a long sequence of containers pauses the cyclic GC while the elements
are built (both paths) and leaves it as it was, also after an error."""

import gc

import pytest

from pycdr.codec import marshal, tc
from pycdr.errors import CDRError
from pycdr.codec.plan import GC_PAUSE_MIN
from pycdr.codec.values import class_for

POINT = tc.struct("IDL:GcPausePoint:1.0", "GcPausePoint", [("x", tc.long), ("tag", tc.string)])
Point = class_for(POINT)


def collections_during(decode):
    """(result or exception, number of collections started) with a GC threshold of
    10, at which building thousands of objects would collect hundreds of times."""
    started = []
    callback = lambda phase, info: phase == "start" and started.append(info)  # noqa: E731
    thresholds = gc.get_threshold()
    gc.callbacks.append(callback)
    gc.set_threshold(10)
    try:
        try:
            result = decode()
        except CDRError as e:
            result = e
    finally:
        gc.set_threshold(*thresholds)
        gc.callbacks.remove(callback)
    return result, len(started)


@pytest.fixture
def gc_state():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("enabled", [True, False], ids=["gc-on", "gc-off"])
def test_long_sequences_of_containers_decode_without_collections(impl, gc_state, enabled):
    (gc.enable if enabled else gc.disable)()
    for seq, value in ((tc.sequence(POINT), [Point(i, "p") for i in range(5000)]),
                       (tc.sequence(tc.sequence(tc.long)), [[i, i] for i in range(5000)])):
        data = marshal.encode(seq, value)
        decoded, collections = collections_during(lambda: marshal.decode(seq, data))
        assert len(decoded) == 5000 and decoded[-1] == value[-1]
        assert collections <= 2          # at most one before and one after the elements
        assert gc.isenabled() == enabled
        error, _ = collections_during(lambda: marshal.decode(seq, data[:-3]))
        assert isinstance(error, CDRError)
        assert gc.isenabled() == enabled


def test_short_sequences_and_atomic_elements_leave_the_gc_alone(impl, gc_state):
    # Below GC_PAUSE_MIN elements the GC runs as usual (63 new objects at threshold
    # 10: several collections); elements that are not containers (strings) never
    # pause it (seen on the Python path through gc.disable).
    gc.enable()
    points = tc.sequence(POINT)
    short = marshal.encode(points, [Point(i, "p") for i in range(GC_PAUSE_MIN - 1)])
    decoded, collections = collections_during(lambda: marshal.decode(points, short))
    assert len(decoded) == GC_PAUSE_MIN - 1 and collections >= 3
    seen = []
    real_disable = gc.disable
    strings = marshal.encode(tc.sequence(tc.string), ["s"] * 5000)
    try:
        gc.disable = lambda: seen.append("disable") or real_disable()
        assert len(marshal.decode(tc.sequence(tc.string), strings)) == 5000
        marshal.decode(points, marshal.encode(points, [Point(1, "p")] * GC_PAUSE_MIN))
    finally:
        gc.disable = real_disable
    assert seen == ([] if impl == "c" else ["disable"]) and gc.isenabled()
