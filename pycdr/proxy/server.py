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

Each socket is an asyncio Protocol (:class:`_Stream`): what it receives goes to the
core as it came, in the event loop's callback, with no stream buffer or task switch
between them; the core's output goes to the transport as it is (a message passed
unchanged is written from the very bytes that were read), and only then are the usual
calls' books kept (their call rows: ProxyConnection.later), while the peer works.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
import ssl
import struct
import time
from dataclasses import dataclass

from ..addressing.rewrite import address_text
from .core import CLIENT, SERVER, Close, ProxyCore, Send, coalesced

log = logging.getLogger(__name__)
READ_SIZE = 256 * 1024          # the most one read delivers (asyncio's and uvloop's)
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


def _ignore(_data) -> None:
    """(bytes read after the end of a stream: nothing takes them)"""


class _Stream(asyncio.Protocol):
    """One socket of a relayed connection.  Reading is paused from the start until
    :meth:`start` names where the bytes go (``received(data)``; ``b""`` once, at the
    end of the stream or when the connection is lost); writing is a StreamWriter's
    (write, drain, close), drain() waiting while the transport's buffer is full."""

    def __init__(self, made=None):
        self.made = made                # fn(stream) once connected, or None
        self.transport = None
        self.early: list = []           # bytes read before start() (uvloop may read once)
        # where data_received's bytes go: kept in ``early`` until start(), then
        # start()'s ``received``, nowhere once the stream ended (one call a read, no test)
        self.received = self.early.append
        self.started = False
        self.ended = False              # b"" was (or is to be) given
        self.lost = False
        self.paused = False             # the transport's buffer is full
        self.waiters: list = []
        self.held = False               # reading paused until the other side has room

    def connection_made(self, transport) -> None:
        self.transport = transport
        transport.pause_reading()
        if self.made is not None:
            self.made(self)

    def start(self, received) -> None:
        early, self.early = self.early, []
        for data in early:
            received(data)
        self.started = True
        if self.ended:
            received(b"")
        else:
            self.received = received
            if not self.lost and not self.held:
                self.transport.resume_reading()

    def data_received(self, data) -> None:
        self.received(data)

    def eof_received(self):
        self._end()
        # kept open for writing (the core says when to close); TLS cannot half-close
        return self.transport.get_extra_info("sslcontext") is None

    def connection_lost(self, exc) -> None:
        self.lost = True
        self._wake(ConnectionResetError("connection lost"))
        self._end()

    def _end(self) -> None:
        if not self.ended:
            self.ended = True
            received, self.received = self.received, _ignore
            if self.started:
                received(b"")

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        self._wake(None)

    def _wake(self, error) -> None:
        waiters, self.waiters = self.waiters, []
        for w in waiters:
            if not w.done():
                if error is None:
                    w.set_result(None)
                else:
                    w.set_exception(error)

    # -- the StreamWriter's part --------------------------------------------------
    def write(self, data) -> None:
        self.transport.write(data)

    def get_extra_info(self, name, default=None):
        return self.transport.get_extra_info(name, default)

    def close(self) -> None:
        self.transport.close()

    async def drain(self) -> None:
        if self.lost:
            raise ConnectionResetError("connection lost")
        if self.paused:
            waiter = asyncio.get_running_loop().create_future()
            self.waiters.append(waiter)
            await waiter


class _Output:
    """The writes for one side, in order: written at once when nothing waits (no delay,
    no trickle, no earlier write pending), else queued for a task that sleeps and drains
    as each write asks."""

    def __init__(self, writer, record=None, max_queued: int = MAX_QUEUED, peak=None):
        self.writer = writer
        # (what put() writes to at once: the writer's transport, None for the upstream
        # that never came)
        self.transport = None if writer is None else writer.transport
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
        transport = self.transport
        if self.idle and type(item) is Send and transport is not None and not item.delay \
                and not item.interval:
            pieces = item.pieces
            if len(pieces) == 1:
                transport.write(pieces[0])
            else:
                # (a message and its fragments; uvloop: one writev for all, as a relay
                # writes what one read brought)
                transport.writelines(pieces)
            if self.record is not None:
                for piece in pieces:
                    self.record(piece)
            # (usually 0: the bytes went to the socket at once, no peak to note)
            waiting = transport.get_write_buffer_size()
            if not waiting:
                return
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
        loop = asyncio.get_running_loop()
        for listener in self.listeners:
            listener.server = await loop.create_server(
                lambda lst=listener: _Stream(lambda s: self._accepted(s, lst)), listener.host,
                listener.port, ssl=self.server_ssl)
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
            listener.server = await asyncio.get_running_loop().create_server(
                lambda: _Stream(lambda s: self._accepted(s, listener)), sock=sock,
                ssl=self.server_ssl)
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

    def _accepted(self, client: _Stream, listener) -> None:
        task = asyncio.ensure_future(self._relay(client, listener))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _relay(self, client: _Stream, listener: Listener) -> None:
        peer = client.get_extra_info("peername") or ("?", 0)
        conn = self.core.connection((peer[0], peer[1]), listener.upstream)
        # Each read's rows made after its bytes are written (a call's latency does not
        # wait for them); with no rows wanted and no IDL the books are counts, cheaper
        # kept at once than put off.
        if self.core.emit is not None or self.core.tracker.bodies is not None:
            conn.later = []
        flow = None
        if self.pcap is not None:
            flow = self.pcap.connection((peer[0], peer[1]), (listener.advertised[0]
                                        if _is_ip(listener.advertised[0]) else listener.host
                                        or "0.0.0.0", listener.port))
        loop = asyncio.get_running_loop()
        upstream = None
        try:
            _, upstream = await asyncio.wait_for(loop.create_connection(
                _Stream, *listener.upstream, ssl=self.upstream_ssl if listener.tls else None),
                self.connect_timeout)
        except (OSError, asyncio.TimeoutError, ssl.SSLError) as e:
            conn.upstream_failed(f"cannot connect to {address_text(*listener.upstream)}: "
                                 f"{getattr(e, 'strerror', None) or e or 'timed out'}")
        outputs = (_Output(client, None if flow is None else
                           lambda b: flow.sends(False, b), self.max_queued, self._peak),
                   _Output(upstream, None, self.max_queued, self._peak))
        streams = (client, upstream)
        reading = [True, upstream is not None]      # each side's bytes still come
        ended = loop.create_future()                # both sides read to their end
        waits: set = set()                          # (reading paused for the other's room)

        def dispatch(actions) -> None:
            for a in actions:
                outputs[a.to if isinstance(a, Send) else a.which].put(a)

        def stop(side) -> None:
            reading[side] = False
            if conn.finished:
                for out in outputs:
                    out.put(Close(CLIENT))
            if not any(reading) and not ended.done():
                ended.set_result(None)

        def resume(stream, side, wait) -> None:
            waits.discard(wait)
            stream.held = False
            if not stream.lost and reading[side]:
                stream.transport.resume_reading()

        def received(side, data) -> None:
            if not reading[side]:
                return
            try:
                ts = time.time_ns()
                if not data:
                    dispatch(conn.eof(side, ts))
                    stop(side)
                    return
                if side == CLIENT and flow is not None:
                    flow.sends(True, data)
                actions = conn.data(side, data, ts)
                if len(actions) > 1:
                    actions = coalesced(actions)        # (a write a side, not a message)
                # (dispatch's loop, a call less a read)
                for a in actions:
                    outputs[a.to if type(a) is Send else a.which].put(a)
                if conn.later:
                    conn.track_later()
                if conn.finished:
                    stop(side)
                    return
                other = outputs[1 - side]
                if not other.room.is_set():
                    # the other side reads slowly: this one waits for it
                    stream = streams[side]
                    stream.held = True
                    stream.transport.pause_reading()
                    wait = asyncio.ensure_future(other.room.wait())
                    waits.add(wait)
                    wait.add_done_callback(lambda w: resume(stream, side, w))
            except Exception as e:         # (a bug must cost this connection, not the proxy)
                reading[0] = reading[1] = False
                if not ended.done():
                    ended.set_exception(e)

        client.start(functools.partial(received, CLIENT))
        if upstream is not None:
            upstream.start(functools.partial(received, SERVER))
        try:
            await ended
            await asyncio.gather(*(o.task for o in outputs), return_exceptions=True)
        except asyncio.CancelledError:
            raise
        except Exception:           # (a bug must cost this connection, not the proxy)
            log.exception("the relay of %s failed", address_text(peer[0], peer[1]))
        finally:
            for task in waits:
                task.cancel()
            for out in outputs:
                out.task.cancel()
            await asyncio.gather(*waits, *(o.task for o in outputs), return_exceptions=True)
            for stream in streams:
                if stream is not None and not stream.transport.is_closing():
                    stream.transport.abort()
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
