"""pycdr.codec.references: every object reference inside a value, found by its type."""

from pycdr.addressing.iiop import IIOPProfile, make_ior
from pycdr.codec import tc
from pycdr.codec.references import map_references, may_hold_reference
from pycdr.codec.typecode import TypeCode
from pycdr.codec.values import Any, class_for
from pycdr.idl import load_string


IDL = """
module Refs {
  interface Target { void ping(); };
  struct Holder { long n; Target t; string s; };
  typedef sequence<Target> Targets;
  union Choice switch (long) { case 1: Target t; case 2: long n; default: string s; };
  valuetype Node { public Target t; public Node next; };
  struct Plain { long a; sequence<octet> b; };
};
"""


def ior(host, port, key=b"k"):
    return make_ior("IDL:Refs/Target:1.0", [IIOPProfile((1, 2), host, port, key)])


def types():
    module = load_string(IDL, register=False)
    return {name: module.types[f"Refs::{name}"]
            for name in ("Holder", "Targets", "Choice", "Node", "Plain")}, module


def rewrite_to(port):
    seen = []

    def fn(reference, path):
        seen.append((path, reference.profiles and reference.type_id))
        return ior("10.0.0.9", port)
    return fn, seen


def test_references_at_every_depth_are_replaced_and_named_by_path():
    t, module = types()
    holder_cls = class_for(t["Holder"])
    value = holder_cls(n=1, t=ior("a", 1), s="x")
    fn, seen = rewrite_to(99)
    out = map_references(t["Holder"], value, fn, "args.h")
    assert out is value and value.t == ior("10.0.0.9", 99)
    assert seen == [("args.h.t", "IDL:Refs/Target:1.0")]

    items = [ior("a", 1), None, ior("b", 2)]
    fn, seen = rewrite_to(7)
    out = map_references(t["Targets"], items, fn, "result")
    assert out == [ior("10.0.0.9", 7), None, ior("10.0.0.9", 7)]
    assert [p for p, _ in seen] == ["result[0]", "result[2]"]        # nil is not handed over

    choice = class_for(t["Choice"])(1, ior("a", 1))
    fn, seen = rewrite_to(5)
    map_references(t["Choice"], choice, fn, "u")
    assert choice._v == ior("10.0.0.9", 5) and [p for p, _ in seen] == ["u.t"]
    other = class_for(t["Choice"])(2, 7)
    fn, seen = rewrite_to(5)
    map_references(t["Choice"], other, fn, "u")
    assert other._v == 7 and seen == []


def test_any_is_walked_by_the_typecode_it_carries():
    t, _ = types()
    holder = class_for(t["Holder"])(n=1, t=ior("a", 1), s="x")
    value = Any(t["Holder"], holder)
    fn, seen = rewrite_to(3)
    map_references(tc.any, value, fn, "a")
    assert holder.t == ior("10.0.0.9", 3) and [p for p, _ in seen] == ["a.t"]
    top = Any(tc.Object, ior("a", 1))
    fn, seen = rewrite_to(4)
    map_references(tc.any, top, fn, "b")
    assert top.value == ior("10.0.0.9", 4) and [p for p, _ in seen] == ["b"]


def test_a_cyclic_valuetype_is_walked_once():
    t, _ = types()
    node_cls = class_for(t["Node"])
    first = node_cls(t=ior("a", 1), next=None)
    second = node_cls(t=ior("b", 2), next=first)
    first.next = second                                      # a cycle
    fn, seen = rewrite_to(8)
    map_references(t["Node"], first, fn, "v")
    assert first.t == second.t == ior("10.0.0.9", 8)
    assert [p for p, _ in seen] == ["v.t", "v.next.t"]


def test_types_that_hold_no_reference_are_not_walked():
    t, _ = types()
    assert not may_hold_reference(t["Plain"]) and may_hold_reference(t["Holder"])
    assert may_hold_reference(tc.any)

    def fail(reference, path):
        raise AssertionError(path)
    plain = class_for(t["Plain"])(a=1, b=b"xy")
    assert map_references(t["Plain"], plain, fail) is plain
    assert map_references(tc.string, "s", fail) == "s"


def test_top_level_reference_is_returned_replaced():
    fn, seen = rewrite_to(6)
    assert map_references(tc.Object, ior("a", 1), fn, "r") == ior("10.0.0.9", 6)
    assert map_references(tc.Object, None, fn, "r") is None
    assert isinstance(tc.Object, TypeCode)
