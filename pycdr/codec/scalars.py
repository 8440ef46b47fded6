"""Plan nodes of the scalar types (numbers, boolean, octet, char, wchar,
strings, long double, fixed, enum, null) and the base class of every plan node.

They are the leaves of every plan (:mod:`pycdr.codec.plan` builds the rest on them),
and they sit below TypeCode marshaling: :mod:`pycdr.codec.tcmarshal` reads and writes
a union's labels with its discriminator's node (:func:`scalar_plan`), the same
node :func:`pycdr.codec.plan.plan_for` gives for that TypeCode.
"""

from __future__ import annotations

import array
from decimal import Decimal, InvalidOperation, localcontext

from .cdr import BE, LE, CDRReader, CDRWriter
from ..errors import EncodeError, InvalidValueError, NotSupportedError
from .typecode import INTEGER_RANGES, TCKind, TypeCode, resolve
from . import values as V

K = TCKind

# --------------------------------------------------------------------------
# Primitive layout facts
# --------------------------------------------------------------------------
# kind -> (size, struct code, array typecode, Formats attribute)
_NUMERIC = {
    K.tk_short: (2, "h", "h", "short"),
    K.tk_ushort: (2, "H", "H", "ushort"),
    K.tk_long: (4, "i", "i", "long"),
    K.tk_ulong: (4, "I", "I", "ulong"),
    K.tk_longlong: (8, "q", "q", "longlong"),
    K.tk_ulonglong: (8, "Q", "Q", "ulonglong"),
    K.tk_float: (4, "f", "f", "float"),
    K.tk_double: (8, "d", "d", "double"),
}
for _k, (_size, _code, _acode, _n) in _NUMERIC.items():
    assert array.array(_acode).itemsize == _size, "platform array sizes differ from CDR"
del _k, _size, _code, _acode, _n


class Node:
    """Base of plan nodes."""
    op = "node"
    fixed_size = None      # bytes on the wire if the same for every value, else None
    align = 1              # alignment of the first primitive
    min_wire = 1           # fewest bytes a value can take (bounds counts before allocating)
    # A value type's state: a member that is (or may be) a value itself sits
    # between the chunks of the enclosing value, not inside one (pycdr.codec.valuetype).
    holds_values = False

    def read(self, r: CDRReader):  # pragma: no cover - abstract
        raise NotImplementedError

    def write(self, w: CDRWriter, value):  # pragma: no cover - abstract
        raise NotImplementedError


class NullNode(Node):
    """tk_null / tk_void: no octets."""
    op = "null"
    fixed_size = 0

    def read(self, r):
        return None

    def write(self, w, value):
        if value is not None:
            raise EncodeError(f"null/void takes None, not {type(value).__name__}")


class NumberNode(Node):
    op = "number"

    def __init__(self, kind: TCKind):
        self.kind = kind
        size, code, acode, attr = _NUMERIC[kind]
        self.size = self.fixed_size = self.align = size
        self.code = code
        self.acode = acode
        self.be = getattr(BE, attr)
        self.le = getattr(LE, attr)
        self.what = kind.name[3:]
        self.is_float = kind in (K.tk_float, K.tk_double)
        self.range = INTEGER_RANGES.get(kind)

    def read(self, r):
        return r._read(self.size, self.le if r.little else self.be, self.what)

    def write(self, w, v):
        # Anything Python treats as a number of the kind is accepted (bool is an
        # int), as struct.pack does in the sequence fast paths.
        if self.is_float:
            if type(v) is not float:
                try:
                    v = v.__float__()      # not float(v): that would parse strings
                except AttributeError:
                    raise EncodeError(f"{self.what}: expected a number, not "
                                      f"{type(v).__name__}") from None
        elif type(v) is not int:
            if not hasattr(v, "__index__"):
                raise EncodeError(f"{self.what}: expected an integer, not {type(v).__name__}")
            v = v.__index__()
        w._write(self.size, self.le if w.little else self.be, v, self.what)


class BooleanNode(Node):
    op = "boolean"
    fixed_size = 1

    def read(self, r):
        return r.read_boolean()

    def write(self, w, v):
        w.write_boolean(v)


class OctetNode(Node):
    op = "octet"
    fixed_size = 1

    def read(self, r):
        return r.read_octet()

    def write(self, w, v):
        w.write_octet(v)


class CharNode(Node):
    op = "char"
    fixed_size = 1

    def read(self, r):
        return r.read_char()

    def write(self, w, v):
        w.write_char(v)


class WCharNode(Node):
    op = "wchar"

    def read(self, r):
        return r.read_wchar()

    def write(self, w, v):
        w.write_wchar(v)


class StringNode(Node):
    op = "string"
    align = 4
    min_wire = 4

    def __init__(self, bound: int):
        self.bound = bound

    def read(self, r):
        return r.read_string(self.bound)

    def write(self, w, v):
        w.write_string(v, self.bound)


class WStringNode(StringNode):
    op = "wstring"

    def read(self, r):
        return r.read_wstring(self.bound)

    def write(self, w, v):
        w.write_wstring(v, self.bound)


class LongDoubleNode(Node):
    op = "longdouble"
    fixed_size = 16
    align = 8

    def read(self, r):
        return V.LongDouble.from_bytes(r.read_longdouble_bytes())

    def write(self, w, v):
        if isinstance(v, V.LongDouble):
            ld = v
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            ld = V.LongDouble.from_float(float(v)) if isinstance(v, float) or \
                abs(v) < 2**53 else V.LongDouble.from_fraction_or_special(v)
        elif isinstance(v, Decimal):
            ld = V.LongDouble.from_fraction_or_special(v)
        else:
            raise EncodeError(f"long double: expected a number or LongDouble, not {type(v).__name__}")
        w.write_longdouble_bytes(ld.to_bytes())


class FixedNode(Node):
    """fixed<digits,scale>: packed BCD, two digits an octet, the last half-octet
    the sign (0xC positive, 0xD negative); no alignment."""
    op = "fixed"

    def __init__(self, digits: int, scale: int):
        self.digits = digits
        self.scale = scale
        self.fixed_size = (digits + 2) // 2

    def read(self, r):
        start = r.pos
        raw = r.read_raw(self.fixed_size, "fixed")
        nibbles = []
        for b in raw:
            nibbles.append(b >> 4)
            nibbles.append(b & 15)
        sign = nibbles.pop()
        # An even digit count leaves a leading zero half-octet.
        if len(nibbles) > self.digits:
            lead = nibbles.pop(0)
            if lead:
                r.violation(InvalidValueError, "bad-fixed",
                            f"fixed<{self.digits},{self.scale}> has a non-zero pad digit", start)
        for i, d in enumerate(nibbles):
            if d > 9:
                r.violation(InvalidValueError, "bad-fixed", f"fixed digit nibble {d:#x} is not 0-9",
                            start + (i + 1) // 2)
                nibbles[i] = 0
        if sign == 0xD:
            neg = 1
        elif sign == 0xC:
            neg = 0
        else:
            # 0xF (unsigned) and 0xA/0xE occur in the wild; CORBA allows only C and D.
            r.violation(InvalidValueError, "bad-fixed-sign",
                        f"fixed sign nibble {sign:#x} is not 0xc or 0xd", start + len(raw) - 1)
            neg = 1 if sign in (0xB, 0xD) else 0
        return Decimal((neg, tuple(nibbles) or (0,), -self.scale))

    def write(self, w, v):
        if isinstance(v, (int, str)) and not isinstance(v, bool):
            try:
                v = Decimal(v)
            except InvalidOperation:
                raise EncodeError(f"fixed: {v!r} is not a number") from None
        if not isinstance(v, Decimal) or not v.is_finite():
            raise EncodeError(f"fixed<{self.digits},{self.scale}>: expected a finite Decimal, "
                              f"not {v!r}")
        try:
            # fixed has up to 31 digits; the default context holds only 28.
            with localcontext() as ctx:
                ctx.prec = 64
                q = v.quantize(Decimal(1).scaleb(-self.scale))
        except InvalidOperation:
            raise EncodeError(f"fixed<{self.digits},{self.scale}>: {v} does not fit") from None
        if q != v:
            raise EncodeError(f"fixed<{self.digits},{self.scale}>: {v} has more than "
                              f"{self.scale} fractional digits")
        sign, digits, _exp = q.as_tuple()
        digits = list(digits)
        if digits == [0]:
            digits = []
        if len(digits) > self.digits:
            raise EncodeError(f"fixed<{self.digits},{self.scale}>: {v} has too many digits")
        digits = [0] * (self.digits - len(digits)) + digits
        nibbles = digits + [0xD if sign else 0xC]
        if len(nibbles) % 2:
            nibbles.insert(0, 0)
        w.write_raw(bytes((nibbles[i] << 4) | nibbles[i + 1] for i in range(0, len(nibbles), 2)))


class EnumNode(Node):
    op = "enum"
    fixed_size = 4
    align = 4

    def __init__(self, tc: TypeCode):
        self.tc = tc
        self.cls = V.class_for(tc)
        self.items = self.cls._items
        self.count = len(self.items)
        self.by_name = {item._name: item for item in self.items}

    def read(self, r):
        start = r.pos
        n = r._read(4, r.fmt.ulong, "enum")
        if n >= self.count:
            r.violation(InvalidValueError, "enum-range",
                        f"enum {self.tc._name} value {n} out of range 0..{self.count - 1}",
                        start + ((r.origin - start) & 3))
            return n
        return self.items[n]

    def write(self, w, v):
        w._write(4, w.fmt.ulong, self.ordinal(v), "enum")

    def ordinal(self, v) -> int:
        if isinstance(v, str):
            item = self.by_name.get(v)
            if item is None:
                raise EncodeError(f"{v!r} is not an enumerator of {self.tc._name}")
            return int(item)
        if isinstance(v, V.EnumItem) and v._parent._tc is not None and \
                v._parent._tc._id != self.tc._id and v._parent._tc._id and self.tc._id:
            raise EncodeError(f"{v!r} is not an enumerator of {self.tc._name}")
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < self.count:
            raise EncodeError(f"{v!r} is not an enumerator of {self.tc._name} "
                              f"(0..{self.count - 1})")
        return int(v)


class AliasNode(Node):
    """Only used where an alias must stay visible; normally aliases compile to
    their content's node directly."""


_SIMPLE = {
    K.tk_null: NullNode, K.tk_void: NullNode, K.tk_boolean: BooleanNode,
    K.tk_octet: OctetNode, K.tk_char: CharNode, K.tk_wchar: WCharNode,
    K.tk_longdouble: LongDoubleNode,
}


def scalar_node(tc: TypeCode) -> Node | None:
    """A new node for a TypeCode of a scalar kind (not an alias), or None if
    its kind is not scalar."""
    k = tc._kind
    if k in _NUMERIC:
        return NumberNode(k)
    simple = _SIMPLE.get(k)
    if simple is not None:
        return simple()
    if k == K.tk_string:
        return StringNode(tc._length)
    if k == K.tk_wstring:
        return WStringNode(tc._length)
    if k == K.tk_fixed:
        return FixedNode(tc._digits, tc._scale)
    if k == K.tk_enum:
        return EnumNode(tc)
    return None


def scalar_plan(tc: TypeCode) -> Node:
    """The plan of a scalar TypeCode (aliases seen through), made once and
    cached on the TypeCode where pycdr.codec.plan.plan_for caches every plan, so both
    give the same node."""
    real = resolve(tc).unalias()
    node = real._plans
    if node is None:
        node = scalar_node(real)
        if node is None:
            raise NotSupportedError(f"{real._kind.name} is not a scalar type")
        real._plans = node
    return node
