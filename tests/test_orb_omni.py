"""The reference ORB with omniORBpy (PyPI salome-omniorb), over GIOP 1.0, 1.1 and 1.2, for every
type of conformance/echo.idl but wchar/wstring (the salome omniORBpy aborts on them; JacORB
covers them in test_orb_jacorb.py): pycdr client -> omniORBpy server, omniORBpy client -> pycdr
server (values checked on both sides), and corbaname through omniNames."""

import json
import os
import sys

import pytest

from orb_echo_values import (ECHO_ALL_IDL, ECHO_INTERFACE, ECHO_REPO_ID, WIDE_OPERATIONS,
                             echo_cases, expected_result, load_echo_module)
from peers.fixtures import omni_names, start_peer  # noqa: F401 (pytest fixtures)
from peers.omni import giop_orb_args, start_omni_echo_server
from peers.process import run_client_process
from pycdr.codec.ior import ior_from_string
from pycdr.orb import DynamicServant, ServerLimits
from pycdr.orb.naming import BIND, make_name
from pycdr.orb.servant import echo_handler
from pycdr.orb.sync import SyncORB

MODULE = load_echo_module()
ECHO = MODULE.interfaces[ECHO_INTERFACE]
VERSIONS = [(1, 0), (1, 1), (1, 2)]
OMNI_CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "orb_omni_echo_client.py")


def narrow_cases(object_ior):
    return [(op, args) for op, args in echo_cases(MODULE, object_ior)
            if op not in WIDE_OPERATIONS]


# (GIOP version, fragment size): the small fragment size makes pycdr cut every longer request or
# reply into Fragments (GIOP 1.1: realigned per fragment; 1.0 has none), which omniORB must join.
RUNS = [(v, None) for v in VERSIONS] + [((1, 1), 96), ((1, 2), 96)]


def run_id(run):
    (major, minor), fragment_size = run
    return f"giop{major}.{minor}" + (f"-fragments{fragment_size}" if fragment_size else "")


@pytest.mark.parametrize("version,fragment_size", RUNS, ids=map(run_id, RUNS))
def test_pycdr_client_to_omniorbpy_server(version, fragment_size, start_peer):
    peer = start_peer(start_omni_echo_server, giop=version, idl=ECHO_ALL_IDL,
                      interface=ECHO_INTERFACE)
    with SyncORB(fragment_size=fragment_size) as orb:
        for little in (False, True):     # omniORB answers in its own byte order either way
            echo = orb.string_to_object(peer.ior, ECHO, little=little)
            assert echo.giop_version() == version
            for op, args in narrow_cases(ior_from_string(peer.ior)):
                assert echo.invoke(op, *args) == expected_result(args), (op, little)
            echo.note("oneway to omniORB")
            assert echo.is_a(ECHO_REPO_ID) and not echo.non_existent()
        # The calls went over the blocking client (pycdr.orb.blocking), not the loop.
        assert not orb.orb._connections and orb.blocking._connections
        # The same object through its corbaloc URL, at this GIOP version.
        by_url = orb.string_to_object(peer.corbaloc.replace("1.2@", f"{version[0]}.{version[1]}@"),
                                      ECHO)
        assert by_url.echo_long(12345) == 12345


class Recorder:
    """An echo servant that remembers what it received, to check omniORB's encoding against
    pycdr's values (the client side checks the way back)."""

    def __init__(self):
        self.received = []
        self.echo = echo_handler(ECHO)

    def __call__(self, name, args):
        self.received.append((name, tuple(args)))
        return self.echo(name, args)


@pytest.mark.parametrize("threads", [False, True], ids=["asyncio", "threads"])
@pytest.mark.parametrize("version,fragment_size", RUNS, ids=map(run_id, RUNS))
def test_omniorbpy_client_to_pycdr_server(version, fragment_size, threads):
    recorder = Recorder()
    with SyncORB() as orb:
        server = orb.serve(DynamicServant(ECHO, recorder), "Echo", threads=threads,
                           limits=ServerLimits(fragment_size=fragment_size))
        ior = server.server.ior_string(server.key, version=version)
        argv = [sys.executable, OMNI_CLIENT, ior, "--", *giop_orb_args(version)]
        lines = run_client_process("omniORBpy", argv, timeout=60)
        results = [json.loads(line) for line in lines]
        failures = [r for r in results if not r.get("ok")]
        assert not failures, failures
        own_ior = server.server.ior(server.key, version=version)
        expected = narrow_cases(own_ior) + [("note", ("oneway from omniORBpy",))]
        received = [entry for entry in recorder.received if entry[0] != "_is_a"]
        assert [op for op, _ in received] == [op for op, _ in expected]
        for (op, got), (_, want) in zip(received, expected):
            if op == "echo_object":
                assert got[0].profiles == own_ior.profiles
            else:
                assert got == want, op


# omniORB refuses messages over 2 MiB by default: both ends are told 16 MiB.
LARGE_ORB_ARGS = ["-ORBgiopMaxMsgSize", str(16 << 20)]
LARGE = 3 << 20


def test_pycdr_blocking_client_to_omniorbpy_server_over_2_mib(start_peer):
    peer = start_peer(start_omni_echo_server, idl=ECHO_ALL_IDL, interface=ECHO_INTERFACE,
                      orb_args=LARGE_ORB_ARGS)
    data = bytes(range(256)) * (LARGE // 256)
    with SyncORB() as orb:
        echo = orb.string_to_object(peer.ior, ECHO)
        assert echo.echo_octets(data) == data
        assert echo.echo_long(3) == 3
        assert not orb.orb._connections


@pytest.mark.parametrize("threads", [False, True], ids=["asyncio", "threads"])
def test_omniorbpy_client_to_pycdr_server_over_2_mib(threads):
    recorder = Recorder()
    with SyncORB() as orb:
        server = orb.serve(DynamicServant(ECHO, recorder), "Echo", threads=threads)
        argv = [sys.executable, OMNI_CLIENT, server.ior, "--octets", str(LARGE), "--",
                *LARGE_ORB_ARGS]
        results = [json.loads(line) for line in run_client_process("omniORBpy", argv, 60)]
        assert results == [{"op": "echo_octets", "ok": True}]
        assert [(op, len(args[0])) for op, args in recorder.received] == \
            [("echo_octets", LARGE)]


def test_corbaname_through_omninames(omni_names):
    with SyncORB() as orb:
        server = orb.serve(DynamicServant(ECHO, echo_handler(ECHO)), "Echo")
        naming = orb.string_to_object(omni_names.corbaloc)
        naming.invoke(BIND, make_name([("pycdr", "test")]), server.server.ior(server.key))
        echo = orb.string_to_object(omni_names.corbaname("pycdr.test"), ECHO)
        assert echo.echo_string("via omniNames") == "via omniNames"
        assert echo.ior == server.server.ior(server.key)
