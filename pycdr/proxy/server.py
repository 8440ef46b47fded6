"""The proxy's I/O: listening ports, upstream connections, timed writes (asyncio).

One listening port per upstream server: the target's, and one per ``--route``.
A reference to a routed server is rewritten to the port that relays to it, so a
client that uses it connects there and the proxy opens a connection to that
server (routing by port, not by object key: the object key reaches the server
unchanged, and an IOR rewritten once stays valid while the proxy runs).

Each accepted connection gets its own upstream connection, opened before the
client's bytes are read; when it cannot be opened the client's requests are
answered TRANSIENT (COMPLETED_NO), which is what its ORB would raise had it
failed to connect itself.  Writes to each side go through a queue that honours
delays and trickles; a side's reading stops while the other side's queue holds
more than ``max_queued`` bytes (and while its socket's send buffer is full), so
a slow reader slows its peer instead of growing the proxy's memory.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import struct
import time
from dataclasses import dataclass

from ..addressing.rewrite import address_text
from .core import CLIENT, SERVER, Close, ProxyCore, Send

log = logging.getLogger(__name__)
READ_SIZE = 256 * 1024
MAX_QUEUED = 4 << 20


@dataclass
class Listener:
    """A listening address and the upstream server it relays to; ``port`` 0 picks one
    (the chosen one is set by :meth:`Proxy.start`)."""
    host: str
    port: int
    upstream: tuple                 # (host, port)
    advertised: tuple | None = None  # (host, port) the rewritten references name
    server: object = None
    tls: bool = False               # the upstream speaks TLS (the proxy's upstream_ssl)


_DRAIN = object()        # queued after a direct write that filled the socket's buffer


class _Output:
    """The writes for one side, in order: written at once when nothing waits (no delay,
    no trickle, no earlier write pending), else queued for a task that sleeps and drains
    as each write asks."""

    def __init__(self, writer, record=None, max_queued: int = MAX_QUEUED, peak=None):
        self.writer = writer
        self.peak = peak                # fn(bytes queued) after each put, or None
        self.record = record            # fn(bytes) for what is written (the pcap), or None
        self.queue: asyncio.Queue = asyncio.Queue()
        self.queued = 0
        self.max_queued = max_queued
        self.room = asyncio.Event()
        self.room.set()
        self.done = False
        self.idle = True                # nothing queued or being written by the task
        self.task = asyncio.ensure_future(self._run())

    def put(self, item) -> None:
        if self.done:
            return
        writer = self.writer
        if self.idle and isinstance(item, Send) and writer is not None and not item.delay \
                and not item.interval:
            for piece in item.pieces:
                writer.write(piece)
                if self.record is not None:
                    self.record(piece)
            waiting = writer.transport.get_write_buffer_size()
            if self.peak is not None:
                self.peak(waiting)
            if waiting > self.max_queued:
                # the peer reads slowly: stop reading the other side until it drained
                self.room.clear()
                self.idle = False
                self.queue.put_nowait(_DRAIN)
            return
        self.idle = False
        if isinstance(item, Send):
            n = sum(map(len, item.pieces))
            self.queued += n
            if self.queued > self.max_queued:
                self.room.clear()
            if self.peak is not None:
                self.peak(self.queued)
        self.queue.put_nowait(item)

    async def _run(self) -> None:
        try:
            while True:
                if self.queue.empty():
                    self.idle = True
                item = await self.queue.get()
                if item is _DRAIN:
                    await self.writer.drain()
                    if self.queued <= self.max_queued // 2:
                        self.room.set()
                    continue
                if isinstance(item, Close):
                    self._close(item.abrupt)
                    return
                if self.writer is None:         # the upstream that never came
                    self._sent(item)
                    continue
                if item.delay:
                    await asyncio.sleep(item.delay)
                for i, piece in enumerate(item.pieces):
                    if item.interval and i:
                        await asyncio.sleep(item.interval)
                    self.writer.write(piece)
                    if self.record is not None:
                        self.record(piece)
                    if item.interval:
                        await self.writer.drain()
                await self.writer.drain()
                self._sent(item)
        except (OSError, asyncio.CancelledError):
            self._close(True)
        finally:
            self.done = True
            self.room.set()

    def _sent(self, item: Send) -> None:
        self.queued -= sum(map(len, item.pieces))
        if self.queued <= self.max_queued // 2:
            self.room.set()

    def _close(self, abrupt: bool) -> None:
        self.done = True
        w = self.writer
        if w is None:
            return
        if abrupt:
            sock = w.get_extra_info("socket")
            if sock is not None:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                    struct.pack("ii", 1, 0))
                except OSError:
                    pass
            w.transport.abort()
        else:
            w.close()


class Proxy:
    """``core``: the :class:`~pycdr.proxy.core.ProxyCore`; ``listeners``: where to listen
    and what each relays to; ``pcap``: a :class:`pycdr.capture.write.StreamPcapWriter`
    that records each client connection as its client saw it, or None."""

    def __init__(self, core: ProxyCore, listeners: list, *, pcap=None,
                 connect_timeout: float = 10.0, server_ssl=None, upstream_ssl=None,
                 max_queued: int = MAX_QUEUED, callbacks: bool = False,
                 max_routes: int = 64):
        self.core = core
        self.listeners = listeners
        self.pcap = pcap
        self.connect_timeout = connect_timeout
        self.server_ssl = server_ssl
        self.upstream_ssl = upstream_ssl
        self.max_queued = max_queued
        self.max_routes = max_routes        # listening ports in all (--callbacks adds)
        if callbacks:
            core.open_route = self.open_route
        self.tasks: set = set()
        self.queued_peak = 0            # the most bytes one side had waiting to be written

    def _peak(self, queued: int) -> None:
        if queued > self.queued_peak:
            self.queued_peak = queued

    async def start(self) -> None:
        for listener in self.listeners:
            listener.server = await asyncio.start_server(
                lambda r, w, lst=listener: self._accepted(r, w, lst), listener.host,
                listener.port, ssl=self.server_ssl, limit=READ_SIZE)
            host, port = listener.server.sockets[0].getsockname()[:2]
            listener.port = port
            if listener.advertised is None:
                shown = listener.host if listener.host not in ("", "0.0.0.0", "::") \
                    else socket.gethostname()
                listener.advertised = (shown, port)
        routes = self.core.rewriter.routes
        for listener in self.listeners:
            up_host, up_port = listener.upstream
            routes[(up_host.lower(), up_port)] = listener.advertised
            if listener.tls and self.server_ssl is not None:
                # A TLS-only profile (port 0, the TLS port in its components) moves whole:
                # its components' TLS port by the route above.
                routes.setdefault((up_host.lower(), 0), (listener.advertised[0], 0))

    def open_route(self, host: str, port: int) -> tuple | None:
        """A new listening port (on the first listener's host) relaying to host:port, for
        a reference a client passed (--callbacks): its advertised (host, port), or None
        past ``max_routes``."""
        if len(self.listeners) >= self.max_routes:
            return None
        first = self.listeners[0]
        family = socket.AF_INET6 if ":" in first.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((first.host, 0))
            sock.listen(128)
        except OSError:
            sock.close()
            return None
        listener = Listener(first.host, sock.getsockname()[1], (host, port))
        listener.advertised = (first.advertised[0], listener.port)
        self.listeners.append(listener)

        async def serve():
            listener.server = await asyncio.start_server(
                lambda r, w: self._accepted(r, w, listener), sock=sock,
                ssl=self.server_ssl, limit=READ_SIZE)
        task = asyncio.ensure_future(serve())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return listener.advertised

    async def close(self) -> None:
        for listener in self.listeners:
            if listener.server is not None:
                listener.server.close()
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)
        for listener in self.listeners:
            if listener.server is not None:
                await listener.server.wait_closed()

    def _accepted(self, reader, writer, listener) -> None:
        task = asyncio.ensure_future(self._relay(reader, writer, listener))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _relay(self, reader, writer, listener: Listener) -> None:
        peer = writer.get_extra_info("peername") or ("?", 0)
        conn = self.core.connection((peer[0], peer[1]), listener.upstream)
        flow = None
        if self.pcap is not None:
            flow = self.pcap.connection((peer[0], peer[1]), (listener.advertised[0]
                                        if _is_ip(listener.advertised[0]) else listener.host
                                        or "0.0.0.0", listener.port))
        up_reader = up_writer = None
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(
                *listener.upstream, ssl=self.upstream_ssl if listener.tls else None,
                limit=READ_SIZE), self.connect_timeout)
        except (OSError, asyncio.TimeoutError, ssl.SSLError) as e:
            conn.upstream_failed(f"cannot connect to {address_text(*listener.upstream)}: "
                                 f"{getattr(e, 'strerror', None) or e or 'timed out'}")
        outputs = (_Output(writer, None if flow is None else
                           lambda b: flow.sends(False, b), self.max_queued, self._peak),
                   _Output(up_writer, None, self.max_queued, self._peak))

        def dispatch(actions) -> None:
            for a in actions:
                outputs[a.to if isinstance(a, Send) else a.which].put(a)

        async def pump(side, stream) -> None:
            other = outputs[1 - side]
            try:
                while True:
                    if not other.room.is_set():
                        await other.room.wait()
                    try:
                        data = await stream.read(READ_SIZE)
                    except OSError:
                        data = b""
                    ts = time.time_ns()
                    if not data:
                        dispatch(conn.eof(side, ts))
                        return
                    if side == CLIENT and flow is not None:
                        flow.sends(True, data)
                    dispatch(conn.data(side, data, ts))
                    if conn.finished:
                        return
            finally:
                if conn.finished:
                    for out in outputs:
                        out.put(Close(CLIENT))

        pumps = [asyncio.ensure_future(pump(CLIENT, reader))]
        if up_reader is not None:
            pumps.append(asyncio.ensure_future(pump(SERVER, up_reader)))
        try:
            await asyncio.gather(*pumps)
            await asyncio.gather(*(o.task for o in outputs), return_exceptions=True)
        except asyncio.CancelledError:
            raise
        except Exception:           # (a bug must cost this connection, not the proxy)
            log.exception("the relay of %s failed", address_text(peer[0], peer[1]))
        finally:
            for task in pumps:
                task.cancel()
            for out in outputs:
                out.task.cancel()
            await asyncio.gather(*pumps, *(o.task for o in outputs), return_exceptions=True)
            for w in (writer, up_writer):
                if w is not None and not w.transport.is_closing():
                    w.transport.abort()
            conn.closed()
            if flow is not None:
                flow.close()


def _is_ip(host: str) -> bool:
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
            return True
        except OSError:
            pass
    return False
