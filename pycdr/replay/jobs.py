"""``pycdr replay --jobs N``: the capture's connections replayed by N worker processes.

One process replays at 20-22 us of CPU a call (benchmarks/README.md, issue 28); a
client of several connections on several cores makes more calls than that.  So:

1. :func:`plan_jobs` reads the capture once (streaming: the reader, the TCP
   reassembly and the GIOP framing the replay uses) and finds, per recorded
   connection, its server, the object keys its requests use and the keys its
   recorded replies may teach (a forward; with --idl, a result or exception that
   may hold a reference: :meth:`Comparison.taught_keys`).  What one process
   shares between connections is decided here once for all workers:

   - the first key of each server (the target reference's key goes to it, as
     ``KeyMap.defaults`` does in one process) becomes an explicit mapping, and
     the plain ``--target`` goes to the server whose connection comes first;
   - keys learned from replies: the connections that use or teach a key some
     reply may teach are one group, replayed by one worker, so a key is learned
     where it is used and compared where it is taught again.  Conservative: a
     key taught and used is a tie even if the teaching reply comes after the
     use (then one process would not have used it either);
   - skipped servers and capture errors are counted here, not by the workers.

   The groups go to the workers largest first, each to the least loaded (by
   client messages).

2. Each worker (forked) reads the whole capture again but passes on only the
   segments of its connections' address pairs (before TCP reassembly: the C
   record walk is all the others cost), then keeps those of its connections:
   the k-th connection of an address pair is the same in every process (one
   pair's connections follow one another), so the planned index is found by
   (pair, k).  It replays them as one process would (``Replay``), at
   ``--rate / N``, and sends its calls to the parent in batches.

3. The parent alone reports: every call goes to ``report`` as one process
   reports it (a :class:`ReportedCall`), in the order each worker decided them
   (within a connection as with one process; across connections, interleaved
   otherwise).  Per-worker ``--pcap`` files are merged by time into the one
   asked for.  A worker that fails, or Ctrl-C, stops all of them.
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
from ..pcap import CaptureDecoder
from ..pcapread import CaptureReader
from ..pcapwrite import merge_pcap_files
from ..tcpstream import TcpReassembler
from .compare import Comparison
from .runner import (ReplayError, ReplayOptions, Replay, SkippedServers, _SERVER_FIRST,
                     capture_error_line)
from .session import (CLIENT_MESSAGES, LOCATE_OPERATION, RawReply, ReplyStream,
                      _decode_client_message, _name_end, _profile_key, _ULONG, reply_message)

_REQUEST = MsgType.Request.value
_LOCATE_REQUEST = MsgType.LocateRequest.value
# Calls a worker sends at once (a pipe message per call would cost more than the call),
# and how long a worker keeps calls before it sends them anyway (the progress bar).
BATCH = 256
BATCH_SECONDS = 0.25


class ReplayJobsError(ReplayError):
    """A worker of ``--jobs`` failed, or the replay was interrupted."""


# -- the plan -------------------------------------------------------------------------
class ConnectionIds:
    """A TCP connection's identity that every process reading the capture agrees on,
    whatever segments it skips: its address pair (the client's 4-tuple, or the first
    segment's) and its rank among the connections of that pair (a pair's connections
    follow one another: the next one starts after the last one closed)."""

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
    index: int                  # the reassembler's index (the reports' "connection")
    ident: tuple                # (pair, rank): see ConnectionIds
    server: str
    messages: int = 0           # client messages
    keys: set = field(default_factory=set)      # object keys its requests use
    taught: set = field(default_factory=set)    # keys its recorded replies may teach


@dataclass
class JobPlan:
    """What :func:`plan_jobs` found: the workers' connections, the keys decided up front,
    the skipped servers and the capture's errors (counted once, here)."""
    workers: list               # per worker: [PlannedConnection] (none empty)
    explicit: dict              # --key plus each server's first key -> target key
    targets: dict               # recorded server -> Target (the plain --target placed)
    skipped: SkippedServers
    capture_errors: list
    capture_error_count: int
    groups: int = 0


class _Scan:
    """One connection during the plan: which side is the client, its replies' operations."""
    __slots__ = ("planned", "client_key", "target", "replies", "awaited")

    def __init__(self):
        self.planned = None
        self.client_key = None
        self.target = None
        self.replies = None         # ReplyStream of the recorded replies
        self.awaited: dict = {}     # request id -> operation (a reply expected)


def plan_jobs(path, options: ReplayOptions, jobs: int) -> JobPlan:
    """Read the capture at ``path`` once and share its connections among at most
    ``jobs`` workers (see the module doc)."""
    comparison = options.comparison or Comparison()
    explicit = dict(options.keys)
    targets = dict(options.targets)
    defaults = {s: t.key for s, t in targets.items() if t.key is not None}
    default_used_by = None
    skipped = SkippedServers()
    errors: list = []
    error_count = [0]
    scans: dict = {}
    ids = ConnectionIds()
    planned: list = []
    selected = options.selected

    def capture_error(entry):
        error_count[0] += 1
        if len(errors) < 20:
            errors.append(capture_error_line(entry))

    def first_key(scan, key):
        # What KeyMap.target_key does in one process for the first key of a server not
        # mapped otherwise: decided here, in capture order, for every worker alike.
        if key is not None and key not in explicit:
            new = defaults.pop(scan.planned.server, None)
            if new is not None:
                explicit[key] = new

    def message(flow, raw, frame, ts):
        nonlocal default_used_by
        conn = flow.connection
        scan = scans.get(conn)
        if scan is None:
            scan = scans[conn] = _Scan()
        t = raw[7]
        if scan.client_key is None:
            if t in CLIENT_MESSAGES:
                scan.client_key, server = flow.key, flow.dst
            elif t in _SERVER_FIRST:
                k = flow.key
                scan.client_key, server = (k[2], k[3], k[0], k[1]), flow.src
            else:
                return
            target = targets.get(server)
            if target is None and options.default_target is not None and \
                    default_used_by in (None, server):
                target = targets[server] = options.default_target
                if default_used_by is None and target.key is not None:
                    defaults[server] = target.key
                default_used_by = server
            if target is None:
                skipped.connections[server] = skipped.connections.get(server, 0) + 1
            else:
                scan.target = target
                scan.planned = PlannedConnection(conn.index, ids.of(flow), server)
                scan.replies = ReplyStream(lazy=True)
                planned.append(scan.planned)
        from_client = flow.key == scan.client_key
        if scan.target is None:
            if from_client and t in CLIENT_MESSAGES:
                server = flow.dst
                skipped.requests[server] = skipped.requests.get(server, 0) + 1
            return
        if from_client:
            scan.planned.messages += 1
            if t == _REQUEST or t == _LOCATE_REQUEST:
                fields = _request_fields(raw)
                if fields is not None:
                    rid, operation, key, expects_reply = fields
                    if key is not None:
                        scan.planned.keys.add(key)
                        if selected(operation):
                            first_key(scan, key)
                    if expects_reply:
                        scan.awaited[rid] = operation
        else:
            _recorded_reply(scan, raw, comparison)

    def closed(connection):
        scans.pop(connection, None)
        ids.forget(connection)

    decoder = CaptureDecoder(capture_error, options.ports, True, raw_message=message)
    tcp = TcpReassembler(_PlanSink(decoder, closed, ids))
    with CaptureReader(path) as reader:
        feed = tcp.feed
        for segment in reader:
            feed(segment)
    tcp.finish()
    groups = _groups(planned, explicit)
    return JobPlan(_balanced(groups, jobs), explicit, targets, skipped, errors,
                   error_count[0], len(groups))


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
                 "_json")

    def __init__(self, operation, outcome, recorded_latency, had_recorded_reply,
                 replayed_latency, connection, recorded_id, reason, differences, json):
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

    def to_json(self) -> dict:
        return self._json


def _reported(call, with_json: bool) -> tuple:
    return (call.operation, call.outcome, call.recorded_latency,
            call.recorded_reply is not None, call.replayed_latency, call.connection,
            call.recorded_id, call.reason, call.differences,
            call.to_json() if with_json else None)


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


def run_jobs(path, options: ReplayOptions, plan: JobPlan, report, with_json: bool,
             progress=None) -> None:
    """Replay ``plan``'s workers' connections, each worker in a forked process;
    ``report(call)`` hears of every call (a ReportedCall); ``progress(fraction)`` now
    and then.  Raises ReplayJobsError when a worker fails or on Ctrl-C, after every
    worker stopped."""
    context = multiprocessing.get_context("fork")
    pipes: dict = {}          # receiving end -> worker number
    workers: list = []
    done: set = set()
    read = [0] * len(plan.workers)
    size = max(1, os.path.getsize(path))
    try:
        for k, connections in enumerate(plan.workers):
            receive, send = context.Pipe(duplex=False)
            worker = context.Process(target=_worker, daemon=True, name=f"replay-job-{k}",
                                     args=(send, path, worker_options(options, plan, k),
                                           connections, with_json, os.getpid()))
            worker.start()
            send.close()
            pipes[receive] = k
            workers.append(worker)
        while len(done) < len(workers):
            for pipe in multiprocessing.connection.wait(
                    [p for p, k in pipes.items() if k not in done]):
                k = pipes[pipe]
                try:
                    kind, payload, bytes_read = pipe.recv()
                except (EOFError, OSError):
                    workers[k].join(timeout=1)
                    raise ReplayJobsError(
                        f"replay worker {k} ended without its results (exit code "
                        f"{workers[k].exitcode})") from None
                if kind == "error":
                    raise ReplayJobsError(f"replay worker {k} failed: {payload}")
                for fields in payload:
                    report(ReportedCall(*fields))
                read[k] = bytes_read
                if kind == "done":
                    done.add(k)
                if progress is not None:
                    progress(min(read) / size)
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
    if options.pcap:
        parts = [f"{options.pcap}.worker{k}" for k in range(len(workers))]
        try:
            merge_pcap_files(parts, options.pcap)
        finally:
            for part in parts:
                try:
                    os.unlink(part)
                except OSError:
                    pass


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


def _worker(pipe, path, options: ReplayOptions, connections: list, with_json: bool,
            parent: int) -> None:
    """A forked worker: replays ``connections``, sends its calls in batches, then
    ("done", ...) or ("error", text)."""
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
            reader = CaptureReader(path)
            Replay(options, report, selection=_Selection(connections)).run(reader, progress)
            send("done")
        except BrokenPipeError:
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
