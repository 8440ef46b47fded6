"""pycdr.capture.read: the streaming pcap/pcapng reader, against scapy-written files
and hand-built pcapng (sections, interfaces, link types, bad lengths)."""

from __future__ import annotations

import glob
import io
import os
import struct

import pytest

from pycdr.errors import CaptureError, CaptureTruncatedError
from pycdr.capture.read import MAX_RECORD_SIZE, CaptureReader, endpoint_text

scapy = pytest.importorskip("scapy")
from scapy.layers.inet import IP, TCP, UDP  # noqa: E402
from scapy.layers.inet6 import IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrHopByHop  # noqa: E402
from scapy.layers.l2 import CookedLinux, Dot1AD, Dot1Q, Ether, Loopback  # noqa: E402
from scapy.packet import Raw  # noqa: E402
from scapy.utils import PcapNgWriter, PcapReader, PcapWriter  # noqa: E402

CAPTURES = os.path.join(os.path.dirname(__file__), os.pardir, "captures")


def segments(source, **kw):
    with CaptureReader(source, **kw) as reader:
        return list(reader)


def scapy_segments(path):
    """(frame, time ns, src, sport, dst, dport, seq, ack, flags, payload) by scapy."""
    out = []
    with PcapReader(path) as reader:
        for frame, pkt in enumerate(reader, 1):
            ip = pkt.getlayer(IP) or pkt.getlayer(IPv6)
            tcp = pkt.getlayer(TCP)
            if ip is None or tcp is None:
                continue
            payload = bytes(tcp.payload)
            if isinstance(ip, IP):
                payload = payload[:max(ip.len - ip.ihl * 4 - tcp.dataofs * 4, 0)]
            ns = int(pkt.time * 1_000_000_000)
            out.append((frame, ns, ip.src, tcp.sport, ip.dst, tcp.dport, tcp.seq, tcp.ack,
                        int(tcp.flags), payload))
    return out


def as_text(segs):
    from pycdr.capture.read import address_text
    return [(f, t, address_text(s), sp, address_text(d), dp, q, a, fl, p)
            for f, t, s, sp, d, dp, q, a, fl, p in segs]


@pytest.mark.parametrize("pcap", sorted(glob.glob(os.path.join(CAPTURES, "**", "*.pcap"),
                                               recursive=True)), ids=os.path.basename)
def test_corpus_reads_as_scapy_reads_it(pcap):
    assert as_text(segments(pcap)) == scapy_segments(pcap)


def tcp(payload=b"GIOP", seq=1000, sport=40000, dport=2809, flags="PA", ack=7):
    t = TCP(sport=sport, dport=dport, seq=seq, ack=ack, flags=flags)
    return t / Raw(payload) if payload else t


def test_link_types_vlan_and_ipv6_written_by_scapy(tmp_path):
    ip4 = IP(src="10.1.2.3", dst="10.3.2.1")
    ip6 = IPv6(src="2001:db8::1", dst="::1")
    cases = {
        "ether": (1, [Ether() / ip4 / tcp(b"a"), Ether() / ip6 / tcp(b"b"),
                      Ether() / Dot1Q(vlan=5) / ip4 / tcp(b"c"),
                      Ether() / Dot1AD(vlan=7) / Dot1Q(vlan=9) / ip6 / tcp(b"d"),
                      Ether() / ip4 / UDP() / Raw(b"not tcp"),
                      Ether() / ip6 / IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt() / tcp(b"e")]),
        "sll": (113, [CookedLinux(proto=0x0800) / ip4 / tcp(b"f"),
                      CookedLinux(proto=0x86DD) / ip6 / tcp(b"g")]),
        "null": (0, [Loopback(type=2) / ip4 / tcp(b"h"), Loopback(type=30) / ip6 / tcp(b"i")]),
        "raw": (101, [ip4 / tcp(b"j"), ip6 / tcp(b"k")]),
    }
    for name, (link, packets) in cases.items():
        for i, p in enumerate(packets):
            p.time = 1_700_000_000 + i / 1000
        path = str(tmp_path / f"{name}.pcap")
        with PcapWriter(path, linktype=link) as w:
            for p in packets:
                w.write(p)
        got = segments(path)
        # scapy does not dissect IPv6 behind the BSD/macOS null header (24, 28, 30).
        if name != "null":
            assert as_text(got) == scapy_segments(path)
        assert [s[-1] for s in got] == [bytes(p[Raw]) for p in packets if p.haslayer(TCP)]
    # What was read: VLAN tags and extension headers walked, endpoints written.
    ether = segments(str(tmp_path / "ether.pcap"))
    assert [s[-1] for s in ether] == [b"a", b"b", b"c", b"d", b"e"]
    assert endpoint_text(ether[1][4], ether[1][5]) == "[::1]:2809"
    assert endpoint_text(ether[0][2], ether[0][3]) == "10.1.2.3:40000"


def test_nanosecond_and_big_endian_pcap(tmp_path):
    p = Ether() / IP() / tcp(b"x")
    from decimal import Decimal
    p.time = Decimal("1700000000.123456789")
    for nano, endian in ((True, "<"), (True, ">"), (False, ">")):
        path = str(tmp_path / f"{nano}{endian}.pcap")
        with PcapWriter(path, nano=nano, endianness=endian) as w:
            w.write(p)
        (seg,) = segments(path)
        # (scapy rounds to the microsecond when it writes microseconds)
        assert seg[1] == (1_700_000_000_123_456_789 if nano else 1_700_000_000_123_457_000)


def test_ethernet_padding_is_not_payload(tmp_path):
    # A 2-byte segment in a 60-byte Ethernet frame: the rest is padding.
    frame = bytes(Ether() / IP() / tcp(b"GI")) + b"\0" * 4
    path = tmp_path / "pad.pcap"
    path.write_bytes(pcap_file(1, [frame]))
    assert segments(str(path))[0][-1] == b"GI"


def test_scapy_pcapng_with_ipv6(tmp_path):
    path = str(tmp_path / "s.pcapng")
    packets = [Ether() / IPv6(src="::1", dst="::1") / tcp(b"GIOP" * i) for i in range(1, 4)]
    for i, p in enumerate(packets):
        p.time = 1_700_000_000 + i
    w = PcapNgWriter(path)
    for p in packets:
        w.write(p)
    w.close()
    assert as_text(segments(path)) == scapy_segments(path)


# ----------------------------------------------------------------------------
# Hand-built files.
def pcap_file(link, frames, e="<"):
    out = struct.pack(e + "IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, link)
    for i, f in enumerate(frames):
        out += struct.pack(e + "IIII", 1_700_000_000, i, len(f), len(f)) + f
    return out


def block(e, btype, body):
    body += b"\0" * (-len(body) % 4)
    length = len(body) + 12
    return struct.pack(e + "II", btype, length) + body + struct.pack(e + "I", length)


def shb(e):
    return block(e, 0x0A0D0D0A, struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1))


def idb(e, link, options=b""):
    return block(e, 1, struct.pack(e + "HHI", link, 0, 0) + options)


def option(e, code, value):
    return struct.pack(e + "HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def epb(e, iface, ts, data):
    return block(e, 6, struct.pack(e + "IIIII", iface, ts >> 32, ts & 0xFFFFFFFF, len(data),
                                   len(data)) + data)


def spb(e, data):
    return block(e, 3, struct.pack(e + "I", len(data)) + data)


def opb(e, iface, ts, data):
    return block(e, 2, struct.pack(e + "HHIIII", iface, 0, ts >> 32, ts & 0xFFFFFFFF, len(data),
                                   len(data)) + data)


def packet(payload, ip=None, **kw):
    return bytes((ip or IP(src="10.0.0.1", dst="10.0.0.2")) / tcp(payload, **kw))


def test_pcapng_sections_interfaces_resolutions_and_block_kinds():
    le, be = "<", ">"
    eth = bytes(Ether(type=0x0800))[:14]
    sll2 = struct.pack(">HHIHBB8s", 0x0800, 0, 1, 1, 0, 6, b"\0" * 8)
    data = (
        # Section 1, little-endian: Ethernet in microseconds, raw IP in
        # nanoseconds with an offset of 10 s, Linux cooked v2 in 2^-20 s.
        shb(le)
        + idb(le, 1)
        + idb(le, 101, option(le, 9, b"\x09") + option(le, 14, struct.pack("<q", 10))
              + option(le, 0, b""))
        + idb(le, 276, option(le, 9, b"\x94"))
        + epb(le, 0, 1_700_000_000_000_001, eth + packet(b"one"))
        + block(le, 5, b"\0" * 8)                    # an interface statistics block: skipped
        + epb(le, 1, 1_700_000_000_000_000_002, packet(b"two"))
        + epb(le, 2, 3 << 20 | 1 << 19, sll2 + packet(b"three"))
        + opb(le, 0, 5, eth + packet(b"four"))
        # Section 2, big-endian: its own interfaces (SPB on interface 0, null link type).
        + shb(be)
        + idb(be, 0)
        + spb(be, struct.pack("<I", 2) + packet(b"five"))
        + epb(be, 0, 7, struct.pack("<I", 2) + bytes(UDP()) )    # not TCP: a frame all the same
        + epb(be, 0, 8, struct.pack(">I", 30) + packet(b"six", ip=IPv6(src="::1", dst="::2")))
    )
    got = segments(io.BytesIO(data))
    assert [(s[0], s[-1]) for s in got] == [(1, b"one"), (2, b"two"), (3, b"three"),
                                             (4, b"four"), (5, b"five"), (7, b"six")]
    assert [s[1] for s in got] == [1_700_000_000_000_001_000, 1_700_000_010_000_000_002,
                                   3_500_000_000, 5_000, 0, 8_000]


def test_pcapng_read_in_small_chunks_is_the_same():
    data = shb("<") + idb("<", 101) + b"".join(
        epb("<", 0, i, packet(bytes([i]) * (i * 37))) for i in range(1, 60))
    assert segments(io.BytesIO(data)) == segments(io.BytesIO(data), chunk_size=7)


def test_pcap_read_in_small_chunks_is_the_same():
    data = pcap_file(101, [packet(bytes([i]) * (i * 37)) for i in range(1, 60)])
    assert segments(io.BytesIO(data)) == segments(io.BytesIO(data), chunk_size=5)


def test_block_claiming_4_gib_is_a_typed_error(tmp_path):
    good = shb("<") + idb("<", 101) + epb("<", 0, 1, packet(b"ok"))
    claim = struct.pack("<II", 6, 0xFFFFFFFC) + b"\0" * 40
    path = tmp_path / "big.pcapng"
    path.write_bytes(good + claim)
    with CaptureReader(str(path)) as reader:
        it = iter(reader)
        assert next(it)[-1] == b"ok"            # what comes before is read
        with pytest.raises(CaptureError) as e:
            next(it)
    assert e.value.frame == 2 and e.value.offset == len(good)
    assert "4294967292" in str(e.value) and "frame 2" in str(e.value)
    # From a pipe (no file size), the record limit alone says no.
    with pytest.raises(CaptureError) as e:
        segments(io.BufferedReader(io.BytesIO(good + claim)))
    assert str(MAX_RECORD_SIZE) in str(e.value)


def test_pcap_record_claiming_more_than_the_file(tmp_path):
    data = pcap_file(101, [packet(b"a"), packet(b"b")])
    path = tmp_path / "cut.pcap"
    path.write_bytes(data[:-3])
    with pytest.raises(CaptureTruncatedError) as e:
        segments(str(path))
    assert e.value.frame == 2
    path.write_bytes(data[:24] + struct.pack("<IIII", 0, 0, 0x7FFFFFFF, 10) + b"x" * 50)
    with pytest.raises(CaptureError) as e:
        segments(str(path))
    assert e.value.frame == 1 and e.value.offset == 24


@pytest.mark.parametrize("data, words", [
    (b"not a capture", "not a pcap"),
    (b"", "not a pcap"),
    (b"\n\r\r\n" + b"\0" * 8, "byte-order"),
    (shb("<") + struct.pack("<III", 6, 13, 0), "multiple of 4"),
    (shb("<") + struct.pack("<II", 6, 32) + b"\0" * 20 + struct.pack("<I", 36), "trailing"),
    (shb("<") + epb("<", 0, 1, packet(b"x")), "interface 0"),
    (shb("<") + idb("<", 147), "link type 147"),
    (shb("<") + idb("<", 1, struct.pack("<HH", 9, 64) + b"\x06\0\0\0"), "overruns"),
    (shb("<") + idb("<", 101) + block("<", 6, struct.pack("<IIIII", 0, 0, 0, 500, 500)),
     "claims 500"),
    (shb("<")[:-4], "claims"),
    (pcap_file(1, [])[:20], "header cut"),
])
def test_bad_files_are_typed_errors(data, words):
    with pytest.raises(CaptureError) as e:
        segments(io.BytesIO(data))
    assert words in str(e.value)


def test_mutated_captures_give_entries_or_a_capture_error():
    """Bytes changed, cut or repeated anywhere in the corpus files (pcap and a
    pcapng copy): the reader and pycdr.capture.giop give entries or a PycdrError, nothing else."""
    import random

    from pycdr.errors import PycdrError
    from pycdr.capture.giop import iter_capture
    rng = random.Random(4)
    sources = []
    for path in sorted(glob.glob(os.path.join(CAPTURES, "*.pcap")))[:6]:
        data = open(path, "rb").read()
        frames = [p for p in scapy_frames(path)]
        sources += [data, shb("<") + idb("<", 1) + b"".join(epb("<", 0, i, f)
                                                             for i, f in enumerate(frames))]
    for _ in range(300):
        data = mutated(rng, rng.choice(sources))
        try:
            for _ in iter_capture(io.BytesIO(bytes(data))):
                pass
        except PycdrError:
            pass


def mutated(rng, data: bytes, claims: bool = False) -> bytearray:
    """``data`` with 1 to 5 bytes changed, runs cut or repeated (``claims``: or
    4 bytes made a huge length) at random places."""
    data = bytearray(data)
    for _ in range(rng.randrange(1, 6)):
        i = rng.randrange(len(data))
        kind = rng.randrange(4 if claims else 3)
        if kind == 0:
            data[i] = rng.randrange(256)
        elif kind == 1:
            del data[i:i + rng.randrange(1, 64)]
        elif kind == 2:
            data[i:i] = data[i:i + rng.randrange(1, 64)]
        else:
            data[i:i + 4] = struct.pack("<I", rng.choice((0xFFFFFFFF, 0x7FFFFFFC, 1 << 24)))
    return data


def scapy_frames(path):
    with PcapReader(path) as reader:
        return [bytes(p) for p in reader]
