"""Mutated and random captures through the plugin: never a Lua error, and
undecodable input is marked (an error field or a violation)."""

from __future__ import annotations

import os
import random

import pytest

from dissector_fields import TSHARK, corpus_pcaps, lua_errors, run_tshark

pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")
pytest.importorskip("scapy")


def test_mutated_and_random_captures_give_no_lua_error(tmp_path):
    from scapy.layers.inet import IP, TCP
    from scapy.packet import Raw
    from scapy.utils import PcapReader, wrpcap
    rng = random.Random(8)
    packets = []
    for pcap in corpus_pcaps():
        with PcapReader(pcap) as reader:
            packets.extend(reader)
    out = []
    for i, pkt in enumerate(packets * 3):
        pkt = pkt.copy()
        if pkt.haslayer(Raw) or (pkt.haslayer(TCP) and bytes(pkt[TCP].payload)):
            data = bytearray(bytes(pkt[TCP].payload))
            for _ in range(rng.randint(1, 4)):
                pos = rng.randrange(len(data))
                data[pos] = rng.randrange(256)
            if rng.random() < 0.2:
                data = data[:rng.randrange(len(data) + 1)]
            pkt[TCP].remove_payload()
            pkt = pkt / Raw(bytes(data))
            del pkt[IP].len, pkt[IP].chksum, pkt[TCP].chksum
        out.append(pkt)
    # Random GIOP-looking payloads on a claimed port.
    for i in range(300):
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 80)))
        head = b"GIOP" + bytes([1, rng.randrange(5), rng.randrange(4), rng.randrange(9)])
        size = rng.choice([len(body), rng.randrange(0, 100), 0xFFFFFFFF])
        payload = head + size.to_bytes(4, "big" if head[6] % 2 == 0 else "little") + body
        out.append(IP(src="10.9.0.1", dst="10.9.0.2") /
                   TCP(sport=30000 + i, dport=2809, flags="PA", seq=1) / Raw(payload))
    path = str(tmp_path / "mutated.pcap")
    wrpcap(path, out)
    proc = run_tshark(path, ["-T", "fields", "-e", "frame.number", "-e", "giopx.error",
                             "-e", "giopx.violation"])
    assert lua_errors(proc) == []
    rows = [line.split("\t") for line in proc.stdout.splitlines()]
    marked = [r for r in rows if len(r) == 3 and (r[1] or r[2])]
    assert len(marked) > 100      # mutations are seen, not silently accepted
