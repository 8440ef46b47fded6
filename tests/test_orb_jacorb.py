"""The reference ORB with JacORB 3.9 over GIOP 1.0, 1.1 and 1.2, both ways, for every operation of
conformance/echo.idl, wchar and wstring included (1.1 and 1.2). JacORB serves and calls the
interface through the DSI/DII from the description pycdr writes (tests/peers/jacorb_interface.py),
so its TypeCodes come from pycdr's IDL front end. JacORB always marshals big-endian: these are the
big-endian interop tests.

What JacORB cannot take, and what it does otherwise:
- long double: JacORB has no long double (conformance/echo.idl has none; nothing is sent).
- char 'é': JacORB's IOR announces UTF-8 as its char code set, where a char is one octet, so a
  non-ASCII char cannot be sent to it or by it (pycdr refuses with BAD_PARAM, JacORB with MARSHAL):
  chars are ASCII here; strings carry non-ASCII text.
- GIOP 1.0 has no code set negotiation; JacORB then writes char data as UTF-8 where the spec
  says ISO-8859-1 (checked below, byte for byte), and refuses wchar data (MARSHAL).
- JacORB reads a union's default label as one octet (see peers/jacorb_interface.py): the
  description is little-endian so that EchoAll::Choice reaches it.
"""

import copy

import pytest

from orb_echo_values import (ECHO_INTERFACE, ECHO_REPO_ID, WIDE_OPERATIONS, echo_cases,
                             expected_result, load_echo_module)
from peers.jacorb import call_from_jacorb, start_jacorb_echo_server
from peers.process import corbaloc
from pycdr import codesets
from pycdr.giop.sysexc import MARSHAL
from pycdr.codec.ior import ior_from_string
from pycdr.codec.marshal import encode
from pycdr.orb import DynamicServant
from pycdr.orb.servant import echo_handler
from pycdr.orb.sync import SyncORB

MODULE = load_echo_module()
ECHO = MODULE.interfaces[ECHO_INTERFACE]
VERSIONS = [(1, 0), (1, 1), (1, 2)]
VERSION_IDS = [f"giop{v[0]}.{v[1]}" for v in VERSIONS]
ATTRIBUTE_CALLS = [("_set_counter", (41,)), ("_get_counter", ())]


def ascii_char(value):
    """The value with its char members ASCII (see the module docstring)."""
    if isinstance(value, str) and len(value) == 1:
        return "e" if value == "\u00e9" else value
    if isinstance(value, MODULE["EchoAll::Mixed"]):
        value = copy.copy(value)
        value.c = ascii_char(value.c)
        return value
    if isinstance(value, list):
        return [ascii_char(item) for item in value]
    return value


def jacorb_cases(version, object_ior):
    """echo_cases for JacORB: ASCII chars; no wchar/wstring at GIOP 1.0."""
    cases = []
    for op, args in echo_cases(MODULE, object_ior):
        if version == (1, 0) and op in WIDE_OPERATIONS:
            continue
        if op in ("echo_char", "echo_mixed", "echo_records"):
            args = tuple(ascii_char(arg) for arg in args)
        cases.append((op, args))
    return cases


@pytest.fixture(scope="module")
def jacorb_server():
    """One JacORB server for the module (a JVM start is about a second), serving EchoAll::Echo;
    its IOR has an IIOP 1.2 profile, and each test picks the GIOP version it sends."""
    with start_jacorb_echo_server(interface=ECHO) as peer:
        yield peer


@pytest.mark.parametrize("version", VERSIONS, ids=VERSION_IDS)
def test_pycdr_client_to_jacorb_server(version, jacorb_server):
    cases = jacorb_cases(version, ior_from_string(jacorb_server.ior))
    with SyncORB() as orb:
        for little in (False, True):        # JacORB answers big-endian either way
            echo = orb.string_to_object(jacorb_server.ior, ECHO, version=version, little=little)
            assert echo.giop_version() == version
            for op, args in cases:
                assert echo.invoke(op, *args) == expected_result(args), (op, little)
            echo.note("oneway to JacORB")
            echo._set_counter(7 + little)
            assert echo._get_counter() == 7 + little
            assert echo.is_a(ECHO_REPO_ID) and not echo.is_a("IDL:EchoAll/Other:1.0")
            assert not echo.non_existent()
            if version == (1, 0):
                with pytest.raises(Exception):   # no wchar in GIOP 1.0: refused before sending
                    echo.echo_wchar("x")
        # The same object by corbaloc (no code set component) at this version.
        url = corbaloc(jacorb_server.host, jacorb_server.port, jacorb_server.object_key, giop=version)
        assert orb.string_to_object(url, ECHO).echo_string("hello") == "hello"


def char_data_as(op_name, args, tcs_c):
    """The CDR of an operation's in/inout arguments with char data in code set `tcs_c`."""
    params = ECHO.operation(op_name).in_params
    return b"|".join(encode(p.type, value, tcs_c=tcs_c) for p, value in zip(params, args))


@pytest.mark.parametrize("version", VERSIONS, ids=VERSION_IDS)
def test_jacorb_client_to_pycdr_server(version):
    # What the reference ORB received checks JacORB's encoding; the results check the way back.
    received = []
    echo = echo_handler(ECHO)

    def record(name, args):
        received.append((name, tuple(args)))
        return echo(name, args)

    with SyncORB() as orb:
        server = orb.serve(DynamicServant(ECHO, record), "Echo")
        url = corbaloc("127.0.0.1", server.port, b"Echo", giop=version)
        own_ior = server.server.ior(server.key, version=version)
        cases = jacorb_cases(version, own_ior)
        calls = cases + [("note", ("oneway from JacORB",))] + ATTRIBUTE_CALLS
        results = call_from_jacorb(url, ECHO, calls)
        wrong = [(op, r) for (op, args), r in zip(cases, results)
                 if r.get("result", "no result") != expected_result(args)]
        assert not wrong, wrong
        assert results[len(cases)] == {"op": "note", "result": None}
        assert results[len(cases) + 1:] == [{"op": "_set_counter", "result": None},
                                            {"op": "_get_counter", "result": 41}]

        received = [entry for entry in received if entry[0] != "_is_a"]
        assert [op for op, _ in received] == [op for op, _ in calls]
        for (op, sent), (_, got) in zip(calls, received):
            if version == (1, 0):
                # JacORB writes char data as UTF-8 without negotiation; read as ISO-8859-1
                # (the spec's default), the same bytes: strings with non-ASCII text differ.
                assert char_data_as(op, got, codesets.ISO_8859_1) == \
                    char_data_as(op, sent, codesets.UTF_8), op
            else:
                assert got == sent, op

        if version == (1, 0):
            # JacORB refuses to send wchar over GIOP 1.0 (MARSHAL) rather than reaching us.
            results = call_from_jacorb(url, ECHO, [("echo_wchar", ("x",))])
            assert results[0]["exception"] == MARSHAL.repo_id


def test_jacorb_client_receives_user_exception():
    """echo_raise raises EchoAll::Oops from the reference ORB; the JacORB DII client gets it
    as the exception the description lists, with its members."""
    Oops = MODULE["EchoAll::Oops"]

    def raise_oops(name, args):
        if name == "echo_raise":
            raise Oops(code=args[0], why="r\u00e9fus\u00e9")
        return echo_handler(ECHO)(name, args)

    with SyncORB() as orb:
        server = orb.serve(DynamicServant(ECHO, raise_oops), "Echo")
        (result,) = call_from_jacorb(server.server.ior_string(server.key), ECHO,
                                     [("echo_raise", (-3,))])
    assert result["op"] == "echo_raise"
    assert result["user_exception"] == Oops(code=-3, why="r\u00e9fus\u00e9")
