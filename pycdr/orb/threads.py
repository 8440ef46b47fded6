"""The reference ORB's server with a thread per connection (omniORB's
thread-per-connection model): blocking reads into the connection's buffer,
requests served one after another in the connection's thread, no event loop.

    server = ThreadedServer(host="127.0.0.1", port=0)
    key = server.activate(EchoServant(module.interfaces["Demo::Echo"]), "Echo")
    server.open()                # (or: await server.start(), as for Server)
    print(server.ior_string(key))
    ...
    server.close()               # CloseConnection on every connection

It is the asyncio Server (objects, IORs, limits) with another transport, and
handles messages with the same code (dispatch.RequestDispatch).  What differs:

- a servant whose method is a coroutine runs on an event loop of the
  connection's thread, made at its first such request; a connection's requests
  run one at a time, so its requests do not overlap as they may on the asyncio
  server (requests of different connections run in parallel threads);
- ServerLimits: max_message_size, max_connections (a connection over the limit
  is closed at once, no other is evicted), idle_timeout, incomplete_message_timeout
  and fragment_size hold; max_incomplete_bytes is not shared across connections
  (each is bounded by max_message_size and max_reassembly_size), so the asyncio
  Server is the one to face untrusted clients in numbers;
- plain IIOP only (TLS: the asyncio Server).
"""

from __future__ import annotations

import asyncio
import errno
import gc
import inspect
import logging
import socket
import threading

from ..giop.connection import GiopConnection, Role
from ..giop.events import NEED_DATA, TAKEN, ConnectionClosed, MessageReceived, ProtocolViolation
from ..giop.header import HEADER_SIZE
from ..giop.messages import Request
from .aio import set_socket_buffers
from .blocking import send_message, set_wait_limit
from .invocation import poll_ns, serve_exchange
from .dispatch import _VERSIONS, RequestDispatch, _Outcome
from .server import SERVER_GIOP_VERSION, Server

log = logging.getLogger("pycdr.orb.threads")

# Each connection's read buffer: a read takes several small messages at once, and
# a large message is read in place once its first part is in (receive_buffer).
SERVER_SCRATCH = 256 * 1024


class _GCPause:
    """The cyclic GC paused while a request to a servant method that does not await runs
    in any connection's thread (its arguments decoded, the method run), as the asyncio
    server pauses it: the arguments, thousands of objects for a sequence of structs,
    are made and dropped within the request, and the GC would scan them meanwhile.  gc.disable() is process-wide:
    a count of the methods running decides, and the GC is given back as it was when
    the last one ends.  Should requests of several connections overlap without end,
    the youngest generation is still collected once it is far over its threshold."""

    def __init__(self):
        self._lock = threading.Lock()
        self._running = 0
        self._was_enabled = False

    def __enter__(self):
        with self._lock:
            if self._running == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._running += 1

    def __exit__(self, *exc_info):
        with self._lock:
            self._running -= 1
            if self._running == 0:
                if self._was_enabled:
                    gc.enable()
            elif self._was_enabled and gc.get_count()[0] > 100 * gc.get_threshold()[0]:
                gc.collect(0)


GC_PAUSE = _GCPause()


class ThreadedServer(Server):
    def __init__(self, adapter=None, *, host: str = "127.0.0.1", port: int = 0,
                 limits=None, advertised_host: str | None = None, tls=None, **options):
        if tls is not None or options:
            raise ValueError("the threaded server serves plain IIOP only; TLS is the "
                             "asyncio Server's")
        super().__init__(adapter, host=host, port=port, limits=limits,
                         advertised_host=advertised_host)
        self._socket: socket.socket | None = None
        self._acceptor: threading.Thread | None = None
        self._lock = threading.Lock()          # self.connections
        self._stopping = False

    # --- running -------------------------------------------------------------------
    def open(self) -> "ThreadedServer":
        """Listen, and accept connections in a thread of their own."""
        sock = socket.create_server((self.host, self.port),
                                    backlog=min(self.limits.max_connections, 4096))
        set_socket_buffers(sock)       # (accepted sockets inherit the sizes)
        self._socket = sock
        self.port = sock.getsockname()[1]
        self._acceptor = threading.Thread(target=self._accept_loop, daemon=True,
                                          name=f"pycdr-accept-{self.port}")
        self._acceptor.start()
        log.info("listening on %s:%d (a thread per connection)", self.host, self.port)
        return self

    def close(self) -> None:
        """Stop accepting; each connection finishes the request it runs (up to
        ``shutdown_grace`` seconds), sends CloseConnection and closes."""
        if self._socket is None:
            return
        self._stopping = True
        try:
            self._socket.shutdown(socket.SHUT_RDWR)     # (wakes accept())
        except OSError:
            pass
        self._socket.close()
        self._acceptor.join(self.limits.shutdown_grace)
        with self._lock:
            connections = list(self.connections)
        for connection in connections:
            connection.stop()
        for connection in connections:
            connection.thread.join(self.limits.shutdown_grace)
        self._socket = None

    def serve_forever_blocking(self) -> None:
        """Serve until close() is called from another thread (or the process ends)."""
        if self._socket is None:
            self.open()
        self._acceptor.join()

    async def start(self) -> "ThreadedServer":
        return self.open()

    async def serve_forever(self) -> None:
        if self._socket is None:
            self.open()
        await asyncio.get_running_loop().run_in_executor(None, self._acceptor.join)

    async def stop(self) -> None:
        self.close()

    def _accept_loop(self) -> None:
        while not self._stopping:
            try:
                sock, peer = self._socket.accept()
            except OSError:
                if self._stopping:
                    return
                log.exception("accept failed")
                continue
            with self._lock:
                full = len(self.connections) >= self.limits.max_connections
                if not full:
                    connection = ThreadConnection(self, sock, peer)
                    self.connections.add(connection)
            if full:
                log.warning("connection from %s refused: %d connections open (the limit)",
                            peer, len(self.connections))
                sock.close()
                continue
            connection.thread.start()

    def _forget(self, connection: "ThreadConnection") -> None:
        with self._lock:
            self.connections.discard(connection)


class ThreadConnection(RequestDispatch):
    """One connection, served by its own thread."""

    def __init__(self, server: ThreadedServer, sock: socket.socket, peer):
        limits = server.limits
        scratch = bytearray(SERVER_SCRATCH)
        giop = GiopConnection(Role.SERVER, version=SERVER_GIOP_VERSION,
                              max_message_size=limits.max_message_size,
                              max_reassembly_size=limits.max_incomplete_bytes,
                              field_offsets=False, body_views=True, scratch=scratch)
        self._init_dispatch(server, giop, peer)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(None)
        self.sock = sock
        # While nothing received waits in the GiopConnection, a read that begins with
        # whole Requests the C path takes serves them in one C call (serve_exchange), into
        # the GiopConnection's read buffer (it copies out what it frames).
        self._scratch = scratch
        self._in_c = serve_exchange is not None and type(sock) is socket.socket
        self._lane_limit = min(SERVER_SCRATCH, limits.max_message_size + HEADER_SIZE)
        self._poll_ns = poll_ns(limits.poll_wait)
        self._wait_limit: float | None = None       # as set_wait_limit left it
        self._stopping = False
        self._loop: asyncio.AbstractEventLoop | None = None     # for coroutine servants
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name=f"pycdr-conn-{peer[1] if peer else '?'}")

    def stop(self) -> None:
        """From another thread: no more messages; the thread says CloseConnection."""
        self._stopping = True
        try:
            self.sock.shutdown(socket.SHUT_RD)          # (wakes its recv_into)
        except OSError:
            pass

    # --- the connection's thread ---------------------------------------------------
    def _run(self) -> None:
        try:
            self._serve_connection()
        except Exception:
            log.exception("connection from %s failed", self.peer)
        finally:
            if self._stopping:
                self._send_close_connection()
            self._close()
            if self._loop is not None:
                self._loop.close()
            self.giop.release_buffers()
            self.giop.take_directly = None      # (it refers to this connection)
            self.server._forget(self)

    def _serve_connection(self) -> None:
        giop = self.giop
        while not self._stopping:
            if self._in_c and giop.idle and self._direct:
                if not self._serve_in_c():
                    return
                continue
            event = giop.next_event()
            if event is TAKEN:
                continue
            if event is NEED_DATA:
                if not self._receive():
                    return
            elif isinstance(event, MessageReceived):
                msg = event.message
                self.last_version = msg.version
                if isinstance(msg, Request):
                    self._serve(msg)
                elif not self._on_other_message(msg):
                    return
            elif isinstance(event, ProtocolViolation):
                if self._violation(event):
                    return
            elif isinstance(event, ConnectionClosed):
                return

    def _receive(self) -> bool:
        """Read into the GiopConnection; False when the connection is to close (the
        peer closed, a timeout passed)."""
        giop = self.giop
        partial = giop.has_partial_message
        limit = self.limits.incomplete_message_timeout if partial else self.limits.idle_timeout
        try:
            if limit != self._wait_limit:
                set_wait_limit(self.sock, limit)
                self._wait_limit = limit
            n = self.sock.recv_into(giop.receive_buffer())
        except BlockingIOError:       # the limit passed
            if partial:
                log.warning("%s: message incomplete after %.1f s: closing", self.peer,
                            self.limits.incomplete_message_timeout)
            else:
                log.info("%s: idle for %.1f s: CloseConnection", self.peer,
                         self.limits.idle_timeout)
                self._send_close_connection()
            return False
        except OSError:
            return False
        if n:
            giop.received(n)
        else:
            giop.receive_data(b"")
        return True

    def _serve_in_c(self) -> bool:
        """One read, and the whole Requests it begins with served in the same C call
        while they are Requests of operations _learn_direct entered (serve_exchange);
        what was read past them goes to the GiopConnection, as _receive gives it.  False when the
        connection is to close (the peer closed, the idle time passed, a send failed)."""
        if self.closed:                 # (a Reply's send failed on the general path)
            return False
        giop = self.giop
        limit = self.limits.idle_timeout
        try:
            if limit != self._wait_limit:
                set_wait_limit(self.sock, limit)
                self._wait_limit = limit
            out = serve_exchange(self.sock, self._direct, giop.outstanding, self._scratch,
                                 self._lane_limit, GC_PAUSE,
                                 self.limits.incomplete_message_timeout, self._poll_ns)
        except OSError:
            return False
        if type(out) is int:
            if out < 0:                 # the Reply's send failed
                self._close()
                return False
            giop.took_whole(out)
            self.last_version = _VERSIONS[self._scratch[5]]
            self.server.requests_served += 1
            return True
        if out is None:                 # the C path is off: the general path reads
            self._in_c = False
            return True
        if len(out) == 5:
            # Several whole Requests served (a stream of oneway calls), or one whose
            # servant ran for the general path to answer, or a message the read ended
            # inside read whole; then what followed them, and how reading a started
            # message's rest ended.
            taken, served, ran, data, status = out
            if taken:
                giop.took_whole(taken)
                self.server.requests_served += served
                # (the version of the one answered last, or of one at the buffer's start:
                # for a CloseConnection; a message handed back sets it when handled)
                minor = ran[2] if ran is not None else self._scratch[5]
                self.last_version = _VERSIONS.get(minor, self.last_version)
                if ran is not None:
                    self._answer_ran(ran)
            if status in (errno.EAGAIN, errno.EWOULDBLOCK):
                if data:
                    giop.receive_data(data)
                log.warning("%s: message incomplete after %.1f s: closing", self.peer,
                            self.limits.incomplete_message_timeout)
                return False
        else:
            data, status = out
        if data:
            giop.receive_data(data)
        if status == 0 or status == errno.EINTR:
            return True
        if status == -1:                # the end of the stream
            giop.receive_data(b"")
            return True
        if status in (errno.EAGAIN, errno.EWOULDBLOCK):
            log.info("%s: idle for %.1f s: CloseConnection", self.peer, limit)
            self._send_close_connection()
        return False

    def _serve(self, req: Request) -> None:
        refused, key, servant = self._request_target(req)
        if not self._before_running(req):
            return
        self._after_running(req, self._execute(req, refused, key, servant))

    def _execute(self, req: Request, refused, key, servant) -> _Outcome:
        if servant is not None and not servant.concurrent_operation(req.operation):
            with GC_PAUSE:          # (the arguments' decoding included)
                return self._run_request(req, refused, key, servant)
        return self._run_request(req, refused, key, servant)

    def _run_request(self, req: Request, refused, key, servant) -> _Outcome:
        prepared = self._prepare(req, key, servant, refused)
        if isinstance(prepared, _Outcome):
            return prepared
        op, args = prepared
        try:
            if servant.concurrent_operation(op.name):
                returned = self._event_loop().run_until_complete(servant.invoke(op, args))
            else:
                returned = servant.call(op, args)
                if inspect.isawaitable(returned):
                    returned = self._event_loop().run_until_complete(returned)
        except Exception as e:
            return self._raised(op, e)
        return self._returned(op, returned)

    def _take_directly(self, raw) -> bool:
        with GC_PAUSE:
            return self._run_direct(raw)

    def _finish_awaited(self, req: Request, op, awaitable) -> None:
        try:
            returned = self._event_loop().run_until_complete(awaitable)
        except Exception as e:
            outcome = self._raised(op, e)
        else:
            outcome = self._returned(op, returned)
        self._after_running(req, outcome)

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        """The loop the connection's coroutine servants run on (made when first needed)."""
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop

    def _cancel(self, request_id: int) -> None:
        # Requests run one at a time, before the next message is read: a CancelRequest
        # comes after its request has been answered, and asks nothing more.
        return

    def _write(self, data) -> None:
        if self.closed:
            return
        try:
            send_message(self.sock, data)
        except OSError:         # (BlockingIOError: the client did not read for that long)
            self._close()

    def _close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self.sock.close()
            except OSError:
                pass


__all__ = ["ThreadedServer", "ThreadConnection"]
