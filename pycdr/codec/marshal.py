"""Marshaling by TypeCode: the public entry points.

Stream forms (for message bodies and anything already positioned in a
stream) take a :class:`~pycdr.codec.cdr.CDRReader` / :class:`~pycdr.codec.cdr.CDRWriter`;
the byte forms make one.  ``offset`` is where the value starts relative to the
alignment origin (a GIOP body starts at offset 12, or 16/24 after 1.2
headers; a value alone starts at 0).  Encapsulation forms carry the byte order
in their first octet, as ``omniORB.cdrMarshal`` produces.
"""

from __future__ import annotations


from .. import codesets
from .cdr import DEFAULT_VERSION, CDRReader, CDRWriter
from ..errors import DecodeError
from ..fastpath import c_allowed
from .plan import plan_for
from .typecode import TypeCode


def read_value(r: CDRReader, tc: TypeCode):
    """Decode one value of type ``tc`` at the reader's position."""
    if r.context is None:
        r.context = {}
    return plan_for(tc).read(r)


def write_value(w: CDRWriter, tc: TypeCode, value) -> None:
    """Encode one value of type ``tc`` at the writer's position."""
    if w.context is None:
        w.context = {}
    plan_for(tc).write(w, value)


def encode(tc: TypeCode, value, *, little: bool = False, version=DEFAULT_VERSION,
           offset: int = 0, tcs_c: int = codesets.DEFAULT_TCS_C,
           tcs_w: int = codesets.DEFAULT_TCS_W, wstring_bom: bool = False) -> bytes:
    """The CDR bytes of ``value`` starting ``offset`` bytes past an 8-aligned origin."""
    w = CDRWriter(little=little, version=version, offset=offset, tcs_c=tcs_c, tcs_w=tcs_w,
                  wstring_bom=wstring_bom)
    write_value(w, tc, value)
    return w.getvalue()


def decode(tc: TypeCode, data, *, little: bool = False, version=DEFAULT_VERSION,
           offset: int = 0, tcs_c: int = codesets.DEFAULT_TCS_C,
           tcs_w: int = codesets.DEFAULT_TCS_W, lenient: bool = False,
           warnings: list | None = None, numeric_arrays: bool = False,
           allow_trailing: bool = False):
    """Decode ``data`` (bytes-like; not copied) as one value of type ``tc``.

    ``lenient`` records violations in ``warnings`` (a list you pass) instead of
    raising. ``numeric_arrays`` returns sequences of numbers as ``array.array``.
    Bytes left over after the value are an error unless ``allow_trailing``.
    """
    r = CDRReader(data, origin=-offset, little=little, version=version, tcs_c=tcs_c,
                  tcs_w=tcs_w, lenient=lenient, warnings=warnings)
    r.context = {"numeric_arrays": numeric_arrays}
    value = plan_for(tc).read(r)
    _check_trailing(r, allow_trailing)
    return value


def _check_trailing(r: CDRReader, allow: bool) -> None:
    if r.pos != r.end and not allow:
        r.violation(DecodeError, "trailing-bytes",
                    f"{r.end - r.pos} bytes left after the value", r.pos)


def encode_encapsulation(tc: TypeCode, value, *, little: bool = False,
                         version=DEFAULT_VERSION, tcs_c: int = codesets.DEFAULT_TCS_C,
                         tcs_w: int = codesets.DEFAULT_TCS_W) -> bytes:
    """An encapsulation: the byte-order octet, then the value aligned from it."""
    w = CDRWriter(little=little, version=version, tcs_c=tcs_c, tcs_w=tcs_w)
    w.buf.append(1 if little else 0)
    write_value(w, tc, value)
    return w.getvalue()


def decode_encapsulation(tc: TypeCode, data, *, version=DEFAULT_VERSION,
                         tcs_c: int = codesets.DEFAULT_TCS_C,
                         tcs_w: int = codesets.DEFAULT_TCS_W, lenient: bool = False,
                         warnings: list | None = None, numeric_arrays: bool = False,
                         allow_trailing: bool = False):
    """Decode an encapsulation (its first octet says the byte order)."""
    r = CDRReader(data, version=version, tcs_c=tcs_c, tcs_w=tcs_w, lenient=lenient,
                  warnings=warnings)
    r.read_encapsulation_byte_order()
    r.context = {"numeric_arrays": numeric_arrays}
    value = plan_for(tc).read(r)
    _check_trailing(r, allow_trailing)
    return value


# --------------------------------------------------------------------------
# The C fast path (issue 7): pycdr.codec._speedups runs the same plans unless
# PYCDR_PURE=1; it hands anything it does not take back to the functions
# above (see pycdr/_cmarshal.py).  IMPLEMENTATION says which path is in use.
# --------------------------------------------------------------------------
IMPLEMENTATION = "python"
if c_allowed():
    try:
        from . import _cmarshal
    except ImportError:          # extension not built: pure Python
        pass
    else:
        IMPLEMENTATION = "c"
        (read_value, write_value, encode, decode, encode_encapsulation,
         decode_encapsulation) = _cmarshal.wrap(read_value, write_value, encode, decode,
                                                encode_encapsulation, decode_encapsulation)
