"""The ORB's fast GIOP 1.2/1.3 decode in C (pycdr.codec._speedups.decode_common_12) against
its Python form (pycdr.giop.messages.fast12._decode_common_12_python): for every message of
the captures and the samples, mutated and cut, the same message -- every field, of
the same type -- or None from both, and the same error when there is one."""

import gc
import random
import sys

import pytest

from pycdr.codec import marshal
from pycdr.errors import PycdrError
from pycdr.giop.messages import fast12
from pycdr.giop.header import parse_header
from pycdr.giop.messages import KeyAddr, Reply, Request, encode_message
from pycdr.giop.service_contexts import CodeSetsContext

from giop_samples import decode_outcome, message_fields, with_size
from test_giop_connection_properties import PIECES

pytestmark = pytest.mark.skipif(marshal.IMPLEMENTATION != "c",
                                reason="the C path is not in use (PYCDR_PURE=1 or not built)")

PYTHON = fast12._decode_common_12_python


def c_decode(data, header):
    from pycdr.codec import _speedups
    return _speedups.decode_common_12(data, header)


def variants(data: bytes, rng: random.Random):
    """data; cut after random bytes with its size saying so; bytes changed."""
    yield data
    for end in sorted(rng.sample(range(12, len(data)), min(8, len(data) - 12))):
        yield with_size(data[:end], end - 12)
    for _ in range(8):
        mutated = bytearray(data)
        at = rng.randrange(12, len(data)) if len(data) > 12 else rng.randrange(len(data))
        mutated[at] = rng.choice([0, 1, 3, 7, 0x7F, 0xFF, rng.randrange(256)])
        yield bytes(mutated)


def test_c_decodes_every_message_as_python():
    rng = random.Random(7)
    taken = {"message": 0, "none": 0, "error": 0}
    for piece in PIECES:
        for data in variants(piece, rng):
            for buffer in (data, bytearray(data)):
                header = None
                try:
                    header = parse_header(buffer)
                except PycdrError:
                    pass
                for given in {None, header}:
                    expected = decode_outcome(PYTHON, buffer, given)
                    assert decode_outcome(c_decode, buffer, given) == expected, data.hex()
                    taken[expected[0]] += 1
    assert taken["message"] > 300 and taken["none"] > 3000 and taken["error"] > 10, taken


def test_module_uses_the_c_form_and_the_messages_behave():
    assert fast12._decode_common_12 is not PYTHON
    data = encode_message(Request(version=(1, 2), request_id=9, operation="op",
                                  target=KeyAddr(b"key"), body=b"\0\0\0\1"))
    first, second = fast12._decode_common_12(data, None), fast12._decode_common_12(data, None)
    assert first == second == PYTHON(data, None)
    # fresh default_factory fields, not the template's
    first.warnings.append("x")
    first.offsets["x"] = 1
    assert second.warnings == [] and second.offsets == {} and first.padding is not second.padding
    # the frozen target hashes and refuses assignment like one made by KeyAddr()
    assert hash(first.target) == hash(KeyAddr(b"key")) and first.target == KeyAddr(b"key")
    with pytest.raises(AttributeError):
        first.target.object_key = b"other"
    assert repr(first) == repr(PYTHON(data, None))
    assert first.body_reader().read_ulong() == 1


def test_c_hands_other_buffers_to_python():
    data = encode_message(Reply(version=(1, 3), request_id=2, body=b"\1"))
    view = memoryview(data)
    assert message_fields(c_decode(view, None)) == message_fields(PYTHON(view, None))


def test_no_reference_leak():
    from pycdr.codec import _speedups
    data = encode_message(Request(version=(1, 2), little=True, request_id=9, operation="op",
                                  target=KeyAddr(b"key"), body=b"\0\0\0\1"))
    with_contexts = encode_message(Reply(version=(1, 2), request_id=3, body=b"\1",
                                         service_contexts=[CodeSetsContext(char_data=1,
                                                                           wchar_data=2)]))
    calls = [lambda: c_decode(data, None), lambda: c_decode(bytearray(data), None),
             lambda: c_decode(with_contexts, None), lambda: c_decode(data[:-1], None),
             lambda: _speedups.decode_common_12(bytearray(data), None, True),
             lambda: c_decode(with_size(data[:33], 21), None),
             lambda: decode_outcome(c_decode, b"GIOX" + data[4:])]
    for call in calls:
        for _ in range(200):
            call()
        gc.collect()
        before = sys.getallocatedblocks()
        for _ in range(2000):
            call()
        gc.collect()
        assert sys.getallocatedblocks() - before < 50


def test_body_views_are_read_only_views_of_the_message():
    # body_view=True (an ORB's connections): the body is data's bytes, not a copy,
    # in C as in Python, from bytes and from a bytearray received in place.
    from pycdr.codec import _speedups
    body = bytes(range(256)) * 300
    data = encode_message(Request(version=(1, 2), request_id=9, operation="op",
                                  target=KeyAddr(b"key"), body=body))
    for buffer in (data, bytearray(data)):
        for decode in (PYTHON, _speedups.decode_common_12):
            msg = decode(buffer, None, True)
            assert type(msg.body) is memoryview and msg.body.readonly
            assert msg.body.obj is buffer and msg.body == body
            assert msg == decode(buffer, None)          # equal to the copying decoding
            assert msg.body_reader().read_raw(8) == body[:8]


FRAME_PYTHON = fast12._frame_common_12_python


def frame_outcome(fn, data, pos, limit) -> tuple:
    """What fn(data, pos, limit) gives (a _frame_common_12): each message's bytes (and
    whether they are ``data`` itself) and fields, and the end."""
    taken, end = fn(data, pos, limit)
    return [(raw, raw is data, message_fields(msg)) for raw, msg in taken], end


def test_c_frames_every_run_as_python():
    from pycdr.codec import _speedups
    rng = random.Random(11)
    pieces = [data for piece in PIECES for data in variants(piece, rng)]
    taken = ended = 0
    for _ in range(3000):
        run = b"".join(rng.choice(PIECES if rng.random() < 0.7 else pieces)
                       for _ in range(rng.randrange(1, 5)))
        if rng.random() < 0.3:
            run = run[:rng.randrange(len(run) + 1)]     # an incomplete message last
        pos = rng.choice([0, 0, rng.randrange(len(run) + 1)])
        limit = rng.choice([1 << 31, 1 << 31, rng.randrange(64, 4096)])
        expected = frame_outcome(FRAME_PYTHON, run, pos, limit)
        assert frame_outcome(_speedups.frame_common_12, run, pos, limit) == expected, \
            (run.hex(), pos, limit)
        taken += len(expected[0])
        ended += expected[1] == len(run)
    assert fast12.frame_common_12 is _speedups.frame_common_12
    assert taken > 300 and 100 < ended < 3000, (taken, ended)


def test_a_run_of_one_whole_message_is_framed_without_a_copy():
    from pycdr.codec import _speedups
    data = encode_message(Reply(version=(1, 2), request_id=2, body=b"\0\0\0\1"))
    for frame in (FRAME_PYTHON, _speedups.frame_common_12):
        (raw, msg), = frame(data, 0, 1 << 20)[0]
        assert raw is data and msg.body.obj is data
        (raw, _), (second, _) = frame(data + data, 0, 1 << 20)[0]
        assert raw == second == data
        assert frame(data, 0, len(data) - 13) == ([], 0)     # over the limit
    with pytest.raises(TypeError):
        _speedups.frame_common_12(bytearray(data), 0, 1 << 20)


def test_framing_leaks_no_reference():
    from pycdr.codec import _speedups
    data = encode_message(Request(version=(1, 2), little=True, request_id=9, operation="op",
                                  target=KeyAddr(b"key"), body=b"\0\0\0\1"))
    with_contexts = encode_message(Reply(version=(1, 2), request_id=3, body=b"\1",
                                         service_contexts=[CodeSetsContext(char_data=1,
                                                                           wchar_data=2)]))
    for run in (data, data + with_contexts + data[:20], b"GIOX" + data[4:], data[:-1]):
        for _ in range(200):
            _speedups.frame_common_12(run, 0, 1 << 20)
        gc.collect()
        before = sys.getallocatedblocks()
        for _ in range(2000):
            _speedups.frame_common_12(run, 0, 1 << 20)
        gc.collect()
        assert sys.getallocatedblocks() - before < 50


CHAIN_PYTHON = fast12._frame_chain_12_python


def chain_outcome(fn, data, pos, limit, whole_limit):
    got = fn(data, pos, limit, whole_limit)
    if got is None:
        return None
    frames, whole, msg, end = got
    if pos == 0 and end == len(data):           # (else copies: a view keeps all of data)
        assert all(type(f) is memoryview and f.obj is data for f in frames)
    else:
        assert all(type(f) is bytes for f in frames)
    return [bytes(f) for f in frames], whole, message_fields(msg), end


def chains(rng: random.Random):
    """Fragmented Requests and Replies (and other messages) of every version and byte
    order, with what may follow them, changed here and there."""
    from pycdr.giop.messages import encode_fragments
    for _ in range(1500):
        version = rng.choice([(1, 1), (1, 2), (1, 3), (1, 3)])
        little = rng.random() < 0.5
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300)))
        if rng.random() < 0.5:
            msg = Request(version=version, little=little, request_id=rng.randrange(1 << 32),
                          operation=rng.choice(["op", "echo_octets"]),
                          target=KeyAddr(b"key" * rng.randrange(1, 9)), body=body)
        else:
            msg = Reply(version=version, little=little, request_id=rng.randrange(1 << 32),
                        reply_status=rng.choice([0, 0, 0, 1]), body=body)
        data = encode_message(msg)
        pieces = encode_fragments(msg, data, rng.choice([32, 48, 64, 128]))
        run = b"".join(pieces) + rng.choice([b"", data, data[:10]])
        if rng.random() < 0.3:
            mutated = bytearray(run)
            at = rng.randrange(len(run))
            mutated[at] = rng.choice([0, 1, 2, 3, 7, 0xFF, rng.randrange(256)])
            run = bytes(mutated)
        if rng.random() < 0.1:
            run = run[:rng.randrange(len(run))]
        yield run


def test_c_frames_every_chain_as_python():
    from pycdr.codec import _speedups
    rng = random.Random(5)
    taken = 0
    for run in chains(rng):
        pos = 0
        limit = rng.choice([1 << 31, 1 << 31, rng.randrange(16, 200)])
        whole_limit = rng.choice([64 << 20, 64 << 20, rng.randrange(16, 400)])
        expected = chain_outcome(CHAIN_PYTHON, run, pos, limit, whole_limit)
        assert chain_outcome(_speedups.frame_chain_12, run, pos, limit, whole_limit) == \
            expected, (run.hex(), limit, whole_limit)
        taken += expected is not None
    assert fast12.frame_chain_12 is _speedups.frame_chain_12
    assert 200 < taken < 1400, taken


def test_chain_framing_leaks_no_reference():
    from pycdr.codec import _speedups
    from pycdr.giop.messages import encode_fragments
    msg = Request(version=(1, 2), little=True, request_id=9, operation="op",
                  target=KeyAddr(b"key"), body=bytes(200))
    run = b"".join(encode_fragments(msg, encode_message(msg), 64))
    for data in (run, run[:-3], run + run[:20]):
        for _ in range(200):
            _speedups.frame_chain_12(data, 0, 1 << 20, 1 << 20)
        gc.collect()
        before = sys.getallocatedblocks()
        for _ in range(2000):
            _speedups.frame_chain_12(data, 0, 1 << 20, 1 << 20)
        gc.collect()
        assert sys.getallocatedblocks() - before < 50
