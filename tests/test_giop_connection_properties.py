"""Property tests of the sans-I/O GIOP connection: streams of real messages, with
bytes changed, removed or inserted and messages cut short (their message_size made
to agree, so the cut reaches the decoders rather than the framing), give events and
never an exception; the ORB's lean decoding gives the detailed decoding's events;
reads of any sizes through receive_buffer() give what receive_data() gives."""

import glob
import os

from hypothesis import HealthCheck, given, settings, strategies as st

from pycdr.errors import PycdrError
from pycdr.giop.connection import GiopConnection, Role
from pycdr.giop.header import parse_header
from pycdr.giop.events import ConnectionClosed, MessageReceived, ProtocolViolation

from giop_samples import sample_messages, with_size
from test_giop_connection import drain, stream_for_server
from test_giop_receive_buffer import (feed_by_buffer, large_request, reference_events,  # noqa: F401
                                      small_buffers, summary)

# (small_buffers: the receive-buffer tests' sizes, so a message can be received in
# place here too.  It only sets module constants, the same for every example.)
SETTINGS = settings(max_examples=int(os.environ.get("PYCDR_HYPOTHESIS_EXAMPLES", "100")),
                    deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])

CAPTURES = os.path.join(os.path.dirname(__file__), os.pardir, "captures")


def capture_messages() -> list[bytes]:
    """The GIOP messages of every capture in captures/ (real ORBs' too), one a piece;
    what does not frame (the malformed captures' tails) as one piece more."""
    from pycdr.capture.read import read_tcp_segments
    streams: dict = {}
    for path in sorted(glob.glob(os.path.join(CAPTURES, "**", "*.pcap"), recursive=True)):
        for segment in read_tcp_segments(path):
            key = (path, segment.src, segment.sport, segment.dst, segment.dport)
            streams[key] = streams.get(key, b"") + segment.payload
    pieces = []
    for stream in streams.values():
        pos = 0
        while len(stream) - pos >= 12:
            try:
                end = pos + parse_header(stream, pos).total_size
            except PycdrError:
                break
            if end > len(stream):
                break
            pieces.append(stream[pos:end])
            pos = end
        if pos < len(stream):
            pieces.append(stream[pos:])
    return pieces


PIECES = [*sample_messages(), stream_for_server()[0], large_request(1, size=20000),
          *capture_messages()]


@st.composite
def streams(draw):
    pieces = draw(st.lists(st.sampled_from(PIECES), min_size=1, max_size=4))
    if draw(st.booleans()):
        # The first message cut after any byte, its size saying so.
        first = pieces[0]
        end = draw(st.integers(12, len(first)))
        pieces[0] = with_size(first[:end], end - 12)
    data = bytearray(b"".join(pieces))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(data)))
        change = draw(st.sampled_from(["set", "remove", "insert"]))
        if change == "set" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif change == "remove":
            del data[at:at + draw(st.integers(1, 16))]
        elif change == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
    return bytes(data)


def events_of(stream: bytes, role: Role, **options) -> list:
    connection = GiopConnection(role, **options)
    connection.receive_data(stream)
    connection.receive_data(b"")
    events = drain(connection)
    assert events and isinstance(events[-1], ConnectionClosed)
    for event in events:
        assert isinstance(event, (MessageReceived, ProtocolViolation, ConnectionClosed))
    return summary(events)


@SETTINGS
@given(streams(), st.sampled_from([Role.SERVER, Role.CLIENT]), st.booleans())
def test_any_stream_gives_events_and_the_lean_decoding_gives_the_same(stream, role, lenient):
    detailed = events_of(stream, role, lenient=lenient)
    if not lenient:         # (lenient decoding is always the detailed one)
        assert events_of(stream, role, field_offsets=False) == detailed


@SETTINGS
@given(streams(), st.lists(st.integers(1, 5000), min_size=1, max_size=20),
       st.integers(1, 4), st.booleans())
def test_any_stream_read_in_any_pieces_frames_as_receive_data(stream, sizes, poll_every,
                                                              field_offsets):
    expected = reference_events(stream, field_offsets=field_offsets)
    got = feed_by_buffer(stream, iter(sizes * (len(stream) // len(sizes) + 1)), poll_every,
                         field_offsets=field_offsets)
    assert got == expected
