"""Generated fast paths for sequences of fixed-size structs: element packers
(one ``Struct`` call an element), column writers and column readers (one
member at a time over every element), and element builders.  Which one a
sequence takes is :class:`pycdr.codec.plan.sequences.SequenceNode`'s choice."""

from __future__ import annotations

import array
import struct
from itertools import starmap

from ..scalars import BooleanNode, CharNode, Node, NumberNode, OctetNode
from .common import _NATIVE_LITTLE, _FallBack
from .constructed import StructNode
from .flat import _made_directly

# --------------------------------------------------------------------------
# Column writing: a sequence of fixed-size structs, member by member
# --------------------------------------------------------------------------
# A long sequence of flat structs is written one member (column) at a time:
# each column is gathered by a comprehension, checked and packed with one
# C-level call, then copied into every element's place in a zero-filled block
# with strided memoryview assignments: no Python call per element.  Each
# packer takes exactly what the member's node takes and gives the same octets,
# or raises (_FallBack, TypeError, ValueError, ...) so that the element path
# writes or rejects the sequence as before; it must never accept a value the
# member's node would reject.
# Measured against _element_packer (which writes anything shorter or wider):
# columns win only for long sequences of narrow structs, their per-column cost
# growing with the members where the packer's per-element cost barely does
# (sequence<CharLongLong> of 2048: 86 against 140 ns an element; of BinStruct,
# 6 members: 292 against 266).
_COLUMNS_MIN = 128
_COLUMNS_MAX_MEMBERS = 3
_FLOAT_TYPES = frozenset((float, int))
_INT_TYPE = frozenset((int,))
_BOOLEAN_TYPES = frozenset((bool, int))
_OCTET_ARRAY_TYPES = frozenset((bytes, bytearray))
# Copy units: the widest one dividing a member's size, offset and the stride.
_COPY_UNITS = ((8, "Q"), (4, "I"), (2, "H"), (1, "B"))


def _pack_number_column(col, little, node):
    # struct converts as NumberNode.write does (__index__ for integers, range
    # checks), except that for float/double it also takes objects having only
    # __index__ and reads float subclasses without their __float__: only float
    # and int go that way.  (An int subclass is packed by its value, where
    # NumberNode calls its __index__: they differ only if __index__ is overridden
    # to disagree with the value, which operator.index ignores too.)
    if node.is_float and not set(map(type, col)) <= _FLOAT_TYPES:
        raise _FallBack
    return struct.pack(f"{'<' if little else '>'}{len(col)}{node.code}", *col)


def _pack_octet_column(col, little, node):
    # bytes() would take True and __index__ objects; write_octet does not.
    if not set(map(type, col)) <= _INT_TYPE:
        raise _FallBack
    return bytes(col)            # ValueError outside 0..255


def _pack_boolean_column(col, little, node):
    if not set(map(type, col)) <= _BOOLEAN_TYPES:
        raise _FallBack
    data = bytes(col)
    if data.translate(None, b"\0\1"):
        raise _FallBack          # an integer other than 0 and 1
    return data


def _pack_char_column(col, little, node):
    text = "".join(col)          # TypeError unless every value is a str
    # n strings, none empty, n characters in all: every one is one character.
    if len(text) != len(col) or "" in col:
        raise _FallBack
    return text.encode("latin-1")   # the caller checked the char code set


def _pack_octet_array_column(col, little, node):
    # (OctetSeqNode takes more types; those take the element path.)
    if not set(map(type, col)) <= _OCTET_ARRAY_TYPES or set(map(len, col)) != {node.bound}:
        raise _FallBack
    return b"".join(col)


def _pack_char_array_column(col, little, node):
    text = "".join(col)
    if set(map(len, col)) != {node.bound}:
        raise _FallBack
    return text.encode("latin-1")


def _column_getter(names):
    """A function from a list of struct values to one list per member (names:
    the members' Python names).  Comprehensions, not attrgetter and zip: the
    interpreter's specialised slot reads make them about twice as fast."""
    lists = ", ".join(f"[x.{name} for x in values]" for name in names)
    code = f"def get_columns(values):\n    return ({lists},)\n"
    env = {}
    exec(compile(code, "<pycdr plan columns>", "exec"), env)
    return env["get_columns"]


def _copy_plan(offsets, sizes, stride):
    """How _scatter copies each column into elements ``stride`` octets apart whose
    members start at ``offsets`` and take ``sizes`` octets: per column, the copy
    unit's memoryview format, the unit index of the member in the first
    element, the units from one element to the next and the units per member."""
    plan = []
    for offset, size in zip(offsets, sizes):
        for unit, fmt in _COPY_UNITS:
            if not (size | offset | stride) & (unit - 1):
                break
        plan.append((fmt, offset // unit, stride // unit, size // unit))
    return tuple(plan)


def _scatter(buf: bytearray, start: int, length: int, columns, copy_plan) -> None:
    """Copy packed columns (bytes, one member of every element after another)
    into the elements in buf[start:start + length], as copy_plan says."""
    views = {}
    with memoryview(buf) as whole, whole[start:start + length] as block:
        try:
            for data, (fmt, first, step, units) in zip(columns, copy_plan):
                dst = views.get(fmt)
                if dst is None:
                    dst = views[fmt] = block.cast(fmt)
                src = memoryview(data).cast(fmt) if fmt != "B" else data
                if units == 1:
                    dst[first::step] = src
                else:
                    for j in range(units):
                        dst[first + j::step] = src[j::units]
        finally:
            # No view may outlive this call: the writer's buffer must stay resizable.
            for view in views.values():
                view.release()


# --------------------------------------------------------------------------
# Element packing: a sequence of fixed-size structs, one Struct call each
# --------------------------------------------------------------------------
# FlatCodec.flatten checks each member with a helper call (_int, _ord, ...);
# for a struct whose members are all of the kinds below, a loop generated once
# per plan makes the same type and length checks inline and packs each element
# with one call.  It takes exactly the types those helpers take (so struct.pack
# gets what the flat path gives it: no bool or __index__ object as an octet, no
# int or float subclass, no bytes as a char, no wrong length) and leaves ranges
# to struct.pack; a char array may also hold non-ASCII Latin-1 text, which the
# general path writes to the same octets.  Whatever is refused or raises, the
# caller hands to the flat and general paths before anything is written, so
# every error is theirs, unchanged.
_PACK_ELEMENTS = True     # False: never (the tests compare with the general path)


def _element_member(node: Node, var: str):
    """(refusal, argument) for a struct member whose value is in variable ``var``:
    a condition true when the general path must judge the value, and the
    expression struct.pack takes; None for kinds the packer does not take."""
    kind = type(node)
    if kind is NumberNode:
        if node.is_float:
            return f"type({var}) is not float and type({var}) is not int", var   # as _float
        return f"type({var}) is not int", var                                     # as _int
    if kind is OctetNode:
        return f"type({var}) is not int", var
    if kind is BooleanNode:
        return f"type({var}) is not bool", var                                    # as _benc
    if kind is CharNode:
        # as _ord: ord() refuses other lengths, struct ("B") codes over 255
        return f"type({var}) is not str", f"ord({var})"
    if node.op == "octet_seq" and node.is_array:
        return f"type({var}) is not bytes or len({var}) != {node.bound}", var     # as _octets
    if node.op == "char_seq" and node.is_array:
        return (f"type({var}) is not str or len({var}) != {node.bound}",
                f"{var}.encode('latin-1')")
    return None


def _element_packer(elem: StructNode):
    """For a struct whose members the packer all takes, a function
    ``pack_elements(values, pack, next_pack)`` giving a list of one packed
    bytes per value (the first packed by ``pack``, the others by ``next_pack``:
    the Structs of their phases) or raising when any value needs the general
    path; else None."""
    lines, arguments = [], []
    for i, (pyname, _idl, node) in enumerate(elem.members):
        member = _element_member(node, f"m{i}")
        if member is None:
            return None
        refusal, argument = member
        lines += [f"        m{i} = v.{pyname}",
                  f"        if {refusal}:",
                  "            raise _FallBack"]
        arguments.append(argument)
    code = "\n".join([
        "def pack_elements(values, pack, next_pack):",
        "    out = []",
        "    append = out.append",
        "    for v in values:",
        *lines,
        f"        append(pack({', '.join(arguments)}))",
        "        pack = next_pack",
        "    return out",
        ""])
    env = {"_FallBack": _FallBack}
    exec(compile(code, "<pycdr plan elements>", "exec"), env)
    return env["pack_elements"]


# --------------------------------------------------------------------------
# Column reading: a sequence of fixed-size structs, member by member
# --------------------------------------------------------------------------
# The mirror of column writing, for the Python path: each member's values are
# taken out of every element at once (a strided memoryview of the input, or one
# Struct per column run by iter_unpack), and a loop generated for the struct
# makes the instances from the columns.  The row path (iter_unpack of whole
# elements into FlatCodec.convert_all's loop) makes a tuple per element and
# converts its members one by one (a char by a table lookup); this loop takes
# values ready made (a char column is one latin-1 decode).  Each reader gives
# exactly the values the row converter gives, or raises _FallBack where it
# would (a boolean other than 0 or 1), and the row and member paths then judge
# the sequence as before.
# Each column costs a fixed 0.3-1 us, so columns win only for long sequences of
# narrow structs.  Measured against the row path: sequence<CharLongLong> of
# 2048, 265 against 326 ns an element (break-even near 64); BinStruct's 6
# members gain under 10 % from 1024 and lose below 256; 13 members lose at
# every length.
_COLUMNS_READ_MIN = 64
_COLUMNS_READ_MAX_MEMBERS = 3
_BOOLEAN_VALUES = (False, True)


def _read_number_column(view, start, count, stride, offset, node, little):
    size = node.size
    first = start + offset
    # (stride is a multiple of the struct's alignment, so of size: a cast
    # view strided by whole items reaches every element's member)
    column = view[first:first + stride * (count - 1) + size].cast(node.code)[::stride // size]
    if little == _NATIVE_LITTLE:
        return column.tolist()
    values = array.array(node.acode, column.tobytes())
    values.byteswap()
    return values.tolist()


def _read_octet_column(view, start, count, stride, offset, node, little):
    first = start + offset
    return view[first:first + stride * (count - 1) + 1:stride].tolist()


def _read_boolean_column(view, start, count, stride, offset, node, little):
    first = start + offset
    octets = view[first:first + stride * (count - 1) + 1:stride].tolist()
    try:
        return list(map(_BOOLEAN_VALUES.__getitem__, octets))
    except IndexError:
        raise _FallBack from None      # 2..255: the member path reports it


def _read_char_column(view, start, count, stride, offset, node, little):
    first = start + offset
    # One str: the generated loop takes its characters one by one.  (The
    # caller checked the char code set is ISO 8859-1.)
    return str(bytes(view[first:first + stride * (count - 1) + 1:stride]), "latin-1")


def _array_column_format(stride, offset, node):
    return f"{offset}x{node.bound}s{stride - offset - node.bound}x"


def _read_octet_array_column(view, start, count, stride, offset, node, little):
    rows = struct.iter_unpack(_array_column_format(stride, offset, node),
                              view[start:start + stride * count])
    return [octets for octets, in rows]


def _read_char_array_column(view, start, count, stride, offset, node, little):
    rows = struct.iter_unpack(_array_column_format(stride, offset, node),
                              view[start:start + stride * count])
    return [str(octets, "latin-1") for octets, in rows]


def _column_functions(node: Node):
    """(column packer, column reader) of a struct member's node, or None if it
    has none: the member kinds column writing and column reading take."""
    kind = type(node)
    if kind is NumberNode:
        return _pack_number_column, _read_number_column
    if kind is OctetNode:
        return _pack_octet_column, _read_octet_column
    if kind is BooleanNode:
        return _pack_boolean_column, _read_boolean_column
    if kind is CharNode:
        return _pack_char_column, _read_char_column
    if node.op == "octet_seq" and node.is_array:
        return _pack_octet_array_column, _read_octet_array_column
    if node.op == "char_seq" and node.is_array:
        return _pack_char_array_column, _read_char_array_column
    return None


def _elements_builder(elem: StructNode):
    """A function from one list per member to the list of struct values, made as
    the struct's flat converter makes them: new instances whose slots are set,
    when the class allows it (_made_directly), else calls of the class."""
    cls = elem.cls
    names = [f"c{i}" for i in range(len(elem.members))]
    if _made_directly(cls):
        lines = ["def build_elements(columns):",
                 "    out = []",
                 "    append = out.append",
                 f"    for {', '.join(names)}, in zip(*columns):",
                 "        o = _new(C)",
                 *(f"        o.{pyname} = {name}"
                   for (pyname, _idl, _node), name in zip(elem.members, names)),
                 "        append(o)",
                 "    return out",
                 ""]
    else:
        lines = ["def build_elements(columns):",
                 "    return list(_starmap(C, zip(*columns)))",
                 ""]
    env = {"_new": object.__new__, "C": cls, "_starmap": starmap}
    exec(compile("\n".join(lines), "<pycdr plan elements>", "exec"), env)
    return env["build_elements"]
