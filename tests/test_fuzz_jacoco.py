"""Coverage feedback from a JVM target: the JaCoCo agent's remote-control protocol
(pycdr.fuzz.jacoco) read from bytes the real agent sent (tests/data/jacoco, recorded from
JaCoCo 0.8.15's agent on a JacORB echo server: a first command, reset only; a dump after one
LocateRequest; a dump with nothing run since the reset), its bounds, and a short `pycdr fuzz
--coverage jacoco:HOST:PORT` campaign against a real JacORB server started with the agent,
whose probe coverage grows and whose cases that added probes are found by bisection (one of
them, sent again alone, runs probes in the classes it was credited with)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from peers.jacoco import agent_option
from peers.jacorb import JACORB, PEERS_ECHO_IDL, peers_echo_interface
from peers.java_orb import start_java_echo_server
from peers.process import PeerNotInstalled, free_port

from pycdr.fuzz.jacoco import (HEADER, MAX_PROBES, PROBE_BITS, ConnectionLost, JacocoAgent,
                               JacocoError, Stream, class_of, command, parse_address,
                               read_answer)

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "jacoco")
# The campaign: cases, and its seed (fixed: the same run but for the target's timing).
CASES = 128
SEED = 5


def _recorded(name: str) -> bytes:
    with open(os.path.join(DATA, name), "rb") as f:
        return f.read()


def _stream(data: bytes, piece: int = 1 << 16, limit: int | None = None) -> Stream:
    """A Stream over ``data``, handed out ``piece`` bytes at a time (as a socket may)."""
    at = [0]

    def recv(n):
        out = data[at[0]:at[0] + min(n, piece)]
        at[0] += len(out)
        return out
    return Stream(recv) if limit is None else Stream(recv, limit)


# --- the protocol, from the real agent's bytes ------------------------------------------------
def test_first_answer_is_the_agents_header_then_command_ok():
    data = _recorded("reset-first.bin")
    assert data[:5] == HEADER
    stream = _stream(data)
    dump = read_answer(stream, first=True)
    assert dump.classes == {} and stream.consumed == len(data)
    # Without ``first``, a header where a block is due is checked too, and read over.
    assert read_answer(_stream(data)).classes == {}


@pytest.mark.parametrize("piece", [1, 7, 1 << 16])
def test_dump_after_a_locate_request(piece):
    data = _recorded("dump-locate.bin")
    stream = _stream(data, piece)
    dump = read_answer(stream)
    assert stream.consumed == len(data)          # every byte read, up to the command's end
    assert dump.session.startswith("vm-")
    names = {name for name, _, _ in dump.classes.values()}
    assert all(name.startswith("org/jacorb/") for name in names)
    # What a LocateRequest runs in JacORB: its GIOP connection and its answer's class.
    assert {"org/jacorb/orb/giop/GIOPConnection",
            "org/jacorb/orb/giop/LocateReplyOutputStream"} <= names
    features = dump.features()
    assert len(features) == sum(bin(bits).count("1") for _, _, bits in dump.classes.values())
    for class_id, (name, count, bits) in dump.classes.items():
        assert 0 < bits < 1 << count                  # no bit past the class's probe count
    for feature in features:
        assert (feature & (MAX_PROBES - 1)) < dump.classes[feature >> PROBE_BITS][1]
        assert class_of(feature, {k: v[0] for k, v in dump.classes.items()}) in names


def test_empty_dump_holds_the_session_alone():
    dump = read_answer(_stream(_recorded("dump-empty.bin")))
    assert dump.session.startswith("vm-") and dump.classes == {} and dump.features() == set()


def test_commands_bytes():
    assert command(True, True) == b"\x40\x01\x01" and command(False, True) == b"\x40\x00\x01"
    assert HEADER == b"\x01\xc0\xc0\x10\x07"


def _block(class_id: int, name: bytes, count_bytes: bytes, packed: bytes = b"") -> bytes:
    return b"\x11" + class_id.to_bytes(8, "big") + len(name).to_bytes(2, "big") + name + \
        count_bytes + packed


@pytest.mark.parametrize("data,why", [
    (b"\x02\xc0\xc0\x10\x07", "not a header block"),
    (b"\x01\xc0\xc1\x10\x07", "magic"),
    (b"\x01\xc0\xc0\x10\x06", "format 0x1006"),
])
def test_bad_headers(data, why):
    with pytest.raises(JacocoError, match=why):
        read_answer(_stream(data + b"\x20"), first=True)


def test_claimed_lengths_are_bounded_before_reading():
    # A class claiming 2**28 probes: refused at its count, nothing read for it.
    claim = bytes([0x80, 0x80, 0x80, 0x80, 0x01])          # varint 2**28
    stream = _stream(_block(1, b"A", claim) + b"\x00" * 64)
    with pytest.raises(JacocoError, match="probes"):
        read_answer(stream)
    assert stream.consumed == 1 + 8 + 2 + 1 + len(claim)
    with pytest.raises(JacocoError, match="longer than 5 bytes"):
        read_answer(_stream(_block(1, b"A", b"\xff" * 6)))
    # A name longer than what is left of the answer's bound: refused before it is read.
    with pytest.raises(JacocoError, match="passes 64 bytes"):
        read_answer(_stream(b"\x11" + bytes(8) + b"\xff\xff" + b"x" * 100, limit=64))
    with pytest.raises(JacocoError, match="type 0x77"):
        read_answer(_stream(b"\x77"))
    with pytest.raises(ConnectionLost):
        read_answer(_stream(_block(1, b"A", b"\x10", b"\x01")))  # 16 probes, 1 byte of 2


def test_probe_bits_past_the_count_are_ignored():
    dump = read_answer(_stream(_block(5, b"B", b"\x03", b"\xff") + b"\x20"))
    assert dump.classes[5] == ("B", 3, 0b111)
    assert dump.features() == {5 << PROBE_BITS | i for i in range(3)}


@pytest.mark.parametrize("text", ["nohost", ":80", "h:0", "h:70000", "h:x"])
def test_bad_agent_addresses(text):
    with pytest.raises(JacocoError, match="HOST:PORT"):
        parse_address(text)
    assert parse_address("[::1]:6300") == ("::1", 6300)


def test_unreachable_agent_is_one_line():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]          # bound, not listening: refused
        with pytest.raises(JacocoError, match=f"cannot reach the JaCoCo agent at 127.0.0.1:{port}"):
            JacocoAgent("127.0.0.1", port, timeout=2).reset()


# --- a real JacORB server with the agent ----------------------------------------------------
@pytest.fixture(scope="module")
def jacorb_with_agent():
    """A JacORB echo server (tests/peers/echo.idl) started with the JaCoCo agent, and the
    agent's port."""
    agent_port = free_port()
    try:
        server = start_java_echo_server(JACORB, peers_echo_interface(),
                                        jvm_options=[agent_option(agent_port)])
    except PeerNotInstalled as e:
        pytest.skip(str(e))
    with server:
        yield server, agent_port


def _pycdr(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "pycdr.cli.main", *args], capture_output=True,
                          text=True, timeout=timeout)


def _locate(server) -> bytes:
    key = server.object_key
    body = (7).to_bytes(4, "big") + bytes(4) + len(key).to_bytes(4, "big") + key
    message = b"GIOP\x01\x02\x00\x03" + len(body).to_bytes(4, "big") + body
    with socket.create_connection((server.host, server.port), timeout=10) as s:
        s.sendall(message)
        return s.recv(100)


def test_agent_dumps_and_resets(jacorb_with_agent):
    server, agent_port = jacorb_with_agent
    agent = JacocoAgent("127.0.0.1", agent_port)
    try:
        agent.reset()
        assert _locate(server)[7] == 4                       # a LocateReply
        time.sleep(0.1)
        dump = agent.dump()
        assert dump.features()
        assert "org/jacorb/orb/giop/LocateReplyOutputStream" in agent.class_names.values()
        time.sleep(0.1)
        assert agent.dump().features() == set()              # reset by the dump before
        # The agent serves one client at a time: a connection lost is made again.
        agent.close()
        assert _locate(server)[7] == 4
        time.sleep(0.1)
        again = agent.dump()
        assert again.session == dump.session
        assert {name for name, _, _ in again.classes.values()} >= {
            "org/jacorb/orb/giop/GIOPConnection", "org/jacorb/orb/giop/LocateReplyOutputStream"}
    finally:
        agent.close()


def test_bad_jacoco_option_is_one_line(jacorb_with_agent):
    server, _ = jacorb_with_agent
    done = _pycdr("fuzz", server.ior, "--coverage", "jacoco:nohost")
    assert done.returncode == 2 and "HOST:PORT" in done.stderr and "Traceback" not in done.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        done = _pycdr("fuzz", server.ior, "--coverage", f"jacoco:127.0.0.1:{port}",
                      "--idl", PEERS_ECHO_IDL, "--interface", "PycdrTest::Echo", "--no-catalog",
                      "--max-cases", "1")
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert f"cannot reach the JaCoCo agent at 127.0.0.1:{port}" in done.stderr


def test_campaign_grows_probe_coverage_and_bisects(jacorb_with_agent, tmp_path):
    server, agent_port = jacorb_with_agent
    corpus = tmp_path / "corpus"
    began = time.monotonic()
    done = _pycdr("fuzz", server.ior, "--coverage", f"jacoco:127.0.0.1:{agent_port}",
                  "--idl", PEERS_ECHO_IDL, "--interface", "PycdrTest::Echo", "--no-catalog",
                  "--max-cases", str(CASES), "--seed", str(SEED), "--timeout", "0.5",
                  "--corpus-dir", str(corpus), "--out", str(tmp_path / "findings"),
                  "--json", "-")
    assert done.returncode in (0, 1), done.stderr
    out = json.loads(done.stdout)
    feedback = out["feedback"]
    print(json.dumps({"elapsed": round(time.monotonic() - began, 1), "cases": out["cases"],
                      "notes": out["notes"], "feedback": feedback}, indent=1))
    assert out["cases"] == CASES and not out["notes"]
    assert feedback["kind"] == "jacoco" and feedback["agent"] == f"127.0.0.1:{agent_port}"
    # The seeds ran probes; the campaign's cases ran more.
    assert 0 < feedback["initial_probes"] < feedback["probes"]
    assert feedback["dumps"] >= CASES // 64
    assert feedback["bisections"] >= 1 and feedback["kept"] >= 1
    identified = feedback["identified"]
    assert identified and all(item["probes"] > 0 and item["classes"] for item in identified)
    # One case found by bisection, sent again alone (as kept: minimized), runs probes in the
    # classes it was credited with.
    item = identified[0]
    path = corpus / f"{item['input']}.hex"
    messages = [bytes.fromhex(line) for line in path.read_text().split()]
    agent = JacocoAgent("127.0.0.1", agent_port)
    try:
        agent.reset()
        with socket.create_connection((server.host, server.port), timeout=10) as s:
            for message in messages:
                s.sendall(message)
            s.settimeout(0.5)
            try:
                s.recv(1 << 16)
            except socket.timeout:
                pass
        time.sleep(0.2)
        dump = agent.dump()
    finally:
        agent.close()
    ran = {name for name, _, _ in dump.classes.values()}
    assert set(item["classes"]) <= ran, (item, sorted(ran))
