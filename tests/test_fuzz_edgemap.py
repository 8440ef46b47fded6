"""The scan of a sancov edge map: pycdr.fuzz._edgemap (C) and its pure-Python
twin give the same features, in the same order, and EdgeMap.features()
gives what a case left in the map, masked and uncounted edges as the
campaign set them."""

import random

import pytest

from pycdr.fuzz import feedback
from pycdr.fuzz.feedback import BUCKET, MAP_SIZE, EdgeMap, _features_python

try:
    from pycdr.fuzz._edgemap import features as c_features
except ImportError:           # not built: the Python scan alone is used
    c_features = None

needs_c = pytest.mark.skipif(c_features is None, reason="pycdr.fuzz._edgemap is not built")


def _flags(edges, size=MAP_SIZE) -> bytes:
    out = bytearray(size)
    for edge in edges:
        out[edge] = 1
    return bytes(out)


def _maps():
    """Edge maps as cases leave them (a few hundred edges, in runs and
    alone), and the corners: empty, full, edge 0, the last word."""
    rng = random.Random(7)
    for _ in range(40):
        data = bytearray(MAP_SIZE)
        for _ in range(rng.randrange(1, 600)):
            at = rng.randrange(MAP_SIZE)
            for edge in range(at, min(MAP_SIZE, at + rng.choice((1, 1, 2, 9)))):
                data[edge] = rng.randrange(1, 256)
        yield bytes(data)
    yield bytes(MAP_SIZE)
    yield bytes(range(256)) * (MAP_SIZE // 256)
    yield b"\x05" + bytes(MAP_SIZE - 2) + b"\x80"


@needs_c
def test_c_and_python_scans_give_the_same_features():
    rng = random.Random(8)
    for data in _maps():
        passed = [k for k, count in enumerate(data) if count]
        masked = _flags(rng.sample(passed, len(passed) // 5))
        uncounted = _flags(rng.sample(passed, len(passed) // 7))
        for flags in ((bytes(MAP_SIZE), bytes(MAP_SIZE)), (masked, uncounted)):
            python = _features_python(data, *flags, BUCKET)
            assert c_features(data, *flags, BUCKET) == python
            # (Each edge once, in the order of the edges, 0 and masked ones left out.)
            edges = [f >> 4 for f in python]
            assert edges == sorted(set(edges)) and 0 not in edges
            assert not any(flags[0][e] for e in edges)
    # A map whose length is no multiple of a word: its tail is read too.
    odd = bytes(13) + b"\x03\x00\x11"
    assert c_features(odd, bytes(16), bytes(16), BUCKET) == \
        _features_python(odd, bytes(16), bytes(16), BUCKET) == [13 << 4 | 3, 15 << 4 | 6]


@needs_c
def test_c_scan_refuses_flags_of_another_size():
    with pytest.raises(ValueError, match="as long as the map"):
        c_features(bytes(64), bytes(32), bytes(64), BUCKET)


@pytest.mark.parametrize("scan", ["c", "python"])
def test_edge_map_features_follow_masked_and_uncounted_edges(scan, monkeypatch):
    if scan == "c" and c_features is None:
        pytest.skip("pycdr.fuzz._edgemap is not built")
    monkeypatch.setattr(feedback, "_features", c_features if scan == "c" else _features_python)
    edge_map = EdgeMap()
    try:
        edge_map.map[5] = 1
        edge_map.map[6] = 20          # bucket 6 (16-31)
        edge_map.map[700] = 200       # bucket 8 (128+)
        edge_map.map[0] = 3           # a guard not numbered yet: no edge
        assert edge_map.features() == frozenset({5 << 4 | 1, 6 << 4 | 6, 700 << 4 | 8})
        # Sets the campaign grows (|=) are followed at once.
        edge_map.masked |= {5}
        edge_map.uncounted |= {700}
        assert edge_map.features() == frozenset({6 << 4 | 6, 700 << 4 | 1})
        edge_map.reset()
        assert edge_map.features() == frozenset()
    finally:
        edge_map.close()
