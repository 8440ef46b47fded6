"""pycdr pcap -i: a live capture on the loopback interface streams the same
entries a file of it gives (needs libpcap and capture rights: skipped without)."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

from pycdr.errors import CaptureError
from pycdr.giop.messages import KeyAddr, Reply, Request, encode_message
from pycdr.capture.giop import decode_capture
from pycdr.capture.live import libpcap

def _libpcap_loads() -> bool:
    try:
        libpcap()
    except CaptureError:
        return False
    return True


pytestmark = pytest.mark.skipif(not _libpcap_loads() or os.geteuid() != 0,
                                reason="live capture needs libpcap and capture rights (root)")

PYCDR = [sys.executable, "-c", "from pycdr.cli.main import main; main()", "pcap"]


class Lines:
    """Lines of a pipe as they come, with a deadline (its own buffer: a buffered
    reader may hold lines select() does not see)."""

    def __init__(self, pipe):
        self.fd = pipe.fileno()
        self.buf = b""

    def read(self, deadline):
        """The next line, or None when the deadline passes first."""
        while b"\n" not in self.buf:
            if time.monotonic() >= deadline:
                return None
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if ready:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    return None
                self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode()


def _interruptible() -> None:
    """Ctrl-C as at a terminal: a suite started in the background (``cmd &``, as CI
    runners and ``nohup`` may) passes SIGINT on ignored, and Python then installs no
    KeyboardInterrupt handler in the child, so the SIGINT that ends the capture would
    be lost (seen in a clean-clone run: the capture ran on to its --duration)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _end(proc, server) -> None:
    """The test's server closed, the capture process ended whatever happened."""
    server.close()
    if proc.poll() is None:
        proc.kill()
        proc.communicate()


def test_live_capture_streams_entries_and_saves_the_packets(tmp_path):
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    saved = str(tmp_path / "live.pcap")
    proc = subprocess.Popen(PYCDR + ["-i", "lo", "--filter", f"tcp port {port}", "--json",
                                     "--duration", "60", "-w", saved],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_interruptible)
    try:
        deadline = time.monotonic() + 30
        stdout = Lines(proc.stdout)
        line = Lines(proc.stderr).read(deadline)
        assert line is not None and line.startswith("capturing on lo"), line
        client = socket.create_connection(("127.0.0.1", port))
        peer, _ = server.accept()
        operations = ["echo_long", "echo_string", "shutdown"]
        entries = []
        for rid, op in enumerate(operations, 1):
            client.sendall(encode_message(Request(version=(1, 2), request_id=rid, operation=op,
                                                  target=KeyAddr(b"Echo"), body=b"\0\0\0\1")))
            peer.recv(65536)
            peer.sendall(encode_message(Reply(version=(1, 2), request_id=rid, body=b"\0\0\0\1")))
            client.recv(65536)
            # The entries come while the capture runs.
            while len(entries) < 2 * rid:
                line = stdout.read(deadline)
                assert line is not None, "no entry within the deadline"
                entries.append(json.loads(line))
        client.close()
        peer.close()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        _end(proc, server)
    assert proc.returncode == 0, err
    entries += [json.loads(line) for line in (stdout.buf + out).decode().splitlines()]
    assert [e.get("operation") for e in entries if e.get("type") == "Request"] == operations
    replies = [e for e in entries if e.get("type") == "Reply"]
    assert [e["request_id"] for e in replies] == [1, 2, 3]
    assert all("response_time" in e for e in replies)
    # The saved file decodes to the same entries (requests there also know their reply).
    from_file = [{k: v for k, v in e.items() if k != "reply_frame"} for e in decode_capture(saved)]
    assert from_file == entries


def test_no_such_interface_is_a_clear_error():
    proc = subprocess.run(PYCDR + ["-i", "no-such-if0", "--duration", "2"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1
    assert "error: live capture on no-such-if0" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_capture_filter_is_a_clear_error():
    proc = subprocess.run(PYCDR + ["-i", "lo", "--filter", "tcp port (((", "--duration", "2"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "error: capture filter 'tcp port (((':" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_count_ends_the_capture_and_the_saved_file_holds_the_packets(tmp_path):
    saved = tmp_path / "five.pcap"
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    proc = subprocess.Popen(PYCDR + ["-i", "lo", "--filter", f"tcp port {port}", "-c", "5",
                                     "--duration", "60", "-w", str(saved), "--stats", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert Lines(proc.stderr).read(time.monotonic() + 30).startswith("capturing on lo")
        client = socket.create_connection(("127.0.0.1", port))
        peer, _ = server.accept()
        for rid in range(1, 4):
            client.sendall(encode_message(Request(version=(1, 2), request_id=rid,
                                                  operation="ping", target=KeyAddr(b"K"))))
            peer.recv(65536)
        out, err = proc.communicate(timeout=30)
        client.close()
        peer.close()
    finally:
        _end(proc, server)
    assert proc.returncode == 0, err
    from pycdr.capture.read import read_tcp_segments
    assert len(read_tcp_segments(str(saved))) == 5      # SYN, SYN-ACK, ACK and two more
    stats = json.loads(out)
    assert stats == _stats_of(str(saved))


def _stats_of(path):
    from pycdr.capture.giop import iter_capture
    from pycdr.capture.stats import CaptureStats
    counter = CaptureStats()
    for entry in iter_capture(path, matched=counter.matched, unanswered=counter.unanswered):
        counter.add(entry)
    return json.loads(json.dumps(counter.to_json()))


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv to drop capabilities")
def test_without_capture_rights_the_error_says_so():
    """Without capabilities, as a user without capture rights runs it.  The process keeps
    root's uid and drops every capability (bounding and inheritable sets cleared), so it
    reads the checkout and its venv wherever they were cloned (a private 0700 folder
    included), which another uid could not, and still may not open a capture."""
    proc = subprocess.run(["setpriv", "--bounding-set", "-all", "--inh-caps", "-all",
                           "--no-new-privs", *PYCDR, "-i", "lo", "--duration", "2"],
                          capture_output=True, text=True, timeout=60, cwd="/")
    if proc.returncode == 0:
        pytest.skip("this process captures without capabilities here")
    assert proc.returncode == 1
    assert "capturing needs rights" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", [
    ["-i", "lo", "--filter", "tcp port {port}", "-w", "{out}", "-q", "--duration", "3"],
    # `pycdr capture`: the old name of the same, said once on stderr
    ["capture", "-i", "lo", "-p", "{port}", "-t", "3", "{out}"]], ids=["pcap", "capture"])
def test_recording_only_writes_the_packets_and_prints_no_messages(tmp_path, command):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    out = tmp_path / "recorded.pcap"
    argv = [a.format(port=port, out=out) for a in command]
    base = PYCDR[:-1] if argv[0] == "capture" else PYCDR
    proc = subprocess.Popen(base + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        said, lines, deadline = [], Lines(proc.stderr), time.monotonic() + 30
        while not said or not said[-1].startswith("capturing on"):    # (libpcap opened)
            line = lines.read(deadline)
            assert line is not None, said
            said.append(line)
        with socket.create_connection(("127.0.0.1", port)) as client:
            conn, _ = server.accept()
            client.sendall(encode_message(Request(request_id=1, operation="op",
                                                  target=KeyAddr(b"k"))))
            conn.recv(1024)
            conn.close()
        stdout, rest = proc.communicate(timeout=30)
    finally:
        _end(proc, server)
    stderr = "\n".join(said).encode() + lines.buf + rest
    assert proc.returncode == 0, stderr
    assert stdout == b""
    assert b"packets written to" in stderr
    assert (b"pycdr capture is deprecated" in stderr) == (argv[0] == "capture")
    entries = decode_capture(str(out))
    assert [e["operation"] for e in entries if e.get("type") == "Request"] == ["op"], (stderr, entries)


def test_a_reader_that_pauses_loses_no_packet_of_a_burst():
    """The packets that come while the reader is busy wait in the kernel's buffer: 4,000
    small ones sent before the first is read are all there, none dropped.  (With libpcap's
    immediate mode each packet took a slot the size of the largest, about 500 of them in
    the buffer: a monitor that paused a tenth of a second at 1,000 calls a second lost
    packets, and the calls in them.)"""
    from pycdr.capture.live import LiveCapture
    sent = 4000
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    port = receiver.getsockname()[1]
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with receiver, sender, LiveCapture("lo", f"udp port {port}", count=sent,
                                       duration=15) as live:
        for i in range(sent):
            sender.sendto(i.to_bytes(4, "big") * 50, ("127.0.0.1", port))
            if i % 200 == 0:                # (the receiving socket's buffer: not the test)
                try:
                    while True:
                        receiver.recv(4096, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    pass
        time.sleep(0.2)
        while live.stream.read1():          # until the count (or the duration) ends it
            pass
        live.close()
        assert (live.packets, live.dropped) == (sent, 0)


def test_the_end_of_a_capture_still_reads_the_packets_captured_before_it():
    """Ctrl-C (stop()) just after the last packets: they are read, not left in libpcap's
    buffer (which hands packets over a block at a time, up to READ_TIMEOUT_MS late)."""
    from pycdr.capture.live import LiveCapture
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    port = receiver.getsockname()[1]
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with receiver, sender, LiveCapture("lo", f"udp port {port}", duration=15) as live:
        assert live.stream.read1()              # the pcap header
        for i in range(3):
            sender.sendto(b"last %d" % i, ("127.0.0.1", port))
        live.stop()
        started = time.monotonic()
        while live.stream.read1():
            pass
        assert live.packets == 3
        assert time.monotonic() - started < 5   # the end came at once, not at --duration
