"""What the front end gives its users: interfaces with their operations, and
the :class:`IdlModule` that holds every type, interface and constant of a file."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from ..codec import tc
from ..codec.plan import plan_for
from ..codec.typecode import TCKind, TypeCode


@dataclass(frozen=True)
class Param:
    name: str
    mode: str              # "in", "out" or "inout"
    type: TypeCode


@dataclass(frozen=True)
class Operation:
    name: str              # the GIOP operation name (_get_x / _set_x for attributes)
    params: tuple          # Param
    result: TypeCode
    raises: tuple          # exception TypeCodes
    oneway: bool = False
    contexts: tuple = ()
    attribute: str | None = None   # the attribute an accessor belongs to

    # Computed once: the ORB asks for them on every request.
    @cached_property
    def in_params(self) -> tuple:
        return tuple(p for p in self.params if p.mode in ("in", "inout"))

    @cached_property
    def out_params(self) -> tuple:
        return tuple(p for p in self.params if p.mode in ("out", "inout"))

    @cached_property
    def result_types(self) -> tuple:
        """The TypeCodes of what the operation returns: the result (unless void),
        then the out/inout parameters'."""
        returned = () if self.result.kind() == TCKind.tk_void else (self.result,)
        return returned + tuple(p.type for p in self.out_params)

    @cached_property
    def in_plans(self) -> tuple:
        """The marshal plans (pycdr.codec.plan) of the in/inout parameters' types: what
        the ORB's one-call paths in C encode and decode the arguments with."""
        return tuple(plan_for(p.type) for p in self.in_params)

    @cached_property
    def result_plans(self) -> tuple:
        """The marshal plans of result_types, likewise."""
        return tuple(plan_for(t) for t in self.result_types)


@dataclass(frozen=True)
class Attribute:
    name: str
    type: TypeCode
    readonly: bool
    getraises: tuple
    setraises: tuple


@dataclass
class Interface:
    name: str
    scoped_name: str
    repo_id: str
    kind: str              # "" (unconstrained), "abstract" or "local"
    bases: tuple           # scoped names of the direct bases
    operations: list = field(default_factory=list)   # own operations, attribute accessors included
    attributes: list = field(default_factory=list)
    type: TypeCode | None = None
    _module: "IdlModule | None" = field(default=None, repr=False)

    # Computed on first use (the module is complete by then): the server asks
    # is_a on every _is_a request, and walking a diamond of inheritance path by
    # path costs 2**depth.
    _lineage: tuple | None = field(default=None, init=False, repr=False, compare=False)
    _operations: dict | None = field(default=None, init=False, repr=False, compare=False)
    _repo_ids: frozenset | None = field(default=None, init=False, repr=False, compare=False)

    def lineage(self) -> tuple:
        """This interface and every one it inherits from, each once, every base
        before the interfaces derived from it (an iterative depth-first walk)."""
        if self._lineage is None:
            order, seen = [], {id(self)}
            stack = [(self, iter(self.bases))]
            while stack:
                iface, bases = stack[-1]
                for name in bases:
                    base = self._module.interfaces[name]
                    if id(base) not in seen:
                        seen.add(id(base))
                        stack.append((base, iter(base.bases)))
                        break
                else:
                    stack.pop()
                    order.append(iface)
            self._lineage = tuple(order)
        return self._lineage

    def all_operations(self) -> dict:
        """Every operation the interface supports, inherited ones included, by name."""
        if self._operations is None:
            ops: dict = {}
            for iface in self.lineage():
                for op in iface.operations:
                    ops[op.name] = op
            self._operations = ops
        return dict(self._operations)

    def operation(self, name: str) -> Operation:
        if self._operations is None:
            self.all_operations()
        return self._operations[name]

    def is_a(self, repo_id: str) -> bool:
        if self._repo_ids is None:
            self._repo_ids = frozenset([i.repo_id for i in self.lineage()]
                                       + ["IDL:omg.org/CORBA/Object:1.0"])
        return repo_id in self._repo_ids


@dataclass
class Declaration:
    """One named entity of the IDL: for listings (`pycdr idl show`)."""
    scoped_name: str
    kind: str
    repo_id: str
    file: str
    line: int


@dataclass
class IdlModule:
    path: str
    types: dict = field(default_factory=dict)        # scoped name -> TypeCode
    interfaces: dict = field(default_factory=dict)   # scoped name -> Interface
    constants: dict = field(default_factory=dict)    # scoped name -> Python value
    repo_ids: dict = field(default_factory=dict)     # scoped name -> repository id
    declarations: list = field(default_factory=list)
    classes: dict = field(default_factory=dict)      # scoped name -> Python class

    def type_by_id(self, repo_id: str) -> TypeCode | None:
        for t in self.types.values():
            if t.id() == repo_id:
                return t
        return None

    def interface_by_id(self, repo_id: str) -> Interface | None:
        for i in self.interfaces.values():
            if i.repo_id == repo_id:
                return i
        return None

    def __getitem__(self, scoped_name: str):
        """The Python class (struct, union, enum, exception, value) or constant of a name."""
        if scoped_name in self.classes:
            return self.classes[scoped_name]
        if scoped_name in self.constants:
            return self.constants[scoped_name]
        raise KeyError(scoped_name)


# The operations every CORBA object has (CORBA 3.x Part 2, 7.4.1 and 9.4).
IS_A = Operation("_is_a", (Param("logical_type_id", "in", tc.string),),
                 tc.boolean, ())
NON_EXISTENT = Operation("_non_existent", (), tc.boolean, ())
# GIOP 1.0-era ORBs spell it without the second "e".
NOT_EXISTENT = Operation("_not_existent", (), tc.boolean, ())
REPOSITORY_ID = Operation("_repository_id", (), tc.string, ())
INTERFACE = Operation("_interface", (), tc.Object, ())
GET_INTERFACE = Operation("_get_interface", (), tc.Object, ())
# CORBA Components: the component of a facet's reference (nil for a plain object).
GET_COMPONENT = Operation("_get_component", (), tc.Object, ())
OBJECT_OPERATIONS = {op.name: op for op in (IS_A, NON_EXISTENT, NOT_EXISTENT, REPOSITORY_ID,
                                           INTERFACE, GET_INTERFACE, GET_COMPONENT)}
