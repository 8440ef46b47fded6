"""The syntax tree the parser builds (before any name is resolved).

Type expressions are nodes too: :class:`BaseType`, :class:`ScopedName`,
:class:`SequenceType`, :class:`StringType`, :class:`FixedType`, and the
constructed types (struct/union/enum declared in place).  Constant
expressions are :class:`Literal`, :class:`ScopedName`, :class:`UnaryOp`,
:class:`BinaryOp`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .diagnostics import Position


@dataclass
class Node:
    pos: Position


# --- expressions ----------------------------------------------------------
@dataclass
class ScopedName(Node):
    parts: list          # identifiers
    absolute: bool       # written with a leading ::

    def __str__(self):
        return ("::" if self.absolute else "") + "::".join(self.parts)


@dataclass
class Literal(Node):
    kind: str            # int float fixed char wchar string wstring boolean
    value: object
    text: str = ""


@dataclass
class UnaryOp(Node):
    op: str
    operand: Node


@dataclass
class BinaryOp(Node):
    op: str
    left: Node
    right: Node


# --- types ----------------------------------------------------------------
@dataclass
class BaseType(Node):
    name: str            # "long", "unsigned long long", "any", "Object", ...


@dataclass
class SequenceType(Node):
    element: Node
    bound: Node | None


@dataclass
class StringType(Node):
    wide: bool
    bound: Node | None


@dataclass
class FixedType(Node):
    digits: Node | None   # None: the `fixed` of a constant declaration
    scale: Node | None


@dataclass
class Declarator(Node):
    name: str
    dims: list = field(default_factory=list)   # array dimension expressions


# --- declarations ---------------------------------------------------------
@dataclass
class Pragma(Node):
    text: str


@dataclass
class FileMarker(Node):
    enter: bool
    file: str


@dataclass
class Module(Node):
    name: str
    body: list


@dataclass
class Interface(Node):
    name: str
    kind: str            # "" / "abstract" / "local"
    bases: list          # ScopedName
    body: list | None    # None for a forward declaration


@dataclass
class Member(Node):
    type: Node
    declarators: list


@dataclass
class Struct(Node):
    name: str
    members: list | None  # None for a forward declaration


@dataclass
class Exception_(Node):
    name: str
    members: list


@dataclass
class UnionCase(Node):
    labels: list          # expressions, None for `default`
    type: Node
    declarator: Declarator


@dataclass
class Union(Node):
    name: str
    discriminator: Node | None
    cases: list | None    # None for a forward declaration


@dataclass
class Enumerator(Node):
    name: str


@dataclass
class Enum(Node):
    name: str
    enumerators: list


@dataclass
class Typedef(Node):
    type: Node
    declarators: list


@dataclass
class Native(Node):
    name: str


@dataclass
class Const(Node):
    type: Node
    name: str
    value: Node


@dataclass
class Param(Node):
    mode: str             # in out inout
    type: Node
    name: str


@dataclass
class Operation(Node):
    name: str
    oneway: bool
    result: Node          # BaseType("void") for void
    params: list
    raises: list          # ScopedName
    contexts: list        # strings


@dataclass
class Attribute(Node):
    readonly: bool
    type: Node
    name: str
    getraises: list
    setraises: list


@dataclass
class StateMember(Node):
    public: bool
    type: Node
    declarators: list


@dataclass
class Factory(Node):
    name: str
    params: list
    raises: list


@dataclass
class ValueType(Node):
    name: str
    event: bool           # eventtype
    abstract: bool
    custom: bool
    truncatable: bool
    bases: list           # value bases (ScopedName), the first may be concrete
    supports: list        # interfaces (ScopedName)
    body: list | None     # None for a forward declaration


@dataclass
class ValueBox(Node):
    name: str
    type: Node


@dataclass
class TypeId(Node):
    target: ScopedName
    repo_id: str


@dataclass
class TypePrefix(Node):
    target: ScopedName
    prefix: str


@dataclass
class Import(Node):
    what: str
