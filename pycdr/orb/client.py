"""The reference ORB's client (asyncio).

    orb = ORB()
    echo = await orb.string_to_object("corbaloc::127.0.0.1:2809/Echo",
                                      interface=module.interfaces["Demo::Echo"])
    await echo.echo_long(5)                    # in/inout args in; result, outs back
    await echo.with_options(version=(1, 0), little=True).echo_long(5)
    pending = await echo.send_deferred("echo_long", 5); await pending.result()
    await echo.invoke_dynamic("op", [("x", "in", tc.long)], tc.long, [5])   # DII
    raw = await orb.raw_connection("127.0.0.1", 2809)    # pre-built bytes
    await orb.close()

Connections are cached per (host, port, GIOP version) and shared by every
reference to that address; each request carries its reference's byte order.
The first request of a GIOP 1.1+ connection carries the CodeSets context.
LOCATION_FORWARD(_PERM) replies are followed up to ``max_forward_hops``; a
CloseConnection before the reply makes the request retry on a new connection
(the server did not process it, CORBA 3.x Part 2, 9.3.6).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass

from .aio import GiopStream, receive_scratch, run as run_loop
from ..codec import tc
from ..codesets import ISO_8859_1
from ..addressing.corbaloc import Corbaloc, Corbaname, parse_object_url
from ..errors import EncodeError, MessageTooLargeError, ObjectURLError, PycdrError
from ..giop.connection import GiopConnection, Role
from ..giop.events import NEED_DATA, ConnectionClosed, MessageReceived, ProtocolViolation
from ..giop.messages import (CancelRequest, KeyAddr, LocateReply, LocateRequest,
                             MessageTemplate, Reply, ReplyStatus, Request)
from ..giop.service_contexts import CodeSetsContext
from ..giop.sysexc import (BAD_PARAM, COMM_FAILURE, IMP_LIMIT, INV_OBJREF, MARSHAL,
                           OBJECT_NOT_EXIST, OMG_VMCID, TIMEOUT, TRANSIENT, CompletionStatus)
from ..idl.model import Interface, Operation
from ..addressing.iiop import CodeSetsComponent, IIOPProfile, decode_profile
from ..codec.ior import IOR
from ..codec.marshal import read_value
from . import codesets as orb_codesets
from .tls import (DEFAULT_TLS, STEP_GIOP, Endpoint, TLSOptions, TransportError,
                  choose_endpoint, classify, open_connection)
from . import naming
from .raw import RawConnection, RawRead
from .invocation import (DEFAULT_POLL_WAIT, IS_A, NON_EXISTENT, UnknownUserException,
                         arguments_tail, decode_reply, dynamic_operation, encode_request,
                         read_results, values_to_results, write_arguments)

log = logging.getLogger("pycdr.orb.client")

_NO = CompletionStatus.COMPLETED_NO
_MAYBE = CompletionStatus.COMPLETED_MAYBE
_YES = CompletionStatus.COMPLETED_YES
# Request templates a connection keeps (one per operation and object key called): a
# client calling ever new keys starts over instead of growing without end.
_MAX_TEMPLATES = 256
_DEFAULT_CODE_SETS = orb_codesets.choose(None)
CLIENT_GIOP_VERSION = (1, 2)      # the highest version this client sends


@dataclass
class ClientOptions:
    version: tuple = CLIENT_GIOP_VERSION   # cap; a reference uses min(cap, its profile's)
    little: bool = False                   # byte order of requests
    timeout: float | None = 30.0           # per invocation, seconds
    connect_timeout: float = 5.0
    max_forward_hops: int = 8
    fragment_size: int | None = None       # fragment GIOP 1.1+ requests longer than this
    # The largest reply taken, compressed (ZIOP) or not: a header claiming more is
    # refused before its body is buffered (the call gets COMM_FAILURE, the connection
    # is closed), and ZIOP inflation stops at it.
    max_message_size: int = 64 << 20
    tls: TLSOptions = DEFAULT_TLS          # certificates, --tls for plain references
    # A sequence<octet> result or out value as a memoryview of the reply message, not a
    # bytes copy (read_results' octet_views).
    octet_views: bool = False
    # Seconds the blocking client's C call polls for its Reply before it sleeps
    # (invocation.POLL_WAIT, PYCDR_POLL_WAIT; 0: sleep at once).
    poll_wait: float = DEFAULT_POLL_WAIT
    # Hears (request id, bytes) of each Request the asyncio client sends (the first
    # message and its fragments in one): `pycdr call` explains a system exception
    # with the request.
    on_request: Callable[[int, bytes], None] | None = None


class PeerClosed(Exception):
    """The server sent CloseConnection before replying: safe to retry."""


class ORB:
    def __init__(self, options: ClientOptions | None = None, **overrides):
        self.options = options or ClientOptions()
        for name, value in overrides.items():
            setattr(self.options, name, value)
        self._connections: dict[tuple, ClientConnection] = {}
        self._connecting: dict[tuple, asyncio.Future] = {}
        self._raw: set[RawConnection] = set()

    # --- references ----------------------------------------------------------------
    async def string_to_object(self, text: str, interface: Interface | None = None,
                               **options) -> "ObjectRef":
        """A reference from ``IOR:...``, ``corbaloc:...`` or ``corbaname:...``
        (resolved through the NameService it names)."""
        parsed = parse_object_url(text)
        if isinstance(parsed, Corbaname):
            return await self.resolve_name(parsed, interface, **options)
        if isinstance(parsed, Corbaloc):
            if parsed.is_rir:
                raise ObjectURLError("corbaloc:rir: needs initial references this ORB does "
                                     "not have", 9)
            ior = parsed.to_ior(interface.repo_id if interface is not None else "")
            return ObjectRef(self, ior, interface, **options)
        return ObjectRef(self, parsed, interface, **options)

    def object(self, ior: IOR, interface: Interface | None = None, **options) -> "ObjectRef":
        return ObjectRef(self, ior, interface, **options)

    async def resolve_name(self, url: Corbaname, interface=None, **options) -> "ObjectRef":
        """The object a corbaname: URL names (pycdr.orb.naming; NamingError when the
        naming service refuses the name or cannot be reached)."""
        return ObjectRef(self, await naming.resolve_corbaname(self, url, **options),
                         interface, **options)

    # --- connections ---------------------------------------------------------------
    def open_connection(self, endpoint: Endpoint, version: tuple) -> "ClientConnection | None":
        """The usable connection to ``endpoint`` for ``version`` if there is one
        (what connection() returns without a coroutine, on every call after the first)."""
        conn = self._connections.get((endpoint.key, version))
        return conn if conn is not None and conn.usable else None

    async def connection(self, endpoint: Endpoint, version: tuple) -> "ClientConnection":
        key = (endpoint.key, version)
        conn = self.open_connection(endpoint, version)
        if conn is not None:
            return conn
        waiting = self._connecting.get(key)
        if waiting is not None:
            return await asyncio.shield(waiting)
        future = asyncio.get_running_loop().create_future()
        self._connecting[key] = future
        try:
            conn = ClientConnection(self, endpoint, version)
            await conn.open(self.options.connect_timeout)
            self._connections[key] = conn
            future.set_result(conn)
            return conn
        except BaseException as e:
            future.set_exception(e)
            future.exception()     # retrieved: no "never retrieved" warning
            raise
        finally:
            del self._connecting[key]

    def _forget(self, conn: "ClientConnection") -> None:
        key = (conn.endpoint.key, conn.version)
        if self._connections.get(key) is conn:
            del self._connections[key]

    async def raw_connection(self, host: str, port: int, timeout: float | None = None, *,
                             tls: bool = False) -> "RawConnection":
        """A managed connection for pre-built messages (closed by close()); over TLS with
        the ORB's TLS options when ``tls``."""
        raw = RawConnection(self, host, port, tls=tls, tls_options=self.options.tls)
        await raw.open(timeout if timeout is not None else self.options.connect_timeout)
        self._raw.add(raw)
        return raw

    async def close(self) -> None:
        for conn in list(self._connections.values()):
            await conn.close()
        self._connections.clear()
        for raw in list(self._raw):
            await raw.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc_info):
        await self.close()


def resolve_object_url(text: str, **orb_options) -> IOR:
    """The IOR a stringified reference names (ORB.string_to_object's), from code with
    no event loop running; a corbaname: is resolved by an ORB of ``orb_options``.
    Errors: ObjectURLError (the text), naming.NamingError."""
    async def resolve():
        async with ORB(**orb_options) as orb:
            return (await orb.string_to_object(text)).ior
    return run_loop(resolve())


def iiop_profiles(ior: IOR):
    """The IIOP profiles of an IOR that decode (leniently), in order."""
    for profile in ior.profiles:
        try:
            decoded = decode_profile(profile, lenient=True)
        except PycdrError:
            continue
        if isinstance(decoded, IIOPProfile):
            yield decoded


def first_iiop_profile(ior: IOR) -> IIOPProfile:
    for profile in iiop_profiles(ior):
        return profile
    raise INV_OBJREF(OMG_VMCID | 1, _NO)


class ObjectRef:
    """An object reference: an IOR, optionally an interface description, and
    per-reference GIOP version, byte order and timeout."""

    def __init__(self, orb: ORB, ior: IOR, interface: Interface | None = None, *,
                 version: tuple | None = None, little: bool | None = None,
                 timeout: float | None = -1):
        self._orb = orb
        self._ior = ior            # the name ObjRef marshaling looks for
        self._interface = interface
        self._requested_version = version
        self._little = orb.options.little if little is None else little
        self._timeout = orb.options.timeout if timeout == -1 else timeout
        self._forward: IOR | None = None   # a LOCATION_FORWARD target, until it fails
        self._profile_of: IOR | None = None    # the IOR self._profile was decoded from
        self._profile: IIOPProfile | None = None
        self._endpoint: Endpoint | None = None
        self._route_of: IOR | None = None      # the IOR self._route was worked out for
        self._route: tuple | None = None
        self._operations = interface.all_operations() if interface is not None else {}

    # --- options -------------------------------------------------------------------
    def with_options(self, **options) -> "ObjectRef":
        merged = {"version": self._requested_version, "little": self._little,
                  "timeout": self._timeout, "interface": self._interface}
        merged.update(options)
        interface = merged.pop("interface")
        return ObjectRef(self._orb, self._ior, interface, **merged)

    @property
    def ior(self) -> IOR:
        return self._ior

    @property
    def profile(self) -> IIOPProfile:
        # Decoded once per target IOR, not on every invocation (it cost more than
        # marshaling a 64 KB sequence).
        target = self._forward or self._ior
        if self._profile_of is not target:
            self._profile = first_iiop_profile(target)
            self._endpoint = choose_endpoint(self._profile, self._orb.options.tls)
            self._profile_of = target
        return self._profile

    @property
    def endpoint(self) -> Endpoint:
        """Where this reference's requests go (a TLS endpoint when its profile has one)."""
        self.profile              # (decoded with the profile when the target changed)
        return self._endpoint

    @property
    def route(self) -> tuple:
        """(profile, GIOP version, endpoint, (endpoint.key, version)) of the next
        request, worked out once per target IOR (this reference's own, or a
        LOCATION_FORWARD's), not on every invocation."""
        target = self._forward or self._ior
        if self._route_of is not target:
            profile = self.profile
            version = self.giop_version(profile)
            self._route = (profile, version, self._endpoint, (self._endpoint.key, version))
            self._route_of = target
        return self._route

    def giop_version(self, profile: IIOPProfile | None = None) -> tuple:
        """The version requests use: the lowest of the profile's, the ORB's cap
        and the one this reference asked for."""
        profile = profile or self.profile
        cap = min(self._orb.options.version, self._requested_version or CLIENT_GIOP_VERSION)
        return min(tuple(profile.version), cap)

    def __repr__(self):
        p = self.profile
        return f"<ObjectRef {self._ior.type_id or '?'} at {p.host}:{p.port}>"

    # --- invocation ----------------------------------------------------------------
    def __getattr__(self, name: str):
        ops = self.__dict__.get("_operations") or {}
        op = ops.get(name)
        if op is None:
            raise AttributeError(name)

        async def call(*args, timeout: float | None = -1):
            return await self.invoke(op, *args, timeout=timeout)
        call.__name__ = name
        return call

    def operation(self, name: str) -> Operation:
        try:
            return self._operations[name]
        except KeyError:
            raise AttributeError(f"{name} is not an operation of "
                                 f"{self._interface.scoped_name if self._interface else '?'}") \
                from None

    async def invoke(self, op: Operation | str, *args, timeout: float | None = -1):
        """Invoke ``op`` with its in/inout values; returns as invocation says."""
        if isinstance(op, str):
            op = self.operation(op)
        pending = DeferredRequest(self, op, args, self._timeout if timeout == -1 else timeout,
                                  op.oneway)
        await pending.send()
        return await pending.result()

    async def invoke_dynamic(self, name: str, params, result=tc.void, args=(), raises=(),
                             oneway: bool = False, timeout: float | None = -1):
        """DII: an operation described at run time (``params`` as
        ``(name, mode, TypeCode)``)."""
        op = dynamic_operation(name, params, result, raises, oneway)
        return await self.invoke(op, *args, timeout=timeout)

    async def send_deferred(self, op: Operation | str, *args,
                            timeout: float | None = -1) -> "DeferredRequest":
        """Deferred synchronous: send now, collect with ``await d.result()``.  The
        timeout counts from now: a reply that has not come by then is a TIMEOUT
        (CancelRequest sent) whenever result() is called."""
        if isinstance(op, str):
            op = self.operation(op)
        return await self._send(op, args, timeout)

    async def send_oneway(self, op: Operation | str, *args) -> None:
        if isinstance(op, str):
            op = self.operation(op)
        await self._send(op, args, None, oneway=True)

    async def is_a(self, repo_id: str, timeout: float | None = -1) -> bool:
        return await self.invoke(IS_A, repo_id, timeout=timeout)

    async def non_existent(self, timeout: float | None = -1) -> bool:
        """_non_existent; OBJECT_NOT_EXIST counts as true."""
        try:
            return await self.invoke(NON_EXISTENT, timeout=timeout)
        except OBJECT_NOT_EXIST:
            return True

    async def locate(self, timeout: float | None = -1) -> LocateReply:
        """A LocateRequest for this reference's key; the LocateReply."""
        profile = self.profile
        version = self.giop_version(profile)
        conn = await self._orb.connection(self.endpoint, version)
        return await conn.locate(version, self._little, profile.object_key,
                                 self._timeout if timeout == -1 else timeout)

    async def _send(self, op: Operation, args, timeout, oneway: bool | None = None):
        timeout = self._timeout if timeout == -1 else timeout
        deferred = DeferredRequest(self, op, tuple(args), timeout,
                                   op.oneway if oneway is None else oneway)
        await deferred.send()
        return deferred

    def _follow(self, reply: Reply) -> None:
        if reply.reply_status == ReplyStatus.LOCATION_FORWARD_PERM:
            self._ior = reply.forward
            self._forward = None
        else:
            self._forward = reply.forward


class Invocation:
    """One invocation's course, whatever carries it: the replies it accepts, the
    LOCATION_FORWARD hops it follows and the CloseConnection retries it makes.
    DeferredRequest carries it over the asyncio ORB, blocking.BlockingInvocation
    over a blocking socket."""

    def __init__(self, ref: ObjectRef, op: Operation, args: tuple, timeout, oneway: bool):
        self.ref = ref
        self.op = op
        self.args = args
        self.timeout = timeout
        self.oneway = oneway
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._retries = 0
        self._hops = 0

    def _target(self):
        """(profile, GIOP version) of the next send: LOCATION_FORWARD changes them."""
        route = self.ref.route
        return route[0], route[1]

    def _closed_before_reply(self) -> None:
        """The server closed before replying (it did not run the request): send it
        again, up to twice."""
        self._retries += 1
        if self._retries > 2:
            raise TRANSIENT(OMG_VMCID | 0, _NO) from None

    def _answer(self, reply: Reply, conn):
        """What ``reply`` makes of the call: its results (or raised exception), or
        SEND_AGAIN after a LOCATION_FORWARD (the reference now points elsewhere)."""
        status = reply.reply_status
        if status in (ReplyStatus.LOCATION_FORWARD, ReplyStatus.LOCATION_FORWARD_PERM):
            self._hops += 1
            if self._hops > self.ref._orb.options.max_forward_hops:
                raise TRANSIENT(OMG_VMCID | 0, _NO)
            if reply.forward is None or reply.forward.is_nil:
                raise INV_OBJREF(0, _NO)
            self.ref._follow(reply)
            return SEND_AGAIN
        return self._outcome(reply, conn)

    def _outcome(self, reply: Reply, conn: "RequestEncoder"):
        status = reply.reply_status
        kwargs = conn.reader_kwargs()
        if status == ReplyStatus.NO_EXCEPTION:
            try:
                values_read = read_results(reply.body_reader(**kwargs), self.op,
                                           self.ref._orb.options.octet_views)
            except PycdrError as e:
                raise MARSHAL(OMG_VMCID | 0, CompletionStatus.COMPLETED_YES) from e
            return values_to_results(self.op, values_read)
        if status == ReplyStatus.SYSTEM_EXCEPTION:
            answered = reply.system_exception
            answered.from_reply = True
            raise answered
        if status == ReplyStatus.USER_EXCEPTION:
            raise _user_exception(reply, self.op, kwargs)
        # NEEDS_ADDRESSING_MODE: this client only sends KeyAddr, which every
        # server must accept.
        raise MARSHAL(OMG_VMCID | 0, CompletionStatus.COMPLETED_NO)


SEND_AGAIN = object()     # Invocation._answer: the request goes to its new target


class DeferredRequest(Invocation):
    """One invocation in flight (the DII's deferred synchronous request)."""

    def __init__(self, ref: ObjectRef, op: Operation, args: tuple, timeout, oneway: bool):
        super().__init__(ref, op, args, timeout, oneway)
        self._waiter = None

    async def send(self) -> None:
        ref = self.ref
        profile, version = self._target()
        for attempt in range(3):
            conn = ref._orb.open_connection(ref.endpoint, version) \
                or await ref._orb.connection(ref.endpoint, version)
            conn.choose_code_sets(profile)
            try:
                self._waiter = await conn.send_request(version, ref._little,
                                                       profile.object_key, self.op,
                                                       self.args, not self.oneway,
                                                       deadline=self._deadline)
                return
            except PeerClosed:
                continue      # a cached connection the server closed: use a new one
        raise TRANSIENT(OMG_VMCID | 0, _NO)

    def poll(self) -> bool:
        """Whether the reply is there (result() will not wait)."""
        return self._waiter is None or self._waiter.done()

    async def result(self):
        while True:
            if self.oneway:
                return None
            try:
                reply, conn = await self._waiter.future
            except PeerClosed:
                self._closed_before_reply()
                await self.send()
                continue
            if reply is None:       # the connection's timer: the deadline passed first
                self._waiter.cancel_request()
                raise TIMEOUT(OMG_VMCID | 0, _MAYBE)
            if type(reply) is list:   # a NO_EXCEPTION Reply's values (_take_reply)
                return values_to_results(self.op, reply)
            answer = self._answer(reply, conn)
            if answer is SEND_AGAIN:
                await self.send()
                continue
            return answer


def _user_exception(reply: Reply, op: Operation, reader_kwargs: dict) -> Exception:
    try:
        r = reply.body_reader(**reader_kwargs)
        start = r.pos
        exception_id = r.read_string()
        r.pos = start                     # the exception's encoding starts with the id
        for exc_tc in op.raises:
            if exc_tc.id() == exception_id:
                return read_value(r, exc_tc)
    except PycdrError:
        return MARSHAL(OMG_VMCID | 0, CompletionStatus.COMPLETED_YES)
    return UnknownUserException(exception_id, reply.body)


class _Waiter:
    """The future of one request plus what is needed to cancel it."""

    def __init__(self, conn: "ClientConnection", request_id: int, version, little):
        self.conn = conn
        self.request_id = request_id
        self.version = version
        self.little = little
        self.future = asyncio.get_running_loop().create_future()

    def __await__(self):
        return self.future.__await__()

    def done(self) -> bool:
        return self.future.done()

    def cancel_request(self) -> None:
        self.conn.cancel(self)


class RequestEncoder:
    """The request side of a client connection, whatever its transport: the
    Requests' bytes (the CodeSets context on the first, per-operation templates
    after), the code sets and how replies are read with them.  Needs ``orb`` (for
    its options) and ``giop`` (the GiopConnection)."""

    def _init_encoder(self) -> None:
        self.code_sets: tuple | None = None      # (TCS-C, TCS-W) for this connection
        self._code_sets_sent = False
        self._templates: dict[tuple, MessageTemplate] = {}     # see _request_template

    def new_giop(self, scratch: bytearray | None = None) -> GiopConnection:
        return GiopConnection(Role.CLIENT, version=CLIENT_GIOP_VERSION,
                              max_message_size=self.orb.options.max_message_size,
                              field_offsets=False, body_views=True, scratch=scratch)

    def choose_code_sets(self, profile: IIOPProfile) -> None:
        """Fix the connection's code sets from the first profile it is used for."""
        if self.code_sets is None:
            self.code_sets = orb_codesets.choose(profile.component(CodeSetsComponent))

    def chars_in_c(self) -> bool:
        """Whether the connection's char code set is the C plans' (ISO-8859-1)."""
        return (self.code_sets or _DEFAULT_CODE_SETS)[0] == ISO_8859_1

    def reader_kwargs(self) -> dict:
        if self.code_sets is None:
            return {}
        return {"tcs_c": self.code_sets[0], "tcs_w": self.code_sets[1]}

    def encode_request(self, version, little, key, op: Operation, args,
                       response_expected: bool) -> tuple:
        """(request id, bytes) of a Request; BAD_PARAM (raised_locally) when the
        arguments do not fit the operation."""
        contexts = []
        if version >= (1, 1) and not self._code_sets_sent:
            tcs_c, tcs_w = self.code_sets or orb_codesets.choose(None)
            contexts.append(CodeSetsContext(char_data=tcs_c, wchar_data=tcs_w))
        rid = self.giop.next_request_id()
        fragment_size = self.orb.options.fragment_size     # GIOP 1.0 messages go whole
        # (a large trailing octet sequence goes after the message, not into it)
        tail = arguments_tail(op, args) if fragment_size is None and not contexts else None
        if tail is None and not contexts and encode_request is not None and \
                type(args) is tuple and \
                len(args) == len(op.in_plans) and self.chars_in_c():
            # The usual call: the template's bytes and the arguments in one C call.
            template = self._request_template(version, little, key, op.name,
                                              response_expected)
            data = encode_request(template.prefix, template.request_id_at, rid, little,
                                  op.in_plans, args)
            if data is not None and (fragment_size is None or len(data) <= fragment_size):
                self.giop.book_templated(template, rid)
                return rid, data
        code_sets = self.code_sets

        def write_body(w):
            if code_sets is not None:
                w.tcs_c, w.tcs_w = code_sets
            write_arguments(w, op, args, tail)
        try:
            if contexts:
                msg = Request(version=version, little=little, request_id=rid,
                              response_flags=3 if response_expected else 0,
                              target=KeyAddr(key), operation=op.name,
                              service_contexts=contexts)
                data = self.giop.send(msg, write_body=write_body, fragment_size=fragment_size)
            else:
                template = self._request_template(version, little, key, op.name,
                                                  response_expected)
                data = self.giop.send_templated(template, rid, write_body,
                                                fragment_size=fragment_size, tail=tail)
        except (EncodeError, TypeError, ValueError, AttributeError) as e:
            local = BAD_PARAM(OMG_VMCID | 0, _NO)
            local.raised_locally = True
            raise local from e
        if contexts:
            self._code_sets_sent = True
        return rid, data

    def _request_template(self, version, little, key, operation: str,
                          response_expected: bool) -> MessageTemplate:
        """The Request template of a call of ``operation`` on ``key`` (without
        service contexts), made on its first call."""
        index = (version, little, key, operation, response_expected)
        template = self._templates.get(index)
        if template is None:
            if len(self._templates) >= _MAX_TEMPLATES:
                self._templates.clear()
            template = self._templates[index] = self.giop.template(Request(
                version=version, little=little, response_flags=3 if response_expected else 0,
                target=KeyAddr(key), operation=operation))
        return template

    def cancel_request_bytes(self, version, little, request_id) -> bytes:
        """A CancelRequest for ``request_id`` (b"" when it cannot be encoded)."""
        try:
            return self.giop.send(CancelRequest(version=version, little=little,
                                                request_id=request_id))
        except PycdrError:
            return b""


class ClientConnection(RequestEncoder):
    def __init__(self, orb: ORB, endpoint: Endpoint, version: tuple):
        self.orb = orb
        self.endpoint = endpoint
        self.host = endpoint.host
        self.port = endpoint.port
        self.version = version
        self.giop = self.new_giop(receive_scratch(asyncio.get_running_loop()))
        self._init_encoder()
        self._pending: dict[int, _Waiter] = {}
        self._pending_locates: dict[int, asyncio.Future] = {}
        # The replies _take_reply may decode in one C call: {request id: the result
        # plans} of the requests pending (an entry goes with its reply or request).
        self._reply_plans: dict[int, tuple] = {}
        if decode_reply is not None and not orb.options.octet_views:
            self.giop.take_directly = self._take_reply
        # Request deadlines: one timer for the connection, at the earliest, instead
        # of a timeout per call (which cost a tenth of a small call's client time).
        # A heap of (deadline, n, waiter); answered waiters leave it lazily.
        self._deadlines: list = []
        self._deadline_count = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        self.stream: GiopStream | None = None
        self.closed = False
        self._answered = False       # a reply came (so the TLS session was accepted)

    @property
    def usable(self) -> bool:
        return not self.closed

    async def open(self, timeout: float) -> None:
        self.stream = GiopStream(self.giop, on_data=self._on_data)
        try:
            await open_connection(asyncio.get_running_loop(), lambda: self.stream,
                                  self.endpoint, self.orb.options.tls, timeout=timeout)
        except OSError as e:       # a TransportError: the step that failed is its cause
            raise TRANSIENT(OMG_VMCID | 2, _NO) from e

    def reader_kwargs(self) -> dict:
        if self.code_sets is None:
            return {}
        return {"tcs_c": self.code_sets[0], "tcs_w": self.code_sets[1]}

    async def send_request(self, version, little, key, op: Operation, args,
                           response_expected: bool, *,
                           deadline: float | None = None) -> _Waiter | None:
        """Send a Request; its _Waiter when a reply is expected, whose future gets
        (reply, connection), or (None, None) once ``deadline`` (time.monotonic())
        passes without one."""
        if self.closed:
            raise PeerClosed()
        rid, data = self.encode_request(version, little, key, op, args, response_expected)
        if self.orb.options.on_request is not None:
            self.orb.options.on_request(rid, data)
        waiter = None
        if response_expected:
            waiter = _Waiter(self, rid, version, little)
            self._pending[rid] = waiter
            if self.giop.take_directly is not None and self.chars_in_c():
                self._reply_plans[rid] = op.result_plans
            if deadline is not None:
                self._watch(waiter, deadline)
        self.stream.write(data)
        if not self.stream.must_drain:
            return waiter
        try:
            await self.stream.drain()
        except (ConnectionError, OSError) as e:
            self._pending.pop(rid, None)
            self._fail(COMM_FAILURE(OMG_VMCID | 0, _MAYBE))
            raise COMM_FAILURE(OMG_VMCID | 0, _MAYBE) from e
        return waiter

    async def locate(self, version, little, key, timeout) -> LocateReply:
        if self.closed:
            raise TRANSIENT(OMG_VMCID | 0, _NO)
        rid = self.giop.next_request_id()
        data = self.giop.send(LocateRequest(version=version, little=little, request_id=rid,
                                            target=KeyAddr(key)))
        future = asyncio.get_running_loop().create_future()
        self._pending_locates[rid] = future
        self.stream.write(data)
        try:
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            self._pending_locates.pop(rid, None)
            raise TIMEOUT(OMG_VMCID | 0, _NO) from None

    def cancel(self, waiter: _Waiter) -> None:
        self._reply_plans.pop(waiter.request_id, None)
        if self._pending.pop(waiter.request_id, None) is None or self.closed:
            return
        self.stream.write(self.cancel_request_bytes(waiter.version, waiter.little,
                                                    waiter.request_id))

    # --- deadlines -----------------------------------------------------------------
    def _watch(self, waiter: _Waiter, deadline: float) -> None:
        heap = self._deadlines
        while heap and heap[0][2].future.done():      # answered since: forget them
            heapq.heappop(heap)
        heapq.heappush(heap, (deadline, next(self._deadline_count), waiter))
        if self._timer_at is None or deadline < self._timer_at:
            self._arm_timer(deadline)

    def _arm_timer(self, at: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = at
        self._timer = asyncio.get_running_loop().call_later(
            max(0.0, at - time.monotonic()), self._deadline_passed)

    def _deadline_passed(self) -> None:
        self._timer = self._timer_at = None
        heap, now = self._deadlines, time.monotonic()
        timed_out = False
        while heap and (heap[0][0] <= now or heap[0][2].future.done()):
            waiter = heapq.heappop(heap)[2]
            if not waiter.future.done():
                waiter.future.set_result((None, None))   # result() raises TIMEOUT
                timed_out = True
        if timed_out and self.giop.has_partial_message:
            # A reply is coming too slowly (trickled, or a size it will never reach):
            # every later reply on this connection would wait behind it, so it closes.
            log.warning("%s:%d: a call timed out while a message was incomplete: "
                        "closing the connection", self.host, self.port)
            self._fail(COMM_FAILURE(OMG_VMCID | 0, _MAYBE))
            self._close_transport()
            return
        if heap:
            self._arm_timer(heap[0][0])

    def _on_data(self) -> None:
        """The stream got bytes, or the end of the stream: hand out the events
        (replies wake their callers; nothing here awaits, so no reading task)."""
        if self.closed:
            return
        stream = self.stream
        try:
            if stream.at_eof:
                self.giop.receive_data(b"")
            while (event := self.giop.next_event()) is not NEED_DATA:
                if isinstance(event, MessageReceived):
                    self._deliver(event.message)
                elif isinstance(event, ProtocolViolation):
                    log.warning("%s:%d: %s", self.host, self.port, event)
                    if event.reply:
                        stream.write(event.reply)
                    if isinstance(event.error, MessageTooLargeError):
                        self._refuse_reply(event.request_id)
                elif isinstance(event, ConnectionClosed):
                    by_peer = event.reason == "peer sent CloseConnection"
                    self._fail(PeerClosed() if by_peer
                               else COMM_FAILURE(OMG_VMCID | 0, _MAYBE))
                    self._close_transport()
                    return
            if stream.at_eof:
                self._fail(COMM_FAILURE(OMG_VMCID | 0, _MAYBE))
                self._close_transport()
                return
            # Every complete reply is handed out: a reading paused by a large one
            # goes on (else the next reply is never read).
            stream.consumed()
        except Exception:
            log.exception("%s:%d: connection failed", self.host, self.port)
            self._fail(COMM_FAILURE(OMG_VMCID | 0, _MAYBE))
            self._close_transport()

    def _take_reply(self, raw) -> bool:
        """The GiopConnection's take_directly: a pending request's NO_EXCEPTION Reply
        its result plans decode in C; its waiter gets (values, self)."""
        taken = decode_reply(raw, self._reply_plans)
        if taken is None:
            return False
        rid, values = taken
        del self._reply_plans[rid]
        self.giop.outstanding.discard(rid)           # (as the Reply's delivery does)
        self._answered = True
        waiter = self._pending.pop(rid, None)
        if waiter is not None and not waiter.future.done():
            waiter.future.set_result((values, self))
        return True

    def _deliver(self, msg) -> None:
        self._answered = True
        if isinstance(msg, Reply):
            self._reply_plans.pop(msg.request_id, None)
            waiter = self._pending.pop(msg.request_id, None)
            if waiter is not None and not waiter.future.done():
                waiter.future.set_result((msg, self))
        elif isinstance(msg, LocateReply):
            future = self._pending_locates.pop(msg.request_id, None)
            if future is not None and not future.done():
                future.set_result(msg)

    def _refuse_reply(self, request_id) -> None:
        """A Reply over max_message_size (a ZIOP one, which leaves the stream
        usable): its request fails with IMP_LIMIT; the server did run it."""
        self._reply_plans.pop(request_id, None)
        waiter = self._pending.pop(request_id, None)
        if waiter is not None and not waiter.future.done():
            waiter.future.set_exception(IMP_LIMIT(OMG_VMCID | 0, _YES))

    def _fail(self, error: BaseException) -> None:
        self.closed = True
        self.orb._forget(self)
        self._reply_plans.clear()
        cause = self._tls_failure()
        for waiter in self._pending.values():
            if not waiter.future.done():
                if isinstance(error, PeerClosed):
                    waiter.future.set_exception(error)
                else:
                    failure = type(error)(error.minor, error.completed)
                    failure.__cause__ = cause
                    waiter.future.set_exception(failure)
        for future in self._pending_locates.values():
            if not future.done():
                future.set_exception(TRANSIENT(OMG_VMCID | 0, _NO)
                                     if isinstance(error, PeerClosed) else error)
        self._pending.clear()
        self._pending_locates.clear()
        self._deadlines.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = self._timer_at = None

    def _tls_failure(self):
        """Why a TLS connection broke, when TLS said so: a server that wants a client
        certificate tells a TLS 1.3 client only after the handshake, on its first read."""
        if not self.endpoint.tls:
            return None
        lost = self.stream.lost_because if self.stream is not None else None
        if isinstance(lost, ssl.SSLError):
            return classify(lost, STEP_GIOP, self.host, self.port)
        if not self._answered:
            # Some servers (Python's asyncio among them) close without sending the alert.
            why = ("does not accept the client certificate does that"
                   if self.orb.options.tls.cert else
                   "requires a client certificate does that: give one with --tls-cert/--tls-key")
            return TransportError(STEP_GIOP, "the server closed the TLS connection before "
                                  f"any reply, without an alert; a server that {why}",
                                  self.host, self.port)
        return None

    def _close_transport(self) -> None:
        self.closed = True
        self.orb._forget(self)
        # What a reply had brought goes now, not when the garbage collector finds this
        # object and its stream (they refer to each other).
        self.giop.release_buffers()
        if self.stream is not None:
            self.stream.close()

    async def close(self) -> None:
        self._fail(COMM_FAILURE(OMG_VMCID | 0, _NO))
        self._close_transport()


__all__ = ["ORB", "ClientOptions", "ObjectRef", "Invocation", "DeferredRequest", "RawConnection", "RawRead",
           "UnknownUserException"]
