"""Raw connections: pre-built bytes out, bounded reads in (ORB.raw_connection, the
probes and the conformance suite's hand-made messages)."""

from __future__ import annotations

import asyncio
import ssl
import time
from dataclasses import dataclass, field

from ..errors import PycdrError
from ..giop.header import HEADER_SIZE, parse_header
from .tls import DEFAULT_TLS, Endpoint, TLSOptions, open_connection


@dataclass
class RawRead:
    """What a bounded read got."""
    data: bytes                      # every byte read
    messages: list = field(default_factory=list)   # complete GIOP messages framed from data
    closed: bool = False             # the peer closed (EOF or reset)
    timed_out: bool = False          # the time bound ran out first
    overflow: bool = False           # the byte bound ran out first
    not_giop: bool = False           # the bytes do not frame as GIOP (bad header)
    elapsed: float = 0.0


class RawConnection:
    """A TCP connection for hand-made messages.  Every read is bounded in
    bytes and time, so a flood or a silent peer cannot hang the caller.
    ``orb``: the ORB (pycdr.orb.client.ORB) whose close() closes it, or None."""

    def __init__(self, orb, host: str, port: int, *, tls: bool = False,
                 tls_options: TLSOptions = DEFAULT_TLS):
        self.orb = orb
        self.host = host
        self.port = port
        self.endpoint = Endpoint(host, port, tls, "--tls" if tls else "IIOP profile")
        self.tls_options = tls_options
        self.reader = self.writer = None
        self._buffer = bytearray()     # read but not yet handed out as a message
        self.eof = False

    async def open(self, timeout: float = 5.0) -> "RawConnection":
        """Connect (TCP, then TLS for a TLS endpoint); TransportError names the step that
        failed."""
        loop = asyncio.get_running_loop()
        self.reader = asyncio.StreamReader(loop=loop)
        protocol = asyncio.StreamReaderProtocol(self.reader, loop=loop)
        transport, _ = await open_connection(loop, lambda: protocol, self.endpoint,
                                             self.tls_options, timeout=timeout)
        self.writer = asyncio.StreamWriter(transport, protocol, self.reader, loop)
        return self

    @property
    def ssl_object(self) -> ssl.SSLObject | None:
        """The TLS session (None on plain TCP)."""
        return self.writer.get_extra_info("ssl_object") if self.writer is not None else None

    async def send(self, data: bytes) -> bool:
        """Send ``data``; False if the peer has closed or reset the connection
        (an outcome to report, not an error of the caller)."""
        if self.writer.transport.is_closing():
            return False
        self.writer.write(data)
        try:
            await self.writer.drain()
        except (ConnectionError, OSError):
            return False
        return True

    async def send_in_pieces(self, pieces, delay: float = 0.0) -> bool:
        """Send ``pieces`` one write each (a message split at chosen offsets)."""
        for piece in pieces:
            if not await self.send(piece):
                return False
            if delay:
                await asyncio.sleep(delay)
        return True

    async def read_messages(self, count: int = 1, *, timeout: float = 2.0,
                            max_bytes: int = 1 << 20) -> RawRead:
        """Read until ``count`` complete GIOP messages, EOF, ``timeout`` seconds
        or ``max_bytes`` bytes, whichever comes first.  Bytes after the last
        whole message stay buffered for the next read."""
        return await self._read(lambda: _complete_messages(self._buffer) >= count,
                                timeout, max_bytes, count)

    async def read_until_closed(self, *, timeout: float = 2.0,
                                max_bytes: int = 1 << 20) -> RawRead:
        """Everything until the peer closes (bounded)."""
        return await self._read(lambda: False, timeout, max_bytes, None)

    async def _read(self, enough, timeout, max_bytes, count) -> RawRead:
        start = time.monotonic()
        deadline = start + timeout
        result = RawRead(b"")
        got = 0
        while not enough():
            if self.eof:
                result.closed = True
                break
            if got >= max_bytes:
                result.overflow = True
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                result.timed_out = True
                break
            try:
                chunk = await asyncio.wait_for(self.reader.read(min(65536, max_bytes - got)),
                                               remaining)
            except asyncio.TimeoutError:
                result.timed_out = True
                break
            except (ConnectionError, OSError):
                chunk = b""
            if not chunk:
                self.eof = True
                continue
            got += len(chunk)
            self._buffer += chunk
        result.elapsed = time.monotonic() - start
        messages, used, not_giop = _frame(self._buffer, count)
        result.messages = messages
        result.not_giop = not_giop
        if not_giop or result.closed or result.overflow or result.timed_out and count is None:
            used = len(self._buffer)
        result.data = bytes(self._buffer[:used])
        del self._buffer[:used]
        return result

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            try:
                await self.writer.wait_closed()
            except (ConnectionError, OSError):
                pass
            self.writer = None
        if self.orb is not None:
            self.orb._raw.discard(self)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc_info):
        await self.close()


def _complete_messages(buf) -> int:
    return len(_frame(buf, None)[0])


def _frame(buf, limit) -> tuple[list, int, bool]:
    """Complete messages at the start of ``buf`` (at most ``limit``), the
    bytes they use, and whether a header failed to parse."""
    messages, pos = [], 0
    while len(buf) - pos >= HEADER_SIZE and (limit is None or len(messages) < limit):
        try:
            header = parse_header(buf, pos)
        except PycdrError:
            return messages, pos, True
        if len(buf) - pos < header.total_size:
            break
        messages.append(bytes(buf[pos:pos + header.total_size]))
        pos += header.total_size
    return messages, pos, False
