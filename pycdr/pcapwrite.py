"""Writing GIOP exchanges as pcap files (with scapy: the ``pcap`` extra).

A :class:`TcpSession` turns what a client and a server sent into TCP
segments with made-up but consistent headers (a three-way handshake,
sequence and acknowledgement numbers, 1 ms between packets), so Wireshark and
``pycdr pcap`` reassemble the stream as they would a real capture.
"""

from __future__ import annotations

import itertools

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
