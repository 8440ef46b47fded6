"""The replay's I/O: the capture streamed once, each recorded connection replayed
on a connection of its own to its target, the connections concurrently.

One thread, one loop (a selector over the target connections): no thread
hand-offs, and the GIL never passes between a reader and the senders (measured:
threads per connection made a replay 10 times slower than this loop).
Each recorded TCP connection has a queue of its messages in capture order
(client messages to send, the recorded server's messages to compare with); the
capture is read on only while no queue holds QUEUE_MESSAGES, so memory stays
flat whatever the capture's size.  A connection's client messages are sent in
order; when its queue comes to a recorded reply, it waits for the target's
reply to the same call before it goes on, so the replay keeps the recording's
causality (a client that waited for a reply before its next request waits here
too; one that pipelined pipelines) and keys learned from a reply are known
before the requests that follow it.  The other connections go on meanwhile.

With ``window`` N > 1 (``--window``) a connection does not wait for the replies the
recording waited for: up to N of its calls are outstanding, their requests
written in one go on a non-blocking socket as the target takes them, the replies
matched by request id; it waits only for a reply that may teach a key.

A connection's steady state -- requests of shapes seen before, replies that
repeat the recorded bytes but for the request id -- runs in C when
pycdr._replaylane is built (and PYCDR_PURE=1 is not set) and the caller takes its
calls counted (``tally``): see Replay._lane_enter.  The calls it finishes are
counted, not reported one by one; anything it cannot judge comes back here as
ordinary Calls first.  While such lanes hold plain TCP connections, their sockets
are polled, read and written in C too (pycdr._replaylane.pump, Replay._pump_turn):
a reply's arrival and the next request's send cost no Python.
"""

from __future__ import annotations

import collections
import os
import re
import select
import selectors
import socket
import ssl
import struct
import time
from dataclasses import dataclass, field

_Lane = _pump = _c_read = None
PUMP_MAX = 0
if os.environ.get("PYCDR_PURE") != "1":
    try:
        from .._replaylane import PUMP_MAX, Lane as _Lane, pump as _pump
        from ..codec._speedups import read as _c_read
    except ImportError:          # not built: every call in Python
        pass

from ..addressing.corbaloc import Corbaloc, IIOPAddress, parse_object_url
from ..errors import PycdrError
from ..giop.header import MAX_MESSAGE_SIZE, MsgType
from ..giop.messages import Reply, decode_message
from ..addressing.iiop import IIOPProfile, decode_profile
from ..codec.ior import ior_from_string
from ..orb.client import resolve_object_url
from ..orb.tls import DEFAULT_TLS, Endpoint, TLSOptions, TransportError, choose_endpoint, connect
from ..capture.giop import CaptureDecoder
from ..capture.read import CaptureReader
from ..capture.stats import LatencyHistogram
from ..capture.write import StreamPcapWriter
from ..capture.tcp import TcpReassembler
from .compare import Comparison, KeyMap
from .session import (CLIENT_MESSAGES, DIFFERENT, FAILED, SAME, Call,
                      OperationFilter, RawReply, Reencoding, ReplaySession, reply_message)

QUEUE_MESSAGES = 256          # per recorded connection, read but not handled yet
# Segments read before the connections are served again: more calls a write and a turn
# of the loop (256 against 64: 18 % more calls/s pipelined, four connections; as recorded
# the same).
READ_BATCH = 256
RECV_SIZE = 1 << 16
# How long a --window 1 replay polls for a reply before it sleeps on the selector, when
# a core is free for it: a reply on loopback or a LAN comes within tens of microseconds,
# and sleeping on each one costs the wake-up (measured, load average 1.2-1.5 on two
# cores: --window 1 against omniORBpy made 9k calls/s sleeping on every reply, 13-16k
# polling first).  On busy cores the polling takes CPU the target or others need
# (measured, load 2-3.6: no gain against omniORBpy, 20-40 % more CPU a call and fewer
# calls against the reference ORB, a Python server), so it is only done while the load
# average is below the CPUs the process may use (checked every SPIN_CHECK seconds).
# A pipelined replay has other calls in flight and sleeps at once.
SPIN = 300e-6
SPIN_CHECK = 1.0
# A pipelined connection waits for the calls it has out before its next request, so that
# its lane takes it on -- but not after SHORT_RUNS runs of the lane in a row that took
# fewer than LANE_RUN items each (a round trip lost for each; see _advance).
LANE_RUN = 16
SHORT_RUNS = 4
# The lanes' sockets are served in C (pycdr._replaylane.pump) for at most PUMP_BUDGET
# seconds before the loop's own checks (time-outs, progress) run again.  Between turns
# the capture is read READ_BATCH segments at a time, as without pump() (measured, the
# four-connection capture to omniORBpy as recorded: 64 at a time 27k calls/s against
# 33k for 256, 1,024 34k; smaller batches, or the lanes served within a batch, no
# better: benchmarks/README.md, eighteenth session).
PUMP_BUDGET = 0.02
_EV_READY, _EV_LEFT, _EV_RECV_ERROR, _EV_CLOSED, _EV_HANDED, _EV_UNSENT = range(6)
_POLL_ANY = select.POLLIN | select.POLLERR | select.POLLHUP
_POLL_WRITE = select.POLLOUT | select.POLLERR | select.POLLHUP
_END = object()
_ULONG = (struct.Struct(">I"), struct.Struct("<I"))
_REQUEST = MsgType.Request.value
_SERVER_FIRST = frozenset((MsgType.Reply.value, MsgType.LocateReply.value))
_HOST_PORT = re.compile(r"\[?([^\]=/]+?)\]?:(\d{1,5})")


def _cores_free() -> bool:
    """Whether the load average of the last minute leaves a core idle."""
    try:
        return os.getloadavg()[0] < len(os.sched_getaffinity(0))
    except (OSError, AttributeError):       # (no load average, or no affinity: not Linux)
        return False


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
    """IOR:..., corbaloc:..., corbaname:... (resolved through its naming service: a
    NamingError if it cannot be) or host:port (TLS as the reference says, or --tls)."""
    text = text.strip()
    if text.lower().startswith("corbaname:"):
        return _from_profiles(resolve_object_url(text, tls=tls).profiles, text, tls)
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
    reencoding: Reencoding | None = None             # --giop / --byte-order
    window: int = 1                                  # requests outstanding per connection


class RateLimit:
    """At most ``rate`` sends a second, all connections together."""

    def __init__(self, rate: float | None):
        self.interval = 1.0 / rate if rate else 0.0
        self._next = time.monotonic()

    def wait(self) -> None:
        if not self.interval:
            return
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
    """One recorded connection: the reader's view of it, and its replay.

    ``items``: its messages in capture order not handled yet ((from_client, raw,
    ts), or _END).  ``waiting``: the calls whose replayed reply must come (or
    time out) before the next item is handled -- with a window, the calls sent
    whose replayed reply has not come -- oldest first, with the deadline of the
    first."""
    __slots__ = ("client_key", "server", "target", "session", "items", "waiting",
                 "deadline", "sock", "pcap_flow", "failure", "ended", "replies_lost",
                 "undecided", "barrier", "unsent", "outbuf", "write_deadline", "prepared",
                 "lane", "lane_on", "lane_stamp", "lane_taken", "short_runs")

    def __init__(self):
        self.client_key = None     # the client flow's key, once known
        self.server = ""
        self.target = None         # Target; None: skipped (no target for its server)
        self.session = None
        self.items: collections.deque = collections.deque()
        self.waiting: collections.deque = collections.deque()
        self.deadline = 0.0
        self.sock = None
        self.pcap_flow = None
        self.failure = ""          # why nothing more can be sent
        self.ended = False         # the recording's connection ended
        self.replies_lost = False  # bytes the server sent are missing from the capture
        # --window > 1: the calls whose replayed reply came before their recorded one
        # (replay id -> Call); the call whose replayed reply may teach a key (nothing
        # more is sent before it comes); the messages to send in one go.
        self.undecided: dict = {}
        self.barrier = None
        self.unsent: list = []
        # --window > 1 (a non-blocking socket): the bytes the target has not taken yet,
        # written as it reads (the replay reads its replies meanwhile: neither side
        # waits on the other), and when they must have been taken by.
        self.outbuf = bytearray()
        self.write_deadline = 0.0
        # --window 1: the next client message, rewritten while the reply it follows is
        # awaited ((bytes, Call) as ReplaySession.outgoing gives them), sent as soon as
        # that reply comes, before it is compared (see Replay._prepare).
        self.prepared = None
        # The connection's pycdr._replaylane.Lane (None: none), whether it holds the
        # connection now, and what its shape table was built from.
        self.lane = None
        self.lane_on = False
        self.lane_stamp = None
        # Items the lane took since it last took the connection on; how many of its
        # last runs in a row took fewer than LANE_RUN (see _advance).
        self.lane_taken = 0
        self.short_runs = 0


class Replay:
    """Replays a capture (see the module doc).  ``report(call)`` hears of every
    call as it is decided -- but with ``tally``, the same and skipped calls a
    connection's lane finishes in C: ``tally(operation, same, skipped,
    recorded latencies, replayed latencies)`` counts those
    (ReplaySummary.add_counted)."""

    def __init__(self, options: ReplayOptions, report, listing=None, selection=None,
                 tally=None):
        self.options = options
        # --jobs (pycdr.replay.jobs): this process replays only the connections of
        # ``selection`` (its ``flows``: their 4-tuples both ways, the others' segments
        # dropped before reassembly; ``index_of(flow)``: the planned index, or None).
        self.selection = selection
        self.comparison = options.comparison or Comparison()
        defaults = {}
        for server, target in options.targets.items():
            if target.key is not None:
                defaults[server] = target.key
        self.keys = KeyMap(options.keys, defaults)
        self.comparison.keys = self.keys
        self.report = report
        self.listing = listing           # dry run: listing(call, data, recorded) per message
        self.timeout = options.timeout
        self._dry_run = options.dry_run
        self.window = max(1, options.window)
        self._spin = 0.0                 # how long _poll polls now (see SPIN)
        self._spin_checked = -SPIN_CHECK
        self.rate = RateLimit(options.rate)
        self.skipped = SkippedServers()
        self.capture_errors: list = []
        self.capture_error_count = 0
        self.connections = 0
        self._recorded: dict = {}        # capture.tcp Connection -> _Recorded
        self._live: set = set()          # _Recorded being replayed
        self._ready: set = set()         # _Recorded with items to handle
        self._full = 0                   # how many have QUEUE_MESSAGES items waiting
        self._default_used_by = None     # the recorded server the plain --target went to
        self._pcap = None
        self._selector = selectors.DefaultSelector()
        self._registered = 0             # sockets the selector watches
        # Lanes only where nothing needs each call as it goes: the calls counted, no
        # --rate, --pcap, --giop/--byte-order, no worker's selection.
        self.tally = tally
        self._lanes = _Lane is not None and tally is not None and \
            not options.rate and not options.pcap and options.reencoding is None and \
            selection is None and not options.dry_run
        # Non-blocking sockets, written through _Recorded.outbuf: with a window, and with
        # lanes as recorded too (a socket with a timeout polls before each send and
        # receive: a system call more each time).
        self._nonblocking = self.window > 1 or self._lanes
        # Lanes on plain TCP sockets served in C while at most PUMP_MAX sockets are open
        # (pump() polls them all each round; more go through the selector).
        self._pumping = self._lanes and _pump is not None
        self._read_all = False           # the capture read to its end
        self.pump_turns = 0              # turns whose sockets pump() served
        self._lane_ops: list = []        # a lane's operation indexes -> names
        self._lane_value_table = None    # Lane.values for the operations so far
        self.lane_calls = 0              # calls the lanes finished (counted, not reported)
        # The connections with a lane, open: what their lanes finished is counted when
        # one hands its connection back or closes, before progress(), and at the end.
        self._with_lanes: set = set()
        self._lane_op_index: dict = {}

    # -- before the capture ------------------------------------------------------------
    def check_targets(self, timeout: float = 3.0) -> None:
        """Connect to each target once (and close): TransportError when one cannot
        be reached, before anything of the capture is sent."""
        targets = list(self.options.targets.values())
        if self.options.default_target is not None:
            targets.append(self.options.default_target)
        for target in targets:
            connect(target.endpoint, self.options.tls, timeout=timeout).close()

    # -- the loop ------------------------------------------------------------------------
    def run(self, reader: CaptureReader, progress=None) -> None:
        """Replay every connection of ``reader``'s capture; returns when all are
        done.  ``progress()`` is called now and then."""
        if self.options.pcap and not self.options.dry_run:
            self._pcap = StreamPcapWriter(self.options.pcap)
        decoder = CaptureDecoder(self._capture_error, self.options.ports, True,
                                 raw_message=self._message)
        sink = _Sink(decoder, self._closed, self._gap)
        tcp = TcpReassembler(sink if self.selection is None else
                             _SelectedSink(sink, self.selection))
        if self.selection is None:
            feed = tcp.in_order_feed(decoder.take_whole)
        else:       # (every segment through the selection's sink, which counts them)
            feed = _only_flows(tcp.feed, self.selection.flows)
        try:
            with reader:
                segments = iter(reader)
                n = 0
                while True:
                    # Read on while no connection has a full queue (memory stays flat).
                    while not self._full:
                        segment = next(segments, None)
                        if segment is None:
                            break
                        feed(segment)
                        n += 1
                        if (self._ready or self._pumping and self._with_lanes) and \
                                n % READ_BATCH == 0:
                            break
                        if progress is not None and n % 1024 == 0:
                            self._lane_tallies()
                            progress()
                    else:
                        segment = True
                    if segment is None:
                        tcp.finish()
                        self._read_all = True
                        break
                    self._turn(block=bool(self._full))
                while self._live or self._ready:
                    self._turn(block=True)
        finally:
            for rec in list(self._live):
                self._close(rec)
            self._lane_tallies()
            self._selector.close()
            if self._pcap is not None:
                self._pcap.close()
            if progress is not None:
                progress()

    def _turn(self, block: bool) -> None:
        """Handle the connections' items as far as they go, then what the targets
        sent (waiting for it when ``block``)."""
        ready = self._ready
        while ready:
            self._advance(ready.pop())
        live = self._live
        if not live:
            return
        timeout = 0.0
        if block:
            deadlines = [r.deadline for r in live if r.waiting or
                         r.lane_on and r.lane.waiting] + \
                [r.write_deadline for r in live if r.outbuf]
            timeout = max(0.0, min(deadlines) - time.monotonic()) if deadlines else 0.0
        if self._registered:
            if self._pumping and self._registered <= PUMP_MAX:
                pumped = self._pump_turn(block, timeout)
                if pumped is None:
                    got = self._poll(timeout) if timeout else self._selector.select(0.0)
                elif pumped[0] or not timeout:
                    got = ()
                else:       # nothing came while pump() polled: sleep on the selector
                    got = self._selector.select(max(0.0, timeout - pumped[1]))
            else:
                got = self._poll(timeout) if timeout else self._selector.select(0.0)
            for key, events in got:
                rec = key.data
                if events & selectors.EVENT_WRITE:
                    self._write(rec)
                if events & selectors.EVENT_READ and rec.sock is not None:
                    self._receive(rec)
        elif timeout:
            time.sleep(timeout)
        now = time.monotonic()
        for rec in live:        # (neither _send_failed nor _settle ends a connection)
            if rec.lane_on and rec.lane.waiting and rec.deadline <= now:
                self._lane_exit(rec)        # (the oldest call's time-out, in Python)
            if rec.outbuf and rec.write_deadline <= now:
                self._send_failed(rec, f"sending to the target failed: it took no bytes "
                                       f"for {self.timeout:g} s")
            if rec.waiting and rec.deadline <= now:
                self._settle(rec, now, timed_out=True)

    def _pump_turn(self, block: bool, timeout: float):
        """Serve the sockets in C (pycdr._replaylane.pump) while the lanes need no
        Python; then what they handed back, as _receive and _advance would.  None when
        no lane is on a plain socket (the selector serves them all); else whether
        anything happened, and the seconds it took."""
        entries, recs, lanes = [], [], []
        for key in self._selector.get_map().values():
            rec = key.data
            if rec.lane_on and not rec.outbuf and not isinstance(rec.sock, ssl.SSLSocket):
                entries.append((key.fd, 0, rec.lane, rec.items))
                lanes.append((rec, len(rec.items)))
            else:
                entries.append((key.fd, select.POLLIN | (select.POLLOUT if rec.outbuf else 0),
                                None, None))
            recs.append(rec)
        if not lanes:
            return None
        start = time.monotonic()
        spin = 0.0
        if block and timeout:
            spin = self._spin_for(start, timeout)
            budget = min(timeout, PUMP_BUDGET)
        else:
            budget = PUMP_BUDGET
        events, progressed = _pump(entries, spin, budget, -1 if self._read_all else self._full,
                                   QUEUE_MESSAGES)
        self.pump_turns += 1
        for rec, before in lanes:
            after = len(rec.items)
            rec.lane_taken += before - after
            if before >= QUEUE_MESSAGES > after:
                self._full -= 1
            self._lane_deadline(rec)
        for i, kind, payload, now in events:
            rec = recs[i]
            if rec.sock is None:
                continue
            if kind == _EV_READY:
                if payload & _POLL_WRITE and rec.outbuf:
                    self._write(rec)
                if payload & _POLL_ANY and rec.sock is not None:
                    self._receive(rec)
                continue
            judged: list = []
            if kind == _EV_LEFT:
                self._lane_left(rec, True, payload, now, judged)
                self._received(rec, judged)
            elif kind == _EV_RECV_ERROR or kind == _EV_CLOSED:
                if kind == _EV_RECV_ERROR:
                    rec.session.target_closed = f"receiving from the target failed: " \
                        f"{OSError(payload, os.strerror(payload))}"
                self._lane_left(rec, False, b"", now, judged)
                self._receive_end(rec)
                self._received(rec, judged)
            elif kind == _EV_HANDED:        # as _lane_advance hands back
                if payload:
                    rec.unsent.append(payload)
                self._flush(rec)
                if rec.lane_on:
                    self._lane_exit(rec)
                self._advance_in_python(rec)
            else:                           # _EV_UNSENT: the rest as the target reads
                rec.unsent.append(payload)
                self._flush(rec)
        return bool(events or progressed), time.monotonic() - start

    def _spin_for(self, now: float, timeout: float) -> float:
        """The seconds to poll without sleeping before sleeping up to ``timeout``:
        SPIN as recorded (--window 1) while a core is free (looked at every SPIN_CHECK
        seconds), else none."""
        if self.window != 1:
            return 0.0
        if now - self._spin_checked >= SPIN_CHECK:
            self._spin = SPIN if _cores_free() else 0.0
            self._spin_checked = now
        return min(self._spin, timeout)

    def _poll(self, timeout: float) -> list:
        """What the selector reports within ``timeout`` seconds: polled for up to SPIN
        seconds (--window 1, a core free), then slept on."""
        select = self._selector.select
        monotonic = time.monotonic
        start = monotonic()
        until = start + self._spin_for(start, timeout)
        while monotonic() < until:
            got = select(0.0)
            if got:
                return got
        return select(max(0.0, timeout - (monotonic() - start)))

    def _capture_error(self, entry: dict) -> None:
        self.capture_error_count += 1
        if len(self.capture_errors) < 20:
            self.capture_errors.append(capture_error_line(entry))

    # -- the reader's side ----------------------------------------------------------------
    def _message(self, flow, raw: bytes, frame: int, ts: int) -> None:
        conn = flow.connection
        rec = self._recorded.get(conn)
        if rec is not None and rec.session is not None and not self._dry_run:
            self._put(rec, (flow.key == rec.client_key, raw, ts))   # the common case
            return
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
            if self.selection is None:
                self._start(rec, conn.index)
            else:
                index = self.selection.index_of(flow)
                if index is not None:    # (else another worker's: rec.target stays None)
                    self._start(rec, index)
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
            else:       # a call is forgotten at its recorded reply (memory stays flat)
                for call in rec.session.recorded(raw, ts):
                    rec.session.finished(call)
            return
        self._put(rec, (from_client, raw, ts))

    def _put(self, rec: _Recorded, item) -> None:
        rec.items.append(item)
        if len(rec.items) == QUEUE_MESSAGES:
            self._full += 1
        self._ready.add(rec)

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
                                    selected=self.options.selected,
                                    reencoding=self.options.reencoding)
        if not self.options.dry_run:
            self._live.add(rec)

    def _gap(self, flow) -> None:
        rec = self._recorded.get(flow.connection)
        if rec is not None and rec.client_key is not None and flow.key != rec.client_key:
            rec.replies_lost = True

    def _closed(self, connection) -> None:
        rec = self._recorded.pop(connection, None)
        if rec is not None and rec in self._live:
            self._put(rec, _END)

    # -- a connection's replay ----------------------------------------------------------------
    def _advance(self, rec: _Recorded) -> None:
        """Handle ``rec``'s items until one has to wait for the target.

        With --window N > 1, client messages are sent in order while fewer than N of
        its calls wait for their replayed reply, not waiting for each one's reply as
        the recording did -- but for a reply that may teach a key (a forward, a
        reference the IDL says a result may hold): nothing is sent after it before it
        comes.  A call is decided once both its replies are there (or cannot come)."""
        if self._lanes and (rec.lane_on or self._lane_enter(rec)) and self._lane_advance(rec):
            return
        self._advance_in_python(rec)

    def _advance_in_python(self, rec: _Recorded) -> None:
        """_advance, with no lane holding ``rec``."""
        session = rec.session
        items = rec.items
        windowed = self.window > 1
        if rec.prepared is not None and not rec.waiting:
            self._send_prepared(rec)
        while items and rec.barrier is None and len(rec.waiting) < self.window:
            if rec.waiting and self._lanes and not rec.undecided and items[0] is not _END \
                    and items[0][0] and not rec.failure and session.target_closed is None \
                    and session.shapes and (rec.short_runs < SHORT_RUNS or rec.lane_stamp != (
                        session.shapes_version, len(session.shapes), self.keys.version)):
                # The calls sent are let finish before the next request, so that the
                # lane takes the connection on (Python could go on forever with a window
                # full): a round trip's wait.  Not while a call awaits its recorded
                # reply (it may lie behind this request), nor before a request shape is
                # known (a GIOP 1.0/1.1 connection never has one), nor when the lane
                # handed the last runs back at once (but for shapes or keys new since).
                break
            if len(items) == QUEUE_MESSAGES:
                self._full -= 1
            item = items.popleft()
            if item is _END:
                rec.ended = True
                for call in session.abandoned():
                    self.report(call)
                # The recording ends here: calls it holds no reply to.
                if windowed:        # decided now, or as their replayed reply comes (or not)
                    for call in list(rec.undecided.values()):
                        self._decide(rec, call)
                    rec.undecided.clear()
                    if rec.waiting:
                        self._settle(rec, time.monotonic())
                else:
                    self._wait_for(rec, session.pending())
                break
            from_client, raw, ts = item
            if from_client:
                self._send(rec, raw, ts)
            elif not windowed:
                self._wait_for(rec, session.recorded(raw, ts))
            else:
                for call in session.recorded(raw, ts):
                    if rec.undecided.pop(call.replay_id, None) is not None or \
                            call.sent_at is None or session.target_closed:
                        self._decide(rec, call)
                    elif self.comparison.may_teach(call.operation, call.recorded_reply):
                        rec.barrier = call
        if windowed:
            self._flush(rec)
        elif rec.waiting and items and rec.prepared is None:
            self._prepare(rec)
        if rec.ended and not rec.waiting and not items and not rec.outbuf:
            self._close(rec)

    # -- a connection's steady state in C (pycdr._replaylane) --------------------------------
    def _lane_enter(self, rec: _Recorded) -> bool:
        """Give ``rec`` to its lane when Python holds nothing of it: no call awaits a
        reply or a decision, no barrier, no fragmented message under way, the reply
        streams idle, the target connected and open, request shapes known."""
        session = rec.session
        if rec.waiting or rec.undecided or rec.barrier is not None or rec.sock is None or \
                rec.failure or rec.ended or rec.prepared is not None or not session.quiet \
                or not session.shapes:
            return False
        lane = rec.lane
        if lane is None:
            lane = rec.lane = _Lane(self.window, MAX_MESSAGE_SIZE, LatencyHistogram.BUCKETING)
            self._with_lanes.add(rec)
        stamp = (session.shapes_version, len(session.shapes), self.keys.version)
        if stamp != rec.lane_stamp:
            lane.shapes = self._lane_table(session)
            lane.values = self._lane_values()
            rec.lane_stamp = stamp
            rec.short_runs = 0
        lane.next_id = session.next_id
        rec.lane_on = True
        rec.lane_taken = 0
        return True

    def _lane_table(self, session: ReplaySession) -> dict:
        """The lane's shapes: request bytes 4..8 + 16..the name's end -> ((body offset,
        the bytes between the name and the body, bytes 16..the body rewritten for the
        key the shape's requests go to now or None, operation index, flags), ...), in
        the order ReplaySession._outgoing_shaped tries them.  Flags: 1 oneway, 2 not
        selected, bit 8 + s: a reply of status s that repeats the recorded bytes is the
        same (Comparison.judged_by_bytes; any other may teach a key)."""
        table = {}
        selected = self.options.selected
        judged = self.comparison.judged_by_bytes
        index = self._lane_op_index
        for prefix, known in session.shapes.items():
            entries = []
            for start, tail, shape in known:
                operation = shape.operation
                op = index.get(operation)
                if op is None:
                    op = index[operation] = len(self._lane_ops)
                    self._lane_ops.append(operation)
                flags = (1 if shape.kind == "oneway" else 0) | (0 if selected(operation) else 2)
                for status in range(6):
                    if judged(operation, status):
                        flags |= 1 << (8 + status)
                rewritten = shape.rewritten.get(self.keys.target_key(shape.key, session.server))
                entries.append((start, tail, rewritten, op, flags))
            table[prefix] = tuple(entries)
        return table

    def _lane_values(self):
        """Lane.values: per operation index, how the lanes judge a reply whose bytes
        differ from the recorded one's (Comparison.value_nodes), with the C decoder's
        read(); rebuilt when operations are added."""
        ops = self._lane_ops
        if self._lane_value_table is None or len(self._lane_value_table[1]) != len(ops):
            nodes = self.comparison.value_nodes
            self._lane_value_table = (_c_read, tuple(nodes(op) for op in ops)) \
                if _c_read is not None else None
        return self._lane_value_table

    def _lane_advance(self, rec: _Recorded) -> bool:
        """The lane takes ``rec``'s items as far as it can; False when it handed the
        connection back (its calls are Calls again: Python goes on)."""
        lane, items = rec.lane, rec.items
        was_full = len(items) >= QUEUE_MESSAGES
        before = len(items)
        data, handed_over = lane.advance(items)
        rec.lane_taken += before - len(items)
        if was_full and len(items) < QUEUE_MESSAGES:
            self._full -= 1
        if data:
            rec.unsent.append(data)
        if handed_over:
            self._flush(rec)        # (before anything Python sends; as recorded, it would not)
            self._lane_exit(rec)
            return False
        self._lane_deadline(rec)
        self._flush(rec)
        return True

    def _lane_deadline(self, rec: _Recorded) -> None:
        sent = rec.lane.oldest_sent
        if sent is not None:
            rec.deadline = sent + self.timeout

    def _lane_tallies(self) -> None:
        for rec in self._with_lanes:
            self._lane_results(rec.lane)

    def _lane_results(self, lane) -> None:
        ops, tally = self._lane_ops, self.tally
        for op, same, skipped, recorded, replayed in lane.results():
            self.lane_calls += same + skipped
            tally(ops[op], same, skipped, recorded, replayed)

    def _lane_judge(self, rec: _Recorded, left: bytes, now: float, judged: list):
        """Bytes the lane handed back: while they begin with the replayed reply of a
        call it holds whose bytes differ from the recorded reply's (an ORB that leaves
        padding uninitialised, as omniORB does), that call leaves the lane, its reply
        decoded as Python's stream would have it, onto ``judged`` (to be compared value
        by value: _decide), and the lane goes on with the rest.  What is left for the
        stream (None: nothing)."""
        lane, session = rec.lane, rec.session
        while left:
            if len(left) < 12 or left[:4] != b"GIOP":
                return left
            end = 12 + _ULONG[left[6] & 1].unpack_from(left, 8)[0]
            if end > len(left) or end - 12 > MAX_MESSAGE_SIZE:
                return left
            raw = left[:end]
            try:
                msg = decode_message(raw, field_offsets=False)[0]
            except PycdrError:
                return left         # (the stream's lenient connection says what is wrong)
            if not isinstance(msg, Reply):
                return left
            taken = lane.take_differing(raw)
            if taken is None:
                return left
            op, recorded_id, replay_id, request_ts, sent, sent_at, recorded, recorded_ts = taken
            call = Call(session.connection, session.server, self._lane_ops[op], "request",
                        recorded_id, request_ts)
            call.replay_id, call.sent_bytes, call.sent_at = replay_id, sent, sent_at
            call.recorded_reply, call.recorded_raw = RawReply(recorded, recorded_id), recorded
            call.recorded_latency = max(0, recorded_ts - request_ts) / 1e9
            call.replayed_reply, call.replayed_raw = msg, raw
            call.replayed_latency = max(0.0, now - sent_at)
            judged.append(call)
            left = lane.replayed(left[end:], now) if len(left) > end else None
        return left

    def _lane_exit(self, rec: _Recorded) -> None:
        """Take ``rec`` back from its lane: the calls it holds become Calls, in the
        state Python's own handling would have left them in, and Python goes on."""
        lane = rec.lane
        rec.lane_on = False
        rec.short_runs = 0 if rec.lane_taken >= LANE_RUN else rec.short_runs + 1
        self._lane_results(lane)
        session = rec.session
        session.next_id = lane.next_id
        ops = self._lane_ops
        held = []
        for (op, recorded_id, replay_id, request_ts, sent, sent_at, recorded, recorded_ts,
             replayed, replayed_at, settled, awaited_at) in lane.materialize():
            call = Call(session.connection, session.server, ops[op], "request", recorded_id,
                        request_ts)
            call.replay_id, call.sent_bytes, call.sent_at = replay_id, sent, sent_at
            session.calls[recorded_id] = call
            session.by_replay_id[replay_id] = call
            held.append((call, recorded, recorded_ts, replayed, replayed_at, settled,
                         awaited_at))
        # (a call holds one reply at most: the lane finishes one that has both)
        for call, recorded, recorded_ts, replayed, replayed_at, *_ in held:
            if recorded is not None:
                session.recorded(recorded, recorded_ts)
            elif replayed is not None:
                session.replayed(replayed, replayed_at)
        now = time.monotonic()
        if self.window == 1:
            # As recorded (Replay._wait_for): a call waits once its recorded reply is read;
            # the others wait for it in the session's books.
            for call, recorded, *_, awaited_at in held:
                if recorded is not None:
                    if not rec.waiting:
                        rec.deadline = max(now, awaited_at + self.timeout)
                    rec.waiting.append(call)
            return self._lane_rest(rec)
        for call, *_, settled, _ in held:
            if settled:         # its replayed reply came, and every earlier call's
                rec.undecided[call.replay_id] = call
            else:
                rec.waiting.append(call)
        if rec.waiting:
            rec.deadline = max(now, rec.waiting[0].sent_at + self.timeout)
        self._lane_rest(rec)

    def _lane_rest(self, rec: _Recorded) -> None:
        rest = rec.lane.take_buffer()       # (a reply cut short: completes nothing yet)
        if rest:
            rec.session.replayed(rest, time.monotonic())

    def _prepare(self, rec: _Recorded) -> None:
        """(--window 1) Rewrite the next client message while the replies it follows
        are awaited, when none of them may teach a key that its rewrite would need:
        the replayed reply's arrival then costs a send before anything else, as a
        client's next call follows its last reply."""
        item = rec.items[0]
        # (Requests only: a CancelRequest names a call the replies awaited may finish.)
        if item is _END or not item[0] or item[1][7] != _REQUEST or rec.sock is None or \
                rec.failure or self.rate.interval:
            return
        if self._lanes and rec.session.shapes and rec.short_runs < SHORT_RUNS:
            return          # the lane takes the connection on once the replies came
        may_teach = self.comparison.may_teach
        for call in rec.waiting:
            if may_teach(call.operation, call.recorded_reply):
                return
        if len(rec.items) == QUEUE_MESSAGES:
            self._full -= 1
        rec.items.popleft()
        rec.prepared = rec.session.outgoing(item[1], item[2])

    def _send_prepared(self, rec: _Recorded) -> None:
        data, call = rec.prepared
        rec.prepared = None
        self._transmit(rec, data, call)

    def _flush(self, rec: _Recorded) -> None:
        """Send the messages gathered by a windowed _advance in one go (as far as the
        target takes them now; the rest as it reads)."""
        if not rec.unsent:
            return
        if not rec.failure:
            if not rec.outbuf:
                rec.write_deadline = time.monotonic() + self.timeout
            rec.outbuf += b"".join(rec.unsent)
        rec.unsent.clear()
        if rec.outbuf:
            self._write(rec)

    def _write(self, rec: _Recorded) -> None:
        """Write what the target takes of ``rec.outbuf`` now; wait to write the rest
        (the selector tells when) or stop."""
        try:
            n = rec.sock.send(rec.outbuf)
        except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
            n = 0
        except OSError as e:
            self._send_failed(rec, f"sending to the target failed: {e}")
            return
        if n:
            del rec.outbuf[:n]
            rec.write_deadline = time.monotonic() + self.timeout
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if rec.outbuf else 0)
        key = self._selector.get_map().get(rec.sock)
        if key is None:                     # the target closed its side
            if rec.outbuf:
                self._send_failed(rec, rec.session.target_closed or "the target closed "
                                  "the connection")
            return
        if key.events != events:
            self._selector.modify(rec.sock, events, rec)
        if not rec.outbuf:
            self._ready.add(rec)            # (a connection whose recording ended closes)

    def _send_failed(self, rec: _Recorded, why: str) -> None:
        """The target takes no more bytes: the calls waiting for a reply fail, and the
        ones after them."""
        if rec.lane_on:
            self._lane_exit(rec)
        rec.failure = why
        rec.outbuf.clear()
        rec.session.target_closed = rec.session.target_closed or why
        self._settle(rec, time.monotonic())

    def _wait_for(self, rec: _Recorded, calls) -> None:
        for call in calls:
            if call.replayed_reply is not None or call.sent_at is None or \
                    rec.session.target_closed:
                self._decide(rec, call)
            else:
                if not rec.waiting:
                    rec.deadline = time.monotonic() + self.timeout
                rec.waiting.append(call)

    def _send(self, rec: _Recorded, raw: bytes, ts: int) -> None:
        data, call = rec.session.outgoing(raw, ts)
        self._transmit(rec, data, call)

    def _transmit(self, rec: _Recorded, data, call) -> None:
        """Send ``data`` (None: nothing) for ``call`` (None: no call), as
        ReplaySession.outgoing gave them."""
        session = rec.session
        if call is not None and call.outcome is not None:
            self.report(call)
            return
        if data is None:
            return
        if not rec.failure and rec.sock is None:
            self._connect(rec)
        if not rec.failure and session.target_closed:
            rec.failure = session.target_closed
        if not rec.failure:
            self.rate.wait()
            if self.window > 1:
                rec.unsent.append(data)         # sent by _flush
                if self.rate.interval:
                    self._flush(rec)
            elif self._nonblocking:             # as recorded, with lanes: sent now
                rec.unsent.append(data)
                self._flush(rec)
            else:
                try:
                    if rec.outbuf:          # what a lane left unsent goes first
                        rec.sock.sendall(rec.outbuf)
                        rec.outbuf.clear()
                    rec.sock.sendall(data)
                except OSError as e:
                    rec.failure = f"sending to the target failed: {e}"
        if rec.failure:
            if call is not None:
                call.outcome, call.reason = FAILED, rec.failure
                session.finished(call)
                self.report(call)
            return
        if rec.pcap_flow is not None:
            rec.pcap_flow.sends(True, data)
        if call is not None:
            call.sent_at = time.monotonic()
            if not call.expects_reply:
                call.outcome = SAME
                self.report(call)
            elif self.window > 1:
                if not rec.waiting:
                    rec.deadline = call.sent_at + self.timeout
                rec.waiting.append(call)

    def _connect(self, rec: _Recorded) -> None:
        try:
            rec.sock = connect(rec.target.endpoint, self.options.tls, timeout=self.timeout)
        except TransportError as e:
            rec.failure = str(e)
            return
        try:    # a request goes out at once, as an ORB sends it (Nagle would hold it back)
            rec.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        if self._nonblocking:
            rec.sock.setblocking(False)     # see _Recorded.outbuf
        self._selector.register(rec.sock, selectors.EVENT_READ, rec)
        self._registered += 1
        if self._pcap is not None:
            try:
                rec.pcap_flow = self._pcap.connection(rec.sock.getsockname()[:2],
                                                      rec.sock.getpeername()[:2])
            except OSError:
                rec.pcap_flow = None

    def _receive(self, rec: _Recorded) -> None:
        """What the target sent (the socket is readable)."""
        sock = rec.sock
        session = rec.session
        judged: list = []       # calls the lane gave back to compare (see _lane_judge)
        while True:
            try:
                data = sock.recv(RECV_SIZE)
            except (BlockingIOError, ssl.SSLWantReadError):
                break
            except OSError as e:
                session.target_closed = f"receiving from the target failed: {e}"
                data = b""
            if data and rec.pcap_flow is not None:
                rec.pcap_flow.sends(False, data)
            now = time.monotonic()
            if rec.lane_on:
                self._lane_left(rec, data, rec.lane.replayed(data, now) if data else data, now,
                                judged)
            else:
                session.replayed(data, now)
            if not data:
                self._receive_end(rec)
                break
            if not (isinstance(sock, ssl.SSLSocket) and sock.pending()):
                break
        self._received(rec, judged)

    def _lane_left(self, rec: _Recorded, data, left, now: float, judged: list) -> None:
        """``left``, what the lane handed back of the bytes read (``data``; b"": the end)."""
        if left:
            left = self._lane_judge(rec, left, now, judged)
        if left is not None:        # a reply the lane does not judge, or the end
            for call in judged:
                self._decide(rec, call)
            judged.clear()
            self._lane_exit(rec)
            if left or not data:
                rec.session.replayed(left, now)

    def _receive_end(self, rec: _Recorded) -> None:
        """The target closed its side (or reading failed)."""
        self._selector.unregister(rec.sock)
        self._registered -= 1
        if rec.session.target_closed is None:
            rec.session.target_closed = "the target closed the connection"

    def _received(self, rec: _Recorded, judged: list) -> None:
        """After a read: the next request out (as recorded), the calls decided."""
        session = rec.session
        if rec.lane_on:
            self._lane_deadline(rec)
            if self.window == 1 and not rec.lane.waiting:
                self._advance(rec)          # the next request out at once, as a client's
            else:
                self._ready.add(rec)        # (the window may have room again)
            for call in judged:             # (compared once the next request is out)
                self._decide(rec, call)
            return
        waiting = rec.waiting
        if waiting:
            prepared = rec.prepared
            if prepared is not None and prepared[0] is not None and \
                    prepared[1] is not None and prepared[1].outcome is None and \
                    prepared[1].expects_reply and session.target_closed is None and \
                    all(call.replayed_reply is not None for call in waiting):
                # The next request out first; the replies that came are compared after.
                # (Anything else prepared -- a oneway, a skipped call, a call that fails
                # -- waits for _advance, which keeps the order calls are reported in.)
                self._send_prepared(rec)
            self._settle(rec, time.monotonic())

    def _settle(self, rec: _Recorded, now: float, timed_out: bool = False) -> None:
        """Decide the waited-for calls whose reply came (or cannot come, or, when
        ``timed_out``, the first one); handle the items after them."""
        waiting = rec.waiting
        closed = rec.session.target_closed is not None
        windowed = self.window > 1
        while waiting:
            call = waiting[0]
            if call.replayed_reply is None and not closed and not timed_out:
                break
            waiting.popleft()
            timed_out = False
            if rec.barrier is call:
                rec.barrier = None
            if not windowed or call.recorded_reply is not None or rec.ended:
                self._decide(rec, call)
            else:
                rec.undecided[call.replay_id] = call    # until its recorded reply is read
            if waiting:
                rec.deadline = max(now, waiting[0].sent_at + self.timeout) if windowed \
                    else now + self.timeout
        if not waiting or windowed:
            self._ready.add(rec)

    def _decide(self, rec: _Recorded, call) -> None:
        session = rec.session
        session.finished(call)
        if call.outcome is not None:
            return
        recorded, replayed = call.recorded_reply, call.replayed_reply
        if type(replayed) is RawReply and \
                self.comparison.judged_by_bytes(call.operation, recorded.status):
            # The recorded bytes but for the request id, nothing read from them: the same
            # (nearly every call of a target that answers as the old one did).
            call.outcome = SAME
        elif call.sent_at is None:
            call.outcome, call.reason = FAILED, rec.failure or "not sent"
        elif replayed is None and session.target_closed and recorded is not None:
            call.outcome, call.reason = FAILED, session.target_closed
        elif recorded is None and rec.replies_lost:
            call.outcome, call.reason = FAILED, "the recorded reply is lost: bytes the " \
                "server sent are missing from the capture"
        elif call.cancelled and (recorded is None or replayed is None):
            call.outcome, call.reason = SAME, "cancelled: a reply may or may not come"
        else:
            call.differences = self.comparison.replies(
                call.operation, reply_message(recorded), reply_message(replayed))
            if replayed is None and recorded is not None:
                call.reason = f"no reply within {self.timeout:g} s"
                if session.stray_replies:
                    call.reason += f" (the target sent {session.stray_replies} " \
                        f"{'reply' if session.stray_replies == 1 else 'replies'} to request " \
                        f"ids it was not sent, the first {session.first_stray})"
            call.outcome = DIFFERENT if call.differences else SAME
        self.report(call)

    def _close(self, rec: _Recorded) -> None:
        if rec.lane is not None:
            self._lane_results(rec.lane)
            self._with_lanes.discard(rec)
        self._live.discard(rec)
        self._ready.discard(rec)
        if len(rec.items) >= QUEUE_MESSAGES:
            self._full -= 1
        rec.items.clear()
        rec.outbuf.clear()
        if rec.sock is not None:
            if self._selector.get_map() is not None and rec.sock in self._selector.get_map():
                self._selector.unregister(rec.sock)
                self._registered -= 1
            try:
                rec.sock.close()
            except OSError:
                pass
            rec.sock = None
            if rec.pcap_flow is not None:
                rec.pcap_flow.close()


def capture_error_line(entry: dict) -> str:
    """A capture error (a CaptureDecoder error entry) as the replay lists it."""
    return f"frame {entry['frame']} ({entry['src']} -> {entry['dst']}): " \
        f"{entry['error']['message']}"


def _only_flows(feed, flows: frozenset):
    """``feed`` given only the segments of ``flows`` (4-tuples)."""
    def feed_selected(segment):
        if segment[2:6] in flows:
            feed(segment)
    return feed_selected


class _SelectedSink:
    """(--jobs) A sink that tells ``selection`` of each connection the first time it
    delivers anything, as the plan's reader did (see pycdr.replay.jobs.ConnectionIds)."""

    def __init__(self, sink, selection):
        self._sink = sink
        self._seen = selection.ids.of
        self._forget = selection.ids.forget

    def data(self, flow, data, frame, ts):
        self._seen(flow)
        self._sink.data(flow, data, frame, ts)

    def gap(self, flow, missing, frame, ts):
        self._seen(flow)
        self._sink.gap(flow, missing, frame, ts)

    def closed(self, connection):
        self._sink.closed(connection)
        self._forget(connection)


class _Sink:
    """TcpReassembler's sink: the CaptureDecoder frames, the replay hears of gaps and
    closes."""

    def __init__(self, decoder: CaptureDecoder, closed, gap):
        self.data = decoder.data
        self._decoder_gap = decoder.gap
        self._decoder_closed = decoder.closed
        self._closed = closed
        self._gap = gap

    def gap(self, flow, missing: int, frame: int, ts: int) -> None:
        self._decoder_gap(flow, missing, frame, ts)
        self._gap(flow)

    def closed(self, connection) -> None:
        self._decoder_closed(connection)
        self._closed(connection)
