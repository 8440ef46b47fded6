"""Generated fast path for structs of fixed-size members (``FlatCodec``): the
struct flattened to one ``struct.Struct`` per alignment phase and byte order,
and a converter generated for its shape between the unpacked tuple and the
struct's instances."""

from __future__ import annotations

import struct

from ..scalars import _NUMERIC, EnumNode
from ..typecode import TCKind, TypeCode, describe, resolve
from .. import values as V
from .common import _FallBack, _fallback

K = TCKind

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
        exec(compile(code, f"<pycdr plan {describe(tc)}>", "exec"), env)
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

