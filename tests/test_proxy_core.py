"""The proxy's protocol core without sockets: bytes in, what to send out; and the rules
file's vocabulary and errors."""

import json

import pytest

from proxy_support import MODULE
from pycdr.addressing.rewrite import ReferenceRewriter
from pycdr.calls.bodies import CallBodies
from pycdr.codec.cdr import CDRWriter
from pycdr.addressing.iiop import IIOPProfile, decode_profile, make_ior
from pycdr.codec.ior import ior_to_string
from pycdr.giop.header import MsgType, compress_to_ziop, encode_header, parse_header
from pycdr.giop.layout import message_fields
from pycdr.giop.messages import (CancelRequest, LocateReply, LocateRequest, LocateStatus,
                                 Reply, ReplyStatus, Request, decode_message, encode_fragments,
                                 encode_message, fragment_message)
from pycdr.giop.messages.model import KeyAddr
from pycdr.proxy.core import CLIENT, SERVER, Close, ProxyCore, ProxyLimits, Send, coalesced
from pycdr.proxy.rules import RuleError, load_rules, parse_rules

SERVER_ADDRESS = ("10.0.0.2", 2809)
PROXY_ADDRESS = ("127.0.0.1", 9999)


def make_core(rules=None, **options):
    rows = []
    core = ProxyCore(rewriter=ReferenceRewriter({SERVER_ADDRESS: PROXY_ADDRESS}),
                     rules=parse_rules(rules, 1) if rules else None, emit=rows.append,
                     bodies=CallBodies([MODULE]), **options)
    return core, core.connection(("10.0.0.1", 40000), SERVER_ADDRESS), rows


def sent(actions, to):
    return [b"".join(a.pieces) for a in actions if isinstance(a, Send) and a.to == to]


def request(rid=1, op="echo_long", version=(1, 2), little=False, body=b"\0\0\0\x2a"):
    return encode_message(Request(version=version, little=little, request_id=rid,
                                  response_flags=3, target=KeyAddr(b"Echo"), operation=op,
                                  body=body))


def reply(rid=1, version=(1, 2), little=False, body=b"\0\0\0\x2a", **kw):
    return encode_message(Reply(version=version, little=little, request_id=rid, body=body,
                                **kw))


@pytest.mark.parametrize("version", [(1, 0), (1, 1), (1, 2), (1, 3)])
@pytest.mark.parametrize("little", [False, True])
def test_messages_pass_byte_for_byte_in_any_chunking(version, little):
    core, conn, rows = make_core()
    data = request(version=version, little=little)
    out = []
    for i in range(len(data)):                      # one byte at a time
        out += conn.data(CLIENT, data[i:i + 1], i)
    assert sent(out, SERVER) == [data]
    answer = reply(version=version, little=little)
    out = conn.data(SERVER, answer + answer[:5], 100)
    assert sent(out, CLIENT) == [answer]
    assert [r["outcome"] for r in rows] == ["success"]


def test_the_messages_of_one_read_go_on_in_one_write_a_side():
    core, conn, rows = make_core()
    data = request(1) + request(2, version=(1, 0)) + request(3)     # (common, general, common)
    out = coalesced(conn.data(CLIENT, data, 0))
    assert len(out) == 1 and out[0].to == SERVER and len(out[0].pieces) == 3
    assert b"".join(out[0].pieces) == data
    # only runs of Sends at once to one side: a delay, another side or a Close ends a run
    a, b = Send(SERVER, [b"a"]), Send(SERVER, [b"b", b"c"])
    late, back, close = Send(SERVER, [b"d"], delay=0.1), Send(CLIENT, [b"e"]), Close(SERVER)
    assert coalesced([a, b, late, a, back, b, close, a]) == [
        Send(SERVER, [b"a", b"b", b"c"]), late, a, back, b, close, a]
    assert a.pieces == [b"a"] and b.pieces == [b"b", b"c"]      # (not changed in place)


@pytest.mark.parametrize("version", [(1, 1), (1, 2)])
def test_fragments_are_held_then_passed_as_they_were_cut(version):
    core, conn, rows = make_core()
    body = CDRWriter()
    body.write_string("x" * 200)
    msg = Request(version=version, request_id=5, response_flags=3, target=KeyAddr(b"Echo"),
                  operation="echo_string", body=body.getvalue())
    whole = encode_message(msg)
    parts = encode_fragments(msg, whole, 64, write_body=lambda w: w.write_string("x" * 200))
    assert len(parts) > 3
    out = []
    for part in parts[:-1]:
        out += conn.data(CLIENT, part, 1)
    assert out == []                                # held until the last one
    out = conn.data(CLIENT, parts[-1], 2)
    assert [a.pieces for a in out] == [parts]       # as cut, in one write
    assert core.held_total == 0


def test_cancel_request_ziop_message_error_and_close_connection_pass_through():
    core, conn, rows = make_core()
    conn.data(CLIENT, request(rid=3), 1)
    cancel = encode_message(CancelRequest(request_id=3))
    assert sent(conn.data(CLIENT, cancel, 2), SERVER) == [cancel]
    ziop = compress_to_ziop(request(rid=4, body=b"\0" * 4000))
    assert sent(conn.data(CLIENT, ziop, 3), SERVER) == [ziop]
    error = encode_header((1, 1), True, MsgType.MessageError, 0)
    assert sent(conn.data(CLIENT, error, 3), SERVER) == [error]
    assert sent(conn.data(SERVER, error, 3), CLIENT) == [error]
    close = encode_header((1, 2), False, MsgType.CloseConnection, 0)
    out = conn.data(SERVER, close, 4)
    assert sent(out, CLIENT) == [close]
    assert {a.which for a in out if isinstance(a, Close)} == {CLIENT, SERVER}
    # the CancelRequest's row, the MessageErrors' rows, then at the close the cancelled
    # call's and the ZIOP call's
    assert [r["outcome"] for r in rows] == ["cancelled", "malformed", "malformed",
                                            "cancelled", "connection_closed"]


def test_forward_replies_are_rewritten_with_sizes_and_fragments_made_anew():
    core, conn, rows = make_core()
    target = make_ior("IDL:EchoAll/Echo:1.0",
                      [IIOPProfile((1, 2), SERVER_ADDRESS[0], SERVER_ADDRESS[1], b"Echo")])
    conn.data(CLIENT, request(rid=1), 1)
    msg = Reply(request_id=1, reply_status=ReplyStatus.LOCATION_FORWARD, forward=target)
    whole = encode_message(msg)
    parts = encode_fragments(msg, whole, 48)
    out = conn.data(SERVER, b"".join(parts), 2)
    (send,) = out
    assert len(send.pieces) > 1                     # still fragments, cut anew
    joined, _ = decode_message(_join(send.pieces))
    p = decode_profile(joined.forward.profiles[0])
    assert (p.host, p.port, p.object_key) == (*PROXY_ADDRESS, b"Echo")
    conn.data(CLIENT, encode_message(LocateRequest(request_id=2, target=KeyAddr(b"Echo"))), 3)
    located = encode_message(LocateReply(request_id=2, locate_status=LocateStatus.OBJECT_FORWARD,
                                         forward=target))
    (send,) = conn.data(SERVER, located, 4)
    moved, _ = decode_message(send.pieces[0])
    assert decode_profile(moved.forward.profiles[0]).port == PROXY_ADDRESS[1]
    # the row holds what the client got
    assert rows[0]["forward_to"] == ior_to_string(joined.forward) != ior_to_string(target)


def _join(pieces):
    """A GIOP 1.2 message from its fragments."""
    first = pieces[0]
    body = first[12:] + b"".join(p[16:] for p in pieces[1:])
    h = parse_header(first)
    return encode_header(h.version, h.little, h.msg_type, len(body)) + body


def test_what_the_proxy_cannot_frame_goes_on_and_the_connection_is_relayed_as_bytes():
    # Not the proxy's to answer: the peer judges it (a MessageError, a close, a wait), and
    # what either side sends later goes on as it came.
    core, conn, rows = make_core()
    notices = []
    core.notice = notices.append
    out = conn.data(CLIENT, b"NOT GIOP AT ALL!" + request(rid=2), 1)
    assert b"".join(sent(out, SERVER)) == b"NOT GIOP AT ALL!" + request(rid=2)
    assert sent(out, CLIENT) == [] and not any(isinstance(a, Close) for a in out)
    assert conn.relaying and not conn.finished
    error = encode_header((1, 0), False, MsgType.MessageError, 0)
    assert sent(conn.data(SERVER, error, 2), CLIENT) == [error]
    assert sent(conn.data(CLIENT, b"\x01", 3), SERVER) == [b"\x01"]
    assert len(notices) == 1 and "client 10.0.0.1:40000" in notices[0]
    assert "relayed byte for byte" in notices[0]
    # A reply that breaks the rules reaches the caller as it came (no MARSHAL made up).
    core, conn, rows = make_core()
    conn.data(CLIENT, request(rid=9), 1)
    out = conn.data(SERVER, b"GIOP\x09\x09\0\0\0\0\0\0", 2)
    assert sent(out, CLIENT) == [b"GIOP\x09\x09\0\0\0\0\0\0"] and conn.relaying


def test_fragments_held_when_the_relay_starts_go_on_first_in_order():
    core, conn, _ = make_core()
    whole = encode_message(Request(version=(1, 2), little=False, request_id=4,
                                   response_flags=3, target=KeyAddr(b"Echo"),
                                   operation="echo_octets", body=b"\0\0\0\x40" + b"x" * 64))
    pieces = fragment_message(whole, 40)
    assert len(pieces) > 2
    out = conn.data(CLIENT, b"".join(pieces[:2]), 1)
    assert sent(out, SERVER) == [] and core.held_total > 0
    # a GIOP 1.0 Fragment is no message at all: the proxy's checks refuse it
    stray = encode_header((1, 0), False, MsgType.Fragment, 0)
    out = conn.data(CLIENT, stray + pieces[2], 2)
    assert b"".join(sent(out, SERVER)) == b"".join(pieces[:2]) + stray + pieces[2]
    assert core.held_total == 0


def test_past_the_budget_what_is_held_goes_on_and_nothing_more_is_held():
    limits = ProxyLimits(max_message_size=100, max_connection_bytes=200, max_total_bytes=250)
    core, conn, _ = make_core(limits=limits)
    big = request(body=b"\0" * 200)
    out = conn.data(CLIENT, big[:50], 1)
    assert sent(out, SERVER) == [big[:50]] and conn.relaying and not conn.finished
    assert sent(conn.data(CLIENT, big[50:], 2), SERVER) == [big[50:]]
    assert core.held_total == 0
    core, first, _ = make_core(limits=limits)
    second = core.connection(("10.0.0.1", 40001), SERVER_ADDRESS)
    third = core.connection(("10.0.0.1", 40002), SERVER_ADDRESS)
    partial = request(body=b"\0" * 40)[:-1]          # a message but its last byte
    assert 250 / 3 < len(partial) < 250 / 2
    assert first.data(CLIENT, partial, 1) == []
    assert second.data(CLIENT, partial, 1) == []
    assert core.held_total == 2 * len(partial)
    out = third.data(CLIENT, partial, 1)
    assert third.relaying and b"".join(sent(out, SERVER)) == partial
    assert core.held_total == 2 * len(partial)
    first.eof(CLIENT, 2)
    assert core.held_total == len(partial)


def test_every_first_and_probability_count_the_matching_messages():
    rules = parse_rules([
        {"match": {"operation": "a", "every": 3}, "action": {"type": "drop"}},
        {"match": {"operation": "b", "first": 2}, "action": {"type": "drop"}},
        {"match": {"operation": "c", "probability": 0.5}, "action": {"type": "drop"}},
        {"match": {"object_key": "4563686F", "direction": "reply"},
         "action": {"type": "duplicate"}}], seed=7)
    hits = [bool(rules.applying("request", "a", None, "")) for _ in range(7)]
    assert hits == [False, False, True, False, False, True, False]
    assert [bool(rules.applying("request", "b", None, "")) for _ in range(4)] == \
        [True, True, False, False]
    sample = [bool(rules.applying("request", "c", None, "")) for _ in range(400)]
    assert 150 < sum(sample) < 250
    again = parse_rules([{"match": {"operation": "c", "probability": 0.5},
                          "action": {"type": "drop"}}], seed=7)
    assert [bool(again.applying("request", "c", None, "")) for _ in range(400)] == sample
    assert rules.applying("reply", "x", None, "4563686f")[0][1].type == "duplicate"


@pytest.mark.parametrize("rules, message", [
    ({}, "a JSON list"),
    ([{"match": {"operation": "x"}}], "\"action\""),
    ([{"match": {"colour": "red"}, "action": {"type": "drop"}}], "unknown match key colour"),
    ([{"action": {"type": "explode"}}], "unknown action type explode"),
    ([{"action": {"type": "delay"}}], "delay needs ms"),
    ([{"action": {"type": "delay", "ms": "soon"}}], "delay ms has the wrong type"),
    ([{"action": {"type": "system_exception", "id": "TRANSIENT", "completed": "perhaps"}}],
     "completed must be yes, no or maybe"),
    ([{"match": {"direction": "request"}, "action": {"type": "stall"}}], "acts on replies"),
    ([{"match": {"nth": 0}, "action": {"type": "drop"}}], "nth must be"),
    ([{"match": {"probability": 2}, "action": {"type": "drop"}}], "probability"),
    ([{"action": {"type": "forward", "to": "corbaloc:rir:/X"}}], "forward to"),
    ([{"action": {"type": "corrupt", "path": "reply.request_id", "value": "zz"}}], "hex"),
])
def test_bad_rules_are_named_with_their_rule(rules, message, tmp_path):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(rules))
    with pytest.raises(RuleError) as e:
        load_rules(str(path))
    assert message in str(e.value) and str(path) in str(e.value)
    if isinstance(rules, list):
        assert "rule 1" in str(e.value)


def test_a_reply_rule_acts_on_the_reply_of_the_matching_request():
    core, conn, rows = make_core([{"match": {"operation": "echo_long", "direction": "reply"},
                                   "action": {"type": "system_exception", "id": "TRANSIENT",
                                              "completed": "yes"}}])
    out = conn.data(CLIENT, request(rid=1), 1)
    assert len(sent(out, SERVER)) == 1
    (answer,) = sent(conn.data(SERVER, reply(rid=1), 2), CLIENT)
    msg, _ = decode_message(answer)
    assert msg.system_exception.name == "TRANSIENT" and msg.system_exception.completed == 0
    assert rows[0]["faults"][0]["direction"] == "reply"
    assert rows[0]["exception_id"] == "IDL:omg.org/CORBA/TRANSIENT:1.0"


def test_a_corrupt_rule_with_hex_bytes_and_its_row_as_json():
    from pycdr.calls.schema import row_json
    core, conn, rows = make_core([{"match": {"direction": "reply"},
                                   "action": {"type": "corrupt", "path": "reply.request_id",
                                              "value": "000000ff"}}])
    conn.data(CLIENT, request(rid=1), 1)
    (answer,) = sent(conn.data(SERVER, reply(rid=1), 2), CLIENT)
    assert decode_message(answer)[0].request_id == 255
    assert json.loads(row_json(rows[0]))["faults"] == [
        {"rule": 1, "direction": "reply", "type": "corrupt", "path": "reply.request_id",
         "value": "000000ff"}]


def test_a_cancelled_request_s_held_fragments_are_dropped():
    core, conn, rows = make_core()
    body = CDRWriter()
    body.write_string("y" * 200)
    msg = Request(request_id=6, response_flags=3, target=KeyAddr(b"Echo"),
                  operation="echo_string", body=body.getvalue())
    parts = encode_fragments(msg, encode_message(msg), 64)
    assert conn.data(CLIENT, parts[0] + parts[1], 1) == []
    assert core.held_total == len(parts[0]) + len(parts[1])
    cancel = encode_message(CancelRequest(request_id=6))
    assert sent(conn.data(CLIENT, cancel, 2), SERVER) == [cancel]
    assert core.held_total == 0


def test_a_message_only_a_lenient_reader_takes_passes_as_it_came():
    """The checks are strict (the decoder's fast path); what they refuse is read again
    leniently, so a peer that would take it gets it: here a GIOP 1.1 response_expected
    octet of 2, with the violation in the call's row."""
    core, conn, rows = make_core()
    data = bytearray(request(version=(1, 1)))
    (field,) = [f for f in message_fields(bytes(data)) if f.path == "request.response_expected"]
    data[field.offset] = 2
    assert sent(conn.data(CLIENT, bytes(data), 1), SERVER) == [bytes(data)]
    conn.data(SERVER, reply(version=(1, 1)), 2)
    (row,) = rows
    assert row["outcome"] == "success" and row["violations"]


@pytest.mark.parametrize("version", [(1, 0), (1, 1), (1, 2)])
@pytest.mark.parametrize("status", [0, 1, 2, 3])
def test_the_lean_entry_makes_the_rows_the_whole_json_makes(version, status):
    """The proxy hands the tracker pycdr.calls.tracker.message_entry, not to_json(): what
    it holds is to_json()'s, and the rows come out the same."""
    from pycdr.calls.tracker import CallTracker, message_entry
    from pycdr.giop.messages import decode_message
    from pycdr.giop.sysexc import TRANSIENT, CompletionStatus
    body = {0: b"\0\0\0\x2a", 1: encode_string("IDL:PycdrTest/Oops:1.0"), 2: b"", 3: b""}[status]
    kw = {2: {"system_exception": TRANSIENT(0x4f4d0001, CompletionStatus.COMPLETED_NO)},
          3: {"forward": decode_profile_ior()}}.get(status, {})
    messages = [decode_message(request(rid=7, version=version))[0],
                decode_message(reply(rid=7, version=version, body=body, reply_status=status,
                                     **kw))[0]]
    rows = {}
    for name, make in (("lean", message_entry), ("whole", lambda m: m.to_json())):
        out = rows[name] = []
        tracker = CallTracker(out.append)
        conn = tracker.connection(0, "10.0.0.1", 40000, "10.0.0.2", 2809, client=CLIENT)
        for side, msg in zip((CLIENT, SERVER), messages):
            entry = make(msg)
            whole = msg.to_json()
            assert {k: whole[k] if k != "target" else
                    {n: whole[k][n] for n in entry[k]} for k in entry} == entry
            tracker.message(conn, side, entry, 5, msg)
    assert rows["lean"] == rows["whole"] and len(rows["lean"]) == 1


def encode_string(text):
    w = CDRWriter()
    w.write_string(text)
    return w.getvalue()


def decode_profile_ior():
    return make_ior("IDL:PycdrTest/Echo:1.0", [IIOPProfile((1, 2), "10.0.0.2", 2809, b"Echo")])
