"""Marshaling of operation arguments and results by an interface description
(:class:`pycdr.idl.model.Operation`), shared by the server and the client.

Python convention (the omniORBpy one): a caller passes the ``in`` and
``inout`` values in parameter order; an operation returns nothing (``None``)
when it has no result and no ``out``/``inout`` parameters, the single value
when there is exactly one, else a tuple ``(result, out1, out2, ...)`` (the
result first when it is not void).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import tc
from ..cdr import CDRReader, CDRWriter
# (the operations every object has, for the client and the server)
from ..idl.model import IS_A, NON_EXISTENT, OBJECT_OPERATIONS, Operation, Param  # noqa: F401
from ..marshal import IMPLEMENTATION, read_value, write_value
from ..typecode import TCKind

# The ORB's one-call paths in C (issue 21): the server's Request -> Reply
# (server.RequestDispatch), the client's Request encoding and Reply decoding
# (client.RequestEncoder, blocking.BlockingConnection).  None on the pure-Python
# path (PYCDR_PURE=1): every message takes the general one.
if IMPLEMENTATION == "c":
    from .._speedups import decode_reply, encode_request, serve_request
else:
    decode_reply = encode_request = serve_request = None


def is_void(type_code) -> bool:
    return type_code.kind() == TCKind.tk_void


def result_types(op: Operation) -> tuple:
    """The TypeCodes of what an operation returns, in the order of its return tuple."""
    return op.result_types


def write_arguments(w: CDRWriter, op: Operation, args) -> None:
    params = op.in_params
    if len(args) != len(params):
        raise TypeError(f"{op.name} takes {len(params)} in/inout arguments, not {len(args)}")
    for param, value in zip(params, args):
        write_value(w, param.type, value)


def read_arguments(r: CDRReader, op: Operation, octet_views: bool = False) -> list:
    """The in/inout values; with ``octet_views`` a sequence<octet> among them (not one
    nested in another type) is a memoryview of the message, not a bytes copy."""
    if octet_views and type(r) is CDRReader:
        return [_read_viewing_octets(r, p.type) for p in op.in_params]
    return [read_value(r, p.type) for p in op.in_params]


def octet_sequence_bound(type_code) -> int | None:
    """The bound of a sequence<octet> (0: unbounded); None for any other type."""
    t = type_code.unalias()
    if t.kind() == TCKind.tk_sequence and t.content_type().unalias().kind() == TCKind.tk_octet:
        return t.length()
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


def write_results(w: CDRWriter, op: Operation, values: list) -> None:
    for type_code, value in zip(result_types(op), values):
        write_value(w, type_code, value)


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
