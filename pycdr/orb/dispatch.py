"""A server connection's handling of messages, whatever its transport (the asyncio
server's connections, pycdr.orb.server, and the threaded server's, pycdr.orb.threads):
code set negotiation, a Request's target, its arguments, the servant call and the
Reply, LocateReplies, CloseConnection."""

from __future__ import annotations

import abc
import inspect
import logging
import time

from ..errors import EncodeError, PycdrError
from ..giop.connection import GiopConnection
from ..giop.events import Answer, ProtocolViolation
from ..giop.messages import (CancelRequest, CloseConnection, KeyAddr, LocateReply,
                             LocateRequest, LocateStatus, MessageError, MessageTemplate,
                             ProfileAddr, ReferenceAddr, Reply, ReplyStatus, Request)
from ..giop.service_contexts import CodeSetsContext
from ..giop.sysexc import (BAD_OPERATION, CODESET_INCOMPATIBLE, INV_FLAG, MARSHAL,
                           OBJECT_NOT_EXIST, OMG_VMCID, UNKNOWN, CompletionStatus,
                           SystemException)
from ..addressing.iiop import IIOPProfile, decode_profile
from ..codesets import DEFAULT_TCS_C, ISO_8859_1
from ..codec.marshal import write_value
from ..codec.values import UserException
from . import codesets as orb_codesets
from .interface_def import interface_def_key
from .invocation import (OBJECT_OPERATIONS, read_arguments, results_tail, results_to_values,
                         serve_request, write_results)
from .servant import Servant

log = logging.getLogger("pycdr.orb.server")     # the server's log, as tlstransport's

VALID_RESPONSE_FLAGS = (0, 1, 3)  # SYNC_NONE/WITH_TRANSPORT, SYNC_WITH_SERVER, SYNC_WITH_TARGET
_NO = CompletionStatus.COMPLETED_NO
_YES = CompletionStatus.COMPLETED_YES
_MAYBE = CompletionStatus.COMPLETED_MAYBE
_VERSIONS = {0: (1, 0), 1: (1, 1), 2: (1, 2)}     # GIOP minor version -> version


def target_object_key(target) -> bytes | None:
    """The object key a TargetAddress designates (None if it names no IIOP profile)."""
    if isinstance(target, KeyAddr):
        return target.object_key
    if isinstance(target, ProfileAddr):
        profile = target.profile
    elif isinstance(target, ReferenceAddr):
        if target.selected_profile_index >= len(target.ior.profiles):
            return None
        profile = target.ior.profiles[target.selected_profile_index]
    else:
        return None
    try:
        decoded = decode_profile(profile)
    except PycdrError:
        return None
    return decoded.object_key if isinstance(decoded, IIOPProfile) else None


class _Outcome:
    """What to answer a request with: a reply status and how to write its body
    (``tail``: the octets that end it, sent after what write_body writes; only with
    a reply template, see GiopConnection.send_templated)."""
    __slots__ = ("status", "write_body", "system_exception", "forward", "tail")

    def __init__(self, status, write_body=None, system_exception=None, forward=None,
                 tail=None):
        self.status = status
        self.write_body = write_body
        self.system_exception = system_exception
        self.forward = forward
        self.tail = tail


def _system(exc: SystemException) -> _Outcome:
    return _Outcome(ReplyStatus.SYSTEM_EXCEPTION, system_exception=exc)


class RequestDispatch(abc.ABC):
    """A server connection's handling of messages, whatever its transport: code set
    negotiation, a Request's target, arguments, servant call and Reply (from
    per-(version, byte order) templates), LocateReplies, CloseConnection.  The
    asyncio server's connections (_ServerConnection) and the threaded server's
    (threads.ThreadConnection) add the reading and writing: ``_write(data)``."""

    def _init_dispatch(self, server, giop: GiopConnection, peer) -> None:
        self.server = server
        self.adapter = server.adapter
        self.limits = server.limits
        self.giop = giop
        self.peer = peer
        self._reply_templates: dict[tuple, MessageTemplate] = {}   # by (version, little)
        self.code_sets: tuple[int, int] | None = None     # (TCS-C, TCS-W) once negotiated
        self.last_version = (1, 0)     # of the last message received: for CloseConnection
        self.closed = False
        self._last_activity = time.monotonic()
        # The fast path's table (the adapter's: {key: {operation: entry}}), or None
        # when this connection cannot take it: no C path, replies to be fragmented,
        # or a char code set other than ISO-8859-1 (the only one the C plans write).
        self._direct = self.adapter.direct if serve_request is not None and \
            self.limits.fragment_size is None and DEFAULT_TCS_C == ISO_8859_1 else None
        giop.take_directly = self._take_directly if self._direct is not None else None

    @abc.abstractmethod
    def _write(self, data) -> None:
        """Send ``data`` (nothing once the connection is closed)."""

    @abc.abstractmethod
    def _take_directly(self, raw) -> bool:
        """The GiopConnection's take_directly: _run_direct(raw) with the server's GC
        pause around it."""

    def _run_direct(self, raw) -> bool:
        """Answer the Request ``raw`` in one C call when it takes it (a twoway call
        of an operation _learn_direct entered, with nothing unusual about it: see
        _speedups.serve_request); whether it did."""
        if self.closed:
            return False
        done = serve_request(raw, self._direct, self.giop.outstanding)
        if done is None:
            return False
        self.last_version = _VERSIONS[raw[5]]
        if type(done) is bytes:
            self.server.requests_served += 1
            if done:                    # (b"": a oneway request, nothing to answer)
                self._write(done)
            return True
        self._answer_ran(done)
        return True

    def _answer_ran(self, done: tuple) -> None:
        """Answer a Request whose servant ran in C (serve_request's tuple ``done``) but
        whose outcome needs the general path: an exception, a value the plans did not
        write, an awaitable."""
        op, request_id, minor, little, what, raised, flags = done
        req = Request(version=_VERSIONS[minor], little=bool(little), request_id=request_id,
                      response_flags=flags, operation=op.name)
        if flags:                   # (a oneway request, flags 0, is neither booked nor answered)
            self.giop.outstanding.add(request_id)    # (as if handed out: the reply books it)
        if raised:
            try:
                raise what
            except Exception as e:        # (logged with its traceback by _raised)
                outcome = self._raised(op, e)
        elif inspect.isawaitable(what):
            # The method turned out to await after all: its operation leaves the
            # fast path, and this call is finished by the server's own means.
            for ops in self._direct.values():
                for name in [name for name, entry in ops.items() if entry[0] is op]:
                    del ops[name]
            self._finish_awaited(req, op, what)
            return
        else:
            outcome = self._returned(op, what)
        self._after_running(req, outcome)

    def _learn_direct(self, key: bytes, operation: str, servant: Servant, op) -> None:
        """Enter (key, operation) in the fast path's table when its calls may take it:
        a method that does not await, arguments delivered as the plans decode them
        (no numeric arrays, no octet views)."""
        if servant.numeric_arrays or servant.octet_views or \
                servant.concurrent_operation(operation):
            return
        entry = (op, servant.call, op.in_plans, op.result_plans)
        self._direct.setdefault(key, {})[operation] = entry

    @abc.abstractmethod
    def _finish_awaited(self, req: Request, op, awaitable) -> None:
        """Await what a servant method returned for ``req`` and send the reply."""

    def _violation(self, event: ProtocolViolation) -> bool:
        """Log a protocol violation and send its answer; whether to close."""
        log.warning("%s: %s", self.peer, event)
        if event.reply:
            self._write(event.reply)
        return event.answer in (Answer.SEND_MESSAGE_ERROR_AND_CLOSE, Answer.CLOSE)

    def _on_other_message(self, msg) -> bool:
        """A message other than a Request; False when the connection must close."""
        if isinstance(msg, LocateRequest):
            self._send(self._locate_reply(msg))
        elif isinstance(msg, CancelRequest):
            self._cancel(msg.request_id)
        elif isinstance(msg, MessageError):
            log.warning("%s sent MessageError: it did not understand a message of ours",
                        self.peer)
        elif isinstance(msg, CloseConnection):
            return False
        return True

    @abc.abstractmethod
    def _cancel(self, request_id: int) -> None:
        """A CancelRequest: the client no longer waits for that reply."""

    def _request_target(self, req: Request):
        """(refused code sets or None, object key, servant) of a Request."""
        refused = self._negotiate_code_sets(req)
        key = target_object_key(req.target)
        servant = self.adapter.servant(key) if key is not None else None
        return refused, key, servant

    def _before_running(self, req: Request) -> bool:
        """Send what is answered before the servant runs; False when the request
        must not run."""
        if req.version >= (1, 2) and req.response_flags not in VALID_RESPONSE_FLAGS:
            # 0, 1 and 3 are the defined values; anything else is refused without
            # running the request (CORBA 3.x Part 2, 9.4.2.1).
            self._send_reply(req, _system(INV_FLAG(OMG_VMCID | 0, _NO)))
            return False
        if req.response_flags == 1:
            # SYNC_WITH_SERVER: the reply only says the request arrived; send it first.
            self._send_reply(req, _Outcome(ReplyStatus.NO_EXCEPTION))
        return True

    def _after_running(self, req: Request, outcome: _Outcome) -> bool:
        """Send the reply a request ran for, if it expects one; whether it did."""
        self.server.requests_served += 1
        if req.response_expected and req.response_flags != 1:
            self._send_reply(req, outcome)
            return True
        return False

    def _prepare(self, req: Request, key: bytes | None, servant: Servant | None,
                 refused: SystemException | None = None):
        """(operation, arguments) of a request to run, or the _Outcome that answers
        it without the servant (code sets ``refused``, no such object or operation,
        undecodable arguments, the object operations _is_a and the like)."""
        if refused is not None:
            return _system(refused)
        if servant is None:
            # (a key with a servant is never forwarded: forward() deactivates it)
            forward = self.adapter.forwarded(key) if key is not None else None
            if forward is not None:
                permanent = forward.permanent and req.version >= (1, 2)
                return _Outcome(ReplyStatus.LOCATION_FORWARD_PERM if permanent
                                else ReplyStatus.LOCATION_FORWARD, forward=forward.ior)
            return _system(OBJECT_NOT_EXIST(OMG_VMCID | 2, _NO))
        op = servant.operations.get(req.operation) or OBJECT_OPERATIONS.get(req.operation)
        if op is None:
            return _system(BAD_OPERATION(OMG_VMCID | 2, _NO))
        code_sets = self.code_sets
        try:
            reader = req.body_reader(**_tcs_kwargs(*code_sets)) if code_sets \
                else req.body_reader()
            if servant.numeric_arrays:
                reader.context = {"numeric_arrays": True}
            args = read_arguments(reader, op, servant.octet_views)
        except PycdrError as e:
            log.info("%s: %s arguments undecodable: %s", self.peer, req.operation, e)
            return _system(MARSHAL(OMG_VMCID | 0, _NO))
        if op is OBJECT_OPERATIONS.get(op.name):
            return self._object_operation(servant, op, args)
        if self._direct is not None and req.operation not in self._direct.get(key, ()):
            self._learn_direct(key, req.operation, servant, op)
        return op, args

    def _raised(self, op, e: Exception) -> _Outcome:
        """The outcome of a servant that raised ``e`` (called where it is caught)."""
        if isinstance(e, SystemException):
            return _system(e)
        if isinstance(e, UserException):
            exc_tc = type(e)._tc
            if exc_tc is None or not any(exc_tc.id() == t.id() for t in op.raises):
                log.error("servant raised %r, which %s does not declare", e, op.name)
                return _system(UNKNOWN(OMG_VMCID | 1, _YES))
            tcs_c, tcs_w = self.code_sets or (None, None)
            return _Outcome(ReplyStatus.USER_EXCEPTION,
                            write_body=_user_exception_writer(exc_tc, e, tcs_c, tcs_w))
        log.exception("servant error in %s", op.name)
        return _system(UNKNOWN(OMG_VMCID | 0, _MAYBE))

    def _returned(self, op, returned) -> _Outcome:
        """The outcome of a servant that returned ``returned``."""
        try:
            values = results_to_values(op, returned)
        except TypeError as e:
            log.error("servant result of %s: %s", op.name, e)
            return _system(MARSHAL(OMG_VMCID | 0, _YES))
        tcs_c, tcs_w = self.code_sets or (None, None)
        tail = results_tail(op, values) if self.limits.fragment_size is None else None
        return _Outcome(ReplyStatus.NO_EXCEPTION,
                        write_body=_results_writer(op, values, tcs_c, tcs_w, tail), tail=tail)

    def _negotiate_code_sets(self, req: Request) -> SystemException | None:
        """The first CodeSets context on a connection fixes its code sets;
        later ones are ignored (CORBA 3.x Part 2, 7.10.2.6)."""
        if self.code_sets is not None or req.version < (1, 1):
            return None
        for context in req.service_contexts:
            if isinstance(context, CodeSetsContext):
                if not orb_codesets.acceptable(context.char_data, context.wchar_data):
                    log.warning("%s: CodeSets context %s refused", self.peer, context)
                    return CODESET_INCOMPATIBLE(OMG_VMCID | 1, _NO)
                self.code_sets = (context.char_data, context.wchar_data or None)
                if context.char_data != ISO_8859_1:
                    self._direct = self.giop.take_directly = None
                return None
        return None

    def _object_operation(self, servant: Servant, op, args) -> _Outcome:
        if op.name == "_is_a":
            values = [servant.is_a(args[0])]
        elif op.name in ("_non_existent", "_not_existent"):
            values = [servant.non_existent()]
        elif op.name == "_repository_id":
            values = [servant.repo_id]
        elif op.name == "_get_component":
            values = [None]     # not a CORBA component's facet: nil (CORBA 3.x Part 3, 6.11)
        else:   # _interface / _get_interface
            values = [self.server.ior(interface_def_key(self.adapter, servant.interface))]
        return _Outcome(ReplyStatus.NO_EXCEPTION, write_body=_results_writer(op, values))

    def _locate_reply(self, msg: LocateRequest) -> LocateReply:
        key = target_object_key(msg.target)
        reply = LocateReply(version=msg.version, little=msg.little, request_id=msg.request_id,
                            locate_status=LocateStatus.UNKNOWN_OBJECT)
        if key is None:
            return reply
        forward = self.adapter.forwarded(key)
        if forward is not None:
            reply.locate_status = LocateStatus.OBJECT_FORWARD_PERM \
                if forward.permanent and msg.version >= (1, 2) else LocateStatus.OBJECT_FORWARD
            reply.forward = forward.ior
        elif self.adapter.servant(key) is not None:
            reply.locate_status = LocateStatus.OBJECT_HERE
        return reply

    def _send_reply(self, req: Request, outcome: _Outcome) -> None:
        if outcome.status == ReplyStatus.NO_EXCEPTION and outcome.write_body is not None \
                and not self.closed:
            template = self._reply_templates.get((req.version, req.little))
            if template is None:
                template = self._reply_templates[(req.version, req.little)] = \
                    self.giop.template(Reply(version=req.version, little=req.little,
                                             reply_status=ReplyStatus.NO_EXCEPTION))
            try:
                self._write(self.giop.send_templated(
                    template, req.request_id, outcome.write_body,
                    fragment_size=self.limits.fragment_size, tail=outcome.tail))
                return
            except (EncodeError, TypeError, ValueError, AttributeError) as e:
                log.error("cannot encode the reply to %s: %s", req.operation, e)
                outcome = _system(MARSHAL(OMG_VMCID | 0, _YES))
        reply = Reply(version=req.version, little=req.little, request_id=req.request_id,
                      reply_status=outcome.status, system_exception=outcome.system_exception,
                      forward=outcome.forward)
        try:
            self._send(reply, outcome.write_body)
        except (EncodeError, TypeError, ValueError, AttributeError) as e:
            # The servant's values do not fit the types: MARSHAL instead.
            log.error("cannot encode the reply to %s: %s", req.operation, e)
            reply.reply_status = ReplyStatus.SYSTEM_EXCEPTION
            reply.system_exception = MARSHAL(OMG_VMCID | 0, _YES)
            self._send(reply)

    def _send(self, msg, write_body=None) -> None:
        if self.closed:
            return
        # GIOP 1.0 has no fragments: encode_fragments sends its messages whole.
        self._write(self.giop.send(msg, write_body=write_body,
                                   fragment_size=self.limits.fragment_size))

    def _send_close_connection(self) -> None:
        if not self.closed:
            self._write(self.giop.send(CloseConnection(version=self.last_version)))


def _tcs_kwargs(tcs_c, tcs_w) -> dict:
    out = {}
    if tcs_c is not None:
        out["tcs_c"] = tcs_c
    if tcs_w is not None:
        out["tcs_w"] = tcs_w
    return out


def _set_code_sets(w, tcs_c, tcs_w) -> None:
    # The message encoder makes the writer; the negotiated code sets go into it here.
    if tcs_c is not None:
        w.tcs_c = tcs_c
    if tcs_w is not None:
        w.tcs_w = tcs_w


def _results_writer(op, values, tcs_c=None, tcs_w=None, tail=None):
    def write(w):
        _set_code_sets(w, tcs_c, tcs_w)
        write_results(w, op, values, tail)
    return write


def _user_exception_writer(exc_tc, exc, tcs_c, tcs_w):

    def write(w):
        _set_code_sets(w, tcs_c, tcs_w)
        write_value(w, exc_tc, exc)        # the repository id, then the members
    return write
