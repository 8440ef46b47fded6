"""Coverage of a JVM target through the JaCoCo agent's remote control.

A Java ORB started with ``-javaagent:org.jacoco.agent-runtime.jar=output=tcpserver,
address=127.0.0.1,port=N`` counts, for every class it loaded, which of the class's
*probes* (JaCoCo's markers at the ends of its basic blocks) ran, and answers a client on that
port.  The wire format is JaCoCo's execution data format, one stream each way:

- a header block: ``0x01``, the magic ``0xC0C0``, the format version (``0x1007`` since
  JaCoCo 0.7.5), both unsigned 16-bit big-endian; each side sends one first (the agent's
  comes with its answer to the first command: it is not sent before);
- a command (client to agent): ``0x40``, then two booleans (a byte 0 or 1 each): dump,
  reset;
- the answer: when dumping, a session info block (``0x10``: the session id as a Java
  "modified UTF-8" string, a 16-bit length first; the start and dump times, 64-bit
  milliseconds) and one execution data block per class with a probe set (``0x11``: the
  class id, a 64-bit CRC of its bytes; its name, a string as above; its probes, a boolean
  array: the count as a variable-length integer, 7 bits a byte, low bits first, the high bit
  set on all but the last byte, then the booleans packed 8 a byte, the first in the lowest
  bit); then ``0x20``, the command done.

A probe is named by its class id and its index: a *feature* here is the int
``class_id << PROBE_BITS | index``.  Lengths the agent claims are checked against bounds
before anything is read for them, and read in pieces as they come: nothing is set aside for
a length it merely claims."""

from __future__ import annotations

import socket
import time

from ..errors import PycdrError

BLOCK_HEADER = 0x01
BLOCK_SESSION_INFO = 0x10
BLOCK_EXECUTION_DATA = 0x11
BLOCK_COMMAND_OK = 0x20
BLOCK_COMMAND_DUMP = 0x40
MAGIC = 0xC0C0
FORMAT_VERSION = 0x1007
HEADER = bytes([BLOCK_HEADER]) + MAGIC.to_bytes(2, "big") + FORMAT_VERSION.to_bytes(2, "big")
# Probes of one class: at most 2**PROBE_BITS (the index's bits in a feature).  JaCoCo puts a
# probe at each end of a basic block; a class past a million of them is not a class.
PROBE_BITS = 20
MAX_PROBES = 1 << PROBE_BITS
# A whole dump: at most this many bytes (JacORB's whole core after a conformance run dumps
# some 60 KB; the bound keeps an agent that streams on from filling the fuzzer's memory).
MAX_DUMP = 64 << 20
# The agent's answer to a command: the longest wait, seconds.
DUMP_TIMEOUT = 10.0
_RECV = 1 << 16


class JacocoError(PycdrError):
    """The agent could not be reached, or sent what its format does not allow (the message
    names which)."""


class ConnectionLost(JacocoError):
    """The agent's connection ended (the target restarted, or stopped)."""


def parse_address(text: str) -> tuple:
    """``HOST:PORT`` (the part after ``jacoco:``) as (host, port); JacocoError when it is not
    one."""
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise JacocoError(f"jacoco:{text}: not HOST:PORT of a JaCoCo agent's tcpserver")
    return host, int(port)


class Stream:
    """Reads a JaCoCo stream from ``recv(n)`` (a socket's, or a recorded buffer's), in
    pieces, within ``limit`` bytes in all."""

    def __init__(self, recv, limit: int = MAX_DUMP):
        self._recv = recv
        self._buffer = bytearray()
        self._at = 0
        self.limit = limit
        self.consumed = 0

    def read(self, n: int) -> bytes:
        if self.consumed + n > self.limit:
            raise JacocoError(f"the agent's answer passes {self.limit} bytes")
        while len(self._buffer) - self._at < n:
            chunk = self._recv(_RECV)
            if not chunk:
                raise ConnectionLost("the agent closed the connection")
            if self._at:
                del self._buffer[:self._at]
                self._at = 0
            self._buffer += chunk
        out = bytes(self._buffer[self._at:self._at + n])
        self._at += n
        self.consumed += n
        return out

    def byte(self) -> int:
        return self.read(1)[0]

    def u16(self) -> int:
        return int.from_bytes(self.read(2), "big")

    def u64(self) -> int:
        return int.from_bytes(self.read(8), "big")

    def boolean(self) -> bool:
        value = self.byte()
        if value > 1:
            raise JacocoError(f"a boolean of {value}, not 0 or 1")
        return value == 1

    def text(self) -> str:
        """A Java "modified UTF-8" string (its 16-bit length bounds it)."""
        raw = self.read(self.u16())
        try:
            # (Modified UTF-8 differs from UTF-8 in NUL and in characters past the BMP,
            # neither of which a class name or session id holds in practice.)
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw.decode("utf-8", "replace")

    def varint(self) -> int:
        """JaCoCo's variable-length int: at most 5 bytes (32 bits)."""
        value = 0
        for shift in range(0, 35, 7):
            b = self.byte()
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
        raise JacocoError("a variable-length integer longer than 5 bytes")

    def probes(self) -> int:
        """A boolean array, as (count, the probes as an int: bit i is probe i)."""
        count = self.varint()
        if count > MAX_PROBES:
            raise JacocoError(f"a class with {count} probes (at most {MAX_PROBES})")
        packed = self.read((count + 7) // 8)
        bits = int.from_bytes(packed, "little")
        return count, bits & ((1 << count) - 1)


def read_header(stream: Stream, kind: int | None = None) -> int:
    """The header block's format version, checked (a JacocoError when it is not the one
    understood here); ``kind``: its first byte, when read already."""
    kind = stream.byte() if kind is None else kind
    if kind != BLOCK_HEADER:
        raise JacocoError(f"not a JaCoCo agent: the stream starts with 0x{kind:02x}, "
                          f"not a header block")
    magic, version = stream.u16(), stream.u16()
    if magic != MAGIC:
        raise JacocoError(f"not a JaCoCo agent: magic 0x{magic:04x}, not 0x{MAGIC:04x}")
    if version != FORMAT_VERSION:
        raise JacocoError(f"a JaCoCo agent of execution data format 0x{version:04x}; "
                          f"0x{FORMAT_VERSION:04x} (JaCoCo 0.7.5 and later) is understood")
    return version


def command(dump: bool, reset: bool) -> bytes:
    return bytes([BLOCK_COMMAND_DUMP, int(dump), int(reset)])


class Dump:
    """What one dump held: the session id, and per class id its name and probes."""

    def __init__(self):
        self.session = ""
        self.classes: dict = {}          # class id -> (name, probe count, probe bits)

    def features(self) -> set:
        """The probes that ran, as ints ``class_id << PROBE_BITS | index``."""
        out = set()
        for class_id, (_, _, bits) in self.classes.items():
            base = class_id << PROBE_BITS
            while bits:
                low = bits & -bits
                out.add(base | (low.bit_length() - 1))
                bits ^= low
        return out


def read_answer(stream: Stream, first: bool = False) -> Dump:
    """Blocks up to a command's end (0x20); the first answer on a connection (``first``)
    starts with the agent's header block, checked.  An execution data block of a class seen
    before in this answer adds to its probes."""
    dump = Dump()
    if first:
        read_header(stream)
    while True:
        kind = stream.byte()
        if kind == BLOCK_COMMAND_OK:
            return dump
        if kind == BLOCK_HEADER:
            read_header(stream, kind)
        elif kind == BLOCK_SESSION_INFO:
            dump.session = stream.text()
            stream.u64()
            stream.u64()
        elif kind == BLOCK_EXECUTION_DATA:
            class_id, name = stream.u64(), stream.text()
            count, bits = stream.probes()
            if class_id in dump.classes:
                bits |= dump.classes[class_id][2]
            dump.classes[class_id] = (name, count, bits)
        else:
            raise JacocoError(f"a block of type 0x{kind:02x} in the agent's answer")


class JacocoAgent:
    """A connection to the JaCoCo agent at host:port (its tcpserver output), opened on first
    use and opened again once when it was lost (the target restarted, say).  The agent
    serves one client at a time."""

    def __init__(self, host: str, port: int, timeout: float = DUMP_TIMEOUT):
        self.host, self.port, self.timeout = host, port, timeout
        self._sock: socket.socket | None = None
        self._stream: Stream | None = None
        self._first = True               # no answer read yet on this connection
        self.class_names: dict = {}      # class id -> name, of every class dumped so far
        self.dumps = 0
        self.seconds = 0.0               # spent in commands

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def _connect(self) -> None:
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        except OSError as e:
            raise JacocoError(f"cannot reach the JaCoCo agent at {self.address}: "
                              f"{e.strerror or e}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        self._stream = Stream(sock.recv)
        self._first = True

    def _command(self, dump: bool, reset: bool) -> Dump:
        began = time.monotonic()
        try:
            answer = self._exchange(dump, reset)
        finally:
            self.seconds += time.monotonic() - began
        for class_id, (name, _, _) in answer.classes.items():
            self.class_names.setdefault(class_id, name)
        return answer

    def _exchange(self, dump: bool, reset: bool) -> Dump:
        for attempt in (1, 2):
            if self._sock is None:
                self._connect()
            self._stream.consumed = 0
            try:
                self._sock.sendall((HEADER if self._first else b"") + command(dump, reset))
                answer = read_answer(self._stream, self._first)
                self._first = False
                break
            except (ConnectionLost, ConnectionError) as e:
                # A connection kept from before the target restarted: once more, anew.
                self.close()
                if attempt == 2:
                    raise JacocoError(f"the JaCoCo agent at {self.address}: "
                                      f"{e.strerror or e if isinstance(e, OSError) else e}") \
                        from None
            except (OSError, JacocoError) as e:
                self.close()
                why = "no answer in time" if isinstance(e, socket.timeout) else \
                    (e.strerror or e) if isinstance(e, OSError) else e
                raise JacocoError(f"the JaCoCo agent at {self.address}: {why}") from None
        return answer

    def dump(self, reset: bool = True) -> Dump:
        """The probes that ran since the last reset; then reset (by default)."""
        self.dumps += 1
        return self._command(True, reset)

    def reset(self) -> None:
        self._command(False, True)

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
        self._sock = self._stream = None


def class_of(feature: int, names: dict) -> str:
    """The name of the class a probe feature is in (its id in hex when not known)."""
    class_id = feature >> PROBE_BITS
    return names.get(class_id, f"{class_id:016x}")
