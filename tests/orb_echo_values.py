"""Values for every operation of conformance/echo.idl in pycdr's Python mapping,
shared by the reference ORB's tests. tests/orb_omni_echo_client.py sends the same values
in omniORBpy's mapping, in the same order (keep the two lists in step)."""

import functools
import os
from decimal import Decimal

from pycdr import idl
from pycdr.codec import tc
from pycdr.codec.values import Any

# One Echo IDL for the ORB's interop tests and the conformance suite.
from pycdr.conformance.echo import ECHO_IDL as ECHO_ALL_IDL  # noqa: E402
ECHO_INTERFACE = "EchoAll::Echo"
ECHO_REPO_ID = "IDL:EchoAll/Echo:1.0"
# What the salome-omniorb omniORBpy cannot take (it aborts on wchar data).
WIDE_OPERATIONS = ("echo_wchar", "echo_wstring")


@functools.lru_cache(maxsize=None)
def load_echo_module():
    """Loaded once per process: each load registers new classes for the repository ids, and
    decoded values must be of the classes the tests compare with."""
    return idl.load(ECHO_ALL_IDL)


def echo_cases(m, object_ior=None):
    """(operation, in/inout arguments) pairs; an echo servant returns them unchanged
    (the single argument, or the tuple of them)."""
    Color = m["EchoAll::Color"]
    Padding, Reverse, Mixed = m["EchoAll::Padding"], m["EchoAll::Reverse"], m["EchoAll::Mixed"]
    Choice, Flag, ByColor = m["EchoAll::Choice"], m["EchoAll::Flag"], m["EchoAll::ByColor"]
    Node = m["EchoAll::Node"]

    def mixed(i):
        return Mixed(s=-2 - i, us=65535 - i, l=-2**31 + i, ul=2**32 - 1 - i, ll=-2**63 + i,
                     ull=2**64 - 1 - i, f=1.5 + i, d=-2.25e100, b=bool(i % 2), c="é",
                     o=255 - i, str="héllo" * (i + 1), hue=Color.blue)
    cases = [
        ("echo_short", (-32768,)), ("echo_ushort", (65535,)),
        ("echo_long", (-2**31,)), ("echo_ulong", (2**32 - 1,)),
        ("echo_longlong", (-2**63,)), ("echo_ulonglong", (2**64 - 1,)),
        ("echo_float", (-0.15625,)), ("echo_double", (3.141592653589793,)),
        ("echo_boolean", (True,)), ("echo_char", ("é",)), ("echo_octet", (255,)),
        ("echo_string", ("héllo wörld",)), ("echo_string", ("",)),
        ("echo_short8", ("12345678",)),
        ("echo_wchar", ("\u20ac",)), ("echo_wstring", ("h\u00e9 \u20ac \U0001f600",)),
        ("echo_any", (Any(tc.long, 42),)), ("echo_any", (Any(tc.string, "in an any"),)),
        ("echo_any", (Any(tc.TypeCode_, m.types["EchoAll::Padding"]),)),
        ("echo_any", (Any(m.types["EchoAll::Padding"], Padding(c1="x", ll=-7)),)),
        ("echo_fixed", (Decimal("-1234567.891"),)),
        ("echo_color", (Color.green,)), ("echo_colors", ([Color.blue, Color.red],)),
        ("echo_padding", (Padding(c1="a", ll=2**62),)),
        ("echo_reverse", (Reverse(ll=-5, c1="z"),)),
        ("echo_mixed", (mixed(0),)),
        ("echo_choice", (Choice(number=7),)), ("echo_choice", (Choice(3, "three"),)),
        ("echo_choice", (Choice(99, 0.5),)),
        ("echo_flag", (Flag(True, 1),)), ("echo_flag", (Flag(False, "no"),)),
        ("echo_bycolor", (ByColor(Color.green, Padding(c1="g", ll=1)),)),
        ("echo_longs", ([1, -2, 2**31 - 1],)), ("echo_longs", ([],)),
        ("echo_octets", (bytes(range(256)),)),
        ("echo_strings", (["a", "", "ccc"],)),
        ("echo_records", ([mixed(1), mixed(2)],)),
        ("echo_matrix", ([[1, 2], [], [3]],)),
        ("echo_bounded", ([1, 2, 3, 4],)),
        ("echo_triple", ([7, 8, 9],)), ("echo_names", (["x", "y"],)),
        ("echo_grid", ([[Padding(c1="a", ll=1), Padding(c1="b", ll=2)],
                        [Padding(c1="c", ll=3), Padding(c1="d", ll=4)]],)),
        ("echo_node", (Node(1, [Node(2, []), Node(3, [Node(4, [])])]),)),
        ("echo_inout", (5, "inout")), ("echo_multi", (6, 2.5)),
    ]
    if object_ior is not None:
        cases.append(("echo_object", (object_ior,)))
    return cases


def expected_result(args):
    return args[0] if len(args) == 1 else tuple(args)
