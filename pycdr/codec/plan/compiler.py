"""The compiler from TypeCode to plan: :func:`plan_for` compiles a TypeCode once
into a tree of nodes and caches it on the TypeCode."""

from __future__ import annotations

from ...errors import NotSupportedError
from ..scalars import _NUMERIC, Node, OctetNode, scalar_node
from ..typecode import RecursiveTypeCode, TCKind, TypeCode, resolve
from .. import values as V
from .constructed import RecursionGuard, StructNode, UnionNode
from .dynamic import (AbstractInterfaceNode, AnyNode, NativeNode, ObjRefNode, TypeCodeNode,
                      ValueNode)
from .sequences import BooleanSeqNode, CharSeqNode, NumberSeqNode, OctetSeqNode, SequenceNode

K = TCKind


def plan_for(tc: TypeCode) -> Node:
    """The compiled plan of a TypeCode (compiled on first use, then cached)."""
    real = resolve(tc)
    node = real._plans
    if node is None:
        node = _compile(real, {})
    return node


def _compile(tc: TypeCode, memo: dict) -> Node:
    if type(tc) is RecursiveTypeCode:
        target = tc.resolved
        node = memo.get(id(target))
        if node is not None:
            return RecursionGuard(node)
        return _compile(target, memo)
    if tc._plans is not None:
        return tc._plans
    if id(tc) in memo:
        return RecursionGuard(memo[id(tc)])
    k = tc._kind
    node = scalar_node(tc)       # None for the kinds below
    if node is not None:
        tc._plans = node
        return node
    if k == K.tk_any:
        node = AnyNode(plan_for)
    elif k == K.tk_TypeCode:
        node = TypeCodeNode()
    elif k == K.tk_alias:
        node = _compile(tc._content, memo)
    elif k in (K.tk_struct, K.tk_except):
        node = StructNode(tc)
        memo[id(tc)] = node
        members = []
        for attr, name, mtype in zip(V.field_names(tc._member_names), tc._member_names,
                                     tc._member_types):
            members.append((attr, name, _compile(mtype, memo)))
        node.finish(members)
    elif k == K.tk_union:
        node = UnionNode(tc)
        memo[id(tc)] = node
        disc = _compile(tc._disc, memo)
        branches = [(label, name, _compile(mtype, memo))
                    for label, name, mtype in zip(tc._labels, tc._member_names, tc._member_types)]
        node.finish(disc, branches)
    elif k in (K.tk_sequence, K.tk_array):
        content = resolve(tc._content).unalias()
        ck = content._kind
        is_array = k == K.tk_array
        if ck == K.tk_octet:
            node = OctetSeqNode(tc, is_array)
        elif ck == K.tk_char:
            node = CharSeqNode(tc, is_array)
        elif ck in _NUMERIC:
            node = NumberSeqNode(tc, is_array)
        elif ck == K.tk_boolean:
            node = BooleanSeqNode(tc, is_array)
        else:
            node = SequenceNode(tc, is_array)
        memo[id(tc)] = node
        node.finish(_compile(tc._content, memo))
    elif k == K.tk_Principal:
        node = OctetSeqNode(TypeCode(K.tk_sequence, content=TypeCode(K.tk_octet)), False)
        node.finish(OctetNode())
    elif k in (K.tk_objref, K.tk_local_interface, K.tk_component, K.tk_home):
        node = ObjRefNode(tc)
    elif k == K.tk_abstract_interface:
        node = AbstractInterfaceNode(tc, plan_for)
    elif k in (K.tk_value, K.tk_event, K.tk_value_box):
        node = ValueNode(tc, plan_for)
    elif k == K.tk_native:
        node = NativeNode(tc)
    if node is None:  # pragma: no cover - every TCKind is handled above
        raise NotSupportedError(f"no plan for {k!r}")
    tc._plans = node
    return node
