"""Marshaling of operation arguments and results by an interface description
(:class:`pycdr.idl.model.Operation`), shared by the server and the client.

Python convention (the omniORBpy one): a caller passes the ``in`` and
``inout`` values in parameter order; an operation returns nothing (``None``)
when it has no result and no ``out``/``inout`` parameters, the single value
when there is exactly one, else a tuple ``(result, out1, out2, ...)`` (the
result first when it is not void).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..codec import tc
from ..codec.cdr import CDRReader, CDRWriter
# (the operations every object has, for the client and the server)
from ..idl.model import IS_A, NON_EXISTENT, OBJECT_OPERATIONS, Operation, Param  # noqa: F401
from ..codec.marshal import IMPLEMENTATION, read_value, write_value
from ..codec.plan import OctetSeqNode, plan_for
from ..codec.typecode import TCKind

# The ORB's one-call paths in C (issue 21): the server's Request -> Reply
# (dispatch.RequestDispatch), the client's Request encoding and Reply decoding
# (client.RequestEncoder, blocking.BlockingConnection), and the blocking client's
# whole call over a plain socket (exchange).  None on the pure-Python
# path (PYCDR_PURE=1): every message takes the general one.
if IMPLEMENTATION == "c":
    from ..codec._speedups import decode_reply, encode_request, serve_request
    from ..codec import _speedups
    # The blocking client's whole twoway call (blocking.BlockingConnection) and the
    # threaded server's read-serve-reply (threads.ThreadConnection): POSIX only.
    exchange = getattr(_speedups, "exchange", None)
    send_request = getattr(_speedups, "send_request", None)      # (its oneway call)
    serve_exchange = getattr(_speedups, "serve_exchange", None)
else:
    decode_reply = encode_request = serve_request = exchange = send_request = \
        serve_exchange = None

# How long the blocking client's and the threaded server's C reads (exchange,
# serve_exchange) poll their socket before they sleep on it, by default (seconds;
# ClientOptions.poll_wait, ServerLimits.poll_wait; 0: sleep at once).  Sleeping on each
# reply costs a wake-up that dominates a small call's round trip on loopback or a LAN:
# 104-117 us a round trip between two processes on two cores of this project's
# machine sleeping at both ends, 44 us polling at one, 10 us at both (a plain socket
# loop).  The C side bounds it (pycdr/_speedups.c, recv_polled): no more threads poll
# at once than the process may use CPUs (none on a one-CPU machine), and a thread whose
# poll came back empty sleeps at once on its next reads (an idle connection, a slow
# peer, a machine with no core to spare).
# PYCDR_POLL_WAIT (seconds) changes the default: 0 sleeps at once, as other ORBs do.
POLL_WAIT = 300e-6


def _default_poll_wait() -> float:
    text = os.environ.get("PYCDR_POLL_WAIT")
    if not text:
        return POLL_WAIT
    try:
        return max(0.0, float(text))
    except ValueError:
        raise ValueError(f"PYCDR_POLL_WAIT={text!r}: not a number of seconds") from None


DEFAULT_POLL_WAIT = _default_poll_wait()


def poll_ns(seconds: float | None) -> int:
    """A poll_wait option as the C reads take it: whole nanoseconds, 0 for none, at
    most one second (a poll is a busy wait; an infinite one would never sleep)."""
    if not seconds or not seconds > 0:
        return 0
    return int(min(seconds, 1.0) * 1e9)


def is_void(type_code) -> bool:
    return type_code.kind() == TCKind.tk_void


def result_types(op: Operation) -> tuple:
    """The TypeCodes of what an operation returns, in the order of its return tuple."""
    return op.result_types


# A sequence<octet> that ends a Request's or Reply's body and holds at least TAIL_MIN
# octets is sent after the encoded message (GiopConnection.send_templated's tail) instead
# of being copied into it.  Below that the copy costs about what the tail's own work
# does: the arguments of a call with one octet sequence took 1.5-1.7 us to write as a
# tail at 8 to 64 KB, and 1.3, 1.6, 2.1 and 2.9 us copied at 8, 16, 32 and 64 KB (into a
# cache-warm buffer; one whose pages must be faulted in first costs more).
TAIL_MIN = 32 * 1024


def octet_tail(type_code, value) -> bytes | None:
    """``value`` when it may be sent as the tail of a message whose body it ends: a
    ``bytes`` object (immutable, so the transport may send it after the call returns)
    of TAIL_MIN octets or more, for a sequence<octet> whose bound it keeps; else None
    (the value is written as any other)."""
    if type(value) is not bytes or len(value) < TAIL_MIN:
        return None
    bound = octet_sequence_bound(type_code)
    if bound is None or (bound and len(value) > bound):
        return None
    return value


def arguments_tail(op: Operation, args) -> bytes | None:
    """The octets of the last in/inout argument, when they may be the Request's tail."""
    params = op.in_params
    if not params or len(args) != len(params):
        return None
    return octet_tail(params[-1].type, args[-1])


def results_tail(op: Operation, values: list) -> bytes | None:
    """The octets of the last result value, when they may be the Reply's tail."""
    types = op.result_types
    if not types or len(values) != len(types):
        return None
    return octet_tail(types[-1], values[-1])


def _write_values(w: CDRWriter, type_codes, values, tail) -> None:
    if tail is None:
        for type_code, value in zip(type_codes, values):
            write_value(w, type_code, value)
        return
    for i in range(len(type_codes) - 1):
        write_value(w, type_codes[i], values[i])
    w.write_ulong(len(tail))        # the sequence's length; its octets follow the buffer


def write_arguments(w: CDRWriter, op: Operation, args, tail: bytes | None = None) -> None:
    """The in/inout values; ``tail`` (what arguments_tail gave): the last value's octets
    are left out after its length, for the caller to send after the buffer."""
    params = op.in_params
    if len(args) != len(params):
        raise TypeError(f"{op.name} takes {len(params)} in/inout arguments, not {len(args)}")
    if tail is None:
        for param, value in zip(params, args):
            write_value(w, param.type, value)
        return
    for i in range(len(params) - 1):
        write_value(w, params[i].type, args[i])
    w.write_ulong(len(tail))        # (as _write_values)


def read_arguments(r: CDRReader, op: Operation, octet_views: bool = False) -> list:
    """The in/inout values; with ``octet_views`` a sequence<octet> among them (not one
    nested in another type) is a memoryview of the message, not a bytes copy."""
    if octet_views and type(r) is CDRReader:
        return [_read_viewing_octets(r, p.type) for p in op.in_params]
    return [read_value(r, p.type) for p in op.in_params]


def octet_sequence_bound(type_code) -> int | None:
    """The bound of a sequence<octet> (0: unbounded); None for any other type.  (From
    the type's cached marshal plan: asking the TypeCode costs ten times more, and a
    call with a large octet argument asks it once or twice.)"""
    node = plan_for(type_code)
    if type(node) is OctetSeqNode and not node.is_array:
        return node.bound
    return None


def _read_viewing_octets(r: CDRReader, type_code):
    bound = octet_sequence_bound(type_code)
    return read_value(r, type_code) if bound is None else r.read_octet_view(bound)


def results_to_values(op: Operation, returned) -> list:
    """The list of values, one per result_types(op), from what a servant returned."""
    n = len(op.result_types)
    if n == 0:
        return []
    if n == 1:
        return [returned]
    if not isinstance(returned, (tuple, list)) or len(returned) != n:
        raise TypeError(f"{op.name} must return a tuple of {n} values "
                        "(result and out/inout values)")
    return list(returned)


def values_to_results(op: Operation, values: list):
    """What a caller gets back: None, the single value, or a tuple."""
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return tuple(values)


def write_results(w: CDRWriter, op: Operation, values: list,
                  tail: bytes | None = None) -> None:
    """The result and out/inout values; ``tail`` (what results_tail gave): as in
    write_arguments."""
    _write_values(w, result_types(op), values, tail)


def read_results(r: CDRReader, op: Operation, octet_views: bool = False) -> list:
    """The result and out/inout values (``octet_views``: as read_arguments)."""
    if octet_views and type(r) is CDRReader:
        return [_read_viewing_octets(r, t) for t in result_types(op)]
    return [read_value(r, t) for t in result_types(op)]


def dynamic_operation(name: str, params=(), result=tc.void, raises=(), oneway=False) -> Operation:
    """An operation built at run time (DII): ``params`` are Param objects or
    ``(name, mode, TypeCode)`` triples."""
    built = tuple(p if isinstance(p, Param) else Param(*p) for p in params)
    for p in built:
        if p.mode not in ("in", "out", "inout"):
            raise ValueError(f"parameter {p.name}: mode {p.mode!r} is not in, out or inout")
    return Operation(name=name, params=built, result=result, raises=tuple(raises),
                     oneway=oneway)


@dataclass(frozen=True)
class UnknownUserException(Exception):
    """A USER_EXCEPTION reply whose exception the caller's description does not list."""
    exception_id: str
    body: bytes

    def __str__(self):
        return f"user exception {self.exception_id} (not in the operation's raises clause)"
