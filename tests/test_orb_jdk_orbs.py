"""The OpenJDK ORB (WildFly's com.sun.corba.se, 10.1.3.Final) and the GlassFish ORB
(com.sun.corba.ee, 5.0.0) with the reference ORB, both ways, over GIOP 1.2: their DII client
against `pycdr serve`, pycdr's client against their DSI echo server (the Java programs of
peers.java_orb, the ones JacORB runs). Each ORB runs in one server JVM a module, and its client
makes all its calls in one JVM.

What the two ORBs do otherwise, and why the tests expect it:
- Negative `fixed` values: both refuse them with MARSHAL ("Fixed of length 10 in buffer of
  length 11": read_fixed counts the minus sign as a digit), whoever wrote them. Positive values
  with all ten digits of EchoAll::Money pass. Their server is checked to refuse the negative
  one that way; their client cannot even read it from the encapsulation it is given (the same
  read_fixed), so it is not sent from there.
- Their IORs announce ISO-8859-1 for char data, so 'é' is a char they take (unlike JacORB's UTF-8).
- A corbaloc URL carries no code sets; these clients then refuse wchar/wstring (INV_OBJREF). The
  client tests use `pycdr serve --forward-corbaloc`, whose corbaloc key forwards to the full IOR.
"""

import signal
from decimal import Decimal

import pytest

from orb_echo_values import (ECHO_INTERFACE, ECHO_REPO_ID, echo_cases,
                             expected_result, load_echo_module)
from peers.fixtures import jdk_orb, jdk_orb_echo_server  # noqa: F401 (pytest fixtures)
from peers.java_orb import call_from_java_orb
from pycdr.giop.sysexc import MARSHAL, UNKNOWN, CompletionStatus
from pycdr.codec.ior import ior_from_string
from pycdr.orb.sync import SyncORB
from pycdr_serve import serving_echo

MODULE = load_echo_module()
ECHO = MODULE.interfaces[ECHO_INTERFACE]
NEGATIVE_FIXED = ("echo_fixed", (Decimal("-1234567.891"),))
POSITIVE_FIXED = ("echo_fixed", (Decimal("1234567.891"),))


def jdk_cases(object_ior):
    """echo_cases without the negative fixed (see the module docstring), with a positive one."""
    cases = [case for case in echo_cases(MODULE, object_ior) if case != NEGATIVE_FIXED]
    assert len(cases) == len(echo_cases(MODULE, object_ior)) - 1
    return cases + [POSITIVE_FIXED]


@pytest.fixture(scope="module")
def served():
    """`pycdr serve` of EchoAll::Echo with --forward-corbaloc: (IOR, corbaloc URL)."""
    with serving_echo("--forward-corbaloc") as (process, ior, url):
        yield ior, url
        process.send_signal(signal.SIGINT)
        assert process.wait(10) == 0


def _wrong_results(cases, results):
    return [(op, args, r) for (op, args), r in zip(cases, results)
            if r.get("result", "no result") != expected_result(args)]


def test_jdk_orb_client_to_pycdr_serve(jdk_orb, served):
    """Every echo operation from the ORB's DII client, through the corbaloc URL (forwarded to
    the IOR, code sets included), then a few by the IOR itself; the oneway and the attribute."""
    ior, url = served
    cases = jdk_cases(ior_from_string(ior))
    calls = cases + [("note", ("oneway from the JDK ORB",)),
                     ("_set_counter", (41,)), ("_get_counter", ())]
    results = call_from_java_orb(jdk_orb, url, ECHO, calls)
    assert [r["op"] for r in results] == [op for op, _ in calls]
    assert not _wrong_results(cases, results)
    assert results[len(cases):] == [
        {"op": "note", "result": None}, {"op": "_set_counter", "result": None},
        {"op": "_get_counter", "result": 41}]

    direct = [("echo_wstring", ("h\u00e9 \u20ac",)), ("echo_char", ("\u00e9",)),
              ("echo_multi", (6, 2.5))]
    assert not _wrong_results(direct, call_from_java_orb(jdk_orb, ior, ECHO, direct))


def _invoke(jdk_orb, echo, op, args):
    """echo.invoke, except that the GlassFish ORB's sporadic UNKNOWN (minor OMG 2,
    COMPLETED_MAYBE: an exception inside that ORB or its DSI servant, seen once in a
    clean-clone CI run and not reproduced since) gets one more try of the same request,
    which must then echo: a request of ours that was malformed would fail both times."""
    try:
        return echo.invoke(op, *args)
    except UNKNOWN as e:
        if jdk_orb.name != "GlassFish-ORB" or e.completed != CompletionStatus.COMPLETED_MAYBE:
            raise
        return echo.invoke(op, *args)


def test_pycdr_client_to_jdk_orb_server(jdk_orb, jdk_orb_echo_server):
    """Every echo operation from pycdr's client to the ORB's DSI server, both byte orders (the
    ORB answers big-endian either way); the negative fixed comes back as the ORB's MARSHAL."""
    cases = jdk_cases(ior_from_string(jdk_orb_echo_server.ior))
    with SyncORB() as orb:
        for little in (False, True):
            echo = orb.string_to_object(jdk_orb_echo_server.ior, ECHO, little=little)
            for op, args in cases:
                assert _invoke(jdk_orb, echo, op, args) == expected_result(args), (op, little)
            echo.note("oneway to the JDK ORB")
            echo._set_counter(7 + little)
            assert echo._get_counter() == 7 + little
            assert echo.is_a(ECHO_REPO_ID) and not echo.is_a("IDL:EchoAll/Other:1.0")
            with pytest.raises(MARSHAL):
                echo.invoke(NEGATIVE_FIXED[0], *NEGATIVE_FIXED[1])
