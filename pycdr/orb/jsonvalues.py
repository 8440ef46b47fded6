"""IDL values to and from JSON, by TypeCode (``pycdr call`` arguments and results).

JSON forms: numbers as numbers (fixed as a string), char/wchar/strings as strings, octet
sequences as a hex string or a list of numbers, enums as the enumerator name, structs and
exceptions as objects by member name, unions as ``{"d": discriminator, "v": value}``,
sequences and arrays as lists, object references as ``IOR:`` strings (or null), an any as
``{"type": <kind name>, "value": ...}`` for the basic types only.  The floating-point values
JSON has no number for are the strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``
(RFC 8259: what is written is JSON; ``loads`` and ``dumps`` read and write it).
"""

from __future__ import annotations

import json
import math
from decimal import Decimal, InvalidOperation

from ..codec import tc as tcs
from ..idl.typecodes import IDL_NAMES
from ..codec.ior import IOR, ior_from_string, ior_to_string
from ..codec.typecode import INTEGER_RANGES, TCKind as K, describe
from ..codec.values import (Any, EnumItem, LongDouble, Struct, Union, UserException, ValueBase,
                            class_for)

_ANY_BASIC = {"long": tcs.long, "double": tcs.double, "string": tcs.string,
              "boolean": tcs.boolean, "longlong": tcs.longlong, "octet": tcs.octet}


_FLOAT_MAX = 3.4028234663852886e38    # the largest finite IEEE single

# The JSON strings of the floating-point values that are not numbers in JSON.
NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class JSONTextError(ValueError):
    """Text that is not RFC 8259 JSON, or a number no IDL type pycdr sends can hold."""


def _refuse_constant(name: str):
    raise JSONTextError(f"{name} is not a JSON number: write it as the string '\"{name}\"'")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JSONTextError(f"{text if len(text) <= 30 else text[:20] + '...'} is beyond the "
                            "range of a double")
    return value


def loads(text: str):
    """The value of the JSON ``text`` (RFC 8259: no bare NaN or Infinity, no number that
    overflows a double).  JSONTextError, or json's own ValueError, for anything else."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)


def _json_safe(obj):
    if isinstance(obj, float) and not math.isfinite(obj):
        return "NaN" if obj != obj else ("Infinity" if obj > 0 else "-Infinity")
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def dumps(obj, **options) -> str:
    """``obj`` as RFC 8259 JSON: non-finite floats as their strings (NON_FINITE)."""
    return json.dumps(_json_safe(obj), allow_nan=False, **options)


def _unalias(t):
    while t.kind() == K.tk_alias:
        t = t.content_type()
    return t


def type_name(t) -> str:
    """The IDL name of a type, for messages: ``long``, ``Money (fixed<10,3>)``."""
    inner = _unalias(t)
    k = inner.kind()
    if k in IDL_NAMES:
        text = IDL_NAMES[k]
    elif k == K.tk_fixed:
        text = f"fixed<{inner.fixed_digits()},{inner.fixed_scale()}>"
    elif k in (K.tk_string, K.tk_wstring):
        word = "string" if k == K.tk_string else "wstring"
        text = f"{word}<{inner.length()}>" if inner.length() else word
    elif k in (K.tk_sequence, K.tk_array, K.tk_enum, K.tk_struct, K.tk_union, K.tk_except,
               K.tk_objref):
        text = describe(inner)
    else:
        text = k.name[3:]
    return f"{t.name()} ({text})" if t.kind() == K.tk_alias else text


def _shown(obj) -> str:
    """A JSON value in a message: bounded, whatever its size or depth."""
    if isinstance(obj, list):
        return f"a list of {len(obj)}"
    if isinstance(obj, dict):
        return f"an object with {len(obj)} member(s)"
    if isinstance(obj, int) and obj.bit_length() > 256:
        return f"an integer of {obj.bit_length()} bits"
    text = json.dumps(obj)
    return text if len(text) <= 60 else text[:40] + f"... ({len(text)} characters)"


def from_json(t, obj):
    """The pycdr value of type ``t`` for the JSON value ``obj``.

    Raises ValueError (naming the type) for a value of another kind or one the type
    cannot hold: numbers are never truncated or wrapped (1.5 is no long, 300 no octet).
    Sizes, bounds and characters the marshaller checks are left to it."""
    declared = t
    t = _unalias(t)
    k = t.kind()
    if k in INTEGER_RANGES:
        if isinstance(obj, float) and obj.is_integer():
            obj = int(obj)      # 1e3 is an integer; 1.5 is not
        if not isinstance(obj, int) or isinstance(obj, bool):
            raise ValueError(f"{_shown(obj)} is not an integer ({type_name(declared)})")
        lo, hi = INTEGER_RANGES[k]
        if not lo <= obj <= hi:
            raise ValueError(f"{_shown(obj)} does not fit {type_name(declared)} ({lo}..{hi})")
        return obj
    if k in (K.tk_float, K.tk_double, K.tk_longdouble):
        if isinstance(obj, str) and obj in NON_FINITE:
            obj = NON_FINITE[obj]
        elif isinstance(obj, float) and not math.isfinite(obj):
            raise ValueError(f"{_shown(_json_safe(obj))} is not a JSON number: write it as "
                             f"a string ({type_name(declared)})")
        if not isinstance(obj, (int, float)) or isinstance(obj, bool):
            raise ValueError(f"{_shown(obj)} is not a number ({type_name(declared)})")
        try:
            number = float(obj)
        except OverflowError:
            raise ValueError(f"{_shown(obj)} does not fit {type_name(declared)}") from None
        if k == K.tk_float and math.isfinite(number) and abs(number) > _FLOAT_MAX:
            raise ValueError(f"{_shown(obj)} does not fit {type_name(declared)}")
        return LongDouble.from_float(number) if k == K.tk_longdouble else number
    if k == K.tk_boolean:
        if not isinstance(obj, bool):
            raise ValueError(f"expected true or false, not {_shown(obj)}")
        return obj
    if k in (K.tk_char, K.tk_wchar, K.tk_string, K.tk_wstring):
        if not isinstance(obj, str):
            raise ValueError(f"expected a string ({type_name(declared)}), not {_shown(obj)}")
        if k in (K.tk_char, K.tk_wchar) and len(obj) != 1:
            raise ValueError(f"{_shown(obj)} is not one character ({type_name(declared)})")
        return obj
    if k == K.tk_fixed:
        # A string (exact) or a JSON number.
        if not isinstance(obj, (str, int, float)) or isinstance(obj, bool):
            raise ValueError(f"{_shown(obj)} is not a decimal number ({type_name(declared)})")
        try:
            value = Decimal(obj if isinstance(obj, (str, int)) else repr(obj))
        except InvalidOperation:
            raise ValueError(f"{_shown(obj)} is not a decimal number "
                             f"({type_name(declared)})") from None
        if not value.is_finite():
            raise ValueError(f"{_shown(obj)} is not a finite number ({type_name(declared)})")
        return value
    if k == K.tk_enum:
        cls = class_for(t)
        names = [t.member_name(i) for i in range(t.member_count())]
        if not isinstance(obj, str) or obj not in names:
            raise ValueError(f"{_shown(obj)} is not one of {', '.join(names)} "
                             f"({type_name(declared)})")
        return cls._items[names.index(obj)]
    if k in (K.tk_struct, K.tk_except):
        if not isinstance(obj, dict):
            raise ValueError(f"expected an object for {t.name()}, not {_shown(obj)}")
        cls = class_for(t)
        members = {t.member_name(i): t.member_type(i) for i in range(t.member_count())}
        unknown = sorted(set(obj) - set(members))
        if unknown:
            raise ValueError(f"{t.name()} has no member{'s' if len(unknown) > 1 else ''} "
                             f"{', '.join(unknown[:10])} (its members: "
                             f"{', '.join(members) or 'none'})")
        missing = [name for name in members if name not in obj]
        if missing:
            raise ValueError(f"{t.name()} member{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(missing[:10])} {'are' if len(missing) > 1 else 'is'}"
                             f" missing (its members: {', '.join(members)})")
        return cls(**{name: from_json(members[name], obj[name]) for name in members})
    if k == K.tk_union:
        if not isinstance(obj, dict) or set(obj) != {"d", "v"}:
            raise ValueError(f"a union is {{\"d\": discriminator, \"v\": value}}, "
                             f"not {_shown(obj)}")
        d = from_json(t.discriminator_type(), obj["d"])
        for i in range(t.member_count()):
            if t.member_label(i) == d:
                return class_for(t)(d, from_json(t.member_type(i), obj["v"]))
        index = t.default_index()
        if index is None or index < 0:
            raise ValueError(f"no branch of {t.name()} for discriminator {_shown(obj['d'])}")
        return class_for(t)(d, from_json(t.member_type(index), obj["v"]))
    if k in (K.tk_sequence, K.tk_array):
        content = _unalias(t.content_type())
        if content.kind() == K.tk_octet and isinstance(obj, str):
            return bytes.fromhex(obj)
        if not isinstance(obj, list):
            raise ValueError(f"expected a list ({type_name(declared)}), not {_shown(obj)}")
        items = [from_json(content, x) for x in obj]
        return bytes(items) if content.kind() == K.tk_octet else items
    if k == K.tk_objref:
        if obj is not None and not isinstance(obj, str):
            raise ValueError(f"expected an IOR string or null, not {_shown(obj)}")
        return None if obj is None else ior_from_string(obj)
    if k == K.tk_any:
        if not isinstance(obj, dict) or obj.get("type") not in _ANY_BASIC:
            raise ValueError(f"an any is {{\"type\": one of {sorted(_ANY_BASIC)}, "
                             f"\"value\": ...}}")
        inner = _ANY_BASIC[obj["type"]]
        return Any(inner, from_json(inner, obj.get("value")))
    raise ValueError(f"no JSON form for {k.name} values")


# The IOR: strings of the references seen last (IOR -> text): a call table's rows show
# the same references again and again (a proxy's, a monitor's).
_IOR_TEXTS: dict = {}
_MAX_IOR_TEXTS = 1024


def _ior_text(ior: IOR) -> str:
    try:
        text = _IOR_TEXTS.get(ior)
    except TypeError:                   # (a profile's data that is not bytes)
        return ior_to_string(ior)
    if text is None:
        if len(_IOR_TEXTS) >= _MAX_IOR_TEXTS:
            _IOR_TEXTS.clear()
        text = _IOR_TEXTS[ior] = ior_to_string(ior)
    return text


def to_json(value, _path=None):
    """A JSON-able form of a decoded value (the inverse of from_json where types allow).

    A valuetype is an object of its fields plus ``"_type"`` (its repository id); one
    met again inside itself (a cycle) is ``{"_cycle": <repository id>}``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else _json_safe(value)
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, EnumItem):
        return value.name
    if isinstance(value, int):
        return int(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [to_json(v, _path) for v in value]
    if isinstance(value, (Struct, UserException)):
        return {name: to_json(getattr(value, name), _path) for name in value._fields}
    if isinstance(value, Union):
        return {"d": to_json(value._d, _path), "v": to_json(value._v, _path)}
    if isinstance(value, IOR):
        return _ior_text(value)
    if isinstance(value, Any):
        return {"type": value.tc.kind().name[3:], "value": to_json(value.value, _path)}
    if isinstance(value, LongDouble):
        return to_json(float(value))        # (the nearest double: what JSON numbers hold)
    if isinstance(value, ValueBase):
        type_id = value._tc.id()
        path = _path or set()
        if id(value) in path:
            return {"_cycle": type_id}
        path.add(id(value))
        try:
            return {"_type": type_id, **{name: to_json(getattr(value, name, None), path)
                                         for name in value._fields}}
        finally:
            path.discard(id(value))
    return str(value)
