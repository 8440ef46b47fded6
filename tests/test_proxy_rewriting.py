"""References the proxy moves in replies: the bytes the client gets read, value by value,
as the same reply encoded whole with the references moved; each GIOP version, both
byte orders, references in results, out parameters, structs, sequences, anys and
valuetypes, LOCATION_FORWARD and OBJECT_FORWARD; proxy addresses whose IORs are as
long as the server's, and longer by amounts that keep or break the alignment of what
follows.  Both codec paths (the ``impl`` fixture)."""

import pytest

from pycdr.addressing.iiop import IIOPProfile, decode_profile, make_ior
from pycdr.addressing.rewrite import ReferenceRewriter
from pycdr.calls.bodies import CallBodies
from pycdr.codec import tc
from pycdr.codec.marshal import read_value, write_value
from pycdr.codec.references import map_references
from pycdr.codec.values import Any, class_for
from pycdr.giop.header import HEADER_SIZE
from pycdr.giop.messages import (LocateReply, LocateRequest, LocateStatus, Reply,
                                 ReplyStatus, Request, decode_message, encode_fragments,
                                 encode_message)
from pycdr.giop.messages.model import KeyAddr
from pycdr.idl import load_string
from pycdr.orb.jsonvalues import to_json
from pycdr.proxy.core import CLIENT, SERVER, ProxyCore, Send
from pycdr.proxy.references import moved_body

IDL = """
module Moved {
  struct Pair { long before; Object ref; double after; };
  typedef sequence<Object> Objects;
  valuetype Box { public Object ref; public long n; };
  interface Refs {
    Object only(in Object o);
    Object then(in Object o, out double after, out string tail);
    long outs(in Object o, out Object a, out short s, out Object b);
    any in_any(in any v);
    Pair in_pair(in Pair p);
    Objects many(in Objects s);
    Box twice(in Box a, out Box b);
  };
};
"""
MODULE = load_string(IDL, register=False)
OPS = MODULE.interfaces["Moved::Refs"].all_operations()
SERVER_ADDRESS = ("10.0.0.2", 2809)
OTHER_SERVER = ("10.0.0.3", 2810)
# proxy hosts: IORs as long as the server's, longer by 4, 8 and 20 bytes, shorter by 4
# (what follows them keeps its alignment or not)
PROXY_HOSTS = ["10.0.0.9", "127.0.0.100", "10.0.0.9.example", "a-longer-name.example.test",
               "proxy"]
VERSIONS = [(1, 0), (1, 1), (1, 2)]


def ior(address, key=b"obj"):
    return make_ior("IDL:Moved/Target:1.0", [IIOPProfile((1, 2), *address, key)])


def results(op: str) -> list:
    """The values of ``op``'s reply (return, then out parameters), made anew each call
    (a walk replaces references in place)."""
    s, o = ior(SERVER_ADDRESS), ior(OTHER_SERVER)
    pair = class_for(MODULE.types["Moved::Pair"])
    box = class_for(MODULE.types["Moved::Box"])(ref=s, n=5)
    return {
        "only": [s],
        "then": [s, 2.5, "tail"],
        "outs": [7, s, 3, ior(SERVER_ADDRESS, b"other key")],
        "in_any": [Any(tc.Object, s)],
        "in_pair": [pair(before=1, ref=s, after=0.5)],
        "many": [[s, None, o, ior(SERVER_ADDRESS, b"k2")]],
        "twice": [box, box],                    # one value, shared: an indirection
    }[op]


ANYS = {
    "struct": lambda: Any(MODULE.types["Moved::Pair"],
                          class_for(MODULE.types["Moved::Pair"])(before=2, ref=ior(
                              SERVER_ADDRESS), after=1.5)),
    "nested": lambda: Any(tc.any, Any(tc.Object, ior(SERVER_ADDRESS))),
    "valuetype": lambda: Any(MODULE.types["Moved::Box"], class_for(
        MODULE.types["Moved::Box"])(ref=ior(SERVER_ADDRESS), n=1)),
}


def item_types(op: str) -> list:
    o = OPS[op]
    items = [] if o.result.kind().name == "tk_void" else [o.result]
    return items + [p.type for p in o.out_params]


def make_core(proxy_host):
    rows = []
    core = ProxyCore(rewriter=ReferenceRewriter({SERVER_ADDRESS: (proxy_host, 9999)}),
                     emit=rows.append, bodies=CallBodies([MODULE]))
    return core, core.connection(("10.0.0.1", 40000), SERVER_ADDRESS), rows


def request(op, version, little, rid=1):
    (parameter,) = OPS[op].in_params
    # (the argument: of the result's type, or a reference)
    argument = results(op)[0] if op in ("only", "in_any", "in_pair", "many", "twice") \
        else ior(SERVER_ADDRESS)

    def write_body(w):
        write_value(w, parameter.type, argument)
    return encode_message(Request(version=version, little=little, request_id=rid,
                                  response_flags=3, target=KeyAddr(b"Refs"), operation=op),
                          write_body=write_body)


def reply(op, version, little, values, rid=1):
    items = item_types(op)

    def write_body(w):
        for t, v in zip(items, values):
            write_value(w, t, v)
    return encode_message(Reply(version=version, little=little, request_id=rid),
                          write_body=write_body)


def expected(values, items, proxy_host) -> list:
    """The values with their references moved as the proxy moves them."""
    rewriter = ReferenceRewriter({SERVER_ADDRESS: (proxy_host, 9999)})
    return [map_references(t, v, lambda r, path: rewriter.rewrite(r)[0])
            for t, v in zip(items, values)]


def received(out) -> bytes:
    (send,) = [a for a in out if isinstance(a, Send) and a.to == CLIENT]
    return b"".join(send.pieces)


def read_reply(data: bytes, items) -> tuple:
    """(the Reply, its values as JSON): every item read, the message's size its own."""
    msg, warnings = decode_message(data)
    assert len(data) == HEADER_SIZE + msg.message_size and not warnings
    r = msg.body_reader()
    values = [to_json(read_value(r, t)) for t in items]
    assert r.end - r.pos < 8                # nothing but padding after the values
    return msg, values


def relay(op, version, little, proxy_host, values):
    core, conn, rows = make_core(proxy_host)
    conn.data(CLIENT, request(op, version, little), 1)
    original = reply(op, version, little, values)
    return original, received(conn.data(SERVER, original, 2)), rows


@pytest.mark.parametrize("proxy_host", PROXY_HOSTS)
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("little", [False, True])
@pytest.mark.parametrize("op", list(OPS))
def test_the_client_reads_the_values_a_whole_encoding_would_give(impl, op, version, little,
                                                                  proxy_host):
    items = item_types(op)
    original, data, rows = relay(op, version, little, proxy_host, results(op))
    moved = expected(results(op), items, proxy_host)
    whole = reply(op, version, little, moved)
    assert data != original
    msg, got = read_reply(data, items)
    reference, want = read_reply(whole, items)
    assert got == want
    assert (msg.request_id, msg.reply_status, msg.service_contexts, msg.version,
            msg.little) == (reference.request_id, reference.reply_status,
                            reference.service_contexts, version, little)
    # the call's row holds what the client got
    names = (["return"] if OPS[op].result.kind().name != "tk_void" else []) + \
        [p.name for p in OPS[op].out_params]
    assert rows[-1]["result"] == dict(zip(names, want)) and rows[-1]["violations"] is None


@pytest.mark.parametrize("proxy_host", PROXY_HOSTS)
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("little", [False, True])
@pytest.mark.parametrize("kind", list(ANYS))
def test_references_inside_anys_are_moved_as_a_whole_encoding_moves_them(
        impl, kind, version, little, proxy_host):
    items = item_types("in_any")
    original, data, _ = relay("in_any", version, little, proxy_host, [ANYS[kind]()])
    _, got = read_reply(data, items)
    _, want = read_reply(reply("in_any", version, little,
                               expected([ANYS[kind]()], items, proxy_host)), items)
    assert got == want and data != original


def test_the_bytes_are_spliced_when_they_may_be_and_encoded_again_otherwise(impl):
    """Spliced (no body writer given back): references as long as before; a reference
    nothing is read after; changes of a multiple of 8.  Encoded again: a change that
    moves what follows off its alignment, or a valuetype read (its indirections)."""
    def how(op, proxy_host, version=(1, 2)):
        raw = reply(op, version, True, results(op))
        msg, _ = decode_message(raw)
        rewriter = ReferenceRewriter({SERVER_ADDRESS: (proxy_host, 9999)})
        moved = moved_body(msg, raw, item_types(op), rewriter.rewrite_encoded)
        return "spliced" if moved[2] is None else "encoded"

    def shift(proxy_host):
        w_old = reply("only", (1, 2), True, results("only"))
        w_new = reply("only", (1, 2), True, expected(results("only"), item_types("only"),
                                                     proxy_host))
        return len(w_new) - len(w_old)
    same, by_8, by_4 = "10.0.0.9", "10.0.0.9.example", "127.0.0.100"
    assert (shift(same), shift(by_8), shift(by_4)) == (0, 8, 4)
    for op in OPS:
        assert how(op, same) == "spliced", op
        assert how(op, by_8) == ("encoded" if op == "twice" else "spliced"), op
    assert how("only", by_4) == "spliced"                  # nothing read after it
    for version in VERSIONS:
        assert how("then", by_4, version) == "encoded"
        assert how("many", by_4, version) == "encoded"
        assert how("twice", by_4, version) == "encoded"


@pytest.mark.parametrize("proxy_host", PROXY_HOSTS)
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("little", [False, True])
def test_forwards_are_moved_in_replies_and_locate_replies(version, little, proxy_host):
    core, conn, rows = make_core(proxy_host)
    target = ior(SERVER_ADDRESS, b"forwarded")
    want = expected([target], [tc.Object], proxy_host)[0]
    conn.data(CLIENT, request("only", version, little, rid=4), 1)
    status = ReplyStatus.LOCATION_FORWARD_PERM if version >= (1, 2) else \
        ReplyStatus.LOCATION_FORWARD
    data = received(conn.data(SERVER, encode_message(Reply(
        version=version, little=little, request_id=4, reply_status=status, forward=target)),
        2))
    msg, warnings = decode_message(data)
    assert msg.forward == want and not warnings and msg.reply_status == status
    assert rows[-1]["reply_status"] == status.name
    located = [encode_message(LocateReply(version=version, little=little, request_id=5,
                                          locate_status=LocateStatus.OBJECT_FORWARD,
                                          forward=target))]
    if version >= (1, 2):
        # the padded layout some ORBs send (the body aligned to 8): kept as it came
        padded = bytearray(located[0][:20] + bytes(4) + located[0][20:])
        padded[8:12] = (len(padded) - HEADER_SIZE).to_bytes(4, "little" if little else "big")
        located.append(bytes(padded))
    for rid, raw in enumerate(located, 5):
        conn.data(CLIENT, encode_message(LocateRequest(version=version, little=little,
                                                       request_id=rid,
                                                       target=KeyAddr(b"Refs"))), 3)
        raw = raw[:HEADER_SIZE] + rid.to_bytes(4, "little" if little else "big") + \
            raw[HEADER_SIZE + 4:]
        msg, _ = decode_message(received(conn.data(SERVER, raw, 4)))
        p = decode_profile(msg.forward.profiles[0])
        assert msg.forward == want and (p.host, p.port) == (proxy_host, 9999)


@pytest.mark.parametrize("version", [(1, 1), (1, 2)])
@pytest.mark.parametrize("proxy_host", ["10.0.0.9", "127.0.0.100"])
def test_a_fragmented_reply_is_moved_and_cut_again(impl, version, proxy_host):
    core, conn, _ = make_core(proxy_host)
    op, items = "then", item_types("then")
    tail = "tail " * 40                     # (long enough to be cut in several)

    def values(moved=False):
        v = results(op)
        v[2] = tail
        return expected(v, items, proxy_host) if moved else v
    conn.data(CLIENT, request(op, version, False), 1)
    whole = reply(op, version, False, values())
    msg, _ = decode_message(whole)

    def write_body(w):
        for t, v in zip(items, values()):
            write_value(w, t, v)
    parts = encode_fragments(msg, whole, 64, write_body=write_body)
    assert len(parts) > 2
    (send,) = conn.data(SERVER, b"".join(parts), 2)
    assert len(send.pieces) > 1             # cut again
    r = joined(send.pieces).body_reader()
    got = [to_json(read_value(r, t)) for t in items]
    _, want = read_reply(reply(op, version, False, values(moved=True)), items)
    assert got == want


def joined(pieces):
    """The message the client reads from ``pieces`` (a message and its Fragments)."""
    from pycdr.giop.connection import GiopConnection, Role
    from pycdr.giop.events import MessageReceived
    conn = GiopConnection(Role.CLIENT, version=(1, 2), check_request_ids=False)
    for piece in pieces:
        conn.receive_data(piece)
    while True:
        event = conn.next_event()
        if isinstance(event, MessageReceived):
            return event.message
        assert event is not None and not hasattr(event, "error"), event
