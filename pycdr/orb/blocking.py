"""The reference ORB's client over blocking sockets: an invocation runs in the
caller's thread, from the Request's bytes to the Reply's values, with no event
loop between (SyncORB's calls).

    client = BlockingClient(orb.options)
    BlockingInvocation(ref, op, args, timeout, oneway).run(client)

It shares everything but the transport with the asyncio client (client.py): the
Requests' encoding (RequestEncoder), the course of an invocation (Invocation:
LOCATION_FORWARD hops, retries after a CloseConnection, reading the Reply) and
the sans-I/O GiopConnection.  One connection per (endpoint, GIOP version), used
by one call at a time (a lock held from the Request to its Reply): a caller
thread that finds it busy waits.  Replies are matched by request id, so a late
Reply to a call that timed out is dropped.

Why: a call through an event loop costs the loop's turns on top of the ORB's
work; on a 2-vCPU machine a 1-byte echo took 45-48 us of client CPU on uvloop,
68-100 on asyncio's loop and 34 us over a blocking socket.
"""

from __future__ import annotations

import logging
import os
import socket
import ssl
import struct
import threading
import time
from time import monotonic

from ..errors import MessageTooLargeError
from ..giop.events import NEED_DATA, TAKEN, ConnectionClosed, MessageReceived, ProtocolViolation
from ..giop.header import HEADER_SIZE
from ..giop.messages import Reply
from ..giop.sysexc import (COMM_FAILURE, IMP_LIMIT, OBJECT_NOT_EXIST, OMG_VMCID, TIMEOUT,
                           TRANSIENT, CompletionStatus)
from ..idl.model import Operation
from .aio import set_socket_buffers
from .client import SEND_AGAIN, ClientOptions, Invocation, ObjectRef, PeerClosed, RequestEncoder
from .invocation import (IS_A, NON_EXISTENT, TAIL_MIN, decode_reply, exchange, poll_ns,
                         octet_sequence_bound, send_request, values_to_results)
from .tls import Endpoint, connect

log = logging.getLogger("pycdr.orb.blocking")

_NO = CompletionStatus.COMPLETED_NO
_MAYBE = CompletionStatus.COMPLETED_MAYBE
_YES = CompletionStatus.COMPLETED_YES
# Each connection's read buffer: several small replies to a read, a large one
# read in place once it has begun (GiopConnection.receive_buffer).
CLIENT_SCRATCH = 256 * 1024
_TIMEVAL = struct.Struct("@ll")
# How many operations' lanes (_Lane) a connection keeps, as its templates.
_MAX_LANES = 256
_NOT_TAKEN = object()       # BlockingConnection._exchange: nothing sent, the general path


def set_wait_limit(sock: socket.socket, seconds: float | None) -> None:
    """Bound each recv and send of ``sock`` to ``seconds`` (None: no bound) in the
    kernel (SO_RCVTIMEO, SO_SNDTIMEO): one past it fails with BlockingIOError.  The
    socket stays in blocking mode (socket.settimeout(None)), where a recv is one
    system call; under socket.settimeout every recv and send is a poll and the call."""
    limit = 0.0 if seconds is None else max(seconds, 0.001)     # (0: no bound)
    whole = int(limit)
    value = _TIMEVAL.pack(whole, int((limit - whole) * 1e6))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)


def send_message(sock: socket.socket, data) -> None:
    """sock.sendall(data) for a message's bytes or the list of buffers a message
    with a tail is (GiopConnection.send_templated): a plain socket sends the list
    with sendmsg, without joining it; an SSL socket (no sendmsg) sends it joined."""
    if type(data) is not list:
        sock.sendall(data)
    elif isinstance(sock, ssl.SSLSocket):
        sock.sendall(b"".join(data))
    else:
        buffers = data
        while buffers:
            sent = sock.sendmsg(buffers)
            done = 0
            while done < len(buffers) and sent >= len(buffers[done]):
                sent -= len(buffers[done])
                done += 1
            buffers = buffers[done:]
            if buffers and sent:
                buffers[0] = memoryview(buffers[0])[sent:]


class BlockingClient:
    """The blocking connections of an ORB's options, one per (endpoint, version)."""

    def __init__(self, options: ClientOptions):
        self.options = options
        self._connections: dict[tuple, BlockingConnection] = {}
        self._lock = threading.Lock()

    def connection(self, endpoint: Endpoint, version: tuple,
                   key: tuple | None = None) -> "BlockingConnection":
        """The open connection to ``endpoint``, connected now if there is none
        (``key``: ``(endpoint.key, version)`` when the caller has it)."""
        if key is None:
            key = (endpoint.key, version)
        # (a dict lookup is atomic: the lock is for making one, not for every call)
        conn = self._connections.get(key)
        if conn is not None and not conn.closed:
            return conn
        with self._lock:
            conn = self._connections.get(key)
            if conn is None or conn.closed:
                conn = self._connections[key] = BlockingConnection(self, endpoint)
        return conn

    def forget(self, conn: "BlockingConnection") -> None:
        with self._lock:
            for key, known in list(self._connections.items()):
                if known is conn:
                    del self._connections[key]

    def close(self) -> None:
        with self._lock:
            connections = list(self._connections.values())
            self._connections.clear()
        for conn in connections:
            conn.close()


class _Lane:
    """What a call of one operation on one object key needs to be made in one C call
    on a connection (_speedups.exchange for a twoway call, send_request for a oneway
    one): its Request template's bytes and the plans of its arguments and results."""
    __slots__ = ("op", "template", "prefix", "request_id_at", "in_plans", "result_plans",
                 "tail_bound", "argc", "version", "little", "key")

    def __init__(self, op: Operation, template, version=None, little=None, key=None):
        self.op = op
        # (where its calls go: what lane_call needs to fall back to the general path)
        self.version = version
        self.little = little
        self.key = key
        self.template = template
        self.prefix = template.prefix
        self.request_id_at = template.request_id_at
        self.in_plans = op.in_plans
        self.argc = len(op.in_plans)
        self.result_plans = op.result_plans
        # A large trailing octet sequence goes as a tail, after the encoded bytes and
        # without a copy, as the general path sends it: the bound of the last parameter
        # when it is a sequence<octet> (0: unbounded), else None; tail() decides per call.
        params = op.in_params
        self.tail_bound = octet_sequence_bound(params[-1].type) if params else None

    def tail(self, args: tuple):
        """What arguments_tail(op, args) gives (``args`` as many as the parameters),
        without looking the bound up again (a plan lookup per call)."""
        bound = self.tail_bound
        if bound is None:
            return None
        last = args[-1]
        if type(last) is not bytes or len(last) < TAIL_MIN or (bound and len(last) > bound):
            return None
        return last


class BlockingConnection(RequestEncoder):
    """One client connection over a blocking socket (connected at its first call)."""

    def __init__(self, client: BlockingClient, endpoint: Endpoint):
        self.orb = client            # (RequestEncoder reads orb.options)
        self.client = client
        self.endpoint = endpoint
        scratch = bytearray(CLIENT_SCRATCH)
        self.giop = self.new_giop(scratch)
        self._init_encoder()
        # A call made in one C call (exchange) reads its Reply into the GiopConnection's
        # read buffer, while nothing waits in it (it copies out what it frames).  _fd: the
        # plain TCP socket's descriptor while one is open (not TLS, not octet views).
        self._scratch = scratch
        self._fd: int | None = None
        self._lanes: dict[tuple, _Lane | None] = {}
        self._lane_limit = min(CLIENT_SCRATCH, client.options.max_message_size + HEADER_SIZE)
        self._poll_ns = poll_ns(client.options.poll_wait)
        # The Reply awaited, to be decoded in one C call (_take_reply) when it is the
        # usual one: {request id: the result plans}, or None; and its values.
        self._awaited: dict | None = None
        self._values: list | None = None
        if decode_reply is not None and not client.options.octet_views:
            self.giop.take_directly = self._take_reply
        self.lock = threading.Lock()
        self.sock: socket.socket | None = None
        self.closed = False
        self._wait_limit: float | None = None       # as set_wait_limit left it
        # Whether lane_call may send a twoway call without looking further: the plain
        # socket is open and nothing waits in the GiopConnection (call's checks: _fd,
        # giop.idle), kept here instead of asked on every call.  Only this object's
        # methods feed its GiopConnection, under lock: each path that may leave bytes
        # or events in it (the general path, a Reply the lane handed back) clears the
        # flag first and sets it from giop.idle once its Reply is in; a Reply exchange
        # took whole leaves it idle; _close clears it.  Read and written under lock.
        self._lane_ready = False

    def _connect(self) -> None:
        try:
            sock = connect(self.endpoint, self.orb.options.tls,
                           timeout=self.orb.options.connect_timeout)
        except OSError as e:        # a TransportError: the step that failed is its cause
            self._close()
            raise TRANSIENT(OMG_VMCID | 2, _NO) from e
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        set_socket_buffers(sock)
        sock.settimeout(None)
        self.sock = sock
        if exchange is not None and type(sock) is socket.socket and \
                not self.orb.options.octet_views:
            self._fd = sock.fileno()

    def _limit_waits(self, deadline: float | None, exact: bool = False) -> None:
        """Bound the socket's waits by what is left until ``deadline``.  The kernel's
        limit is changed only when it is None and should not be, or lies beyond the
        deadline (or ``exact``: a wait ended by it before the deadline): calls with the
        same timeout leave it alone.  A wait it ends early is made again."""
        if deadline is None:
            if self._wait_limit is not None:
                set_wait_limit(self.sock, None)
                self._wait_limit = None
            return
        remaining = deadline - time.monotonic()
        if exact or self._wait_limit is None or remaining < 0.95 * self._wait_limit:
            set_wait_limit(self.sock, remaining)
            self._wait_limit = max(remaining, 0.001)

    def call(self, version, little, key, op: Operation, args, response_expected: bool,
             deadline: float | None):
        """Send a Request and, when a reply is expected, wait for it: the Reply, or
        TIMEOUT once ``deadline`` (time.monotonic()) passes; PeerClosed when the
        server sent CloseConnection first (it did not run the request)."""
        with self.lock:
            if self.closed:
                raise PeerClosed()
            if self.sock is None:
                self._connect()
            if self._fd is not None and type(args) is tuple:
                if not response_expected:
                    # (nothing is read: what waits in the GiopConnection stays there)
                    if self._send_oneway(version, little, key, op, args, deadline):
                        return None
                elif self.giop.idle:
                    answer = self._exchange(version, little, key, op, args, deadline)
                    if answer is not _NOT_TAKEN:
                        return answer
            return self._general(version, little, key, op, args, response_expected, deadline)

    def _general(self, version, little, key, op: Operation, args, response_expected: bool,
                 deadline: float | None):
        """call's general path (under lock): the Request encoded in Python or by
        encode_request, sent, and its Reply read through the GiopConnection."""
        self._lane_ready = False
        rid, data = self.encode_request(version, little, key, op, args, response_expected)
        try:
            self._limit_waits(deadline)
            send_message(self.sock, data)
        except OSError as e:
            # (a send timing out leaves part of a message on the stream)
            self._close()
            raise COMM_FAILURE(OMG_VMCID | 0, _MAYBE) from e
        if not response_expected:
            return None
        if self.chars_in_c():
            self._awaited = {rid: op.result_plans}
        try:
            reply = self._reply_to(rid, version, little, deadline)
        finally:
            self._awaited = self._values = None
        self._lane_ready = self._fd is not None and self.giop.idle
        return reply

    def _lane(self, version, little, key, op: Operation,
              response_expected: bool = True) -> _Lane | None:
        """The lane of ``op`` on ``key`` (made now), or None when its calls take the
        general path: a Request with service contexts (the first, with the CodeSets
        context, makes no lane), fragments, or chars in a code set the C plans do not
        write.  Oneway and twoway calls have lanes of their own (their templates'
        response flags differ)."""
        index = (op.name, key, version, little, response_expected)
        lane = self._lanes.get(index, _NOT_TAKEN)
        if lane is None:
            return None
        if version >= (1, 1) and not self._code_sets_sent:
            return None
        if len(self._lanes) >= _MAX_LANES:
            self._lanes.clear()
        lane = None
        if self.orb.options.fragment_size is None and self.chars_in_c():
            lane = _Lane(op, self._request_template(version, little, key, op.name,
                                                    response_expected), version, little, key)
        self._lanes[index] = lane
        return lane

    def _exchange(self, version, little, key, op: Operation, args: tuple,
                  deadline: float | None):
        """A twoway call in one C call (_speedups.exchange): the Request's bytes from
        its template and plans, sent, and the Reply read; its values when it came whole
        and NO_EXCEPTION, else what the general path makes of the bytes read (the Reply,
        TIMEOUT, COMM_FAILURE...); _NOT_TAKEN when nothing was sent."""
        lane = self._lanes.get((op.name, key, version, little, True))
        if lane is None or lane.op is not op:
            lane = self._lane(version, little, key, op)
        if lane is None or len(args) != len(lane.in_plans):
            return _NOT_TAKEN
        tail = lane.tail(args) if lane.tail_bound is not None else None
        giop = self.giop
        rid = giop.next_request_id()
        try:
            self._limit_waits(deadline)
            out = exchange(self._fd, lane.prefix, lane.request_id_at, rid, little,
                           lane.in_plans, args, lane.result_plans, self._scratch,
                           self._lane_limit, tail, self._poll_ns)
        except OSError as e:
            self._close()
            raise COMM_FAILURE(OMG_VMCID | 0, _MAYBE) from e
        except BaseException:
            # (a signal handler raised while the Reply was awaited: the Request is in
            # flight, unknown to the GiopConnection, so the stream is given up)
            self._close()
            raise
        if type(out) is tuple:      # (size, values): the usual Reply, taken whole
            giop.took_whole(out[0])
            self._lane_ready = True
            return out[1]
        if out is None:             # a value the plans do not write: nothing sent
            return _NOT_TAKEN
        return self._exchanged(lane, rid, out, deadline)

    def lane_call(self, lane: _Lane, args: tuple, deadline: float | None):
        """A twoway call of ``lane`` (a lane this connection made) with the least Python
        per call: what call and _exchange do on the lane, inline, once _lane_ready says
        their checks hold.  The values of the usual Reply; else what call gives (a Reply,
        or its exceptions, PeerClosed included); _NOT_TAKEN when nothing was done (the
        caller takes the whole path, call)."""
        with self.lock:
            if not self._lane_ready or len(args) != lane.argc:
                return _NOT_TAKEN
            bound = lane.tail_bound
            tail = None
            if bound is not None:           # (lane.tail, inline)
                last = args[-1]
                if type(last) is bytes and len(last) >= TAIL_MIN and \
                        not (bound and len(last) > bound):
                    tail = last
            giop = self.giop
            rid = giop.next_request_id()
            try:
                # (_limit_waits, inline where it leaves the kernel's limit alone)
                if deadline is None:
                    if self._wait_limit is not None:
                        self._limit_waits(None)
                elif self._wait_limit is None or \
                        deadline - monotonic() < 0.95 * self._wait_limit:
                    self._limit_waits(deadline)
                out = exchange(self._fd, lane.prefix, lane.request_id_at, rid, lane.little,
                               lane.in_plans, args, lane.result_plans, self._scratch,
                               self._lane_limit, tail, self._poll_ns)
            except OSError as e:
                self._close()
                raise COMM_FAILURE(OMG_VMCID | 0, _MAYBE) from e
            except BaseException:
                # (a signal handler raised while the Reply was awaited: the Request is in
                # flight, unknown to the GiopConnection, so the stream is given up)
                self._close()
                raise
            if type(out) is tuple:
                giop.took_whole(out[0])
                return out[1]
            if out is None:
                # Nothing sent (a value the plans do not write, or the C path off): the
                # general path, as call takes it after _exchange (the id drawn is skipped).
                return self._general(lane.version, lane.little, lane.key, lane.op, args,
                                     True, deadline)
            return self._exchanged(lane, rid, out, deadline)

    def lane_send(self, lane: _Lane, args: tuple, deadline: float | None):
        """A oneway call of ``lane`` with the least Python per call (call and
        _send_oneway's work, inline): None once sent; _NOT_TAKEN when nothing was done."""
        with self.lock:
            fd = self._fd
            if fd is None or len(args) != lane.argc:
                return _NOT_TAKEN
            bound = lane.tail_bound
            tail = None
            if bound is not None:
                last = args[-1]
                if type(last) is bytes and len(last) >= TAIL_MIN and \
                        not (bound and len(last) > bound):
                    tail = last
            rid = self.giop.next_request_id()
            try:
                if deadline is None:
                    if self._wait_limit is not None:
                        self._limit_waits(None)
                elif self._wait_limit is None or \
                        deadline - monotonic() < 0.95 * self._wait_limit:
                    self._limit_waits(deadline)
                out = send_request(fd, lane.prefix, lane.request_id_at, rid, lane.little,
                                   lane.in_plans, args, tail)
            except OSError as e:
                self._close()
                raise COMM_FAILURE(OMG_VMCID | 0, _MAYBE) from e
            if out is None:
                return self._general(lane.version, lane.little, lane.key, lane.op, args,
                                     False, deadline)
            if out:
                self._close()
                raise COMM_FAILURE(OMG_VMCID | 0, _MAYBE) from OSError(out, os.strerror(out))
            return None

    def _exchanged(self, lane: _Lane, rid: int, out, deadline: float | None):
        """What exchange gave when it was not the usual Reply taken whole: the send's
        errno (COMM_FAILURE), or the bytes read, which the general path frames."""
        self._lane_ready = False
        if type(out) is int:        # the send failed (as send_message's OSError)
            self._close()
            raise COMM_FAILURE(OMG_VMCID | 0, _MAYBE) from OSError(out, os.strerror(out))
        # Sent; what was read goes through the general path, as if it had read it.
        giop = self.giop
        version, little = lane.version, lane.little
        giop.book_templated(lane.template, rid)
        if out:
            giop.receive_data(out)
        self._awaited = {rid: lane.result_plans}
        try:
            reply = self._reply_to(rid, version, little, deadline)
        finally:
            self._awaited = self._values = None
        self._lane_ready = self._fd is not None and self.giop.idle
        return reply

    def _send_oneway(self, version, little, key, op: Operation, args: tuple,
                     deadline: float | None) -> bool:
        """A oneway call in one C call (_speedups.send_request): the Request's bytes from
        its template and plans (a large trailing octet sequence after them, not copied),
        sent whole; whether it was (False: nothing sent, the general path encodes it)."""
        lane = self._lanes.get((op.name, key, version, little, False))
        if lane is None or lane.op is not op:
            lane = self._lane(version, little, key, op, False)
        if lane is None or len(args) != len(lane.in_plans):
            return False
        tail = lane.tail(args) if lane.tail_bound is not None else None
        rid = self.giop.next_request_id()
        try:
            self._limit_waits(deadline)
            out = send_request(self._fd, lane.prefix, lane.request_id_at, rid, little,
                               lane.in_plans, args, tail)
        except OSError as e:
            self._close()
            raise COMM_FAILURE(OMG_VMCID | 0, _MAYBE) from e
        if out is None:             # a value the plans do not write: nothing sent
            return False
        if out:                     # the send failed (as send_message's OSError)
            self._close()
            raise COMM_FAILURE(OMG_VMCID | 0, _MAYBE) from OSError(out, os.strerror(out))
        return True

    def _take_reply(self, raw) -> bool:
        """The GiopConnection's take_directly: the awaited Reply's values, when it
        is a NO_EXCEPTION Reply the result plans decode in C."""
        awaited = self._awaited
        if awaited is None:
            return False
        taken = decode_reply(raw, awaited)
        if taken is None:
            return False
        self.giop.outstanding.discard(taken[0])        # (as the Reply's delivery does)
        self._awaited = None
        self._values = taken[1]
        return True

    def _reply_to(self, rid: int, version, little, deadline: float | None):
        """The Reply to ``rid``, or the list of its values when _take_reply took it."""
        giop = self.giop
        violation = None        # the last protocol violation: why the connection closes
        while True:
            event = giop.next_event()
            if event is TAKEN:
                return self._values
            if event is NEED_DATA:
                self._receive(rid, version, little, deadline)
            elif isinstance(event, MessageReceived):
                msg = event.message
                if isinstance(msg, Reply) and msg.request_id == rid:
                    return msg
                # (a stray LocateReply: dropped)
            elif isinstance(event, ProtocolViolation):
                # (the late Reply of a call that timed out is one: discarded)
                log.warning("%s: %s", self.endpoint.describe(), event)
                violation = event.error
                if event.reply:
                    self._send_quietly(event.reply)
                if isinstance(event.error, MessageTooLargeError) and event.request_id == rid:
                    # (a ZIOP Reply inflating past the limit: the stream goes on)
                    raise IMP_LIMIT(OMG_VMCID | 0, _YES) from event.error
            elif isinstance(event, ConnectionClosed):
                self._close()
                if event.reason == "peer sent CloseConnection":
                    raise PeerClosed()
                # The typed error, with its offset, when a violation closed it.
                raise COMM_FAILURE(OMG_VMCID | 0, _MAYBE) from violation

    def _receive(self, rid: int, version, little, deadline: float | None) -> None:
        """Read what the socket has into the GiopConnection (b"" at its end)."""
        exact = False
        while True:
            if deadline is not None and deadline <= time.monotonic():
                self._timed_out(rid, version, little)
            try:
                self._limit_waits(deadline, exact)
                n = self.sock.recv_into(self.giop.receive_buffer())
                break
            except BlockingIOError:
                exact = True        # the kernel's limit: the deadline decides
            except OSError as e:
                self._close()
                raise COMM_FAILURE(OMG_VMCID | 0, _MAYBE) from e
        if n:
            self.giop.received(n)
        else:
            self.giop.receive_data(b"")

    def _timed_out(self, rid: int, version, little):
        """The deadline passed: CancelRequest, then TIMEOUT.  A Reply that had begun
        to arrive and stalls would hold up every later one: the connection closes."""
        if self.giop.has_partial_message:
            log.warning("%s: a call timed out while a message was incomplete: closing "
                        "the connection", self.endpoint.describe())
            self._close()
        else:
            self._send_quietly(self.cancel_request_bytes(version, little, rid))
        raise TIMEOUT(OMG_VMCID | 0, _MAYBE) from None

    def _send_quietly(self, data: bytes) -> None:
        """Send what the protocol asks (a CancelRequest, a MessageError) if the
        socket still takes it."""
        try:
            set_wait_limit(self.sock, 1.0)
            self._wait_limit = 1.0
            self.sock.sendall(data)
        except OSError:
            self._close()

    def _close(self) -> None:
        self.closed = True
        self._lane_ready = False
        self._fd = None
        self.client.forget(self)
        self.giop.release_buffers()
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass

    def close(self) -> None:
        with self.lock:
            self._close()


class BlockingInvocation(Invocation):
    """An invocation run start to end in the calling thread."""

    def run(self, client: BlockingClient):
        ref = self.ref
        while True:
            # The request, sent again to a new connection when the server closed the
            # cached one before it replied, and to a LOCATION_FORWARD's target.
            profile, version, endpoint, key = ref.route
            conn = client._connections.get(key)
            if conn is None or conn.closed:
                conn = client.connection(endpoint, version, key)
            if conn.code_sets is None:
                conn.choose_code_sets(profile)
            try:
                reply = conn.call(version, ref._little, profile.object_key, self.op,
                                  self.args, not self.oneway, self._deadline)
            except PeerClosed:
                self._closed_before_reply()
                continue
            if reply is None:          # oneway
                return None
            if type(reply) is list:    # the values of a NO_EXCEPTION Reply, taken in C
                # (values_to_results, inline: the one call most invocations make)
                n = len(reply)
                return reply[0] if n == 1 else tuple(reply) if n else None
            answer = self._answer(reply, conn)
            if answer is not SEND_AGAIN:
                return answer

    def resume(self, client: BlockingClient, conn: BlockingConnection, reply):
        """Go on from what a lane call (lane_call, lane_send) on ``conn`` gave, other
        than values, None (a oneway call sent) or _NOT_TAKEN, as run goes on from
        conn.call's: a Reply (its results or exception, or a LOCATION_FORWARD's new
        send), PeerClosed (sent again)."""
        if reply is PeerClosed:
            self._closed_before_reply()
            return self.run(client)
        answer = self._answer(reply, conn)
        return self.run(client) if answer is SEND_AGAIN else answer


def operation_caller(client: BlockingClient, ref: ObjectRef, op: Operation):
    """The function SyncObjectRef gives for an operation: ``f(*args, timeout=-1)``,
    a BlockingInvocation's run, but with the least Python on an established lane.

    Once a call has gone the whole way and left a lane for ``op`` on the connection
    its route uses, the next ones call that connection's lane_call (lane_send when
    oneway) directly, as long as the reference's route is the one the lane was found
    for (a LOCATION_FORWARD, or its end, changes it) and the connection is open.
    Everything else -- the first call, no lane (TLS, octet views, fragments, other
    code sets, the C path off), a busy GiopConnection, a closed connection, a Reply
    that is not the usual one -- takes the whole path, or goes on from where the lane
    left it (BlockingInvocation.resume), as conn.call's caller would."""
    oneway = op.oneway
    index = (op.name, not oneway)
    known = None        # (route, connection, lane): one object, so threads see all or none

    def call_operation(*args, timeout: float | None = -1):
        nonlocal known
        if timeout == -1:
            timeout = ref._timeout
        deadline = None if timeout is None else monotonic() + timeout
        if known is not None:
            route, conn, lane = known
            if ref._route is route and ref._route_of is (ref._forward or ref._ior) \
                    and not conn.closed:
                try:
                    if oneway:
                        reply = conn.lane_send(lane, args, deadline)
                    else:
                        reply = conn.lane_call(lane, args, deadline)
                except PeerClosed:
                    reply = PeerClosed
                if type(reply) is list:     # the values of a NO_EXCEPTION Reply
                    n = len(reply)
                    return reply[0] if n == 1 else tuple(reply) if n else None
                if reply is None:           # a oneway call sent
                    return None
                if reply is not _NOT_TAKEN:
                    invocation = BlockingInvocation(ref, op, args, timeout, oneway)
                    invocation._deadline = deadline
                    return invocation.resume(client, conn, reply)
        invocation = BlockingInvocation(ref, op, args, timeout, oneway)
        invocation._deadline = deadline     # (the one the lane would have used)
        answer = invocation.run(client)
        # The lane this call left, for the next ones (the route as run last used it).
        route = ref._route
        conn = client._connections.get(route[3])
        if conn is not None and not conn.closed:
            lane = conn._lanes.get((index[0], route[0].object_key, route[1], ref._little,
                                    index[1]))
            known = (route, conn, lane) if lane is not None and lane.op is op else None
        return answer
    return call_operation


def invoke(client: BlockingClient, ref: ObjectRef, op: Operation | str, args,
           timeout: float | None = -1, oneway: bool | None = None):
    """ObjectRef.invoke (or send_oneway with ``oneway``), blocking."""
    if isinstance(op, str):
        op = ref.operation(op)
    timeout = ref._timeout if timeout == -1 else timeout
    return BlockingInvocation(ref, op, tuple(args), timeout,
                              op.oneway if oneway is None else oneway).run(client)


def is_a(client: BlockingClient, ref: ObjectRef, repo_id: str, timeout=-1) -> bool:
    return invoke(client, ref, IS_A, (repo_id,), timeout)


def non_existent(client: BlockingClient, ref: ObjectRef, timeout=-1) -> bool:
    """_non_existent; OBJECT_NOT_EXIST counts as true (as ObjectRef.non_existent)."""
    try:
        return invoke(client, ref, NON_EXISTENT, (), timeout)
    except OBJECT_NOT_EXIST:
        return True


__all__ = ["BlockingClient", "BlockingConnection", "BlockingInvocation", "invoke",
           "operation_caller", "send_message"]
