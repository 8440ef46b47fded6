"""TypeCodes: immutable descriptions of IDL types (CORBA 3.x TypeCode interface).

A TypeCode is built once (in code through :mod:`pycdr.codec.tc`, from IDL through
:mod:`pycdr.idl`, or decoded from CDR) and never changes afterwards.  The
accessor methods follow the CORBA TypeCode interface (``kind()``, ``id()``,
``member_count()``, ``member_label(i)``, ``content_type()``, ...) and raise
:class:`BadKind` / :class:`Bounds` as CORBA does.

Recursive types are written as in CORBA's ``create_recursive_tc``: a
placeholder made with ``tc.recursive(repo_id)`` is used as (part of) a member
type, and becomes a reference to the enclosing struct, union or value type
with that repository id when that TypeCode is created.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any as _AnyT, Iterable, Sequence

from ..errors import BadTypeCodeError, PycdrError


class TCKind(IntEnum):
    tk_null = 0
    tk_void = 1
    tk_short = 2
    tk_long = 3
    tk_ushort = 4
    tk_ulong = 5
    tk_float = 6
    tk_double = 7
    tk_boolean = 8
    tk_char = 9
    tk_octet = 10
    tk_any = 11
    tk_TypeCode = 12
    tk_Principal = 13
    tk_objref = 14
    tk_struct = 15
    tk_union = 16
    tk_enum = 17
    tk_string = 18
    tk_sequence = 19
    tk_array = 20
    tk_alias = 21
    tk_except = 22
    tk_longlong = 23
    tk_ulonglong = 24
    tk_longdouble = 25
    tk_wchar = 26
    tk_wstring = 27
    tk_fixed = 28
    tk_value = 29
    tk_value_box = 30
    tk_native = 31
    tk_abstract_interface = 32
    tk_local_interface = 33
    tk_component = 34
    tk_home = 35
    tk_event = 36


K = TCKind

# Value modifiers (CORBA::ValueModifier) and member visibility.
VM_NONE = 0
VM_CUSTOM = 1
VM_ABSTRACT = 2
VM_TRUNCATABLE = 3
PRIVATE_MEMBER = 0
PUBLIC_MEMBER = 1

PRIMITIVE_KINDS = frozenset({
    K.tk_null, K.tk_void, K.tk_short, K.tk_long, K.tk_ushort, K.tk_ulong,
    K.tk_float, K.tk_double, K.tk_boolean, K.tk_char, K.tk_octet, K.tk_any,
    K.tk_TypeCode, K.tk_Principal, K.tk_longlong, K.tk_ulonglong,
    K.tk_longdouble, K.tk_wchar,
})
# Kinds whose TypeCode carries a repository id and a name.
NAMED_KINDS = frozenset({
    K.tk_objref, K.tk_struct, K.tk_union, K.tk_enum, K.tk_alias, K.tk_except,
    K.tk_value, K.tk_value_box, K.tk_native, K.tk_abstract_interface,
    K.tk_local_interface, K.tk_component, K.tk_home, K.tk_event,
})
INTERFACE_KINDS = frozenset({
    K.tk_objref, K.tk_abstract_interface, K.tk_local_interface,
    K.tk_component, K.tk_home,
})
MEMBER_KINDS = frozenset({K.tk_struct, K.tk_union, K.tk_enum, K.tk_except,
                          K.tk_value, K.tk_event})
VALUE_KINDS = frozenset({K.tk_value, K.tk_event})

# Legal union discriminator kinds.
DISCRIMINATOR_KINDS = frozenset({
    K.tk_short, K.tk_long, K.tk_ushort, K.tk_ulong, K.tk_longlong,
    K.tk_ulonglong, K.tk_boolean, K.tk_char, K.tk_wchar, K.tk_enum,
})


class BadKind(PycdrError):
    """The accessor does not apply to this TypeCode's kind (CORBA TypeCode::BadKind)."""


class Bounds(PycdrError):
    """Member index out of range (CORBA TypeCode::Bounds)."""


class _DefaultLabel:
    """The ``default:`` label of a union member."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "DEFAULT"

    def __reduce__(self):
        return "DEFAULT"


DEFAULT = _DefaultLabel()


class TypeCode:
    """An immutable IDL type description. Build with :mod:`pycdr.codec.tc`."""

    __slots__ = ("_kind", "_id", "_name", "_member_names", "_member_types",
                 "_labels", "_disc", "_default_index", "_length", "_content",
                 "_digits", "_scale", "_modifier", "_base", "_visibilities",
                 "_hash", "__weakref__", "_plans", "_pyclass")

    def __init__(self, kind: TCKind, *, id: str = "", name: str = "",
                 member_names: Sequence[str] = (),
                 member_types: Sequence["TypeCode"] = (),
                 labels: Sequence[_AnyT] = (), disc: "TypeCode | None" = None,
                 default_index: int = -1, length: int = 0,
                 content: "TypeCode | None" = None, digits: int = 0,
                 scale: int = 0, modifier: int = 0,
                 base: "TypeCode | None" = None,
                 visibilities: Sequence[int] = ()):
        self._kind = TCKind(kind)
        self._id = id
        self._name = name
        self._member_names = tuple(member_names)
        self._member_types = tuple(member_types)
        self._labels = tuple(labels)
        self._disc = disc
        self._default_index = default_index
        self._length = length
        self._content = content
        self._digits = digits
        self._scale = scale
        self._modifier = modifier
        self._base = base
        self._visibilities = tuple(visibilities)
        self._hash = None
        self._pyclass = None  # the Python class of its values (pycdr.codec.values), a cache
        self._plans = None  # marshal plans, filled by pycdr.codec.plan (a cache, not state)

    def __setattr__(self, name, value):
        # Immutable after construction, except for the caches.
        if name not in ("_hash", "_plans", "_pyclass") and hasattr(self, "_plans"):
            raise AttributeError("TypeCode objects are immutable")
        object.__setattr__(self, name, value)

    # --- the CORBA TypeCode interface -------------------------------------
    def kind(self) -> TCKind:
        return self._kind

    def id(self) -> str:
        if self._kind not in NAMED_KINDS:
            raise BadKind(f"id() does not apply to {self._kind.name}")
        return self._id

    def name(self) -> str:
        if self._kind not in NAMED_KINDS:
            raise BadKind(f"name() does not apply to {self._kind.name}")
        return self._name

    def member_count(self) -> int:
        if self._kind not in MEMBER_KINDS:
            raise BadKind(f"member_count() does not apply to {self._kind.name}")
        return len(self._member_names)

    def _member_index(self, index: int) -> int:
        if self._kind not in MEMBER_KINDS:
            raise BadKind(f"member access does not apply to {self._kind.name}")
        if not 0 <= index < len(self._member_names):
            raise Bounds(f"member index {index} out of range 0..{len(self._member_names) - 1}")
        return index

    def member_name(self, index: int) -> str:
        return self._member_names[self._member_index(index)]

    def member_type(self, index: int) -> "TypeCode":
        if self._kind == K.tk_enum:
            raise BadKind("member_type() does not apply to tk_enum")
        return self._member_types[self._member_index(index)]

    def member_label(self, index: int):
        if self._kind != K.tk_union:
            raise BadKind(f"member_label() does not apply to {self._kind.name}")
        return self._labels[self._member_index(index)]

    def discriminator_type(self) -> "TypeCode":
        if self._kind != K.tk_union:
            raise BadKind(f"discriminator_type() does not apply to {self._kind.name}")
        return self._disc

    def default_index(self) -> int:
        if self._kind != K.tk_union:
            raise BadKind(f"default_index() does not apply to {self._kind.name}")
        return self._default_index

    def length(self) -> int:
        if self._kind not in (K.tk_string, K.tk_wstring, K.tk_sequence, K.tk_array):
            raise BadKind(f"length() does not apply to {self._kind.name}")
        return self._length

    def content_type(self) -> "TypeCode":
        if self._kind not in (K.tk_sequence, K.tk_array, K.tk_alias, K.tk_value_box):
            raise BadKind(f"content_type() does not apply to {self._kind.name}")
        return self._content

    def fixed_digits(self) -> int:
        if self._kind != K.tk_fixed:
            raise BadKind(f"fixed_digits() does not apply to {self._kind.name}")
        return self._digits

    def fixed_scale(self) -> int:
        if self._kind != K.tk_fixed:
            raise BadKind(f"fixed_scale() does not apply to {self._kind.name}")
        return self._scale

    def member_visibility(self, index: int) -> int:
        if self._kind not in VALUE_KINDS:
            raise BadKind(f"member_visibility() does not apply to {self._kind.name}")
        return self._visibilities[self._member_index(index)]

    def type_modifier(self) -> int:
        if self._kind not in VALUE_KINDS:
            raise BadKind(f"type_modifier() does not apply to {self._kind.name}")
        return self._modifier

    def concrete_base_type(self) -> "TypeCode | None":
        if self._kind not in VALUE_KINDS:
            raise BadKind(f"concrete_base_type() does not apply to {self._kind.name}")
        return self._base

    # --- comparisons -------------------------------------------------------
    def equal(self, other: "TypeCode") -> bool:
        """CORBA TypeCode::equal: the same in every parameter, names included."""
        return _compare(self, other, equivalent=False, seen=set())

    def equivalent(self, other: "TypeCode") -> bool:
        """CORBA TypeCode::equivalent: aliases are looked through, names ignored,
        repository ids decide where both have one."""
        return _compare(self, other, equivalent=True, seen=set())

    def get_compact_typecode(self) -> "TypeCode":
        """The same TypeCode without names and member names (ids kept)."""
        return _compact(self, {})

    def unalias(self) -> "TypeCode":
        """Follow tk_alias to the real type (a convenience, not CORBA API)."""
        tc = self
        while tc._kind == K.tk_alias:
            tc = tc._content
        return tc

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TypeCode):
            return NotImplemented
        return self is other or self.equal(other)

    def __hash__(self) -> int:
        if self._hash is None:
            # Shallow on purpose: recursive TypeCodes must hash without recursion.
            self._hash = hash((self._kind, self._id, self._name, self._length,
                               self._digits, self._scale, len(self._member_names)))
        return self._hash

    def __repr__(self) -> str:
        return f"<TypeCode {describe(self)}>"


class RecursiveTypeCode(TypeCode):
    """Placeholder for a recursive reference (CORBA create_recursive_tc).

    Until the enclosing TypeCode is created it is unresolved; afterwards every
    accessor forwards to the TypeCode it stands for.
    """

    __slots__ = ("_target",)

    def __init__(self, repo_id: str):
        object.__setattr__(self, "_target", None)
        super().__init__(K.tk_null, id=repo_id)

    def __setattr__(self, name, value):
        if name == "_target":
            if self._target is not None:
                raise AttributeError("recursive TypeCode already resolved")
            object.__setattr__(self, name, value)
            return
        super().__setattr__(name, value)

    @property
    def resolved(self) -> TypeCode:
        if self._target is None:
            raise BadTypeCodeError(f"recursive TypeCode {self._id!r} was never enclosed "
                                   "by a struct, union or valuetype with that id")
        return self._target

    def __getattribute__(self, name):
        # Forward the interface (and the internal fields) to the resolved TypeCode.
        if name.startswith("__") or name in ("_target", "resolved", "_plans", "_hash",
                                             "_pyclass"):
            return object.__getattribute__(self, name)
        target = object.__getattribute__(self, "_target")
        if target is None:
            if name == "_id":
                return object.__getattribute__(self, "_id")
            raise BadTypeCodeError(
                f"recursive TypeCode {object.__getattribute__(self, '_id')!r} used "
                "before its enclosing type was created")
        return getattr(target, name)

    def __hash__(self) -> int:
        return hash(self.resolved)

    def __repr__(self) -> str:
        target = object.__getattribute__(self, "_target")
        if target is not None:
            return f"<TypeCode recursive -> {describe(target)}>"
        return f"<TypeCode recursive {object.__getattribute__(self, '_id')!r} (unresolved)>"


def resolve(tc: TypeCode) -> TypeCode:
    """The real TypeCode behind a recursive placeholder (identity otherwise)."""
    if type(tc) is RecursiveTypeCode:
        return tc.resolved
    return tc


def _bind_recursive(tc: TypeCode, target: TypeCode, seen: set) -> None:
    """Point unresolved placeholders with target's id, anywhere inside tc, at target."""
    if id(tc) in seen:
        return
    seen.add(id(tc))
    if type(tc) is RecursiveTypeCode:
        if object.__getattribute__(tc, "_target") is None:
            if object.__getattribute__(tc, "_id") == target._id:
                tc._target = target
        return
    for sub in tc._member_types:
        _bind_recursive(sub, target, seen)
    for sub in (tc._content, tc._disc, tc._base):
        if sub is not None:
            _bind_recursive(sub, target, seen)


def _compare(a: TypeCode, b: TypeCode, equivalent: bool, seen: set) -> bool:
    a = resolve(a)
    b = resolve(b)
    if a is b:
        return True
    if equivalent:
        a = a.unalias()
        b = b.unalias()
    key = (id(a), id(b))
    if key in seen:  # recursion: assume equal along a cycle
        return True
    seen.add(key)
    if a._kind != b._kind:
        return False
    kind = a._kind
    if kind in NAMED_KINDS:
        if equivalent:
            if a._id and b._id:
                # Both have ids: they decide (CORBA 3.x TypeCode::equivalent).
                return a._id == b._id
        else:
            if a._id != b._id or a._name != b._name:
                return False
    if equivalent:
        if kind in MEMBER_KINDS and len(a._member_names) != len(b._member_names):
            return False
    elif a._member_names != b._member_names:
        return False
    if kind == K.tk_enum:
        return True if equivalent else a._member_names == b._member_names
    if a._labels != b._labels or a._default_index != b._default_index:
        return False
    if a._length != b._length or a._digits != b._digits or a._scale != b._scale:
        return False
    if a._modifier != b._modifier or a._visibilities != b._visibilities:
        return False
    if len(a._member_types) != len(b._member_types):
        return False
    for x, y in zip(a._member_types, b._member_types):
        if not _compare(x, y, equivalent, seen):
            return False
    for x, y in ((a._content, b._content), (a._disc, b._disc), (a._base, b._base)):
        if (x is None) != (y is None):
            return False
        if x is not None and not _compare(x, y, equivalent, seen):
            return False
    return True


def _compact(tc: TypeCode, memo: dict) -> TypeCode:
    tc = resolve(tc)
    if tc._kind in PRIMITIVE_KINDS or tc._kind in (K.tk_string, K.tk_wstring, K.tk_fixed):
        return tc
    if id(tc) in memo:
        return memo[id(tc)]
    placeholder = RecursiveTypeCode(tc._id)
    memo[id(tc)] = placeholder
    new = TypeCode(
        tc._kind, id=tc._id, name="",
        member_names=("",) * len(tc._member_names) if tc._kind != K.tk_enum else tc._member_names,
        member_types=[_compact(t, memo) for t in tc._member_types],
        labels=tc._labels,
        disc=_compact(tc._disc, memo) if tc._disc is not None else None,
        default_index=tc._default_index, length=tc._length,
        content=_compact(tc._content, memo) if tc._content is not None else None,
        digits=tc._digits, scale=tc._scale, modifier=tc._modifier,
        base=_compact(tc._base, memo) if tc._base is not None else None,
        visibilities=tc._visibilities)
    if tc._kind in (K.tk_struct, K.tk_union, K.tk_except, K.tk_value, K.tk_event):
        placeholder._target = new
    memo[id(tc)] = new
    return new


def describe(tc: TypeCode, depth: int = 0) -> str:
    """A short IDL-like description, for repr and messages."""
    if type(tc) is RecursiveTypeCode:
        return f"recursive {object.__getattribute__(tc, '_id')}"
    k = tc._kind
    if k in PRIMITIVE_KINDS:
        return k.name[3:]
    if k in (K.tk_string, K.tk_wstring):
        return k.name[3:] + (f"<{tc._length}>" if tc._length else "")
    if k == K.tk_sequence:
        inner = describe(tc._content, depth + 1) if depth < 3 else "..."
        return f"sequence<{inner}" + (f", {tc._length}>" if tc._length else ">")
    if k == K.tk_array:
        inner = describe(tc._content, depth + 1) if depth < 3 else "..."
        return f"{inner}[{tc._length}]"
    if k == K.tk_fixed:
        return f"fixed<{tc._digits},{tc._scale}>"
    return f"{k.name[3:]} {tc._name or tc._id}"


# --------------------------------------------------------------------------
# Constructors. pycdr.codec.tc re-exports these under short names.
# --------------------------------------------------------------------------

def _check_tc(tc, what: str) -> TypeCode:
    if not isinstance(tc, TypeCode):
        raise BadTypeCodeError(f"{what} must be a TypeCode, not {type(tc).__name__}")
    return tc


def _check_names(names: Sequence[str], what: str) -> None:
    seen = set()
    for n in names:
        if not isinstance(n, str):
            raise BadTypeCodeError(f"{what} name must be a string, not {n!r}")
        low = n.lower()
        if n and low in seen:  # IDL identifiers collide case-insensitively
            raise BadTypeCodeError(f"duplicate {what} name {n!r}")
        seen.add(low)


_PRIMITIVES = {k: TypeCode(k) for k in PRIMITIVE_KINDS}


def primitive(kind: TCKind) -> TypeCode:
    return _PRIMITIVES[TCKind(kind)]


def string_tc(bound: int = 0) -> TypeCode:
    if bound < 0:
        raise BadTypeCodeError("string bound must be >= 0")
    return TypeCode(K.tk_string, length=bound)


def wstring_tc(bound: int = 0) -> TypeCode:
    if bound < 0:
        raise BadTypeCodeError("wstring bound must be >= 0")
    return TypeCode(K.tk_wstring, length=bound)


def sequence_tc(content: TypeCode, bound: int = 0) -> TypeCode:
    _check_tc(content, "sequence element type")
    if bound < 0:
        raise BadTypeCodeError("sequence bound must be >= 0")
    return TypeCode(K.tk_sequence, content=content, length=bound)


def array_tc(content: TypeCode, *dims: int) -> TypeCode:
    """``array_tc(tc.long, 2, 3)`` is IDL ``long x[2][3]``: an array of 2 arrays of 3."""
    _check_tc(content, "array element type")
    if not dims:
        raise BadTypeCodeError("an array needs at least one dimension")
    for d in reversed(dims):
        if d <= 0:
            raise BadTypeCodeError("array dimensions must be > 0")
        content = TypeCode(K.tk_array, content=content, length=d)
    return content


def fixed_tc(digits: int, scale: int) -> TypeCode:
    if not 0 <= digits <= 31 or not 0 <= scale <= digits:
        # (A decoded TypeCode may have a negative scale; decoding builds it directly.)
        raise BadTypeCodeError(f"fixed<{digits},{scale}>: need 0 <= scale <= digits <= 31")
    return TypeCode(K.tk_fixed, digits=digits, scale=scale)


def alias_tc(repo_id: str, name: str, content: TypeCode) -> TypeCode:
    return TypeCode(K.tk_alias, id=repo_id, name=name, content=_check_tc(content, "alias type"))


def _members(members, what):
    names, types = [], []
    for m in members:
        name, mtype = m[0], m[1]
        names.append(name)
        types.append(_check_tc(mtype, f"{what} member {name!r} type"))
    _check_names(names, f"{what} member")
    return names, types


def struct_tc(repo_id: str, name: str, members: Iterable[tuple[str, TypeCode]]) -> TypeCode:
    names, types = _members(members, "struct")
    tc = TypeCode(K.tk_struct, id=repo_id, name=name, member_names=names, member_types=types)
    _bind_recursive(tc, tc, set())
    return tc


def exception_tc(repo_id: str, name: str, members: Iterable[tuple[str, TypeCode]] = ()) -> TypeCode:
    names, types = _members(members, "exception")
    tc = TypeCode(K.tk_except, id=repo_id, name=name, member_names=names, member_types=types)
    _bind_recursive(tc, tc, set())
    return tc


def enum_tc(repo_id: str, name: str, labels: Sequence[str]) -> TypeCode:
    labels = tuple(labels)
    if not labels:
        raise BadTypeCodeError("an enum needs at least one enumerator")
    _check_names(labels, "enumerator")
    return TypeCode(K.tk_enum, id=repo_id, name=name, member_names=labels)


def _label_value(disc: TypeCode, label):
    """Normalise a union label to the discriminator's Python value."""
    if label is DEFAULT:
        return DEFAULT
    d = disc.unalias()
    k = d._kind
    if k == K.tk_enum:
        if isinstance(label, str):
            if label not in d._member_names:
                raise BadTypeCodeError(f"union label {label!r} is not an enumerator of {d._name}")
            return d._member_names.index(label)
        label = int(label)
        if not 0 <= label < len(d._member_names):
            raise BadTypeCodeError(f"union label {label} out of range for enum {d._name}")
        return label
    if k == K.tk_boolean:
        if not isinstance(label, (bool, int)) or label not in (0, 1):
            raise BadTypeCodeError(f"boolean union label must be True/False, not {label!r}")
        return bool(label)
    if k in (K.tk_char, K.tk_wchar):
        if not isinstance(label, str) or len(label) != 1:
            raise BadTypeCodeError(f"char union label must be a 1-character string, not {label!r}")
        return label
    if not isinstance(label, int) or isinstance(label, bool):
        raise BadTypeCodeError(f"integer union label expected, not {label!r}")
    lo, hi = INTEGER_RANGES[k]
    if not lo <= label <= hi:
        raise BadTypeCodeError(f"union label {label} out of range for {k.name}")
    return label


INTEGER_RANGES = {
    K.tk_short: (-2**15, 2**15 - 1), K.tk_ushort: (0, 2**16 - 1),
    K.tk_long: (-2**31, 2**31 - 1), K.tk_ulong: (0, 2**32 - 1),
    K.tk_longlong: (-2**63, 2**63 - 1), K.tk_ulonglong: (0, 2**64 - 1),
    K.tk_octet: (0, 255),
}


def union_tc(repo_id: str, name: str, discriminator: TypeCode,
             members: Iterable[tuple[object, str, TypeCode]]) -> TypeCode:
    """Members are ``(label, name, type)``; the label may be ``DEFAULT``.
    A member with several labels is listed once per label, as in its TypeCode."""
    _check_tc(discriminator, "union discriminator")
    if discriminator.unalias()._kind not in DISCRIMINATOR_KINDS:
        raise BadTypeCodeError(f"{describe(discriminator)} cannot discriminate a union")
    labels, names, types = [], [], []
    default_index = -1
    seen_labels = set()
    for i, (label, mname, mtype) in enumerate(members):
        label = _label_value(discriminator, label)
        if label is DEFAULT:
            if default_index >= 0:
                raise BadTypeCodeError("a union has at most one default member")
            default_index = i
        else:
            if label in seen_labels:
                raise BadTypeCodeError(f"duplicate union label {label!r}")
            seen_labels.add(label)
        labels.append(label)
        names.append(mname)
        types.append(_check_tc(mtype, f"union member {mname!r} type"))
    if not names:
        raise BadTypeCodeError("a union needs at least one member")
    # Several labels of one member repeat name and type (equal TypeCodes: one
    # object when built from IDL, one each when read off the wire); distinct
    # members need distinct names.
    distinct = {}
    for n, t in zip(names, types):
        if n in distinct and distinct[n] is not t and not distinct[n].equal(t):
            raise BadTypeCodeError(f"duplicate union member name {n!r}")
        distinct[n] = t
    tc = TypeCode(K.tk_union, id=repo_id, name=name, member_names=names,
                  member_types=types, labels=labels, disc=discriminator,
                  default_index=default_index)
    _bind_recursive(tc, tc, set())
    return tc


def objref_tc(repo_id: str, name: str, kind: TCKind = K.tk_objref) -> TypeCode:
    if kind not in INTERFACE_KINDS:
        raise BadTypeCodeError(f"{kind!r} is not an interface kind")
    return TypeCode(kind, id=repo_id, name=name)


def native_tc(repo_id: str, name: str) -> TypeCode:
    return TypeCode(K.tk_native, id=repo_id, name=name)


def value_tc(repo_id: str, name: str, modifier: int = VM_NONE,
             concrete_base: TypeCode | None = None,
             members: Iterable[tuple] = (), kind: TCKind = K.tk_value) -> TypeCode:
    """Members are ``(name, type)`` or ``(name, type, visibility)``; visibility
    defaults to PUBLIC_MEMBER. ``concrete_base`` is the base value type or None."""
    if kind not in VALUE_KINDS:
        raise BadTypeCodeError(f"{kind!r} is not a value kind")
    if modifier not in (VM_NONE, VM_CUSTOM, VM_ABSTRACT, VM_TRUNCATABLE):
        raise BadTypeCodeError(f"bad value modifier {modifier}")
    if concrete_base is not None:
        _check_tc(concrete_base, "concrete base")
        if resolve(concrete_base)._kind not in VALUE_KINDS:
            raise BadTypeCodeError("a value type's concrete base must be a value type")
    names, types, vis = [], [], []
    for m in members:
        names.append(m[0])
        types.append(_check_tc(m[1], f"value member {m[0]!r} type"))
        vis.append(m[2] if len(m) > 2 else PUBLIC_MEMBER)
    _check_names(names, "value member")
    tc = TypeCode(kind, id=repo_id, name=name, member_names=names, member_types=types,
                  modifier=modifier, base=concrete_base, visibilities=vis)
    _bind_recursive(tc, tc, set())
    return tc


def value_box_tc(repo_id: str, name: str, content: TypeCode) -> TypeCode:
    _check_tc(content, "boxed type")
    if resolve(content).unalias()._kind in VALUE_KINDS or resolve(content).unalias()._kind == K.tk_value_box:
        raise BadTypeCodeError("a value box cannot box a value type")
    return TypeCode(K.tk_value_box, id=repo_id, name=name, content=content)


def recursive_tc(repo_id: str) -> TypeCode:
    return RecursiveTypeCode(repo_id)


def value_members(tc: TypeCode) -> list[tuple[str, TypeCode]]:
    """All state members of a value type, base types' first (their marshaling order)."""
    chain = []
    cur = resolve(tc)
    while cur is not None:
        chain.append(cur)
        cur = resolve(cur._base) if cur._base is not None else None
    out = []
    for t in reversed(chain):
        out.extend(zip(t._member_names, t._member_types))
    return out
