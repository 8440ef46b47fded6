"""Plan nodes whose values carry or reach beyond their static type: any (its
TypeCode, then a value of that type), TypeCode, object references, abstract
interfaces, values (:mod:`pycdr.codec.valuetype`), and native (no encoding).

Any, abstract-interface and value nodes meet types on the wire that no plan
was compiled for; the compiler gives them ``plans`` (TypeCode -> node, its
:func:`~pycdr.codec.plan.plan_for`) to compile those on first use."""

from __future__ import annotations

from ...errors import CDRError, EncodeError, NotSupportedError, RecursionLimitError
from ..ior import IOR, NIL, REFERENCE_SPANS, read_ior, write_ior
from ..scalars import Node
from ..tcmarshal import read_typecode, write_typecode
from ..typecode import TypeCode
from .. import values as V
from ..valuetype import read_value_instance, write_value_instance
from .common import MAX_DEPTH


class AnyNode(Node):
    op = "any"
    min_wire = 4

    def __init__(self, plans):
        self.plans = plans

    def read(self, r):
        if r.depth > MAX_DEPTH:
            raise RecursionLimitError("anys nested too deeply", r.pos)
        tc = read_typecode(r)
        r.depth += 1
        try:
            value = self.plans(tc).read(r)
        except CDRError as e:
            e.add_path(".value")
            raise
        finally:
            r.depth -= 1
        return V.Any(tc, value)

    def write(self, w, v):
        if not isinstance(v, V.Any):
            raise EncodeError(f"any: expected pycdr.Any(tc, value), not {type(v).__name__}")
        write_typecode(w, v.tc)
        try:
            self.plans(v.tc).write(w, v.value)
        except CDRError as e:
            e.add_path(".value")
            raise


class TypeCodeNode(Node):
    op = "typecode"
    min_wire = 4

    def read(self, r):
        return read_typecode(r)

    def write(self, w, v):
        if not isinstance(v, TypeCode):
            raise EncodeError(f"TypeCode: expected a TypeCode, not {type(v).__name__}")
        write_typecode(w, v)


class ObjRefNode(Node):
    op = "objref"
    align = 4
    min_wire = 8

    def __init__(self, tc: TypeCode):
        self.tc = tc

    def read(self, r):
        spans = r.context.get(REFERENCE_SPANS) if r.context else None
        if spans is None:
            ior = read_ior(r)
            return None if ior.is_nil else ior
        r.align(4)
        start = r.pos
        ior = read_ior(r)
        if ior.is_nil:
            return None
        spans.append((ior, start, r.pos, r.origin))
        return ior

    def write(self, w, v):
        if v is None:
            ior = NIL
        elif isinstance(v, IOR):
            ior = v
        elif isinstance(getattr(v, "_ior", None), IOR):
            ior = v._ior          # an ORB object reference
        else:
            raise EncodeError(f"object reference: expected an IOR, a reference or None, "
                              f"not {type(v).__name__}")
        write_ior(w, ior)


class AbstractInterfaceNode(Node):
    """abstract interface: a boolean union, TRUE an object reference, FALSE a value."""
    op = "abstract_interface"
    holds_values = True

    def __init__(self, tc: TypeCode, plans):
        self.tc = tc
        self.objref = ObjRefNode(tc)
        self.plans = plans

    def read(self, r):
        if r.read_boolean():
            return self.objref.read(r)
        return read_value_instance(r, None, self.plans)

    def write(self, w, v):
        if v is None or isinstance(v, IOR) or hasattr(v, "_ior"):
            w.write_boolean(True)
            self.objref.write(w, v)
        else:
            w.write_boolean(False)
            write_value_instance(w, None, v, self.plans)


class ValueNode(Node):
    op = "value"
    align = 4
    min_wire = 4
    holds_values = True

    def __init__(self, tc: TypeCode, plans):
        self.tc = tc
        self.plans = plans

    def read(self, r):
        return read_value_instance(r, self.tc, self.plans)

    def write(self, w, v):
        write_value_instance(w, self.tc, v, self.plans)


class NativeNode(Node):
    op = "native"

    def __init__(self, tc):
        self.tc = tc

    def read(self, r):
        raise NotSupportedError(f"native type {self.tc._name} has no CDR encoding")

    def write(self, w, v):
        raise NotSupportedError(f"native type {self.tc._name} has no CDR encoding")
