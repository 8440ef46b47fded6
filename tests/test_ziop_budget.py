"""One memory budget for a message, compressed or not (issue 25): what a ZIOP
message inflates to is held to the receiver's max_message_size, checked while
inflating.  The bombs inflate to 256 MiB-1 GiB from a few hundred KB; the limits
here are small, so what is held is measured against them (tracemalloc)."""

import tracemalloc

import pytest

from pycdr.errors import MAX_ERROR_BYTES, MessageTooLargeError
from pycdr.giop import sysexc
from pycdr.giop.connection import NEED_DATA, GiopConnection, Role
from pycdr.giop.events import Answer, MessageReceived, ProtocolViolation
from pycdr.giop.header import HEADER_SIZE, MAX_MESSAGE_SIZE, MsgType, parse_header
from pycdr.giop.messages import (KeyAddr, LocateRequest, LocateStatus, ReplyStatus, Request,
                                 decode_message, encode_message)
from ziop_bombs import echo_octets_bomb, echo_octets_prefix, reply_bomb, ziop_bomb

MIB = 1 << 20


def drain(conn):
    events = []
    while (ev := conn.next_event()) is not NEED_DATA:
        events.append(ev)
    return events


def peak_while(fn):
    """(result or exception, peak bytes traced while fn ran)."""
    tracemalloc.start()
    try:
        try:
            result = fn()
        except Exception as e:      # noqa: BLE001 - the caller looks at it
            result = e
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("lie", [False, True])
@pytest.mark.parametrize("lenient", [False, True])
def test_inflation_stops_at_the_limit(lie, lenient):
    # 256 MiB of zeros behind an echo_octets header; the limit is 1 MiB.  With
    # lie=True, original_length claims 100 bytes: the check is on the output, not
    # on the claim.
    bomb = ziop_bomb(echo_octets_prefix(n=256 * MIB), 256 * MIB,
                     original_length=100 if lie else None)
    assert len(bomb) < 300_000
    err, peak = peak_while(lambda: decode_message(bomb, lenient=lenient,
                                                  max_message_size=MIB))
    assert isinstance(err, MessageTooLargeError), err
    assert peak < 3 * MIB, peak
    if lie:
        # The compressed byte where the output passed the limit: inside the data.
        assert HEADER_SIZE + 12 < err.offset < len(bomb)
        assert "inflates past the limit of 1048576" in str(err)
    else:
        assert err.offset == HEADER_SIZE + 4       # original_length
        assert "exceeds the limit of 1048576" in str(err)
    head = parse_header(err.head)
    assert head.magic == b"GIOP" and head.msg_type == MsgType.Request
    assert len(err.head) <= HEADER_SIZE + 64 * 1024


def test_default_limit_is_the_connection_limit_and_a_message_under_it_decodes():
    assert GiopConnection(Role.SERVER).max_message_size == MAX_MESSAGE_SIZE == 16 * MIB
    with pytest.raises(MessageTooLargeError):
        decode_message(echo_octets_bomb(60 * MIB))        # the issue's bomb
    msg, warnings = decode_message(echo_octets_bomb(MIB), max_message_size=2 * MIB)
    assert msg.operation == "echo_octets" and not warnings
    assert len(msg.body) == 4 + MIB and msg.ziop.original_length == msg.message_size
    # Exactly at the limit is taken; one byte more is not.
    size = msg.message_size
    decode_message(echo_octets_bomb(MIB), max_message_size=size)
    with pytest.raises(MessageTooLargeError):
        decode_message(echo_octets_bomb(MIB), max_message_size=size - 1)


@pytest.mark.parametrize("version,little", [((1, 2), False), ((1, 0), True), ((1, 1), False)])
def test_server_answers_imp_limit_and_carries_on(version, little):
    conn = GiopConnection(Role.SERVER, max_message_size=MIB)
    after = encode_message(LocateRequest(version=version, little=little, request_id=8,
                                         target=KeyAddr(b"k")))
    conn.receive_data(echo_octets_bomb(64 * MIB, request_id=7, version=version, little=little)
                      + after)
    (violation, located), peak = peak_while(lambda: drain(conn))
    assert peak < 4 * MIB, peak
    assert isinstance(violation, ProtocolViolation) and violation.request_id == 7
    assert violation.answer is Answer.SEND_SYSTEM_EXCEPTION
    reply, _ = decode_message(violation.reply)
    assert (reply.version, reply.little, reply.request_id) == (version, little, 7)
    assert reply.reply_status == ReplyStatus.SYSTEM_EXCEPTION
    assert reply.system_exception == sysexc.IMP_LIMIT(sysexc.OMG_VMCID | 0,
                                                      sysexc.CompletionStatus.COMPLETED_NO)
    assert isinstance(located, MessageReceived) and located.message.request_id == 8
    assert 7 not in conn.outstanding


def test_oneway_bomb_is_dropped_and_an_unreadable_one_gets_message_error():
    conn = GiopConnection(Role.SERVER, max_message_size=MIB)
    conn.receive_data(echo_octets_bomb(4 * MIB, request_id=3, response_flags=0))
    (violation,) = drain(conn)
    assert violation.answer is Answer.DISCARD and violation.reply == b""
    # A 1.1 Request whose service contexts fill more than the inflated head.
    conn = GiopConnection(Role.SERVER, max_message_size=MIB)
    prefix = encode_message(Request(version=(1, 1), request_id=1, target=KeyAddr(b"k"),
                                    operation="x"))
    prefix = prefix[:HEADER_SIZE] + b"\x00\x00\x00\x01" + b"\x00" * 4 + b"\x00\x10\x00\x00"
    conn.receive_data(ziop_bomb(prefix, 4 * MIB))
    (violation,) = drain(conn)
    assert violation.answer is Answer.SEND_MESSAGE_ERROR
    assert parse_header(violation.reply).msg_type == MsgType.MessageError


def test_client_drops_the_reply_and_names_its_request():
    conn = GiopConnection(Role.CLIENT, max_message_size=MIB)
    conn.send(Request(request_id=5, target=KeyAddr(b"k"), operation="op"))
    conn.receive_data(reply_bomb(5, 64 * MIB))
    (violation,) = drain(conn)
    assert isinstance(violation.error, MessageTooLargeError)
    assert violation.answer is Answer.DISCARD and violation.request_id == 5
    assert not conn.outstanding


# --- the reference ORB: `pycdr serve` as a process, and the client -------------------
def _vm_hwm_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def _read_message(sock):
    data = b""
    while len(data) < HEADER_SIZE or len(data) < parse_header(data).total_size:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        data += chunk
    return data


def test_pycdr_serve_refuses_ziop_bombs_with_bounded_memory():
    """The issue's scenario: 4 connections, each a 65 KB echo_octets that inflates to
    60 MiB (under the decoder's old 64 MiB default, over the server's 16 MiB).  Before:
    the server held and echoed 60 MiB per connection (peak RSS 873 MB).  Now each
    gets IMP_LIMIT and the connection serves on; the peak grows by less than the limit."""
    import socket
    import subprocess
    import sys
    import os
    from orb_echo_values import ECHO_ALL_IDL
    pycdr = os.path.join(os.path.dirname(sys.executable), "pycdr")
    process = subprocess.Popen([pycdr, "serve", ECHO_ALL_IDL, "--interface", "EchoAll::Echo"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        process.stdout.readline()
        port = int(process.stdout.readline().rsplit(":", 1)[1].split("/")[0])
        bomb = echo_octets_bomb(60 * MIB, request_id=9)
        assert len(bomb) < 70_000
        socks = [socket.create_connection(("127.0.0.1", port), timeout=20) for _ in range(4)]
        # (once the server answers, its heap is at rest: the baseline)
        socks[0].sendall(encode_message(LocateRequest(request_id=1, target=KeyAddr(b"Echo"))))
        _read_message(socks[0])
        before = _vm_hwm_mib(process.pid)
        for s in socks:
            s.sendall(bomb)
        for s in socks:
            reply, _ = decode_message(_read_message(s))
            assert reply.request_id == 9 and reply.system_exception.name == "IMP_LIMIT"
            s.sendall(encode_message(LocateRequest(request_id=2, target=KeyAddr(b"Echo"))))
            assert decode_message(_read_message(s))[0].locate_status == LocateStatus.OBJECT_HERE
        grown = _vm_hwm_mib(process.pid) - before
        assert grown < 16, f"peak RSS grew by {grown:.0f} MiB"
        for s in socks:
            s.close()
    finally:
        process.kill()
        process.wait(10)


def test_client_call_whose_reply_inflates_past_its_limit_raises_imp_limit():
    """A server (raw, in the test) answers a call with a ZIOP Reply of 256 MiB: the
    caller gets IMP_LIMIT at once (not a timeout), memory stays near its limit, and
    the connection serves the next call."""
    import asyncio
    from orb_echo_values import ECHO_INTERFACE, load_echo_module
    from pycdr.orb import ORB
    from pycdr.giop.messages import Reply
    echo = load_echo_module().interfaces[ECHO_INTERFACE]
    answers = []

    async def serve_raw(reader, writer):
        while True:
            head = await reader.readexactly(HEADER_SIZE)
            raw = head + await reader.readexactly(parse_header(head).size)
            req, _ = decode_message(raw)
            if not answers:
                writer.write(reply_bomb(req.request_id, 256 * MIB, req.version, req.little))
            else:
                writer.write(encode_message(Reply(version=req.version, little=req.little,
                                                  request_id=req.request_id, body=b"\0")))
            answers.append(req.request_id)
            await writer.drain()

    async def main():
        server = await asyncio.start_server(serve_raw, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        bomb = reply_bomb(1, 256 * MIB)     # made (and cached) before measuring
        assert len(bomb) < 300_000
        try:
            async with ORB(max_message_size=MIB, timeout=20) as orb:
                ref = await orb.string_to_object(f"corbaloc:iiop:1.2@127.0.0.1:{port}/Echo",
                                                 echo)
                tracemalloc.start()
                try:
                    with pytest.raises(sysexc.IMP_LIMIT) as info:
                        await ref.non_existent()
                    peak = tracemalloc.get_traced_memory()[1]
                finally:
                    tracemalloc.stop()
                assert info.value.completed == sysexc.CompletionStatus.COMPLETED_YES
                assert peak < 4 * MIB, peak
                assert await ref.non_existent() is False      # the same connection, on
                assert len(answers) == 2
        finally:
            server.close()
            await server.wait_closed()
    asyncio.run(asyncio.wait_for(main(), 60))


# --- the analyzers: `pycdr decode`, `pycdr pcap` --------------------------------------
# (VmHWM, not ru_maxrss: the latter keeps the forking parent's peak across exec)
_PEAK_RSS = """
import sys
from pycdr.cli.main import main
try:
    main(sys.argv[2:])
finally:
    with open("/proc/self/status") as status, open(sys.argv[1], "w") as f:
        f.write([line.split()[1] for line in status if line.startswith("VmHWM:")][0])
"""


def cli_peak_rss(tmp_path, *args):
    """(exit code, stdout, peak RSS in MiB) of a pycdr command run in a process of its
    own, under a 3 GiB address-space limit (so a regression fails, not the machine)."""
    import resource
    import subprocess
    import sys

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    peak_file = tmp_path / "peak"
    p = subprocess.run([sys.executable, "-c", _PEAK_RSS, str(peak_file), *args],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       preexec_fn=limit, timeout=300)
    return p.returncode, p.stdout, int(peak_file.read_text()) / 1024


def test_decode_json_of_the_issues_eight_bombs_reports_each_with_bounded_memory(tmp_path):
    """Issue 25: `pycdr decode --json -f` of eight 60 MiB echo_octets bombs (490 KB):
    4 GB peak before (everything kept to the end).  Now one JSON line per message,
    each an error with its offset and bytes, and the run stays small."""
    import json
    bombs = [echo_octets_bomb(60 * MIB, request_id=i) for i in range(1, 9)]
    path = tmp_path / "bombs.bin"
    path.write_bytes(b"".join(bombs))
    for mode in (["--json"], []):
        code, out, peak = cli_peak_rss(tmp_path, "decode", "-f", str(path), *mode)
        assert code == 1
        assert peak < 120, f"peak RSS {peak:.0f} MiB"
        if mode:
            entries = [json.loads(line) for line in out.splitlines()]
            assert len(entries) == 8
            offset = 0
            for entry, bomb in zip(entries, bombs):
                assert entry["stream_offset"] == offset
                assert entry["error"]["type"] == "MessageTooLargeError"
                assert entry["error"]["offset"] == offset + HEADER_SIZE + 4
                assert entry["bytes"] == bomb[:MAX_ERROR_BYTES].hex()
                assert entry["bytes_length"] == len(bomb) and entry["header"]["magic"] == "ZIOP"
                offset += len(bomb)
        else:
            assert out.count("undecodable: MessageTooLargeError") == 8


def test_decode_json_streams_so_memory_does_not_grow_with_the_message_count(tmp_path):
    """Messages under the budget (6 MiB echo_octets each, decoded): the peak for 12 of
    them is the peak for 2 (before: every message's JSON was kept to the end)."""
    peaks = {}
    for count in (2, 12):
        path = tmp_path / f"{count}.bin"
        path.write_bytes(b"".join(echo_octets_bomb(6 * MIB, request_id=i)
                                  for i in range(count)))
        code, out, peaks[count] = cli_peak_rss(tmp_path, "decode", "--json", "-f", str(path))
        assert code == 0 and out.count("\n") == count
    assert peaks[12] < peaks[2] * 1.25 + 10, peaks


def test_pcap_reports_a_bomb_with_its_offset_and_goes_on(tmp_path):
    """`pycdr pcap --idl` of a capture holding the issue's bomb between two calls: 711 MB
    before; now an error entry with its stream offset, and the next message decoded."""
    import json
    pytest.importorskip("scapy")
    from scapy.layers.inet import IP, TCP
    from scapy.utils import wrpcap
    from orb_echo_values import ECHO_ALL_IDL
    first = encode_message(LocateRequest(request_id=1, target=KeyAddr(b"Echo")))
    bomb = echo_octets_bomb(60 * MIB, request_id=2)
    last = encode_message(LocateRequest(request_id=3, target=KeyAddr(b"Echo")))
    packets, seq = [], 1000
    for payload in (first, bomb, last):
        packets.append(IP(src="127.0.0.1", dst="127.0.0.1") /
                       TCP(sport=40000, dport=2809, flags="PA", seq=seq) / payload)
        seq += len(payload)
    path = tmp_path / "bomb.pcap"
    wrpcap(str(path), packets)
    code, out, peak = cli_peak_rss(tmp_path, "pcap", str(path), "--idl", ECHO_ALL_IDL,
                                   "--json")
    # every message shown, the bomb as an error entry; status 1: one could not be decoded
    assert code == 1, out
    entries = [json.loads(line) for line in out.splitlines()]     # JSON Lines
    assert [e.get("request_id") for e in entries] == [1, None, 3]
    error = entries[1]["error"]
    assert error["type"] == "MessageTooLargeError"
    assert error["offset"] == len(first) + HEADER_SIZE + 4
    assert entries[1]["stream_offset"] == len(first)
    # (at most MAX_ERROR_BYTES of the undecodable bytes as hex, and their whole length)
    assert entries[1]["bytes"] == bomb[:MAX_ERROR_BYTES].hex()
    assert entries[1]["bytes_length"] == len(bomb)
    assert peak < 150, f"peak RSS {peak:.0f} MiB"


def test_a_stream_that_ends_early_decodes_what_it_holds_with_a_warning():
    import struct
    bomb = bytearray(ziop_bomb(echo_octets_prefix(n=MIB), MIB))
    # Cut the zlib stream (and say so in the sequence and message lengths).
    data_len = struct.unpack(">I", bomb[20:24])[0]
    cut = bytes(bomb[:24 + data_len // 2])
    cut = cut[:8] + struct.pack(">I", len(cut) - HEADER_SIZE) + cut[12:20] + \
        struct.pack(">I", data_len // 2) + cut[24:]
    msg, warnings = decode_message(cut, lenient=True, max_message_size=2 * MIB)
    assert [w.code for w in warnings][:1] == ["ziop-length"]
    assert msg.ziop.original_length == MIB + len(echo_octets_prefix()) - HEADER_SIZE
    assert msg.message_size < msg.ziop.original_length


def test_a_ziop_message_cut_short_is_a_decode_error_lenient_or_not():
    """A ZIOP header claiming more bytes than there are: the lenient decoder reads what is
    there and says it is truncated, never a bare ValueError."""
    import struct

    from pycdr.errors import DecodeError
    from pycdr.giop.messages import decode_message
    data = b"ZIOP" + bytes([1, 2, 0, 0]) + struct.pack(">I", 100) + b"\x00\x01\x00\x00"
    for lenient in (False, True):
        with pytest.raises(DecodeError):
            decode_message(data, lenient=lenient)
