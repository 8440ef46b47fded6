"""pycdr replay against a servant spoken by pycdr's codec (tests/replay_store.py):
rewriting, key mapping and learning, comparison with paths, the outputs, bad input.
The replays against ORBs that share no code with pycdr: tests/test_replay_peers.py."""

from __future__ import annotations

import json
import os
import socket
import struct
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

pytest.importorskip("scapy")

import replay_store as rs  # noqa: E402
from conftest import REPLAY_WINDOW  # noqa: E402
from pycdr.cli.main import EXIT_TLS, main  # noqa: E402
from pycdr.giop.messages import (CancelRequest, KeyAddr, LocateRequest, Reply,  # noqa: E402
                                 ReplyStatus, decode_message, encode_message,
                                 fragment_message)
from pycdr.giop.sysexc import SystemException  # noqa: E402
from pycdr.capture.giop import IdlBodyDecoder, decode_capture  # noqa: E402
from pycdr.orb.jsonvalues import to_json  # noqa: E402
from pycdr.replay.compare import Comparison, KeyMap  # noqa: E402
from pycdr.replay.session import OperationFilter, ReplaySession  # noqa: E402

IDL = rs.STORE_IDL


def conversation(key=b"OldStore", little=False, version=(1, 2)):
    """One client's calls: every kind of message, a reference learned and used."""
    r = lambda *a, **k: rs.request(*a, key=k.pop("key", key), little=little,  # noqa: E731
                                   version=version, **k)
    return [r(1, "list", [6]), r(2, "find", ["pear"]), r(3, "find", ["missing"]),
            r(4, "total", [21, 1.25]), r(5, "ping", [1], oneway=True),
            LocateRequest(version=version, request_id=6, target=KeyAddr(key)),
            r(7, "other", []),
            r(8, "list", [2], key=b"OldOther")]


def recorded(tmp_path, conversations=None) -> str:
    """A capture of ``conversations`` (one conversation() by default) with the old servant."""
    capture = str(tmp_path / "rec.pcap")
    rs.record(capture, conversations or [conversation()])
    return capture


# Every replay of these tests runs as recorded (--window 1) and pipelined (--window 8).
pytestmark = pytest.mark.usefixtures("replay_window")


def replay(args, **kw):
    return CliRunner().invoke(main, ["replay", *args, *REPLAY_WINDOW], catch_exceptions=False,
                              **kw)


def json_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


# -- against a target -------------------------------------------------------------------
def test_every_call_the_same_keys_mapped_and_learned_ids_renumbered(tmp_path):
    capture = recorded(tmp_path)
    with rs.StoreServer(rs.Variant(store_key=b"NewStore", other_key=b"NewOther")) as server:
        out = str(tmp_path / "calls.jsonl")
        result = replay([capture, "--target", server.corbaloc, "--idl", IDL, "--json", out])
        assert result.exit_code == 0, result.output
        calls = json_lines(out)
        assert [c["outcome"] for c in calls] == ["same"] * 8, calls
        assert [m.object_key for m in server.received] == \
            [b"NewStore"] * 7 + [b"NewOther"]       # the last one learned from other()
        assert [m.request_id for m in server.received] == list(range(1, 9))
    assert "list" in result.output and "all" in result.output


def test_exactly_the_differing_operation_is_reported_with_its_path(tmp_path):
    capture = recorded(tmp_path)
    with rs.StoreServer(rs.Variant(store_key=b"NewStore", other_key=b"NewOther",
                                   differ="list")) as server:
        out = str(tmp_path / "calls.jsonl")
        junit = str(tmp_path / "junit.xml")
        result = replay([capture, "--target", server.corbaloc, "--idl", IDL, "--json", out,
                         "--junit", junit])
    assert result.exit_code == 1, result.output
    calls = json_lines(out)
    different = [c for c in calls if c["outcome"] != "same"]
    assert [(c["operation"], c["recorded_request_id"]) for c in different] == [("list", 1)]
    assert different[0]["differences"] == [
        {"path": "result[3].name", "recorded": "item3", "replayed": "changed"}]
    assert different[0]["recorded_reply"] != different[0]["replayed_reply"]
    assert "result[3].name: recorded item3, replayed changed" in result.output
    suite = ET.parse(junit).getroot()
    failures = suite.findall("testcase/failure")
    assert suite.get("failures") == "1" and len(failures) == 1
    assert "result[3].name" in failures[0].get("message")


def test_without_idl_the_bodies_compare_as_bytes(tmp_path):
    capture = recorded(tmp_path)
    with rs.StoreServer(rs.Variant(store_key=b"NewStore", other_key=b"NewOther",
                                   differ="list")) as server:
        out = str(tmp_path / "calls.jsonl")
        result = replay([capture, "--target", server.corbaloc, "--json", out])
    assert result.exit_code == 1
    by_op = {}
    for c in json_lines(out):
        by_op.setdefault(c["operation"], []).append(c)
    assert by_op["list"][0]["differences"][0]["path"] == "body"
    # other() returns a reference whose key (and port) differ: raw bytes differ too.
    assert by_op["other"][0]["outcome"] == "different"
    assert all(c["outcome"] == "same" for op in ("find", "total", "ping") for c in by_op[op])


def test_byte_order_differs_normalized_with_idl_named_without(tmp_path):
    capture = str(tmp_path / "rec.pcap")
    rs.record(capture, [conversation()])                 # recorded replies big-endian
    variant = rs.Variant(store_key=b"NewStore", other_key=b"NewOther", little=True)
    with rs.StoreServer(variant) as server:
        with_idl = replay([capture, "--target", server.corbaloc, "--idl", IDL])
        out = str(tmp_path / "raw.jsonl")
        without = replay([capture, "--target", server.corbaloc, "--json", out])
    assert with_idl.exit_code == 0, with_idl.output
    assert without.exit_code == 1
    listed = [c for c in json_lines(out) if c["operation"] == "list"][0]
    assert "byte orders differ" in listed["differences"][0]["replayed"]


def test_only_op_skip_op_and_dry_run(tmp_path):
    capture = recorded(tmp_path)
    with rs.StoreServer(rs.Variant(store_key=b"NewStore", other_key=b"NewOther")) as server:
        out = str(tmp_path / "only.jsonl")
        result = replay([capture, "--target", server.corbaloc, "--only-op", "find",
                         "--json", out])
        assert result.exit_code == 0, result.output
        assert [m.operation for m in server.received] == ["find", "find"]
        outcomes = [(c["operation"], c["outcome"]) for c in json_lines(out)]
        assert outcomes.count(("find", "same")) == 2
        assert sum(1 for _, o in outcomes if o == "skipped") == 6
        server.received.clear()
        replay([capture, "--target", server.corbaloc, "--skip-op", "list"])
        assert "list" not in [getattr(m, "operation", "") for m in server.received]
        server.received.clear()
        connections = server.connections
        dry = replay([capture, "--target", server.corbaloc, "--dry-run"])
        assert dry.exit_code == 0
        assert server.received == [] and server.connections == connections
    assert "send request list request 1 -> 1" in dry.output
    assert dry.output.count("\n") == 8


def test_several_servers_need_a_target_each_the_others_are_skipped(tmp_path):
    capture = str(tmp_path / "rec.pcap")
    packets_a = str(tmp_path / "a.pcap")
    rs.record(packets_a, [conversation()[:2]])
    # Two recorded servers in one capture: 10.0.0.2:2809 and 10.0.0.3:2809.
    from scapy.utils import rdpcap, wrpcap
    rs.record(str(tmp_path / "b.pcap"), [conversation()[:3]], rs.Variant(host="10.0.0.3"))
    wrpcap(capture, list(rdpcap(packets_a)) + list(rdpcap(str(tmp_path / "b.pcap"))))
    with rs.StoreServer(rs.Variant(store_key=b"NewStore")) as server:
        result = CliRunner().invoke(
            main, ["replay", capture, "--target", f"10.0.0.3:2809={server.corbaloc}",
                   "--idl", IDL])
        assert result.exit_code == 0, result.output + result.stderr
        assert len(server.received) == 3             # only the mapped server's calls
        assert "skipped: recorded server 10.0.0.2:2809 has no --target (1 connections, " \
               "2 client messages)" in result.stderr
        twice = replay([capture, "--target", server.corbaloc, "--target", server.corbaloc])
        assert twice.exit_code == 2


def test_connections_replayed_concurrently_each_in_order(tmp_path):
    capture = str(tmp_path / "rec.pcap")
    rs.record(capture, [conversation(), conversation(), conversation()])
    with rs.StoreServer(rs.Variant(store_key=b"NewStore", other_key=b"NewOther")) as server:
        out = str(tmp_path / "calls.jsonl")
        result = replay([capture, "--target", server.corbaloc, "--idl", IDL, "--json", out])
        assert result.exit_code == 0, result.output
        assert server.connections == 3 + 1          # and the reachability check
    calls = json_lines(out)
    assert len(calls) == 24
    for conn in {c["connection"] for c in calls}:
        mine = [c["replay_request_id"] for c in calls if c["connection"] == conn]
        assert sorted(mine) == list(range(1, 9))


def test_a_slow_call_holds_up_its_connection_only(tmp_path):
    import time
    find = rs.request(1, "find", ["pear"])
    # Three connections each waiting 1 s for find(): one after the other, 3 s and more.
    capture = recorded(tmp_path, [[find], [find], [find]])
    with rs.StoreServer(rs.Variant(store_key=b"NewStore", slow=1.0)) as server:
        start = time.monotonic()
        result = replay([capture, "--target", server.corbaloc, "--idl", IDL])
        elapsed = time.monotonic() - start
    assert result.exit_code == 0, result.output
    assert len(server.received) == 3
    assert elapsed < 2.5, f"connections replayed one after the other ({elapsed:.1f} s)"


def test_a_window_sends_on_before_the_replies_and_compares_each(tmp_path, replay_window):
    # One connection whose client waited for each reply: --window 1 sends each request
    # after the previous reply; a window sends them on (the target gets them at once).
    calls = [rs.request(1, "find", ["pear"])] + \
        [rs.request(i, "list", [i]) for i in range(2, 6)] + [rs.request(6, "find", ["fig"])]
    capture = recorded(tmp_path, [calls])
    with rs.StoreServer(rs.Variant(store_key=b"NewStore", slow=0.2)) as server:
        out = str(tmp_path / "calls.jsonl")
        result = replay([capture, "--target", server.corbaloc, "--idl", IDL, "--json", out])
        assert result.exit_code == 0, result.output
        assert [m.request_id for m in server.received] == list(range(1, 7))
        assert server.most_at_once == (1 if replay_window == 1 else 6)
    assert [(c["operation"], c["outcome"], c["replay_request_id"]) for c in json_lines(out)] \
        == [(m.operation, "same", m.request_id) for m in calls]


def test_a_cancel_after_its_reply_cancels_nothing_as_recorded(tmp_path, replay_window):
    # The client cancelled find() after its reply came: as recorded (--window 1) there
    # is nothing left to cancel when the CancelRequest comes, though the request after
    # the reply is rewritten while the reply is awaited.  (A window sends the cancel on
    # before the reply: it then cancels the call in flight.)
    calls = [rs.request(1, "find", ["pear"]), CancelRequest(request_id=1),
             rs.request(2, "list", [2])]
    capture = recorded(tmp_path, [calls])
    with rs.StoreServer(rs.Variant(store_key=b"NewStore")) as server:
        out = str(tmp_path / "calls.jsonl")
        result = replay([capture, "--target", server.corbaloc, "--idl", IDL, "--json", out])
        assert result.exit_code == 0, result.output
    got = [(c["operation"], c["outcome"], c["reason"]) for c in json_lines(out)]
    if replay_window == 1:
        assert got == [("find", "same", None),
                       ("(CancelRequest)", "skipped", "cancels a request not sent"),
                       ("list", "same", None)]
    else:       # (the cancel told as it is sent, the find as its reply comes)
        assert sorted(got) == [("(CancelRequest)", "same", None), ("find", "same", None),
                               ("list", "same", None)]


def test_a_window_of_large_calls_reads_replies_while_it_sends(tmp_path):
    # Eight 1.5 MB requests answered by 1.5 MB replies, sent in one batch: more than the
    # kernel buffers hold either way.  A replay that wrote the batch before reading would
    # wait on a target that waits on it (its replies unread) until the timeout.
    name = "x" * 1_500_000
    capture = recorded(tmp_path, [[rs.request(i, "find", [name]) for i in range(1, 9)]])
    with rs.StoreServer(rs.Variant(store_key=b"NewStore")) as server:
        out = str(tmp_path / "calls.jsonl")
        result = replay([capture, "--target", server.corbaloc, "--idl", IDL, "--timeout", "20",
                         "--json", out])
        assert result.exit_code == 0, result.output
    assert [c["outcome"] for c in json_lines(out)] == ["same"] * 8


def test_the_replay_traffic_is_written_as_a_capture(tmp_path):
    capture = recorded(tmp_path)
    written = str(tmp_path / "replayed.pcap")
    with rs.StoreServer(rs.Variant(store_key=b"NewStore", other_key=b"NewOther")) as server:
        result = replay([capture, "--target", server.corbaloc, "--idl", IDL, "--pcap", written])
        assert result.exit_code == 0, result.output
    entries = [e for e in decode_capture(written, ports=[server.port]) if "error" not in e]
    requests = [e for e in entries if e["type"] == "Request"]
    replies = [e for e in entries if e["type"] in ("Reply", "LocateReply")]
    assert [e["operation"] for e in requests] == \
        ["list", "find", "find", "total", "ping", "other", "list"]
    assert len(replies) == 7 and all("request_frame" in e for e in replies)


def test_a_recorded_reply_missing_from_the_replay_and_the_other_way_round(tmp_path):
    capture = str(tmp_path / "rec.pcap")
    messages = conversation()[:2]
    rs.record(capture, [messages])
    with rs.StoreServer(rs.Variant(store_key=b"NewStore")) as server:
        silent = rs.reply_to

        def no_find(msg, variant):
            return None if getattr(msg, "operation", "") == "find" else silent(msg, variant)
        rs.reply_to = no_find
        try:
            out = str(tmp_path / "calls.jsonl")
            result = replay([capture, "--target", server.corbaloc, "--idl", IDL,
                             "--timeout", "1", "--json", out])
        finally:
            rs.reply_to = silent
    assert result.exit_code == 1
    find = [c for c in json_lines(out) if c["operation"] == "find"][0]
    assert find["outcome"] == "different"
    assert find["differences"] == [{"path": "reply", "recorded": "Reply NO_EXCEPTION",
                                    "replayed": "no reply"}]
    # The other way: the recording holds a request and no reply (the client went away).
    cut = str(tmp_path / "cut.pcap")
    from pycdr.capture.write import TcpSession, write_pcap
    packets = []
    s = TcpSession(packets, 2809)
    s.client_sends(encode_message(messages[1]))
    s.close()
    write_pcap(cut, packets)
    with rs.StoreServer(rs.Variant(store_key=b"NewStore")) as server:
        out = str(tmp_path / "cut.jsonl")
        result = replay([cut, "--target", server.corbaloc, "--idl", IDL, "--json", out])
    assert result.exit_code == 1
    assert json_lines(out)[0]["differences"] == [
        {"path": "reply", "recorded": "no reply", "replayed": "Reply NO_EXCEPTION"}]


def test_over_tls_with_the_shared_tls_options(tmp_path):
    from pycdr.orb.tls import server_context
    from tls_certs import make_certificates
    certs = make_certificates(tmp_path / "certs")
    capture = recorded(tmp_path)
    context = server_context(str(certs.server.cert), str(certs.server.key))
    variant = rs.Variant(store_key=b"NewStore", other_key=b"NewOther")
    with rs.StoreServer(variant, ssl_context=context) as server:
        result = replay([capture, "--target", server.corbaloc, "--idl", IDL, "--tls",
                         "--cacert", str(certs.ca)])
        assert result.exit_code == 0, result.output
        assert len(server.received) == 8
        untrusted = replay([capture, "--target", server.corbaloc, "--tls"])
        assert untrusted.exit_code == EXIT_TLS
        assert "certificate" in untrusted.stderr, untrusted.stderr
        # connected; the TLS server drops the GIOP; asked afterwards, it speaks TLS
        cleartext = replay([capture, "--target", server.corbaloc, "--timeout", "2"])
        assert cleartext.exit_code == EXIT_TLS, cleartext.output


def test_rate_limit_spaces_the_sends():
    import time
    from pycdr.replay.pacing import RateLimit
    limit = RateLimit(50.0)
    start = time.monotonic()
    for _ in range(11):
        limit.wait()
    assert time.monotonic() - start >= 10 / 50 - 0.01
    unlimited = RateLimit(None)
    start = time.monotonic()
    for _ in range(1000):
        unlimited.wait()
    assert time.monotonic() - start < 0.2


# -- bad input ----------------------------------------------------------------------------
def test_bad_input_typed_errors_and_exit_codes(tmp_path):
    capture = str(tmp_path / "rec.pcap")
    rs.record(capture, [conversation()[:1]])
    runner = CliRunner()
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    unreachable = runner.invoke(main, ["replay", capture, "--target", f"127.0.0.1:{port}"])
    assert unreachable.exit_code == 3 and "TCP connect" in unreachable.stderr
    assert unreachable.exception is None or isinstance(unreachable.exception, SystemExit)
    for bad in (["--target", "nowhere"], ["--target", "IOR:0102"],
                ["--target", "127.0.0.1:99999"], ["--target", "127.0.0.1:1", "--key", "x"],
                ["--target", "127.0.0.1:1", "--key", "0xzz=a"]):
        r = runner.invoke(main, ["replay", capture, *bad])
        assert r.exit_code == 2, (bad, r.output, r.stderr)
        assert "Traceback" not in r.output + r.stderr
    damaged = str(tmp_path / "damaged.pcap")
    with open(capture, "rb") as f:
        data = f.read()
    with open(damaged, "wb") as f:
        f.write(data[:24] + struct.pack("<IIII", 0, 0, 1 << 30, 1 << 30) + data[40:80])
    with rs.StoreServer(rs.Variant(store_key=b"NewStore")) as server:
        r = runner.invoke(main, ["replay", damaged, "--target", server.corbaloc])
        assert r.exit_code == 1 and r.stderr.startswith("error: "), r.stderr
        notpcap = str(tmp_path / "x.pcap")
        with open(notpcap, "wb") as f:
            f.write(b"not a capture at all")
        r = runner.invoke(main, ["replay", notpcap, "--target", server.corbaloc])
        assert r.exit_code == 1 and "not a pcap" in r.stderr


# -- the session, sans I/O -----------------------------------------------------------------
def _decoded(data):
    return decode_message(data, lenient=True)[0]


@pytest.mark.parametrize("new_key", [b"k6-key", b"a-much-longer-key"])
@pytest.mark.parametrize("version", [(1, 0), (1, 1), (1, 2)])
def test_a_new_key_keeps_the_body_and_its_alignment(version, new_key):
    msg = rs.request(41, "total", [5, 2.5], key=b"abc", version=version)
    raw = encode_message(msg)
    session = ReplaySession(KeyMap({b"abc": new_key}))
    data, call = session.outgoing(raw)
    out = _decoded(data)
    assert (out.request_id, out.object_key, out.operation) == (1, new_key, "total")
    assert out.body == msg.body
    assert out.body_offset % 8 == _decoded(raw).body_offset % 8
    r = out.body_reader()
    from pycdr.codec.marshal import read_value
    assert [read_value(r, p.type) for p in rs.OPS["total"].in_params] == [5, 2.5]


def test_an_unchanged_key_only_renumbers_the_request_id_in_place():
    raw = encode_message(rs.request(77, "list", [3], little=True))
    data, call = ReplaySession(KeyMap()).outgoing(raw)
    assert len(data) == len(raw) and data != raw
    assert _decoded(data).request_id == 1 and call.recorded_id == 77
    assert data.replace(struct.pack("<I", 1), struct.pack("<I", 77), 1) == raw


@pytest.mark.parametrize("little", [False, True], ids=["big", "little"])
def test_requests_of_a_known_shape_are_rewritten_as_when_decoded(little):
    # The same calls through one session (shapes learned, then used) and each through a
    # session of its own (decoded): the same bytes, calls and skips -- keys mapped to
    # longer and shorter ones, and a key learned midway.
    r = lambda rid, op, args, key=b"OldStore": rs.request(  # noqa: E731
        rid, op, args, key=key, little=little)
    calls = [r(1, "list", [3]), r(2, "find", ["pear"]), r(3, "list", [4]),
             r(4, "total", [5, 2.5]), r(5, "find", ["a much longer name"]),
             r(6, "list", [5], key=b"OldOther"), r(7, "list", [6], key=b"OldOther"),
             "learn", r(8, "list", [7], key=b"OldOther"), r(9, "list", [8]),
             r(10, "find", ["fig"]), r(11, "total", [6, 1.5])]
    for explicit in ({}, {b"OldStore": b"S"}, {b"OldStore": b"a-much-longer-store-key"}):
        keys = KeyMap(explicit)
        shaped = ReplaySession(keys, selected=OperationFilter(skip=["total"]))
        n = 1
        for msg in calls:
            if msg == "learn":
                keys.learn(b"OldOther", b"NewOther!")
                continue
            raw = encode_message(msg)
            alone = ReplaySession(keys, selected=OperationFilter(skip=["total"]))
            alone.next_id = n
            expected, expected_call = alone.outgoing(raw)
            data, call = shaped.outgoing(raw)
            assert data == expected, (explicit, msg.request_id)
            assert (call.operation, call.kind, call.recorded_id, call.replay_id,
                    call.outcome) == (expected_call.operation, expected_call.kind,
                                      expected_call.recorded_id, expected_call.replay_id,
                                      expected_call.outcome)
            if data is not None:
                n += 1
                last = _decoded(data)
        assert shaped._shapes, "no shape was learned"
        assert (last.operation, last.object_key) == \
            ("find", explicit.get(b"OldStore", b"OldStore"))


def test_fragments_and_cancels_follow_their_request():
    big = rs.request(9, "find", ["x" * 300])
    parts = fragment_message(encode_message(big), 128)
    session = ReplaySession(KeyMap())
    sent = [session.outgoing(p)[0] for p in parts]
    assert all(struct.unpack_from(">I", s, 12)[0] == 1 for s in sent[1:])
    cancel, call = session.outgoing(encode_message(CancelRequest(request_id=9)))
    assert _decoded(cancel).request_id == 1 and call.kind == "cancel"
    # A request not selected takes its fragments with it.
    skipping = ReplaySession(KeyMap(), selected=OperationFilter(skip=["find"]))
    out = [skipping.outgoing(p) for p in parts]
    assert out[0][1].outcome == "skipped" and all(d is None for d, _ in out)


def test_recorded_and_replayed_replies_meet_their_call():
    session = ReplaySession(KeyMap())
    _, call = session.outgoing(encode_message(rs.request(500, "list", [1])))
    reply = Reply(request_id=500, body=b"\0\0\0\0")
    assert session.recorded(encode_message(reply), ts=2_000_000) == [call]
    assert session.replayed(encode_message(Reply(request_id=999))) == []
    assert session.replayed(encode_message(Reply(request_id=1)), now=3.0) == [call]
    assert call.recorded_reply.request_id == 500 and call.replayed_reply.request_id == 1


# -- the comparison ------------------------------------------------------------------------
def _reply(op, values, variant=None, status=ReplyStatus.NO_EXCEPTION, **kw):
    msg = rs.request(1, op, values)
    if variant is not None:
        return _decoded(encode_message(rs.reply_to(msg, variant)))
    return _decoded(encode_message(Reply(request_id=1, reply_status=status, **kw)))


def test_values_compare_with_tolerance_ignore_and_paths():
    decoder = IdlBodyDecoder([rs.MODULE])
    old = _decoded(encode_message(Reply(request_id=1, body=rs.body(
        [rs.OPS["total"].result, rs.OPS["total"].params[1].type,
         rs.OPS["total"].params[2].type], [4, "a", 1.0], False))))
    new = _decoded(encode_message(Reply(request_id=1, little=True, body=rs.body(
        [rs.OPS["total"].result, rs.OPS["total"].params[1].type,
         rs.OPS["total"].params[2].type], [4, "b", 1.0 + 1e-12], True))))
    assert Comparison(decoder).replies("total", old, new) == [
        {"path": "note", "recorded": "a", "replayed": "b"},
        {"path": "x", "recorded": 1.0, "replayed": 1.0 + 1e-12}]
    assert Comparison(decoder, float_tolerance=1e-9, ignore=["note"]).replies(
        "total", old, new) == []
    items = [rs.ITEM("a", 1, 0.5), rs.ITEM("b", 2, 0.25)]
    old = _decoded(encode_message(Reply(request_id=1, body=rs.body(
        [rs.OPS["list"].result], [items], False))))
    new = _decoded(encode_message(Reply(request_id=1, body=rs.body(
        [rs.OPS["list"].result], [items[:1]], False))))
    assert Comparison(decoder).replies("list", old, new) == [
        {"path": "result.length", "recorded": 2, "replayed": 1}]
    changed = _decoded(encode_message(Reply(request_id=1, body=rs.body(
        [rs.OPS["list"].result], [[items[0], rs.ITEM("b", 3, 0.25)]], False))))
    assert Comparison(decoder, ignore=["result[*].count"]).replies("list", old, changed) == []
    assert Comparison(decoder).replies("list", old, changed)[0]["path"] == "result[1].count"


def test_json_differences_are_the_typed_json_values_of_call_json(tmp_path):
    # The same mapping as `pycdr call --json` and `pcap --json --idl`: a long is a JSON
    # number, a double a JSON number, a string a string; the terminal shows them as pcap.
    capture = recorded(tmp_path)
    with rs.StoreServer(rs.Variant(store_key=b"NewStore", other_key=b"NewOther",
                                   differ="numbers")) as server:
        out = str(tmp_path / "calls.jsonl")
        result = replay([capture, "--target", server.corbaloc, "--idl", IDL, "--json", out])
    assert result.exit_code == 1, result.output
    (different,) = [c for c in json_lines(out) if c["outcome"] != "same"]
    differences = different["differences"]
    assert differences == [
        {"path": "result[3].count", "recorded": 3, "replayed": 30},
        {"path": "result[3].weight", "recorded": 4.5, "replayed": 4.75}]
    assert [type(d[side]) for d in differences for side in ("recorded", "replayed")] == \
        [int, int, float, float]
    assert to_json(rs.ITEM("item3", 3, 4.5)) == {"name": "item3", "count": 3, "weight": 4.5}
    assert "result[3].weight: recorded 4.5, replayed 4.75" in result.output


def test_replies_that_differ_in_their_padding_only_are_the_same():
    # omniORB leaves padding uninitialised: such a reply's bytes differ from another
    # ORB's (or its own next time), its values do not.  Values read strictly (the C
    # decoder's path); a body strict reading refuses is read leniently, as before.
    decoder = IdlBodyDecoder([rs.MODULE])
    items = [rs.ITEM("a", 1, 0.5), rs.ITEM("bcd", 2, 0.25)]
    body = rs.body([rs.OPS["list"].result], [items], False)
    # count | "a" len, "a\0", 2 pad | 1 | 0.5 | "bcd" len, "bcd\0" | 2 | 4 pad | 0.25
    assert body[8:10] == b"a\0" and body[36:40] == bytes(4)
    padded = body[:10] + b"\xab\xab" + body[12:36] + b"\xcd" * 4 + body[40:]
    old, new = (_decoded(encode_message(Reply(request_id=1, body=b))) for b in (body, padded))
    assert old.body != new.body
    assert Comparison(decoder).replies("list", old, new) == []
    # a real difference beside different padding is still named
    changed = bytearray(padded)
    changed[23] = 0x01          # the first weight's last byte
    (difference,) = Comparison(decoder).replies(
        "list", old, _decoded(encode_message(Reply(request_id=1, body=bytes(changed)))))
    assert difference["path"] == "result[0].weight"
    # cut short: strict reading raises, lenient reading names what could not be read
    short = _decoded(encode_message(Reply(request_id=1, body=body[:30])))
    (difference,) = Comparison(decoder).replies("list", old, short)
    assert difference["path"] == "result" and difference["replayed"].startswith("undecodable")


def test_exceptions_compare_by_id_members_minor_and_completion():
    decoder = IdlBodyDecoder([rs.MODULE])
    missing = rs.Variant()
    old = _decoded(encode_message(rs.reply_to(rs.request(1, "find", ["missing"]), missing)))
    new_body = rs.body([rs.NOT_FOUND_TC], [rs.NOT_FOUND("missing", 8)], False)
    new = _decoded(encode_message(Reply(request_id=1, reply_status=ReplyStatus.USER_EXCEPTION,
                                        body=new_body)))
    assert Comparison(decoder).replies("find", old, new) == [
        {"path": "exception.code", "recorded": 7, "replayed": 8}]
    assert Comparison().replies("find", old, new)[0]["path"] == "exception"
    a = _decoded(encode_message(Reply(request_id=1, reply_status=ReplyStatus.SYSTEM_EXCEPTION,
                                      system_exception=SystemException(
                                          1, 0, "IDL:omg.org/CORBA/BAD_PARAM:1.0"))))
    b = _decoded(encode_message(Reply(request_id=1, reply_status=ReplyStatus.SYSTEM_EXCEPTION,
                                      system_exception=SystemException(
                                          2, 1, "IDL:omg.org/CORBA/BAD_PARAM:1.0"))))
    assert Comparison().replies("x", a, b) == [
        {"path": "exception.minor", "recorded": 1, "replayed": 2},
        {"path": "exception.completed", "recorded": "COMPLETED_YES", "replayed": "COMPLETED_NO"}]
    assert Comparison(ignore=["exception.minor"]).replies("x", a, b)[0]["path"] == \
        "exception.completed"
    assert Comparison().replies("x", a, old)[0]["path"] == "status"


def test_references_compare_by_type_id_and_key_mapping_not_address():
    decoder = IdlBodyDecoder([rs.MODULE])
    old = _reply("other", [], rs.Variant(other_key=b"K1", host="10.0.0.2", port=1))
    new = _reply("other", [], rs.Variant(other_key=b"K2", host="127.0.0.1", port=2))
    keys = KeyMap()
    comparison = Comparison(decoder, keys=keys)
    assert comparison.replies("other", old, new) == []
    assert keys.expected(b"K1") == b"K2"                 # learned
    assert keys.target_key(b"K1") == b"K2"
    other = _reply("other", [], rs.Variant(other_key=b"K3"))
    assert comparison.replies("other", old, other)[0]["path"] == "result.object_key"


def test_the_same_bytes_still_compare_references_by_the_key_mapping():
    decoder = IdlBodyDecoder([rs.MODULE])
    recorded = _reply("other", [], rs.Variant(other_key=b"K1"))
    replayed = _reply("other", [], rs.Variant(other_key=b"K1"))
    assert recorded.body == replayed.body
    mapped = Comparison(decoder, keys=KeyMap({b"K1": b"K9"}))
    assert [d["path"] for d in mapped.replies("other", recorded, replayed)] == \
        ["result.object_key"]
    assert Comparison(decoder).replies("other", recorded, replayed) == []


def test_a_capture_with_bytes_missing_is_damaged(tmp_path):
    from pycdr.capture.write import TcpSession, write_pcap
    messages = conversation()[:3]
    packets: list = []
    s = TcpSession(packets, 2809)
    for msg in messages:
        s.client_sends(encode_message(msg))
        s.server_sends(encode_message(rs.reply_to(msg, rs.Variant())))
    s.close()
    # Packets: the handshake (3), then request and reply of each call.
    for lost, outcomes in ((5, ["same", "same"]), (6, ["same", "failed", "same"])):
        capture = str(tmp_path / f"gap{lost}.pcap")
        write_pcap(capture, packets[:lost] + packets[lost + 1:])
        with rs.StoreServer(rs.Variant(store_key=b"NewStore")) as server:
            out = str(tmp_path / "calls.jsonl")
            r = CliRunner().invoke(main, ["replay", capture, "--target", server.corbaloc,
                                          "--idl", IDL, "--json", out])
        assert r.exit_code == 1, r.output
        assert "the capture is damaged: 1 errors" in r.stderr and "missing" in r.stderr
        calls = json_lines(out)
        assert sorted(c["outcome"] for c in calls) == sorted(outcomes), calls
        if lost == 6:       # the second call's recorded reply: not a difference, a failure
            (failed,) = [c for c in calls if c["outcome"] == "failed"]
            assert failed["operation"] == "find" and "missing from the capture" in \
                failed["reason"]


@pytest.mark.parametrize("chunk", [1, 7, 64, 100000])
def test_reply_stream_frames_any_chunking_fragments_and_the_end(chunk):
    from pycdr.giop.events import ConnectionClosed, MessageReceived
    from pycdr.giop.messages import LocateReply
    from pycdr.replay.session import ReplyStream
    long_body = rs.body([rs.OPS["list"].result], [[rs.ITEM("x" * 50, i, 0.5)
                                                    for i in range(20)]], False)
    stream = b"".join([
        encode_message(Reply(request_id=1, body=b"\0\0\0\7")),
        *fragment_message(encode_message(Reply(request_id=2, body=long_body)), 256),
        encode_message(LocateReply(request_id=3)),
        encode_message(Reply(version=(1, 0), request_id=4, body=b"\0\0\0\1")),
        encode_message(Reply(request_id=5, little=True, body=b"\1\0\0\0")),
    ])
    s = ReplyStream()
    events = []
    for at in range(0, len(stream), chunk):
        events += s.feed(stream[at:at + chunk])
    events += s.feed(b"")
    received = [e.message for e in events if isinstance(e, MessageReceived)]
    assert [m.request_id for m in received] == [1, 2, 3, 4, 5]
    assert received[1].body == long_body
    assert isinstance(events[-1], ConnectionClosed)
    broken = ReplyStream()
    events = broken.feed(encode_message(Reply(request_id=1)) + b"NOT GIOP AT ALL")
    assert isinstance(events[0], MessageReceived)
    assert len(events) > 1 and not isinstance(events[1], MessageReceived)


def test_a_dry_run_forgets_each_call_at_its_recorded_reply(tmp_path):
    from pycdr.capture.read import CaptureReader
    from pycdr.replay.runner import Replay, ReplayOptions
    from pycdr.replay.targets import parse_targets
    capture = recorded(tmp_path)
    default, _ = parse_targets(["127.0.0.1:9"])
    listed, sessions = [], []
    replay = Replay(ReplayOptions(default_target=default, dry_run=True),
                    report=None, listing=lambda call, data, rec: (listed.append(call),
                                                                  sessions.append(rec.session)))
    replay.run(CaptureReader(capture))
    assert [c.operation for c in listed] == ["list", "find", "find", "total", "ping",
                                             "(LocateRequest)", "other", "list"]
    assert sessions[0].calls == {} and sessions[0].by_replay_id == {}


@pytest.mark.parametrize("giop,order", [("1.0", "little"), ("1.1", "big"), ("1.2", "little")])
def test_requests_sent_in_another_version_and_byte_order(tmp_path, giop, order):
    capture = recorded(tmp_path)                      # GIOP 1.2, big-endian
    with rs.StoreServer(rs.Variant(store_key=b"NewStore", other_key=b"NewOther")) as server:
        out = str(tmp_path / "calls.jsonl")
        result = replay([capture, "--target", server.corbaloc, "--idl", IDL, "--giop", giop,
                         "--byte-order", order, "--json", out])
        assert result.exit_code == 0, result.output
        version = tuple(int(p) for p in giop.split("."))
        assert {(m.version, m.little) for m in server.received} == {(version, order == "little")}
        assert [m.object_key for m in server.received][-1] == b"NewOther"
    assert {c["outcome"] for c in json_lines(out)} == {"same"}
    assert replay([capture, "--target", server.corbaloc, "--giop", giop]).exit_code == 2


def test_reencoding_keeps_the_arguments_and_refuses_what_it_cannot():
    from pycdr.replay.session import Reencoding
    arguments = IdlBodyDecoder([rs.MODULE]).arguments
    session = ReplaySession(KeyMap(), reencoding=Reencoding(arguments, (1, 0), True))
    data, call = session.outgoing(encode_message(rs.request(3, "total", [5, 2.5])))
    out = _decoded(data)
    assert (out.version, out.little, out.request_id) == ((1, 0), True, 1)
    from pycdr.codec.marshal import read_value
    r = out.body_reader()
    assert [read_value(r, p.type) for p in rs.OPS["total"].in_params] == [5, 2.5]
    unknown = ReplaySession(KeyMap(), reencoding=Reencoding({}, (1, 2)))
    data, call = unknown.outgoing(encode_message(rs.request(3, "total", [5, 2.5])))
    assert data is None and call.outcome == "failed" and "not in the IDL" in call.reason
    parts = fragment_message(encode_message(rs.request(9, "total", [5, 2.5])), 32)
    sent = [unknown.outgoing(p) for p in parts]
    assert all(d is None for d, _ in sent) and sent[-1][1].outcome == "failed" and \
        "not in the IDL" in sent[-1][1].reason


def fragments(msg, limit: int) -> list:
    """``msg`` as its GIOP 1.1 or 1.2 fragments of at most ``limit`` bytes."""
    from pycdr.giop.messages import encode_fragments
    from pycdr.codec.marshal import read_value, write_value
    params = rs.OPS[msg.operation].in_params
    data = encode_message(msg)
    r = _decoded(data).body_reader()
    args = [read_value(r, p.type) for p in params]

    def write_body(w):
        for p, value in zip(params, args):
            write_value(w, p.type, value)
    return encode_fragments(msg, data, limit, write_body=write_body)


def fragmented_capture(path: str, version, little=False) -> list:
    """A recording whose client sends find() in fragments, list() whole, then total() in
    fragments (GIOP ``version``), each answered; returns the requests."""
    from pycdr.capture.write import TcpSession, write_pcap
    requests = [rs.request(1, "find", ["x" * 300], version=version, little=little),
                rs.request(2, "list", [2], version=version, little=little),
                rs.request(3, "total", [7, 1.5], version=version, little=little)]
    packets = []
    session = TcpSession(packets, 2809)
    for msg, limit in zip(requests, (128, None, 48)):
        for part in fragments(msg, limit) if limit else [encode_message(msg)]:
            session.client_sends(part)
        session.server_sends(encode_message(rs.reply_to(_decoded(encode_message(msg)),
                                                        rs.Variant())))
    session.close()
    write_pcap(path, packets)
    return requests


@pytest.mark.parametrize("recorded_version", [(1, 1), (1, 2)], ids=["rec1.1", "rec1.2"])
@pytest.mark.parametrize("giop,order", [("1.0", "little"), ("1.1", "little"), ("1.2", "big"),
                                        ("1.3", "little")])
def test_fragmented_requests_are_joined_encoded_again_and_cut_as_recorded(
        tmp_path, recorded_version, giop, order):
    capture = str(tmp_path / "frag.pcap")
    requests = fragmented_capture(capture, recorded_version)
    written = str(tmp_path / "replayed.pcap")
    with rs.StoreServer(rs.Variant(store_key=b"NewStore")) as server:
        out = str(tmp_path / "calls.jsonl")
        result = replay([capture, "--target", server.corbaloc, "--idl", IDL, "--giop", giop,
                         "--byte-order", order, "--json", out, "--pcap", written])
        assert result.exit_code == 0, result.output
        version = tuple(int(p) for p in giop.split("."))
        from pycdr.codec.marshal import read_value
        assert [(m.operation, m.version, m.little) for m in server.received] == \
            [(r.operation, version, order == "little") for r in requests]

        def arguments(msg):
            r = msg.body_reader()
            return [read_value(r, p.type) for p in rs.OPS[msg.operation].in_params]
        assert [arguments(m) for m in server.received] == \
            [arguments(_decoded(encode_message(r))) for r in requests]
        assert arguments(server.received[0]) == ["x" * 300]
    assert [(c["operation"], c["outcome"]) for c in json_lines(out)] == \
        [("find", "same"), ("list", "same"), ("total", "same")]
    # (A first fragment that cuts the request header is an error entry of its own for
    # the analyzer, which then shows the request reassembled.)
    sent = [e for e in decode_capture(written, ports=[server.port])
            if e["dst"].endswith(f":{server.port}") and "error" not in e]
    assert [e["operation"] for e in sent if e["type"] == "Request" and
            not e["more_fragments"]] == ["find", "list", "total"]
    fragment_count = sum(e["type"] == "Fragment" for e in sent)
    if version == (1, 0):           # GIOP 1.0 has no fragments: sent whole
        assert fragment_count == 0
    else:                           # cut again, no message longer than the recorded first
        assert fragment_count >= 3
        find = [e for e in sent if e.get("operation") == "find" and e["more_fragments"]]
        assert len(find) == 1 and find[0]["message_size"] + 12 <= 128


def test_a_fragmented_request_the_recording_ends_in_fails():
    from pycdr.replay.session import Reencoding
    session = ReplaySession(KeyMap(), reencoding=Reencoding(
        IdlBodyDecoder([rs.MODULE]).arguments, (1, 0), True))
    parts = fragment_message(encode_message(rs.request(9, "find", ["x" * 300])), 128)
    assert [session.outgoing(p) for p in parts[:-1]] == [(None, None)] * (len(parts) - 1)
    [call] = session.abandoned()
    assert call.outcome == "failed" and "before its last fragment" in call.reason
    # A GIOP 1.1 request begun before the last fragment of the one before: that one fails,
    # this one is joined and sent.
    first = fragments(rs.request(1, "find", ["x" * 300], version=(1, 1)), 128)
    second = fragments(rs.request(2, "find", ["y" * 300], version=(1, 1)), 128)
    sent = [session.outgoing(p) for p in first[:1] + second]
    assert [d is not None for d, _ in sent] == [False] * (len(second)) + [True]
    assert _decoded(sent[-1][0]).version == (1, 0) and sent[-1][1].recorded_id == 2
    [call] = session.abandoned()
    assert (call.outcome, call.reason) == ("failed", "another request began before its "
                                                     "last fragment")


def test_a_profile_addressed_request_goes_to_the_target_by_key():
    import dataclasses
    from pycdr.giop.messages import ProfileAddr
    from pycdr.addressing.iiop import IIOPProfile, encode_profile
    profile = encode_profile(IIOPProfile((1, 2), "10.0.0.2", 2809, b"OldStore"))
    msg = dataclasses.replace(rs.request(4, "list", [2]), target=ProfileAddr(profile))
    for keys, expected in ((KeyMap({b"OldStore": b"NewStore"}), b"NewStore"),
                           (KeyMap(), b"OldStore")):
        data, call = ReplaySession(keys).outgoing(encode_message(msg))
        out = _decoded(data)
        assert out.target == KeyAddr(expected) and out.body == msg.body


def test_summary_latency_percentiles_within_one_percent():
    """The summary's p50/p99 per operation (recorded and replayed) from its histograms,
    against the exact percentiles of the calls' latencies; outcomes counted."""
    import random

    from pycdr.replay.session import DIFFERENT, SAME, Call
    from pycdr.replay.summary import ReplaySummary
    rng = random.Random(8)
    summary = ReplaySummary()
    recorded, replayed = [], []
    for i in range(5000):
        call = Call(0, "10.0.0.2:2809", "echo", "request", i, 0)
        call.recorded_reply = object()
        call.recorded_latency = rng.lognormvariate(-9, 1)
        call.replayed_latency = rng.lognormvariate(-8, 0.5)
        call.outcome = SAME if i % 100 else DIFFERENT
        recorded.append(call.recorded_latency)
        replayed.append(call.replayed_latency)
        summary.add(call)
    got = summary.to_json()["operations"]["echo"]
    assert (got["calls"], got["same"], got["different"]) == (5000, 4950, 50)
    for name, values in (("recorded", sorted(recorded)), ("replayed", sorted(replayed))):
        for p in (50, 99):
            exact = values[int(p / 100 * len(values)) - 1] * 1e3
            assert abs(got[f"{name}_p{p}_ms"] - exact) <= 0.011 * exact + 0.0005, (name, p)
