"""Names from the wire that Python folds (issue 25, point 3): member, branch and
enumerator names of TypeCodes a peer sends are mapped to attribute names by one
rule (pycdr.codec.values.py_name/field_names), on the C and the pure path alike, and no
name reaches compiled code unless its NFKC form was checked.

Before: members ``a`` and ``ª`` (U+00AA, NFKC ``a``) made the generated class raise
SyntaxError ("duplicate argument 'a'"), ``µ`` (U+00B5, NFKC U+03BC) AttributeError;
`pycdr pcap --idl` stopped with a traceback, the server dropped the connection."""

import asyncio
import json

import pytest

from pycdr.codec import marshal, tc
from pycdr.giop.messages import KeyAddr, Reply, Request, encode_message
from pycdr.codec.values import Any, field_names, py_name

# All ISO-8859-1 (the default char code set, which TypeCode names travel in).
HOSTILE = ["a", "\u00aa", "\u00b5", "class", "x\u00b2", "x2", "_x", "", "None", "\u00ba"]
ATTRS = ("a", "_m1", "\u03bc", "_class", "x2", "_m5", "_m6", "_m7", "_None", "o")


def test_the_rule():
    assert field_names(HOSTILE) == ATTRS
    assert py_name("\uff43\uff4c\uff41\uff53\uff53") == "_class"     # fullwidth: a keyword
    assert field_names(["class", "\uff43\uff4c\uff41\uff53\uff53"]) == ("_class", "_m1")
    assert py_name("1a", 4) == "_m4" and py_name("a b", 2) == "_m2"
    # Every attribute is what Python's parser makes of it, and a valid identifier.
    for attr in ATTRS:
        assert attr.isidentifier()
        assert compile(f"obj.{attr}", "<t>", "eval").co_names == ("obj", attr)


def _struct(kind, types):
    members = list(zip(HOSTILE, types))
    if kind == "exception":
        return tc.exception("IDL:Hostile/E:1.0", "E", members)
    return tc.struct("IDL:Hostile/S:1.0", "S", members)


CASES = {
    # fixed-size: the flat codec compiles its converter from the attribute names
    "flat": lambda: (_struct("struct", [tc.long] * len(HOSTILE)), None),
    "strings": lambda: (_struct("struct", [tc.string] * len(HOSTILE)), str),
    "sequence": lambda: (tc.sequence(_struct("struct", [tc.long] * len(HOSTILE))), "seq"),
    "exception": lambda: (_struct("exception", [tc.short] * len(HOSTILE)), None),
}


def _value(kind):
    t, how = CASES[kind]()
    one = {name: (str(i) if how is str else i) for i, name in enumerate(HOSTILE)}
    return t, ([one, one, one] if how == "seq" else one)


def _decode_both(data):
    """The value decoded on the running path and, when C is built, on the pure path."""
    got = [marshal.decode(tc.any, data)]
    if marshal.IMPLEMENTATION == "c":
        from pycdr.codec import _cmarshal
        _cmarshal.enabled = False
        try:
            got.append(marshal.decode(tc.any, data))
        finally:
            _cmarshal.enabled = True
    return got


@pytest.mark.parametrize("kind", sorted(CASES))
def test_members_python_folds_decode_on_both_paths(kind):
    t, value = _value(kind)
    data = marshal.encode(tc.any, Any(t, value))
    for got in _decode_both(data):      # the TypeCode comes off the wire: a class of its own
        items = got.value if isinstance(got.value, list) else [got.value]
        for v in items:
            assert v._fields == ATTRS
            for i, attr in enumerate(ATTRS):
                expected = str(i) if kind == "strings" else i
                assert getattr(v, attr) == expected, attr
            assert v.µ is v.μ is getattr(v, ATTRS[2])   # MICRO SIGN in source reads it too
        # the decoded value encodes to the same bytes (its own attributes)
        assert marshal.encode(tc.any, got) == data


def test_union_and_enum_names_python_folds():
    u = tc.union("IDL:Hostile/U:1.0", "U", tc.long,
                 [(i, name, tc.long) for i, name in enumerate(HOSTILE)])
    e = tc.enum("IDL:Hostile/En:1.0", "En", HOSTILE)
    both = tc.struct("IDL:Hostile/UE:1.0", "UE", [("u", u), ("e", e)])
    data = marshal.encode(tc.any, Any(both, {"u": (1, 41), "e": "\u00b5"}))
    for got in _decode_both(data):
        v = got.value
        assert v.u._m1 == 41 and v.u._d == 1
        with pytest.raises(AttributeError):
            v.u.a                              # the discriminator selects ª, not a
        En = v.e._parent
        assert v.e.name == "\u00b5" and v.e is En.µ
        assert En.a is En._items[0] and En._class.name == "class" and En.o.name == "\u00ba"
        assert not hasattr(En, "_m1")          # ª folds onto a: reached by _items or name
        assert En("\u00aa") is En._items[1]
        assert marshal.encode(tc.any, got) == data


def test_a_dict_keyed_by_idl_names_is_read_by_them():
    # x² folds to x2, which is also the next member's IDL name.
    t = _struct("struct", [tc.long] * len(HOSTILE))
    by_idl = {name: i for i, name in enumerate(HOSTILE)}
    by_attr = {attr: i for i, attr in enumerate(ATTRS)}
    assert marshal.encode(t, by_idl) == marshal.encode(t, by_attr) == \
        marshal.encode(t, marshal.decode(t, marshal.encode(t, by_idl)))
    assert marshal.decode(t, marshal.encode(t, by_idl)).x2 == 4


# --- the server and `pycdr pcap --idl` --------------------------------------------------
def _hostile_any():
    t = _struct("struct", [tc.long] * len(HOSTILE))
    return Any(t, {name: i for i, name in enumerate(HOSTILE)})


def test_server_echoes_an_any_whose_typecode_python_folds():
    from orb_echo_values import ECHO_INTERFACE, load_echo_module
    from pycdr.orb import ORB, EchoServant, Server
    echo = load_echo_module().interfaces[ECHO_INTERFACE]

    async def main():
        server = Server()
        key = server.activate(EchoServant(echo), "Echo")
        await server.start()
        try:
            async with ORB(timeout=20) as orb:
                ref = await orb.string_to_object(server.corbaloc(key), echo)
                sent = _hostile_any()
                got = await ref.invoke("echo_any", sent)
                assert got.value._fields == ATTRS and got.value.µ == 2
                assert marshal.encode(tc.any, got) == marshal.encode(tc.any, sent)
                assert await ref.invoke("echo_any", sent) == got     # the connection is up
        finally:
            await server.stop()
    asyncio.run(asyncio.wait_for(main(), 60))


def test_pcap_idl_decodes_an_any_whose_typecode_python_folds(tmp_path):
    pytest.importorskip("scapy")
    from scapy.layers.inet import IP, TCP
    from scapy.utils import wrpcap
    from orb_echo_values import ECHO_ALL_IDL
    from pycdr.capture.giop import IdlBodyDecoder, decode_capture
    from pycdr import idl
    value = _hostile_any()

    def body(w):
        marshal.write_value(w, tc.any, value)
    request = encode_message(Request(request_id=1, target=KeyAddr(b"Echo"),
                                     operation="echo_any"), write_body=body)
    reply = encode_message(Reply(request_id=1), write_body=body)
    packets = [IP(src="127.0.0.1", dst="127.0.0.1") /
               TCP(sport=40000, dport=2809, flags="PA", seq=1) / request,
               IP(src="127.0.0.1", dst="127.0.0.1") /
               TCP(sport=2809, dport=40000, flags="PA", seq=1) / reply]
    path = tmp_path / "names.pcap"
    wrpcap(str(path), packets)
    decoder = IdlBodyDecoder([idl.load(ECHO_ALL_IDL, register=False)])
    entries = decode_capture(path, decode_body=decoder)
    assert [e["type"] for e in entries] == ["Request", "Reply"]
    for e in entries:
        values = dict(e["decoded"]["values"])
        assert "error" not in e["decoded"], e["decoded"]
        # The paths name the members as the TypeCode does.
        for i, name in enumerate(HOSTILE):
            assert values[next(p for p in values if p.endswith(f".value.{name}"))] == str(i)
    assert json.dumps(entries)
