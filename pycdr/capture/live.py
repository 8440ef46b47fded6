"""Live capture: packets of an interface through libpcap, as a pcap stream for
CaptureReader.

    with LiveCapture("lo", "tcp port 2809") as live:
        for segment in CaptureReader(live.stream):
            ...

libpcap is called in this process (``ctypes`` over the system's libpcap:
Debian's ``libpcap0.8``, ``libpcap.so.0.8``), no helper program between: each
packet ``pcap_next_ex`` hands over is written as a pcap record (nanosecond
timestamps where libpcap gives them) to ``stream``, read by the same
streaming reader as files -- so a live capture decodes exactly as the file it
would save.  ``save`` also writes every byte of that stream to a file as it
goes (``pycdr pcap -w``: a pcap file).  Capturing needs rights (root, or
CAP_NET_RAW and CAP_NET_ADMIN on the Python interpreter); without them
libpcap's refusal is raised as a :class:`~pycdr.errors.CaptureError` saying so.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import select
import struct
import time

from ..errors import CaptureError

CAPTURE_RIGHTS = ("capturing needs rights: run as root, or give the Python interpreter "
                  "CAP_NET_RAW and CAP_NET_ADMIN (setcap cap_net_raw,cap_net_admin+eip)")

SNAPLEN = 262144
# The kernel's buffer of packets not read yet.  libpcap's default (2 MB) holds only a few
# frames of SNAPLEN bytes each: a burst on loopback (a client's calls back to back, a
# 20 KB message) overflowed it and the packets after were dropped.
BUFFER_SIZE = 64 << 20
# Immediate mode is off: on Linux it makes libpcap use a ring of fixed slots, each the
# size of the largest packet (64 KB on loopback), so 64 MB held about 500 packets (half
# that on loopback, where each packet is seen twice) and the capture dropped packets
# at 1,000 calls a second as soon as the reader paused for a tenth of a second.  Without
# it packets are packed one after the other in blocks (TPACKET_V3): the same 64 MB holds
# hundreds of thousands of small ones.  A block is handed over when it is full or when
# READ_TIMEOUT_MS has passed since its first packet: a packet waits that long at most.
READ_TIMEOUT_MS = 50
# Seconds a capture waits for packets before it looks at its duration (and
# Ctrl-C) again.  The handle is non-blocking and waited on with select().
WAIT_SECONDS = 0.1
# Seconds the end of a capture (Ctrl-C, --duration) waits for the packets captured before
# it that libpcap has not handed over yet (a block is handed over READ_TIMEOUT_MS after
# its first packet).
FLUSH_SECONDS = 2 * READ_TIMEOUT_MS / 1000
# Seconds between two readings of libpcap's counters (``dropped``).
STATS_SECONDS = 1.0
# pcap_activate's results (pcap/pcap.h)
PCAP_ERROR = -1
PCAP_ERROR_NO_SUCH_DEVICE = -5
PCAP_ERROR_PERM_DENIED = -8
PCAP_ERROR_PROMISC_PERM_DENIED = -11
PCAP_TSTAMP_PRECISION_NANO = 1
PCAP_NETMASK_UNKNOWN = 0xFFFFFFFF
PCAP_MAGIC_NS = 0xA1B23C4D
PCAP_MAGIC_US = 0xA1B2C3D4
_RECORD = struct.Struct("<IIII")


class _Timeval(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_usec", ctypes.c_long)]


class _PacketHeader(ctypes.Structure):
    _fields_ = [("ts", _Timeval), ("caplen", ctypes.c_uint32), ("len", ctypes.c_uint32)]


class _PcapStat(ctypes.Structure):
    _fields_ = [("ps_recv", ctypes.c_uint), ("ps_drop", ctypes.c_uint),
                ("ps_ifdrop", ctypes.c_uint)]


class _BpfProgram(ctypes.Structure):
    _fields_ = [("bf_len", ctypes.c_uint), ("bf_insns", ctypes.c_void_p)]


_libpcap = None


def libpcap():
    """The system's libpcap, its functions typed (loaded once)."""
    global _libpcap
    if _libpcap is None:
        name = ctypes.util.find_library("pcap") or "libpcap.so.0.8"
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            raise CaptureError("live capture needs libpcap (Debian/Ubuntu: libpcap0.8)") \
                from None
        p = ctypes.c_void_p
        for fn, restype, argtypes in [
                ("pcap_create", p, [ctypes.c_char_p, ctypes.c_char_p]),
                ("pcap_set_snaplen", ctypes.c_int, [p, ctypes.c_int]),
                ("pcap_set_timeout", ctypes.c_int, [p, ctypes.c_int]),
                ("pcap_set_buffer_size", ctypes.c_int, [p, ctypes.c_int]),
                ("pcap_set_tstamp_precision", ctypes.c_int, [p, ctypes.c_int]),
                ("pcap_get_tstamp_precision", ctypes.c_int, [p]),
                ("pcap_activate", ctypes.c_int, [p]),
                ("pcap_setnonblock", ctypes.c_int, [p, ctypes.c_int, ctypes.c_char_p]),
                ("pcap_get_selectable_fd", ctypes.c_int, [p]),
                ("pcap_datalink", ctypes.c_int, [p]),
                ("pcap_compile", ctypes.c_int,
                 [p, ctypes.POINTER(_BpfProgram), ctypes.c_char_p, ctypes.c_int, ctypes.c_uint32]),
                ("pcap_setfilter", ctypes.c_int, [p, ctypes.POINTER(_BpfProgram)]),
                ("pcap_freecode", None, [ctypes.POINTER(_BpfProgram)]),
                ("pcap_next_ex", ctypes.c_int,
                 [p, ctypes.POINTER(ctypes.POINTER(_PacketHeader)),
                  ctypes.POINTER(ctypes.POINTER(ctypes.c_ubyte))]),
                ("pcap_stats", ctypes.c_int, [p, ctypes.POINTER(_PcapStat)]),
                ("pcap_geterr", ctypes.c_char_p, [p]),
                ("pcap_statustostr", ctypes.c_char_p, [ctypes.c_int]),
                ("pcap_close", None, [p])]:
            f = getattr(lib, fn)
            f.restype = restype
            f.argtypes = argtypes
        _libpcap = lib
    return _libpcap


class _PacketStream:
    """The packets of a libpcap handle as the bytes of a pcap file: what
    CaptureReader reads (``read1``), also written to ``save``."""

    def __init__(self, capture: LiveCapture, header: bytes, save):
        self.name = f"<live {capture.interface}>"
        self._capture = capture
        self._pending = header
        self._save = save

    def read1(self, n: int = -1) -> bytes:
        data = self._pending or self._capture._next_packets()
        self._pending = b""
        if data and self._save is not None:
            self._save.write(data)
        return data

    read = read1


class LiveCapture:
    """libpcap capturing ``interface`` (BPF ``bpf``; ``count`` packets or
    ``duration`` seconds at most) into ``stream``, a binary stream of pcap."""

    def __init__(self, interface: str, bpf: str | None = None, *, count: int | None = None,
                 duration: float | None = None, save: str | None = None):
        lib = libpcap()
        self.interface = interface
        self.count = count
        self.packets = 0
        # Packets libpcap dropped (its pcap_stats: no room in the buffer, or dropped by
        # the interface), read in the capturing thread every STATS_SECONDS and at the
        # end: a libpcap handle is not to be used from two threads.
        self.dropped = 0
        self._stats_at = 0.0
        self._stat = _PcapStat()
        self._deadline = None if duration is None else time.monotonic() + duration
        self._stopped = False
        self._stop_asked = False
        # When the capture ends (stop() or the duration): until then the packets libpcap
        # holds are read, as the ones of a block not handed over yet.
        self._ending_at: float | None = None
        self._error: CaptureError | None = None
        errbuf = ctypes.create_string_buffer(512)
        handle = lib.pcap_create(interface.encode(), errbuf)
        if not handle:
            said = errbuf.value.decode(errors="replace")
            raise CaptureError(f"live capture on {interface}: {said}")
        self._handle = handle
        self._save = None
        try:
            lib.pcap_set_snaplen(handle, SNAPLEN)
            lib.pcap_set_timeout(handle, READ_TIMEOUT_MS)
            lib.pcap_set_buffer_size(handle, BUFFER_SIZE)
            lib.pcap_set_tstamp_precision(handle, PCAP_TSTAMP_PRECISION_NANO)
            status = lib.pcap_activate(handle)
            if status < 0:
                raise self._activate_error(status)
            if lib.pcap_setnonblock(handle, 1, errbuf) < 0:
                raise CaptureError(f"live capture on {interface}: "
                                   f"{errbuf.value.decode(errors='replace')}")
            self._fd = lib.pcap_get_selectable_fd(handle)
            if bpf:
                program = _BpfProgram()
                if lib.pcap_compile(handle, ctypes.byref(program), bpf.encode(), 1,
                                    PCAP_NETMASK_UNKNOWN) < 0:
                    raise CaptureError(f"capture filter {bpf!r}: {self._libpcap_error()}")
                try:
                    if lib.pcap_setfilter(handle, ctypes.byref(program)) < 0:
                        raise CaptureError(f"capture filter {bpf!r}: {self._libpcap_error()}")
                finally:
                    lib.pcap_freecode(ctypes.byref(program))
            # (in nanosecond precision, a packet's ts.tv_usec holds nanoseconds)
            nano = lib.pcap_get_tstamp_precision(handle) == PCAP_TSTAMP_PRECISION_NANO
            header = struct.pack("<IHHiIII", PCAP_MAGIC_NS if nano else PCAP_MAGIC_US, 2, 4, 0,
                                 0, SNAPLEN, lib.pcap_datalink(handle))
            self._save = open(save, "wb") if save else None
        except BaseException:
            self.close()
            raise
        self.stream = _PacketStream(self, header, self._save)
        self._header = ctypes.POINTER(_PacketHeader)()
        self._data = ctypes.POINTER(ctypes.c_ubyte)()

    def _libpcap_error(self) -> str:
        return libpcap().pcap_geterr(self._handle).decode(errors="replace")

    def _activate_error(self, status: int) -> CaptureError:
        lib = libpcap()
        said = self._libpcap_error() if status == PCAP_ERROR else ""
        said = said or lib.pcap_statustostr(status).decode(errors="replace")
        if status in (PCAP_ERROR_PERM_DENIED, PCAP_ERROR_PROMISC_PERM_DENIED):
            return CaptureError(f"live capture on {self.interface}: {said}; {CAPTURE_RIGHTS}")
        if status == PCAP_ERROR_NO_SUCH_DEVICE:
            return CaptureError(f"live capture on {self.interface}: no such interface ({said})")
        return CaptureError(f"live capture on {self.interface}: {said}")

    def _next_packets(self) -> bytes:
        """The next packets as pcap records (at least one), or b"" at the end."""
        lib = libpcap()
        header, data = self._header, self._data
        records = []
        if time.monotonic() - self._stats_at >= STATS_SECONDS:
            self._read_stats()
        while not self._stopped:
            if self.count is not None and self.packets >= self.count:
                break
            now = time.monotonic()
            if self._ending_at is None and (self._stop_asked or (
                    self._deadline is not None and now >= self._deadline)):
                self._ending_at = now + FLUSH_SECONDS
            elif self._ending_at is not None and now >= self._ending_at:
                self._stopped = True
                break
            got = lib.pcap_next_ex(self._handle, ctypes.byref(header), ctypes.byref(data))
            if got == 1:
                h = header.contents
                records.append(_RECORD.pack(h.ts.tv_sec & 0xFFFFFFFF, h.ts.tv_usec, h.caplen,
                                            h.len))
                records.append(ctypes.string_at(data, h.caplen))
                self.packets += 1
                if len(records) >= 64:
                    break
            elif got == 0:                                   # none waiting
                if records:
                    break
                wait = WAIT_SECONDS if self._ending_at is None else \
                    max(0.0, min(WAIT_SECONDS, self._ending_at - now))
                if self._fd >= 0:
                    select.select([self._fd], [], [], wait)
                else:
                    time.sleep(wait / 10)
            else:
                if got != -2:                                # -2: pcap_breakloop
                    self._error = CaptureError(f"live capture on {self.interface}: "
                                               f"{self._libpcap_error()}")
                self._stopped = True
        return b"".join(records)

    def _read_stats(self) -> None:
        self._stats_at = time.monotonic()
        stat = self._stat
        if self._handle and libpcap().pcap_stats(self._handle, ctypes.byref(stat)) == 0:
            self.dropped = stat.ps_drop + stat.ps_ifdrop

    def failure(self) -> CaptureError | None:
        """Why the capture stopped, once it has (None when it ended normally)."""
        return self._error

    def stop(self) -> None:
        """End the capture: the stream ends after the packets captured so far (those
        libpcap still holds are read first, FLUSH_SECONDS at most)."""
        self._stop_asked = True

    def close(self) -> None:
        self._stopped = True
        if self._handle:
            self._read_stats()
            libpcap().pcap_close(self._handle)
            self._handle = None
        if self._save is not None:
            self._save.close()
            self._save = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
