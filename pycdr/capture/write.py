"""Writing GIOP exchanges as pcap files.

:class:`StreamPcapWriter` writes packets as they happen, without scapy (``pycdr
replay --pcap``).  With scapy (the ``pcap`` extra), a :class:`TcpSession` turns
what a client and a server sent into TCP segments with made-up but consistent
headers (a three-way handshake, sequence and acknowledgement numbers, 1 ms
between packets), so Wireshark and ``pycdr pcap`` reassemble the stream as they
would a real capture.
"""

from __future__ import annotations

import itertools
import socket
import struct
import threading
import time

_client_ports = itertools.count(40000)


class TcpSession:
    """One TCP connection's packets."""

    def __init__(self, packets: list, server_port: int = 2809, *,
                 client_ip: str = "10.0.0.1", server_ip: str = "10.0.0.2",
                 client_port: int | None = None, start: float = 1.7e9):
        self.packets = packets
        self.client = (client_ip, client_port or next(_client_ports))
        self.server = (server_ip, server_port)
        self.time = start if not packets else float(packets[-1].time) + 0.01
        self.seq = {True: 1000, False: 5000}
        self._segment(True, b"", "S")
        self._segment(False, b"", "SA")
        self._segment(True, b"", "A")

    def _segment(self, from_client: bool, payload: bytes, flags: str = "PA") -> None:
        from scapy.layers.inet import IP, TCP
        from scapy.layers.l2 import Ether
        from scapy.packet import Raw
        src, dst = (self.client, self.server) if from_client else (self.server, self.client)
        tcp = TCP(sport=src[1], dport=dst[1], flags=flags, seq=self.seq[from_client],
                  ack=self.seq[not from_client])
        pkt = Ether() / IP(src=src[0], dst=dst[0]) / (tcp / Raw(payload) if payload else tcp)
        self.time += 0.001
        pkt.time = self.time
        self.packets.append(pkt)
        self.seq[from_client] = (self.seq[from_client] + len(payload) + ("S" in flags)) \
            & 0xFFFFFFFF

    def send(self, from_client: bool, data: bytes, cuts=()) -> None:
        """``data`` in segments cut at the given offsets (at most 64 KiB each)."""
        bounds = sorted({0, *cuts, len(data), *range(0, len(data), 65000)})
        for a, b in zip(bounds, bounds[1:]):
            self._segment(from_client, data[a:b])

    def client_sends(self, *messages, cuts=()) -> None:
        self.send(True, b"".join(messages), cuts)

    def server_sends(self, *messages, cuts=()) -> None:
        self.send(False, b"".join(messages), cuts)

    def close(self) -> None:
        self._segment(True, b"", "FA")
        self._segment(False, b"", "FA")


def write_pcap(path: str, packets: list) -> None:
    from scapy.utils import wrpcap
    wrpcap(path, packets)


class StreamPcapWriter:
    """A classic pcap file (raw IP link type) written as the traffic happens, without
    scapy and without holding the packets: ``pycdr replay --pcap``.  Each
    :meth:`connection` makes up consistent TCP headers for one connection
    (handshake, sequence and acknowledgement numbers, FINs; checksums left 0, as
    captures of offloading NICs have them).  Thread-safe: connections of several
    threads share the file."""

    MAX_SEGMENT = 65000

    def __init__(self, path: str):
        self._file = open(path, "wb")
        self._lock = threading.Lock()
        # magic, version 2.4, GMT offset, accuracy, snaplen, LINKTYPE_RAW (101)
        self._file.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 101))

    def connection(self, client: tuple, server: tuple) -> "PcapTcpFlow":
        """(host, port) of each side: the addresses the replay really used."""
        return PcapTcpFlow(self, client, server)

    def write_packet(self, packet: bytes, when: float | None = None) -> None:
        when = time.time() if when is None else when
        sec = int(when)
        usec = int((when - sec) * 1e6)
        with self._lock:
            self._file.write(struct.pack("<IIII", sec, usec, len(packet), len(packet)))
            self._file.write(packet)

    def close(self) -> None:
        with self._lock:
            self._file.close()


class PcapTcpFlow:
    """One TCP connection's packets, for :class:`StreamPcapWriter`."""

    def __init__(self, writer: StreamPcapWriter, client: tuple, server: tuple):
        self.writer = writer
        self.ends = {True: _packed_address(client), False: _packed_address(server)}
        self.seq = {True: 1000, False: 5000}
        self._segment(True, b"", 0x02)
        self._segment(False, b"", 0x12)
        self._segment(True, b"", 0x10)

    def _segment(self, from_client: bool, payload: bytes, flags: int = 0x18) -> None:
        (src, sport), (dst, dport) = self.ends[from_client], self.ends[not from_client]
        tcp = struct.pack(">HHIIBBHHH", sport, dport, self.seq[from_client],
                          self.seq[not from_client], 5 << 4, flags, 65535, 0, 0) + payload
        if len(src) == 4:
            ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0,
                             src, dst)
        else:
            ip = struct.pack(">IHBB16s16s", 6 << 28, len(tcp), 6, 64, src, dst)
        self.writer.write_packet(ip + tcp)
        self.seq[from_client] = (self.seq[from_client] + len(payload) +
                                 (1 if flags & 0x03 else 0)) & 0xFFFFFFFF

    def sends(self, from_client: bool, data: bytes) -> None:
        for at in range(0, len(data), StreamPcapWriter.MAX_SEGMENT):
            self._segment(from_client, data[at:at + StreamPcapWriter.MAX_SEGMENT])

    def close(self) -> None:
        self._segment(True, b"", 0x11)
        self._segment(False, b"", 0x11)
        self._segment(True, b"", 0x10)


def _packed_address(end: tuple) -> tuple:
    host, port = end[0], end[1]
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.inet_pton(family, host), port


def merge_pcap_files(paths: list, out_path: str) -> None:
    """The records of the classic pcap files at ``paths`` (StreamPcapWriter's: one
    header, little-endian) merged by time into one file at ``out_path``, one record
    of each file in memory at a time (``pycdr replay --jobs --pcap``: each worker
    writes its own file)."""
    import heapq
    files = [open(p, "rb") for p in paths]
    try:
        heads = [f.read(24) for f in files]
        with open(out_path, "wb") as out:
            out.write(heads[0] if heads and len(heads[0]) == 24 else
                      struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 101))
            for _, record in heapq.merge(*(_records(f, n) for n, f in enumerate(files))):
                out.write(record)
    finally:
        for f in files:
            f.close()


def _records(f, n: int):
    """((seconds, microseconds, file number, record number), header + packet) per record."""
    i = 0
    while True:
        header = f.read(16)
        if len(header) < 16:
            return
        sec, usec, length, _ = struct.unpack("<IIII", header)
        yield (sec, usec, n, i), header + f.read(length)
        i += 1
