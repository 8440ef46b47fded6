"""The C record walk (pycdr.capture._pcapwalk) against the reader's Python code: the
same segments, counts and errors on every capture, hand-built link types and
hostile files.  Runs under PYCDR_PURE=1 too (the walk is put in by hand)."""

from __future__ import annotations

import glob
import io
import os
import random
import struct

import pytest

from pycdr.capture import read as pcapread
from pycdr.errors import CaptureError
from pycdr.capture.read import MAX_RECORD_SIZE, CaptureReader

walk = pytest.importorskip("pycdr.capture._pcapwalk")
scapy = pytest.importorskip("scapy")
from scapy.layers.inet import IP, TCP  # noqa: E402
from scapy.layers.inet6 import (IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment,  # noqa: E402
                                IPv6ExtHdrHopByHop)
from scapy.layers.l2 import CookedLinux, Dot1AD, Dot1Q, Ether, Loopback  # noqa: E402
from scapy.utils import PcapReader  # noqa: E402
from test_pcapread import block, epb, idb, mutated, option, pcap_file, shb  # noqa: E402

ROOT = os.path.join(os.path.dirname(__file__), os.pardir)
CAPTURE_FILES = sorted(glob.glob(os.path.join(ROOT, "captures", "**", "*.pcap*"), recursive=True)
                       + glob.glob(os.path.join(ROOT, "tests", "data", "**", "*.pcap*"),
                                   recursive=True))


@pytest.fixture(autouse=True)
def c_walk(monkeypatch):
    """The C walk in place whatever PYCDR_PURE says."""
    monkeypatch.setattr(pcapread, "_walk_pcap", walk.walk_pcap)
    monkeypatch.setattr(pcapread, "_walk_pcapng", walk.walk_pcapng)


def outcome(data: bytes, use_walk: bool, chunk_size: int = pcapread.CHUNK_SIZE, pipe=False):
    """(segments, (frames, fragments, truncated headers), error) of reading ``data``."""
    source = io.BufferedReader(io.BytesIO(data)) if pipe else io.BytesIO(data)
    got, error = [], None
    reader = None
    try:
        reader = CaptureReader(source, chunk_size=chunk_size, walk=use_walk)
        for segment in reader:
            got.append(segment)
    except CaptureError as e:
        error = (type(e).__name__, str(e), e.offset, e.frame)
    counts = None if reader is None else \
        (reader.counts.frames, reader.counts.ip_fragments, reader.counts.truncated_headers)
    return got, counts, error


def assert_same(data: bytes, chunk_size: int = pcapread.CHUNK_SIZE, pipe=False):
    c = outcome(data, True, chunk_size, pipe)
    python = outcome(data, False, chunk_size, pipe)
    assert c == python
    return c


def frames_of(path):
    with PcapReader(path) as reader:
        return [bytes(p) for p in reader]


def as_pcapng(frames, e="<", link=1):
    return shb(e) + idb(e, link) + b"".join(epb(e, 0, 1_700_000_000_000_000 + i, f)
                                             for i, f in enumerate(frames))


@pytest.mark.parametrize("path", CAPTURE_FILES, ids=os.path.basename)
def test_every_capture_reads_the_same(path):
    data = open(path, "rb").read()
    segments, counts, error = assert_same(data)
    assert segments and error is None
    assert_same(data, chunk_size=97)                 # records cut at every chunk boundary
    if data[:4] != b"\n\r\r\n":
        frames = frames_of(path)
        link = struct.unpack_from("<I" if data[:2] == b"\xd4\xc3" else ">I", data, 20)[0]
        for e in "<>":
            ng = assert_same(as_pcapng(frames, e, link))
            assert [s[2:] for s in ng[0]] == [s[2:] for s in segments]


def tcp(payload=b"GIOP", **kw):
    return TCP(sport=40000, dport=2809, seq=1000, ack=7, flags="PA", **kw) / payload


V4 = IP(src="10.0.0.1", dst="10.0.0.2")
V6 = IPv6(src="fe80::1", dst="fe80::2")


def link_frames():
    """(link type, frames) covering every header path of the walk."""
    v4 = bytes(V4 / tcp(b"v4"))
    v6 = bytes(V6 / tcp(b"v6"))
    ext = bytes(V6 / IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt() / tcp(b"ext"))
    frag_first = bytes(V6 / IPv6ExtHdrFragment(m=0, offset=0) / tcp(b"atomic"))
    frag_more = bytes(V6 / IPv6ExtHdrFragment(m=1, offset=0) / tcp(b"more"))
    v4_frag = bytes(IP(src="10.0.0.1", dst="10.0.0.2", flags="MF") / tcp(b"f"))
    v4_opts = bytes(IP(src="10.0.0.1", dst="10.0.0.2", ihl=6, options=b"\x01\x01\x01\x00")
                    / tcp(b"opt"))
    udp = bytes(IP(src="10.0.0.1", dst="10.0.0.2", proto=17)) + b"\0" * 8
    padded = bytes(Ether() / V4 / tcp(b"")) + b"\0" * 6
    cuts = [v4[:20], v4[:30], v6[:30], v6[:50], ext[:44]]
    ips = [v4, v6, ext, frag_first, frag_more, v4_frag, v4_opts, udp] + cuts
    return [
        (1, [bytes(Ether(type=0x0800 if ip[0] >> 4 == 4 else 0x86DD)) + ip for ip in ips]
         + [bytes(Ether() / Dot1Q() / V4 / tcp(b"vlan")),
            bytes(Ether() / Dot1AD() / Dot1Q() / V6 / tcp(b"qinq")),
            bytes(Ether() / Dot1Q())[:16], padded, b"\0" * 10, b""]),
        (113, [bytes(CookedLinux(proto=0x0800)) + v4, bytes(CookedLinux(proto=0x86DD)) + v6,
               b"\0" * 15]),
        (276, [struct.pack(">HHIHBB8s", 0x0800, 0, 1, 1, 0, 6, b"\0" * 8) + v4,
               struct.pack(">HHIHBB8s", 0x86DD, 0, 1, 1, 0, 6, b"\0" * 8) + v6, b"\0" * 19]),
        (0, [struct.pack("<I", 2) + v4, struct.pack(">I", 2) + v4, struct.pack("<I", 30) + v6,
             struct.pack("<I", 10) + v6, bytes(Loopback(type=24)) + v6, b"\0\0\0",
             struct.pack("<I", 99) + v4]),
        (108, [struct.pack(">I", 2) + v4, struct.pack(">I", 24) + v6, struct.pack("<I", 2) + v4]),
        (101, ips + [b""]),
        (228, ips),
        (229, ips),
        (12, ips),
    ]


@pytest.mark.parametrize("link, frames", link_frames(), ids=lambda x: str(x)[:12])
def test_link_types_and_headers_read_the_same(link, frames):
    for e in "<>":
        segments, counts, error = assert_same(pcap_file(link, frames, e))
        assert error is None and counts[0] == len(frames)
        assert_same(as_pcapng(frames, e, link))
        assert_same(as_pcapng(frames, e, link), chunk_size=33)
    if link == 1:
        assert counts[1] == 2 and counts[2] == 4           # what was skipped is counted


def test_pcapng_sections_resolutions_and_other_blocks_read_the_same():
    le, be = "<", ">"
    v4 = bytes(V4 / tcp(b"x"))
    data = (shb(le) + idb(le, 101)
            + idb(le, 101, option(le, 9, b"\x09") + option(le, 14, struct.pack("<q", -10)))
            + idb(le, 101, option(le, 9, b"\x94"))
            + idb(le, 101, option(le, 9, b"\xff"))          # 2^-127 s: past 64 bits
            + epb(le, 0, 1_700_000_000_000_001, v4) + epb(le, 1, 5, v4)
            + epb(le, 2, 3 << 20 | 1 << 19, v4) + epb(le, 3, 1 << 63, v4)
            + block(le, 5, b"\0" * 8)
            + epb(le, 0, (1 << 64) - 1, v4)                 # beyond int64 in ns
            + shb(be) + idb(be, 101) + epb(be, 0, 7, v4) + epb(be, 0, 8, v4))
    segments, counts, error = assert_same(data)
    assert error is None and len(segments) == 7
    assert segments[1][1] == 5 - 10_000_000_000            # a negative offset


@pytest.mark.parametrize("data, words", [
    (shb("<") + idb("<", 101) + struct.pack("<II", 6, 0xFFFFFFFC) + b"\0" * 40, "4294967292"),
    (pcap_file(101, [])[:24] + struct.pack("<IIII", 0, 0, 0xFFFFFFFF, 10) + b"x" * 50,
     "4294967311"),
    (shb("<") + idb("<", 101) + block("<", 6, struct.pack("<IIIII", 0, 0, 0, 500, 500)),
     "claims 500"),
    (shb("<") + idb("<", 101) + block("<", 6, struct.pack("<IIIII", 3, 0, 0, 4, 4) + b"abcd"),
     "interface 3"),
    (shb("<") + idb("<", 101) + struct.pack("<II", 6, 32) + b"\0" * 20 + struct.pack("<I", 36),
     "trailing"),
    (shb("<") + idb("<", 101) + struct.pack("<III", 6, 13, 0), "multiple of 4"),
    (shb("<") + idb("<", 101) + block("<", 6, b"\0" * 12), "too short"),
])
def test_hostile_claims_are_the_same_typed_error(data, words):
    v4 = bytes(V4 / tcp(b"before"))
    good = (epb("<", 0, 1, v4) if data[:4] == b"\n\r\r\n"
            else struct.pack("<IIII", 0, 0, len(v4), len(v4)) + v4)
    head = len(shb("<") + idb("<", 101)) if data[:4] == b"\n\r\r\n" else 24
    data = data[:head] + good + data[head:]
    for pipe in (False, True):
        segments, _, error = assert_same(data, pipe=pipe)
        assert [s[-1] for s in segments] == [b"before"]        # what comes first is read
        assert error is not None and error[3] == 2 and error[2] == head + len(good)
        assert words in error[1] or (pipe and str(MAX_RECORD_SIZE) in error[1])


def test_mutated_captures_read_the_same():
    """Bytes changed, cut or repeated anywhere: the same segments, then the same
    error (type, message, offset, frame), whichever code reads them."""
    rng = random.Random(30)
    sources = []
    for path in CAPTURE_FILES[:8]:
        data = open(path, "rb").read()
        sources += [data, as_pcapng(frames_of(path)), as_pcapng(frames_of(path), ">")]
    for _ in range(400):
        data = mutated(rng, rng.choice(sources), claims=True)
        assert_same(bytes(data), chunk_size=rng.choice((pcapread.CHUNK_SIZE, 61)))


def test_walk_arguments_out_of_range():
    v4 = bytes(V4 / tcp(b"x"))
    data = as_pcapng([v4])
    start = len(shb("<") + idb("<", 1))
    # Interfaces the walk cannot take (not tuples, numbers past 64 bits) are left
    # to the reader: it stops at their packets.
    for interfaces in ([], ["x"], [(1, 0, 1 << 70, 1, 0)], [(1, 0, 1, 0, 0)],
                       [(1, 0, 1, 1 << 65, 0)]):
        segments, pos, frame, _, _ = walk.walk_pcapng(data, start, True, 0, interfaces)
        assert (segments, pos, frame) == ([], start, 0)
    with pytest.raises(ValueError):
        walk.walk_pcap(b"", -1, 1, True, 1000, 0)
    with pytest.raises(ValueError):
        walk.walk_pcapng(b"", -1, True, 0, [])
    assert walk.walk_pcap(b"\0" * 15, 0, 1, True, 1000, 0) == ([], 0, 0, 0, 0)
    assert walk.walk_pcap(b"\0" * 15, 100, 1, True, 1000, 0) == ([], 100, 0, 0, 0)
