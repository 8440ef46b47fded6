"""Streaming pcap and pcapng reader: the TCP segments of a capture file.

    with CaptureReader("session.pcapng") as reader:
        for frame, ts_ns, src, sport, dst, dport, seq, ack, flags, payload in reader:
            ...

``struct`` over chunks of a megabyte: one tuple a TCP segment and nothing else
made per packet, so a capture of any size streams in flat memory.  Where the C
extension ``pycdr.capture._pcapwalk`` is built (and ``PYCDR_PURE=1`` is not set), it
walks the whole, regular records of each chunk and parses their headers in
one call; every other record -- cut by the chunk's end, a pcapng block other
than an Enhanced Packet Block, anything malformed -- goes through the Python
code here, which is also the pure twin of the whole walk (``IMPLEMENTATION``
says which is in use; tests/test_pcapwalk.py holds the two to the same
tuples, counts and errors).

- Files: pcap (microsecond and nanosecond magic, either byte order) and pcapng
  (several sections, each with its own byte order and interfaces; Enhanced,
  Simple and obsolete Packet blocks; ``if_tsresol`` and ``if_tsoffset``).
  Timestamps are integer nanoseconds since the epoch.
- Link types: Ethernet (VLAN tags 802.1Q / 802.1ad, stacked), Linux cooked
  v1 and v2, BSD loopback/null (either byte order) and OpenBSD loop, raw IP
  (101, 12, 14, 228, 229).
- Network: IPv4 (payload cut at the total length, so Ethernet padding is not
  taken for data; fragments are counted and skipped) and IPv6 (hop-by-hop,
  routing, destination options and AH headers walked; fragments skipped).

A frame is every packet record or packet block, TCP or not (1-based, as
Wireshark numbers them).  Addresses are the raw 4 or 16 bytes
(:func:`address_text` writes them).  A record or block whose length does not
fit the file -- or exceeds :data:`MAX_RECORD_SIZE` -- is a
:class:`~pycdr.errors.CaptureError` with the frame number and file offset; no
buffer is ever sized from a length field before the bytes are there.
"""

from __future__ import annotations

import io
import ipaddress
import os
import stat
import struct
from math import gcd
from typing import NamedTuple

from ..errors import CaptureError, CaptureTruncatedError
from ..fastpath import c_allowed

IMPLEMENTATION = "python"
_walk_pcap = _walk_pcapng = None
if c_allowed():
    try:
        from ._pcapwalk import walk_pcap as _walk_pcap, walk_pcapng as _walk_pcapng
    except ImportError:          # extension not built: the Python walk alone
        pass
    else:
        IMPLEMENTATION = "c"

CHUNK_SIZE = 1 << 20
# The largest record or block accepted: far above any snap length in use
# (libpcap's is 256 KiB), far below what would hurt to hold.
MAX_RECORD_SIZE = 16 << 20

PCAP_MAGIC_US = 0xA1B2C3D4
PCAP_MAGIC_NS = 0xA1B23C4D
PCAPNG_SHB = 0x0A0D0D0A
PCAPNG_BYTE_ORDER_MAGIC = 0x1A2B3C4D
BLOCK_IDB, BLOCK_OPB, BLOCK_SPB, BLOCK_EPB = 1, 2, 3, 6
OPTION_TSRESOL, OPTION_TSOFFSET = 9, 14

LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LOOP = 108
LINKTYPE_LINUX_SLL = 113
LINKTYPE_LINUX_SLL2 = 276
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
# DLT_RAW's numbers on some BSDs, written as such by old tools.
_RAW_ALIASES = (12, 14)
LINK_TYPES = {LINKTYPE_NULL: "null/loopback", LINKTYPE_ETHERNET: "Ethernet",
              LINKTYPE_RAW: "raw IP", 12: "raw IP", 14: "raw IP", LINKTYPE_LOOP: "OpenBSD loop",
              LINKTYPE_LINUX_SLL: "Linux cooked v1", LINKTYPE_LINUX_SLL2: "Linux cooked v2",
              LINKTYPE_IPV4: "raw IPv4", LINKTYPE_IPV6: "raw IPv6"}

ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
_VLAN_ETHERTYPES = (0x8100, 0x88A8, 0x9100)
# Address family values of the null/loop header for IPv6 (Linux, the BSDs, macOS).
_AF_INET = 2
_AF_INET6 = (10, 24, 28, 30)
_IPV6_SKIPPED_HEADERS = (0, 43, 60)          # hop-by-hop, routing, destination options
_IPV6_FRAGMENT, _IPV6_AH = 44, 51
_TCP = 6

_TCP_HEADER = struct.Struct("!HHIIH")
# version/IHL, total length, flags/fragment offset, protocol, source, destination
_IPV4_HEADER = struct.Struct("!BxHxxHxB2x4s4s").unpack_from
_U16 = struct.Struct("!H")
_BE_U32 = struct.Struct(">I")
_LE_U32 = struct.Struct("<I")


class TcpSegment(NamedTuple):
    """What the reader yields for every TCP segment (plain tuples on the fast
    path; this names their fields)."""
    frame: int
    ts_ns: int
    src: bytes
    sport: int
    dst: bytes
    dport: int
    seq: int
    ack: int
    flags: int
    payload: bytes


def address_text(address: bytes) -> str:
    return str(ipaddress.ip_address(address))


def endpoint_text(address: bytes, port: int) -> str:
    """``10.0.0.1:2809``, ``[::1]:2809``."""
    text = address_text(address)
    return f"[{text}]:{port}" if len(address) == 16 else f"{text}:{port}"


class CaptureCounts:
    """What the reader passed over, for reports."""
    __slots__ = ("frames", "ip_fragments", "truncated_headers")

    def __init__(self):
        self.frames = 0
        self.ip_fragments = 0         # IPv4/IPv6 fragments (no IP reassembly)
        self.truncated_headers = 0    # frames cut (snap length) inside a header


class CaptureReader:
    """Iterates the TCP segments of a pcap or pcapng file as tuples
    (frame, ts_ns, src, sport, dst, dport, seq, ack, flags, payload).

    ``source``: a path or a binary file object (a pipe too; without a size,
    only :data:`MAX_RECORD_SIZE` bounds a length claim).  ``walk=False``: the
    Python code alone even where the C walk is built (tests compare the two).  ``bytes_read`` (file
    offset reached) and ``size`` feed a progress bar; ``counts`` says what was
    skipped.  A file that is no capture raises :class:`CaptureError` here.
    """

    def __init__(self, source, chunk_size: int = CHUNK_SIZE, walk: bool = True):
        self._walk = walk and _walk_pcap is not None
        if isinstance(source, (str, bytes, os.PathLike)):
            self.name = os.fspath(source)
            self._file = open(source, "rb")
            self._owned = True
        else:
            self.name = getattr(source, "name", "<capture>")
            self._file = source
            self._owned = False
        self.size = _regular_file_size(self._file)
        self.chunk_size = chunk_size
        # From a pipe (a live capture), what is there now: not a megabyte's wait.
        read1 = getattr(self._file, "read1", None)
        self._read = read1 if self.size is None and read1 is not None else self._file.read
        self.counts = CaptureCounts()
        self.link_types: set = set()
        self._buf = b""
        self._base = 0            # file offset of _buf[0]
        head = self._read_at_least(4)
        if len(head) < 4:
            self.close()
            raise CaptureError(f"{self.name}: not a pcap or pcapng file (only {len(head)} bytes)")
        magic = _LE_U32.unpack_from(head)[0]
        if magic == PCAPNG_SHB:
            self.format = "pcapng"
        elif magic in (PCAP_MAGIC_US, PCAP_MAGIC_NS) or \
                _BE_U32.unpack_from(head)[0] in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
            self.format = "pcap"
        else:
            self.close()
            raise CaptureError(f"{self.name}: not a pcap or pcapng file "
                               f"(starts with {bytes(head[:4]).hex()})", 0)

    @property
    def bytes_read(self) -> int:
        return self._base + len(self._buf)

    def close(self) -> None:
        if self._owned:
            self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __iter__(self):
        return self._pcapng() if self.format == "pcapng" else self._pcap()

    # -- buffer ---------------------------------------------------------------
    def _read_at_least(self, n: int) -> bytes:
        """Bytes from the file, at least ``n`` unless the file ends first."""
        self._buf = self._read_more(n)
        return self._buf

    def _refill(self, buf: bytes, pos: int, need: int) -> bytes:
        """A buffer starting at file offset ``base + pos`` holding at least
        ``need`` bytes, or all the file has left."""
        rest = buf[pos:]
        self._base += pos
        self._buf = rest
        more = self._read_more(need - len(rest))
        buf = rest + more if rest else more
        self._buf = buf
        return buf

    def _read_more(self, n: int) -> bytes:
        parts = []
        got = 0
        while got < n:
            chunk = self._read(max(self.chunk_size, n - got))
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    def _check_claim(self, pos: int, length: int, what: str, frame) -> None:
        """A record/block of ``length`` bytes at ``pos``: within the limit and the file."""
        offset = self._base + pos
        if length > MAX_RECORD_SIZE:
            raise CaptureError(f"{what} claims {length} bytes, more than the "
                               f"{MAX_RECORD_SIZE} a record may have", offset, frame)
        if self.size is not None and offset + length > self.size:
            raise CaptureTruncatedError(f"{what} claims {length} bytes but the file has "
                                        f"{self.size - offset} left", offset, frame)

    # -- pcap -----------------------------------------------------------------
    def _pcap(self):
        buf = self._buf
        if len(buf) < 24:
            buf = self._refill(buf, 0, 24)
            if len(buf) < 24:
                raise CaptureTruncatedError(f"pcap file header cut at {len(buf)} bytes", 0)
        little = _LE_U32.unpack_from(buf)[0] in (PCAP_MAGIC_US, PCAP_MAGIC_NS)
        e = "<" if little else ">"
        magic, major, _minor, _zone, _sigfigs, _snaplen, network = \
            struct.unpack_from(e + "IHHiIII", buf)
        frac_ns = 1 if magic == PCAP_MAGIC_NS else 1000
        if major != 2:
            raise CaptureError(f"pcap version {major} (only 2 is known)", 4)
        # The low 16 bits name the link type; the high ones carry FCS information.
        link = network & 0xFFFF
        self._check_link(link, None)
        record = struct.Struct(e + "IIII").unpack_from
        segment = _segment
        counts = self.counts
        pos = 24
        blen = len(buf)
        frame = 0
        walk = _walk_pcap if self._walk else None
        while True:
            if walk is not None:
                segments, pos, frame, fragments, cut = walk(buf, pos, link, little, frac_ns,
                                                            frame)
                yield from self._walked(segments, fragments, cut)
            if pos + 16 > blen:
                buf = self._refill(buf, pos, 16)
                pos, blen = 0, len(buf)
                if blen == 0:
                    counts.frames = frame
                    return
                if blen < 16:
                    raise CaptureTruncatedError(f"record header cut at {blen} bytes",
                                                self._base, frame + 1)
            ts_sec, ts_frac, incl, _orig = record(buf, pos)
            start = pos + 16
            end = start + incl
            frame += 1
            if end > blen:
                self._check_claim(pos, 16 + incl, "record", frame)
                buf = self._refill(buf, pos, 16 + incl)
                pos, blen = 0, len(buf)
                start, end = 16, 16 + incl
                if end > blen:
                    raise CaptureTruncatedError(f"record claims {incl} bytes of packet but "
                                                f"the file has {blen - 16} left",
                                                self._base, frame)
            seg = segment(link, buf, start, end, frame, ts_sec * 1_000_000_000 + ts_frac * frac_ns,
                          counts)
            pos = end
            if seg is not None:
                counts.frames = frame
                yield seg

    def _walked(self, segments: list, fragments: int, cut: int) -> list:
        """The segments of a C walk, what it skipped counted."""
        counts = self.counts
        counts.ip_fragments += fragments
        counts.truncated_headers += cut
        if segments:
            counts.frames = segments[-1][0]
        return segments

    def _check_link(self, link: int, offset) -> None:
        if link not in LINK_TYPES:
            raise CaptureError(f"link type {link} is not read (known: "
                               f"{', '.join(sorted(set(LINK_TYPES.values())))})", offset)
        self.link_types.add(link)

    # -- pcapng ---------------------------------------------------------------
    def _pcapng(self):
        segment = _segment
        counts = self.counts
        buf = self._buf
        pos = 0
        blen = len(buf)
        frame = 0
        u32 = _LE_U32.unpack_from
        u32x2 = struct.Struct("<II").unpack_from   # (the section header's type reads alike)
        epb = opb = None
        interfaces: list = []
        walk = _walk_pcapng if self._walk else None
        while True:
            if walk is not None and epb is not None:
                segments, pos, frame, fragments, cut = walk(buf, pos, e == "<", frame,
                                                            interfaces)
                yield from self._walked(segments, fragments, cut)
            if pos + 12 > blen:
                buf = self._refill(buf, pos, 12)
                pos, blen = 0, len(buf)
                if blen == 0:
                    counts.frames = frame
                    return
                if blen < 12:
                    raise CaptureTruncatedError(f"block header cut at {blen} bytes", self._base)
            btype, length = u32x2(buf, pos)
            if btype == PCAPNG_SHB:
                bom = _LE_U32.unpack_from(buf, pos + 8)[0]
                if bom == PCAPNG_BYTE_ORDER_MAGIC:
                    e = "<"
                elif _BE_U32.unpack_from(buf, pos + 8)[0] == PCAPNG_BYTE_ORDER_MAGIC:
                    e = ">"
                else:
                    raise CaptureError(f"section header with byte-order magic "
                                       f"{bytes(buf[pos + 8:pos + 12]).hex()}",
                                       self._base + pos)
                u32 = struct.Struct(e + "I").unpack_from
                u32x2 = struct.Struct(e + "II").unpack_from
                epb = struct.Struct(e + "IIIII").unpack_from
                opb = struct.Struct(e + "HHIIII").unpack_from
                interfaces = []
                length = u32(buf, pos + 4)[0]
            elif epb is None:
                raise CaptureError("pcapng file without a section header first",
                                   self._base + pos)
            end = pos + length
            if length < 12 or length & 3 or end > blen:
                number = frame + 1 if btype in (BLOCK_EPB, BLOCK_SPB, BLOCK_OPB) else None
                if length < 12 or length & 3:
                    raise CaptureError(f"block of type {btype:#x} with length {length} (not "
                                       "a multiple of 4 of at least 12)", self._base + pos,
                                       number)
                self._check_claim(pos, length, f"block of type {btype:#x}", number)
                buf = self._refill(buf, pos, length)
                pos, blen, end = 0, len(buf), length
                if end > blen:
                    raise CaptureTruncatedError(f"block of type {btype:#x} claims {length} "
                                                f"bytes but the file has {blen} left",
                                                self._base, number)
            if u32(buf, end - 4)[0] != length:
                number = frame + 1 if btype in (BLOCK_EPB, BLOCK_SPB, BLOCK_OPB) else None
                raise CaptureError(f"block of type {btype:#x}: trailing length "
                                   f"{u32(buf, end - 4)[0]} differs from {length}",
                                   self._base + pos, number)
            if btype == BLOCK_EPB:
                frame += 1
                if length < 32:
                    raise CaptureError("enhanced packet block too short", self._base + pos, frame)
                iface, ts_high, ts_low, cap, _orig = epb(buf, pos + 8)
                start = pos + 28
                ts_units = ts_high << 32 | ts_low
            elif btype == BLOCK_SPB:
                frame += 1
                if length < 16:
                    raise CaptureError("simple packet block too short", self._base + pos, frame)
                iface, ts_units = 0, None
                start = pos + 12
                cap = min(u32(buf, pos + 8)[0], end - 4 - start)
            elif btype == BLOCK_OPB:
                frame += 1
                if length < 32:
                    raise CaptureError("packet block too short", self._base + pos, frame)
                iface, _drops, ts_high, ts_low, cap, _orig = opb(buf, pos + 8)
                start = pos + 28
                ts_units = ts_high << 32 | ts_low
            else:
                if btype == BLOCK_IDB:
                    interfaces.append(self._interface(buf, pos, end, e))
                elif btype == PCAPNG_SHB:
                    major = struct.unpack_from(e + "H", buf, pos + 12)[0] if length >= 16 else 0
                    if major != 1:
                        raise CaptureError(f"pcapng version {major} (only 1 is known)",
                                           self._base + pos)
                pos = end
                continue
            if start + cap > end - 4:
                raise CaptureError(f"packet block holds {end - 4 - start} bytes of packet, "
                                   f"claims {cap}", self._base + pos, frame)
            if iface >= len(interfaces):
                raise CaptureError(f"packet on interface {iface}, but the section describes "
                                   f"{len(interfaces)}", self._base + pos, frame)
            link, snaplen, mul, div, offset_ns = interfaces[iface]
            if ts_units is None:                      # simple packet block: no timestamp
                ts = 0
                if snaplen:
                    cap = min(cap, snaplen)
            else:
                ts = ts_units * mul
                if div != 1:
                    ts //= div
                ts += offset_ns
            seg = segment(link, buf, start, start + cap, frame, ts, counts)
            pos = end
            if seg is not None:
                counts.frames = frame
                yield seg

    def _interface(self, buf: bytes, pos: int, end: int, e: str) -> tuple:
        """(link type, snap length, ns multiplier, divisor, offset in ns) of an IDB."""
        if end - pos < 20:
            raise CaptureError("interface description block too short", self._base + pos)
        link, _reserved, snaplen = struct.unpack_from(e + "HHI", buf, pos + 8)
        self._check_link(link, self._base + pos)
        resolution = 1_000_000
        offset_s = 0
        p = pos + 16
        limit = end - 4
        option = struct.Struct(e + "HH").unpack_from
        while p + 4 <= limit:
            code, size = option(buf, p)
            p += 4
            if code == 0:
                break
            if p + size > limit:
                raise CaptureError(f"interface option {code} of {size} bytes overruns its block",
                                   self._base + pos)
            if code == OPTION_TSRESOL and size >= 1:
                value = buf[p]
                resolution = 2 ** (value & 0x7F) if value & 0x80 else 10 ** value
            elif code == OPTION_TSOFFSET and size >= 8:
                offset_s = struct.unpack_from(e + "q", buf, p)[0]
            p += size + (-size & 3)
        g = gcd(1_000_000_000, resolution)
        return link, snaplen, 1_000_000_000 // g, resolution // g, offset_s * 1_000_000_000


def _regular_file_size(f) -> int | None:
    try:
        st = os.fstat(f.fileno())
    except (OSError, AttributeError, io.UnsupportedOperation):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _segment(link: int, b: bytes, p: int, end: int, frame: int, ts: int, counts):
    """The TCP segment in the frame ``b[p:end]`` as the reader's tuple, or None."""
    if link == LINKTYPE_ETHERNET:
        if end - p < 14:
            return None
        ethertype = b[p + 12] << 8 | b[p + 13]
        p += 14
        while ethertype in _VLAN_ETHERTYPES:
            if end - p < 4:
                return None
            ethertype = b[p + 2] << 8 | b[p + 3]
            p += 4
        version = 4 if ethertype == ETHERTYPE_IPV4 else 6 if ethertype == ETHERTYPE_IPV6 else 0
    elif link == LINKTYPE_LINUX_SLL or link == LINKTYPE_LINUX_SLL2:
        if link == LINKTYPE_LINUX_SLL:
            if end - p < 16:
                return None
            ethertype = b[p + 14] << 8 | b[p + 15]
            p += 16
        else:
            if end - p < 20:
                return None
            ethertype = b[p] << 8 | b[p + 1]
            p += 20
        while ethertype in _VLAN_ETHERTYPES:
            if end - p < 4:
                return None
            ethertype = b[p + 2] << 8 | b[p + 3]
            p += 4
        version = 4 if ethertype == ETHERTYPE_IPV4 else 6 if ethertype == ETHERTYPE_IPV6 else 0
    elif link == LINKTYPE_NULL or link == LINKTYPE_LOOP:
        if end - p < 4:
            return None
        family = _BE_U32.unpack_from(b, p)[0]
        if link == LINKTYPE_NULL and family > 0xFFFF:
            family = _LE_U32.unpack_from(b, p)[0]      # written in the capturer's byte order
        p += 4
        version = 4 if family == _AF_INET else 6 if family in _AF_INET6 else 0
    else:                                               # raw IP
        if end - p < 1:
            return None
        version = b[p] >> 4
    if version == 4:
        if end - p < 20:
            counts.truncated_headers += 1
            return None
        vihl, total, fragment, protocol, src, dst = _IPV4_HEADER(b, p)
        ihl = (vihl & 15) * 4
        if vihl >> 4 != 4 or ihl < 20 or protocol != _TCP:
            return None
        if fragment & 0x3FFF:                        # more fragments, or not the first
            counts.ip_fragments += 1
            return None
        # The datagram ends at its total length (Ethernet pads short frames);
        # 0 is what segmentation offload leaves there.
        ip_end = p + total if total and p + total < end else end
        t = p + ihl
    elif version == 6:
        if end - p < 40 or b[p] >> 4 != 6:
            counts.truncated_headers += end - p < 40
            return None
        plen = b[p + 4] << 8 | b[p + 5]
        ip_end = p + 40 + plen if plen and p + 40 + plen < end else end
        next_header = b[p + 6]
        src = b[p + 8:p + 24]
        dst = b[p + 24:p + 40]
        t = p + 40
        while next_header != _TCP:
            if t + 8 > ip_end:
                return None
            if next_header in _IPV6_SKIPPED_HEADERS:
                size = (b[t + 1] + 1) * 8
            elif next_header == _IPV6_FRAGMENT:
                if _U16.unpack_from(b, t + 2)[0] & 0xFFF9:   # offset or more fragments
                    counts.ip_fragments += 1
                    return None
                size = 8
            elif next_header == _IPV6_AH:
                size = (b[t + 1] + 2) * 4
            else:
                return None
            next_header = b[t]
            t += size
    else:
        return None
    if t + 20 > ip_end:
        counts.truncated_headers += 1
        return None
    sport, dport, seq, ack, off_flags = _TCP_HEADER.unpack_from(b, t)
    data = t + (off_flags >> 12) * 4
    if data > ip_end or data < t + 20:
        counts.truncated_headers += 1
        return None
    return (frame, ts, src, sport, dst, dport, seq, ack, off_flags & 0x1FF, b[data:ip_end])


def read_tcp_segments(path) -> list[TcpSegment]:
    """Every TCP segment of a capture, named (small captures: tests, seeds)."""
    with CaptureReader(path) as reader:
        return [TcpSegment(*seg) for seg in reader]
