"""An asyncio transport over a non-blocking :class:`ssl.SSLSocket`: the ORB's
TLS connections, client side (:func:`pycdr.orb.tls.open_connection`) and server
side (:class:`TLSListener`, the server's TLS port).

asyncio's own TLS (``create_connection(ssl=...)``, asyncio.sslproto) runs
OpenSSL over memory BIOs and moves every record through Python: the socket's
bytes into a buffer, into the incoming BIO, out of OpenSSL into the
protocol's buffer; and back the same way when writing, with two reads (the
second failing with SSLWantReadError) and two outgoing flushes per message.
Here OpenSSL reads and writes the socket itself: one ``recv_into`` straight
into the protocol's buffer (:class:`asyncio.BufferedProtocol`) and one
``send`` per message.  For the small messages of a twoway call that is most
of what TLS costs the reference ORB (benchmarks/bench_param_tls.py).

Flow control and closing behave as asyncio's socket transports: the protocol
is paused above the high-water mark of unsent bytes and resumed below the
low one; ``close`` sends what is buffered first; ``connection_lost`` comes
once, from the loop.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import socket
import ssl

log = logging.getLogger("pycdr.orb.server")

_HIGH_WATER = 64 * 1024
# Connections accepted per wake of the listening socket, and the pause after a
# failed accept (out of descriptors: accepting again at once would spin).
_ACCEPTS_PER_WAKE = 16
_ACCEPT_RETRY = 0.5


async def handshake(loop: asyncio.AbstractEventLoop, sock: ssl.SSLSocket) -> None:
    """Complete the TLS handshake of the non-blocking ``sock`` (raises ssl's errors)."""
    fd = sock.fileno()
    while True:
        try:
            sock.do_handshake()
            return
        except ssl.SSLWantReadError:
            wait, add, remove = loop.create_future(), loop.add_reader, loop.remove_reader
        except ssl.SSLWantWriteError:
            wait, add, remove = loop.create_future(), loop.add_writer, loop.remove_writer
        add(fd, lambda w=wait: w.done() or w.set_result(None))
        try:
            await wait
        finally:
            remove(fd)


def _address(get):
    """The socket's address, or None: a peer may close right after the handshake (a
    server refusing our certificate), its alert still to be read."""
    try:
        return get()
    except OSError:
        return None


class TLSSocketTransport(asyncio.Transport):
    """A connected, handshaken non-blocking SSLSocket as a transport for a
    :class:`asyncio.BufferedProtocol`."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: ssl.SSLSocket,
                 protocol: asyncio.BufferedProtocol):
        super().__init__({"socket": sock, "ssl_object": sock,
                          "peername": _address(sock.getpeername),
                          "sockname": _address(sock.getsockname),
                          "peercert": sock.getpeercert(), "cipher": sock.cipher()})
        self._loop = loop
        self._sock = sock
        self._fd = sock.fileno()
        self._protocol = protocol
        self._backlog: collections.deque = collections.deque()   # bytes not yet sent
        self._backlog_size = 0
        self._high, self._low = _HIGH_WATER, _HIGH_WATER // 4
        self._writing_paused = False
        self._broken = False        # a write failed: its report is on its way
        self._reading = True
        self._closing = False
        self._lost = False
        protocol.connection_made(self)
        if not self._lost:
            loop.add_reader(self._fd, self._read_ready)

    # --- reading -------------------------------------------------------------------
    def _read_ready(self) -> None:
        sock, protocol = self._sock, self._protocol
        # (OpenSSL may hold decrypted bytes past one read: take them all now, the
        # socket will not wake the loop for them)
        while self._reading and not self._lost:
            buf = protocol.get_buffer(-1)
            try:
                n = sock.recv_into(buf)
            except (ssl.SSLWantReadError, BlockingIOError, InterruptedError):
                return
            except ssl.SSLWantWriteError:
                return          # (a key update waits for the socket; the next read retries)
            except ssl.SSLEOFError:
                n = 0           # closed without close_notify: an end all the same, as asyncio's
            except (OSError, ssl.SSLError) as e:
                self._fail(e)
                return
            if n == 0:
                self._eof()
                return
            protocol.buffer_updated(n)
            if not sock.pending():
                return

    def _eof(self) -> None:
        self._loop.remove_reader(self._fd)
        keep_open = self._protocol.eof_received()
        if not keep_open:
            self.close()

    def pause_reading(self) -> None:
        if self._reading and not self._lost:
            self._reading = False
            self._loop.remove_reader(self._fd)

    def resume_reading(self) -> None:
        if not self._reading and not self._lost and not self._closing:
            self._reading = True
            self._loop.add_reader(self._fd, self._read_ready)
            if self._sock.pending():
                self._loop.call_soon(self._read_ready)

    def is_reading(self) -> bool:
        return self._reading and not self._lost

    # --- writing -------------------------------------------------------------------
    def write(self, data) -> None:
        if self._lost or self._closing or self._broken:
            return
        if not data:
            return
        if not self._backlog:
            try:
                self._sock.send(data)       # the whole message (no partial-write mode)
                return
            except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError,
                    InterruptedError):
                self._loop.add_writer(self._fd, self._write_ready)
            except (OSError, ssl.SSLError) as e:
                # (from the loop, as asyncio's transports report it: the writer learns
                # of it from connection_lost, after what the peer said is read)
                self._broken = True
                self._loop.call_soon(self._write_failed, e)
                return
        # OpenSSL retries a write that wanted the socket with the same bytes: the
        # backlog keeps messages whole, the first one is what was tried.
        self._backlog.append(bytes(data))
        self._backlog_size += len(data)
        if not self._writing_paused and self._backlog_size > self._high:
            self._writing_paused = True
            self._protocol.pause_writing()

    def _write_ready(self) -> None:
        backlog = self._backlog
        while backlog:
            try:
                self._sock.send(backlog[0])
            except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError,
                    InterruptedError):
                return
            except (OSError, ssl.SSLError) as e:
                self._write_failed(e)
                return
            self._backlog_size -= len(backlog.popleft())
        self._loop.remove_writer(self._fd)
        if self._writing_paused and self._backlog_size <= self._low:
            self._writing_paused = False
            self._protocol.resume_writing()
        if self._closing:
            self._lose(None)

    def _write_failed(self, e: BaseException) -> None:
        # A peer that refuses us sends an alert and closes: read it before the write's
        # error (EPIPE, a TLS EOF) hides why.
        self._read_ready()
        if self._lost:
            return
        if isinstance(e, ssl.SSLEOFError):
            self._eof()
        else:
            self._fail(e)

    def writelines(self, chunks) -> None:
        self.write(b"".join(chunks))

    def can_write_eof(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return self._backlog_size

    def get_write_buffer_limits(self) -> tuple:
        return self._low, self._high

    def set_write_buffer_limits(self, high=None, low=None) -> None:
        high = _HIGH_WATER if high is None else high
        self._high, self._low = high, high // 4 if low is None else low

    # --- closing -------------------------------------------------------------------
    def is_closing(self) -> bool:
        return self._closing or self._lost

    def close(self) -> None:
        if self._closing or self._lost:
            return
        self._closing = True
        if self._reading:
            self._reading = False
            self._loop.remove_reader(self._fd)
        if not self._backlog:
            self._lose(None)

    def abort(self) -> None:
        self._lose(None)

    def _fail(self, exc: BaseException) -> None:
        self._lose(exc)

    def _lose(self, exc) -> None:
        if self._lost:
            return
        self._lost = True
        self._loop.remove_reader(self._fd)
        self._loop.remove_writer(self._fd)
        self._backlog.clear()
        self._backlog_size = 0
        self._loop.call_soon(self._finish, exc)

    def _finish(self, exc) -> None:
        try:
            self._protocol.connection_lost(exc)
        finally:
            if exc is None:
                try:
                    self._sock.unwrap()     # close_notify, best effort (no wait for the peer's)
                except (OSError, ValueError):
                    pass
            self._sock.close()

    def get_protocol(self):
        return self._protocol

    def set_protocol(self, protocol) -> None:
        self._protocol = protocol


class TLSListener:
    """A listening socket whose connections get a TLS handshake (at most
    ``handshake_timeout`` seconds) and then a :class:`TLSSocketTransport` with a
    protocol from ``protocol_factory``: the ORB server's TLS port.  It has what the
    server uses of :class:`asyncio.Server`: ``sockets``, ``close``,
    ``serve_forever`` and ``wait_closed``.  A connection whose handshake fails or
    times out is closed without its protocol ever being made."""

    def __init__(self, loop: asyncio.AbstractEventLoop, protocol_factory, sock: socket.socket,
                 context: ssl.SSLContext, handshake_timeout: float):
        self._loop = loop
        self._factory = protocol_factory
        self._sock = sock
        self._context = context
        self._timeout = handshake_timeout
        self._handshakes: set = set()
        self._closed = loop.create_future()
        loop.add_reader(sock.fileno(), self._accept_ready)

    @property
    def sockets(self) -> list:
        return [self._sock]

    def _accept_ready(self) -> None:
        for _ in range(_ACCEPTS_PER_WAKE):
            try:
                conn, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:          # out of descriptors, ...: try again in a moment
                log.warning("TLS port: accept failed: %s", e)
                self._loop.remove_reader(self._sock.fileno())
                self._loop.call_later(_ACCEPT_RETRY, self._resume_accepting)
                return
            conn.setblocking(False)
            task = self._loop.create_task(self._start(conn))
            self._handshakes.add(task)
            task.add_done_callback(self._handshakes.discard)

    def _resume_accepting(self) -> None:
        if not self._closed.done():
            self._loop.add_reader(self._sock.fileno(), self._accept_ready)

    async def _start(self, conn: socket.socket) -> None:
        try:
            tls = self._context.wrap_socket(conn, server_side=True,
                                            do_handshake_on_connect=False)
        except (OSError, ValueError):
            conn.close()
            return
        try:
            await asyncio.wait_for(handshake(self._loop, tls), self._timeout)
        except (OSError, asyncio.TimeoutError) as e:
            log.debug("TLS handshake failed: %s", e)
            tls.close()
            return
        except asyncio.CancelledError:
            tls.close()
            raise
        TLSSocketTransport(self._loop, tls, self._factory())

    def close(self) -> None:
        if self._closed.done():
            return
        self._loop.remove_reader(self._sock.fileno())
        self._sock.close()
        for task in list(self._handshakes):
            task.cancel()
        self._closed.set_result(None)

    async def serve_forever(self) -> None:
        await asyncio.shield(self._closed)

    async def wait_closed(self) -> None:
        await asyncio.shield(self._closed)


async def start_tls_server(protocol_factory, host: str, port: int, context: ssl.SSLContext, *,
                           backlog: int = 100, handshake_timeout: float = 60.0) -> TLSListener:
    """Listen on host:port (the first address it resolves to; port 0: a free one)."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return TLSListener(loop, protocol_factory, sock, context, handshake_timeout)
