"""pycdr._replaylane, the pipelined replay's steady state in C, against the replay's
Python code: the same captures replayed to the same targets with the lane (the calls it
finishes counted) and without it must come to the same outcomes, operation by
operation, with the same differences and the same recorded latencies; the lane must
hand back, untouched, whatever it cannot judge; and nothing a length claims is
allocated."""

from __future__ import annotations

import collections
import errno
import socket
import struct
import threading
import time
import tracemalloc

import pytest

pytest.importorskip("scapy")

import replay_store as rs  # noqa: E402
import test_replay_hostile as hostile  # noqa: E402
from pycdr.giop.messages import KeyAddr, LocateRequest, encode_message  # noqa: E402
from pycdr.giop.service_contexts import RawServiceContext  # noqa: E402
from pycdr.capture.giop import IdlBodyDecoder  # noqa: E402
from pycdr.capture.read import CaptureReader  # noqa: E402
from pycdr.capture.stats import LatencyHistogram  # noqa: E402
from pycdr.orb.tls import DEFAULT_TLS, TLSOptions, server_context  # noqa: E402
from pycdr.replay import lanes  # noqa: E402
from pycdr.replay.compare import Comparison  # noqa: E402
from pycdr.replay.runner import Replay, ReplayOptions  # noqa: E402
from pycdr.replay.session import ReplaySession  # noqa: E402
from pycdr.replay.summary import ReplaySummary  # noqa: E402
from pycdr.replay.targets import parse_targets  # noqa: E402

pytestmark = pytest.mark.skipif(lanes._Lane is None,
                                reason="pycdr._replaylane not built, or PYCDR_PURE=1")


def long_conversation(calls: int, key=b"OldStore", little=False):
    """``calls`` client messages of every kind the lane meets: requests of five shapes,
    oneways, a user exception (judged with the IDL: handed back), LocateRequests, and
    a reference returned (it may teach a key: handed back) then used."""
    r = lambda rid, op, args, **k: rs.request(rid, op, args, key=k.pop("key", key),  # noqa
                                               little=little, **k)
    out = []
    for i in range(calls):
        rid = i + 1
        if i % 50 == 49:
            out.append(r(rid, "other", []))
        elif i % 50 == 0 and i:
            out.append(r(rid, "list", [3], key=b"OldOther"))
        elif i % 17 == 16:
            out.append(r(rid, "find", ["missing"]))
        elif i % 23 == 22:
            out.append(LocateRequest(version=(1, 2), request_id=rid, target=KeyAddr(key)))
        elif i % 5 == 0:
            out.append(r(rid, "list", [i % 7]))
        elif i % 5 == 1:
            out.append(r(rid, "find", [f"fruit{i % 4}"]))
        elif i % 5 == 2:
            out.append(r(rid, "total", [i, 0.25]))
        elif i % 5 == 3:
            out.append(r(rid, "ping", [i], oneway=True))
        else:
            out.append(r(rid, "list", [2]))
    return out


def replay(capture: str, target: str, *, lane: bool, window: int = 8, tls=DEFAULT_TLS):
    """(summary, the calls reported one by one, the Replay) of ``capture`` replayed to
    ``target`` with the store's IDL; ``lane``: the same calls counted (the lane on)."""
    default, mapped = parse_targets([target], tls)
    options = ReplayOptions(default_target=default, targets=mapped, window=window, timeout=3,
                            comparison=Comparison(IdlBodyDecoder([rs.MODULE])), tls=tls)
    summary = ReplaySummary()
    reported = []

    def report(call):
        summary.add(call)
        reported.append(call)
    r = Replay(options, report, tally=summary.add_counted if lane else None)
    r.run(CaptureReader(capture))
    return summary, reported, r


def digest(summary: ReplaySummary) -> dict:
    """Per operation: the outcome counts and the recorded latencies' histogram (the
    replayed ones differ from run to run)."""
    return {op: (dict(s.counts), dict(s.recorded.buckets), s.recorded.count)
            for op, s in summary.operations.items()}


def not_same(reported) -> list:
    return sorted((c.connection, c.recorded_id, c.operation, c.outcome, repr(c.differences),
                   c.reason) for c in reported if c.outcome != "same")


SCENARIOS = {
    # name: (the recording's variant, the target's variant, the target's key)
    "same": (rs.Variant(), rs.Variant(), b"OldStore"),
    "list_differs": (rs.Variant(), rs.Variant(differ="list"), b"OldStore"),
    "keys_mapped_and_learned": (rs.Variant(), rs.Variant(store_key=b"NewStore",
                                                         other_key=b"NewOther"), b"NewStore"),
    "little_endian": (rs.Variant(little=True), rs.Variant(little=True), b"OldStore"),
    # the same values, other bytes in the padding (omniORB's uninitialised padding)
    "junk_padding": (rs.Variant(), rs.Variant(padding=0xAB), b"OldStore"),
}


@pytest.mark.parametrize("window", [1, 2, 8, 64])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_lane_comes_to_python_s_outcomes(tmp_path, scenario, window):
    old, new, key = SCENARIOS[scenario]
    capture = str(tmp_path / "rec.pcap")
    rs.record(capture, [long_conversation(400, little=old.little) for _ in range(2)], old)
    results = {}
    for lane in (False, True):
        with rs.StoreServer(new) as server:
            target = f"corbaloc::1.2@127.0.0.1:{server.port}/{key.decode()}"
            results[lane] = replay(capture, target, lane=lane, window=window)
    (py_summary, py_reported, py_replay), (c_summary, c_reported, c_replay) = \
        results[False], results[True]
    assert py_replay.lane_calls == 0
    assert digest(c_summary) == digest(py_summary)
    assert not_same(c_reported) == not_same(py_reported)
    assert c_summary.totals()["calls"] == 800
    # The lane did the bulk of the work (it hands back what may teach a key, the user
    # exceptions read with the IDL, the LocateRequests, and the calls around them).
    # The lane took its part (this conversation hands back every few calls: a user
    # exception read with the IDL, a LocateRequest, a reference that may teach a key).
    assert c_replay.lane_calls > 800 // 10, c_replay.lane_calls
    assert py_replay.pump_turns == 0
    if window < 64:     # (at 64, runs this short leave the connections to Python: _advance)
        assert c_replay.pump_turns > 0          # the lanes' sockets served in C
    if scenario == "junk_padding" and window == 1:
        # every list/find/total reply differs in bytes from the recorded one: the lane
        # judges them by their values (Lane.values) and keeps the connection
        assert c_replay.lane_calls > 600, c_replay.lane_calls
    if scenario == "list_differs":
        assert {c.operation for c in c_reported if c.outcome == "different"} == {"list"}
        assert any(c.outcome == "different" for c in c_reported)


def test_the_lane_finishes_nearly_every_call_of_a_plain_recording(tmp_path):
    # Requests of four shapes and oneways, every reply as recorded: after each shape's
    # first call (decoded in Python) and the round trip it waits, the lane takes it all.
    r = rs.request
    calls = [r(i + 1, *[("list", [3]), ("find", ["fig"]), ("total", [i, 0.5]),
                        ("list", [1])][i % 4]) if i % 9 else r(i + 1, "ping", [i], oneway=True)
             for i in range(1000)]
    capture = str(tmp_path / "rec.pcap")
    rs.record(capture, [calls])
    with rs.StoreServer(rs.Variant()) as server:
        summary, reported, replay_ = replay(capture, f"127.0.0.1:{server.port}", lane=True,
                                            window=16)
    assert summary.totals() == {"same": 1000, "different": 0, "failed": 0, "skipped": 0,
                                "calls": 1000}
    assert replay_.lane_calls >= 950, replay_.lane_calls
    assert len(reported) == 1000 - replay_.lane_calls


@pytest.mark.parametrize("window", [1, 8])
def test_over_tls_the_lane_comes_to_python_s_outcomes(tmp_path, window):
    # Non-blocking TLS sockets (as recorded too, with lanes): a write or read the TLS
    # layer cannot finish now is taken up when the selector says so.
    from tls_certs import make_certificates
    certs = make_certificates(tmp_path / "certs")
    tls = TLSOptions(force=True, cacert=str(certs.ca))
    capture = str(tmp_path / "rec.pcap")
    rs.record(capture, [long_conversation(300) for _ in range(2)])
    context = server_context(str(certs.server.cert), str(certs.server.key))
    results = {}
    for lane in (False, True):
        with rs.StoreServer(rs.Variant(differ="list"), ssl_context=context) as server:
            target = f"127.0.0.1:{server.port}"
            results[lane] = replay(capture, target, lane=lane, window=window, tls=tls)
    (py_summary, py_reported, _), (c_summary, c_reported, c_replay) = results[False], \
        results[True]
    assert digest(c_summary) == digest(py_summary)
    assert not_same(c_reported) == not_same(py_reported)
    assert c_replay.pump_turns == 0       # (TLS sockets: read and written by Python)
    assert c_summary.totals()["calls"] == 600 and c_replay.lane_calls > 60


@pytest.mark.parametrize("window", [1, 8])
def test_a_recording_without_its_replies_is_replayed_in_bounded_steps(tmp_path, window):
    # Only the client's side was captured: no recorded reply ever comes, and every call
    # waits for one.  The lane holds at most MAX_HELD of them (its lookups scan them),
    # then hands them to Python's dicts: the same outcomes, no step growing with the
    # capture.
    from pycdr.capture.write import TcpSession, write_pcap
    packets: list = []
    session = TcpSession(packets, 2809)
    for i in range(3000):
        session.client_sends(encode_message(rs.request(i + 1, "list", [1])))
    session.close()
    capture = str(tmp_path / "client-only.pcap")
    write_pcap(capture, packets)
    results = {}
    for lane in (False, True):
        with rs.StoreServer(rs.Variant()) as server:
            start = time.monotonic()
            results[lane] = replay(capture, f"127.0.0.1:{server.port}", lane=lane,
                                   window=window)
            results[lane] += (time.monotonic() - start,)
    (py_summary, py_reported, _, py_took), (c_summary, c_reported, c_replay, c_took) = \
        results[False], results[True]
    assert digest(c_summary) == digest(py_summary)
    assert not_same(c_reported) == not_same(py_reported)
    assert c_summary.totals()["different"] == 3000
    assert c_took < 3 * py_took + 5, (c_took, py_took)


# A raw-socket target (tests/test_replay_hostile.py: struct and sockets, none of pycdr's
# codec or ORB) that answers its first GOOD requests on each connection as the recording
# did, then badly: the lane is running when the bad answers come.
GOOD = 60
# list(1)'s reply body, written with struct: one Item ("item0", 0, 0.0), GIOP 1.2, big-endian
ITEM0 = struct.pack(">II6s2xi4xd", 1, 6, b"item0\0", 0, 0.0)


@pytest.mark.parametrize("window", [1, 8])
@pytest.mark.parametrize("behaviour", sorted(hostile.ANSWERS))
def test_a_target_that_turns_hostile_midway_is_judged_as_python_judges_it(
        tmp_path, behaviour, window):
    capture = str(tmp_path / "rec.pcap")
    rs.record(capture, [[rs.request(i + 1, "list", [1]) for i in range(GOOD + 4)]
                        for _ in range(2)])
    bad = hostile.ANSWERS[behaviour]
    totals = {}
    for lane in (False, True):
        target = hostile.HostileTarget(
            lambda rid: hostile._reply(rid, ITEM0) if rid <= GOOD else bad(rid))
        default, mapped = parse_targets([f"127.0.0.1:{target.port}"])
        options = ReplayOptions(default_target=default, targets=mapped, window=window,
                                timeout=1, comparison=Comparison(IdlBodyDecoder([rs.MODULE])))
        summary = ReplaySummary()
        replay_ = Replay(options, summary.add, tally=summary.add_counted if lane else None)
        tracemalloc.start()
        start = time.monotonic()
        try:
            replay_.run(CaptureReader(capture))
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            target.close()
        assert time.monotonic() - start < 30
        assert peak < 16 << 20, f"{peak / 1e6:.1f} MB allocated at the peak"
        totals[lane] = summary.totals()
        if lane:
            assert replay_.lane_calls >= GOOD, replay_.lane_calls    # it was running
    if behaviour == "resets" and window > 1:
        # A reset (RST) drops what the replay had not read yet: with calls in flight, the
        # replies to the last good ones may be lost, as many as the timing has it.
        for got in totals.values():
            assert got["calls"] == 2 * (GOOD + 4) and got["different"] == 0, got
            assert 2 * (GOOD - window) <= got["same"] <= 2 * GOOD, got
            assert got["failed"] == got["calls"] - got["same"], got
        return
    assert totals[True] == totals[False]
    assert totals[True]["same"] == 2 * GOOD and totals[True]["calls"] == 2 * (GOOD + 4)


class _ClosesAfter:
    """A server socket that reads as closed once ``after`` requests came through it."""

    def __init__(self, sock, after: int):
        self.sock, self.after, self.seen = sock, after, 0

    def recv(self, n: int) -> bytes:
        if self.seen >= self.after:
            self.sock.shutdown(socket.SHUT_RDWR)
            return b""
        data = self.sock.recv(n)
        self.seen += data.count(b"GIOP")
        return data

    def sendall(self, data: bytes) -> None:
        self.sock.sendall(data)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.close()


class ClosingStore(rs.StoreServer):
    """The store that closes each connection once it has read ``after`` requests."""

    def __init__(self, variant, after: int):
        self.after = after
        super().__init__(variant)

    def _connection(self, conn) -> None:
        super()._connection(_ClosesAfter(conn, self.after))


def test_a_target_that_closes_midway_fails_the_same_calls(tmp_path):
    capture = str(tmp_path / "rec.pcap")
    rs.record(capture, [long_conversation(400) for _ in range(2)])
    outcomes = {}
    for lane in (False, True):
        with ClosingStore(rs.Variant(), after=150) as server:
            target = f"corbaloc::1.2@127.0.0.1:{server.port}/OldStore"
            summary, reported, _ = replay(capture, target, lane=lane, window=8)
        outcomes[lane] = summary.totals()
        assert summary.totals()["calls"] == 800
        assert summary.totals()["failed"] > 0
        assert all(c.reason for c in reported if c.outcome == "failed")
    # Which calls were on the wire when the target closed depends on timing; every
    # call is accounted for, and none of the later ones passes for the same.
    for lane in (False, True):
        assert outcomes[lane]["same"] <= 2 * 160, outcomes


@pytest.mark.parametrize("window", [1, 8])
def test_a_target_that_never_reads_fails_the_calls_within_the_timeout(tmp_path, window):
    # With lanes the sockets are non-blocking as recorded too: a target that takes no
    # bytes must still fail the calls once --timeout passes, not hang the replay.
    capture = str(tmp_path / "rec.pcap")
    rs.record(capture, [[rs.request(i + 1, "find", ["x" * 200_000]) for i in range(12)]])
    deaf = socket.create_server(("127.0.0.1", 0))
    accepted = []
    threading.Thread(target=lambda: accepted.append(deaf.accept()), daemon=True).start()
    default, mapped = parse_targets([f"127.0.0.1:{deaf.getsockname()[1]}"])
    options = ReplayOptions(default_target=default, targets=mapped, window=window, timeout=1,
                            comparison=Comparison(IdlBodyDecoder([rs.MODULE])))
    summary = ReplaySummary()
    start = time.monotonic()
    try:
        Replay(options, summary.add, tally=summary.add_counted).run(CaptureReader(capture))
    finally:
        for conn, _ in accepted:
            conn.close()
        deaf.close()
    assert time.monotonic() - start < 15
    totals = summary.totals()
    assert totals["calls"] == 12 and totals["same"] == 0, totals


# -- the Lane alone --------------------------------------------------------------------

def _learned_session():
    """A session that sent one list() (its shape learned), the Replay whose tables the
    lane gets, and a lane holding the connection."""
    summary = ReplaySummary()
    options = ReplayOptions(window=4, comparison=Comparison(IdlBodyDecoder([rs.MODULE])))
    replay_ = Replay(options, summary.add, tally=summary.add_counted)
    session = ReplaySession(replay_.keys)
    first = encode_message(rs.request(1, "list", [2]))
    data, call = session.outgoing(first)
    session.finished(call)
    lane = lanes._Lane(4, 1 << 20, LatencyHistogram.BUCKETING)
    lane.shapes = replay_._lane_table(session)
    lane.next_id = session.next_id
    return session, replay_, lane


def _reply(msg, variant=rs.Variant()):
    return encode_message(rs.reply_to(msg, variant))


def test_the_lane_rewrites_a_known_shape_as_python_does_and_refuses_the_rest():
    session, replay_, lane = _learned_session()
    request = rs.request(7, "list", [5])
    raw = encode_message(request)
    items = collections.deque([(True, raw, 1000), (False, _reply(request), 5000),
                               (True, encode_message(rs.request(8, "find", ["x"])), 6000)])
    data, handed_over = lane.advance(items)
    expected, _ = session.outgoing(raw)             # Python's bytes for the same id
    assert data == expected and struct.unpack_from(">I", data, 12)[0] == 2
    # find() is a shape the session has not learned: left for Python, untouched
    assert handed_over and len(items) == 1 and items[0][1][7] == 0
    assert lane.held == 1 and lane.waiting == 1 and lane.next_id == 3
    # Its replayed reply, in two pieces, repeats the recorded one but for the id
    replayed = bytearray(_reply(request))
    struct.pack_into(">I", replayed, 12, 2)
    assert lane.replayed(bytes(replayed[:30]), 1.0) is None
    assert lane.held == 1
    assert lane.replayed(bytes(replayed[30:]), 1.5) is None
    assert lane.held == 0 and lane.waiting == 0
    ((op, same, skipped, recorded, replayed),) = lane.results()
    assert replay_._lane_ops[op] == "list" and (same, skipped) == (1, 0)
    # counted as LatencyHistogram counts them
    expected = LatencyHistogram()
    expected.add(4e-6)
    assert recorded == (expected.buckets, 1, 4e-6)
    assert replayed[1] == 1 and replayed[2] >= 0
    assert lane.results() == []


def test_the_lane_hands_back_replies_it_does_not_judge_and_materializes_its_calls():
    session, replay_, lane = _learned_session()
    requests = [rs.request(10 + i, "list", [4 + i]) for i in range(3)]
    items = collections.deque((True, encode_message(m), 100 * i) for i, m in
                              enumerate(requests))
    items.insert(1, (False, _reply(requests[0]), 50))       # call 1's recorded reply
    sent, handed_over = lane.advance(items)
    assert not handed_over and not items and lane.held == 3 and lane.waiting == 3
    # call 2's replayed reply comes first (no recorded one yet): kept, not judged
    second = bytearray(_reply(requests[1]))
    struct.pack_into(">I", second, 12, 3)
    assert lane.replayed(bytes(second), 2.0) is None
    assert lane.waiting == 3            # the oldest still waits: the window counts on
    # call 1's replayed reply differs from its recorded one: handed back, with what
    # follows it
    first = bytearray(_reply(requests[0], rs.Variant(differ="list")))
    struct.pack_into(">I", first, 12, 2)
    tail = b"GIOP\x01\x02\x00\x01"
    left = lane.replayed(bytes(first) + tail, 3.0)
    assert left == bytes(first) + tail
    held = lane.materialize()
    assert [h[1] for h in held] == [10, 11, 12] and [h[2] for h in held] == [2, 3, 4]
    assert [h[6] is not None for h in held] == [True, False, False]
    assert [h[8] is not None for h in held] == [False, True, False]
    assert [h[10] for h in held] == [False, False, False]       # none settled: 1 waits
    assert lane.held == 0 and lane.take_buffer() == b""


def test_a_reply_that_differs_in_bytes_is_given_to_python_alone():
    session, replay_, lane = _learned_session()
    requests = [rs.request(20 + i, "list", [4 + i]) for i in range(2)]
    items = collections.deque([(True, encode_message(requests[0]), 0),
                               (False, _reply(requests[0]), 10),
                               (True, encode_message(requests[1]), 20)])
    lane.advance(items)
    differing = bytearray(_reply(requests[0], rs.Variant(differ="list")))
    struct.pack_into(">I", differing, 12, 2)
    differing = bytes(differing)
    assert lane.take_differing(b"GIOP" + differing[4:-1]) is None      # not whole
    assert lane.take_differing(differing[:12] + b"\0\0\0\x63" + differing[16:]) is None
    same = bytearray(_reply(requests[0]))
    struct.pack_into(">I", same, 12, 2)
    assert lane.take_differing(bytes(same)) is None     # the lane takes that one itself
    taken = lane.take_differing(differing)
    op, recorded_id, replay_id, request_ts, sent, sent_at, recorded, recorded_ts = taken
    assert (replay_._lane_ops[op], recorded_id, replay_id, request_ts, recorded_ts) == \
        ("list", 20, 2, 0, 10)
    assert recorded == _reply(requests[0]) and sent[16:] == encode_message(requests[0])[16:]
    assert lane.held == 1 and lane.waiting == 1         # the second call goes on waiting
    assert lane.take_differing(differing) is None       # no longer held
    with pytest.raises(TypeError):
        lane.take_differing("text")


def _replayed(msg, replay_id, variant=rs.Variant()) -> bytes:
    raw = bytearray(_reply(msg, variant))
    struct.pack_into("<I" if variant.little else ">I", raw, 12, replay_id)
    return bytes(raw)


def test_a_reply_that_differs_in_its_padding_only_is_the_same_in_the_lane():
    # omniORB leaves padding uninitialised: the same values in other bytes.  With
    # Lane.values the lane reads both bodies with the C decoder and finishes the call,
    # whichever reply comes first; a value that differs is still Python's to name.
    session, replay_, lane = _learned_session()
    assert lane.values is None
    lane.values = replay_._lane_values()
    read, per_op = lane.values
    assert per_op[replay_._lane_ops.index("list")] is not None
    junk = rs.Variant(padding=0xAB)
    requests = [rs.request(30 + i, "list", [5]) for i in range(4)]
    assert _replayed(requests[0], 2, junk) != _replayed(requests[0], 2)
    items = collections.deque([(True, encode_message(requests[0]), 0),
                               (False, _reply(requests[0]), 10),
                               (True, encode_message(requests[1]), 20)])
    lane.advance(items)
    assert lane.replayed(_replayed(requests[0], 2, junk), 1.0) is None    # recorded first
    assert lane.held == 1
    # the second call's replayed reply before its recorded one (pipelined)
    assert lane.replayed(_replayed(requests[1], 3, junk), 1.1) is None
    assert lane.advance(collections.deque([(False, _reply(requests[1]), 30)])) == (b"", False)
    assert lane.held == 0
    ((op, same, skipped, *_),) = lane.results()
    assert (replay_._lane_ops[op], same) == ("list", 2)
    # a value that differs beside the junk: handed back, the call held for Python
    lane.advance(collections.deque([(True, encode_message(requests[2]), 40),
                                    (False, _reply(requests[2]), 50)]))
    differing = _replayed(requests[2], 4, rs.Variant(padding=0xAB, differ="list"))
    assert lane.replayed(differing, 2.0) == differing
    assert lane.take_differing(differing) is not None
    # without values (the pure path, a result that may hold a reference): by bytes
    lane.values = None
    lane.advance(collections.deque([(True, encode_message(requests[3]), 60),
                                    (False, _reply(requests[3]), 70)]))
    padded = _replayed(requests[3], 5, junk)
    assert lane.replayed(padded, 3.0) == padded
    with pytest.raises(TypeError):
        lane.values = ("not callable", ())


def test_a_reply_the_lane_cannot_read_is_handed_back():
    # A body cut short or a node the C decoder hands back: Python reads it (and names
    # what it cannot read); a reply with service contexts is Python's too.
    session, replay_, lane = _learned_session()
    request = rs.request(40, "list", [5])
    lane.values = replay_._lane_values()
    lane.advance(collections.deque([(True, encode_message(request), 0),
                                    (False, _reply(request), 10)]))
    recorded = _replayed(request, 2)
    short = bytearray(recorded[:-8])
    struct.pack_into(">I", short, 8, len(short) - 12)
    assert lane.replayed(bytes(short), 1.0) == bytes(short)
    # a read() that refuses (as the C decoder does a node only Python reads)
    lane.take_differing(bytes(short))

    def refuses(*args):
        raise lanes.PycdrError("handed back")
    lane.values = (refuses, lane.values[1])
    lane.advance(collections.deque([(True, encode_message(request), 20),
                                    (False, _reply(request), 30)]))
    junk = _replayed(request, 3, rs.Variant(padding=0xAB))
    assert lane.replayed(junk, 2.0) == junk
    lane.take_differing(junk)
    # service contexts on the replayed reply: not plain
    lane.values = replay_._lane_values()
    lane.advance(collections.deque([(True, encode_message(request), 40),
                                    (False, _reply(request), 50)]))
    reply = rs.reply_to(request, rs.Variant(padding=0xAB))
    reply.request_id = 4
    reply.service_contexts = [RawServiceContext(id=0x50594344, data=b"\0\0\0\0")]
    with_context = encode_message(reply)
    assert lane.replayed(with_context, 3.0) == with_context


@pytest.mark.parametrize("bad", [
    b"GIOP\x01\x02\x00\x01\xff\xff\xff\xf0" + b"\0" * 12,      # claims 4 GB
    b"JUNK" * 8,                                                 # no magic
    b"GIOP\x01\x02\x00\x07\x00\x00\x00\x04\x00\x00\x00\x02",     # a Fragment
    b"GIOP\x01\x00\x00\x01\x00\x00\x00\x10" + b"\0" * 16,       # GIOP 1.0 Reply
    b"GIOP\x01\x02\x00\x01\x00\x00\x00\x08\x00\x00\x00\x63\x00\x00\x00\x00",  # unknown id
])
def test_bytes_the_lane_does_not_take_are_handed_back_whole_without_allocating(bad):
    session, replay_, lane = _learned_session()
    items = collections.deque([(True, encode_message(rs.request(5, "list", [1])), 0)])
    lane.advance(items)
    tracemalloc.start()
    try:
        left = lane.replayed(bad, 1.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert left == bad and peak < 1 << 20
    assert lane.held == 1


@pytest.mark.parametrize("item", [None, (True,), (True, "text", 0), (2, b"GIOP", 0),
                                  (True, b"GIOP\x01\x02\x00\x00", 0),
                                  (False, b"GIOP\x01\x02\x00\x01\x00\x00\x00\x00", 0)])
def test_items_the_lane_does_not_take_stay_for_python(item):
    session, replay_, lane = _learned_session()
    items = collections.deque([item])
    data, handed_over = lane.advance(items)
    assert handed_over and data == b"" and list(items) == [item]


def test_a_lane_s_shapes_must_be_a_dict_and_its_window_positive():
    with pytest.raises(ValueError):
        lanes._Lane(0, 100, LatencyHistogram.BUCKETING)
    with pytest.raises(ValueError):
        lanes._Lane(1, 100, (0.0, 1.0, 1.0))
    lane = lanes._Lane(1, 100, LatencyHistogram.BUCKETING)
    with pytest.raises(TypeError):
        lane.shapes = [1, 2]
    # garbage in a table is refused, not read
    lane.shapes = {b"x": "not a tuple"}
    items = collections.deque([(True, encode_message(rs.request(5, "list", [1])), 0)])
    assert lane.advance(items) == (b"", True)



# -- pump(): the lanes' sockets served in C ----------------------------------------------

POLLIN = 1


def _tcp_pair(sndbuf: int = 0):
    """A connected (replay side: non-blocking, server side) pair of TCP sockets on
    127.0.0.1 (a reset needs TCP, not a socketpair)."""
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.socket()
    if sndbuf:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
    client.connect(listener.getsockname())
    server, _ = listener.accept()
    listener.close()
    client.setblocking(False)
    server.settimeout(5)
    return client, server


def _read_message(sock) -> bytes:
    head = b""
    while len(head) < 12:
        head += sock.recv(12 - len(head))
    size = struct.unpack_from("<I" if head[6] & 1 else ">I", head, 8)[0]
    body = b""
    while len(body) < size:
        body += sock.recv(size - len(body))
    return head + body


def _answer(sock, request: bytes, variant=rs.Variant()) -> None:
    """The reply the recording holds for ``request`` (sent with the replay's id)."""
    reply = bytearray(_reply(rs.request(1, "list", [struct.unpack_from(">i", request, -4)[0]]),
                             variant))
    reply[12:16] = request[12:16]
    sock.sendall(bytes(reply))


def _pump_until(entries, *, spin=1.0, budget=2.0, full=-1, limit=256, rounds=50):
    """pump() until an event comes or ``rounds`` calls: (events, progressed in all)."""
    progressed = 0
    for _ in range(rounds):
        events, done = lanes._pump(entries, spin, budget, full, limit)
        progressed += done
        if events:
            return events, progressed
    return [], progressed


def test_pump_serves_a_lane_and_sends_the_bytes_python_would():
    session, replay_, lane = _learned_session()
    requests = [rs.request(30 + i, "list", [i]) for i in range(6)]
    items = collections.deque()
    for i, m in enumerate(requests):
        items.append((True, encode_message(m), 10 * i))
        items.append((False, _reply(m), 10 * i + 5))
    client, server = _tcp_pair()
    seen = []

    def target():
        for _ in requests:
            seen.append(_read_message(server))
            _answer(server, seen[-1])
    thread = threading.Thread(target=target)
    thread.start()
    try:
        lane = lanes._Lane(1, 1 << 20, LatencyHistogram.BUCKETING)     # as recorded
        lane.shapes = replay_._lane_table(session)
        lane.next_id = session.next_id
        first, handed_over = lane.advance(items)
        assert not handed_over and lane.waiting == 1
        client.send(first)
        entries = [(client.fileno(), 0, lane, items)]
        progressed = 0
        while lane.held or items:
            events, done = lanes._pump(entries, 1.0, 2.0, -1, 256)
            assert events == [], events
            assert done, "nothing came within the spin"
            progressed += done
    finally:
        thread.join(10)
        client.close()
        server.close()
    assert progressed == 6 + 5          # six replies read, five requests sent
    # The requests sent are the session's bytes with the next ids, one after another.
    expected = [session.outgoing(encode_message(m))[0] for m in requests]
    assert seen == expected
    ((op, same, skipped, recorded, replayed),) = lane.results()
    assert (replay_._lane_ops[op], same, skipped) == ("list", 6, 0)
    assert recorded[1] == 6 and replayed[1] == 6


def _pumping_lane(window=4, sndbuf=0):
    """A lane (``window``) that sent one list() on a fresh TCP pair: (lane, items,
    client, server, the request as the server read it)."""
    session, replay_, _ = _learned_session()
    lane = lanes._Lane(window, 1 << 20, LatencyHistogram.BUCKETING)
    lane.shapes = replay_._lane_table(session)
    lane.next_id = session.next_id
    request = rs.request(40, "list", [5])
    items = collections.deque([(True, encode_message(request), 0),
                               (False, _reply(request), 5)])
    client, server = _tcp_pair(sndbuf)
    data, _ = lane.advance(items)
    client.send(data)
    return lane, items, client, server, _read_message(server), session


@pytest.mark.parametrize("answer, kind", [
    ("differs", lanes._EV_LEFT), ("garbage", lanes._EV_LEFT),
    ("claims_4gb", lanes._EV_LEFT), ("closes", lanes._EV_CLOSED),
    ("resets", lanes._EV_RECV_ERROR)])
def test_pump_hands_back_what_a_lane_does_not_take(answer, kind):
    lane, items, client, server, request, _ = _pumping_lane()
    sent = b""
    try:
        if answer == "differs":
            reply = bytearray(_reply(rs.request(40, "list", [5]), rs.Variant(differ="list")))
            reply[12:16] = request[12:16]
            sent = bytes(reply)
        elif answer == "garbage":
            sent = b"\xde\xad\xbe\xef" * 16
        elif answer == "claims_4gb":
            sent = b"GIOP\x01\x02\x00\x01\xff\xff\xff\xf0" + request[12:16] + b"\0" * 8
        if sent:
            server.sendall(sent)
        elif answer == "closes":
            server.shutdown(socket.SHUT_RDWR)
        else:
            server.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            server.close()
        tracemalloc.start()
        try:
            events, _ = _pump_until([(client.fileno(), 0, lane, items)])
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    finally:
        client.close()
        server.close()
    ((index, got_kind, payload, now),) = events
    assert (index, got_kind) == (0, kind) and now > 0
    assert peak < 1 << 20           # (the read buffer: 64 KB; nothing a length claims)
    if kind == lanes._EV_LEFT:
        assert payload == sent      # whole, for Python's stream
    elif kind == lanes._EV_RECV_ERROR:
        assert payload == errno.ECONNRESET
    else:
        assert payload is None
    assert lane.held == 1           # the call stays the lane's until Python takes it


def test_pump_hands_back_at_an_item_the_lane_does_not_take():
    lane, items, client, server, request, session = _pumping_lane()
    unknown = encode_message(rs.request(41, "find", ["x"]))     # a shape not learned
    items.append((True, encode_message(rs.request(42, "list", [1])), 6))
    items.append((True, unknown, 7))
    try:
        _answer(server, request)
        events, _ = _pump_until([(client.fileno(), 0, lane, items)])
        ((index, kind, payload, _),) = events
        # the list() before it went out; what is left for Python is the find()
        assert (index, kind, payload) == (0, lanes._EV_HANDED, b"")
        assert list(items) == [(True, unknown, 7)]
        assert struct.unpack_from(">I", _read_message(server), 12)[0] == 3
    finally:
        client.close()
        server.close()


def test_pump_gives_back_what_the_socket_did_not_take():
    lane, items, client, server, request, session = _pumping_lane(window=64, sndbuf=4096)
    # find() learned too; its requests here carry 300 KB each: the window's 64 of them
    # are more than the two sockets' buffers hold while the target reads nothing
    data, call = session.outgoing(encode_message(rs.request(2, "find", ["x"])))
    session.finished(call)
    lane.shapes = _learned_session()[1]._lane_table(session)
    big = [rs.request(50 + i, "find", ["x" * 300_000]) for i in range(100)]
    for m in big:
        items.append((True, encode_message(m), 9))
    try:
        _answer(server, request)        # the target then reads nothing
        events, _ = _pump_until([(client.fileno(), 0, lane, items)])
        ((index, kind, payload, _),) = events
        assert (index, kind) == (0, lanes._EV_UNSENT)
        made = 64 * len(session.outgoing(encode_message(big[0]))[0])
        assert 0 < len(payload) < made and lane.waiting == 64 and len(items) == 100 - 64
    finally:
        client.close()
        server.close()


def test_pump_tells_python_of_its_own_sockets_and_returns_when_nothing_comes():
    lane, items, client, server, request, _ = _pumping_lane()
    mine, peer = socket.socketpair()
    try:
        peer.send(b"x")
        entries = [(client.fileno(), 0, lane, items), (mine.fileno(), POLLIN, None, None)]
        events, progressed = lanes._pump(entries, 1.0, 2.0, -1, 256)
        assert [(e[0], e[1], e[2] & POLLIN) for e in events] == \
            [(1, lanes._EV_READY, POLLIN)] and progressed == 0
        # nothing comes: back after the spin (full -1: the capture read), or at once when
        # the capture may be read on (full 0)
        start = time.monotonic()
        assert lanes._pump(entries[:1], 0.05, 5.0, -1, 256) == ([], 0)
        assert lanes._pump(entries[:1], 5.0, 5.0, 0, 256) == ([], 0)
        assert lanes._pump(entries[:1], 5.0, 0.05, 1, 256) == ([], 0)
        assert time.monotonic() - start < 4     # (neither waited its 5 s)
    finally:
        for s in (mine, peer, client, server):
            s.close()


def test_pump_refuses_entries_it_cannot_serve():
    lane = lanes._Lane(1, 100, LatencyHistogram.BUCKETING)
    with pytest.raises(TypeError):
        lanes._pump((), 0.0, 0.0, -1, 256)
    with pytest.raises(TypeError):
        lanes._pump([(0, 0, "lane", collections.deque())], 0.0, 0.0, -1, 256)
    with pytest.raises(TypeError):
        lanes._pump([(0, 0, lane, None)], 0.0, 0.0, -1, 256)
    with pytest.raises(TypeError):
        lanes._pump([(0, 0)], 0.0, 0.0, -1, 256)
    with pytest.raises(ValueError):
        lanes._pump([(0, POLLIN, None, None)] * (lanes.PUMP_MAX + 1), 0.0, 0.0, -1, 256)
