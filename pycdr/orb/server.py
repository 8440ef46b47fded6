"""The reference ORB's server: an asyncio IIOP listener serving GIOP 1.0, 1.1
and 1.2 on one port.

    server = Server(host="127.0.0.1", port=0)
    key = server.activate(EchoServant(module.interfaces["Demo::Echo"]), "Echo")
    await server.start()
    print(server.ior_string(key), server.corbaloc(key))
    ...
    await server.stop()          # CloseConnection on every connection

One task per connection feeds a sans-I/O :class:`GiopConnection` and answers its
messages as :mod:`.dispatch` says (shared with the threaded server); each
Request runs in its own task, so async servants serve requests of one
connection concurrently and replies go out as they are ready (out of order
when they finish out of order).  Replies use the request's GIOP version and
byte order.  Limits (:class:`ServerLimits`) bound message size, connections,
in-flight requests, idle connections and incomplete messages: their age and, across
all connections, the memory they hold (``max_incomplete_bytes``).  At the connection
limit the connection that has waited longest (on its incomplete message, or idle) makes
room for the new one, so a flood of stalled connections cannot lock honest clients out;
when the load drops, freed memory is given back to the system (glibc's malloc_trim).
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import logging
import ssl
import time
from dataclasses import dataclass

from ..addressing.corbaloc import Corbaloc, IIOPAddress
from ..giop.connection import GiopConnection, Role
from ..giop.events import (NEED_DATA, TAKEN, ConnectionClosed, MessageReceived,
                           ProtocolViolation)
from ..giop.header import MAX_MESSAGE_SIZE
from ..giop.messages import Request
from ..giop.sysexc import SystemException
from ..addressing.iiop import PYCDR_ORB_TYPE, IIOPProfile, ORBTypeComponent, make_ior
from ..codec.ior import IOR, ior_to_string
from . import codesets as orb_codesets
from .adapter import ObjectAdapter
from .aio import GiopStream, Resume, receive_scratch, set_socket_buffers
from .dispatch import RequestDispatch, _Outcome, _system
from .tlstransport import TLSListener, start_tls_server
from .invocation import DEFAULT_POLL_WAIT
from .memory import release_free_memory
from .servant import Servant
from .tls import server_components

log = logging.getLogger("pycdr.orb.server")

SERVER_GIOP_VERSION = (1, 2)      # the highest version served


@dataclass
class ServerLimits:
    max_message_size: int = MAX_MESSAGE_SIZE  # message_size, compressed (ZIOP) or not
    max_connections: int = 1024             # at it, the longest-waiting one is closed
    max_requests_in_flight: int = 256       # per connection; reading pauses beyond it
    idle_timeout: float | None = 300.0      # seconds without messages and requests
    incomplete_message_timeout: float = 10.0   # a started message must progress in this
    # Bytes all connections together may hold in incomplete messages (and pending
    # fragments); beyond it the one whose incomplete message is oldest is refused.
    # At least max_message_size, so one message of the largest size can come.
    max_incomplete_bytes: int = 64 << 20
    release_memory: bool = True             # malloc_trim when the load drops (glibc)
    fragment_size: int | None = None        # fragment GIOP 1.1+ replies longer than this
    shutdown_grace: float = 2.0             # seconds in-flight requests get at stop()
    # Seconds the threaded server's C read polls for the next Request before it sleeps
    # (invocation.POLL_WAIT, PYCDR_POLL_WAIT; 0: sleep at once).
    poll_wait: float = DEFAULT_POLL_WAIT

    def __post_init__(self):
        if self.max_incomplete_bytes < self.max_message_size:
            raise ValueError(f"max_incomplete_bytes ({self.max_incomplete_bytes}) is below "
                             f"max_message_size ({self.max_message_size}): a message of "
                             "the largest size could never come")
        if self.max_connections < 1:
            raise ValueError("max_connections must be at least 1")


# Memory is given back (malloc_trim) once the bytes held in incomplete messages fall to
# a quarter of their peak, if that peak was TRIM_AFTER_BYTES or more, or the connections
# to half of theirs, if that was TRIM_AFTER_CONNECTIONS or more; TRIM_DELAY seconds
# after the drop, so a wave of closes costs one trim (a trim of a large heap takes ms).
TRIM_AFTER_BYTES = 8 << 20
TRIM_AFTER_CONNECTIONS = 128
TRIM_DELAY = 1.0


class _LoadWatch:
    """Watches the bytes held in incomplete messages and the connection count, and
    gives freed memory back when they drop (see TRIM_AFTER_BYTES)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.held = self.connections = 0        # as last noted
        self.peak_bytes = 0
        self.peak_connections = 0
        self.trims = 0
        self._timer: asyncio.TimerHandle | None = None

    def note(self, held: int, connections: int) -> None:
        self.held, self.connections = held, connections
        if held > self.peak_bytes:
            self.peak_bytes = held
        if connections > self.peak_connections:
            self.peak_connections = connections
        if not self.enabled or self._timer is not None:
            return
        if (self.peak_bytes >= TRIM_AFTER_BYTES and held <= self.peak_bytes // 4) or \
                (self.peak_connections >= TRIM_AFTER_CONNECTIONS and
                 connections <= self.peak_connections // 2):
            self._timer = asyncio.get_running_loop().call_later(TRIM_DELAY, self._trim)

    def _trim(self) -> None:
        self._timer = None
        # The load as it is now is the peak a further drop is measured from.
        self.peak_bytes, self.peak_connections = self.held, self.connections
        released = release_free_memory()
        self.trims += 1
        log.info("load dropped (%d connections, %d bytes in incomplete messages): memory "
                 "%s", self.connections, self.held, "given back" if released else "kept")

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class Server:
    def __init__(self, adapter: ObjectAdapter | None = None, *, host: str = "127.0.0.1",
                 port: int = 0, limits: ServerLimits | None = None,
                 advertised_host: str | None = None, tls: ssl.SSLContext | None = None,
                 tls_port: int = 0, plain: bool = True):
        """``tls``: also listen for IIOP over TLS on ``tls_port`` (IORs then carry it in
        TAG_SSL_SEC_TRANS and CSIv2 TAG_TLS_SEC_TRANS); ``plain=False``: TLS only (port 0
        in the IIOP profile)."""
        if not plain and tls is None:
            raise ValueError("a server without its plain port needs TLS")
        self.adapter = adapter if adapter is not None else ObjectAdapter()
        self.host = host
        self.port = port
        self.tls = tls
        self.tls_port = tls_port
        self.plain = plain
        self._tls_listener: TLSListener | None = None
        self.advertised_host = advertised_host or host
        self.limits = limits or ServerLimits()
        self.connections: set[_ServerConnection] = set()
        self._listener: asyncio.base_events.Server | None = None
        self.requests_served = 0
        # Bytes held in incomplete messages, all connections together; the
        # connections with one, the one incomplete longest first (dicts keep order).
        self.incomplete_bytes = 0
        self._incomplete: dict[_ServerConnection, None] = {}
        self.refused_for_memory = 0         # connections closed over the budget
        self.evicted_at_limit = 0           # closed to make room at max_connections
        self.load = _LoadWatch(self.limits.release_memory)
        self._scratch: bytearray | None = None

    # --- objects -------------------------------------------------------------------
    def activate(self, servant: Servant, name: str | bytes | None = None) -> bytes:
        return self.adapter.activate(servant, name)

    def ior(self, key: bytes, *, version: tuple = SERVER_GIOP_VERSION) -> IOR:
        """An IOR for ``key``: one IIOP profile of ``version`` (ORB_TYPE and
        CODE_SETS components from 1.1 on)."""
        servant = self.adapter.servant(key)
        type_id = servant.repo_id if servant is not None else ""
        components = (ORBTypeComponent(PYCDR_ORB_TYPE), orb_codesets.SERVER_CODE_SETS) \
            if version >= (1, 1) else ()
        if self.tls is not None and version >= (1, 1):
            components += server_components(
                self.advertised_host, self.tls_port,
                client_auth=self.tls.verify_mode == ssl.CERT_REQUIRED)
        return make_ior(type_id, [IIOPProfile(version, self.advertised_host,
                                              self.port if self.plain else 0, key,
                                              components)])

    def ior_string(self, key: bytes, *, version: tuple = SERVER_GIOP_VERSION) -> str:
        return ior_to_string(self.ior(key, version=version))

    def corbaloc(self, key: bytes, *, version: tuple = SERVER_GIOP_VERSION,
                 tls: bool | None = None) -> str:
        """corbaloc:iiop: for the plain port, corbaloc:ssliop: for the TLS port (by default
        the plain one unless the server has none)."""
        tls = not self.plain if tls is None else tls
        address = IIOPAddress(self.advertised_host, self.tls_port if tls else self.port,
                              version, tls=tls)
        return Corbaloc((address,), key).to_url()

    # --- running -------------------------------------------------------------------
    async def start(self) -> "Server":
        loop = asyncio.get_running_loop()
        self._scratch = receive_scratch(loop)
        # A listen backlog as deep as the connection limit: in a connection flood
        # the kernel's queue (asyncio's default: 100) overflowed and dropped the SYNs of
        # honest clients too, which retried a second later.
        if self.plain:
            self._listener = await loop.create_server(self._new_stream, self.host, self.port,
                                                      backlog=self.limits.max_connections)
            for sock in self._listener.sockets:
                set_socket_buffers(sock)
            self.port = self._listener.sockets[0].getsockname()[1]
            log.info("listening on %s:%d", self.host, self.port)
        if self.tls is not None:
            self._tls_listener = await start_tls_server(self._new_stream, self.host,
                                                        self.tls_port, self.tls,
                                                        backlog=self.limits.max_connections)
            for sock in self._tls_listener.sockets:
                set_socket_buffers(sock)
            self.tls_port = self._tls_listener.sockets[0].getsockname()[1]
            log.info("listening for TLS on %s:%d", self.host, self.tls_port)
        return self

    async def serve_forever(self) -> None:
        if self._listener is None and self._tls_listener is None:
            await self.start()
        await asyncio.gather(*(listener.serve_forever()
                               for listener in (self._listener, self._tls_listener)
                               if listener is not None))

    async def stop(self) -> None:
        """Stop accepting, let in-flight requests finish (up to
        ``shutdown_grace``), send CloseConnection on every connection, close."""
        listeners = [x for x in (self._listener, self._tls_listener) if x is not None]
        for listener in listeners:
            listener.close()
        await asyncio.gather(*(c.shut_down(self.limits.shutdown_grace)
                               for c in list(self.connections)), return_exceptions=True)
        for listener in listeners:
            await listener.wait_closed()
        self._listener = self._tls_listener = None
        self.load.stop()

    async def __aenter__(self):
        return await self.start()

    async def __aexit__(self, *exc_info):
        await self.stop()

    def _new_stream(self) -> GiopStream:
        # Accepted sockets inherit the listening socket's buffer sizes (set once).
        giop = GiopConnection(Role.SERVER, version=SERVER_GIOP_VERSION,
                              max_message_size=self.limits.max_message_size,
                              max_reassembly_size=self.limits.max_incomplete_bytes,
                              field_offsets=False, body_views=True,
                              scratch=self._scratch)
        return GiopStream(giop, socket_buffers=False, on_connect=self._accept)

    def _accept(self, stream: GiopStream) -> None:
        if len(self.connections) >= self.limits.max_connections:
            longest = self._longest_waiting()
            if longest is None:
                log.warning("connection refused: %d connections open (the limit), all "
                            "busy", len(self.connections))
                stream.close()
                return
            self.evicted_at_limit += 1
            longest.make_room()
        connection = _ServerConnection(self, stream)
        self.connections.add(connection)
        connection.start()

    def _longest_waiting(self) -> "_ServerConnection | None":
        """The connection that has waited longest, on an incomplete message or idle
        (no request running): the one to close when a new one needs its place.  A
        connection making progress has neither wait; one that stalls, or holds a
        connection it does not use, is the likeliest attacker and the cheapest loss."""
        longest, since = None, None
        for connection in self.connections:
            waiting = connection.waiting_since()
            if waiting is not None and (since is None or waiting < since):
                longest, since = connection, waiting
        return longest

    # --- the memory budget -----------------------------------------------------------
    def _account(self, connection: "_ServerConnection", held: int) -> None:
        """``connection`` now holds ``held`` bytes in incomplete messages; over the
        budget, the oldest incomplete messages are refused until it fits."""
        self.incomplete_bytes += held - connection.held
        connection.held = held
        self.load.note(self.incomplete_bytes, len(self.connections))
        while self.incomplete_bytes > self.limits.max_incomplete_bytes and self._incomplete:
            oldest = next(iter(self._incomplete))
            self.refused_for_memory += 1
            oldest.refuse_incomplete(
                f"{self.incomplete_bytes} bytes held in incomplete messages, over the "
                f"server's {self.limits.max_incomplete_bytes}; this connection's was the "
                "oldest")

    def _incomplete_started(self, connection: "_ServerConnection") -> None:
        self._incomplete.pop(connection, None)
        self._incomplete[connection] = None          # the newest

    def _incomplete_ended(self, connection: "_ServerConnection") -> None:
        self._incomplete.pop(connection, None)

    def _forget(self, connection: "_ServerConnection") -> None:
        self.connections.discard(connection)
        self._incomplete.pop(connection, None)
        self.incomplete_bytes -= connection.held
        connection.held = 0
        self.load.note(self.incomplete_bytes, len(self.connections))


class _ServerConnection(RequestDispatch):
    def __init__(self, server: Server, stream: GiopStream):
        self._init_dispatch(server, stream.giop, stream.peer)
        self.stream = stream
        self.twoway_tasks: dict[int, asyncio.Task] = {}
        self.tasks: set[asyncio.Task] = set()
        self.in_flight = asyncio.Semaphore(self.limits.max_requests_in_flight)
        # The messages that arrive are handled in the transport's callback
        # (_on_data), with no task: a task woken per message cost a sixth of a
        # small call's server time.  Handling that must wait (for the write
        # buffer, for a free in-flight slot, for a servant that awaits) goes on
        # in the task _batch; data arriving meanwhile is handled by it, after.
        self._batch: asyncio.Task | None = None
        self._again = False           # data arrived while _batch ran
        self._stopping = False        # shut_down(): no more messages are handled
        # Since when the incomplete message has not progressed (a message or fragment
        # completed moves the stream offset): its age, for the timeout and the budget.
        self._partial_since: float | None = None
        self._partial_offset = 0
        self.held = 0               # bytes in incomplete messages, as last accounted
        # One timer for the idle and incomplete-message timeouts (see _arm_watchdog).
        self._watchdog: asyncio.TimerHandle | None = None

    # --- reading -------------------------------------------------------------------
    def start(self) -> None:
        """Handle the connection's messages from now on (the stream calls _on_data)."""
        self.stream.set_on_data(self._on_data)
        self._arm_watchdog()

    def _on_data(self) -> None:
        """Bytes arrived, or the end of the stream: handle what is complete."""
        if self._batch is not None:
            self._again = True        # the batch that waits handles it when it is done
            if not self.closed and not self._stopping:
                self._track_incomplete()    # (its bytes count in the budget meanwhile)
            return
        if self._stopping:
            return
        if self.closed:               # (closed by a failed write: the stream ends now)
            self._finish()
            return
        batch = self._handle_batch()
        try:
            waiting_for = batch.send(None)
        except StopIteration:
            return
        except Exception:
            self._failed()
            return
        # It waits: it goes on in a task, which takes the later batches too.
        self._batch = asyncio.get_running_loop().create_task(
            self._finish_batches(batch, waiting_for))

    async def _finish_batches(self, batch, waiting_for) -> None:
        try:
            await Resume(batch, waiting_for)
            while self._again and not self.closed and not self._stopping:
                self._again = False
                await self._handle_batch()
        except asyncio.CancelledError:
            pass      # shut_down() stopped the reading
        except Exception:
            self._failed()
        finally:
            self._batch = None
            if self.closed and not self._stopping:
                self._finish()        # (closed by a failed write)

    async def _handle_batch(self) -> None:
        """Handle every complete message; close after the end of the stream or when
        a message says so."""
        if self._watchdog is None:
            self._arm_watchdog()
        at_eof = self.stream.at_eof
        if at_eof:
            self.giop.receive_data(b"")      # the end of the stream
        if not await self._process_events():
            self._finish()
            return
        self.stream.consumed()
        if at_eof:
            self._finish()
            return
        self._track_incomplete()

    def _track_incomplete(self) -> None:
        """Note whether a message is incomplete and since when it has not progressed,
        and account the bytes it holds in the server's budget (which may refuse it)."""
        giop = self.giop
        if giop.has_partial_message:
            if self._partial_since is None or giop.stream_offset != self._partial_offset:
                first = self._partial_since is None
                self._partial_since = time.monotonic()
                self._partial_offset = giop.stream_offset
                self.server._incomplete_started(self)
                if first:
                    self._arm_watchdog()     # the incomplete-message deadline is sooner
        elif self._partial_since is not None:
            self._partial_since = None
            self.server._incomplete_ended(self)
        held = giop.incomplete_bytes
        if held != self.held:
            self.server._account(self, held)

    def _failed(self) -> None:
        log.exception("connection from %s failed", self.peer)
        self._finish()

    def _finish(self) -> None:
        """The connection is done: close it, forget it, and let its buffers go now:
        the stream and this object refer to each other, and a cycle waits for the
        garbage collector, which an idle server may not run for a long time."""
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        self._close()
        self.giop.release_buffers()
        self.giop.take_directly = None      # (it refers to this connection)
        self.stream.set_on_data(None)
        self.server._forget(self)

    def waiting_since(self) -> float | None:
        """Since when the connection has waited on its incomplete message, or been
        idle (nothing received or running); None while it is busy."""
        if self.closed:
            return None
        if self._partial_since is not None:
            return self._partial_since
        if self.tasks or self._batch is not None:
            return None
        return self._last_activity

    def refuse_incomplete(self, why: str) -> None:
        """Drop the incomplete message, answer MessageError, close (over the memory
        budget, or to make room at the connection limit).

        Why MessageError: GIOP has no message for "refused for want of memory";
        MessageError is its answer to a message the receiver will not process as
        sent, and the one this server already gives a header claiming more than
        max_message_size.  Either side may send it in every GIOP version (1.0
        included), so it goes in the incomplete message's own version.  Not
        CloseConnection: that tells the client its unanswered requests were not
        processed and may be sent again (CORBA 3.x Part 2, 9.3.6), which would bring
        the same message straight back."""
        event = self.giop.refuse_partial_message(why)
        log.warning("%s: %s", self.peer, event)
        self._write(event.reply)
        self._finish()

    def make_room(self) -> None:
        """Close to make room at the connection limit: an incomplete message is
        refused (MessageError); an idle connection gets CloseConnection, the orderly
        close a client retries after (it sent nothing unanswered)."""
        if self._partial_since is not None:
            self.refuse_incomplete("the connection limit is reached and this "
                                   "connection's incomplete message waited longest")
        else:
            log.info("%s: idle for %.1f s at the connection limit: CloseConnection",
                     self.peer, self._idle_for())
            self._send_close_connection()
            self._finish()

    def _deadline(self) -> float | None:
        """When the read loop must look at the connection (time.monotonic()): the
        incomplete-message timeout while a message is partial, else the idle one."""
        if self._partial_since is not None:
            return self._partial_since + self.limits.incomplete_message_timeout
        if self.limits.idle_timeout is None:
            return None
        return self._last_activity + self.limits.idle_timeout

    def _arm_watchdog(self) -> None:
        """(Re)start the connection's one timer, instead of a timeout per wait: a
        message moves the idle deadline but costs no timer.  An idle deadline
        already passed (requests still running) is looked at again every 50 ms."""
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        deadline = self._deadline()
        if deadline is None:
            return
        floor = 0.0 if self._partial_since is not None else 0.05
        delay = max(floor, deadline - time.monotonic())
        self._watchdog = asyncio.get_running_loop().call_later(delay, self._watchdog_fired)

    def _watchdog_fired(self) -> None:
        self._watchdog = None
        deadline = self._deadline()
        if deadline is None or self.closed or self._stopping:
            return
        if self._batch is not None:
            # Handling waits (for the write buffer, a servant): judge it after.
            self._watchdog = asyncio.get_running_loop().call_later(0.05, self._watchdog_fired)
            return
        if time.monotonic() < deadline:
            self._arm_watchdog()        # activity since: the deadline moved
            return
        if self._partial_since is not None:
            log.warning("%s: message incomplete after %.1f s: closing", self.peer,
                        self.limits.incomplete_message_timeout)
            self._finish()
        elif not self.tasks:
            log.info("%s: idle for %.1f s: CloseConnection", self.peer, self._idle_for())
            self._send_close_connection()
            self._finish()
        else:
            self._arm_watchdog()        # requests still run: not idle (50 ms on)

    def _idle_for(self) -> float:
        return time.monotonic() - self._last_activity

    async def _process_events(self) -> bool:
        """Handle every complete message; False when the connection must close."""
        while True:
            event = self.giop.next_event()
            if event is NEED_DATA:
                return True
            if event is TAKEN:
                if self.stream.must_drain:
                    await self._drain()
                continue
            if isinstance(event, MessageReceived):
                self._last_activity = time.monotonic()
                if not await self._on_message(event.message):
                    return False
            elif isinstance(event, ProtocolViolation):
                if self._violation(event):
                    await self._drain()
                    return False
            elif isinstance(event, ConnectionClosed):
                return False

    async def _on_message(self, msg) -> bool:
        self.last_version = msg.version
        if isinstance(msg, Request):
            await self._start_request(msg)
            return True
        return self._on_other_message(msg)

    def _cancel(self, request_id: int) -> None:
        task = self.twoway_tasks.pop(request_id, None)
        if task is not None:
            task.cancel()     # no reply: the client no longer waits for one

    # --- requests ------------------------------------------------------------------
    async def _start_request(self, req: Request) -> None:
        refused, key, servant = self._request_target(req)
        if servant is not None and not servant.concurrent_operation(req.operation):
            # A servant that never awaits blocks the loop while it runs anyway:
            # serve it here, without a task and the loop turn a task costs.
            await self._serve(req, refused, key, servant, inline=True)
            self._last_activity = time.monotonic()
            return
        await self.in_flight.acquire()
        task = asyncio.create_task(self._serve(req, refused, key, servant))
        self.tasks.add(task)
        if req.response_expected:
            self.twoway_tasks[req.request_id] = task
        task.add_done_callback(self._request_done)

    def _request_done(self, task: asyncio.Task) -> None:
        self.tasks.discard(task)
        self.in_flight.release()
        self._last_activity = time.monotonic()

    async def _serve(self, req: Request, refused: SystemException | None,
                     key: bytes | None, servant: Servant | None,
                     inline: bool = False) -> None:
        """Run ``req`` (addressed to ``key``, its target_object_key, whose servant
        was ``servant`` when it arrived) and reply.  ``inline``: the servant's
        method never awaits, so the request runs start to end without yielding."""
        if not self._before_running(req):
            await self._drain()
            return
        try:
            if refused is not None:
                outcome = _system(refused)
            elif inline and gc.isenabled():
                # The arguments (thousands of objects for a sequence of structs)
                # are made and dropped within the request; the cyclic GC would
                # scan them meanwhile, several times, and promote them to older
                # generations whose full collections scan the whole heap.  It is
                # paused while the request runs (the method does not await, so no
                # other task runs meanwhile) and runs afterwards if it is due, when
                # they are gone.
                gc.disable()
                try:
                    outcome = await self._execute(req, key, servant, inline)
                finally:
                    gc.enable()
            else:
                outcome = await self._execute(req, key, servant, inline)
        except asyncio.CancelledError:
            return          # CancelRequest or shutdown: no reply
        if self._after_running(req, outcome) and self.stream.must_drain:
            await self._drain()
        self.twoway_tasks.pop(req.request_id, None)

    async def _execute(self, req: Request, key: bytes | None,
                       servant: Servant | None, inline: bool = False) -> _Outcome:
        prepared = self._prepare(req, key, servant)
        if isinstance(prepared, _Outcome):
            return prepared
        op, args = prepared
        try:
            if inline:
                # (no coroutine: the method does not await; what it returns may
                # still be awaitable, a plain function handing back a coroutine)
                returned = servant.call(op, args)
                if inspect.isawaitable(returned):
                    returned = await returned
            else:
                returned = await servant.invoke(op, args)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            return self._raised(op, e)
        return self._returned(op, returned)

    def _take_directly(self, raw) -> bool:
        # (the GC paused as for a request served inline: see _serve)
        try:
            if gc.isenabled():
                gc.disable()
                try:
                    return self._run_direct(raw)
                finally:
                    gc.enable()
            return self._run_direct(raw)
        finally:
            self._last_activity = time.monotonic()

    def _finish_awaited(self, req: Request, op, awaitable) -> None:
        async def finish():
            try:
                returned = await awaitable
            except asyncio.CancelledError:
                return
            except Exception as e:
                outcome = self._raised(op, e)
            else:
                outcome = self._returned(op, returned)
            if self._after_running(req, outcome) and self.stream.must_drain:
                await self._drain()
        task = asyncio.get_running_loop().create_task(finish())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # --- writing -------------------------------------------------------------------
    def _write(self, data: bytes) -> None:
        if not self.closed:
            self.stream.write(data)

    async def _drain(self) -> None:
        if self.closed:
            return
        try:
            await self.stream.drain()
        except (ConnectionError, OSError):
            self._close()

    async def shut_down(self, grace: float) -> None:
        """Orderly shutdown: stop reading, give in-flight requests ``grace``
        seconds, then CloseConnection and close."""
        self._stopping = True
        if self._batch is not None:
            self._batch.cancel()
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=grace)
        for task in list(self.tasks):
            task.cancel()
        self._send_close_connection()
        await self._drain()
        self._finish()

    def _close(self) -> None:
        if not self.closed:
            self.closed = True
            self.stream.close()
