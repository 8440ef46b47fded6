"""Marshal plans: a TypeCode compiled once into a tree of nodes that encode and
decode values (the seed papers' "precompute" and "specialize" principles; the
msgspec way of compiling a type description once).

Every node has ``read(reader) -> value`` and ``write(writer, value)``.  The
tree is data as much as code: each node has an ``op`` name and plain
parameters, so the C extension runs the same plans.

Specialisations, chosen at compile time:
- sequences and arrays of octet become ``bytes``, of char ``str``, of numbers
  one bulk unpack (array module plus byte swap) instead of a loop;
- structs made only of fixed-size members are read and written with one
  ``struct.Struct`` per starting alignment phase and byte order, and a
  converter generated for the struct's shape; a sequence of them whose size is
  a multiple of its alignment is unpacked a member (column) at a time and built
  by a loop generated for the struct, or with ``iter_unpack``; it is packed by a
  loop generated for the struct (one Struct call an element) or, for long
  sequences of narrow structs, a column at a time.
Anything unusual (lenient mode, a bad boolean, a non-default char code set, a
value that does not fit) drops to the member-by-member path, which gives the
precise error or warning with offset and path.

The modules, by job:
- :mod:`pycdr.codec.scalars` (below TypeCode marshaling, which uses it for union
  labels): the base ``Node`` and the nodes of the scalar types;
- :mod:`.constructed`: structs, exceptions, unions, the recursion guard;
- :mod:`.sequences`: sequences and arrays;
- :mod:`.dynamic`: any, TypeCode, object references, abstract interfaces, values;
- :mod:`.flat` and :mod:`.columns`: the generated fast paths (flat struct
  codecs; element packers, column writers and readers);
- :mod:`.compiler`: :func:`plan_for`, from TypeCode to plan.
"""

from ..scalars import (BooleanNode, CharNode, EnumNode, FixedNode, LongDoubleNode, Node,
                       NullNode, NumberNode, OctetNode, StringNode, WCharNode, WStringNode)
from .common import GC_PAUSE_MIN, MAX_DEPTH
from .compiler import plan_for
from .constructed import RecursionGuard, StructNode, UnionNode
from .dynamic import (AbstractInterfaceNode, AnyNode, NativeNode, ObjRefNode, TypeCodeNode,
                      ValueNode)
from .flat import FlatCodec
from .sequences import BooleanSeqNode, CharSeqNode, NumberSeqNode, OctetSeqNode, SequenceNode

__all__ = [
    "plan_for", "MAX_DEPTH", "GC_PAUSE_MIN", "Node",
    "NullNode", "NumberNode", "BooleanNode", "OctetNode", "CharNode", "WCharNode",
    "StringNode", "WStringNode", "LongDoubleNode", "FixedNode", "EnumNode",
    "StructNode", "UnionNode", "RecursionGuard",
    "SequenceNode", "OctetSeqNode", "CharSeqNode", "NumberSeqNode", "BooleanSeqNode",
    "AnyNode", "TypeCodeNode", "ObjRefNode", "AbstractInterfaceNode", "ValueNode", "NativeNode",
    "FlatCodec",
]
