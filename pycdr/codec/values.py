"""The Python value mapping.

============================  ===============================================
IDL                           Python
============================  ===============================================
short ... unsigned long long  int
float, double                 float
long double                   :class:`LongDouble` (exact binary128; accepts float)
boolean                       bool
char, wchar                   str of length 1
octet                         int
string, wstring               str
fixed<d,s>                    decimal.Decimal
enum                          :class:`EnumItem` (an int with a name)
struct                        a :class:`Struct` subclass, one per TypeCode
exception                     a :class:`UserException` subclass
union                         a :class:`Union` subclass: ``_d`` discriminator, ``_v`` value
sequence<octet>, octet[N]     bytes
sequence<char>, char[N]       str
other sequences, arrays       list (nested lists for multi-dimensional arrays)
alias                         the value of the aliased type
any                           :class:`Any` (TypeCode and value)
TypeCode                      :class:`pycdr.codec.typecode.TypeCode`
Object reference              :class:`pycdr.codec.ior.IOR` (``None`` for nil)
valuetype                     a :class:`ValueBase` subclass (``None`` for null)
value box                     the boxed value (``None`` for null)
============================  ===============================================

Encoding is lenient about where values come from: a struct can be given as an
instance of its class, any object with the members as attributes, or a mapping;
a union as an instance or a ``(discriminator, value)`` pair; an enum as an item,
its ordinal or its name.  Classes are made from TypeCodes on first use and can
be registered for a repository id (the IDL front end does) so decoding returns
the same classes user code has.
"""

from __future__ import annotations

import keyword
import unicodedata
from decimal import Decimal
from fractions import Fraction

from .typecode import DEFAULT, INTEGER_RANGES, TCKind, TypeCode, resolve, value_members

K = TCKind

# repository id -> Python class, shared by the IDL loader and the decoders.
_registry: dict[str, type] = {}


def register(repo_id: str, cls: type) -> None:
    _registry[repo_id] = cls


def registered(repo_id: str):
    return _registry.get(repo_id)


def py_name(idl_name: str, index: int = 0) -> str:
    """The attribute name for a member, branch or enumerator name, from IDL or from
    the wire.  The one rule (the classes made here, the C and pure decoders and the
    code the plans compile all take their names from :func:`field_names`):

    1. the name is taken in its NFKC form, the form Python gives an identifier in
       source code (``ª`` is ``a``; ``µ``, MICRO SIGN, is ``μ``): so ``obj.µ`` written
       in a program finds the member, and code compiled from the name means it;
    2. if that form is an identifier that does not start with ``_``: it, with a
       leading ``_`` if it is a Python keyword (as omniORBpy does);
    3. anything else (the empty names of compact TypeCodes, characters no identifier
       takes, a leading ``_``) is ``_m<index>``, ``index`` being the name's position.
    """
    folded = unicodedata.normalize("NFKC", idl_name)
    if folded.isidentifier() and not folded.startswith("_"):
        return "_" + folded if keyword.iskeyword(folded) else folded
    return f"_m{index}"


def field_names(idl_names) -> tuple:
    """Attribute names for a member list by :func:`py_name`, distinct: a name whose
    attribute an earlier name has already (``a`` then ``ª``; ``class`` then
    ``ｃｌａｓｓ``) is ``_m<index>`` instead."""
    out = []
    seen = set()
    for i, name in enumerate(idl_names):
        attr = py_name(name, i)
        if attr in seen:
            attr = f"_m{i}"
        seen.add(attr)
        out.append(attr)
    return tuple(out)


def _same_type(a, b, base) -> bool:
    """Values compare equal across classes made for equivalent TypeCodes (the
    same type from IDL and from a TypeCode received in an any, say)."""
    if type(a) is type(b):
        return True
    return isinstance(b, base) and a._tc is not None and b._tc is not None and \
        a._tc.equivalent(b._tc)


def _set_members(obj, args, kwargs) -> None:
    """Members from positional and keyword values; every member must be given."""
    fields = obj._fields
    if len(args) > len(fields):
        raise TypeError(f"{type(obj).__name__} takes at most {len(fields)} values")
    for name, value in zip(fields, args):
        setattr(obj, name, value)
    for name, value in kwargs.items():
        if name not in fields:
            raise TypeError(f"{type(obj).__name__} has no member {name!r}")
        setattr(obj, name, value)
    missing = [f for f in fields[len(args):] if f not in kwargs]
    if missing:
        raise TypeError(f"{type(obj).__name__} missing members {missing}")


# --------------------------------------------------------------------------
class Struct:
    """Base of IDL struct classes: mutable, with attribute access, equality and repr."""

    __slots__ = ()
    _tc: TypeCode = None
    _fields: tuple = ()

    def __init__(self, *args, **kwargs):
        _set_members(self, args, kwargs)

    def __eq__(self, other):
        if not _same_type(self, other, Struct):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._fields)

    __hash__ = None

    def __repr__(self):
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"

    def _values(self):
        return tuple(getattr(self, f) for f in self._fields)


class UserException(Exception):
    """Base of IDL exception classes."""

    _tc: TypeCode = None
    _fields: tuple = ()

    def __init__(self, *args, **kwargs):
        Exception.__init__(self, *args)
        _set_members(self, args, kwargs)

    def __eq__(self, other):
        if not _same_type(self, other, UserException):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._fields)

    __hash__ = Exception.__hash__

    def __repr__(self):
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"

    def __str__(self):
        return repr(self)


def make_struct_class(tc: TypeCode, name: str | None = None, module: str | None = None):
    """A Struct (or UserException) subclass for a struct/exception TypeCode."""
    tc = resolve(tc)
    fields = field_names(tc._member_names)
    cls_name = name or tc._name or "anonymous"
    if not cls_name.isidentifier():
        cls_name = "anonymous"
    if tc._kind == K.tk_except:
        ns = {"_tc": tc, "_fields": fields, "_NP_RepositoryId": tc._id}
        cls = type(cls_name, (UserException,), ns)
    else:
        ns = {"__slots__": fields, "_tc": tc, "_fields": fields, "_NP_RepositoryId": tc._id}
        if fields and len(fields) < 200:
            # A generated __init__ with named parameters: readable signatures and
            # far faster than the generic loop (the "specialize" principle).
            params = ", ".join(fields)
            # (the instance parameter is not called `self`: an IDL member may be)
            body = "".join(f"    _pycdr_obj.{f} = {f}\n" for f in fields)
            code = f"def __init__(_pycdr_obj, {params}):\n{body}"
            local: dict = {}
            exec(code, {}, local)
            ns["__init__"] = local["__init__"]
        cls = type(cls_name, (Struct,), ns)
    if module:
        cls.__module__ = module
    return cls


# --------------------------------------------------------------------------
class EnumItem(int):
    """One enumerator: an int (its ordinal) that knows its name and enum."""

    def __new__(cls, enum_cls, name: str, value: int):
        self = int.__new__(cls, value)
        self._name = name
        self._parent = enum_cls
        return self

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self):
        return f"{self._parent.__name__}.{self._name}"

    def __str__(self):
        return self._name

    def __reduce__(self):
        return (_enum_item, (self._parent, int(self)))


def _enum_item(enum_cls, value):
    return enum_cls._items[value]


class Enum:
    """Base of IDL enum classes: class attributes per enumerator, ``_items`` in order."""

    _tc: TypeCode = None
    _items: tuple = ()

    def __new__(cls, value):
        if isinstance(value, str):
            for item in cls._items:
                if item._name == value:
                    return item
            raise ValueError(f"{value!r} is not an enumerator of {cls.__name__}")
        if 0 <= value < len(cls._items):
            return cls._items[value]
        raise ValueError(f"{value!r} is out of range for {cls.__name__}")


def make_enum_class(tc: TypeCode, name: str | None = None, module: str | None = None):
    tc = resolve(tc)
    cls_name = name or tc._name or "anonymous"
    cls = type(cls_name if cls_name.isidentifier() else "anonymous", (Enum,),
               {"_tc": tc, "_NP_RepositoryId": tc._id})
    items = tuple(EnumItem(cls, label, i) for i, label in enumerate(tc._member_names))
    cls._items = items
    # (an enumerator without a name of its own is reached by _items or Enum(name))
    for i, (item, attr) in enumerate(zip(items, field_names(tc._member_names))):
        if attr != f"_m{i}":
            setattr(cls, attr, item)
    if module:
        cls.__module__ = module
    return cls


# --------------------------------------------------------------------------
class Union:
    """Base of IDL union classes. ``_d`` is the discriminator, ``_v`` the value.

    Construct as ``U(d, v)`` or ``U(branch_name=value)``; each branch is also a
    property that checks the discriminator selects it.
    """

    __slots__ = ("_d", "_v")
    _tc: TypeCode = None
    _branches: dict = {}     # python branch name -> list of labels (DEFAULT possible)
    _default_d = None         # a discriminator value selecting the default branch

    def __init__(self, *args, **kwargs):
        if len(args) == 2 and not kwargs:
            self._d, self._v = args
        elif not args and len(kwargs) == 1:
            ((branch, value),) = kwargs.items()
            if branch not in self._branches:
                raise TypeError(f"{type(self).__name__} has no branch {branch!r}")
            self._d = self._label_for(branch)
            self._v = value
        else:
            raise TypeError(f"{type(self).__name__}(discriminator, value) or "
                            f"{type(self).__name__}(branch=value)")

    @classmethod
    def _label_for(cls, branch):
        label = cls._branches[branch][0]
        if label is DEFAULT:
            if cls._default_d is None:
                raise TypeError(f"no discriminator value selects the default branch {branch!r}")
            return cls._default_d
        return label

    def __eq__(self, other):
        if not _same_type(self, other, Union):
            return NotImplemented
        return self._d == other._d and self._v == other._v

    __hash__ = None

    def __repr__(self):
        return f"{type(self).__name__}({self._d!r}, {self._v!r})"


def _branch_property(branch: str, labels: list):
    def getter(self):
        sel = self._tc_branch(self._d)
        if sel != branch:
            raise AttributeError(f"discriminator {self._d!r} does not select {branch!r}")
        return self._v

    def setter(self, value):
        self._d = type(self)._label_for(branch)
        self._v = value
    return property(getter, setter)


def make_union_class(tc: TypeCode, name: str | None = None, module: str | None = None):
    tc = resolve(tc)
    branches: dict = {}
    # A member with several labels repeats its name: one attribute per distinct name.
    distinct = list(dict.fromkeys(tc._member_names))
    attr_of = dict(zip(distinct, field_names(distinct)))
    for label, mname in zip(tc._labels, tc._member_names):
        branches.setdefault(attr_of[mname], []).append(label)
    label_map = {lbl: attr_of[n] for lbl, n in zip(tc._labels, tc._member_names)
                 if lbl is not DEFAULT}
    default_branch = attr_of[tc._member_names[tc._default_index]] \
        if tc._default_index >= 0 else None
    disc = tc._disc.unalias()
    default_d = implicit_default_label(tc)
    if disc._kind == K.tk_enum and default_d is not None:
        pass  # ordinals are valid discriminator values for enum unions

    def _tc_branch(self, d, _map=label_map, _default=default_branch):
        return _map.get(d, _default)

    ns = {"__slots__": (), "_tc": tc, "_branches": branches, "_default_d": default_d,
          "_tc_branch": _tc_branch, "_NP_RepositoryId": tc._id}
    for branch, labels in branches.items():
        ns[branch] = _branch_property(branch, labels)
    cls_name = name or tc._name or "anonymous"
    cls = type(cls_name if cls_name.isidentifier() else "anonymous", (Union,), ns)
    if module:
        cls.__module__ = module
    return cls


def implicit_default_label(tc: TypeCode):
    """A discriminator value that no explicit label uses (for the default
    branch, or for an implicit default with no branch), or None if every value
    is taken."""
    used = {lbl for lbl in tc._labels if lbl is not DEFAULT}
    disc = tc._disc.unalias()
    k = disc._kind
    if k == K.tk_boolean:
        candidates = iter((False, True))
    elif k == K.tk_enum:
        candidates = iter(range(len(disc._member_names)))
    elif k in (K.tk_char,):
        candidates = (chr(i) for i in range(256))
    elif k == K.tk_wchar:
        candidates = (chr(i) for i in range(0xD800))
    else:
        lo, hi = INTEGER_RANGES[k]
        candidates = (i for i in range(lo, min(hi, lo + len(used) + 1) + 1))
    for c in candidates:
        if c not in used:
            return c
    return None


# --------------------------------------------------------------------------
class Any:
    """An IDL any: a TypeCode and a value of that type."""

    __slots__ = ("tc", "value")

    def __init__(self, tc: TypeCode, value=None):
        if not isinstance(tc, TypeCode):
            raise TypeError("Any(tc, value) needs a TypeCode")
        self.tc = tc
        self.value = value

    def typecode(self) -> TypeCode:
        return self.tc

    def value_(self):
        return self.value

    def __eq__(self, other):
        if not isinstance(other, Any):
            return NotImplemented
        return self.tc.equivalent(other.tc) and self.value == other.value

    __hash__ = None

    def __repr__(self):
        return f"Any({self.tc!r}, {self.value!r})"


# --------------------------------------------------------------------------
class LongDouble:
    """An IEEE 754 binary128 value, kept exactly (16 octets on the wire).

    ``float(x)`` rounds to double; ``x.as_fraction()`` and ``x.as_decimal()`` are
    exact; ``LongDouble.from_float(f)`` is exact (every double is a binary128).
    """

    __slots__ = ("bits",)

    def __init__(self, bits: int):
        if not 0 <= bits < 1 << 128:
            raise ValueError("binary128 bits out of range")
        self.bits = bits

    @classmethod
    def from_bytes(cls, big_endian16: bytes) -> "LongDouble":
        return cls(int.from_bytes(big_endian16, "big"))

    def to_bytes(self) -> bytes:
        return self.bits.to_bytes(16, "big")

    @classmethod
    def from_float(cls, f: float) -> "LongDouble":
        return cls.from_fraction_or_special(float(f))

    @classmethod
    def from_fraction_or_special(cls, x) -> "LongDouble":
        import math
        if isinstance(x, float):
            if math.isnan(x):
                return cls(0x7FFF8000000000000000000000000000)
            if math.isinf(x):
                return cls((0xFFFF if x < 0 else 0x7FFF) << 112)
            sign = 1 if math.copysign(1.0, x) < 0 else 0
            x = Fraction(x)
        else:
            x = Fraction(x)
            sign = 1 if x < 0 else 0
        x = abs(x)
        if x == 0:
            return cls(sign << 127)
        # exponent e with 2**e <= x < 2**(e+1)
        e = x.numerator.bit_length() - x.denominator.bit_length()
        if Fraction(2) ** e > x:
            e -= 1
        if e < -16382:  # subnormal
            mant = round(x * Fraction(2) ** (16382 + 112))
            return cls((sign << 127) | mant)
        mant = round(x * Fraction(2) ** (112 - e))
        if mant >= 1 << 113:   # rounding carried into the next binade
            mant >>= 1
            e += 1
        if e > 16383:
            return cls((sign << 127) | (0x7FFF << 112))
        return cls((sign << 127) | ((e + 16383) << 112) | (mant - (1 << 112)))

    def as_fraction(self) -> Fraction:
        sign = -1 if self.bits >> 127 else 1
        exp = (self.bits >> 112) & 0x7FFF
        mant = self.bits & ((1 << 112) - 1)
        if exp == 0x7FFF:
            raise ValueError("infinity or NaN has no exact fraction")
        if exp == 0:
            return sign * Fraction(mant, 1 << (16382 + 112))
        return sign * Fraction((1 << 112) | mant) * Fraction(2) ** (exp - 16383 - 112)

    def as_decimal(self) -> Decimal:
        f = self.as_fraction()
        # A binary fraction has a finite decimal expansion: numerator * 5**k / 10**k.
        den = f.denominator
        k = den.bit_length() - 1
        return Decimal(f.numerator * 5 ** k).scaleb(-k)

    def __float__(self) -> float:
        exp = (self.bits >> 112) & 0x7FFF
        if exp == 0x7FFF:
            if self.bits & ((1 << 112) - 1):
                return float("nan")
            return float("-inf") if self.bits >> 127 else float("inf")
        if self.bits & ~(1 << 127) == 0:
            return -0.0 if self.bits >> 127 else 0.0
        try:
            return float(self.as_fraction())
        except OverflowError:
            return float("-inf") if self.bits >> 127 else float("inf")

    def __eq__(self, other):
        if isinstance(other, LongDouble):
            return self.bits == other.bits
        if isinstance(other, (int, float)):
            return self.bits == LongDouble.from_float(float(other)).bits if \
                float(other) == other else False
        return NotImplemented

    def __hash__(self):
        return hash(self.bits)

    def __repr__(self):
        try:
            return f"LongDouble({self.as_decimal()})"
        except ValueError:
            return f"LongDouble({float(self)})"


# --------------------------------------------------------------------------
class ValueBase:
    """Base of IDL valuetype classes (state members as attributes)."""

    _tc: TypeCode = None
    _fields: tuple = ()

    def __init__(self, *args, **kwargs):
        fields = self._fields
        for name, value in zip(fields, args):
            setattr(self, name, value)
        for name, value in kwargs.items():
            setattr(self, name, value)

    def _NP_RepositoryId(self):
        return self._tc._id

    def __eq__(self, other):
        if not _same_type(self, other, ValueBase):
            return NotImplemented
        return all(getattr(self, f, None) == getattr(other, f, None) for f in self._fields)

    __hash__ = object.__hash__

    def __repr__(self):
        inner = ", ".join(f"{f}={getattr(self, f, None)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"


def make_value_class(tc: TypeCode, name: str | None = None, module: str | None = None,
                     base: type | None = None):
    tc = resolve(tc)
    fields = field_names([n for n, _ in value_members(tc)])
    if base is None:
        base = ValueBase
        if tc._base is not None:
            base = class_for(tc._base)
    cls_name = name or tc._name or "anonymous"
    cls = type(cls_name if cls_name.isidentifier() else "anonymous", (base,),
               {"_tc": tc, "_fields": fields})
    if module:
        cls.__module__ = module
    return cls


def class_for(tc: TypeCode):
    """The class values of a struct/exception/union/enum/value TypeCode decode to:
    the registered one for its repository id, else one made from the TypeCode."""
    tc = resolve(tc)
    if tc._pyclass is not None:
        return tc._pyclass
    cls = _registry.get(tc._id) if tc._id else None
    # The registered class only if it has the same members: a TypeCode from the
    # wire may carry a known id with other member names (or a peer's error).
    if cls is not None and getattr(cls, "_tc", None) is not None and \
            cls._tc._kind == tc._kind and cls._tc._member_names == tc._member_names:
        tc._pyclass = cls
        return cls
    k = tc._kind
    if k in (K.tk_struct, K.tk_except):
        cls = make_struct_class(tc)
    elif k == K.tk_enum:
        cls = make_enum_class(tc)
    elif k == K.tk_union:
        cls = make_union_class(tc)
    elif k in (K.tk_value, K.tk_event):
        cls = make_value_class(tc)
    else:
        raise TypeError(f"no value class for {tc!r}")
    # Not registered: ids decoded from a peer must not grow a global table.
    # The TypeCode caches its class instead.
    tc._pyclass = cls
    return cls
