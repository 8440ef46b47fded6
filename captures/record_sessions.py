"""Record real GIOP sessions between ORBs on loopback, for captures/real/.

    .venv/bin/python captures/record_sessions.py      # or: make_captures.py --real

No capture rights are needed: the client talks to a relay on 127.0.0.1 that
forwards every byte to the server and back and remembers what it forwarded,
in order, with the time it arrived.  Each recorded TCP connection is then
written as a pcap with made-up TCP/IP headers (127.0.0.1, the server on port
2809, a client port of its own, a three-way handshake, one segment per
chunk the relay read).  The GIOP bytes are the ORBs' own.

Sessions (a handful of calls each, GIOP 1.0, 1.1 and 1.2):
- pycdr's client (pycdr.orb) -> omniORBpy server
- omniORBpy client -> pycdr's reference ORB server
- JacORB client -> omniORBpy server (when the JacORB peers are built)
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

LOOPBACK = "127.0.0.1"
PCAP_SERVER_PORT = 2809
VERSIONS = [(1, 0), (1, 1), (1, 2)]
# The calls of each session: tests/peers/echo.idl operations omniORBpy can take
# (no wchar/wstring: the salome-omniorb build aborts on them).
ECHO_CALLS = [("echo_long", -42), ("echo_string", "recorded"), ("echo_double", 2.5),
              ("echo_octets", b"\x00\x01\xfe")]


class RecordingRelay:
    """A TCP relay from 127.0.0.1:<port> to a server; ``connections`` holds,
    per accepted connection, the chunks forwarded: (time, from_client, bytes)."""

    def __init__(self, server_host: str, server_port: int):
        self.server = (server_host, server_port)
        self.listener = socket.create_server((LOOPBACK, 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.connections: list[list] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._accept_thread = threading.Thread(target=self._accept, daemon=True)
        self._accept_thread.start()

    def _accept(self):
        while not self._stop.is_set():
            try:
                client, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            upstream = socket.create_connection(self.server, timeout=10)
            chunks: list = []
            with self._lock:
                self.connections.append(chunks)
                self._sockets += [client, upstream]
            for src, dst, from_client in ((client, upstream, True), (upstream, client, False)):
                t = threading.Thread(target=self._pump, args=(src, dst, from_client, chunks),
                                     daemon=True)
                t.start()
                self._threads.append(t)

    def _pump(self, src, dst, from_client, chunks):
        try:
            while True:
                data = src.recv(16384)
                if not data:
                    break
                with self._lock:           # one order for both directions: arrival order
                    chunks.append((time.time(), from_client, data))
                dst.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def close(self):
        self._stop.set()
        self._accept_thread.join()
        self.listener.close()
        for t in self._threads:
            t.join(timeout=5)
        for s in self._sockets:
            s.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Ports:
    """Client ports of the written sessions, unique across captures/real/."""

    def __init__(self, first=52000):
        self.next = first

    def take(self):
        self.next += 1
        return self.next


def connection_packets(chunks, client_port: int) -> list:
    """One recorded connection as scapy packets with synthesized headers."""
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw
    from pycdr.capture.scapy_layer import GIOP
    packets = []
    seq = {True: 1000, False: 5000}
    start = chunks[0][0] - 0.003 if chunks else time.time()

    def segment(t, from_client, payload, flags="PA"):
        sport, dport = (client_port, PCAP_SERVER_PORT) if from_client else (PCAP_SERVER_PORT, client_port)
        tcp = TCP(sport=sport, dport=dport, flags=flags, seq=seq[from_client], ack=seq[not from_client])
        layer = (GIOP(payload) if payload[:4] == b"GIOP" and len(payload) >= 12
                 else Raw(payload) if payload else None)
        pkt = Ether() / IP(src=LOOPBACK, dst=LOOPBACK) / (tcp / layer if layer is not None else tcp)
        pkt.time = t
        packets.append(pkt)
        seq[from_client] = (seq[from_client] + len(payload) + ("S" in flags)) & 0xFFFFFFFF

    segment(start, True, b"", "S")
    segment(start + 0.001, False, b"", "SA")
    segment(start + 0.002, True, b"", "A")
    for t, from_client, data in chunks:
        segment(t, from_client, data)
    return packets


def write_pcap(path: str, relay: RecordingRelay, ports: _Ports) -> int:
    from scapy.utils import wrpcap
    packets = []
    for chunks in relay.connections:
        if chunks:
            packets += connection_packets(chunks, ports.take())
    wrpcap(path, packets)
    return len(packets)


def _echo_interface():
    from pycdr import idl
    module = idl.load(os.path.join(ROOT, "tests", "peers", "echo.idl"), register=False)
    return module.interfaces["PycdrTest::Echo"]


def record_pycdr_to_omniorbpy(out_dir, version, ports):
    from peers.omni import start_omni_echo_server
    from peers.process import corbaloc
    from pycdr.orb.sync import SyncORB
    echo = _echo_interface()
    with start_omni_echo_server(giop=version) as server, \
            RecordingRelay(server.host, server.port) as relay:
        with SyncORB() as orb:
            ref = orb.string_to_object(corbaloc(LOOPBACK, relay.port, server.object_key, version), echo)
            for op, value in ECHO_CALLS:
                result = ref.invoke(op, value)
                if result != value:
                    raise RuntimeError(f"{op}({value!r}) returned {result!r}")
        time.sleep(0.2)
    return write_pcap(os.path.join(out_dir, f"pycdr-to-omniorbpy-giop1{version[1]}.pcap"), relay, ports)


def record_omniorbpy_to_pycdr(out_dir, version, ports):
    from peers.omni import run_omni_client
    from peers.process import corbaloc
    from pycdr.orb import DynamicServant
    from pycdr.orb.servant import echo_handler
    from pycdr.orb.sync import SyncORB
    echo = _echo_interface()
    with SyncORB() as orb:
        served = orb.serve(DynamicServant(echo, echo_handler(echo)), "Echo")
        host, port = LOOPBACK, served.server.port
        with RecordingRelay(host, port) as relay:
            results = run_omni_client(corbaloc(LOOPBACK, relay.port, served.key, version),
                                      ECHO_CALLS, giop=version)
            time.sleep(0.2)
    bad = [r for r in results if "result" not in r]
    if bad:
        raise RuntimeError(f"omniORBpy client calls failed: {bad}")
    return write_pcap(os.path.join(out_dir, f"omniorbpy-to-pycdr-giop1{version[1]}.pcap"), relay, ports)


def record_jacorb_to_omniorbpy(out_dir, version, ports):
    from peers.jacorb import run_jacorb_client
    from peers.omni import start_omni_echo_server
    from peers.process import corbaloc
    with start_omni_echo_server(giop=version) as server, \
            RecordingRelay(server.host, server.port) as relay:
        results = run_jacorb_client(corbaloc(LOOPBACK, relay.port, server.object_key, version),
                                    ECHO_CALLS)
        time.sleep(0.2)
    bad = [r for r in results if "result" not in r]
    if bad:
        raise RuntimeError(f"JacORB client calls failed: {bad}")
    return write_pcap(os.path.join(out_dir, f"jacorb-to-omniorbpy-giop1{version[1]}.pcap"), relay, ports)


def record_all(captures_dir: str) -> list[str]:
    """Records every session into captures_dir/real/; returns the pcaps written.
    A peer that is not installed (JacORB) is skipped with a message."""
    from peers.process import PeerNotInstalled
    out_dir = os.path.join(captures_dir, "real")
    os.makedirs(out_dir, exist_ok=True)
    ports = _Ports()
    written = []
    for recorder in (record_pycdr_to_omniorbpy, record_omniorbpy_to_pycdr, record_jacorb_to_omniorbpy):
        for version in VERSIONS:
            try:
                recorder(out_dir, version, ports)
            except PeerNotInstalled as missing:
                print(f"skipped {recorder.__name__} {version}: {missing}", file=sys.stderr)
                continue
            written.append(recorder.__name__)
            print(f"recorded {recorder.__name__[len('record_'):]} GIOP {version[0]}.{version[1]}")
    return written


if __name__ == "__main__":
    record_all(HERE)
