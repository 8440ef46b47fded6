"""Talking to an endpoint byte by byte, with every read bounded in bytes and time.

A conformance case sends hand-made bytes and watches what comes back.  An
endpoint may answer, refuse, close, say nothing, or flood (omniORB 4.2.5
answers a hand-made ProfileAddr request with an endless stream of replies), so
nothing here waits without a deadline or buffers without a limit.
"""

from __future__ import annotations

import socket
import ssl
import time
from dataclasses import dataclass, field

from pycdr.giop.connection import GiopConnection, Role
from pycdr.giop.events import NEED_DATA, ConnectionClosed, MessageReceived, ProtocolViolation
from pycdr.orb.tls import TLSOptions, open_socket

# An answer to one case is a handful of messages, at most a few times what was
# sent (an echo); beyond that it is a flood.
FLOOD_BYTES = 1 << 20
FLOOD_MESSAGES = 64
FLOOD_FACTOR = 4


@dataclass
class Observation:
    """What came back after a case's bytes were sent."""
    messages: list = field(default_factory=list)   # MessageReceived events, in order
    violations: list = field(default_factory=list)  # ProtocolViolation events (the peer's bytes)
    received: bytes = b""                          # every byte received (capped)
    total_received: int = 0
    closed: bool = False            # the endpoint closed the connection (EOF)
    reset: bool = False             # ... abortively (RST)
    timed_out: bool = False         # the deadline passed while more was expected
    flooded: bool = False           # more than any answer could be
    connect_error: str | None = None
    elapsed: float = 0.0
    # Seconds from the start of the read to the last wanted message (None: not all came).
    answer_time: float | None = None


class Wire:
    """One TCP connection to the endpoint, in TLS when ``tls`` options are given (a
    TransportError, an OSError, names the step that failed)."""

    def __init__(self, host: str, port: int, *, connect_timeout: float = 3.0,
                 tls: TLSOptions | None = None):
        self.host = host
        self.port = port
        self.sock = open_socket(host, port, tls, timeout=connect_timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # The observer parses what the endpoint sends: lenient (we want to see
        # everything) and with no books (a case may send any request id).
        self.peer = GiopConnection(Role.CLIENT, version=(1, 3), lenient=True,
                                   check_request_ids=False)
        self.eof = False

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data: bytes, chunks=None, delay: float = 0.0) -> bool:
        """Send ``data``, in the given chunk sizes if any (a slow or split
        sender). Returns False if the endpoint already closed or reset."""
        try:
            if not chunks:
                self.sock.sendall(data)
                return True
            pos = 0
            for size in chunks:
                if pos >= len(data):
                    break
                self.sock.sendall(data[pos:pos + size])
                pos += size
                if delay:
                    time.sleep(delay)
            if pos < len(data):
                self.sock.sendall(data[pos:])
            return True
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, ssl.SSLError):
            return False

    def observe(self, obs: Observation, *, want: int, timeout: float,
                linger: float = 0.0, sent: int = 0) -> Observation:
        """Read until ``want`` complete messages arrived, the endpoint closed,
        the deadline passed or a flood is seen; then keep reading for ``linger``
        seconds to catch what comes after (a close, more unsolicited replies)."""
        start = time.monotonic()
        deadline = start + timeout
        flood_bytes = max(FLOOD_BYTES, FLOOD_FACTOR * sent)
        lingering_until = None
        while True:
            now = time.monotonic()
            if lingering_until is None and len(obs.messages) >= want:
                lingering_until = now + linger
                if want:
                    obs.answer_time = now - start
            end = deadline if lingering_until is None else min(deadline, lingering_until)
            if now >= end:
                if lingering_until is None:
                    obs.timed_out = True
                break
            if self.eof:
                break
            self.sock.settimeout(max(end - now, 0.001))
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            except (ConnectionResetError, ConnectionAbortedError, ssl.SSLError):
                # (over TLS, an alert or a broken record ends the connection as a reset does)
                obs.reset = obs.closed = True
                self.eof = True
                self.peer.receive_data(b"")
                self._drain(obs)
                break
            obs.total_received += len(data)
            if len(obs.received) < flood_bytes:
                obs.received += data[:flood_bytes - len(obs.received)]
            if not data:
                obs.closed = True
                self.eof = True
            self.peer.receive_data(data)
            self._drain(obs, limit=want + FLOOD_MESSAGES)
            if obs.total_received > flood_bytes or len(obs.messages) > want + FLOOD_MESSAGES:
                obs.flooded = True
                break
        obs.elapsed += time.monotonic() - start
        return obs

    def _drain(self, obs: Observation, limit: int | None = None) -> None:
        """Take the messages received into ``obs``; past ``limit`` of them
        (a flood: one read may hold a thousand replies) the rest is left
        undecoded."""
        while limit is None or len(obs.messages) <= limit:
            event = self.peer.next_event()
            if event is NEED_DATA:
                return
            if isinstance(event, MessageReceived):
                obs.messages.append(event)
            elif isinstance(event, ProtocolViolation):
                obs.violations.append(event)
            elif isinstance(event, ConnectionClosed):
                return
