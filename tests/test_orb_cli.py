"""`pycdr serve`, `pycdr call` and `pycdr probe`, as processes (serve) and through Click."""

import json
import os
import signal
import subprocess
import sys

import pytest
from click.testing import CliRunner

from orb_echo_values import ECHO_ALL_IDL
from pycdr.cli.main import main

# The console script installed beside the interpreter (pip install -e .).
PYCDR = [os.path.join(os.path.dirname(sys.executable), "pycdr")]


@pytest.fixture
def served():
    process = subprocess.Popen(PYCDR + ["serve", ECHO_ALL_IDL, "--interface", "EchoAll::Echo"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ior = process.stdout.readline().strip()
        url = process.stdout.readline().strip()
        assert ior.startswith("IOR:") and url.startswith("corbaloc:iiop:1.2@127.0.0.1:"), \
            process.stderr.read() if process.poll() is not None else ior
        yield process, ior, url
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)


def invoke(*args):
    return CliRunner().invoke(main, list(args))


def test_serve_call_probe_and_shutdown(served):
    process, ior, url = served
    result = invoke("call", url, "echo_mixed", json.dumps(
        {"s": 1, "us": 2, "l": 3, "ul": 4, "ll": 5, "ull": 6, "f": 1.5, "d": 2.5, "b": True,
         "c": "x", "o": 7, "str": "h\u00e9", "hue": "blue"}), "--idl", ECHO_ALL_IDL)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["hue"] == "blue"
    result = invoke("call", ior, "echo_multi", "5", "2.5", "--idl", ECHO_ALL_IDL, "--giop", "1.0",
                    "--little", "--json")
    assert result.exit_code == 0 and json.loads(result.output) == {"result": [5, 2.5]}
    result = invoke("call", url, "echo_long", '"five"', "--idl", ECHO_ALL_IDL)
    assert result.exit_code == 2
    # (a generous per-step timeout: a loaded CI machine must not turn answers into timeouts)
    result = invoke("probe", url, "--is-a", "IDL:EchoAll/Echo:1.0", "--json",
                    "--timeout", "10")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["giop"] and report["highest_version_accepted"] == "1.2"
    assert report["versions"]["1.3 big-endian"]["outcome"] == "MessageError"
    assert report["versions"]["1.3 big-endian"]["version"] == "1.2"
    assert report["versions"]["1.0 little-endian"]["outcome"] == "LocateReply"
    assert report["locate"]["Echo"]["locate_status"] == "OBJECT_HERE"
    assert report["object"]["is_a"] is True and report["object"]["non_existent"] is False
    port = url.rsplit(":", 1)[1].split("/")[0]
    result = invoke("probe", f"127.0.0.1:{port}", "--json", "--timeout", "10")
    assert result.exit_code == 0
    assert json.loads(result.output)["locate"]["NameService"]["locate_status"] == \
        "UNKNOWN_OBJECT"
    process.send_signal(signal.SIGINT)
    assert process.wait(10) == 0


def test_probe_reports_unreachable_and_not_giop():
    import socket
    import threading
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
    result = invoke("probe", f"127.0.0.1:{port}", "--timeout", "1")
    assert result.exit_code == 3
    with socket.socket() as listener:      # an HTTP-ish server
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        def answer():
            conn, _ = listener.accept()
            conn.recv(100)
            conn.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
            conn.close()
        threading.Thread(target=answer, daemon=True).start()
        result = invoke("probe", f"127.0.0.1:{port}", "--json", "--timeout", "1")
    assert result.exit_code == 1
    assert json.loads(result.output)["first_answer"]["outcome"] == "not GIOP"


def test_serve_limits_options_reach_the_server():
    # Two stalled connections fill --max-connections 2; a call still gets in (one of
    # them, the one that waited longest, is closed with MessageError).
    import socket
    from pycdr.giop.header import MsgType, encode_header, parse_header
    process = subprocess.Popen(PYCDR + ["serve", ECHO_ALL_IDL, "--interface", "EchoAll::Echo",
                                        "--max-connections", "2", "--max-message-size",
                                        "100000", "--max-incomplete-bytes", "200000",
                                        "--incomplete-timeout", "60"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stalled = []
    try:
        process.stdout.readline()
        url = process.stdout.readline().strip()
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        for _ in range(2):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(encode_header((1, 2), False, MsgType.Request, 50_000) + bytes(100))
            stalled.append(sock)
        result = invoke("call", url, "echo_long", "5", "--idl", ECHO_ALL_IDL)
        assert result.exit_code == 0 and result.output.strip() == "5", result.output
        answers = []
        for sock in stalled:
            sock.settimeout(0.5)
            try:
                answers.append(parse_header(sock.recv(100)).msg_type)
            except socket.timeout:
                answers.append(None)
        assert sorted(answers, key=str) == [MsgType.MessageError, None]
    finally:
        for sock in stalled:
            sock.close()
        process.kill()
        process.wait(10)


def test_serve_refuses_a_budget_below_the_message_size():
    result = invoke("serve", ECHO_ALL_IDL, "--interface", "EchoAll::Echo",
                    "--max-message-size", "1000", "--max-incomplete-bytes", "999")
    assert result.exit_code == 2 and "max_incomplete_bytes" in result.output
