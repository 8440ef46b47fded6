"""pycdr.capture.tcp: per-direction TCP reassembly (out of order, retransmitted,
overlapping, missing bytes; state freed at close) and what pycdr.capture.giop makes of
gaps in a GIOP stream (only the message a gap cuts is lost, and said so)."""

from __future__ import annotations

import random

from pycdr.giop.messages import KeyAddr, Reply, Request, encode_message
from pycdr.capture.giop import CaptureDecoder
from pycdr.capture.tcp import ACK, FIN, RST, SYN, TcpReassembler

A = (b"\x0a\0\0\x01", 40000)
B = (b"\x0a\0\0\x02", 2809)


class Sink:
    """Records what the reassembler hands over: each direction's bytes (gaps as
    "?"), the events in order, the connections closed."""

    def __init__(self):
        self.streams: dict = {}
        self.events: list = []
        self._closed: list = []

    def data(self, flow, data, frame, ts):
        key = (flow.connection.index, flow.src)
        assert flow.offset == len(self.streams.get(key, b""))
        self.streams[key] = self.streams.get(key, b"") + data
        self.events.append(("data", flow.src, bytes(data), frame))

    def gap(self, flow, missing, frame, ts):
        key = (flow.connection.index, flow.src)
        self.streams[key] = self.streams.get(key, b"") + b"?" * missing
        self.events.append(("gap", flow.src, missing, frame))

    def closed(self, connection):
        self._closed.append(connection.index)


def seg(frame, src, dst, seq, payload=b"", flags=ACK, ack=0):
    return (frame, frame * 1000, src[0], src[1], dst[0], dst[1], seq & 0xFFFFFFFF, ack, flags,
            payload)


def run(segments, **kw):
    sink = Sink()
    tcp = TcpReassembler(sink, **kw)
    for s in segments:
        tcp.feed(s)
    tcp.finish()
    return sink, tcp


def test_in_order_out_of_order_retransmitted_overlapping():
    data = bytes(range(256)) * 4
    cuts = [0, 10, 100, 101, 400, 700, 1024]
    pieces = [(a, data[a:b]) for a, b in zip(cuts, cuts[1:])]
    rng = random.Random(3)
    for _ in range(50):
        order = pieces[:]
        rng.shuffle(order)
        # Retransmissions and overlaps of random spans, anywhere in the order.
        for _ in range(4):
            a = rng.randrange(1024)
            b = rng.randrange(a, 1025)
            order.insert(rng.randrange(len(order) + 1), (a, data[a:b]))
        segs = [seg(1, A, B, 999, flags=SYN)]
        segs += [seg(i + 2, A, B, 1000 + a, p) for i, (a, p) in enumerate(order)]
        sink, tcp = run(segs)
        assert sink.streams[(0, tcp_src())] == data
        assert not any(e[0] == "gap" for e in sink.events)


def tcp_src():
    return "10.0.0.1:40000"


def test_sequence_numbers_wrap():
    segs = [seg(1, A, B, 0xFFFFFFFF - 4, flags=SYN), seg(2, A, B, 0xFFFFFFFC, b"abcdef"),
            seg(3, A, B, 4, b"ijk"), seg(4, A, B, 2, b"gh")]
    sink, _ = run(segs)
    assert sink.streams[(0, tcp_src())] == b"abcdefghijk"


def test_hole_acknowledged_by_the_peer_is_a_gap_at_once():
    segs = [seg(1, A, B, 99, flags=SYN), seg(2, A, B, 100, b"0123"),
            seg(3, A, B, 110, b"abc"),                  # 104..110 never captured
            seg(4, B, A, 500, flags=ACK, ack=113)]      # ...but B got it
    sink = Sink()
    tcp = TcpReassembler(sink)
    for s in segs:
        tcp.feed(s)
    # Before the end of the capture: the ACK said so.
    assert sink.events[-2:] == [("gap", tcp_src(), 6, 4), ("data", tcp_src(), b"abc", 4)]
    assert sink.streams[(0, tcp_src())] == b"0123??????abc"


def test_hole_becomes_a_gap_when_too_much_waits_behind_it():
    segs = [seg(1, A, B, 0, b"x" * 10)] + [seg(i, A, B, 20 + (i - 2) * 100, b"y" * 100)
                                           for i in range(2, 8)]
    sink, _ = run(segs, max_pending=350)
    gaps = [e for e in sink.events if e[0] == "gap"]
    assert gaps == [("gap", tcp_src(), 10, 5)]          # the 4th waiting segment tipped it


def test_close_frees_the_connection_and_flushes_holes():
    segs = [seg(1, A, B, 0, flags=SYN), seg(2, B, A, 0, flags=SYN | ACK),
            seg(3, A, B, 1, b"req"), seg(4, B, A, 1, b"rep"), seg(5, B, A, 9, b"late"),
            seg(6, A, B, 4, flags=FIN | ACK), seg(7, B, A, 13, flags=FIN | ACK)]
    sink = Sink()
    tcp = TcpReassembler(sink)
    for s in segs[:6]:
        tcp.feed(s)
    assert tcp.flows and not sink._closed
    tcp.feed(segs[6])                  # B's FIN: B's hole (4..9) is still open
    assert tcp.flows
    tcp.finish()
    assert not tcp.flows and sink._closed == [0]
    assert sink.streams[(0, "10.0.0.2:2809")] == b"rep?????late"
    # FIN both ways with every byte there: freed at once.
    sink = Sink()
    tcp = TcpReassembler(sink)
    for s in segs[:4] + [seg(6, A, B, 4, flags=FIN | ACK), seg(7, B, A, 4, flags=FIN | ACK)]:
        tcp.feed(s)
    assert not tcp.flows and sink._closed == [0]
    # A side that sent nothing but its FIN (or a RST) closes it too.
    for last in (seg(6, B, A, 1, flags=FIN | ACK), seg(6, B, A, 1, flags=RST)):
        sink = Sink()
        tcp = TcpReassembler(sink)
        for s in [seg(1, A, B, 0, flags=SYN), seg(3, A, B, 1, b"req"),
                  seg(4, A, B, 4, flags=FIN | ACK), last]:
            tcp.feed(s)
        assert not tcp.flows and sink._closed == [0]
    # RST: at once.
    sink = Sink()
    tcp = TcpReassembler(sink)
    for s in segs[:3] + [seg(4, B, A, 1, flags=RST)]:
        tcp.feed(s)
    assert not tcp.flows and sink._closed == [0]


def test_a_port_reused_after_close_is_a_new_connection():
    segs = [seg(1, A, B, 0, flags=SYN), seg(2, A, B, 1, b"one"), seg(3, A, B, 4, flags=RST),
            seg(4, A, B, 50, flags=SYN), seg(5, A, B, 51, b"two")]
    sink, tcp = run(segs)
    assert sink._closed == [0, 1]
    assert [e[2] for e in sink.events] == [b"one", b"two"]


# ----------------------------------------------------------------------------
# Gaps in GIOP streams.
def request(rid, size=40):
    return encode_message(Request(version=(1, 2), request_id=rid, target=KeyAddr(b"key"),
                                  operation="op", body=b"\x01" * size))


def giop_entries(segments):
    out = []
    tcp = TcpReassembler(CaptureDecoder(out.append))
    for s in segments:
        tcp.feed(s)
    tcp.finish()
    return out


def test_a_gap_inside_a_message_loses_that_message_only():
    m1, m2, m3 = request(1), request(2, 200), request(3)
    stream = m1 + m2 + m3
    a = len(m1) + 30                   # the hole: inside m2, its header arrived
    b = a + 50
    segs = [seg(1, A, B, 0, flags=SYN), seg(2, A, B, 1, stream[:a]),
            seg(3, A, B, 1 + b, stream[b:]), seg(4, B, A, 1, flags=ACK, ack=1 + len(stream))]
    entries = giop_entries(segs)
    assert [e.get("request_id") for e in entries if "type" in e] == [1, 3]
    (gap,) = [e for e in entries if "error" in e]
    assert gap["error"]["kind"] == "gap" and gap["missing"] == 50
    assert gap["lost"]["stream_offset"] == len(m1)
    assert gap["lost"]["header"]["message_size"] == len(m2) - 12
    assert "the message they cut is lost" in gap["error"]["message"]


def test_a_gap_over_a_boundary_resumes_at_the_next_header():
    m1, m2, m3, m4 = request(1), request(2), request(3), request(4)
    stream = m1 + m2 + m3 + m4
    a = len(m1) + 20                   # from inside m2 to inside m3
    b = len(m1) + len(m2) + 10
    segs = [seg(1, A, B, 0, flags=SYN), seg(2, A, B, 1, stream[:a]),
            seg(3, A, B, 1 + b, stream[b:b + 7]), seg(4, A, B, 1 + b + 7, stream[b + 7:]),
            seg(5, B, A, 1, flags=ACK, ack=1 + len(stream))]
    entries = giop_entries(segs)
    assert [e.get("request_id") for e in entries if "type" in e] == [1, 4]
    (gap,) = [e for e in entries if "error" in e]
    assert "resumes at the next GIOP header" in gap["error"]["message"]
    m4_entry = [e for e in entries if e.get("request_id") == 4][0]
    assert m4_entry["stream_offset"] == len(m1) + len(m2) + len(m3)


def test_replies_matched_and_unanswered_requests_reported_at_close():
    reply = encode_message(Reply(version=(1, 2), request_id=1))
    segs = [seg(1, A, B, 0, flags=SYN), seg(2, A, B, 1, request(1) + request(2)),
            seg(3, B, A, 0, reply), seg(4, A, B, 1, flags=RST)]
    out, unanswered = [], []
    tcp = TcpReassembler(CaptureDecoder(out.append, unanswered=unanswered.append))
    for s in segs:
        tcp.feed(s)
    assert out[0]["reply_frame"] == 3 and out[2]["request_frame"] == 2
    assert out[2]["response_time"] == 1e-6
    assert [r["request_id"] for r in unanswered] == [2]
    assert not tcp.flows


# -- the shortcut for in-order segments (TcpReassembler.in_order_feed, take_whole) ----------

def _hostile_segments(rng: random.Random) -> list:
    """Two connections' GIOP streams cut into segments at message boundaries and
    elsewhere, then reordered, retransmitted, overlapped, lost and closed at random;
    the 4-tuple reused after a close; bytes that are not GIOP now and then."""
    segs = []
    frame = 1
    for conn in range(3):
        client = (b"\x0a\0\0\x01", 40000 + conn % 2)     # the third reuses the first's
        stream = b""
        ends = set()                                # where a message ends
        for rid in range(rng.randrange(1, 12)):
            stream += request(rid, rng.choice((0, 3, 40, 300)))
            if rng.random() < 0.1:
                stream += b"junk" * rng.randrange(1, 4)
            ends.add(len(stream))
        isn = rng.randrange(1 << 32)
        cuts, pos = [], 0
        while pos < len(stream):
            if rng.random() < 0.7:                  # mostly a message a segment
                end = min(e for e in ends | {len(stream)} if e > pos)
            else:
                end = pos + rng.choice((1, 7, 12, 64, 200))
            cuts.append((pos, stream[pos:end]))
            pos = end
        order = cuts[:]
        for _ in range(rng.randrange(3)):           # a few swapped, repeated, lost
            i, j = rng.randrange(len(order)), rng.randrange(len(order))
            order[i], order[j] = order[j], order[i]
        for _ in range(rng.randrange(3)):
            order.insert(rng.randrange(len(order) + 1), rng.choice(cuts))
        if rng.random() < 0.3 and len(order) > 2:
            order.pop(rng.randrange(1, len(order)))
        segs.append(seg(frame, client, B, isn, flags=SYN))
        frame += 1
        for at, payload in order:
            segs.append(seg(frame, client, B, isn + 1 + at, payload))
            frame += 1
            if rng.random() < 0.2:                   # the server acknowledges
                segs.append(seg(frame, B, client, 7, flags=ACK, ack=isn + 1 + at))
                frame += 1
        end = rng.choice((FIN, RST, 0))
        if end:
            segs.append(seg(frame, client, B, isn + 1 + len(stream), flags=end | ACK))
            frame += 1
            if end == FIN:
                segs.append(seg(frame, B, client, 7, flags=FIN | ACK))
                frame += 1
    return segs


def test_in_order_feed_hands_over_what_feed_does():
    """With a take that consumes everything (as sink.data), in_order_feed makes the same
    events as feed, segment for segment; with one that consumes nothing, too."""
    rng = random.Random(11)
    for trial in range(300):
        segs = _hostile_segments(rng)
        plain, _ = run(segs)
        for consume in (True, False):
            sink = Sink()
            tcp = TcpReassembler(sink)

            def take(flow, payload, frame, ts, sink=sink, consume=consume):
                if consume:
                    sink.data(flow, payload, frame, ts)
                return consume
            feed = tcp.in_order_feed(take)
            for s in segs:
                feed(s)
            tcp.finish()
            assert sink.events == plain.events, (trial, consume)
            assert sink.streams == plain.streams and sink._closed == plain._closed


def test_take_whole_frames_as_the_decoder_does():
    """pycdr.capture.giop's entries (errors, gaps, offsets, matching) are the same through the
    shortcut as through the reassembler's general path, on hostile segment orders."""
    rng = random.Random(5)
    shortcut_used = 0
    for trial in range(300):
        segs = _hostile_segments(rng)
        expected = giop_entries(segs)
        out: list = []
        decoder = CaptureDecoder(out.append)
        took = decoder.take_whole

        def counting_take(*args):
            nonlocal shortcut_used
            done = took(*args)
            shortcut_used += done
            return done
        tcp = TcpReassembler(decoder)
        feed = tcp.in_order_feed(counting_take)
        for s in segs:
            feed(s)
        tcp.finish()
        assert out == expected, trial
    assert shortcut_used > 300          # (the shortcut was taken, not only declined)


def test_a_whole_message_inside_one_a_gap_cut_is_not_framed():
    """After a gap cuts a message whose header arrived, framing resumes at that message's
    end: a segment in between that happens to hold a whole GIOP message (here one
    carried in the cut message's body) is not a message of the stream."""
    inner = request(9)
    m1 = request(1)
    m2 = encode_message(Request(version=(1, 2), request_id=2, target=KeyAddr(b"key"),
                                operation="op", body=inner))
    stream = m1 + m2 + request(3)
    inner_at = len(m1) + m2.index(inner)
    a, b = len(m1) + 20, len(m1) + 30            # the hole: m2's header arrived
    assert b < inner_at
    segs = [seg(1, A, B, 0, flags=SYN), seg(2, A, B, 1, stream[:a]),
            seg(3, A, B, 1 + b, stream[b:inner_at]),              # waits behind the hole
            seg(4, B, A, 1, flags=ACK, ack=1 + inner_at),         # the hole was received
            seg(5, A, B, 1 + inner_at, inner),                    # in order, nothing waits
            seg(6, A, B, 1 + inner_at + len(inner), stream[inner_at + len(inner):])]
    expected = giop_entries(segs)
    assert [e.get("request_id") for e in expected if "type" in e] == [1, 3]
    out: list = []
    decoder = CaptureDecoder(out.append)
    tcp = TcpReassembler(decoder)
    feed = tcp.in_order_feed(decoder.take_whole)
    for s in segs:
        feed(s)
    tcp.finish()
    assert out == expected
