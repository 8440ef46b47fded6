"""The replay's I/O: the capture streamed once, each recorded connection replayed
on a connection of its own to its target, concurrently.

The capture is read on the calling thread.  Each recorded TCP connection gets a
worker thread and a bounded queue of its messages in capture order (client
messages to send, the recorded server's messages to compare with); the reader
waits when a queue is full, so memory stays flat whatever the capture's size.
A worker sends the client's messages in order; when it comes to a recorded
reply, it waits for the target's reply to the same call before it goes on, so
the replay keeps the recording's causality (a client that waited for a reply
before its next request waits here too; one that pipelined pipelines) and keys
learned from a reply are known before the requests that follow it.
"""

from __future__ import annotations

import queue
import re
import socket
import threading
import time
from dataclasses import dataclass, field

from ..corbaloc import Corbaloc, IIOPAddress, parse_object_url
from ..errors import PycdrError
from ..giop.header import MsgType
from ..iiop import IIOPProfile, decode_profile
from ..ior import ior_from_string
from ..orb.tls import DEFAULT_TLS, Endpoint, TLSOptions, TransportError, choose_endpoint, connect
from ..pcap import CaptureDecoder
from ..pcapread import CaptureReader
from ..pcapwrite import StreamPcapWriter
from ..tcpstream import TcpReassembler
from .compare import Comparison, KeyMap
from .session import (CLIENT_MESSAGES, DIFFERENT, FAILED, SAME, OperationFilter,
                      ReplaySession)

QUEUE_MESSAGES = 256          # per recorded connection, between the reader and its worker
RECV_SIZE = 1 << 16
_END = object()
_SERVER_FIRST = frozenset((MsgType.Reply.value, MsgType.LocateReply.value))
_HOST_PORT = re.compile(r"\[?([^\]=/]+?)\]?:(\d{1,5})")


class ReplayError(PycdrError):
    """A replay that cannot start: a bad --target or --key, an unusable target."""


@dataclass(frozen=True)
class Target:
    """Where a recorded server's connections go, and the object key of the reference
    given (None for host:port: the recorded keys are sent unchanged)."""
    endpoint: Endpoint
    key: bytes | None = None
    text: str = ""

    def describe(self) -> str:
        return f"{self.endpoint.host}:{self.endpoint.port}" + \
            (" (TLS)" if self.endpoint.tls else "")


def parse_target(text: str, tls: TLSOptions = DEFAULT_TLS) -> Target:
    """IOR:..., corbaloc:... or host:port (TLS as the reference says, or --tls)."""
    text = text.strip()
    try:
        if text[:4].upper() == "IOR:":
            return _from_profiles(ior_from_string(text).profiles, text, tls)
        if text.lower().startswith("corbaloc:"):
            url = parse_object_url(text)
            if not isinstance(url, Corbaloc) or url.is_rir:
                raise ReplayError(f"{text!r}: a corbaloc URL with an iiop address is needed")
            iiop = [a for a in url.addresses if isinstance(a, IIOPAddress)]
            if not iiop:
                raise ReplayError(f"{text!r}: no iiop address")
            return _from_profiles(Corbaloc(tuple(iiop), url.key).to_ior().profiles, text, tls)
    except ReplayError:
        raise
    except PycdrError as e:
        raise ReplayError(f"bad target {text[:60]!r}: {e}") from e
    host, port = parse_host_port(text, "target")
    return Target(Endpoint(host, port, tls.force, "--tls" if tls.force else "host:port"),
                  None, text)


def _from_profiles(profiles, text: str, tls: TLSOptions) -> Target:
    for p in profiles:
        prof = decode_profile(p, lenient=True)
        if isinstance(prof, IIOPProfile):
            return Target(choose_endpoint(prof, tls), prof.object_key, text)
    raise ReplayError(f"{text[:60]!r}: the reference has no IIOP profile")


def parse_host_port(text: str, what: str) -> tuple:
    m = _HOST_PORT.fullmatch(text.strip())
    if not m or int(m.group(2)) > 65535:
        raise ReplayError(f"bad {what} {text!r}: expected IOR:..., corbaloc:... or host:port"
                          if what == "target" else f"bad {what} {text!r}: expected host:port")
    return m.group(1), int(m.group(2))


def parse_targets(texts, tls: TLSOptions = DEFAULT_TLS) -> tuple:
    """(default target or None, {recorded server "host:port": target}) from --target
    values: ``NEW`` or ``OLDHOST:PORT=NEW``."""
    default, mapped = None, {}
    for text in texts:
        old, sep, new = text.partition("=")
        if sep and _HOST_PORT.fullmatch(old.strip()):
            host, port = parse_host_port(old, "recorded server")
            mapped[_endpoint_text(host, port)] = parse_target(new, tls)
        elif default is not None:
            raise ReplayError("several --target without OLDHOST:PORT=: name the recorded "
                              "server of each (OLDHOST:PORT=NEW)")
        else:
            default = parse_target(text, tls)
    return default, mapped


def parse_key(text: str) -> tuple:
    """--key OLD=NEW: each side text (corbaloc %-escapes allowed) or hex: 0x..."""
    old, sep, new = text.partition("=")
    if not sep or not old or not new:
        raise ReplayError(f"bad --key {text!r}: expected OLD=NEW")
    return _key_bytes(old), _key_bytes(new)


def _key_bytes(text: str) -> bytes:
    if text.startswith("0x"):
        try:
            return bytes.fromhex(text[2:])
        except ValueError:
            raise ReplayError(f"bad key {text!r}: not hex after 0x") from None
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "%":
            try:
                out.append(int(text[i + 1:i + 3], 16))
            except ValueError:
                raise ReplayError(f"bad key {text!r}: % must be followed by two hex digits") \
                    from None
            i += 3
        else:
            out += text[i].encode("utf-8")
            i += 1
    return bytes(out)


def _endpoint_text(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass
class ReplayOptions:
    default_target: Target | None = None
    targets: dict = field(default_factory=dict)      # recorded server text -> Target
    keys: dict = field(default_factory=dict)
    comparison: Comparison | None = None
    selected: OperationFilter = field(default_factory=OperationFilter)
    rate: float | None = None                        # requests per second, all connections
    timeout: float = 10.0                            # waiting for one reply
    tls: TLSOptions = DEFAULT_TLS
    ports: tuple | None = None
    pcap: str | None = None
    dry_run: bool = False


class RateLimit:
    """At most ``rate`` sends a second, across the threads."""

    def __init__(self, rate: float | None):
        self.interval = 1.0 / rate if rate else 0.0
        self._next = time.monotonic()
        self._lock = threading.Lock()

    def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = time.monotonic()
            at = max(self._next, now)
            self._next = at + self.interval
        if at > now:
            time.sleep(at - now)


class SkippedServers:
    def __init__(self):
        self.connections: dict = {}      # server text -> connections
        self.requests: dict = {}         # server text -> client messages not sent


class _Recorded:
    """The reader's view of one recorded connection."""
    __slots__ = ("client_key", "server", "target", "queue", "worker", "session")

    def __init__(self):
        self.client_key = None     # the client flow's key, once known
        self.server = ""
        self.target = None         # Target; None: skipped (no target for its server)
        self.queue = None
        self.worker = None
        self.session = None


class Replay:
    """Replays a capture (see the module doc).  ``report(call)`` hears of every
    call as it is decided, from the worker threads, one at a time."""

    def __init__(self, options: ReplayOptions, report, listing=None):
        self.options = options
        self.comparison = options.comparison or Comparison()
        defaults = {}
        for server, target in options.targets.items():
            if target.key is not None:
                defaults[server] = target.key
        self.keys = KeyMap(options.keys, defaults)
        self.comparison.keys = self.keys
        self._report_lock = threading.Lock()
        self._report = report
        self.listing = listing           # dry run: listing(call, data) per message
        self.rate = RateLimit(options.rate)
        self.skipped = SkippedServers()
        self.capture_errors: list = []
        self.capture_error_count = 0
        self.connections = 0
        self._recorded: dict = {}        # tcpstream Connection -> _Recorded
        self._default_used_by = None     # the recorded server the plain --target went to
        self._pcap = None
        self._aborted = False
        self._workers: list = []

    # -- before the capture ------------------------------------------------------------
    def check_targets(self, timeout: float = 3.0) -> None:
        """Connect to each target once (and close): TransportError when one cannot
        be reached, before anything of the capture is sent."""
        targets = list(self.options.targets.values())
        if self.options.default_target is not None:
            targets.append(self.options.default_target)
        for target in targets:
            connect(target.endpoint, self.options.tls, timeout=timeout).close()

    # -- the reader --------------------------------------------------------------------
    def run(self, reader: CaptureReader, progress=None) -> None:
        """Replay every connection of ``reader``'s capture; returns when all are
        done.  ``progress()`` is called now and then from this thread."""
        if self.options.pcap and not self.options.dry_run:
            self._pcap = StreamPcapWriter(self.options.pcap)
        decoder = CaptureDecoder(self._capture_error, self.options.ports, True,
                                 raw_message=self._message)
        sink = _Sink(decoder, self._closed)
        tcp = TcpReassembler(sink)
        try:
            with reader:
                n = 0
                for segment in reader:
                    tcp.feed(segment)
                    n += 1
                    if progress is not None and n % 1024 == 0:
                        progress()
                tcp.finish()
        except BaseException:
            self._aborted = True
            for rec in list(self._recorded.values()):
                self._end(rec)
            raise
        finally:
            for worker in self._workers:
                worker.join()
            if self._pcap is not None:
                self._pcap.close()
            if progress is not None:
                progress()

    def _capture_error(self, entry: dict) -> None:
        self.capture_error_count += 1
        if len(self.capture_errors) < 20:
            error = entry["error"]
            self.capture_errors.append(f"frame {entry['frame']} ({entry['src']} -> "
                                       f"{entry['dst']}): {error['message']}")

    def _message(self, flow, raw: bytes, frame: int, ts: int) -> None:
        conn = flow.connection
        rec = self._recorded.get(conn)
        if rec is None:
            rec = self._recorded[conn] = _Recorded()
        if rec.client_key is None:
            t = raw[7]
            if t in CLIENT_MESSAGES:
                rec.client_key, rec.server = flow.key, flow.dst
            elif t in _SERVER_FIRST:
                rec.client_key = (flow.key[2], flow.key[3], flow.key[0], flow.key[1])
                rec.server = flow.src
            else:
                return                   # which side is which is not known yet
            self._start(rec, conn.index)
        from_client = flow.key == rec.client_key
        if rec.target is None:
            if from_client and raw[7] in CLIENT_MESSAGES:
                self.skipped.requests[rec.server] = self.skipped.requests.get(rec.server, 0) + 1
            return
        if self.options.dry_run:
            if from_client:
                data, call = rec.session.outgoing(raw, ts)
                if call is not None or data is not None:
                    self.listing(call, data, rec)
            return
        rec.queue.put((from_client, raw, ts))

    def _start(self, rec: _Recorded, index: int) -> None:
        target = self.options.targets.get(rec.server)
        if target is None and self.options.default_target is not None and \
                self._default_used_by in (None, rec.server):
            target = self.options.default_target
            if self._default_used_by is None and target.key is not None:
                self.keys.defaults[rec.server] = target.key
            self._default_used_by = rec.server
        if target is None:
            self.skipped.connections[rec.server] = self.skipped.connections.get(rec.server, 0) + 1
            return
        rec.target = target
        self.connections += 1
        rec.session = ReplaySession(self.keys, connection=index, server=rec.server,
                                    selected=self.options.selected)
        if self.options.dry_run:
            return
        rec.queue = queue.Queue(QUEUE_MESSAGES)
        rec.worker = threading.Thread(target=self._worker, args=(rec,), daemon=True,
                                      name=f"replay-{index}")
        if len(self._workers) >= 64:        # the finished ones forgotten: memory stays flat
            self._workers = [w for w in self._workers if w.is_alive()]
        self._workers.append(rec.worker)
        rec.worker.start()

    def _closed(self, connection) -> None:
        rec = self._recorded.pop(connection, None)
        if rec is not None:
            self._end(rec)

    def _end(self, rec: _Recorded) -> None:
        if rec.queue is not None:
            rec.queue.put(_END)
            rec.queue = None

    # -- a worker: one recorded connection -------------------------------------------------
    def _worker(self, rec: _Recorded) -> None:
        worker = _Worker(self, rec)
        try:
            worker.run()
        finally:
            worker.close()

    def report(self, call) -> None:
        with self._report_lock:
            self._report(call)


class _Sink:
    """TcpReassembler's sink: the CaptureDecoder frames, the replay hears of closes."""

    def __init__(self, decoder: CaptureDecoder, closed):
        self.data = decoder.data
        self.gap = decoder.gap
        self._decoder_closed = decoder.closed
        self._closed = closed

    def closed(self, connection) -> None:
        self._decoder_closed(connection)
        self._closed(connection)


class _Worker:
    def __init__(self, replay: Replay, rec: _Recorded):
        self.replay = replay
        self.rec = rec
        self.queue = rec.queue
        self.session: ReplaySession = rec.session
        self.timeout = replay.options.timeout
        self.sock = None
        self.pcap_flow = None
        self.failure = ""            # why nothing more can be sent

    def run(self) -> None:
        session = self.session
        get = self.queue.get
        while True:
            item = get()
            if item is _END:
                break
            from_client, raw, ts = item
            if self.replay._aborted:
                continue
            if from_client:
                self._send(raw, ts)
            else:
                for call in session.recorded(raw, ts):
                    self._await(call, self.timeout)
                    self._decide(call)
        if self.replay._aborted:
            return
        # The recording ends here: calls it holds no reply to.
        for call in session.pending():
            self._await(call, self.timeout)
            self._decide(call)

    def _send(self, raw: bytes, ts: int) -> None:
        data, call = self.session.outgoing(raw, ts)
        if call is not None and call.outcome is not None:
            self.replay.report(call)
            return
        if data is None:
            return
        if not self.failure and self.sock is None:
            self._connect()
        if not self.failure and self.session.target_closed:
            self.failure = self.session.target_closed
        if self.failure:
            if call is not None:
                call.outcome, call.reason = FAILED, self.failure
                self.session.finished(call)
                self.replay.report(call)
            return
        self.replay.rate.wait()
        try:
            self.sock.sendall(data)
        except OSError as e:
            self.failure = f"sending to the target failed: {e}"
            if call is not None:
                call.outcome, call.reason = FAILED, self.failure
                self.session.finished(call)
                self.replay.report(call)
            return
        if self.pcap_flow is not None:
            self.pcap_flow.sends(True, data)
        if call is not None:
            call.sent_at = time.monotonic()
            if not call.expects_reply:
                call.outcome = SAME
                self.replay.report(call)

    def _connect(self) -> None:
        target = self.rec.target
        try:
            self.sock = connect(target.endpoint, self.replay.options.tls, timeout=self.timeout)
        except TransportError as e:
            self.failure = str(e)
            return
        if self.replay._pcap is not None:
            try:
                client = self.sock.getsockname()[:2]
                server = self.sock.getpeername()[:2]
                self.pcap_flow = self.replay._pcap.connection(client, server)
            except OSError:
                self.pcap_flow = None

    def _await(self, call, timeout: float) -> None:
        """Receive from the target until ``call`` has its replayed reply, the
        connection ends, or ``timeout`` passes."""
        if call.replayed_reply is not None or self.sock is None or call.sent_at is None:
            return
        deadline = time.monotonic() + timeout
        while call.replayed_reply is None and self.session.target_closed is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(RECV_SIZE)
            except socket.timeout:
                return
            except OSError as e:
                self.session.target_closed = f"receiving from the target failed: {e}"
                return
            if data and self.pcap_flow is not None:
                self.pcap_flow.sends(False, data)
            self.session.replayed(data, time.monotonic())

    def _decide(self, call) -> None:
        session = self.session
        session.finished(call)
        if call.outcome is not None:
            return
        recorded, replayed = call.recorded_reply, call.replayed_reply
        if call.sent_at is None:
            call.outcome, call.reason = FAILED, self.failure or "not sent"
        elif replayed is None and session.target_closed and recorded is not None:
            call.outcome, call.reason = FAILED, session.target_closed
        elif call.cancelled and (recorded is None or replayed is None):
            call.outcome, call.reason = SAME, "cancelled: a reply may or may not come"
        else:
            call.differences = self.replay.comparison.replies(call.operation, recorded,
                                                              replayed)
            if replayed is None and recorded is not None:
                call.reason = f"no reply within {self.timeout:g} s"
            call.outcome = DIFFERENT if call.differences else SAME
        self.replay.report(call)

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            if self.pcap_flow is not None:
                self.pcap_flow.close()
