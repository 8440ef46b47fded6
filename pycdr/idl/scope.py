"""Symbols, scopes and CORBA's name-lookup rules (CORBA 3.0 section 3.15).

A name is looked up in the current scope, then in the scopes it inherits
from (interfaces and value types), then in the enclosing scopes, out to the
global one.  IDL names are case-insensitive for collisions but must be
written with the case of their declaration.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import ast
from .diagnostics import Position

# Symbol kinds that open a scope of their own.
SCOPE_KINDS = frozenset({"global", "module", "interface", "struct", "union", "exception",
                         "value", "operation"})
# Named types (a TypeCode each).
TYPE_KINDS = frozenset({"interface", "struct", "union", "enum", "typedef", "exception",
                        "native", "value", "valuebox", "builtin"})


@dataclass(eq=False)
class Symbol:
    kind: str             # module interface struct union enum enumerator typedef const
                          # exception native value valuebox operation attribute member
                          # param factory builtin global
    name: str
    parent: "Symbol | None"
    pos: Position
    node: object = None
    repo_id: str = ""
    id_fixed: bool = False        # set by #pragma ID / typeid: #pragma version no longer applies
    forward: bool = False         # declared but not yet defined
    complete: bool = True         # struct/union: its definition has ended
    members: dict = field(default_factory=dict)   # lower-case name -> Symbol
    order: list = field(default_factory=list)     # declaration order of members
    bases: list = field(default_factory=list)     # inherited interfaces / values (Symbols)
    typeprefix: str | None = None
    # filled in by the checker, per kind:
    type: object = None           # typedef/member/attribute/param/const/valuebox: a TypeRef
    value: object = None          # const: its value; enumerator: its ordinal
    info: dict = field(default_factory=dict)

    def scoped_name(self) -> str:
        parts = []
        sym = self
        while sym is not None and sym.kind != "global":
            parts.append(sym.name)
            sym = sym.parent
        return "::".join(reversed(parts))

    def __repr__(self):
        return f"<{self.kind} {self.scoped_name()}>"


# --- resolved types ---------------------------------------------------------
@dataclass(frozen=True)
class BaseRef:
    name: str                     # "long", "unsigned long", "any", "Object", "void", ...


@dataclass(frozen=True)
class NamedRef:
    symbol: Symbol


@dataclass(frozen=True)
class SequenceRef:
    element: object
    bound: int


@dataclass(frozen=True)
class StringRef:
    wide: bool
    bound: int


@dataclass(frozen=True)
class FixedRef:
    digits: int
    scale: int


@dataclass(frozen=True)
class ArrayRef:
    element: object
    dims: tuple


def unalias(ref):
    """Follow typedefs (not arrays) to the underlying type reference."""
    while isinstance(ref, NamedRef) and ref.symbol.kind == "typedef" and ref.symbol.type is not None:
        ref = ref.symbol.type
    return ref


class LookupError_(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def _find_in(scope: Symbol, name: str):
    """name declared in scope or (for interfaces and values) inherited by it.
    Returns a list of candidate symbols (several: ambiguous inheritance).
    Each base is searched once, without recursion (inheritance can be deep)."""
    low = name.lower()
    sym = scope.members.get(low)
    if sym is not None:
        return [sym]
    found = []
    seen = set()
    stack = list(reversed(scope.bases))
    while stack:
        base = stack.pop()
        if id(base) in seen:
            continue
        seen.add(id(base))
        cand = base.members.get(low)
        if cand is None:
            stack.extend(reversed(base.bases))
        elif all(cand is not f for f in found):
            found.append(cand)
    return found


def _check_case(sym: Symbol, written: str) -> Symbol:
    if sym.name != written:
        raise LookupError_(f"{written!r} differs in case from {sym.scoped_name()!r}")
    return sym


def lookup(scope: Symbol, name: ast.ScopedName, root: Symbol) -> Symbol:
    """The symbol a scoped name denotes, seen from ``scope``.

    The first identifier of a relative name is *introduced* into ``scope``
    (CORBA 3.0 section 3.15.3): it may not be declared there afterwards with
    another meaning (see ``Checker.declare``)."""
    parts = name.parts
    if name.absolute:
        current = root
        first = None
    else:
        first = None
        s = scope
        while s is not None:
            found = _find_in(s, parts[0])
            if len(found) > 1:
                raise LookupError_(f"{parts[0]!r} is ambiguous: inherited from "
                                   + " and ".join(f.parent.scoped_name() for f in found))
            if found:
                first = _check_case(found[0], parts[0])
                break
            s = s.parent
        if first is None:
            raise LookupError_(f"{parts[0]!r} is not declared")
        scope.info.setdefault("introduced", {}).setdefault(parts[0].lower(),
                                                           (parts[0], name.pos, first))
        current = first
        parts = parts[1:]
        if not parts:
            return current
    for part in parts:
        found = _find_in(current, part)
        if not found:
            raise LookupError_(f"{part!r} is not declared in {current.scoped_name() or '::'}")
        if len(found) > 1:
            raise LookupError_(f"{part!r} is ambiguous in {current.scoped_name()}")
        current = _check_case(found[0], part)
    return current
