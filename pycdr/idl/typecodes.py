"""TypeCodes for checked IDL (resolved type references -> :mod:`pycdr.codec.tc`).

A struct, union or value type that refers to itself (through a sequence, or
for value types directly) gets a ``tc.recursive(repo_id)`` placeholder,
which the constructor of the enclosing TypeCode binds.
"""

from __future__ import annotations

from ..codec import tc
from ..codec.tcmarshal import MAX_TC_DEPTH
from ..codec.typecode import TypeCode
from .diagnostics import Position
from .scope import ArrayRef, BaseRef, FixedRef, NamedRef, SequenceRef, StringRef, Symbol


class TypeNestingError(Exception):
    """A type whose TypeCode would nest deeper than pycdr reads TypeCodes
    (a typedef or value-type chain hundreds long): refused before its
    TypeCode is built, as building one walks it recursively."""

    def __init__(self, position: Position, message: str):
        super().__init__(message)
        self.position = position
        self.message = message

_BASE = {
    "short": tc.short, "long": tc.long, "long long": tc.longlong,
    "unsigned short": tc.ushort, "unsigned long": tc.ulong,
    "unsigned long long": tc.ulonglong, "float": getattr(tc, "float"), "double": tc.double,
    "long double": tc.longdouble, "char": tc.char, "wchar": tc.wchar,
    "boolean": tc.boolean, "octet": tc.octet, "any": tc.any, "void": tc.void,
    "Object": tc.Object, "ValueBase": tc.ValueBase,
}
# The IDL spelling of each basic type, for messages ("unsigned long long", not
# the TCKind's "ulonglong").
IDL_NAMES = {t.kind(): name for name, t in _BASE.items()}
_BUILTIN = {"TypeCode": getattr(tc, "TypeCode"), "Principal": tc.Principal}


class TypeCodeBuilder:
    def __init__(self):
        self.memo: dict[int, TypeCode] = {}
        self.in_progress: set[int] = set()
        self.depths: dict[int, int] = {}    # id(symbol) -> nesting of its TypeCode

    def nesting(self, sym: Symbol) -> int:
        """How deep the TypeCode of ``sym`` nests TypeCodes.  Symbols are built
        in declaration order, so what ``sym`` refers to is known already (a
        recursive reference counts 1: it is a placeholder)."""
        known = self.depths.get(id(sym))
        if known is not None:
            return known
        if id(sym) in self.in_progress:
            return 1
        info = sym.info
        refs = []
        if sym.kind in ("typedef", "valuebox"):
            refs.append(sym.type)
        elif sym.kind in ("struct", "exception"):
            refs += [r for _, r in info.get("members", ())]
        elif sym.kind == "union":
            refs.append(info.get("discriminator"))
            refs += [case[2] for case in info.get("cases", ())]
        elif sym.kind == "value":
            refs += [NamedRef(b) for b in info.get("value_bases", ())[:1]]
            refs += [r for _, r, _ in info.get("state", ())]
        self.in_progress.add(id(sym))
        try:
            depth = 1 + max((self._ref_nesting(r) for r in refs if r is not None), default=0)
        finally:
            self.in_progress.discard(id(sym))
        self.depths[id(sym)] = depth
        return depth

    def _ref_nesting(self, ref) -> int:
        levels = 0
        while isinstance(ref, (SequenceRef, ArrayRef)):
            levels += 1 if isinstance(ref, SequenceRef) else len(ref.dims)
            ref = ref.element
        if isinstance(ref, NamedRef):
            levels += self.nesting(ref.symbol)
        return levels

    def of_ref(self, ref) -> TypeCode:
        if isinstance(ref, BaseRef):
            return _BASE[ref.name]
        if isinstance(ref, NamedRef):
            return self.of_symbol(ref.symbol)
        if isinstance(ref, SequenceRef):
            return tc.sequence(self.of_ref(ref.element), ref.bound)
        if isinstance(ref, StringRef):
            return tc.wstring_tc(ref.bound) if ref.wide else tc.string_tc(ref.bound)
        if isinstance(ref, FixedRef):
            return tc.fixed(ref.digits, ref.scale)
        if isinstance(ref, ArrayRef):
            return tc.array(self.of_ref(ref.element), *ref.dims)
        raise TypeError(f"not a type reference: {ref!r}")

    def of_symbol(self, sym: Symbol) -> TypeCode:
        key = id(sym)
        if key in self.memo:
            return self.memo[key]
        if key in self.in_progress:
            return tc.recursive(sym.repo_id)
        if self.nesting(sym) > MAX_TC_DEPTH:
            raise TypeNestingError(sym.pos, f"{sym.scoped_name()} nests types more than "
                                            f"{MAX_TC_DEPTH} deep (pycdr's TypeCode limit)")
        self.in_progress.add(key)
        try:
            result = self._build(sym)
        finally:
            self.in_progress.discard(key)
        self.memo[key] = result
        return result

    def _build(self, sym: Symbol) -> TypeCode:
        kind, rid, name, info = sym.kind, sym.repo_id, sym.name, sym.info
        if kind == "builtin":
            return _BUILTIN[name]
        if kind == "typedef":
            return tc.alias(rid, name, self.of_ref(sym.type))
        if kind == "struct":
            return tc.struct(rid, name, [(n, self.of_ref(r)) for n, r in info["members"]])
        if kind == "exception":
            return tc.exception(rid, name, [(n, self.of_ref(r)) for n, r in info["members"]])
        if kind == "enum":
            return tc.enum(rid, name, info["labels"])
        if kind == "union":
            disc = self.of_ref(info["discriminator"])
            members = []
            member_types = {}   # a member with several labels has one TypeCode
            for case in info["cases"]:
                member = case[1]
                if member not in member_types:
                    member_types[member] = self.of_ref(case[2])
                if case[0] == "default":
                    members.append((tc.DEFAULT, member, member_types[member]))
                else:
                    label = case[3]
                    if isinstance(label, Symbol):   # an enumerator: its ordinal
                        label = label.value
                    members.append((label, member, member_types[member]))
            return tc.union(rid, name, disc, members)
        if kind == "interface":
            sub = info.get("subkind", "")
            if sub == "abstract":
                return tc.abstract_interface(rid, name)
            if sub == "local":
                return tc.local_interface(rid, name)
            return tc.objref(rid, name)
        if kind == "native":
            return tc.native(rid, name)
        if kind == "valuebox":
            return tc.value_box(rid, name, self.of_ref(sym.type))
        if kind == "value":
            return self._value(sym)
        raise TypeError(f"{sym!r} is not a type")

    def _value(self, sym: Symbol) -> TypeCode:
        info = sym.info
        kind = tc.TCKind.tk_event if info.get("event") else tc.TCKind.tk_value
        if sym.forward:
            # Used but never defined in this file: nothing is known about it.
            return tc.value(sym.repo_id, sym.name, tc.VM_NONE, None, (), kind=kind)
        if info.get("abstract"):
            modifier = tc.VM_ABSTRACT
        elif info.get("custom"):
            modifier = tc.VM_CUSTOM
        elif info.get("truncatable"):
            modifier = tc.VM_TRUNCATABLE
        else:
            modifier = tc.VM_NONE
        base = None
        value_bases = info.get("value_bases", [])
        if value_bases and not value_bases[0].info.get("abstract"):
            base = self.of_symbol(value_bases[0])
        members = [(n, self.of_ref(r), tc.PUBLIC_MEMBER if public else tc.PRIVATE_MEMBER)
                   for n, r, public in info.get("state", [])]
        return tc.value(sym.repo_id, sym.name, modifier, base, members, kind=kind)
