"""pycdr replay against a hostile target: a raw-socket server (struct and sockets, none of
pycdr's codec or ORB) that answers every request with bytes no ORB should send --
garbage, a header claiming 4 GB, a reply cut short, unknown request ids, orphan
fragments, an unknown GIOP version, MessageError, silence, a sequence length of 2**31 --
or closes; and a target that never reads.  Every call that expects a reply must end
failed or different with the reason (never the same, never lost), the replay must end
within its timeouts with exit status 1 and no exception, and nothing a length field
claims may be allocated."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
import tracemalloc

import pytest
from click.testing import CliRunner

pytest.importorskip("scapy")

import replay_store as rs  # noqa: E402
from pycdr.cli.main import EXIT_NOT_GIOP, main  # noqa: E402
from pycdr.giop.messages import KeyAddr, LocateRequest  # noqa: E402

IDL = rs.STORE_IDL


def _header(msg_type: int, size: int, version=(1, 2), flags=0) -> bytes:
    return b"GIOP" + bytes(version) + bytes((flags, msg_type)) + struct.pack(">I", size)


def _reply(request_id: int, body: bytes = b"") -> bytes:
    """A GIOP 1.2 big-endian Reply: NO_EXCEPTION, no service contexts, ``body``."""
    head = struct.pack(">III", request_id, 0, 0)
    return _header(1, len(head) + len(body)) + head + body


# What the target does when it closes with a reset (RST: SO_LINGER 0), not a FIN.
RESET = object()

# What the target sends for each request it reads (its request id given); None: close.
ANSWERS = {
    "garbage": lambda rid: b"\xde\xad\xbe\xef" * 16,
    "claims_4gb": lambda rid: _header(1, 0xFFFFFFF0) + struct.pack(">III", rid, 0, 0),
    "cut_short": lambda rid: _header(1, 200) + struct.pack(">III", rid, 0, 0) + b"\0" * 8,
    "unknown_id": lambda rid: _reply(rid ^ 0x5A5A5A5A),
    "orphan_fragment": lambda rid: _header(7, 8) + struct.pack(">I", rid) + b"\0" * 4,
    "unknown_version": lambda rid: _header(1, 12, version=(9, 9)) +
    struct.pack(">III", rid, 0, 0),
    "message_error": lambda rid: _header(6, 0),
    "close_connection": lambda rid: _header(5, 0),       # and the socket left open
    "silent": lambda rid: b"",
    "closes": lambda rid: None,
    "resets": lambda rid: RESET,
    # The right request id, then a sequence<Item> (list) or a string (find's Item.name)
    # whose length claims 2**31 - 1 elements / bytes.
    "huge_length": lambda rid: _reply(rid, struct.pack(">I", 0x7FFFFFFF) + b"\0" * 12),
}


# What each call that expects a reply must end as, and a text its reason (or, for
# "different" with a reply, its differences) must hold.
EXPECTED = {
    "garbage": ("failed", "protocol violation by the target: bad magic"),
    "claims_4gb": ("failed", "protocol violation by the target: message of 4294967280 bytes"),
    "cut_short": ("different", "no reply within 1 s"),
    "unknown_id": ("different", "to request ids it was not sent"),
    "orphan_fragment": ("failed", "protocol violation by the target: Fragment"),
    "unknown_version": ("failed", "GIOP version 9.9 is not supported"),
    "message_error": ("failed", "the target sent MessageError"),
    "close_connection": ("failed", "CloseConnection"),
    "silent": ("different", "no reply within 1 s"),
    "closes": ("failed", "the target closed the connection"),
    # read or write, whichever meets the reset first: "[Errno 104] Connection reset by
    # peer", or "[Errno 32] Broken pipe"
    "resets": ("failed", "the target failed: [Errno "),
    # list and find: the length is refused, not allocated; total: other values.
    "huge_length": ("different", ""),
}


class HostileTarget:
    """127.0.0.1, a thread per connection; frames the requests with struct alone."""

    def __init__(self, answer):
        self.answer = answer
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.requests = 0
        self._conns: list = []
        self._stop = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self._conns.append(conn)
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn) -> None:
        buf = b""
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
                while len(buf) >= 12:
                    size = struct.unpack_from("<I" if buf[6] & 1 else ">I", buf, 8)[0]
                    if len(buf) < 12 + size:
                        break
                    msg, buf = buf[:12 + size], buf[12 + size:]
                    if msg[7] not in (0, 3):            # Request, LocateRequest
                        continue
                    self.requests += 1
                    rid = struct.unpack_from("<I" if msg[6] & 1 else ">I", msg, 12)[0]
                    out = self.answer(rid)
                    if out is None:
                        conn.shutdown(socket.SHUT_RDWR)
                        return
                    if out is RESET:
                        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                        struct.pack("ii", 1, 0))
                        conn.close()
                        return
                    conn.sendall(out)
        except OSError:
            return
        finally:
            conn.close()

    def close(self) -> None:
        self._stop = True
        self.sock.close()
        for conn in self._conns:
            try:
                conn.close()
            except OSError:
                pass


def replay_to(target, capture: str, window: str, out: str, status: int = 1) -> list:
    """pycdr replay of ``capture`` to ``target`` (--timeout 1, --json ``out``), the target
    closed after it: the calls, once the run is checked to end with exit status 1 well
    within its timeouts (each connection waits at most --timeout for a reply that does
    not come, then its later calls fail at once or wait once more)."""
    start = time.monotonic()
    try:
        result = CliRunner().invoke(main, [
            "replay", capture, "--target", f"127.0.0.1:{target.port}", "--idl", IDL,
            "--window", window, "--timeout", "1", "--json", out], catch_exceptions=False)
    finally:
        target.close()
    took = time.monotonic() - start
    assert result.exit_code == status, result.output
    assert took < 30, took
    with open(out) as f:
        return [json.loads(line) for line in f]


def conversation():
    r = rs.request
    return [r(1, "list", [6]), r(2, "find", ["pear"]), r(3, "total", [21, 1.25]),
            r(4, "ping", [1], oneway=True),
            LocateRequest(version=(1, 2), request_id=5, target=KeyAddr(b"OldStore")),
            r(6, "list", [2])]


@pytest.mark.parametrize("window", ["1", "8"])
@pytest.mark.parametrize("behaviour", sorted(ANSWERS))
def test_a_hostile_target_fails_every_call_it_answers_badly(tmp_path, behaviour, window):
    capture = str(tmp_path / "rec.pcap")
    rs.record(capture, [conversation(), conversation()])       # two connections
    out = str(tmp_path / "calls.jsonl")
    target = HostileTarget(ANSWERS[behaviour])
    # Where a length field claims much, the peak of what Python allocated meanwhile
    # (tracemalloc: every bytes and bytearray; the process's peak RSS would not show an
    # allocation below an earlier test's peak).
    traced = behaviour in ("claims_4gb", "cut_short", "huge_length")
    if traced:
        tracemalloc.start()
    try:
        # (answers that are not GIOP at all: every call failed, and the exit status says
        # why; a GIOP that breaks the protocol is a failed replay, 1)
        calls = replay_to(target, capture, window, out,
                          status=EXIT_NOT_GIOP if behaviour == "garbage" else 1)
    finally:
        peak = tracemalloc.get_traced_memory()[1] if traced else 0
        tracemalloc.stop()
    assert peak < 16 << 20, f"{peak / 1e6:.1f} MB allocated at the peak"
    # Every client message is accounted for: 6 a connection (the oneway included).
    assert len(calls) == 12, [c["operation"] for c in calls]
    outcome, because = EXPECTED[behaviour]
    for call in calls:
        if call["operation"] == "ping":
            continue        # a oneway has no reply to judge (sent, or failed if it could not be)
        assert call["outcome"] == outcome, call
        assert because in (call["reason"] or "") or because in json.dumps(call["differences"]), \
            call
        assert call["reason"] or call["differences"], call
        if behaviour == "huge_length" and call["operation"] in ("list", "find"):
            (difference,) = call["differences"]
            assert difference["path"] == "result"
            assert difference["replayed"].startswith("undecodable: ") and \
                "length 2147483647" in difference["replayed"], difference


class DeafTarget:
    """Accepts connections and never reads from them: the requests fill the socket
    buffers and the replay's writes stop making progress."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self._conns: list = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            self._conns.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self._conns:
            conn.close()


@pytest.mark.parametrize("window", ["1", "8"])
def test_a_target_that_never_reads_fails_the_calls_within_the_timeout(tmp_path, window):
    capture = str(tmp_path / "rec.pcap")
    big = "x" * (1 << 20)                     # 1 MB names: the buffers fill at once
    rs.record(capture, [[rs.request(i, "find", [big]) for i in range(1, 9)]])
    out = str(tmp_path / "calls.jsonl")
    calls = replay_to(DeafTarget(), capture, window, out)
    assert len(calls) == 8
    # The first requests fit in the kernel's buffers (sent, never answered: no reply);
    # the writes after them make no progress for --timeout and fail, the rest with them.
    outcomes = [(c["outcome"], c["reason"]) for c in calls]
    assert all(o == ("different", "no reply within 1 s") or
               (o[0] == "failed" and o[1].startswith("sending to the target failed: "))
               for o in outcomes), outcomes
    assert outcomes[-1][0] == "failed", outcomes
