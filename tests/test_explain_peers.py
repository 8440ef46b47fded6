"""pycdr explain against real peers: the OpenJDK ORB refusing a negative `fixed` (the request is
clean: `pycdr call` says so with the MARSHAL it got), and omniORBpy refusing a string without
its NUL and a GIOP 1.1 request whose sender left the more-fragments flag clear."""

import json
import socket

import pytest
from click.testing import CliRunner

from peers.java_orb import start_java_echo_server
from peers.jdk_orbs import OPENJDK_ORB
from peers.omni import ECHO_IDL as OMNI_ECHO_IDL, start_omni_echo_server

from pycdr.cli.main import main
from pycdr.codec import tc
from pycdr.conformance.echo import ECHO_IDL, ECHO_INTERFACE, load_echo_module
from pycdr.explain import explain
from pycdr.giop.header import parse_header
from pycdr.idl import load

from test_explain import fragments_11, request


def call(*args):
    result = CliRunner().invoke(main, ["call", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    return result


def test_negative_fixed_to_the_openjdk_orb_is_clean():
    with start_java_echo_server(OPENJDK_ORB, load_echo_module().interfaces[ECHO_INTERFACE]) \
            as peer:
        positive = call(peer.ior, "echo_fixed", '"1234567.891"', "--idl", ECHO_IDL)
        as_json = call(peer.ior, "echo_fixed", '"-12.5"', "--idl", ECHO_IDL, "--json")
        as_text = call(peer.ior, "echo_fixed", '"-12.5"', "--idl", ECHO_IDL)
    assert positive.exit_code == 0 and positive.output == '"1234567.891"\n'
    out = json.loads(as_json.output)
    assert as_json.exit_code == 1
    assert out["system_exception"]["name"] == "MARSHAL"
    explained = out["explain"]
    # Every field of the request (its CodeSets context against the IOR's offer, the fixed's
    # digits and sign nibble) keeps the rules: nothing is named, the MARSHAL is the ORB's.
    assert explained["findings"] == [] and explained["clean"] is True
    assert explained["operation"] == "echo_fixed"
    assert (explained["answer"]["vendor"], explained["answer"]["minor_code"]) == ("Sun", 258)
    assert explained["answer"]["minor_name"].startswith("badArgumentsNvlist")
    assert as_text.output.splitlines()[1:] == [
        "  explain: the request is clean: the fault is the peer's (the peer answered "
        "CORBA::MARSHAL minor 0x53550102 (Sun 258: badArgumentsNvlist: the arguments did not "
        "read into the DSI argument list), COMPLETED_NO)"]


def exchange(peer, *messages) -> bytes:
    """Send ``messages`` on a new connection to ``peer``; the first message it answers."""
    with socket.create_connection((peer.host, peer.port), timeout=10) as s:
        for m in messages:
            s.sendall(m)
        data = b""
        while len(data) < 12 or len(data) < parse_header(data).total_size:
            chunk = s.recv(65536)
            if not chunk:
                pytest.fail(f"the peer closed the connection after {len(data)} bytes")
            data += chunk
    return data[:parse_header(data).total_size]


@pytest.fixture(scope="module")
def omni():
    with start_omni_echo_server() as peer:
        assert peer.object_key == b"Echo"     # (the offsets below are for a 4-octet key)
        yield peer


@pytest.fixture(scope="module")
def omni_idl():
    return load(OMNI_ECHO_IDL, register=False)


def test_string_without_nul_to_omniorb(omni, omni_idl):
    data = bytearray(request("echo_string", tc.string, "hello", key=b"Echo"))
    # key 28-31, operation 32-47, contexts 48-51, body 56: length 56-59, "hello\0" 60-65
    assert data[56:66] == b"\0\0\0\x06hello\0"
    data[65] = ord("!")
    reply = exchange(omni, bytes(data))
    ex = explain([bytes(data)], reply, modules=[omni_idl])
    assert ex.answer.name == "MARSHAL" and ex.answer.vendor == "omniORB"
    assert [(f.message, f.offset, f.path, f.code) for f in ex.violations] == \
        [(0, 65, "request.body.value.nul", "string-no-nul")]
    assert "omniORB 22: StringNotEndWithNull" in ex.verdict()


def test_giop_11_fragment_after_a_request_without_the_flag_to_omniorb(omni, omni_idl):
    # GIOP 1.1 echo_string: principal 48-51, the string's length 52-55, text from 56; the
    # sender cut at 60 and sent the rest as a Fragment, with no more-fragments flag before.
    data = request("echo_string", tc.string, "hello world", version=(1, 1), key=b"Echo")
    assert data[52:56] == (12).to_bytes(4, "big")
    parts = fragments_11(data, 60, flag=False)
    reply = exchange(omni, *parts)
    ex = explain(parts, reply, modules=[omni_idl])
    assert ex.answer.name == "MARSHAL" and ex.answer.minor_name.startswith("PassEndOfMessage")
    assert [(f.message, f.offset, f.path, f.code) for f in ex.violations] == \
        [(1, 7, "header.message_type", "fragment-misuse"),
         (0, 52, "request.body.value.length", "body-truncated")]


def test_replay_explains_a_system_exception_the_target_answers(omni, tmp_path):
    # A recording in which a server took a string without its NUL (answered it), replayed
    # against omniORBpy, which refuses it: the difference comes with the explanation.
    pytest.importorskip("scapy")
    import subprocess
    import sys
    from pycdr.capture.write import TcpSession, write_pcap
    from pycdr.giop.messages import Reply, ReplyStatus, encode_message
    data = bytearray(request("echo_string", tc.string, "hello", key=b"Echo"))
    data[65] = ord("!")
    answered = Reply(version=(1, 2), request_id=5, reply_status=ReplyStatus.NO_EXCEPTION)
    packets: list = []
    session = TcpSession(packets, 2809)
    session.client_sends(bytes(data))
    session.server_sends(encode_message(
        answered, write_body=lambda w: w.write_string("hello!")))
    session.close()
    capture = str(tmp_path / "no-nul.pcap")
    write_pcap(capture, packets)
    out = tmp_path / "calls.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", "from pycdr.cli.main import main; main()", "replay", capture,
         "--target", f"{omni.host}:{omni.port}", "--idl", OMNI_ECHO_IDL, "--json", str(out)],
        capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    [call] = [json.loads(line) for line in out.read_text().splitlines()]
    assert call["outcome"] == "different"
    explained = call["explain"]
    assert [(f["offset"], f["path"], f["code"]) for f in explained["findings"]] == \
        [(65, "request.body.value.nul", "string-no-nul")]
    assert explained["answer"]["minor_name"].startswith("StringNotEndWithNull")
    assert "  explain: @65 request.body.value.nul: string is not terminated by NUL " \
        "[CORBA 3.x Part 2, 9.3.2.7 Strings and Wide Strings]" in done.stdout.splitlines()
