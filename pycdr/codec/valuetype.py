"""Valuetypes on the wire (CORBA 3.x Part 2, 9.3.4).

A value is ``0`` (null), an indirection (``0xffffffff`` then a long offset to
an earlier value tag in the same stream: shared and cyclic values), or a value
tag ``0x7fffff00 | flags`` followed by an optional codebase URL (flag 0x01),
type information (flags 0x06: none, one repository id, or a list of ids for
truncatable types), and the state.  With flag 0x08 the state is chunked:
chunks prefixed by a positive length, an end tag ``-nesting_level`` after the
last; nested values sit between chunks.  Repository ids and codebase strings
may themselves be indirections to an earlier string.

Supported: null, plain, shared/cyclic (indirection), boxed values, truncatable
types (decoding truncates a derived value to the most derived known type,
skipping the rest of its chunks), chunked encoding, codebase URLs (read,
kept in ``_codebase``), repository-id and codebase indirections.
Not supported, raising NotSupportedError: custom-marshaled values
(VM_CUSTOM, which need the type's own unmarshal code), and chunk boundaries a
sender puts inside a non-value member (they are legal between any two
primitives; every ORB examined ends chunks only around nested values).
"""

from __future__ import annotations

from .cdr import CDRReader, CDRWriter
from ..errors import (CDRError, DecodeError, EncodeError, InvalidValueError, NotSupportedError,
                      RecursionLimitError, TruncatedError)
from .typecode import (VALUE_KINDS, VM_CUSTOM, VM_TRUNCATABLE, TCKind, TypeCode, resolve,
                       value_members)
from . import values as V

K = TCKind
NULL_TAG = 0
INDIRECTION_TAG = -1
MIN_VALUE_TAG = 0x7FFFFF00
MAX_VALUE_TAG = 0x7FFFFFFF
FLAG_CODEBASE = 0x01
TYPE_INFO_MASK = 0x06
TYPE_INFO_NONE = 0x00
TYPE_INFO_SINGLE = 0x02
TYPE_INFO_LIST = 0x06
FLAG_CHUNKED = 0x08
MAX_VALUE_DEPTH = 100


class _ValueContext:
    """Per-stream state: positions of value tags and strings (for indirections)
    and the chunking state."""

    __slots__ = ("values", "strings", "nest", "chunk_start", "chunk_end", "outer_end",
                 "closed_to", "known", "keep")

    def __init__(self):
        self.values = {}        # encode: id(obj) -> tag position; decode: position -> obj
        self.strings = {}       # decode: position -> repository id / codebase string
        self.nest = 0           # number of chunked values open
        self.chunk_start = None  # encode: position of the open chunk's length
        self.chunk_end = None   # decode: end of the chunk being read
        self.outer_end = None   # decode: reader.end outside chunks
        self.closed_to = None   # decode: an end tag closed every level >= this
        self.known = {}         # decode: repository id -> value TypeCode (from formal types)
        self.keep = []          # encode: keeps shared objects alive for id()


def _ctx(stream) -> _ValueContext:
    ctx = stream.context
    if ctx is None:
        ctx = stream.context = {}
    vc = ctx.get("values")
    if vc is None:
        vc = ctx["values"] = _ValueContext()
    return vc


# --------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------
def _truncatable_ids(tc: TypeCode) -> list[str]:
    """The ids a receiver may truncate to: the type, then each base while the
    type deriving from it is truncatable."""
    ids = [tc._id]
    cur = tc
    while cur._modifier == VM_TRUNCATABLE and cur._base is not None:
        cur = resolve(cur._base)
        ids.append(cur._id)
    return ids


def _open_chunk(w: CDRWriter, vc: _ValueContext) -> None:
    w.write_long(0)               # through the writer: a GIOP 1.1 fragment may begin here
    vc.chunk_start = len(w.buf) - 4


def _close_chunk(w: CDRWriter, vc: _ValueContext) -> None:
    start = vc.chunk_start
    if start is None:
        return
    vc.chunk_start = None
    length = len(w.buf) - start - 4
    if length == 0:
        del w.buf[start:start + 4]     # chunks are never empty
    else:
        w.buf[start:start + 4] = (w.fmt.long.pack(length))


def write_value_instance(w: CDRWriter, formal: TypeCode | None, v, plans) -> None:
    """Write a value (or null, or an indirection to one written before) of the
    formal type ``formal`` (None: the value's own type); ``plans`` gives the
    plan of each member's TypeCode (pycdr.codec.plan.plan_for)."""
    vc = _ctx(w)
    if v is None:
        if vc.chunk_start is not None:
            pass  # a null inside a chunk is plain data
        w.write_long(NULL_TAG)
        return
    formal = resolve(formal) if formal is not None else None
    if formal is not None and formal._kind == K.tk_value_box:
        tc = formal
        boxed = True
    else:
        if not isinstance(v, V.ValueBase):
            raise EncodeError(f"valuetype: expected a ValueBase instance, not {type(v).__name__}")
        tc = resolve(v._tc)
        boxed = False
        if id(v) in vc.values:
            w.align(4)
            here = len(w.buf)
            w.write_long(INDIRECTION_TAG)
            w.write_long(vc.values[id(v)] - (here + 4))
            return
    if tc._kind in (K.tk_value, K.tk_event) and tc._modifier == VM_CUSTOM:
        raise NotSupportedError(f"custom-marshaled value type {tc._id} (VM_CUSTOM)")
    ids = [tc._id] if boxed else _truncatable_ids(tc)
    chunked = len(ids) > 1 or vc.nest > 0
    if vc.chunk_start is not None:
        _close_chunk(w, vc)            # chunks end before a nested value's header
    w.align(4)
    tag_pos = len(w.buf)
    if not boxed:
        vc.values[id(v)] = tag_pos
        vc.keep.append(v)
    tag = MIN_VALUE_TAG | (TYPE_INFO_LIST if len(ids) > 1 else TYPE_INFO_SINGLE) | \
        (FLAG_CHUNKED if chunked else 0)
    w.write_long(tag)
    if len(ids) > 1:
        w.write_long(len(ids))
    for rid in ids:
        w.write_string(rid)
    if chunked:
        vc.nest += 1
        _open_chunk(w, vc)
    try:
        if boxed:
            plans(tc._content).write(w, v)
        else:
            members = value_members(tc)
            for pyname, (name, mtype) in zip(V.field_names([m[0] for m in members]), members):
                try:
                    value = getattr(v, pyname)
                except AttributeError:
                    raise EncodeError(f"value {tc._name} has no member {name!r}") from None
                try:
                    plans(mtype).write(w, value)
                except CDRError as e:
                    e.add_path("." + name)
                    raise
    finally:
        pass
    if chunked:
        _close_chunk(w, vc)
        w.write_long(-vc.nest)
        vc.nest -= 1
        if vc.nest > 0:
            _open_chunk(w, vc)         # the enclosing value's state continues


# --------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------
def _read_indirectable_string(r: CDRReader, vc: _ValueContext, what: str) -> str:
    r.align(4)
    pos = r.pos
    n = r.read_long()
    if n == -1:
        off_pos = r.pos
        target = off_pos + r.read_long()
        s = vc.strings.get(target)
        if s is None:
            raise DecodeError(f"{what} indirection to offset {target}, where no {what} starts",
                              off_pos)
        return s
    r.pos = pos
    s = r.read_string()
    vc.strings[pos] = s
    return s


def _learn(vc: _ValueContext, tc: TypeCode) -> None:
    """Remember the value TypeCodes reachable from a formal type, by id."""
    stack = [tc]
    seen = set()
    while stack:
        t = resolve(stack.pop())
        if id(t) in seen:
            continue
        seen.add(id(t))
        if t._kind in VALUE_KINDS or t._kind == K.tk_value_box:
            vc.known.setdefault(t._id, t)
        stack.extend(t._member_types)
        for sub in (t._content, t._base):
            if sub is not None:
                stack.append(sub)


def _lookup(vc: _ValueContext, rid: str):
    tc = vc.known.get(rid)
    if tc is not None:
        return tc
    cls = V.registered(rid)
    if cls is not None and getattr(cls, "_tc", None) is not None:
        return cls._tc
    return None


def _enter_chunk(r: CDRReader, vc: _ValueContext) -> bool:
    """If a chunk length comes next, enter that chunk. Returns True if it did."""
    r.align(4)
    if r.pos + 4 > vc.outer_end:
        r.truncated(4, r.pos, "value chunk")
    peek = r.fmt.long.unpack_from(r.buf, r.pos)[0]
    if 0 < peek < MIN_VALUE_TAG:
        start = r.pos + 4
        if start + peek > vc.outer_end:
            raise TruncatedError(f"value chunk of {peek} bytes but only "
                                 f"{vc.outer_end - start} remain", r.pos)
        r.pos = start
        vc.chunk_end = start + peek
        r.set_limit(vc.chunk_end)
        return True
    return False


def _leave_chunk(r: CDRReader, vc: _ValueContext) -> None:
    if vc.chunk_end is not None:
        if r.pos != vc.chunk_end:
            raise DecodeError(f"value chunk ends at {vc.chunk_end} but its data ends at {r.pos}",
                              r.pos)
        vc.chunk_end = None
        r.set_limit(vc.outer_end)


def read_value_instance(r: CDRReader, formal: TypeCode | None, plans):
    """Read a value (or null, or an indirection) of the formal type ``formal``
    (None: whatever type the value names); ``plans`` gives the plan of each
    member's TypeCode (pycdr.codec.plan.plan_for)."""
    vc = _ctx(r)
    if vc.outer_end is None:
        vc.outer_end = r.limit
    if formal is not None:
        _learn(vc, formal)
    in_chunk = vc.chunk_end is not None
    if in_chunk:
        # The enclosing chunk must end where this value's header starts.
        r.align(4)
        if r.pos != vc.chunk_end:
            # a null or indirection may sit inside a chunk; a value header may not
            tag = r.fmt.long.unpack_from(r.buf, r.pos)[0] if r.pos + 4 <= r.limit else None
            if tag is not None and tag in (NULL_TAG, INDIRECTION_TAG):
                return _read_null_or_indirection(r, vc)
            raise DecodeError("a nested value starts inside its enclosing value's chunk", r.pos)
        _leave_chunk(r, vc)
    r.align(4)
    tag_pos = r.pos
    tag = r.read_long()
    if tag in (NULL_TAG, INDIRECTION_TAG):
        r.pos = tag_pos
        result = _read_null_or_indirection(r, vc)
        if in_chunk:
            _resume_outer(r, vc)
        return result
    if not MIN_VALUE_TAG <= tag <= MAX_VALUE_TAG:
        raise DecodeError(f"expected a value tag, null or indirection, not {tag:#x}", tag_pos)
    if vc.nest >= MAX_VALUE_DEPTH or r.depth > 200:
        raise RecursionLimitError("values nested too deeply", tag_pos)
    codebase = None
    if tag & FLAG_CODEBASE:
        codebase = _read_indirectable_string(r, vc, "codebase URL")
    info = tag & TYPE_INFO_MASK
    if info == TYPE_INFO_NONE:
        if formal is None:
            raise DecodeError("value without type information where no formal type is known",
                              tag_pos)
        ids = [formal._id]
    elif info == TYPE_INFO_SINGLE:
        ids = [_read_indirectable_string(r, vc, "repository id")]
    elif info == TYPE_INFO_LIST:
        r.align(4)
        count_pos = r.pos
        n = r.read_long()
        if n == -1:
            raise NotSupportedError("indirection to a repository id list", count_pos)
        if n <= 0 or n * 4 > r.limit - r.pos:
            raise DecodeError(f"repository id list of {n} entries", count_pos)
        ids = [_read_indirectable_string(r, vc, "repository id") for _ in range(n)]
    else:
        raise DecodeError(f"value tag {tag:#x} has invalid type-information bits", tag_pos)
    chunked = bool(tag & FLAG_CHUNKED)
    tc = None
    truncated = False
    for i, rid in enumerate(ids):
        tc = _lookup(vc, rid)
        if tc is not None:
            truncated = i > 0
            break
    if tc is None:
        raise DecodeError(f"unknown value type {ids[0]}"
                          + (f" (and its truncatable bases {ids[1:]})" if len(ids) > 1 else ""),
                          tag_pos)
    if truncated and not chunked:
        raise DecodeError("a truncatable value must be chunked", tag_pos)
    if tc._kind in (K.tk_value, K.tk_event) and tc._modifier == VM_CUSTOM:
        raise NotSupportedError(f"custom-marshaled value type {tc._id} (VM_CUSTOM)", tag_pos)
    level = 0
    if chunked:
        vc.nest += 1
        level = vc.nest
        if not _enter_chunk(r, vc):
            # A value whose state is empty may have no chunk at all.
            pass
    elif vc.nest > 0:
        raise DecodeError("a value nested in a chunked value must be chunked", tag_pos)
    r.depth += 1
    try:
        if tc._kind == K.tk_value_box:
            result = _read_member(r, vc, plans(tc._content), chunked, "boxed value")
        else:
            cls = V.class_for(tc)
            obj = cls.__new__(cls)
            vc.values[tag_pos] = obj            # before the state: cycles point here
            if codebase is not None:
                obj._codebase = codebase
            members = value_members(tc)
            for attr, (name, mtype) in zip(V.field_names([m[0] for m in members]), members):
                setattr(obj, attr, _read_member(r, vc, plans(mtype), chunked, name))
            result = obj
        if tc._kind == K.tk_value_box:
            vc.values[tag_pos] = result
    finally:
        r.depth -= 1
    if chunked:
        _finish_chunked(r, vc, level, truncated)
    if in_chunk:
        _resume_outer(r, vc)
    return result


def _read_null_or_indirection(r, vc):
    tag_pos = r.pos
    tag = r.read_long()
    if tag == NULL_TAG:
        return None
    off_pos = r.pos
    target = off_pos + r.read_long()
    if target not in vc.values:
        raise DecodeError(f"value indirection to offset {target}, where no value starts", off_pos)
    return vc.values[target]


def _read_member(r, vc, node, chunked, name):
    if chunked and not node.holds_values:
        if vc.chunk_end is not None and r.pos == vc.chunk_end:
            _leave_chunk(r, vc)          # a chunk may end between two members
        if vc.chunk_end is None:
            # Between chunks (after a nested value or a chunk's end): the state
            # continues in a new chunk.
            if not _enter_chunk(r, vc):
                raise DecodeError("value state continues but no chunk follows", r.pos)
    try:
        return node.read(r)
    except TruncatedError as e:
        if vc.chunk_end is not None and r.limit == vc.chunk_end and vc.chunk_end < vc.outer_end:
            raise NotSupportedError(
                f"a chunk boundary inside value member {name!r} (at offset {vc.chunk_end})") from e
        e.add_path("." + name)
        raise
    except CDRError as e:
        e.add_path("." + name)
        raise


def _resume_outer(r, vc):
    """After a nested value inside a chunked value: the enclosing state, if it
    goes on, continues in a new chunk."""
    if vc.nest > 0 and (vc.closed_to is None or vc.closed_to > vc.nest):
        _enter_chunk(r, vc)


def _finish_chunked(r: CDRReader, vc: _ValueContext, level: int, truncated: bool) -> None:
    """Read to this value's end tag (skipping the state of a truncated value)."""
    if vc.closed_to is not None and vc.closed_to <= level:
        # A nested value's end tag already closed this level too.
        vc.nest = level - 1
        if vc.closed_to == level:
            vc.closed_to = None
        return
    if vc.chunk_end is not None:
        if truncated:
            r.pos = vc.chunk_end
        _leave_chunk(r, vc)
    while True:
        r.align(4)
        pos = r.pos
        t = r.read_long()
        if t == INDIRECTION_TAG and truncated and _is_value_indirection(r, vc):
            # In skipped state a -1 may also be an indirection to a nested value.
            r.skip(4)
            continue
        if t < 0:
            # After a chunk, a negative long is an end tag; the outermost value's
            # is -1 (CORBA 3.x 9.3.4.5), the same bits as an indirection marker.
            closes = -t
            if closes > level:
                raise DecodeError(f"end tag {t} inside a value at nesting level {level}", pos)
            vc.nest = level - 1
            if closes < level:
                vc.closed_to = closes  # enclosing values end here too
            return
        if not truncated:
            raise DecodeError(f"expected the end tag {-level}, found {t:#x}", pos)
        # Skipping the unknown part of a truncated value.
        if 0 < t < MIN_VALUE_TAG:
            r.skip(t)
        elif MIN_VALUE_TAG <= t <= MAX_VALUE_TAG or t == NULL_TAG:
            r.pos = pos
            _skip_value(r, vc)
        else:
            raise DecodeError(f"unexpected {t:#x} in a truncated value's state", pos)


def _is_value_indirection(r: CDRReader, vc: _ValueContext) -> bool:
    """Whether the long after a -1 is an offset back to a value read before."""
    if r.pos + 4 > r.limit:
        return False
    offset = r.fmt.long.unpack_from(r.buf, r.pos)[0]
    return offset < 0 and (r.pos + offset) in vc.values


def _skip_value(r: CDRReader, vc: _ValueContext) -> None:
    """Skip one nested value in state we do not know (it must be chunked)."""
    pos = r.pos
    tag = r.read_long()
    if tag == NULL_TAG:
        return
    if tag == INDIRECTION_TAG:
        r.read_long()
        return
    if tag & FLAG_CODEBASE:
        _read_indirectable_string(r, vc, "codebase URL")
    info = tag & TYPE_INFO_MASK
    if info == TYPE_INFO_SINGLE:
        _read_indirectable_string(r, vc, "repository id")
    elif info == TYPE_INFO_LIST:
        n = r.read_long()
        if n <= 0 or n * 4 > r.limit - r.pos:
            raise DecodeError(f"repository id list of {n} entries", pos)
        for _ in range(n):
            _read_indirectable_string(r, vc, "repository id")
    if not tag & FLAG_CHUNKED:
        raise DecodeError("cannot skip an unchunked value in a truncated value's state", pos)
    vc.nest += 1
    _finish_chunked(r, vc, vc.nest, True)


def check_value_support(tc: TypeCode) -> None:
    """Raise NotSupportedError early for value types pycdr cannot marshal."""
    tc = resolve(tc)
    if tc._kind in (K.tk_value, K.tk_event) and tc._modifier == VM_CUSTOM:
        raise NotSupportedError(f"custom-marshaled value type {tc._id} (VM_CUSTOM)")


__all__ = ["read_value_instance", "write_value_instance", "InvalidValueError"]
