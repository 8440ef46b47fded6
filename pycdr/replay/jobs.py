"""``pycdr replay --jobs N``: the capture's connections replayed by N worker processes.

One process replays at 20-22 us of CPU a call (benchmarks/bench_replay.py, issue 28); a
client of several connections on several cores makes more calls than that.  So:

1. Each of the N forked workers scans a shard of the capture (:func:`scan_capture`:
   the connections whose ports' sum hashes to its number modulo N, the other segments
   dropped before TCP reassembly; streaming, with the reader, reassembly and GIOP
   framing the replay uses) and finds, per recorded connection, the frame that
   opened it (connections are numbered in that order, over all shards), its server,
   the object keys its requests use, its first selected request's key, and the keys
   its recorded replies may teach (a forward; with --idl, a result or exception that
   may hold a reference: :meth:`Comparison.taught_keys`).

2. The parent makes the plan from the scans (:func:`plan_from_scans`), deciding
   once for all workers, in capture order, what one process shares between
   connections:

   - the plain ``--target`` goes to the server whose connection came first, and
     each target reference's key to its server's first key (as ``KeyMap.defaults``
     does in one process): an explicit mapping every worker is given;
   - keys learned from replies: the connections that use or teach a key some reply
     may teach are one group, replayed by one worker, so a key is learned where it
     is used and compared where it is taught again.  Conservative: a key taught
     and used is a tie even if the teaching reply comes after the use;
   - skipped servers and capture errors are counted once, from the scans.

   The groups go to the workers largest first (by client messages), each to the
   least loaded.

3. Each worker reads the whole capture again but passes on only the segments of
   its connections' address pairs, then keeps its connections: the k-th connection
   of an address pair is the same in every process (one pair's connections follow
   one another), so the planned index is found by (pair, k).  It replays them as one
   process would (``Replay``), at ``--rate / N``, and sends its calls to the parent
   in batches.

4. The parent alone reports: every call goes to ``report`` as one process reports
   it (a :class:`ReportedCall`), in the order each worker decided them (within a
   connection as with one process; across connections interleaved otherwise).
   Per-worker ``--pcap`` files are merged by time into the one asked for.  A worker
   that fails, or Ctrl-C, stops all of them.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import time
import traceback
from dataclasses import dataclass, field, replace

from ..errors import PycdrError
from ..giop.header import GIOP_MAGIC, MsgType
from ..giop.messages import LocateReply, LocateRequest, Reply, Request
from ..giop.events import MessageReceived
from ..capture.giop import CaptureDecoder
from ..capture.read import CaptureReader
from ..capture.write import merge_pcap_files
from ..capture.tcp import TcpReassembler
from .compare import Comparison
from .capture_feed import capture_error_line
from .runner import ReplayOptions, Replay, SkippedServers, _SERVER_FIRST
from .targets import ReplayError
from .session import (CLIENT_MESSAGES, DIFFERENT, FAILED, LOCATE_OPERATION, RawReply,
                      ReplyStream, _decode_client_message, _name_end, _profile_key, _ULONG,
                      reply_message)

_REQUEST = MsgType.Request.value
_LOCATE_REQUEST = MsgType.LocateRequest.value
# Calls a worker sends at once (a pipe message per call would cost more than the call),
# and how long a worker keeps calls before it sends them anyway (the progress bar).
BATCH = 256
BATCH_SECONDS = 0.25
_MIX = 2654435761               # Knuth's multiplicative hash (an odd 32-bit constant)


class ReplayJobsError(ReplayError):
    """A worker of ``--jobs`` failed, or the replay was interrupted."""


# -- the plan -------------------------------------------------------------------------
class ConnectionIds:
    """A TCP connection's identity that every process reading the capture agrees on,
    whatever other connections' segments it skips: its address pair (the smaller of its
    4-tuple's two orientations) and its rank among the connections of that pair (a
    pair's connections follow one another: the next one starts after the last one
    closed), counted when a connection first delivers bytes or a gap."""

    def __init__(self):
        self._ids: dict = {}        # Connection -> (pair, rank), while open
        self._ranks: dict = {}      # pair -> connections of it seen

    def of(self, flow) -> tuple:
        connection = flow.connection
        known = self._ids.get(connection)
        if known is None:
            a, b, c, d = flow.key
            pair = min((a, b, c, d), (c, d, a, b))
            rank = self._ranks.get(pair, 0)
            self._ranks[pair] = rank + 1
            known = self._ids[connection] = (pair, rank)
        return known

    def forget(self, connection) -> None:
        self._ids.pop(connection, None)


@dataclass
class PlannedConnection:
    ident: tuple                # (pair, rank): see ConnectionIds
    created: int                # the frame that opened it (its index follows from it)
    server: str
    sides_known: tuple          # (frame, n): where its first GIOP message told the sides
    messages: int = 0           # client messages
    calls: int = 0              # of them Requests, LocateRequests, CancelRequests
    keys: set = field(default_factory=set)      # object keys its requests use
    taught: set = field(default_factory=set)    # keys its recorded replies may teach
    first_key: tuple | None = None   # ((frame, n), key): its first selected request's key
    index: int = -1             # the reassembler's index (the reports' "connection")


@dataclass
class CaptureScan:
    """What one reader of the capture (or of a shard of its address pairs) found."""
    connections: list           # PlannedConnection, GIOP seen (sides known)
    created: list               # the frame that opened each of its TCP connections
    errors: list                # ((frame, n), line): the first 20
    error_count: int


@dataclass
class JobPlan:
    """What :func:`plan_from_scans` decided: the workers' connections, the keys decided
    up front, the skipped servers and the capture's errors (counted once, here)."""
    workers: list               # per worker: [PlannedConnection] (none empty)
    explicit: dict              # --key plus each server's first key -> target key
    targets: dict               # recorded server -> Target (the plain --target placed)
    skipped: SkippedServers
    capture_errors: list
    capture_error_count: int
    groups: int = 0


class _Scan:
    """One connection during the scan: which side is the client, its replies' operations."""
    __slots__ = ("planned", "client_key", "replies", "awaited")

    def __init__(self):
        self.planned = None
        self.client_key = None
        self.replies = None         # ReplyStream of the recorded replies
        self.awaited: dict = {}     # request id -> operation (a reply expected)


class _StampingReassembler(TcpReassembler):
    """A TcpReassembler that notes the frame that opened each connection: connections
    are numbered in that order, which a reader of a shard of the capture can only tell
    from the frames (the other shards' connections are numbered too)."""

    def __init__(self, sink):
        super().__init__(sink)
        self.created: dict = {}         # Connection -> frame, while open
        self.frames: list = []          # every connection's

    def _new_flow(self, key: tuple):
        flow = super()._new_flow(key)
        if len(flow.connection.flows) == 1:
            self.created[flow.connection] = self._frame
            self.frames.append(self._frame)
        return flow


def plan_jobs(path, options: ReplayOptions, jobs: int) -> JobPlan:
    """Read the capture at ``path`` once, in this process, and share its connections
    among at most ``jobs`` workers (see the module doc; run_jobs scans in the workers)."""
    return plan_from_scans([scan_capture(path, options)], options, jobs)


def scan_capture(path, options: ReplayOptions, shard: tuple | None = None) -> CaptureScan:
    """The connections of the capture at ``path`` (with ``shard`` (k, n): only those
    whose ports' sum hashes to k modulo n, the others' segments dropped before
    reassembly) as the plan needs them."""
    comparison = options.comparison or Comparison()
    keys = options.keys
    selected = options.selected
    errors: list = []
    error_count = [0]
    scans: dict = {}
    ids = ConnectionIds()
    planned: list = []
    order = [0]                 # messages seen: orders those of one frame

    def capture_error(entry):
        error_count[0] += 1
        if len(errors) < 20:
            order[0] += 1
            errors.append(((entry["frame"], order[0]), capture_error_line(entry)))

    def message(flow, raw, frame, ts):
        conn = flow.connection
        scan = scans.get(conn)
        if scan is None:
            scan = scans[conn] = _Scan()
        order[0] += 1
        t = raw[7]
        if scan.client_key is None:
            if t in CLIENT_MESSAGES:
                scan.client_key, server = flow.key, flow.dst
            elif t in _SERVER_FIRST:
                k = flow.key
                scan.client_key, server = (k[2], k[3], k[0], k[1]), flow.src
            else:
                return
            scan.planned = PlannedConnection(ids.of(flow), tcp.created[conn], server,
                                             (frame, order[0]))
            scan.replies = ReplyStream(lazy=True)
            planned.append(scan.planned)
        p = scan.planned
        if flow.key == scan.client_key:
            p.messages += 1
            if t in CLIENT_MESSAGES:
                p.calls += 1
            if t == _REQUEST or t == _LOCATE_REQUEST:
                fields = _request_fields(raw)
                if fields is not None:
                    rid, operation, key, expects_reply = fields
                    if key is not None:
                        p.keys.add(key)
                        # (the key a target reference's key may go to: KeyMap.target_key
                        # of one process gives it the server's first key not mapped by
                        # --key; decided by plan_from_scans over every connection)
                        if p.first_key is None and key not in keys and selected(operation):
                            p.first_key = ((frame, order[0]), key)
                    if expects_reply:
                        scan.awaited[rid] = operation
        else:
            _recorded_reply(scan, raw, comparison)

    def closed(connection):
        scans.pop(connection, None)
        ids.forget(connection)
        tcp.created.pop(connection, None)

    decoder = CaptureDecoder(capture_error, options.ports, True, raw_message=message)
    tcp = _StampingReassembler(_PlanSink(decoder, closed, ids))
    with CaptureReader(path) as reader:
        feed = tcp.feed
        if shard is None:
            for segment in reader:
                feed(segment)
        else:
            k, n = shard
            for segment in reader:
                # The ports' sum is the same both ways; mixed, since Linux gives
                # connect() even ports (the sums of one server's connections would all
                # have one parity: one shard of two would get them all).
                if ((segment[3] + segment[5]) * _MIX >> 16) % n == k:
                    feed(segment)
    tcp.finish()
    return CaptureScan(planned, tcp.frames, errors, error_count[0])


def plan_from_scans(scans: list, options: ReplayOptions, jobs: int) -> JobPlan:
    """The plan from the scans of the capture's shards: what one process would decide
    as it reads the capture, decided here in capture order."""
    # Connections are numbered by the frame that opened them, over all shards.
    index = {frame: i for i, frame in enumerate(sorted(f for s in scans for f in s.created))}
    connections = sorted((c for s in scans for c in s.connections),
                         key=lambda c: c.sides_known)
    targets = dict(options.targets)
    default_used_by = None
    skipped = SkippedServers()
    planned = []
    for c in connections:
        c.index = index[c.created]
        target = targets.get(c.server)
        if target is None and options.default_target is not None and \
                default_used_by in (None, c.server):
            target = targets[c.server] = options.default_target
            default_used_by = c.server
        if target is None:
            skipped.connections[c.server] = skipped.connections.get(c.server, 0) + 1
            skipped.requests[c.server] = skipped.requests.get(c.server, 0) + c.calls
        else:
            planned.append(c)
    # Each target reference's key goes to its server's first key (in capture order) that
    # --key does not map.  (Two servers whose first keys are the same bytes: the earlier
    # one's mapping holds for both, and the later server's reference key goes to the
    # first key of its next connection that differs, where one process would take the
    # next key of the same connection: the scans keep one key a connection.)
    explicit = dict(options.keys)
    firsts = sorted((c.first_key, c.server) for c in planned if c.first_key is not None)
    defaults = {s: t.key for s, t in targets.items() if t.key is not None}
    for (_, key), server in firsts:
        if server in defaults and key not in explicit:
            explicit[key] = defaults.pop(server)
    errors = sorted(e for s in scans for e in s.errors)[:20]
    groups = _groups(sorted(planned, key=lambda c: c.index), explicit)
    return JobPlan(_balanced(groups, jobs), explicit, targets, skipped,
                   [line for _, line in errors], sum(s.error_count for s in scans),
                   len(groups))


class _PlanSink:
    """The plan's TcpReassembler sink: the decoder frames; every connection is given its
    identity (ConnectionIds) the first time it delivers anything, as in the workers."""

    def __init__(self, decoder, closed, ids: ConnectionIds):
        self._data = decoder.data
        self._gap = decoder.gap
        self._decoder_closed = decoder.closed
        self._closed = closed
        self._ids = ids

    def data(self, flow, data, frame, ts):
        self._ids.of(flow)
        self._data(flow, data, frame, ts)

    def gap(self, flow, missing, frame, ts):
        self._ids.of(flow)
        self._gap(flow, missing, frame, ts)

    def closed(self, connection):
        self._decoder_closed(connection)
        self._closed(connection)


def _request_fields(raw: bytes):
    """(request id, operation, object key or None, a reply expected) of a recorded
    Request or LocateRequest, or None when it cannot be read (the replay fails it, or
    it is a fragment that names no key of its own)."""
    if raw[7] == _REQUEST and raw[4:6] >= b"\x01\x02" and raw[:4] == GIOP_MAGIC and \
            not raw[6] & ~1 and raw[20:22] == b"\0\0":
        # A whole GIOP 1.2+ KeyAddr Request (nearly all): read in place.
        ulong = _ULONG[raw[6] & 1]
        name_end = _name_end(raw, ulong)
        if name_end is not None:
            key_end = 28 + ulong.unpack_from(raw, 24)[0]
            at = key_end + (-key_end & 3)
            return (ulong.unpack_from(raw, 12)[0], raw[at + 4:name_end - 1].decode("latin-1"),
                    raw[28:key_end], bool(raw[16] & 1))
    try:
        msg = _decode_client_message(raw)
    except PycdrError:
        return None
    if isinstance(msg, Request):
        return (msg.request_id, msg.operation, msg.object_key or _profile_key(msg.target),
                bool(msg.response_expected))
    if isinstance(msg, LocateRequest):
        return (msg.request_id, LOCATE_OPERATION,
                msg.object_key or _profile_key(msg.target), True)
    return None


def _recorded_reply(scan: _Scan, raw: bytes, comparison: Comparison) -> None:
    """The keys a recorded server message may teach, added to its connection's."""
    reply = scan.replies.whole_reply(raw)
    if reply is not None:
        operation = scan.awaited.pop(reply.request_id, None)
        if operation is not None and comparison.may_teach(operation, reply):
            scan.planned.taught |= comparison.taught_keys(operation, reply.message())
        return
    for event in scan.replies.feed(raw):
        if type(event) is RawReply:
            reply = event
        elif isinstance(event, MessageReceived) and \
                isinstance(event.message, (Reply, LocateReply)):
            reply = event.message
        else:
            continue
        operation = scan.awaited.pop(reply.request_id, None)
        if operation is not None and comparison.may_teach(operation, reply):
            scan.planned.taught |= comparison.taught_keys(operation, reply_message(reply))


def _groups(planned: list, explicit: dict) -> list:
    """The connections that must share a worker: those using or teaching one key that
    some reply may teach (and that no --key or first-key mapping fixes)."""
    parent = list(range(len(planned)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    taught = set()
    for p in planned:
        taught |= p.taught
    taught -= explicit.keys()
    first: dict = {}            # key -> the first connection tied to it
    for i, p in enumerate(planned):
        for key in (p.keys & taught) | p.taught:
            j = first.setdefault(key, i)
            a, b = find(i), find(j)
            if a != b:
                parent[b] = a
    groups: dict = {}
    for i, p in enumerate(planned):
        groups.setdefault(find(i), []).append(p)
    return list(groups.values())


def _balanced(groups: list, jobs: int) -> list:
    """The groups shared among at most ``jobs`` workers: largest first (by client
    messages), each to the least loaded worker."""
    loads = [[0, []] for _ in range(max(1, min(jobs, len(groups))))]
    for group in sorted(groups, key=lambda g: -sum(p.messages for p in g)):
        least = min(loads, key=lambda w: w[0])
        least[0] += sum(p.messages for p in group)
        least[1].extend(group)
    return [sorted(w[1], key=lambda p: p.index) for w in loads if w[1]]


# -- the calls, as the parent hears of them ----------------------------------------------
class ReportedCall:
    """What the parent needs of a call a worker decided: what ReplaySummary.add,
    difference_lines and --json read of a session's Call."""
    __slots__ = ("operation", "outcome", "recorded_latency", "recorded_reply",
                 "replayed_latency", "connection", "recorded_id", "reason", "differences",
                 "_json", "kind", "sent_bytes", "replayed_raw")

    def __init__(self, operation, outcome, recorded_latency, had_recorded_reply,
                 replayed_latency, connection, recorded_id, reason, differences, json,
                 kind="", sent_bytes=b"", replayed_raw=b""):
        self.operation = operation
        self.outcome = outcome
        self.recorded_latency = recorded_latency
        self.recorded_reply = True if had_recorded_reply else None
        self.replayed_latency = replayed_latency
        self.connection = connection
        self.recorded_id = recorded_id
        self.reason = reason
        self.differences = differences
        self._json = json
        # what `pycdr replay` explains of a call a system exception answered (a differing
        # or failed call's bytes only: the others need none)
        self.kind = kind
        self.sent_bytes = sent_bytes
        self.replayed_raw = replayed_raw

    def to_json(self) -> dict:
        return self._json


def _reported(call, with_json: bool) -> tuple:
    explained = call.outcome in (DIFFERENT, FAILED)
    return (call.operation, call.outcome, call.recorded_latency,
            call.recorded_reply is not None, call.replayed_latency, call.connection,
            call.recorded_id, call.reason, call.differences,
            call.to_json() if with_json else None, call.kind,
            bytes(call.sent_bytes) if explained else b"",
            bytes(call.replayed_raw) if explained else b"")


# -- the workers ---------------------------------------------------------------------------
class _Selection:
    """A worker's connections: the address pairs they use (segments of others are
    dropped before reassembly) and (pair, rank) -> planned index."""

    def __init__(self, connections: list):
        self.indices = {p.ident: p.index for p in connections}
        flows = set()
        for (a, b, c, d), _ in self.indices:
            flows.add((a, b, c, d))
            flows.add((c, d, a, b))
        self.flows = frozenset(flows)
        self.ids = ConnectionIds()

    def index_of(self, flow) -> int | None:
        return self.indices.get(self.ids.of(flow))


def worker_options(options: ReplayOptions, plan: JobPlan, k: int) -> ReplayOptions:
    """Worker ``k``'s options: the keys and targets decided by the plan, its share of
    --rate, its own --pcap file."""
    n = len(plan.workers)
    # The targets' keys went to each server's first key in the plan (plan.explicit): a
    # worker that mapped them again would give them to its own first unmapped key.
    targets = {server: replace(target, key=None) for server, target in plan.targets.items()}
    return replace(options, default_target=None, targets=targets, keys=plan.explicit,
                   rate=options.rate / n if options.rate else None,
                   pcap=f"{options.pcap}.worker{k}" if options.pcap else None)


def run_jobs(path, options: ReplayOptions, jobs: int, report, with_json: bool,
             progress=None) -> JobPlan:
    """Replay the capture at ``path`` in ``jobs`` forked processes: each scans a shard of
    the capture's address pairs, the plan is made here from their scans, each replays
    the connections the plan gives it.  ``report(call)`` hears of every call (a
    ReportedCall); ``progress(bytes)`` now and then, the capture's bytes the slowest
    worker has read (a progress bar, as one process's reading).  Returns the plan
    (its skipped servers and capture errors are the replay's).  Raises ReplayJobsError
    when a worker fails or on Ctrl-C, after every worker stopped."""
    context = multiprocessing.get_context("fork")
    pipes: dict = {}          # the parent's end -> worker number
    workers: list = []
    plan = None
    try:
        for k in range(jobs):
            mine, theirs = context.Pipe()
            worker = context.Process(target=_worker, daemon=True, name=f"replay-job-{k}",
                                     args=(theirs, path, options, (k, jobs), with_json,
                                           os.getpid()))
            worker.start()
            theirs.close()
            pipes[mine] = k
            workers.append(worker)
        scans = [None] * jobs
        for k, kind, payload, _ in _messages(pipes, workers, set()):
            scans[k] = payload
            if all(s is not None for s in scans):
                break
        plan = plan_from_scans(scans, options, jobs)
        read: dict = {}             # worker with connections -> capture bytes it read
        for (pipe, k) in pipes.items():
            if k < len(plan.workers):
                read[k] = 0
                pipe.send((plan.workers[k], plan.explicit, plan.targets, len(plan.workers)))
            else:
                pipe.send(None)     # (fewer groups than jobs: nothing to replay)
        done = {k for k in pipes.values() if k not in read}
        for k, kind, payload, bytes_read in _messages(pipes, workers, done):
            for fields in payload:
                report(ReportedCall(*fields))
            read[k] = bytes_read
            if kind == "done":
                done.add(k)
                if len(done) == jobs:
                    break
            if progress is not None:
                progress(min(read.values()))
        for w in workers:
            w.join()
    except KeyboardInterrupt:
        raise ReplayJobsError("interrupted: the replay workers were stopped") from None
    finally:
        for pipe in pipes:
            pipe.close()
        for w in workers:
            if w.is_alive():
                w.terminate()
        for w in workers:
            w.join()
        if options.pcap and plan is not None:
            parts = [f"{options.pcap}.worker{k}" for k in range(len(plan.workers))]
            try:
                if all(os.path.exists(part) for part in parts):
                    merge_pcap_files(parts, options.pcap)
            finally:
                for part in parts:
                    try:
                        os.unlink(part)
                    except OSError:
                        pass
    return plan


def _messages(pipes: dict, workers: list, done: set):
    """(worker, kind, payload, bytes read) as the workers not ``done`` send them; a
    worker's error or end without its results raises ReplayJobsError."""
    while True:
        for pipe in multiprocessing.connection.wait(
                [p for p, k in pipes.items() if k not in done]):
            k = pipes[pipe]
            try:
                kind, payload, bytes_read = pipe.recv()
            except (EOFError, OSError):
                workers[k].join(timeout=1)
                raise ReplayJobsError(f"replay worker {k} ended without its results (exit "
                                      f"code {workers[k].exitcode})") from None
            if kind == "error":
                raise ReplayJobsError(f"replay worker {k} failed: {payload}")
            yield k, kind, payload, bytes_read


def _end_with(parent: int) -> None:
    """Have the kernel end this worker when its parent ends, however it ends (SIGKILL
    too: the parent's cleanup does not run then).  Linux only; elsewhere the worker
    ends at its next send to the gone parent."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)    # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:          # it ended before the request
        os._exit(1)


def _worker(pipe, path, options: ReplayOptions, shard: tuple, with_json: bool,
            parent: int) -> None:
    """A forked worker: scans its shard of the capture and sends the scan; gets its
    connections (or None) and replays them, its calls sent in batches, then ("done",
    ...); or ("error", text)."""
    # Ctrl-C reaches the whole process group: the parent alone decides, and stops us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _end_with(parent)
    batch: list = []
    sent_at = [time.monotonic()]
    reader = None

    def send(kind="calls"):
        pipe.send((kind, batch[:], reader.bytes_read if reader is not None else 0))
        batch.clear()
        sent_at[0] = time.monotonic()

    def report(call):
        batch.append(_reported(call, with_json))
        if len(batch) >= BATCH or time.monotonic() - sent_at[0] > BATCH_SECONDS:
            send()

    def progress():
        if batch and time.monotonic() - sent_at[0] > BATCH_SECONDS:
            send()
    status = 0
    try:
        try:
            pipe.send(("scan", scan_capture(path, options, shard), 0))
            given = pipe.recv()
            if given is not None:
                connections, explicit, targets, n = given
                plan = JobPlan([connections] * n, explicit, targets, SkippedServers(), [], 0)
                reader = CaptureReader(path)
                Replay(worker_options(options, plan, shard[0]), report,
                       selection=_Selection(connections)).run(reader, progress)
            send("done")
        except (BrokenPipeError, EOFError):
            status = 1                      # the parent stopped listening
        except BaseException as e:          # (any failure is the parent's to report)
            status = 1
            text = str(e) if isinstance(e, PycdrError) else \
                "".join(traceback.format_exception_only(type(e), e)).strip()
            try:
                pipe.send(("error", text, 0))
            except OSError:
                pass
    finally:
        pipe.close()
        os._exit(status)                    # (a forked child: no atexit of the parent's)
