"""omniORBpy client for conformance/echo.idl, run as a subprocess by tests/test_orb_omni.py.

    python orb_omni_echo_client.py IOR [--octets N] [-- ORB options...]

Calls every echo operation with the values of tests/orb_echo_values.py (the same values, in
omniORBpy's mapping, in the same order; wchar/wstring left out: the salome omniORBpy aborts on
them), compares each result with what it sent and prints one JSON line per call:
    {"op": "echo_long", "ok": true}
    {"op": "echo_long", "ok": false, "sent": "...", "got": "..."}
    {"op": "echo_long", "exception": "IDL:omg.org/CORBA/MARSHAL:1.0", "minor": 0}

With --octets N it makes one call only: echo_octets with N bytes.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))

from omniORB import CORBA  # noqa: E402

import omni_idl  # noqa: E402

IDL = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "conformance",
                   "echo.idl")


def same(a, b):
    """Deep equality for omniORBpy values (its structs and unions have no __eq__)."""
    if isinstance(a, CORBA.Object) or isinstance(b, CORBA.Object):
        return a is not None and b is not None and a._is_equivalent(b)
    if isinstance(a, CORBA.Any):
        return isinstance(b, CORBA.Any) and a.typecode().equivalent(b.typecode()) and \
            same(a.value(), b.value())
    if isinstance(a, CORBA.TypeCode):
        return a.equivalent(b)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and \
            all(same(x, y) for x, y in zip(a, b))
    if hasattr(a, "__dict__") and not isinstance(a, type):
        return type(a) is type(b) and a.__dict__.keys() == b.__dict__.keys() and \
            all(same(a.__dict__[k], b.__dict__[k]) for k in a.__dict__)
    return a == b and type(a) is type(b) or (isinstance(a, (int, float)) and a == b)


def cases(E, target):
    Mixed, Padding = E.Mixed, E.Padding

    def mixed(i):
        return Mixed(-2 - i, 65535 - i, -2**31 + i, 2**32 - 1 - i, -2**63 + i, 2**64 - 1 - i,
                     1.5 + i, -2.25e100, bool(i % 2), "é", 255 - i, "héllo" * (i + 1), E.blue)
    return [
        ("echo_short", (-32768,)), ("echo_ushort", (65535,)),
        ("echo_long", (-2**31,)), ("echo_ulong", (2**32 - 1,)),
        ("echo_longlong", (-2**63,)), ("echo_ulonglong", (2**64 - 1,)),
        ("echo_float", (-0.15625,)), ("echo_double", (3.141592653589793,)),
        ("echo_boolean", (True,)), ("echo_char", ("é",)), ("echo_octet", (255,)),
        ("echo_string", ("héllo wörld",)), ("echo_string", ("",)),
        ("echo_short8", ("12345678",)),
        ("echo_any", (CORBA.Any(CORBA.TC_long, 42),)),
        ("echo_any", (CORBA.Any(CORBA.TC_string, "in an any"),)),
        ("echo_any", (CORBA.Any(CORBA._tc_TypeCode, E._tc_Padding),)),
        ("echo_any", (CORBA.Any(E._tc_Padding, Padding("x", -7)),)),
        ("echo_fixed", (CORBA.fixed("-1234567.891"),)),
        ("echo_color", (E.green,)), ("echo_colors", ([E.blue, E.red],)),
        ("echo_padding", (Padding("a", 2**62),)),
        ("echo_reverse", (E.Reverse(-5, "z"),)),
        ("echo_mixed", (mixed(0),)),
        ("echo_choice", (E.Choice(number=7),)), ("echo_choice", (E.Choice(3, "three"),)),
        ("echo_choice", (E.Choice(99, 0.5),)),
        ("echo_flag", (E.Flag(True, 1),)), ("echo_flag", (E.Flag(False, "no"),)),
        ("echo_bycolor", (E.ByColor(E.green, Padding("g", 1)),)),
        ("echo_longs", ([1, -2, 2**31 - 1],)), ("echo_longs", ([],)),
        ("echo_octets", (bytes(range(256)),)),
        ("echo_strings", (["a", "", "ccc"],)),
        ("echo_records", ([mixed(1), mixed(2)],)),
        ("echo_matrix", ([[1, 2], [], [3]],)),
        ("echo_bounded", ([1, 2, 3, 4],)),
        ("echo_triple", ([7, 8, 9],)), ("echo_names", (["x", "y"],)),
        ("echo_grid", ([[Padding("a", 1), Padding("b", 2)],
                        [Padding("c", 3), Padding("d", 4)]],)),
        ("echo_node", (E.Node(1, [E.Node(2, []), E.Node(3, [E.Node(4, [])])]),)),
        ("echo_inout", (5, "inout")), ("echo_multi", (6, 2.5)),
        ("echo_object", (target,)),
    ]


def main():
    arguments, orb_args = sys.argv[1:], []
    if "--" in arguments:
        separator = arguments.index("--")
        arguments, orb_args = arguments[:separator], arguments[separator + 1:]
    orb = CORBA.ORB_init([sys.argv[0]] + orb_args, CORBA.ORB_ID)
    omni_idl.import_idl(IDL)
    stub_class, _skeleton = omni_idl.interface_classes("EchoAll::Echo")
    E = sys.modules["EchoAll"]
    target = orb.string_to_object(arguments[0])._narrow(stub_class)
    calls = cases(E, target)
    if "--octets" in arguments:
        size = int(arguments[arguments.index("--octets") + 1])
        calls = [("echo_octets", (bytes(range(256)) * (size // 256),))]
    for op, args in calls:
        try:
            got = getattr(target, op)(*args)
        except CORBA.SystemException as error:
            print(json.dumps({"op": op, "exception": error._NP_RepositoryId,
                              "minor": error.minor}), flush=True)
            continue
        expected = args[0] if len(args) == 1 else tuple(args)
        entry = {"op": op, "ok": bool(same(expected, got))}
        if not entry["ok"]:
            entry.update(sent=repr(expected), got=repr(got))
        print(json.dumps(entry), flush=True)
    if "--octets" in arguments:
        orb.destroy()
        return
    target.note("oneway from omniORBpy")
    print(json.dumps({"op": "note", "ok": True}), flush=True)
    orb.destroy()


if __name__ == "__main__":
    main()
