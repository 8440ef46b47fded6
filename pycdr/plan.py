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
"""

from __future__ import annotations

import array
import gc
import struct
import sys
from decimal import Decimal, InvalidOperation, localcontext
from itertools import starmap
from operator import attrgetter

from . import codesets
from .cdr import BE, LE, CDRReader, CDRWriter
from .errors import (BoundExceededError, CDRError, DecodeError, EncodeError,
                     InvalidValueError, NotSupportedError, RecursionLimitError,
                     TruncatedError)
from .typecode import (DEFAULT, INTEGER_RANGES, TCKind, TypeCode,
                       RecursiveTypeCode, resolve)
from . import values as V

K = TCKind
MAX_DEPTH = 200           # nesting of recursive types / anys / values in one decode
# Sequences of at least this many elements that are containers (structs, unions,
# lists...) are decoded with the cyclic GC paused (SequenceNode.read; the C path
# reads this too): see SequenceNode._read_elements_gc_paused.
GC_PAUSE_MIN = 64
# Plan ops whose values the cyclic GC does not track.
_ATOMIC_OPS = frozenset({"null", "number", "boolean", "octet", "char", "wchar", "string",
                         "wstring", "enum", "fixed", "octet_seq", "char_seq"})
_NATIVE_LITTLE = sys.byteorder == "little"


class _FallBack(Exception):
    """Internal: the fast path met something only the slow path may judge."""


def _fallback(*_args):
    raise _FallBack


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


# --------------------------------------------------------------------------
# Fixed-size flattening (structs, arrays of fixed-size types)
# --------------------------------------------------------------------------
class _Flat:
    """The flat layout of a fixed-size type: a list of slots
    (struct code, size, align) and expression builders for decode and encode."""

    def __init__(self):
        self.slots = []        # (code, size, align)
        self.max_align = 1
        self.env = {}          # names used by generated code
        self.needs_latin1 = False

    def add(self, code, size, align):
        self.slots.append((code, size, align))
        self.max_align = max(self.max_align, align)
        return len(self.slots) - 1

    def name(self, obj, prefix):
        key = f"{prefix}{len(self.env)}"
        self.env[key] = obj
        return key


def _flatten(tc: TypeCode, flat: _Flat, src: str, depth: int = 0):
    """Add tc's slots; return (decode expression over tuple t, list of encode
    expressions over source expression src). None if tc is not flattenable."""
    tc = resolve(tc).unalias()
    k = tc._kind
    if depth > 8:
        return None
    if k in _NUMERIC:
        size, code, _a, _n = _NUMERIC[k]
        i = flat.add(code, size, size)
        if k in (K.tk_float, K.tk_double):
            return f"t[{i}]", [f"_float({src})"]
        return f"t[{i}]", [f"_int({src})"]
    if k == K.tk_octet:
        i = flat.add("B", 1, 1)
        return f"t[{i}]", [f"_int({src})"]
    if k == K.tk_boolean:
        i = flat.add("B", 1, 1)
        return f"(t[{i}] == 1 if t[{i}] < 2 else _fallback())", [f"_benc({src})"]
    if k == K.tk_char:
        flat.needs_latin1 = True
        i = flat.add("B", 1, 1)
        return f"_latin1[t[{i}]]", [f"_ord({src})"]
    if k == K.tk_enum:
        node = EnumNode(tc)
        items = flat.name(node.items, "items")
        enc = flat.name(node.ordinal, "ord")
        i = flat.add("I", 4, 4)
        return (f"({items}[t[{i}]] if t[{i}] < {node.count} else _fallback())",
                [f"{enc}({src})"])
    if k == K.tk_array:
        content = resolve(tc._content).unalias()
        n = tc._length
        if content._kind in (K.tk_octet, K.tk_char):
            i = flat.add(f"{n}s", n, 1)
            lname = flat.name(n, "n")
            if content._kind == K.tk_char:
                flat.needs_latin1 = True
                return f"t[{i}].decode('latin-1')", [f"_chars({src}, {lname})"]
            return f"t[{i}]", [f"_octets({src}, {lname})"]
        if n > 64:
            return None
        exprs, encs = [], []
        tmp = f"_a{depth}"
        for j in range(n):
            sub = _flatten(content, flat, f"{tmp}[{j}]", depth + 1)
            if sub is None:
                return None
            exprs.append(sub[0])
            encs.extend(sub[1])
        lname = flat.name(n, "n")
        # Bind the array once: (lambda _a: (...))(_seq(src, n)) would cost a call;
        # instead each element indexes a checked list built by _seq.
        encs = [e.replace(f"{tmp}[", f"_seq({src}, {lname})[") for e in encs]
        return "[" + ", ".join(exprs) + "]", encs
    if k == K.tk_struct:
        cls = V.class_for(tc)
        cname = flat.name(cls, "C")
        exprs, encs = [], []
        for attr, mtype in zip(V.field_names(tc._member_names), tc._member_types):
            sub = _flatten(mtype, flat, f"{src}.{attr}", depth + 1)
            if sub is None:
                return None
            exprs.append(sub[0])
            encs.extend(sub[1])
        return f"{cname}(" + ", ".join(exprs) + ")", encs
    return None


def _ord(c):
    if type(c) is str and len(c) == 1:
        o = ord(c)
        if o < 256:
            return o
    raise _FallBack


def _benc(v):
    if v is True:
        return 1
    if v is False:
        return 0
    raise _FallBack


def _int(v):
    if type(v) is int:
        return v
    raise _FallBack


def _float(v):
    if type(v) is float:
        return v
    if type(v) is int:
        return float(v)
    raise _FallBack


def _octets(v, n):
    if type(v) is bytes and len(v) == n:
        return v
    raise _FallBack


def _chars(v, n):
    if type(v) is str and len(v) == n and v.isascii():
        return v.encode("ascii")
    raise _FallBack


def _seq(v, n):
    if type(v) is list and len(v) == n:
        return v
    raise _FallBack


# ISO 8859-1 characters by code: an index, cheaper than a call of chr().
_LATIN1 = tuple(map(chr, range(256)))
_GEN_ENV = {"_new": object.__new__, "_latin1": _LATIN1, "_ord": _ord, "_benc": _benc,
            "_int": _int, "_float": _float, "_octets": _octets, "_chars": _chars, "_seq": _seq,
            "_fallback": _fallback}


def _made_directly(cls) -> bool:
    """Whether instances of struct class ``cls`` may be made without calling it:
    a plain class whose __init__ only sets the members (Struct's, or the one
    make_struct_class generates) -- the rule the C path follows too."""
    init = cls.__init__
    code = getattr(init, "__code__", None)
    return (type(cls) is type and issubclass(cls, V.Struct) and cls.__new__ is object.__new__
            and cls.__setattr__ is object.__setattr__
            and (init is V.Struct.__init__ or
                 (code is not None and code.co_varnames[:1] == ("_pycdr_obj",))))


def _flatten_struct_directly(tc: TypeCode, flat: _Flat):
    """_flatten of a top-level struct whose instances are made directly: the
    decoder is statements setting each member on a new instance, which saves
    the call of the class and its __init__ per element (the "specialize"
    principle again; nested structs stay expressions)."""
    cls = V.class_for(tc)
    cname = flat.name(cls, "C")
    statements, encs = [f"_o = _new({cname})"], []
    for attr, mtype in zip(V.field_names(tc._member_names), tc._member_types):
        sub = _flatten(mtype, flat, f"v.{attr}", 1)
        if sub is None:
            return None
        statements.append(f"_o.{attr} = {sub[0]}")
        encs.extend(sub[1])
    return (statements, "_o"), encs


class FlatCodec:
    """One fixed-size type, compiled: a converter from the unpacked tuple to the
    value, a flattener from the value to the pack arguments, and the Struct for
    each (byte order, starting phase)."""

    def __init__(self, tc: TypeCode):
        flat = _Flat()
        top = resolve(tc).unalias()
        if top._kind == K.tk_struct and _made_directly(V.class_for(top)):
            res = _flatten_struct_directly(top, flat)
        else:
            res = _flatten(tc, flat, "v")
        if res is None:
            raise ValueError("not flat")
        decoder, enc_exprs = res
        if not flat.slots:
            raise ValueError("not flat")   # no members (a decoded TypeCode may have none)
        self.slots = flat.slots
        self.max_align = flat.max_align
        self.needs_latin1 = flat.needs_latin1
        env = dict(_GEN_ENV)
        env.update(flat.env)
        # The decoder is statements and the value's expression over the tuple t:
        # convert makes one value, convert_all a list of them from an iterable
        # of tuples, in a loop of its own rather than a call per element.
        statements, result = decoder if isinstance(decoder, tuple) else ([], decoder)
        code = "\n".join([
            "def convert(t):",
            *(f"    {line}" for line in statements),
            f"    return {result}",
            "def convert_all(rows):",
            "    out = []",
            "    append = out.append",
            "    for t in rows:",
            *(f"        {line}" for line in statements),
            f"        append({result})",
            "    return out",
            "def flatten(v):",
            f"    return ({', '.join(enc_exprs)},)",
            ""])
        exec(compile(code, f"<pycdr plan {describe_short(tc)}>", "exec"), env)
        self.convert = env["convert"]
        self.convert_all = env["convert_all"]
        self.flatten = env["flatten"]
        self._structs = {}
        self._offsets = {}

    def offsets_at(self, phase: int) -> tuple[tuple[int, ...], int]:
        """Where each slot starts, counted from the value's first octet, when the
        value starts at ``phase`` (offset mod 8), and the value's size."""
        layout = self._offsets.get(phase)
        if layout is None:
            offsets = []
            pos = phase
            for _code, size, align in self.slots:
                pos += (-pos) & (align - 1)
                offsets.append(pos - phase)
                pos += size
            layout = self._offsets[phase] = (tuple(offsets), pos - phase)
        return layout

    def struct_at(self, little: bool, phase: int) -> struct.Struct:
        """The Struct for this layout starting at ``phase`` (offset mod 8)."""
        key = (little, phase)
        st = self._structs.get(key)
        if st is None:
            fmt = ["<" if little else ">"]
            pos = 0
            for (code, size, _align), offset in zip(self.slots, self.offsets_at(phase)[0]):
                if offset > pos:
                    fmt.append(f"{offset - pos}x")
                fmt.append(code)
                pos = offset + size
            st = struct.Struct("".join(fmt))
            self._structs[key] = st
        return st


def describe_short(tc):
    from .typecode import describe
    return describe(tc)


# --------------------------------------------------------------------------
# Constructed types
# --------------------------------------------------------------------------
class StructNode(Node):
    op = "struct"

    def __init__(self, tc: TypeCode):
        self.tc = tc
        self.cls = None
        self.members = ()          # (python name, idl name, node)
        self.flat = None
        self.getter = None
        self.names = ()
        self.is_exception = tc._kind == K.tk_except

    def finish(self, members):
        self.members = tuple(members)
        self.names = tuple(m[0] for m in self.members)
        self.min_wire = max(sum(m[2].fixed_size or m[2].min_wire for m in self.members), 1) + \
            (5 if self.is_exception else 0)
        self.cls = V.class_for(self.tc)
        if self.names:
            self.getter = attrgetter(*self.names) if len(self.names) > 1 else \
                (lambda o, _g=attrgetter(self.names[0]): (_g(o),))
        if not self.is_exception:
            try:
                self.flat = FlatCodec(self.tc)
            except ValueError:
                self.flat = None
            if self.flat is not None:
                self.fixed_size = sum(s[1] for s in self.flat.slots)  # unpadded size

    def read(self, r):
        flat = self.flat
        if flat is not None and not r.lenient and (not flat.needs_latin1 or
                                                   r.tcs_c == codesets.ISO_8859_1):
            pos = r.pos
            st = flat.struct_at(r.little, (pos - r.origin) & 7)
            if pos + st.size <= r.end:
                try:
                    value = flat.convert(st.unpack_from(r.buf, pos))
                except _FallBack:
                    pass
                else:
                    r.pos = pos + st.size
                    return value
        return self.read_members(r)

    def read_members(self, r):
        cls = self.cls
        obj = cls.__new__(cls)
        if self.is_exception:
            # An exception is its repository id, then its members (CORBA 3.x
            # Part 2, 9.3.2.7), as in a USER_EXCEPTION reply body.
            Exception.__init__(obj)
            start = r.pos
            rid = r.read_string()
            if rid != self.tc._id and self.tc._id:
                r.violation(InvalidValueError, "exception-id",
                            f"exception id {rid!r} where {self.tc._id!r} was expected", start)
        for pyname, idlname, node in self.members:
            try:
                setattr(obj, pyname, node.read(r))
            except CDRError as e:
                e.add_path("." + idlname)
                raise
        return obj

    def write(self, w, v):
        flat = self.flat
        if flat is not None and not w.fragmenting and (not flat.needs_latin1 or
                                                       w.tcs_c == codesets.ISO_8859_1):
            try:
                args = flat.flatten(v)
            except (_FallBack, AttributeError, TypeError, IndexError):
                pass
            else:
                st = flat.struct_at(w.little, (len(w.buf) - w.origin) & 7)
                try:
                    w.buf += st.pack(*args)
                    return
                except struct.error:
                    pass
        self.write_members(w, v)

    def write_members(self, w, v):
        if self.is_exception:
            w.write_string(self.tc._id)
        if isinstance(v, dict):
            get = v.__getitem__
            missing = [m[1] for m in self.members if m[0] not in v and m[1] not in v]
            if missing:
                raise EncodeError(f"{self.tc._name}: missing members {missing}")
            # Keys are IDL names or attribute names (py_name), which differ for keywords
            # and folded names -- and one member's attribute may be another's IDL name
            # (x\u00b2 folds to x2): a dict with every IDL name is read by IDL name, one
            # with every attribute by attribute, a mix member by member, IDL name first.
            by_attr = not all(m[1] in v for m in self.members) and \
                all(m[0] in v for m in self.members)
            for pyname, idlname, node in self.members:
                try:
                    node.write(w, get(pyname) if by_attr or idlname not in v else get(idlname))
                except CDRError as e:
                    e.add_path("." + idlname)
                    raise
            return
        for pyname, idlname, node in self.members:
            try:
                value = getattr(v, pyname)
            except AttributeError:
                raise EncodeError(f"{self.tc._name or 'struct'} value {type(v).__name__} has "
                                  f"no member {idlname!r}") from None
            try:
                node.write(w, value)
            except CDRError as e:
                e.add_path("." + idlname)
                raise


class UnionNode(Node):
    op = "union"

    def __init__(self, tc: TypeCode):
        self.tc = tc

    def finish(self, disc_node, branches):
        """branches: list of (label, idl name, node) in TypeCode order."""
        self.disc = disc_node
        self.cls = V.class_for(self.tc)
        self.by_label = {}
        self.default = None
        for label, name, node in branches:
            if label is DEFAULT:
                self.default = (name, node)
            else:
                self.by_label[label] = (name, node)
        self.disc_is_enum = isinstance(disc_node, EnumNode)

    def read(self, r):
        start = r.pos
        try:
            d = self.disc.read(r)
        except CDRError as e:
            e.add_path("._d")
            raise
        branch = self.by_label.get(d, self.default)
        if self.disc_is_enum and not isinstance(d, V.EnumItem):
            branch = None  # lenient: an out-of-range discriminator selects nothing
            r.violation(InvalidValueError, "union-discriminator",
                        f"union {self.tc._name} discriminator {d} is not an enumerator", start)
        obj = self.cls.__new__(self.cls)
        obj._d = d
        if branch is None:
            obj._v = None
            return obj
        name, node = branch
        try:
            obj._v = node.read(r)
        except CDRError as e:
            e.add_path("." + name)
            raise
        return obj

    def write(self, w, v):
        if isinstance(v, V.Union):
            d, value = v._d, v._v
        elif isinstance(v, tuple) and len(v) == 2:
            d, value = v
        else:
            raise EncodeError(f"union {self.tc._name}: expected a union instance or a "
                              f"(discriminator, value) pair, not {type(v).__name__}")
        if self.disc_is_enum:
            d = self.disc.items[self.disc.ordinal(d)]
        try:
            self.disc.write(w, d)
        except CDRError as e:
            e.add_path("._d")
            raise
        try:
            branch = self.by_label.get(d, self.default)
        except TypeError:
            raise EncodeError(f"union {self.tc._name}: bad discriminator {d!r}") from None
        if branch is None:
            if value is not None:
                raise EncodeError(f"union {self.tc._name}: discriminator {d!r} selects no "
                                  "member, so the value must be None")
            return
        name, node = branch
        try:
            node.write(w, value)
        except CDRError as e:
            e.add_path("." + name)
            raise


# --------------------------------------------------------------------------
# Column writing: a sequence of fixed-size structs, member by member
# --------------------------------------------------------------------------
# A long sequence of flat structs is written one member (column) at a time:
# each column is gathered by a comprehension, checked and packed with one
# C-level call, then copied into every element's place in a zero-filled block
# with strided memoryview assignments: no Python call per element.  Each
# packer takes exactly what the member's node takes and gives the same octets,
# or raises (_FallBack, TypeError, ValueError, ...) so that the element path
# writes or rejects the sequence as before; it must never accept a value the
# member's node would reject.
# Measured against _element_packer (which writes anything shorter or wider):
# columns win only for long sequences of narrow structs, their per-column cost
# growing with the members where the packer's per-element cost barely does
# (sequence<CharLongLong> of 2048: 86 against 140 ns an element; of BinStruct,
# 6 members: 292 against 266).
_COLUMNS_MIN = 128
_COLUMNS_MAX_MEMBERS = 3
_FLOAT_TYPES = frozenset((float, int))
_INT_TYPE = frozenset((int,))
_BOOLEAN_TYPES = frozenset((bool, int))
_OCTET_ARRAY_TYPES = frozenset((bytes, bytearray))
# Copy units: the widest one dividing a member's size, offset and the stride.
_COPY_UNITS = ((8, "Q"), (4, "I"), (2, "H"), (1, "B"))


def _pack_number_column(col, little, node):
    # struct converts as NumberNode.write does (__index__ for integers, range
    # checks), except that for float/double it also takes objects having only
    # __index__ and reads float subclasses without their __float__: only float
    # and int go that way.  (An int subclass is packed by its value, where
    # NumberNode calls its __index__: they differ only if __index__ is overridden
    # to disagree with the value, which operator.index ignores too.)
    if node.is_float and not set(map(type, col)) <= _FLOAT_TYPES:
        raise _FallBack
    return struct.pack(f"{'<' if little else '>'}{len(col)}{node.code}", *col)


def _pack_octet_column(col, little, node):
    # bytes() would take True and __index__ objects; write_octet does not.
    if not set(map(type, col)) <= _INT_TYPE:
        raise _FallBack
    return bytes(col)            # ValueError outside 0..255


def _pack_boolean_column(col, little, node):
    if not set(map(type, col)) <= _BOOLEAN_TYPES:
        raise _FallBack
    data = bytes(col)
    if data.translate(None, b"\0\1"):
        raise _FallBack          # an integer other than 0 and 1
    return data


def _pack_char_column(col, little, node):
    text = "".join(col)          # TypeError unless every value is a str
    # n strings, none empty, n characters in all: every one is one character.
    if len(text) != len(col) or "" in col:
        raise _FallBack
    return text.encode("latin-1")   # the caller checked the char code set


def _pack_octet_array_column(col, little, node):
    # (OctetSeqNode takes more types; those take the element path.)
    if not set(map(type, col)) <= _OCTET_ARRAY_TYPES or set(map(len, col)) != {node.bound}:
        raise _FallBack
    return b"".join(col)


def _pack_char_array_column(col, little, node):
    text = "".join(col)
    if set(map(len, col)) != {node.bound}:
        raise _FallBack
    return text.encode("latin-1")


def _column_getter(names):
    """A function from a list of struct values to one list per member (names:
    the members' Python names).  Comprehensions, not attrgetter and zip: the
    interpreter's specialised slot reads make them about twice as fast."""
    lists = ", ".join(f"[x.{name} for x in values]" for name in names)
    code = f"def get_columns(values):\n    return ({lists},)\n"
    env = {}
    exec(compile(code, "<pycdr plan columns>", "exec"), env)
    return env["get_columns"]


def _copy_plan(offsets, sizes, stride):
    """How _scatter copies each column into elements ``stride`` octets apart whose
    members start at ``offsets`` and take ``sizes`` octets: per column, the copy
    unit's memoryview format, the unit index of the member in the first
    element, the units from one element to the next and the units per member."""
    plan = []
    for offset, size in zip(offsets, sizes):
        for unit, fmt in _COPY_UNITS:
            if not (size | offset | stride) & (unit - 1):
                break
        plan.append((fmt, offset // unit, stride // unit, size // unit))
    return tuple(plan)


def _scatter(buf: bytearray, start: int, length: int, columns, copy_plan) -> None:
    """Copy packed columns (bytes, one member of every element after another)
    into the elements in buf[start:start + length], as copy_plan says."""
    views = {}
    with memoryview(buf) as whole, whole[start:start + length] as block:
        try:
            for data, (fmt, first, step, units) in zip(columns, copy_plan):
                dst = views.get(fmt)
                if dst is None:
                    dst = views[fmt] = block.cast(fmt)
                src = memoryview(data).cast(fmt) if fmt != "B" else data
                if units == 1:
                    dst[first::step] = src
                else:
                    for j in range(units):
                        dst[first + j::step] = src[j::units]
        finally:
            # No view may outlive this call: the writer's buffer must stay resizable.
            for view in views.values():
                view.release()


# --------------------------------------------------------------------------
# Element packing: a sequence of fixed-size structs, one Struct call each
# --------------------------------------------------------------------------
# FlatCodec.flatten checks each member with a helper call (_int, _ord, ...);
# for a struct whose members are all of the kinds below, a loop generated once
# per plan makes the same type and length checks inline and packs each element
# with one call.  It takes exactly the types those helpers take (so struct.pack
# gets what the flat path gives it: no bool or __index__ object as an octet, no
# int or float subclass, no bytes as a char, no wrong length) and leaves ranges
# to struct.pack; a char array may also hold non-ASCII Latin-1 text, which the
# general path writes to the same octets.  Whatever is refused or raises, the
# caller hands to the flat and general paths before anything is written, so
# every error is theirs, unchanged.
_PACK_ELEMENTS = True     # False: never (the tests compare with the general path)


def _element_member(node: Node, var: str):
    """(refusal, argument) for a struct member whose value is in variable ``var``:
    a condition true when the general path must judge the value, and the
    expression struct.pack takes; None for kinds the packer does not take."""
    kind = type(node)
    if kind is NumberNode:
        if node.is_float:
            return f"type({var}) is not float and type({var}) is not int", var   # as _float
        return f"type({var}) is not int", var                                     # as _int
    if kind is OctetNode:
        return f"type({var}) is not int", var
    if kind is BooleanNode:
        return f"type({var}) is not bool", var                                    # as _benc
    if kind is CharNode:
        # as _ord: ord() refuses other lengths, struct ("B") codes over 255
        return f"type({var}) is not str", f"ord({var})"
    if kind is OctetSeqNode and node.is_array:
        return f"type({var}) is not bytes or len({var}) != {node.bound}", var     # as _octets
    if kind is CharSeqNode and node.is_array:
        return (f"type({var}) is not str or len({var}) != {node.bound}",
                f"{var}.encode('latin-1')")
    return None


def _element_packer(elem: StructNode):
    """For a struct whose members the packer all takes, a function
    ``pack_elements(values, pack, next_pack)`` giving a list of one packed
    bytes per value (the first packed by ``pack``, the others by ``next_pack``:
    the Structs of their phases) or raising when any value needs the general
    path; else None."""
    lines, arguments = [], []
    for i, (pyname, _idl, node) in enumerate(elem.members):
        member = _element_member(node, f"m{i}")
        if member is None:
            return None
        refusal, argument = member
        lines += [f"        m{i} = v.{pyname}",
                  f"        if {refusal}:",
                  "            raise _FallBack"]
        arguments.append(argument)
    code = "\n".join([
        "def pack_elements(values, pack, next_pack):",
        "    out = []",
        "    append = out.append",
        "    for v in values:",
        *lines,
        f"        append(pack({', '.join(arguments)}))",
        "        pack = next_pack",
        "    return out",
        ""])
    env = {"_FallBack": _FallBack}
    exec(compile(code, "<pycdr plan elements>", "exec"), env)
    return env["pack_elements"]


# --------------------------------------------------------------------------
# Column reading: a sequence of fixed-size structs, member by member
# --------------------------------------------------------------------------
# The mirror of column writing, for the Python path: each member's values are
# taken out of every element at once (a strided memoryview of the input, or one
# Struct per column run by iter_unpack), and a loop generated for the struct
# makes the instances from the columns.  The row path (iter_unpack of whole
# elements into FlatCodec.convert_all's loop) makes a tuple per element and
# converts its members one by one (a char by a table lookup); this loop takes
# values ready made (a char column is one latin-1 decode).  Each reader gives
# exactly the values the row converter gives, or raises _FallBack where it
# would (a boolean other than 0 or 1), and the row and member paths then judge
# the sequence as before.
# Each column costs a fixed 0.3-1 us, so columns win only for long sequences of
# narrow structs.  Measured against the row path: sequence<CharLongLong> of
# 2048, 265 against 326 ns an element (break-even near 64); BinStruct's 6
# members gain under 10 % from 1024 and lose below 256; 13 members lose at
# every length.
_COLUMNS_READ_MIN = 64
_COLUMNS_READ_MAX_MEMBERS = 3
_BOOLEAN_VALUES = (False, True)


def _read_number_column(view, start, count, stride, offset, node, little):
    size = node.size
    first = start + offset
    # (stride is a multiple of the struct's alignment, so of size: a cast
    # view strided by whole items reaches every element's member)
    column = view[first:first + stride * (count - 1) + size].cast(node.code)[::stride // size]
    if little == _NATIVE_LITTLE:
        return column.tolist()
    values = array.array(node.acode, column.tobytes())
    values.byteswap()
    return values.tolist()


def _read_octet_column(view, start, count, stride, offset, node, little):
    first = start + offset
    return view[first:first + stride * (count - 1) + 1:stride].tolist()


def _read_boolean_column(view, start, count, stride, offset, node, little):
    first = start + offset
    octets = view[first:first + stride * (count - 1) + 1:stride].tolist()
    try:
        return list(map(_BOOLEAN_VALUES.__getitem__, octets))
    except IndexError:
        raise _FallBack from None      # 2..255: the member path reports it


def _read_char_column(view, start, count, stride, offset, node, little):
    first = start + offset
    # One str: the generated loop takes its characters one by one.  (The
    # caller checked the char code set is ISO 8859-1.)
    return str(bytes(view[first:first + stride * (count - 1) + 1:stride]), "latin-1")


def _array_column_format(stride, offset, node):
    return f"{offset}x{node.bound}s{stride - offset - node.bound}x"


def _read_octet_array_column(view, start, count, stride, offset, node, little):
    rows = struct.iter_unpack(_array_column_format(stride, offset, node),
                              view[start:start + stride * count])
    return [octets for octets, in rows]


def _read_char_array_column(view, start, count, stride, offset, node, little):
    rows = struct.iter_unpack(_array_column_format(stride, offset, node),
                              view[start:start + stride * count])
    return [str(octets, "latin-1") for octets, in rows]


def _column_functions(node: Node):
    """(column packer, column reader) of a struct member's node, or None if it
    has none: the member kinds column writing and column reading take."""
    kind = type(node)
    if kind is NumberNode:
        return _pack_number_column, _read_number_column
    if kind is OctetNode:
        return _pack_octet_column, _read_octet_column
    if kind is BooleanNode:
        return _pack_boolean_column, _read_boolean_column
    if kind is CharNode:
        return _pack_char_column, _read_char_column
    if kind is OctetSeqNode and node.is_array:
        return _pack_octet_array_column, _read_octet_array_column
    if kind is CharSeqNode and node.is_array:
        return _pack_char_array_column, _read_char_array_column
    return None


def _elements_builder(elem: StructNode):
    """A function from one list per member to the list of struct values, made as
    the struct's flat converter makes them: new instances whose slots are set,
    when the class allows it (_made_directly), else calls of the class."""
    cls = elem.cls
    names = [f"c{i}" for i in range(len(elem.members))]
    if _made_directly(cls):
        lines = ["def build_elements(columns):",
                 "    out = []",
                 "    append = out.append",
                 f"    for {', '.join(names)}, in zip(*columns):",
                 "        o = _new(C)",
                 *(f"        o.{pyname} = {name}"
                   for (pyname, _idl, _node), name in zip(elem.members, names)),
                 "        append(o)",
                 "    return out",
                 ""]
    else:
        lines = ["def build_elements(columns):",
                 "    return list(_starmap(C, zip(*columns)))",
                 ""]
    env = {"_new": object.__new__, "C": cls, "_starmap": starmap}
    exec(compile("\n".join(lines), "<pycdr plan elements>", "exec"), env)
    return env["build_elements"]

class SequenceNode(Node):
    """sequence<T> (``bound`` 0 = unbounded) or T[length] (``is_array``)."""
    op = "sequence"

    def __init__(self, tc: TypeCode, is_array: bool):
        self.tc = tc
        self.is_array = is_array
        self.bound = tc._length
        self.align = 4
        self.min_wire = 4

    def finish(self, elem: Node):
        self.elem = elem
        self.strings = type(elem) is StringNode
        # Never below 1: a count of zero-size elements must not allocate 4 billion.
        self.min_size = max(elem.fixed_size or elem.min_wire, 1)
        if isinstance(elem, StructNode) and elem.flat is not None:
            self.flat = elem.flat
        else:
            self.flat = None
        # (packer, member node) per member when every member has a column
        # packer (one flat slot each), else None: see _write_columns.
        # Likewise (reader, member node) per member, and the builder of the
        # values: see _read_columns.
        self.column_packers = self.column_readers = None
        if self.flat is not None and len(elem.members) == len(self.flat.slots):
            functions = [(_column_functions(node), node) for _py, _idl, node in elem.members]
            if all(pair is not None for pair, _node in functions):
                self.column_packers = tuple((pair[0], node) for pair, node in functions)
                self.get_columns = _column_getter(elem.names)
                self.column_layouts = {}     # first element's phase -> see _column_layout
                self.column_readers = tuple((pair[1], node) for pair, node in functions)
                self.build_elements = _elements_builder(elem)
        # See _element_packer; needs one flat slot per member, as the columns do.
        self.pack_elements = None
        if self.flat is not None and len(elem.members) == len(self.flat.slots):
            self.pack_elements = _element_packer(elem)
            self.element_structs = {}    # (little, first element's phase) -> see _write_packed
        if self.is_array:
            self.align = elem.align
            self.min_wire = self.min_size * self.bound
            if elem.fixed_size is not None and not isinstance(elem, StructNode):
                self.fixed_size = elem.fixed_size * self.bound

    def _count(self, r):
        if self.is_array:
            return self.bound
        start = r.pos
        n = r.read_count(self.min_size, "sequence")
        if self.bound and n > self.bound:
            r.violation(BoundExceededError, "bound-exceeded",
                        f"sequence length {n} exceeds bound {self.bound}", start)
        return n

    def read(self, r):
        n = self._count(r)
        if n == 0:
            return []
        if n >= GC_PAUSE_MIN and self.elem.op not in _ATOMIC_OPS and gc.isenabled():
            return self._read_elements_gc_paused(r, n)
        return self._read_elements(r, n)

    def _read_elements_gc_paused(self, r, n):
        """Many new containers, all alive until the sequence is: the cyclic GC
        would run several times meanwhile and promote them to older generations,
        whose full collections scan the whole heap.  Decoding makes no cycles, so
        the GC is paused while the elements are built (as by the C path)."""
        gc.disable()
        try:
            return self._read_elements(r, n)
        finally:
            gc.enable()

    def _read_elements(self, r, n):
        if self.strings and not r.lenient and r.tcs_c == codesets.ISO_8859_1:
            out = self._read_strings(r, n)
            if out is not None:
                return out
        flat = self.flat
        if flat is not None and not r.lenient and (not flat.needs_latin1 or
                                                   r.tcs_c == codesets.ISO_8859_1):
            out = self._read_flat(r, n, flat)
            if out is not None:
                return out
        return self._read_each(r, n)

    def _read_each(self, r, n):
        read = self.elem.read
        out = []
        append = out.append
        if r.depth > MAX_DEPTH:
            raise RecursionLimitError("values nested too deeply", r.pos)
        r.depth += 1
        i = 0
        try:
            for i in range(n):
                append(read(r))
        except CDRError as e:
            e.add_path(f"[{i}]")
            raise
        finally:
            r.depth -= 1
        return out

    def _read_strings(self, r, n):
        """sequence<string> in one loop, without a call per field. Anything odd
        returns None and the general path decodes (and reports) from the start."""
        buf, pos, end, origin = r.buf, r.pos, r.end, r.origin
        unpack = (LE if r.little else BE).ulong.unpack_from
        bound = self.elem.bound
        out = []
        append = out.append
        for _ in range(n):
            pos += (origin - pos) & 3
            if pos + 4 > end:
                return None
            length = unpack(buf, pos)[0]
            pos += 4
            stop = pos + length
            if length == 0 or stop > end or buf[stop - 1] != 0 or (bound and length - 1 > bound):
                return None
            append(str(buf[pos:stop - 1], "latin-1"))
            pos = stop
        r.pos = pos
        return out

    def _read_flat(self, r, n, flat):
        """Decode n fixed-size structs in (at most) two passes: the first element
        at the phase it starts at, the rest with iter_unpack once their phase is
        steady (element size a multiple of the struct's alignment)."""
        pos = r.pos
        buf = r.buf
        st0 = flat.struct_at(r.little, (pos - r.origin) & 7)
        st = flat.struct_at(r.little, (pos + st0.size - r.origin) & 7)
        if n > 1 and st.size % flat.max_align:
            return None     # the layout keeps changing: member-by-member path
        end = pos + st0.size + st.size * (n - 1)
        if end > r.end:
            return None     # the member-by-member path reports where it ends
        convert = flat.convert
        try:
            out = [convert(st0.unpack_from(buf, pos))]
            if n > 1:
                start = pos + st0.size
                rest = None
                if n - 1 >= _COLUMNS_READ_MIN and self.column_readers is not None and \
                        len(self.column_readers) <= _COLUMNS_READ_MAX_MEMBERS:
                    rest = self._read_columns(r, start, n - 1, st.size, flat)
                if rest is None:
                    rest = flat.convert_all(st.iter_unpack(buf[start:end]))
                out += rest
        except _FallBack:
            return None
        r.pos = end
        return out

    def _read_columns(self, r, start, count, stride, flat):
        """The ``count`` elements at ``start``, ``stride`` octets apart, read a
        member (column) at a time; None when a member's offsets differ between
        elements.  Raises _FallBack as the row converter would."""
        offsets, size = flat.offsets_at((start - r.origin) & 7)
        if size != stride:
            return None
        little = r.little
        with memoryview(r.buf) as view:
            columns = [reader(view, start, count, stride, offset, node, little)
                       for (reader, node), offset in zip(self.column_readers, offsets)]
        return self.build_elements(columns)

    def write(self, w, v):
        if not isinstance(v, (list, tuple)):
            raise EncodeError(f"sequence: expected a list, not {type(v).__name__}")
        n = len(v)
        if self.is_array:
            if n != self.bound:
                raise EncodeError(f"array needs exactly {self.bound} elements, not {n}")
        else:
            if self.bound and n > self.bound:
                raise EncodeError(f"sequence of {n} exceeds bound {self.bound}")
            w.write_ulong(n)
        flat = self.flat
        if w.fragmenting:
            flat = None                  # primitive by primitive: the stream may be cut
        if flat is not None and n and (not flat.needs_latin1 or w.tcs_c == codesets.ISO_8859_1):
            if n >= _COLUMNS_MIN and self.column_packers is not None and \
                    len(self.column_packers) <= _COLUMNS_MAX_MEMBERS and \
                    self._write_columns(w, v, flat):
                return
            if self.pack_elements is not None and _PACK_ELEMENTS and \
                    self._write_packed(w, v, flat):
                return
            pos = len(w.buf) - w.origin
            st0 = flat.struct_at(w.little, pos & 7)
            st = flat.struct_at(w.little, (pos + st0.size) & 7)
            if n == 1 or st.size % flat.max_align == 0:
                try:
                    flatten = flat.flatten
                    first = st0.pack(*flatten(v[0]))
                    rest = b"".join(starmap(st.pack, map(flatten, v[1:]))) if n > 1 else b""
                except (_FallBack, AttributeError, TypeError, IndexError, struct.error):
                    pass
                else:
                    w.buf += first
                    w.buf += rest
                    return
        if self.strings and w.tcs_c == codesets.ISO_8859_1 and not w.fragmenting \
                and self._write_strings(w, v):
            return
        write = self.elem.write
        i = 0
        try:
            for i, x in enumerate(v):
                write(w, x)
        except CDRError as e:
            e.add_path(f"[{i}]")
            raise

    def _write_packed(self, w, v, flat) -> bool:
        """Fixed-size structs one Struct call each (see _element_packer); False,
        with nothing written, when the elements after the first do not all start
        at the same phase or a value is one the general path must judge."""
        key = (w.little, (len(w.buf) - w.origin) & 7)
        structs = self.element_structs.get(key)
        if structs is None:
            first = flat.struct_at(*key)
            rest = flat.struct_at(key[0], (key[1] + first.size) & 7)
            steady = rest.size % flat.max_align == 0
            structs = self.element_structs[key] = (first.pack, rest.pack, steady)
        pack, next_pack, steady = structs
        if not steady and len(v) > 1:
            return False
        try:
            packed = self.pack_elements(v, pack, next_pack)
        except Exception:
            # Nothing is written yet: whatever it was (a value to convert,
            # refuse or report), the general path judges it.
            return False
        w.buf += b"".join(packed)
        return True

    def _column_layout(self, flat, first_phase):
        """(stride, copy plan) of the elements after a first one starting at
        ``first_phase``, or None when their layout is not the same for all."""
        key = first_phase
        if key not in self.column_layouts:
            phase = (first_phase + flat.offsets_at(first_phase)[1]) & 7
            offsets, stride = flat.offsets_at(phase)
            if stride % flat.max_align:
                layout = None        # each element starts at another phase
            else:
                layout = stride, _copy_plan(offsets, [slot[1] for slot in flat.slots], stride)
            self.column_layouts[key] = layout
        return self.column_layouts[key]

    def _write_columns(self, w, v, flat) -> bool:
        """Fixed-size structs a column at a time (see _scatter): the first element
        as a struct on its own (its phase may differ), the rest as one block.
        False, with nothing written, when the layout is not the same for every
        element or a value after the first is one the element path must write or
        reject."""
        first_phase = (len(w.buf) - w.origin) & 7
        layout = self._column_layout(flat, first_phase)
        if layout is None:
            return False
        stride, copy_plan = layout
        little = w.little
        rest = v[1:]
        try:
            columns = [packer(col, little, node) for (packer, node), col
                       in zip(self.column_packers, self.get_columns(rest))]
        except (_FallBack, AttributeError, TypeError, IndexError, ValueError,
                OverflowError, struct.error):
            return False
        buf = w.buf
        try:
            buf += flat.struct_at(little, first_phase).pack(*flat.flatten(v[0]))
        except (_FallBack, AttributeError, TypeError, IndexError, struct.error):
            # as the element path's loop writes (or rejects) it
            try:
                self.elem.write(w, v[0])
            except CDRError as e:
                e.add_path("[0]")
                raise
        start = len(buf)
        length = stride * len(rest)
        buf += bytes(length)           # padding stays zero
        _scatter(buf, start, length, columns, copy_plan)
        return True

    def _write_strings(self, w, v) -> bool:
        """sequence<string> of plain ASCII text in one loop; False (nothing
        written) for anything the general path must judge."""
        pack = (LE if w.little else BE).ulong.pack
        bound = self.elem.bound
        parts = []
        pos = len(w.buf) - w.origin
        for x in v:
            if type(x) is not str or not x.isascii() or "\0" in x or (bound and len(x) > bound):
                return False
            pad = (-pos) & 3
            if pad:
                parts.append(_ZERO_PADS[pad])
            raw = x.encode("ascii")
            parts.append(pack(len(raw) + 1))
            parts.append(raw)
            parts.append(b"\0")
            pos += pad + 5 + len(raw)
        w.buf += b"".join(parts)
        return True


_ZERO_PADS = [bytes(n) for n in range(8)]


class OctetSeqNode(SequenceNode):
    """sequence<octet> and octet[N]: bytes, no per-element work."""
    op = "octet_seq"

    def read(self, r):
        n = self._count(r)
        return r.read_raw(n, "octet sequence")

    def write(self, w, v):
        if not isinstance(v, (bytes, bytearray, memoryview)):
            if isinstance(v, (list, tuple)):
                try:
                    v = bytes(v)
                except (ValueError, TypeError):
                    raise EncodeError("octet sequence: elements must be integers 0..255") from None
            else:
                raise EncodeError(f"octet sequence: expected bytes, not {type(v).__name__}")
        n = len(v)
        if self.is_array:
            if n != self.bound:
                raise EncodeError(f"octet[{self.bound}] needs exactly {self.bound} octets, not {n}")
        else:
            if self.bound and n > self.bound:
                raise EncodeError(f"sequence<octet> of {n} exceeds bound {self.bound}")
            w.write_ulong(n)
        w.write_raw(v)


class CharSeqNode(SequenceNode):
    """sequence<char> and char[N]: str (omniORBpy's mapping)."""
    op = "char_seq"

    def read(self, r):
        n = self._count(r)
        pos = r.pos
        raw = r.read_raw(n, "char sequence")
        if r.tcs_c == codesets.ISO_8859_1:
            return raw.decode("latin-1")
        return r.decode_chars(raw, pos)

    def write(self, w, v):
        if not isinstance(v, str):
            raise EncodeError(f"char sequence: expected str, not {type(v).__name__}")
        raw = w.encode_chars(v)
        if len(raw) != len(v):
            raise EncodeError("char sequence: every char must be one octet in the char code set")
        n = len(raw)
        if self.is_array:
            if n != self.bound:
                raise EncodeError(f"char[{self.bound}] needs exactly {self.bound} chars, not {n}")
        else:
            if self.bound and n > self.bound:
                raise EncodeError(f"sequence<char> of {n} exceeds bound {self.bound}")
            w.write_ulong(n)
        w.write_raw(raw)


class NumberSeqNode(SequenceNode):
    """Sequences/arrays of short..double: one bulk copy plus a byte swap."""
    op = "number_seq"

    def finish(self, elem: NumberNode):
        super().finish(elem)
        self.size = elem.size
        self.code = elem.code
        self.acode = elem.acode
        self.what = elem.what
        self.range = elem.range
        self.is_float = elem.is_float

    def read(self, r):
        n = self._count(r)
        if n == 0:
            return []
        size = self.size
        r.align(size)
        pos = r.pos
        end = pos + n * size
        if end > r.end:
            if r.remaining >= n * size:
                # A GIOP 1.1 fragment ends inside the array (SegmentedReader):
                # its elements continue, realigned, in the next fragment.
                out = self._read_each(r, n)
                if r.context is not None and r.context.get("numeric_arrays"):
                    return array.array(self.acode, out)
                return out
            r.truncated(n * size, pos, f"sequence<{self.what}>")
        a = array.array(self.acode)
        a.frombytes(r.buf[pos:end])
        if r.little != _NATIVE_LITTLE:
            a.byteswap()
        r.pos = end
        if r.context is not None and r.context.get("numeric_arrays"):
            return a
        return a.tolist()

    def write(self, w, v):
        n = len(v) if isinstance(v, (list, tuple, array.array)) else -1
        if n < 0:
            raise EncodeError(f"sequence<{self.what}>: expected a list, not {type(v).__name__}")
        if w.fragmenting:
            # Element by element: a fragment may end between any two of them.
            return SequenceNode.write(self, w, v.tolist() if isinstance(v, array.array) else v)
        if self.is_array:
            if n != self.bound:
                raise EncodeError(f"array needs exactly {self.bound} elements, not {n}")
        else:
            if self.bound and n > self.bound:
                raise EncodeError(f"sequence of {n} exceeds bound {self.bound}")
        if n == 0:
            if not self.is_array:
                w.write_ulong(0)
            return
        if isinstance(v, array.array) and v.typecode == self.acode:
            if w.little != _NATIVE_LITTLE:
                v = array.array(self.acode, v)
                v.byteswap()
            data = v.tobytes()
        else:
            try:
                # One pack for the whole sequence: range checks and byte order in C.
                data = struct.pack(f"{'<' if w.little else '>'}{n}{self.code}", *v)
            except (struct.error, TypeError):
                return SequenceNode.write(self, w, v)   # finds the element and reports it
        if not self.is_array:
            w.write_ulong(n)
        w.align(self.size)
        w.buf += data


class BooleanSeqNode(SequenceNode):
    op = "boolean_seq"

    def read(self, r):
        n = self._count(r)
        pos = r.pos
        raw = r.read_raw(n, "boolean sequence")
        if raw and max(raw) > 1:
            for i, b in enumerate(raw):
                if b > 1:
                    r.violation(InvalidValueError, "bad-boolean",
                                f"boolean octet is {b}, not 0 or 1", pos + i)
        return [b != 0 for b in raw]

    def write(self, w, v):
        if not isinstance(v, (list, tuple)):
            raise EncodeError(f"sequence<boolean>: expected a list, not {type(v).__name__}")
        out = bytearray(len(v))
        for i, b in enumerate(v):
            if b is True or (type(b) is int and b == 1):
                out[i] = 1
            elif not (b is False or (type(b) is int and b == 0)):
                e = EncodeError(f"boolean: {b!r} is not True or False")
                e.add_path(f"[{i}]")
                raise e
        n = len(out)
        if self.is_array:
            if n != self.bound:
                raise EncodeError(f"array needs exactly {self.bound} elements, not {n}")
        else:
            if self.bound and n > self.bound:
                raise EncodeError(f"sequence of {n} exceeds bound {self.bound}")
            w.write_ulong(n)
        w.write_raw(out)


class AnyNode(Node):
    op = "any"
    min_wire = 4

    def read(self, r):
        from .tcmarshal import read_typecode
        if r.depth > MAX_DEPTH:
            raise RecursionLimitError("anys nested too deeply", r.pos)
        tc = read_typecode(r)
        r.depth += 1
        try:
            value = plan_for(tc).read(r)
        except CDRError as e:
            e.add_path(".value")
            raise
        finally:
            r.depth -= 1
        return V.Any(tc, value)

    def write(self, w, v):
        from .tcmarshal import write_typecode
        if not isinstance(v, V.Any):
            raise EncodeError(f"any: expected pycdr.Any(tc, value), not {type(v).__name__}")
        write_typecode(w, v.tc)
        try:
            plan_for(v.tc).write(w, v.value)
        except CDRError as e:
            e.add_path(".value")
            raise


class TypeCodeNode(Node):
    op = "typecode"
    min_wire = 4

    def read(self, r):
        from .tcmarshal import read_typecode
        return read_typecode(r)

    def write(self, w, v):
        from .tcmarshal import write_typecode
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
        from .ior import read_ior
        ior = read_ior(r)
        return None if ior.is_nil else ior

    def write(self, w, v):
        from .ior import IOR, NIL, write_ior
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

    def __init__(self, tc: TypeCode):
        self.tc = tc
        self.objref = ObjRefNode(tc)

    def read(self, r):
        from .valuetype import read_value_instance
        if r.read_boolean():
            return self.objref.read(r)
        return read_value_instance(r, None)

    def write(self, w, v):
        from .ior import IOR
        from .valuetype import write_value_instance
        if v is None or isinstance(v, IOR) or hasattr(v, "_ior"):
            w.write_boolean(True)
            self.objref.write(w, v)
        else:
            w.write_boolean(False)
            write_value_instance(w, None, v)


class ValueNode(Node):
    op = "value"
    align = 4
    min_wire = 4

    def __init__(self, tc: TypeCode):
        self.tc = tc

    def read(self, r):
        from .valuetype import read_value_instance
        return read_value_instance(r, self.tc)

    def write(self, w, v):
        from .valuetype import write_value_instance
        write_value_instance(w, self.tc, v)


class NativeNode(Node):
    op = "native"

    def __init__(self, tc):
        self.tc = tc

    def read(self, r):
        raise NotSupportedError(f"native type {self.tc._name} has no CDR encoding")

    def write(self, w, v):
        raise NotSupportedError(f"native type {self.tc._name} has no CDR encoding")


class RecursionGuard(Node):
    """Wraps the node a recursive reference points at, bounding nesting depth."""
    op = "recursive"

    def __init__(self, target: Node):
        self.target = target

    def read(self, r):
        if r.depth > MAX_DEPTH:
            raise RecursionLimitError("recursive value nested too deeply", r.pos)
        r.depth += 1
        try:
            return self.target.read(r)
        finally:
            r.depth -= 1

    def write(self, w, v):
        self.target.write(w, v)


# --------------------------------------------------------------------------
# Compilation
# --------------------------------------------------------------------------
_SIMPLE = {
    K.tk_null: NullNode, K.tk_void: NullNode, K.tk_boolean: BooleanNode,
    K.tk_octet: OctetNode, K.tk_char: CharNode, K.tk_wchar: WCharNode,
    K.tk_longdouble: LongDoubleNode, K.tk_any: AnyNode, K.tk_TypeCode: TypeCodeNode,
}


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
    node = None
    if k in _NUMERIC:
        node = NumberNode(k)
    elif k in _SIMPLE:
        node = _SIMPLE[k]()
    elif k == K.tk_string:
        node = StringNode(tc._length)
    elif k == K.tk_wstring:
        node = WStringNode(tc._length)
    elif k == K.tk_fixed:
        node = FixedNode(tc._digits, tc._scale)
    elif k == K.tk_enum:
        node = EnumNode(tc)
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
        node = AbstractInterfaceNode(tc)
    elif k in (K.tk_value, K.tk_event, K.tk_value_box):
        node = ValueNode(tc)
    elif k == K.tk_native:
        node = NativeNode(tc)
    if node is None:  # pragma: no cover - every TCKind is handled above
        raise NotSupportedError(f"no plan for {k!r}")
    tc._plans = node
    return node
