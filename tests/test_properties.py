"""Property tests: random TypeCodes with random values round-trip in both byte
orders, every start offset mod 8 and GIOP 1.1/1.2; random or mutated bytes
raise only pycdr's own errors."""

import math
import os

from hypothesis import HealthCheck, given, settings, strategies as st

import pycdr
from pycdr.errors import PycdrError
from pycdr.codec.tcmarshal import decode_typecode_encapsulation, encode_typecode_encapsulation

from strategies import typecodes, typecodes_and_values

# 100 examples a test in the normal run; PYCDR_HYPOTHESIS_EXAMPLES=5000 for a long soak.
SETTINGS = settings(max_examples=int(os.environ.get("PYCDR_HYPOTHESIS_EXAMPLES", "100")),
                    deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _same(a, b):
    """Equality that treats -0.0/0.0 as the bytes do (they are distinct on the wire)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


@SETTINGS
@given(typecodes_and_values(), st.booleans(), st.integers(0, 7), st.sampled_from([(1, 1), (1, 2)]))
def test_round_trip(tv, little, offset, version):
    t, value = tv
    data = pycdr.encode(t, value, little=little, offset=offset, version=version)
    back = pycdr.decode(t, data, little=little, offset=offset, version=version)
    assert back == value
    # The encoding is canonical: re-encoding the decoded value gives the same bytes.
    assert pycdr.encode(t, back, little=little, offset=offset, version=version) == data


@SETTINGS
@given(typecodes_and_values(), st.booleans())
def test_encapsulation_round_trip(tv, little):
    t, value = tv
    data = pycdr.encode_encapsulation(t, value, little=little)
    assert data[0] == (1 if little else 0)
    assert pycdr.decode_encapsulation(t, data) == value


@SETTINGS
@given(typecodes(), st.booleans())
def test_typecode_round_trip(t, little):
    data = encode_typecode_encapsulation(t, little=little)
    back = decode_typecode_encapsulation(data)
    assert back.equal(t)
    assert encode_typecode_encapsulation(back, little=little) == data


@SETTINGS
@given(typecodes(), st.binary(max_size=200), st.booleans(), st.booleans())
def test_random_bytes_raise_only_library_errors(t, data, little, lenient):
    try:
        pycdr.decode(t, data, little=little, lenient=lenient, warnings=[])
    except PycdrError:
        pass


@SETTINGS
@given(typecodes_and_values(max_leaves=8), st.data(), st.booleans())
def test_mutated_bytes_raise_only_library_errors(tv, data, lenient):
    t, value = tv
    encoded = bytearray(pycdr.encode(t, value))
    if encoded:
        for _ in range(data.draw(st.integers(1, 4))):
            i = data.draw(st.integers(0, len(encoded) - 1))
            encoded[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(encoded)))
    for sample in (bytes(encoded), bytes(encoded[:cut])):
        try:
            pycdr.decode(t, sample, lenient=lenient, warnings=[])
        except PycdrError:
            pass


@SETTINGS
@given(typecodes(), st.data())
def test_mutated_typecode_bytes_raise_only_library_errors(t, data):
    encoded = bytearray(encode_typecode_encapsulation(t))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(encoded) - 1))
        encoded[i] = data.draw(st.sampled_from([0, 1, 0x7f, 0x80, 0xff, data.draw(
            st.integers(0, 255))]))
    try:
        decode_typecode_encapsulation(bytes(encoded))
    except PycdrError:
        pass
