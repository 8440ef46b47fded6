"""asyncio parts of the ORB: :class:`GiopStream`, the transport side of an ORB
connection, and :class:`Resume`."""

from __future__ import annotations

import asyncio
import collections
import os
import sys
import weakref

from ..giop.connection import SCRATCH_SIZE

try:        # pycdr[fast]: libuv's event loop, which costs the ORB less per message
    import uvloop
except ImportError:
    uvloop = None


def uses_uvloop() -> bool:
    """Whether new_event_loop() gives uvloop's loop: when uvloop is installed and
    the environment does not ask for the standard one (PYCDR_LOOP=asyncio)."""
    return uvloop is not None and os.environ.get("PYCDR_LOOP", "") != "asyncio"


def new_event_loop() -> asyncio.AbstractEventLoop:
    """The event loop the ORB's own programs run on (the CLI, SyncORB's thread,
    the benchmarks' peers): uvloop's when uses_uvloop(), else asyncio's.  An
    application picks its own loop; the ORB runs on either."""
    return uvloop.new_event_loop() if uses_uvloop() else asyncio.new_event_loop()


def run(main):
    """asyncio.run(main) on a new_event_loop()."""
    if sys.version_info >= (3, 11):
        with asyncio.Runner(loop_factory=new_event_loop) as runner:
            return runner.run(main)
    if uses_uvloop():           # (3.10: no Runner; uvloop's policy for this run)
        policy = asyncio.get_event_loop_policy()
        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
        try:
            return asyncio.run(main)
        finally:
            asyncio.set_event_loop_policy(policy)
    return asyncio.run(main)

# Bulk transfers: the seed papers' TTCP finding that socket buffer sizes matter
# more than the toolkit. Large socket buffers and a large write buffer keep
# 64-128 KB messages from stalling in flow control.
SOCKET_BUFFER = 1 << 20


def set_socket_buffers(sock) -> None:
    import socket
    for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):
        try:
            sock.setsockopt(socket.SOL_SOCKET, option, SOCKET_BUFFER)
        except OSError:
            pass


# The read buffer of each event loop's ORB connections (GiopConnection's scratch).
_SHARED_SCRATCH_LOOPS = (asyncio.selector_events.BaseSelectorEventLoop,) + \
    ((uvloop.Loop,) if uvloop is not None else ())
_SCRATCH_OF_LOOP: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def receive_scratch(loop: asyncio.AbstractEventLoop) -> bytearray | None:
    """The read buffer the ORB connections of ``loop`` share, or None (each makes
    its own) when the loop's transports may hold a buffer across callbacks.  A
    selector loop's transport calls get_buffer, recv_into and buffer_updated in one
    callback, and the connection copies the bytes out in buffer_updated, so one
    buffer serves every connection of the loop; so does uvloop's (libuv asks for
    the buffer, reads and reports the read in one go, per stream); a proactor loop
    hands the buffer to an overlapped read that outlives the callback."""
    if not isinstance(loop, _SHARED_SCRATCH_LOOPS):
        return None
    scratch = _SCRATCH_OF_LOOP.get(loop)
    if scratch is None:
        scratch = _SCRATCH_OF_LOOP[loop] = bytearray(SCRATCH_SIZE)
    return scratch


# GiopStream pauses reading while more than this of complete messages is received
# and not yet handed out as events (the server's read loop waits for in-flight
# requests then).  A message still arriving is not counted: see awaiting_handout.
PAUSE_READING_ABOVE = 2 * SOCKET_BUFFER


class Resume:
    """Awaiting it finishes a coroutine that was started by hand and stopped at an
    await: ``Resume(coroutine, waiting_for)``, where ``waiting_for`` is what the
    coroutine's ``send(None)`` returned (the future it waits for).  The awaiting
    task waits for that future, then goes on with the coroutine; exceptions
    thrown into the task (cancellation) go into the coroutine.  Its value is the
    coroutine's.

    This lets a protocol callback run handling code that usually finishes
    without waiting (a request to a servant that does not await) straight away,
    and hand it to a task only when it does wait."""

    __slots__ = ("coroutine", "waiting_for")

    def __init__(self, coroutine, waiting_for):
        self.coroutine = coroutine
        self.waiting_for = waiting_for

    def __await__(self):
        coroutine, waiting_for = self.coroutine, self.waiting_for
        while True:
            try:
                yield waiting_for
            except BaseException as e:     # (thrown in by the task: cancellation)
                step, value = coroutine.throw, e
            else:
                step, value = coroutine.send, None
            try:
                waiting_for = step(value)
            except StopIteration as done:
                return done.value


class GiopStream(asyncio.BufferedProtocol):
    """One ORB connection's transport, for a sans-I/O GiopConnection: received
    bytes go straight into the connection's buffer (``receive_buffer``, in place
    for large messages) instead of through a StreamReader and its two copies.

        stream = GiopStream(giop, on_data=handle)
        transport, _ = await loop.create_connection(lambda: stream, host, port)
        def handle():       # bytes arrived, or the end of the stream (at_eof)
            ... giop.next_event() until NEED_DATA; stream.consumed() ...
        stream.write(data); await stream.drain(); stream.close()

    ``on_data`` (or the callback given to ``set_on_data``) is called from the
    transport's callbacks when bytes arrived (once per large message) and once
    at the end of the stream: events are handled there, without the event-loop
    turn a reading task costs per message.  Reading pauses while more than
    PAUSE_READING_ABOVE bytes wait for next_event() and resumes at
    ``consumed()``; writing follows the transport's flow control (``drain``)."""

    def __init__(self, giop, *, socket_buffers: bool = True, on_connect=None,
                 on_data=None):
        self.giop = giop
        self._on_connect = on_connect      # called with this stream once connected
        self._on_data = on_data
        self.transport: asyncio.Transport | None = None
        self.peer = None
        self._socket_buffers = socket_buffers
        self._eof = False
        self._reading_paused = False
        self._writing_paused = False
        self._drain_waiters: collections.deque = collections.deque()
        self._lost: BaseException | None = None

    # --- asyncio.BufferedProtocol ----------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport
        self.peer = transport.get_extra_info("peername")
        sock = transport.get_extra_info("socket")
        if self._socket_buffers and sock is not None:
            set_socket_buffers(sock)
        transport.set_write_buffer_limits(high=4 * SOCKET_BUFFER)
        if self._on_connect is not None:
            self._on_connect(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.giop.receive_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        giop = self.giop
        giop.received(nbytes)
        if not self._reading_paused and giop.awaiting_handout > PAUSE_READING_ABOVE:
            self._reading_paused = True
            self.transport.pause_reading()
        if not giop.receiving_in_place:
            # (a large message's middle reads complete nothing: the reader wakes
            # once for the message, not once per read)
            self._wake()

    def eof_received(self) -> bool:
        self._eof_seen()
        return False            # the transport closes itself

    def connection_lost(self, exc) -> None:
        self._lost = exc or ConnectionResetError("connection lost")
        self._eof_seen()
        while self._drain_waiters:
            waiter = self._drain_waiters.popleft()
            if not waiter.done():
                waiter.set_exception(self._lost)

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        while self._drain_waiters:
            waiter = self._drain_waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    # --- the connection's side ---------------------------------------------------------
    @property
    def at_eof(self) -> bool:
        return self._eof

    @property
    def lost_because(self) -> BaseException | None:
        """The exception the transport was lost with (None while open; a
        ConnectionResetError when it closed without one)."""
        return self._lost

    def _eof_seen(self) -> None:
        if not self._eof:
            self._eof = True
            self._wake()

    def set_on_data(self, on_data) -> None:
        """Call ``on_data`` from now on (for a handler made after the connection)."""
        self._on_data = on_data

    def _wake(self) -> None:
        if self._on_data is not None:
            self._on_data()

    def consumed(self) -> None:
        """The connection handed out its events: resume a paused reading."""
        if self._reading_paused and self.giop.awaiting_handout <= PAUSE_READING_ABOVE \
                and not self._eof:
            self._reading_paused = False
            self.transport.resume_reading()

    def write(self, data) -> None:
        """``data``: a message's bytes, or the list of buffers a message with a tail
        is (GiopConnection.send_templated): written in order, without joining them
        where the transport can (uvloop's, and asyncio's from Python 3.12 on)."""
        if type(data) is list:
            self.transport.writelines(data)
        else:
            self.transport.write(data)

    @property
    def must_drain(self) -> bool:
        """Whether drain() has anything to do (wait, yield or raise): a writer
        skips the coroutine when not."""
        return self._writing_paused or self._lost is not None or \
            (self.transport is not None and self.transport.is_closing())

    async def drain(self) -> None:
        """Wait while the transport's write buffer is above its high-water mark;
        ConnectionError once the connection is lost."""
        if self._lost is not None:
            raise ConnectionResetError("connection lost") from self._lost
        if self.transport is not None and self.transport.is_closing():
            # As StreamWriter.drain does: yield once, so a writer that only
            # writes and drains lets the loop deliver connection_lost.
            await asyncio.sleep(0)
            if self._lost is not None:
                raise ConnectionResetError("connection lost") from self._lost
            return
        if not self._writing_paused:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._drain_waiters.append(waiter)
        await waiter

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
