"""Where the fields of an encoded GIOP message sit: the fuzzer's mutators aim
at them, ``pycdr.explain`` names them.  The message decoder already records the
offsets of the header fields it reads (``Message.offsets``) and the alignment
gaps (``Message.padding``); this adds the service-context entries and, when the
TypeCodes of a Request's arguments (or of a Reply's body) are known, a walk of
the body that finds lengths, counts, booleans, enums, union discriminators and
the TypeCodes inside anys, and with ``values=True`` every value as well."""

from __future__ import annotations

from dataclasses import dataclass

from ..codec.cdr import CDRReader, SegmentedReader
from ..errors import PycdrError
from .header import HEADER_SIZE, MsgType, parse_header
from .messages import decode_message
from ..codec.ior import read_ior
from ..codec.marshal import read_value
from ..codec.tcmarshal import read_typecode
from ..codec.typecode import DEFAULT, TCKind, resolve

K = TCKind
INDIRECTION = 0xFFFFFFFF
# TypeCode kinds whose parameters are an encapsulation (CORBA 3.x Part 2, 9.3.5.1).
_COMPLEX_TC = {K.tk_objref, K.tk_struct, K.tk_union, K.tk_enum, K.tk_sequence, K.tk_array,
               K.tk_alias, K.tk_except, K.tk_value, K.tk_value_box, K.tk_native,
               K.tk_abstract_interface, K.tk_local_interface, K.tk_component, K.tk_home,
               K.tk_event}
_TYPE_PREFIX = {MsgType.Request: "request", MsgType.Reply: "reply",
                MsgType.CancelRequest: "cancel_request", MsgType.LocateRequest: "locate_request",
                MsgType.LocateReply: "locate_reply", MsgType.CloseConnection: "close_connection",
                MsgType.MessageError: "message_error", MsgType.Fragment: "fragment"}


@dataclass(frozen=True)
class Field:
    """``size`` bytes at ``offset`` of one message; ``kind`` says what a mutator
    may do with it (see pycdr.fuzz.mutators; "value": a whole value, found only
    with ``values=True``), ``path`` names it in findings."""
    path: str
    offset: int
    size: int
    kind: str


class _Stop(Exception):
    """The walk cannot go on (a type it does not follow, or bad bytes)."""


def message_fields(data: bytes, body_types=None, *, values: bool = False, arg_names=None,
                   segments=None) -> list[Field]:
    """The fields of one GIOP message; ``body_types``: the TypeCodes of a
    Request's (or Reply's) body values in order, if known.  ``values``: also
    each value's own extent (kind "value"), and the walk reads on past bad
    values.  ``arg_names``: the body values' names in paths
    (``request.body.amount``) instead of ``request.body.arg[0]``.  ``segments``:
    those of a message reassembled from GIOP 1.1 fragments (decode_message's)."""
    out = [Field("header.magic", 0, 4, "magic"), Field("header.version", 4, 2, "version"),
           Field("header.flags", 6, 1, "flags"), Field("header.message_type", 7, 1, "msg_type"),
           Field("header.message_size", 8, 4, "size")]
    try:
        header = parse_header(data)
        msg, _ = decode_message(data, lenient=True, segments=segments)
    except (PycdrError, ValueError, IndexError):
        return out
    prefix = _TYPE_PREFIX.get(header.msg_type, "message")
    offsets = msg.offsets
    little = header.little

    def add(name, size, kind, key=None):
        at = offsets.get(key or name)
        if at is not None and at + size <= len(data):
            out.append(Field(f"{prefix}.{name}", at, size, kind))

    add("request_id", 4, "request_id")
    add("response_flags", 1, "response_flags")
    add("response_expected", 1, "boolean")
    add("reserved", 3, "bytes")
    add("target.discriminator", 2, "target_disc", "target")
    add("target.object_key.length", 4, "length", "target.object_key")
    add("target.profile.tag", 4, "ulong", "target.profile")
    add("target.selected_profile_index", 4, "profile_index")
    add("operation.length", 4, "length", "operation")
    add("requesting_principal.length", 4, "length", "requesting_principal")
    if "operation" in offsets:
        at = offsets["operation"]
        n = _ulong(data, at, little)
        if n and at + 4 + n <= len(data):
            out.append(Field(f"{prefix}.operation.nul", at + 3 + n, 1, "string_nul"))
            out.append(Field(f"{prefix}.operation.name", at + 4, n - 1, "operation"))
    if "target.object_key" in offsets:
        at = offsets["target.object_key"]
        n = _ulong(data, at, little)
        if at + 4 + n <= len(data):
            out.append(Field(f"{prefix}.target.object_key", at + 4, n, "object_key"))
    if "target.profile" in offsets:
        at = offsets["target.profile"] + 4
        out.append(Field(f"{prefix}.target.profile.length", at, 4, "length"))
        out.append(Field(f"{prefix}.target.profile.byte_order", at + 4, 1, "encap_order"))
    if "service_context" in offsets:
        _contexts(data, offsets["service_context"], little, f"{prefix}.service_context", out)
    for at, gap in msg.padding:
        if at >= HEADER_SIZE:
            out.append(Field(f"{prefix}.padding@{at}", at, len(gap), "padding"))
    if header.msg_type == MsgType.Fragment and header.version >= (1, 2) and len(data) >= 16:
        out.append(Field("fragment.request_id", HEADER_SIZE, 4, "request_id"))
    body = offsets.get("body")
    if body is not None and body_types and \
            header.msg_type in (MsgType.Request, MsgType.Reply) and not header.more_fragments:
        options = dict(start=body, little=little, lenient=values, warnings=[],
                       version=header.version if header.version != (1, 3) else (1, 2))
        r = SegmentedReader(data, segments, origin=0, **options) if segments else \
            CDRReader(data, origin=0, **options)
        for i, t in enumerate(body_types):
            name = arg_names[i] if arg_names is not None else f"arg[{i}]"
            try:
                walk_value(r, t, f"{prefix}.body.{name}", out, 0, values)
            except (_Stop, PycdrError, ValueError, IndexError, KeyError):
                break
    return out


def _ulong(data: bytes, at: int, little: bool) -> int:
    return int.from_bytes(data[at:at + 4], "little" if little else "big")


def _contexts(data, at, little, path, out) -> None:
    out.append(Field(f"{path}.count", at, 4, "count"))
    r = CDRReader(data, start=at, origin=HEADER_SIZE, little=little)
    try:
        n = r.read_count(8, "service context list")
        for i in range(n):
            out.append(Field(f"{path}[{i}].id", r.pos, 4, "context_id"))
            r.read_ulong()
            out.append(Field(f"{path}[{i}].length", r.pos, 4, "length"))
            length = r.read_ulong()
            if length and r.pos < len(data):
                out.append(Field(f"{path}[{i}].byte_order", r.pos, 1, "encap_order"))
            r.skip(length)
    except PycdrError:
        return


# --------------------------------------------------------------------------
# A TypeCode-guided walk of CDR data that records where the mutable parts are.
_PRIMITIVE_SIZE = {K.tk_short: 2, K.tk_ushort: 2, K.tk_long: 4, K.tk_ulong: 4, K.tk_float: 4,
                   K.tk_double: 8, K.tk_longlong: 8, K.tk_ulonglong: 8, K.tk_longdouble: 16,
                   K.tk_char: 1, K.tk_octet: 1, K.tk_wchar: 0}
_DISC_SIZE = {K.tk_short: 2, K.tk_ushort: 2, K.tk_long: 4, K.tk_ulong: 4, K.tk_longlong: 8,
              K.tk_ulonglong: 8, K.tk_boolean: 1, K.tk_char: 1, K.tk_enum: 4}
# The alignment of the values whose padding comes before them.
_VALUE_ALIGN = {K.tk_short: 2, K.tk_ushort: 2, K.tk_long: 4, K.tk_ulong: 4, K.tk_float: 4,
                K.tk_double: 8, K.tk_longlong: 8, K.tk_ulonglong: 8, K.tk_longdouble: 8,
                K.tk_enum: 4, K.tk_string: 4, K.tk_wstring: 4}
_MAX_DEPTH = 12
_MAX_ELEMENTS = 64      # elements of one sequence walked; the rest is skipped by reading


def walk_value(r: CDRReader, t, path: str, out: list, depth: int, values: bool = False) -> None:
    """Record the fields of one value of type ``t`` read from ``r`` (``values``:
    and the value's own extent, as a "value" field, once read)."""
    if depth > _MAX_DEPTH:
        raise _Stop()
    t = resolve(t).unalias()
    k = t.kind()
    if k in (K.tk_null, K.tk_void):
        return
    if not values:
        _walk_value(r, t, k, path, out, depth, False)
        return
    if k in _PRIMITIVE_SIZE or k in (K.tk_boolean, K.tk_enum, K.tk_string, K.tk_wstring):
        r.align(_VALUE_ALIGN.get(k, 1))       # the value starts after its padding
    start = len(out)
    at = r.pos
    try:
        _walk_value(r, t, k, path, out, depth, True)
    except BaseException:
        # A value that cannot be read extends to the end of the data: the field
        # inside it that made the read fail is the one named.
        out.insert(start, Field(path, at, max(r.limit - at, 1), "value"))
        raise
    out.insert(start, Field(path, at, max(r.pos - at, 1), "value"))   # (before its fields)


def _walk_value(r: CDRReader, t, k, path: str, out: list, depth: int, values: bool) -> None:
    if k == K.tk_boolean:
        out.append(Field(f"{path}.boolean", r.pos, 1, "boolean"))
        r.read_octet()
    elif k == K.tk_wchar:
        r.read_wchar()
    elif k in _PRIMITIVE_SIZE:
        size = _PRIMITIVE_SIZE[k]
        r.align(min(size, 8))
        r.skip(size)
    elif k == K.tk_enum:
        r.align(4)
        out.append(Field(f"{path}.enum", r.pos, 4, "enum"))
        r.read_ulong()
    elif k in (K.tk_string, K.tk_wstring):
        r.align(4)
        at = r.pos
        out.append(Field(f"{path}.length", at, 4, "length"))
        if k == K.tk_string:
            r.read_string()
            if r.pos - at > 4:
                out.append(Field(f"{path}.nul", r.pos - 1, 1, "string_nul"))
        else:
            r.read_wstring()
    elif k == K.tk_fixed:
        r.skip(t.fixed_digits() // 2 + 1)
    elif k in (K.tk_sequence, K.tk_array):
        n = t.length()
        if k == K.tk_sequence:
            r.align(4)
            out.append(Field(f"{path}.count", r.pos, 4, "count"))
            n = r.read_count(1)
        content = resolve(t.content_type()).unalias()
        if content.kind() in (K.tk_octet, K.tk_char, K.tk_boolean) and k == K.tk_sequence:
            r.skip(n)
            return
        for i in range(n):
            walk_value(r, content, f"{path}[{i}]" if i < _MAX_ELEMENTS else path, out
                       if i < _MAX_ELEMENTS else [], depth + 1, values)
    elif k in (K.tk_struct, K.tk_except):
        if k == K.tk_except:
            r.read_string()
        for i in range(t.member_count()):
            walk_value(r, t.member_type(i), f"{path}.{t.member_name(i)}", out, depth + 1,
                       values)
    elif k == K.tk_union:
        disc = resolve(t.discriminator_type()).unalias()
        size = _DISC_SIZE.get(disc.kind())
        if size is None:
            raise _Stop()
        r.align(size)
        out.append(Field(f"{path}.discriminator", r.pos, size, "discriminator"))
        start = r.pos
        r.pos = start
        d = read_value(r, disc)
        member = _union_member(t, d)
        if member is not None:
            walk_value(r, t.member_type(member), f"{path}.{t.member_name(member)}", out,
                       depth + 1, values)
    elif k == K.tk_any:
        start = r.pos
        walk_typecode(r, f"{path}.typecode", out, depth)
        r.pos = start
        inner = read_typecode(r)
        walk_value(r, inner, f"{path}.value", out, depth + 1, values)
    elif k == K.tk_TypeCode:
        start = r.pos
        walk_typecode(r, f"{path}.typecode", out, depth)
        r.pos = start
        read_typecode(r)
    elif k in (K.tk_objref, K.tk_abstract_interface):
        r.align(4)
        out.append(Field(f"{path}.type_id.length", r.pos, 4, "length"))
        read_ior(r)
    else:       # valuetypes and the rest: not followed
        raise _Stop()


def _union_member(t, d):
    default = None
    for i in range(t.member_count()):
        label = t.member_label(i)
        if label is DEFAULT:
            default = i
        elif label == d or (hasattr(label, "name") and int(label) == int(d)):
            return i
    return default


def walk_typecode(r: CDRReader, path: str, out: list, depth: int) -> None:
    """Record the kind, encapsulation length and indirections of a TypeCode
    (and of the TypeCodes nested in its parameters)."""
    if depth > _MAX_DEPTH:
        raise _Stop()
    r.align(4)
    out.append(Field(f"{path}.kind", r.pos, 4, "tc_kind"))
    kind = r.read_ulong()
    if kind == INDIRECTION:
        out.append(Field(f"{path}.indirection", r.pos, 4, "tc_indirection"))
        r.read_long()
        return
    if kind in (K.tk_string, K.tk_wstring):
        out.append(Field(f"{path}.bound", r.pos, 4, "ulong"))
        r.read_ulong()
        return
    if kind == K.tk_fixed:
        r.skip(4)
        return
    if kind not in _COMPLEX_TC:
        return
    out.append(Field(f"{path}.length", r.pos, 4, "tc_length"))
    length = r.read_ulong()
    start = r.pos
    end = start + length
    if end > r.end:
        raise _Stop()
    out.append(Field(f"{path}.byte_order", start, 1, "encap_order"))
    # The parameters, read in the encapsulation's own byte order and alignment.
    sub = CDRReader(r.buf, start=start + 1, end=end, origin=start, little=bool(r.buf[start] & 1))
    try:
        _walk_tc_params(sub, kind, path, out, depth)
    except (_Stop, PycdrError, ValueError, IndexError):
        pass
    r.pos = end


def _walk_tc_params(r, kind, path, out, depth):
    if kind in (K.tk_sequence, K.tk_array):
        walk_typecode(r, f"{path}.content", out, depth + 1)
        out.append(Field(f"{path}.bound", r.pos + ((-r.pos + r.origin) & 3), 4, "count"))
        return
    r.read_string()        # repository id
    if kind in (K.tk_objref, K.tk_native, K.tk_abstract_interface, K.tk_local_interface):
        return
    r.read_string()        # name
    if kind in (K.tk_alias, K.tk_value_box):
        walk_typecode(r, f"{path}.content", out, depth + 1)
        return
    if kind == K.tk_enum:
        r.align(4)
        out.append(Field(f"{path}.member_count", r.pos, 4, "count"))
        return
    if kind in (K.tk_struct, K.tk_except):
        r.align(4)
        out.append(Field(f"{path}.member_count", r.pos, 4, "count"))
        n = r.read_count(8)
        for i in range(n):
            r.read_string()
            walk_typecode(r, f"{path}.member[{i}]", out, depth + 1)
        return
    if kind == K.tk_union:
        walk_typecode(r, f"{path}.discriminator_type", out, depth + 1)
        # The labels' layout depends on the discriminator type: stop here.
        return
