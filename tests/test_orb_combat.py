"""Combat 0.8.1 (the Tcl ORB) with the reference ORB, both ways, over GIOP 1.2: Combat's client
against `pycdr serve`, pycdr's client against Combat's echo server (peers.combat; the interface
reaches Combat in its interface-repository form, written by pycdr).

Defects of Combat itself (tests/peers/combat.py runs Combat to Combat the same way, with the same
results), expected here as such:
- `fixed`: Combat refuses any fixed value with MARSHAL, as client and as server.
- `unsigned long long`: Combat's client gives 2**64 - 1 as -1 (a Tcl integer read as signed);
  its server echoes it right.
- TypeCodes: Combat writes a struct's TypeCode without its name (names are optional in a
  TypeCode: the compact form), so a TypeCode echoed in an any comes back equivalent, not equal.
- A client that knows no interface (a corbaloc URL names no type; or no IDL at all) asks the
  object for `_interface` and the InterfaceDef for `describe_interface` (pycdr.orb.interface_def
  answers both) -- but Combat 0.8.1 calls a procedure it never defines on the way
  (GetObjFromHandle; peers/combat/echo_client.tcl defines it as the GetObjFromRef it means).
- By corbaloc Combat has no code sets for the object (none in a URL; with `--forward-corbaloc`
  it follows the forward but keeps none either) and refuses wchar/wstring with MARSHAL
  COMPLETED_NO before sending: the IOR carries them.
"""

import pytest

from orb_echo_values import (ECHO_INTERFACE, ECHO_REPO_ID, echo_cases, expected_result,
                             load_echo_module)
from peers.combat import call_from_combat
from peers.fixtures import combat_echo_server  # noqa: F401 (a pytest fixture)
from pycdr.giop.sysexc import MARSHAL
from pycdr.codec.ior import ior_from_string
from pycdr.orb.sync import SyncORB
from pycdr.codec.typecode import TCKind
from pycdr.codec.values import Any
from pycdr_serve import serving_echo

MODULE = load_echo_module()
ECHO = MODULE.interfaces[ECHO_INTERFACE]
# Calls in Combat's Tcl mapping, and the results pycdr's echo gives back as Combat prints them.
COMBAT_CALLS = [
    ("echo_long -2147483648", "-2147483648"), ("echo_double 2.5", "2.5"),
    ("echo_string h\u00e9llo", "h\u00e9llo"), ("echo_wstring {h\u00e9 \u20ac}", "h\u00e9 \u20ac"),
    ("echo_wchar \u20ac", "\u20ac"), ("echo_longs {1 -2 3}", "1 -2 3"),
    ("echo_padding {c1 a ll 5}", "c1 a ll 5"), ("echo_color green", "green"),
    ("echo_choice {1 7}", "1 7"), ("echo_flag {0 no}", "0 no"),
    ("counter 41", ""), ("counter", "41"), ("note {oneway from Combat}", ""),
]
COMBAT_FIXED = "echo_fixed 12.5"
COMBAT_ULONGLONG_MAX = "echo_ulonglong 18446744073709551615"


def test_combat_client_to_pycdr_serve():
    with serving_echo() as (process, ior, url):
        calls = [call for call, _ in COMBAT_CALLS] + [COMBAT_FIXED, COMBAT_ULONGLONG_MAX]
        results = call_from_combat(ior, ECHO, calls)
        assert results[:len(COMBAT_CALLS)] == [("ok", text) for _, text in COMBAT_CALLS]
        fixed, ulonglong_max = results[len(COMBAT_CALLS):]
        assert fixed[0] == "exception" and fixed[1].startswith(MARSHAL.repo_id), fixed
        assert ulonglong_max == ("ok", "-1")


# Calls that need the object's code sets (module docstring: none by corbaloc).
WIDE_CALLS = ("echo_wstring", "echo_wchar")


def test_combat_client_learns_the_interface_from_pycdr_serve():
    """Issue 27: Combat knowing no IDL asks `pycdr serve` for _interface, downloads the
    FullInterfaceDescription from the InterfaceDef, then calls by it -- right answers."""
    calls = [call for call, _ in COMBAT_CALLS]
    expected = [("ok", text) for _, text in COMBAT_CALLS]
    with serving_echo() as (process, ior, url):
        assert call_from_combat(ior, None, calls) == expected
        by_corbaloc = call_from_combat(url, None, calls)
    for (call, _), want, got in zip(COMBAT_CALLS, expected, by_corbaloc):
        if call.split()[0] in WIDE_CALLS:
            assert got[0] == "exception" and got[1].startswith(MARSHAL.repo_id), got
        else:
            assert got == want, call


def _echoed(got, sent):
    """Whether Combat echoed `sent`: equal, or for a TypeCode in an any, equivalent (its names
    dropped, module docstring) but not equal."""
    if isinstance(sent, Any) and sent.tc.kind() == TCKind.tk_TypeCode:
        return got.value.equivalent(sent.value)
    return got == sent


def test_pycdr_client_to_combat_server(combat_echo_server):
    """Every echo operation but fixed, both byte orders; Combat answers little-endian."""
    fixed = [case for case in echo_cases(MODULE) if case[0] == "echo_fixed"]
    cases = [case for case in echo_cases(MODULE, ior_from_string(combat_echo_server.ior))
             if case[0] != "echo_fixed"]
    with SyncORB() as orb:
        for little in (False, True):
            echo = orb.string_to_object(combat_echo_server.ior, ECHO, little=little)
            wrong = [(op, args) for op, args in cases
                     if not _echoed(echo.invoke(op, *args), expected_result(args))]
            assert not wrong, (wrong, little)
            echo.note("oneway to Combat")
            echo._set_counter(7 + little)
            assert echo._get_counter() == 7 + little
            assert echo.is_a(ECHO_REPO_ID) and not echo.is_a("IDL:EchoAll/Other:1.0")
            for op, args in fixed:
                with pytest.raises(MARSHAL):
                    echo.invoke(op, *args)
