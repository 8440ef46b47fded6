"""The CDR encoding of TypeCodes themselves (CORBA 3.x Part 2, 9.3.5).

A TypeCode is its TCKind as an unsigned long, then its parameters: none for
the basic kinds, "simple" ones inline (string bound, fixed digits/scale), and
"complex" ones in an encapsulation.  An indirection (kind 0xffffffff, then a
long offset relative to the offset field) stands for a TypeCode already
written earlier within the same top-level TypeCode: needed for recursive
types, allowed for repeated ones.

Nested encapsulations are written in place (same buffer, alignment restarted at
their byte-order octet) so that offsets are positions in one buffer, as they
must be when an indirection reaches out of an encapsulation to an enclosing
TypeCode.
"""

from __future__ import annotations

import copyreg
import struct

from .cdr import BE, LE, CDRReader, CDRWriter
from ..errors import (BadTypeCodeError, CDRError, EncodeError, InvalidTypeCodeError,
                      RecursionLimitError)
from .scalars import scalar_plan
from .typecode import (DEFAULT, DISCRIMINATOR_KINDS, INTEGER_RANGES, PRIMITIVE_KINDS,
                       RecursiveTypeCode, TCKind, TypeCode, enum_tc, exception_tc, primitive,
                       resolve, struct_tc, union_tc, value_tc)

K = TCKind
INDIRECTION = 0xFFFFFFFF
MAX_TC_DEPTH = 100         # as Wireshark's GIOP_MAX_RECURSION_DEPTH

_EMPTY_KINDS = PRIMITIVE_KINDS
_ID_NAME_KINDS = (K.tk_objref, K.tk_native, K.tk_abstract_interface, K.tk_local_interface,
                  K.tk_component, K.tk_home)


# --------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------
def write_typecode(w: CDRWriter, tc: TypeCode, *, repeated_indirection: bool = False,
                   encapsulation_little: bool | None = None) -> None:
    """Write a top-level TypeCode. Recursive references always become
    indirections; with ``repeated_indirection`` a complex TypeCode that occurs
    again is written as an indirection too.  ``encapsulation_little`` writes
    every parameter encapsulation in that byte order whatever the stream's (as
    omniORB does with its native order; each encapsulation says its own)."""
    _write_tc(w, tc, {}, set(), repeated_indirection, encapsulation_little)


def _write_tc(w: CDRWriter, tc: TypeCode, positions: dict, open_: set, repeated: bool,
              encaps_little: bool | None = None) -> None:
    tc = resolve(tc)
    key = id(tc)
    w.align(4)
    if key in positions and (key in open_ or repeated):
        here = len(w.buf)
        w.write_ulong(INDIRECTION)
        w.write_long(positions[key] - (here + 4))
        return
    k = tc._kind
    if k in _EMPTY_KINDS:
        w.write_ulong(k)
        return
    if k in (K.tk_string, K.tk_wstring):
        w.write_ulong(k)
        w.write_ulong(tc._length)
        return
    if k == K.tk_fixed:
        w.write_ulong(k)
        w.write_ushort(tc._digits)
        w.write_short(tc._scale)
        return
    positions[key] = len(w.buf)
    w.write_ulong(k)
    # Encapsulation written in place: length placeholder, byte-order octet,
    # parameters aligned from that octet (in their own byte order if asked).
    w.write_ulong(0)              # through the writer: a GIOP 1.1 fragment may begin here
    len_pos = len(w.buf) - 4
    saved_origin, outer_little = w.origin, w.little
    w.origin = len(w.buf)
    if encaps_little is not None:
        w.little, w.fmt = encaps_little, (LE if encaps_little else BE)
    w.buf.append(1 if w.little else 0)
    open_.add(key)
    try:
        _write_params(w, tc, positions, open_, repeated, encaps_little)
    finally:
        open_.discard(key)
        w.origin = saved_origin
        w.little, w.fmt = outer_little, (LE if outer_little else BE)
    length = len(w.buf) - len_pos - 4
    w.buf[len_pos:len_pos + 4] = struct.pack("<I" if w.little else ">I", length)


def _write_params(w, tc, positions, open_, repeated, encaps_little=None):
    k = tc._kind
    if k in _ID_NAME_KINDS:
        w.write_string(tc._id)
        w.write_string(tc._name)
    elif k in (K.tk_struct, K.tk_except):
        w.write_string(tc._id)
        w.write_string(tc._name)
        w.write_ulong(len(tc._member_names))
        for name, mtype in zip(tc._member_names, tc._member_types):
            w.write_string(name)
            _write_tc(w, mtype, positions, open_, repeated, encaps_little)
    elif k == K.tk_union:
        w.write_string(tc._id)
        w.write_string(tc._name)
        _write_tc(w, tc._disc, positions, open_, repeated, encaps_little)
        w.write_long(tc._default_index)
        w.write_ulong(len(tc._member_names))
        disc_plan = scalar_plan(tc._disc)
        for label, name, mtype in zip(tc._labels, tc._member_names, tc._member_types):
            if label is DEFAULT:
                _write_default_label(w, tc._disc, tc)
            else:
                disc_plan.write(w, label)
            w.write_string(name)
            _write_tc(w, mtype, positions, open_, repeated, encaps_little)
    elif k == K.tk_enum:
        w.write_string(tc._id)
        w.write_string(tc._name)
        w.write_ulong(len(tc._member_names))
        for name in tc._member_names:
            w.write_string(name)
    elif k in (K.tk_sequence, K.tk_array):
        _write_tc(w, tc._content, positions, open_, repeated, encaps_little)
        w.write_ulong(tc._length)
    elif k in (K.tk_alias, K.tk_value_box):
        w.write_string(tc._id)
        w.write_string(tc._name)
        _write_tc(w, tc._content, positions, open_, repeated, encaps_little)
    elif k in (K.tk_value, K.tk_event):
        w.write_string(tc._id)
        w.write_string(tc._name)
        w.write_short(tc._modifier)
        if tc._base is None:
            w.write_ulong(K.tk_null)
        else:
            _write_tc(w, tc._base, positions, open_, repeated, encaps_little)
        w.write_ulong(len(tc._member_names))
        for name, mtype, vis in zip(tc._member_names, tc._member_types, tc._visibilities):
            w.write_string(name)
            _write_tc(w, mtype, positions, open_, repeated, encaps_little)
            w.write_short(vis)
    else:  # pragma: no cover
        raise EncodeError(f"cannot encode TypeCode kind {k!r}")


def _write_default_label(w: CDRWriter, disc: TypeCode, union: TypeCode) -> None:
    """The default member's label is a value of the discriminator type that
    receivers ignore (they use default_index). Write the value omniidl gives
    it, so the bytes equal the oracle's: for signed types the lowest value no
    label uses, for unsigned types the highest, for char 0xff downwards, for
    boolean TRUE unless taken, for enums the first unused enumerator."""
    scalar_plan(disc).write(w, default_label_value(union))


def default_label_value(union: TypeCode):
    disc = resolve(union._disc).unalias()
    k = disc._kind
    used = {lbl for lbl in union._labels if lbl is not DEFAULT}
    if k == K.tk_boolean:
        return False if True in used else True
    if k == K.tk_enum:
        return next((i for i in range(len(disc._member_names)) if i not in used), 0)
    if k in (K.tk_char, K.tk_wchar):
        top = 0xFF if k == K.tk_char else 0xFFFF
        return next((chr(c) for c in range(top, -1, -1) if chr(c) not in used
                     and not 0xD800 <= c <= 0xDFFF), chr(top))
    lo, hi = INTEGER_RANGES[k]
    if lo < 0:
        return next(v for v in range(lo, hi + 1) if v not in used)
    return next(v for v in range(hi, lo - 1, -1) if v not in used)


def _skip_default_label(r: CDRReader, disc: TypeCode) -> None:
    """Read past the default member's label without judging its value."""
    k = resolve(disc).unalias()._kind
    if k in (K.tk_boolean, K.tk_char):
        r.read_octet()
    elif k == K.tk_wchar:
        r.read_wchar()
    else:
        size = {K.tk_short: 2, K.tk_ushort: 2, K.tk_longlong: 8, K.tk_ulonglong: 8}.get(k, 4)
        r.align(size)
        r.skip(size)


def encode_typecode_encapsulation(tc: TypeCode, little: bool = False) -> bytes:
    w = CDRWriter(little=little)
    w.buf.append(1 if little else 0)
    write_typecode(w, tc)
    return w.getvalue()


# --------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------
class _TCTable:
    """Positions of the TypeCodes decoded so far within one top-level TypeCode."""

    __slots__ = ("done", "open", "depth")

    def __init__(self):
        self.done = {}      # absolute position of a kind field -> TypeCode
        self.open = {}      # position -> list of placeholders awaiting that TypeCode
        self.depth = 0


def read_typecode(r: CDRReader) -> TypeCode:
    return _read_tc(r, _TCTable())


def _bad(message, offset):
    return InvalidTypeCodeError(message, offset)


def _read_tc(r: CDRReader, table: _TCTable) -> TypeCode:
    r.align(4)
    pos = r.pos
    kind = r.read_ulong()
    if kind == INDIRECTION:
        off_pos = r.pos
        offset = r.read_long()
        target = off_pos + offset
        if offset >= 0:
            raise _bad(f"TypeCode indirection offset {offset} does not point backwards", off_pos)
        tc = table.done.get(target)
        if tc is not None:
            return tc
        waiting = table.open.get(target)
        if waiting is not None:
            # The id can never be a repository id (it holds a NUL), so constructors
            # that bind recursive placeholders by id leave this one alone.
            ph = RecursiveTypeCode("\0indirection")
            waiting.append(ph)
            return ph
        raise _bad(f"TypeCode indirection to offset {target} which is not the start of an "
                   "enclosing or earlier TypeCode", off_pos)
    try:
        k = TCKind(kind)
    except ValueError:
        raise _bad(f"unknown TCKind {kind}", pos) from None
    if k in _EMPTY_KINDS:
        return primitive(k)
    if k in (K.tk_string, K.tk_wstring):
        bound = r.read_ulong()
        tc = TypeCode(k, length=bound)
        table.done[pos] = tc
        return tc
    if k == K.tk_fixed:
        digits = r.read_ushort()
        scale = r.read_short()
        if digits > 31 or scale > digits:
            r.violation(InvalidTypeCodeError, "bad-typecode",
                        f"fixed<{digits},{scale}> is not a valid fixed type", pos)
        tc = TypeCode(k, digits=digits, scale=scale)
        table.done[pos] = tc
        return tc
    if table.depth >= MAX_TC_DEPTH:
        raise RecursionLimitError("TypeCode nested too deeply", pos)
    sub = r.read_encapsulation("TypeCode parameters")
    table.open[pos] = []
    table.depth += 1
    try:
        tc = _read_params(sub, k, table, pos)
    except BadTypeCodeError as e:
        raise _bad(f"invalid {k.name} TypeCode: {e}", pos) from None
    finally:
        table.depth -= 1
    if sub.pos != sub.end:
        sub.note("typecode-trailing",
                 f"{sub.end - sub.pos} unused bytes after {k.name} parameters", sub.pos)
    for ph in table.open.pop(pos):
        ph._target = tc
    table.done[pos] = tc
    return tc


def _read_params(r: CDRReader, k: TCKind, table: _TCTable, pos: int) -> TypeCode:
    if k in _ID_NAME_KINDS:
        rid = r.read_string()
        name = r.read_string()
        return TypeCode(k, id=rid, name=name)
    if k in (K.tk_struct, K.tk_except):
        rid = r.read_string()
        name = r.read_string()
        n = r.read_count(9, "member list")   # each member: a string (>= 5) and a kind (4)
        members = []
        for _ in range(n):
            mname = r.read_string()
            members.append((mname, _read_tc(r, table)))
        make = struct_tc if k == K.tk_struct else exception_tc
        return make(rid, name, members)
    if k == K.tk_union:
        rid = r.read_string()
        name = r.read_string()
        disc_pos = r.pos
        disc = _read_tc(r, table)
        if resolve(disc).unalias()._kind not in DISCRIMINATOR_KINDS:
            raise _bad(f"{resolve(disc).unalias()._kind.name} cannot discriminate a union", disc_pos)
        default_index = r.read_long()
        n = r.read_count(10, "member list")
        if not -1 <= default_index < n:
            raise _bad(f"union default index {default_index} out of range for {n} members", pos)
        disc_plan = scalar_plan(disc)
        members = []
        for i in range(n):
            if i == default_index:
                _skip_default_label(r, disc)
                label = DEFAULT
            else:
                label = disc_plan.read(r)
                if isinstance(label, int) and not isinstance(label, bool):
                    label = int(label)
            mname = r.read_string()
            members.append((label, mname, _read_tc(r, table)))
        return union_tc(rid, name, disc, members)
    if k == K.tk_enum:
        rid = r.read_string()
        name = r.read_string()
        n = r.read_count(5, "enumerator list")
        labels = [r.read_string() for _ in range(n)]
        return enum_tc(rid, name, labels)
    if k in (K.tk_sequence, K.tk_array):
        content = _read_tc(r, table)
        length = r.read_ulong()
        if k == K.tk_array and length == 0:
            raise _bad("array of length 0", pos)
        return TypeCode(k, content=content, length=length)
    if k in (K.tk_alias, K.tk_value_box):
        rid = r.read_string()
        name = r.read_string()
        content = _read_tc(r, table)
        return TypeCode(k, id=rid, name=name, content=content)
    if k in (K.tk_value, K.tk_event):
        rid = r.read_string()
        name = r.read_string()
        modifier = r.read_short()
        base_pos = r.pos
        base = _read_tc(r, table)
        if resolve(base)._kind == K.tk_null:
            base = None
        elif resolve(base)._kind not in (K.tk_value, K.tk_event):
            raise _bad("a value type's concrete base must be a value type", base_pos)
        n = r.read_count(11, "member list")
        members = []
        for _ in range(n):
            mname = r.read_string()
            mtype = _read_tc(r, table)
            vis = r.read_short()
            members.append((mname, mtype, vis))
        return value_tc(rid, name, modifier, base, members, kind=k)
    raise _bad(f"{k.name} has no complex parameters", pos)  # pragma: no cover


def decode_typecode_encapsulation(data: bytes) -> TypeCode:
    r = CDRReader(data)
    r.read_encapsulation_byte_order()
    return read_typecode(r)


def _reduce_typecode(tc: TypeCode):
    return (decode_typecode_encapsulation, (encode_typecode_encapsulation(tc),))


# TypeCodes pickle and copy through their CDR encoding, which handles recursion.
for _cls in (TypeCode, RecursiveTypeCode):
    copyreg.pickle(_cls, _reduce_typecode)
del _cls
