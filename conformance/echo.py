"""The conformance Echo interface (echo.idl, next to this file) and the values
the echo cases send: every IDL type, the padding worst and best cases, wide
characters with and without surrogates, empty and long sequences, TypeCodes
with indirections inside an any."""

from __future__ import annotations

import os
from decimal import Decimal

from pycdr import idl
from pycdr.codec import tc
from pycdr.codec.values import Any

ECHO_IDL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "echo.idl")
ECHO_INTERFACE = "EchoAll::Echo"
ECHO_REPO_ID = "IDL:EchoAll/Echo:1.0"
# Operations with wide characters (refused in GIOP 1.0; the salome omniORBpy
# aborts on them, so its servers are not sent them).
WIDE_OPERATIONS = ("echo_wchar", "echo_wstring")


def load_echo_module():
    return idl.load(ECHO_IDL)


def echo_values(m) -> list:
    """(operation, arguments, note) for the echo cases; an echo servant returns
    its single argument."""
    Color = m["EchoAll::Color"]
    Padding, Reverse, Mixed = m["EchoAll::Padding"], m["EchoAll::Reverse"], m["EchoAll::Mixed"]
    Choice, Flag, ByColor = m["EchoAll::Choice"], m["EchoAll::Flag"], m["EchoAll::ByColor"]
    Node = m["EchoAll::Node"]
    mixed = Mixed(s=-2, us=65535, l=-2**31, ul=2**32 - 1, ll=-2**63, ull=2**64 - 1, f=1.5,
                  d=-2.25e100, b=True, c="\xe9", o=255, str="h\xe9llo", hue=Color.blue)
    node = Node(1, [Node(2, []), Node(3, [Node(4, [])])])
    return [
        ("echo_short", (-32768,), ""), ("echo_ushort", (65535,), ""),
        ("echo_long", (-2**31,), ""), ("echo_ulong", (2**32 - 1,), ""),
        ("echo_longlong", (-2**63,), ""), ("echo_ulonglong", (2**64 - 1,), ""),
        ("echo_float", (-0.15625,), ""), ("echo_double", (3.141592653589793,), ""),
        ("echo_boolean", (True,), ""), ("echo_char", ("\xe9",), ""), ("echo_octet", (255,), ""),
        ("echo_string", ("h\xe9llo w\xf6rld",), ""), ("echo_string", ("",), ".empty"),
        ("echo_short8", ("12345678",), ".at-bound"),
        ("echo_wchar", ("\u20ac",), ""),
        ("echo_wstring", ("h\xe9 \u20ac",), ""),
        ("echo_wstring", ("\U0001f600 surrogates",), ".surrogate-pair"),
        ("echo_wstring", ("",), ".empty"),
        ("echo_any", (Any(tc.long, 42),), ".long"),
        ("echo_any", (Any(m.types["EchoAll::Node"], node),), ".recursive-typecode"),
        ("echo_any", (Any(tc.TypeCode_, m.types["EchoAll::Node"]),), ".typecode-indirection"),
        ("echo_fixed", (Decimal("-1234567.891"),), ""),
        ("echo_color", (Color.green,), ""), ("echo_colors", ([Color.blue, Color.red],), ""),
        ("echo_padding", (Padding(c1="a", ll=2**62),), ".worst-case"),
        ("echo_reverse", (Reverse(ll=-5, c1="z"),), ".best-case"),
        ("echo_mixed", (mixed,), ""),
        ("echo_choice", (Choice(number=7),), ".branch"),
        ("echo_choice", (Choice(99, 0.5),), ".default"),
        ("echo_flag", (Flag(False, "no"),), ""),
        ("echo_bycolor", (ByColor(Color.green, Padding(c1="g", ll=1)),), ""),
        ("echo_longs", ([],), ".empty"), ("echo_longs", (list(range(-5000, 5000)),), ".long"),
        ("echo_octets", (bytes(range(256)) * 4096,), ".1mib"),
        ("echo_strings", (["a", "", "ccc"],), ""),
        ("echo_matrix", ([[1, 2], [], [3]],), ""),
        ("echo_bounded", ([1, 2, 3, 4],), ".at-bound"),
        ("echo_triple", ([7, 8, 9],), ""), ("echo_names", (["x", "y"],), ""),
        ("echo_grid", ([[Padding(c1="a", ll=1), Padding(c1="b", ll=2)],
                        [Padding(c1="c", ll=3), Padding(c1="d", ll=4)]],), ""),
        ("echo_node", (node,), ""),
    ]
