"""The real peer ORBs of tests/peers start, answer GIOP on 127.0.0.1, serve the echo interface to
each other's clients, and stop without leaving processes behind.

The GIOP messages here are built by hand with struct, only to check that the peers work; the
project's GIOP codec is tested elsewhere.
"""

import json
import math
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time

import pytest

from peers.jacorb import run_jacorb_client, start_jacorb_echo_server
from peers.omni import run_omni_client, start_omni_echo_server, start_omni_names
from peers.process import corbaloc

SOCKET_TIMEOUT = 10
LOCATE_REQUEST, LOCATE_REPLY = 3, 4
UNKNOWN_OBJECT, OBJECT_HERE = 0, 1

SERVER_LAUNCHERS = {
    "omniORBpy": start_omni_echo_server,
    "JacORB": start_jacorb_echo_server,
    "omniNames": start_omni_names,
}

# Values every peer handles; omniORBpy (salome-omniorb) aborts on wchar data, so wchar and
# wstring go to JacORB only.
PORTABLE_CALLS = [
    ("echo_long", -2**31), ("echo_long", 2**31 - 1), ("echo_long", 0),
    ("echo_double", -0.0), ("echo_double", math.pi), ("echo_double", float("inf")),
    ("echo_string", ""), ("echo_string", "hello, caf\u00e9"), ("echo_string", "x" * 10000),
    ("echo_octets", b""), ("echo_octets", bytes(range(256))),
]
WIDE_CALLS = [
    ("echo_wstring", ""), ("echo_wstring", "\u20ac uni\u00e7ode \U0001F600"),
    ("echo_wchar", "\u20ac"), ("echo_wchar", "A"),
]


def giop_message(version, message_type, body):
    """A big-endian GIOP message: 12-byte header, then body."""
    return b"GIOP" + bytes([version[0], version[1], 0, message_type]) + struct.pack(">I", len(body)) + body


def locate_request(version, request_id, object_key):
    if version >= (1, 2):
        # request_id, TargetAddress discriminator KeyAddr (short 0), 2 pad bytes, key sequence
        body = struct.pack(">IhxxI", request_id, 0, len(object_key)) + object_key
    else:
        body = struct.pack(">II", request_id, len(object_key)) + object_key
    return giop_message(version, LOCATE_REQUEST, body)


def receive_exactly(connection, count):
    data = b""
    while len(data) < count:
        chunk = connection.recv(count - len(data))
        if not chunk:
            raise AssertionError(f"connection closed after {len(data)} of {count} bytes")
        data += chunk
    return data


def exchange(peer, message):
    """Send one message to the peer; return (header, little_endian, body) of its answer."""
    with socket.create_connection((peer.host, peer.port), timeout=SOCKET_TIMEOUT) as connection:
        connection.sendall(message)
        header = receive_exactly(connection, 12)
        little_endian = bool(header[6] & 1)
        (size,) = struct.unpack("<I" if little_endian else ">I", header[8:12])
        return header, little_endian, receive_exactly(connection, size)


def locate(peer, version, request_id, object_key):
    """(little_endian, locate_status) of the peer's LocateReply to a LocateRequest."""
    header, little_endian, body = exchange(peer, locate_request(version, request_id, object_key))
    assert header[:4] == b"GIOP"
    assert (header[4], header[5]) == version
    assert header[7] == LOCATE_REPLY
    reply_id, status = struct.unpack("<II" if little_endian else ">II", body[:8])
    assert reply_id == request_id
    return little_endian, status


def process_is_gone(pid):
    """True once the process has exited. A zombie counts as exited: orphans are reaped by
    PID 1, which in some containers does so late."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


def connection_refused(host, port):
    try:
        socket.create_connection((host, port), timeout=SOCKET_TIMEOUT).close()
    except ConnectionRefusedError:
        return True
    return False


@pytest.mark.parametrize("name", SERVER_LAUNCHERS)
def test_server_answers_locate_request_and_stops(name):
    peer = SERVER_LAUNCHERS[name]()
    try:
        assert peer.ior.startswith("IOR:")
        assert peer.host == "127.0.0.1"
        catior = subprocess.run(["catior", peer.ior], capture_output=True, text=True, timeout=30)
        assert f"IIOP 1.2 127.0.0.1 {peer.port} " in catior.stdout, catior.stdout + catior.stderr

        little_endian, status = locate(peer, (1, 2), 7, peer.object_key)
        assert status == OBJECT_HERE
        _, status = locate(peer, (1, 2), 8, b"no such object")
        assert status == UNKNOWN_OBJECT
        if name == "JacORB":
            assert not little_endian, "JacORB marshals big-endian"
        else:
            assert little_endian == (sys.byteorder == "little"), "omniORB marshals in host byte order"
    finally:
        peer.stop()
    assert peer.process.process.returncode is not None
    assert process_is_gone(peer.pid)
    assert connection_refused(peer.host, peer.port)
    peer.stop()  # stopping twice is harmless


@pytest.mark.parametrize("launcher", [start_omni_echo_server, start_jacorb_echo_server])
def test_server_capped_at_giop_1_0_answers_giop_1_0(launcher):
    with launcher(giop=(1, 0)) as peer:
        catior = subprocess.run(["catior", peer.ior], capture_output=True, text=True, timeout=30)
        assert f"IIOP 1.0 127.0.0.1 {peer.port} " in catior.stdout, catior.stdout + catior.stderr
        _, status = locate(peer, (1, 0), 1, peer.object_key)
        assert status == OBJECT_HERE


def expected_results(calls):
    return [{"op": operation, "result": value} for operation, value in calls]


def same_results(actual, expected):
    """Equal, with doubles compared bit for bit (so -0.0 differs from 0.0)."""
    def exact(entry):
        value = entry.get("result")
        if isinstance(value, float):
            return {**entry, "result": struct.pack(">d", value)}
        return entry
    return [exact(entry) for entry in actual] == [exact(entry) for entry in expected]


@pytest.fixture(scope="module")
def echo_servers():
    with start_omni_echo_server() as omni_server, start_jacorb_echo_server() as jacorb_server:
        yield {"omniORBpy": omni_server, "JacORB": jacorb_server}


@pytest.mark.parametrize("server_name", ["omniORBpy", "JacORB"])
def test_omni_client_echoes_through_each_server(echo_servers, server_name):
    results = run_omni_client(echo_servers[server_name].ior, PORTABLE_CALLS)
    assert same_results(results, expected_results(PORTABLE_CALLS)), results


@pytest.mark.parametrize("server_name", ["omniORBpy", "JacORB"])
def test_jacorb_client_echoes_through_each_server(echo_servers, server_name):
    calls = PORTABLE_CALLS + (WIDE_CALLS if server_name == "JacORB" else [])
    results = run_jacorb_client(echo_servers[server_name].ior, calls)
    assert same_results(results, expected_results(calls)), results


@pytest.mark.parametrize("client", [run_omni_client, run_jacorb_client])
def test_clients_resolve_corbaloc_at_giop_1_0(echo_servers, client):
    for server in echo_servers.values():
        url = corbaloc(server.host, server.port, server.object_key, giop=(1, 0))
        assert client(url, [("echo_long", 5)]) == [{"op": "echo_long", "result": 5}]


@pytest.mark.parametrize("client", [run_omni_client, run_jacorb_client])
def test_clients_report_system_exception_of_unreachable_server(client):
    with start_omni_echo_server() as server:
        ior = server.ior
    (result,) = client(ior, [("echo_long", 1)])
    assert result["op"] == "echo_long"
    assert result["exception"] in ("IDL:omg.org/CORBA/TRANSIENT:1.0", "IDL:omg.org/CORBA/COMM_FAILURE:1.0")


PEER_STARTER = """
import json
import sys
sys.path.insert(0, sys.argv[1])
from peers.jacorb import start_jacorb_echo_server
from peers.omni import start_omni_echo_server, start_omni_names
peers = [start_omni_echo_server(), start_jacorb_echo_server(), start_omni_names()]
print(json.dumps([[peer.pid, [peer.process.log_dir, *peer._extra_dirs]] for peer in peers]), flush=True)
sys.stdin.read()
"""


def test_peers_end_when_the_test_process_is_killed():
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    starter = subprocess.Popen([sys.executable, "-c", PEER_STARTER, tests_dir],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        started = json.loads(starter.stdout.readline())
        pids = [pid for pid, _directories in started]
        assert len(pids) == 3
        assert not any(process_is_gone(pid) for pid in pids)
    finally:
        starter.kill()
        starter.wait(timeout=SOCKET_TIMEOUT)
    deadline = time.monotonic() + 10
    while not all(process_is_gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    leftovers = [pid for pid in pids if not process_is_gone(pid)]
    for pid in leftovers:
        os.kill(pid, signal.SIGKILL)
    for _pid, directories in started:  # logs and data the killed starter could not remove
        for directory in directories:
            shutil.rmtree(directory, ignore_errors=True)
    assert leftovers == []
