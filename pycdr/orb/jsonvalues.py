"""IDL values to and from JSON, by TypeCode (``pycdr call`` arguments and results).

JSON forms: numbers as numbers (fixed as a string), char/wchar/strings as strings, octet
sequences as a hex string or a list of numbers, enums as the enumerator name, structs and
exceptions as objects by member name, unions as ``{"d": discriminator, "v": value}``,
sequences and arrays as lists, object references as ``IOR:`` strings (or null), an any as
``{"type": <kind name>, "value": ...}`` for the basic types only.
"""

from __future__ import annotations

from decimal import Decimal

from .. import tc as tcs
from ..ior import IOR, ior_from_string, ior_to_string
from ..typecode import TCKind as K
from ..values import Any, EnumItem, LongDouble, Struct, Union, UserException, class_for

_ANY_BASIC = {"long": tcs.long, "double": tcs.double, "string": tcs.string,
              "boolean": tcs.boolean, "longlong": tcs.longlong, "octet": tcs.octet}


def _unalias(t):
    while t.kind() == K.tk_alias:
        t = t.content_type()
    return t


def from_json(t, obj):
    """The pycdr value of type ``t`` for the JSON value ``obj``."""
    t = _unalias(t)
    k = t.kind()
    if k in (K.tk_short, K.tk_long, K.tk_ushort, K.tk_ulong, K.tk_longlong, K.tk_ulonglong,
             K.tk_octet):
        return int(obj)
    if k in (K.tk_float, K.tk_double):
        return float(obj)
    if k == K.tk_longdouble:
        return LongDouble.from_float(float(obj))
    if k == K.tk_boolean:
        if not isinstance(obj, bool):
            raise ValueError(f"expected true or false, not {obj!r}")
        return obj
    if k in (K.tk_char, K.tk_wchar, K.tk_string, K.tk_wstring):
        if not isinstance(obj, str):
            raise ValueError(f"expected a string, not {obj!r}")
        return obj
    if k == K.tk_fixed:
        return Decimal(str(obj))
    if k == K.tk_enum:
        cls = class_for(t)
        names = [t.member_name(i) for i in range(t.member_count())]
        if obj not in names:
            raise ValueError(f"{obj!r} is not one of {names}")
        return cls._items[names.index(obj)]
    if k in (K.tk_struct, K.tk_except):
        if not isinstance(obj, dict):
            raise ValueError(f"expected an object for {t.name()}, not {obj!r}")
        cls = class_for(t)
        members = {t.member_name(i): t.member_type(i) for i in range(t.member_count())}
        unknown = set(obj) - set(members)
        if unknown:
            raise ValueError(f"{t.name()} has no member(s) {sorted(unknown)}")
        return cls(**{name: from_json(members[name], obj[name]) for name in members
                      if name in obj})
    if k == K.tk_union:
        if not isinstance(obj, dict) or set(obj) != {"d", "v"}:
            raise ValueError(f"a union is {{\"d\": discriminator, \"v\": value}}, not {obj!r}")
        d = from_json(t.discriminator_type(), obj["d"])
        for i in range(t.member_count()):
            if t.member_label(i) == d:
                return class_for(t)(d, from_json(t.member_type(i), obj["v"]))
        index = t.default_index()
        if index is None or index < 0:
            raise ValueError(f"no branch of {t.name()} for discriminator {d!r}")
        return class_for(t)(d, from_json(t.member_type(index), obj["v"]))
    if k in (K.tk_sequence, K.tk_array):
        content = _unalias(t.content_type())
        if content.kind() == K.tk_octet and isinstance(obj, str):
            return bytes.fromhex(obj)
        if not isinstance(obj, list):
            raise ValueError(f"expected a list, not {obj!r}")
        items = [from_json(content, x) for x in obj]
        return bytes(items) if content.kind() == K.tk_octet else items
    if k == K.tk_objref:
        return None if obj is None else ior_from_string(obj)
    if k == K.tk_any:
        if not isinstance(obj, dict) or obj.get("type") not in _ANY_BASIC:
            raise ValueError(f"an any is {{\"type\": one of {sorted(_ANY_BASIC)}, "
                             f"\"value\": ...}}")
        inner = _ANY_BASIC[obj["type"]]
        return Any(inner, from_json(inner, obj["value"]))
    raise ValueError(f"no JSON form for {k.name} values")


def to_json(value):
    """A JSON-able form of a decoded value (the inverse of from_json where types allow)."""
    if value is None or isinstance(value, (bool, str, float)):
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
        return [to_json(v) for v in value]
    if isinstance(value, (Struct, UserException)):
        return {name: to_json(getattr(value, name)) for name in value._fields}
    if isinstance(value, Union):
        return {"d": to_json(value._d), "v": to_json(value._v)}
    if isinstance(value, IOR):
        return ior_to_string(value)
    if isinstance(value, Any):
        return {"type": value.tc.kind().name[3:], "value": to_json(value.value)}
    if isinstance(value, LongDouble):
        return repr(value)
    return repr(value)
