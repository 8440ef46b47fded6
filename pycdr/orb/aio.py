"""asyncio helpers the ORB's hot paths use, and :class:`GiopStream`, the transport
side of an ORB connection."""

from __future__ import annotations

import asyncio
import collections
import sys

if sys.version_info >= (3, 11):
    async def wait_within(awaitable, timeout: float | None):
        """``await awaitable``, raising TimeoutError after ``timeout`` seconds.
        Unlike wait_for (before 3.12) it makes no task of its own: one event
        loop turn less per call, which a loopback round trip feels."""
        if timeout is None:
            return await awaitable
        async with asyncio.timeout(timeout):
            return await awaitable
else:  # pragma: no cover - Python 3.10
    async def wait_within(awaitable, timeout: float | None):
        return await asyncio.wait_for(awaitable, timeout)


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


# GiopStream pauses reading while more than this is received and not yet handed
# out as events (the server's read loop waits for in-flight requests then).
PAUSE_READING_ABOVE = 2 * SOCKET_BUFFER


class GiopStream(asyncio.BufferedProtocol):
    """One ORB connection's transport, for a sans-I/O GiopConnection: received
    bytes go straight into the connection's buffer (``receive_buffer``, in place
    for large messages) instead of through a StreamReader and its two copies.

        stream = GiopStream(giop)
        transport, _ = await loop.create_connection(lambda: stream, host, port)
        while await stream.wait_data(timeout):   # False: end of stream
            ... giop.next_event() until NEED_DATA; stream.consumed() ...
        stream.write(data); await stream.drain(); stream.close()

    ``wait_data`` returns at once when bytes arrived since the last call.  Reading
    pauses while more than PAUSE_READING_ABOVE bytes wait for next_event() and
    resumes at ``consumed()``; writing follows the transport's flow control
    (``drain``).

    A connection that handles its events without awaiting (the client's) passes
    ``on_data`` instead of calling wait_data: it is called from the transport's
    callbacks when bytes arrived and once at the end of the stream (``at_eof``),
    which saves the event-loop turn a reading task costs per message."""

    def __init__(self, giop, *, socket_buffers: bool = True, on_connect=None,
                 on_data=None):
        self.giop = giop
        self._on_connect = on_connect      # called with this stream once connected
        self._on_data = on_data
        self.transport: asyncio.Transport | None = None
        self.peer = None
        self._socket_buffers = socket_buffers
        self._new_data = False
        self._eof = False
        self._data_waiter: asyncio.Future | None = None
        self._timed_out = False
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
        if not self._reading_paused and giop.buffered > PAUSE_READING_ABOVE:
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

    def _eof_seen(self) -> None:
        if not self._eof:
            self._eof = True
            self._wake()

    def _wake(self) -> None:
        if self._on_data is not None:
            self._on_data()
            return
        self._new_data = True
        waiter = self._data_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait_data(self, timeout: float | None = None) -> bool:
        """Wait (up to ``timeout`` seconds: TimeoutError) until bytes arrived since
        the last call; False once the peer closed, after the bytes before that.
        TimeoutError also after ``time_out()``, unless bytes arrived first."""
        if not self._new_data and not self._eof and not self._timed_out:
            self._data_waiter = asyncio.get_running_loop().create_future()
            try:
                await wait_within(self._data_waiter, timeout)
            finally:
                self._data_waiter = None
        if self._new_data:
            self._new_data = False
            self._timed_out = False
            return True
        if self._eof:
            return False
        if self._timed_out:
            self._timed_out = False
            raise asyncio.TimeoutError
        return False

    def time_out(self) -> None:
        """Make the pending (or the next) wait_data() raise TimeoutError unless bytes
        arrive first: for a caller's own timer, one per connection instead of a
        timeout per wait (which costs a timer per message)."""
        self._timed_out = True
        waiter = self._data_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def consumed(self) -> None:
        """The connection handed out its events: resume a paused reading."""
        if self._reading_paused and self.giop.buffered <= PAUSE_READING_ABOVE \
                and not self._eof:
            self._reading_paused = False
            self.transport.resume_reading()

    def write(self, data) -> None:
        self.transport.write(data)

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
