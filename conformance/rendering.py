"""How a case becomes bytes: its template rendered for the target
(:class:`RenderContext`, :func:`render`: version, byte order, addressing,
service contexts, body, fragments, byte-level mutations), and the cases whose
bytes no template describes (named renderers); :func:`render_case` does both."""

from __future__ import annotations

import zlib
from dataclasses import replace

from pycdr import codesets
from pycdr.codec.cdr import CDRWriter
from pycdr.giop.header import (COMPRESSOR_ZLIB, HEADER_SIZE, ZIOP_MAGIC, MsgType, encode_header,
                               parse_header)
from pycdr.giop.messages import (CancelRequest, KeyAddr, LocateRequest, Message, ProfileAddr,
                                 ReferenceAddr, Request, encode_fragments, encode_message,
                                 fragment_message)
from pycdr.giop.service_contexts import CodeSetsContext, RawServiceContext
from pycdr.addressing.iiop import IIOPProfile, encode_profile, make_ior
from pycdr.codec.marshal import write_value
from pycdr.codec.tcmarshal import write_typecode

from .cases import NOT_A_TYPE, OBJECT_ID, UNKNOWN_KEY, ZIOP_BOMB_SIZE, Case, Msg


# --------------------------------------------------------------------------
# Rendering templates into bytes
# --------------------------------------------------------------------------
class RenderContext:
    """Target facts a template needs, and request ids."""

    def __init__(self, target, echo_interface=None):
        self.target = target
        self.echo = echo_interface
        self._next_id = 0x100

    def next_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def key(self, name: str) -> bytes:
        return {"target": self.target.object_key, "unknown": UNKNOWN_KEY, "empty": b""}[name]

    def profile(self, key: bytes, little: bool):
        t = self.target
        return encode_profile(IIOPProfile((1, 2), t.host, t.port, key, (), little))


def _address(ctx: RenderContext, m: Msg, version, little):
    key = ctx.key(m.key)
    if m.address == "key" or version < (1, 2):
        return KeyAddr(key)
    profile = ctx.profile(key, not little if "other-order" in m.address else little)
    if m.address.startswith("profile"):
        return ProfileAddr(profile)
    ior = make_ior(ctx.target.type_id or OBJECT_ID, [])
    ior = type(ior)(ior.type_id, (profile,))
    index = 7 if m.address == "reference-bad-index" else 0
    return ReferenceAddr(index, ior)


def _contexts(names, little):
    out = []
    for name in names:
        if name == "codesets":
            out.append(CodeSetsContext(codesets.ISO_8859_1, codesets.UTF_16, little=little))
        elif name == "codesets-other-order":
            out.append(CodeSetsContext(codesets.ISO_8859_1, codesets.UTF_16, little=not little))
        elif name == "codesets-utf8":
            out.append(CodeSetsContext(codesets.UTF_8, codesets.UTF_16, little=little))
        elif name == "codesets-ucs2":
            out.append(CodeSetsContext(codesets.ISO_8859_1, codesets.UCS_2_L1, little=little))
        elif name == "unknown":
            out.append(RawServiceContext(id=0x50594344, data=b"\x00\x01\x02\x03pycdr"))
        elif name.startswith("pad:"):
            out.append(RawServiceContext(id=0x50594345, data=b"\x00" * int(name[4:])))
        else:  # pragma: no cover - catalog typo
            raise ValueError(f"unknown context template {name!r}")
    return out


def _write_body(ctx: RenderContext, m: Msg, version):
    if not m.body:
        return None
    what = m.body[0]
    if what == "is_a":
        repo_id = m.body[1] if m.body[1] != "$target" else (ctx.target.type_id or OBJECT_ID)
        return lambda w: w.write_string(repo_id)
    if what == "echo":
        op = ctx.echo.operation(m.body[1])
        values = m.body[2]

        def write(w):
            for param, value in zip(op.in_params, values):
                write_value(w, param.type, value)
        return write
    if what == "raw":
        data = m.body[1]
        return lambda w: w.write_raw(data)
    if what == "raw-aligned":     # the bytes, 8-aligned as a 1.2 body would be
        data = m.body[1]

        def write(w):
            w.align(8)
            w.write_raw(data)
        return write
    raise ValueError(f"unknown body template {what!r}")  # pragma: no cover


def render(case: Case, ctx: RenderContext) -> list[bytes]:
    """The byte strings to send, one per GIOP message (after mutations and
    fragmentation), with the request ids they use."""
    out = []
    last_id = None
    for m in case.send:
        version = m.version or case.version
        little = case.little if m.little is None else m.little
        rid = m.request_id or (last_id if m.kind in ("cancel",) and last_id else ctx.next_id())
        if m.kind == "raw":
            out.append(_mutate(m.raw, m.mutate, little))
            continue
        if m.kind == "request":
            last_id = rid
            msg: Message = Request(version=version, little=little, request_id=rid,
                                   response_flags=m.response_flags,
                                   target=_address(ctx, m, version, little),
                                   operation=m.operation,
                                   service_contexts=_contexts(m.contexts, little))
        elif m.kind == "locate":
            last_id = rid
            msg = LocateRequest(version=version, little=little, request_id=rid,
                                target=_address(ctx, m, version, little))
        elif m.kind == "cancel":
            msg = CancelRequest(version=version, little=little, request_id=rid)
        elif m.kind in ("close", "message_error"):
            data = encode_header(version, little,
                                 MsgType.CloseConnection if m.kind == "close"
                                 else MsgType.MessageError, 0)
            out.append(_mutate(data, m.mutate, little))
            continue
        else:  # pragma: no cover
            raise ValueError(f"unknown message template {m.kind!r}")
        data = encode_message(msg, write_body=_write_body(ctx, m, version))
        if ("nonzero_padding", None) in m.mutate:
            # The gap between the header and the 8-aligned body.
            header_end = len(encode_message(msg))
            gap = (-header_end) & 7
            data = data[:header_end] + b"\xa5" * gap + data[header_end + gap:]
        if m.fragment and version == (1, 1) and m.kind == "request" and m.body \
                and m.body[0] == "echo":
            # Typed data in 1.1 Fragments: cut and realigned by the library's writer
            # (fragments of ``fragment`` bytes of data each).
            pieces = encode_fragments(msg, data, m.fragment + HEADER_SIZE,
                                      write_body=_write_body(ctx, m, version))
            out.extend(_mutate(d, m.mutate, little) for d in pieces)
        elif m.fragment:
            out.extend(_mutate(d, m.mutate, little) for d in _fragments(data, m.fragment))
        else:
            out.append(_mutate(data, m.mutate, little))
    return out


def _fragments(data: bytes, size: int) -> list[bytes]:
    """Split an encoded message into Fragments of ``size`` bytes of data each.
    GIOP 1.2+: the library's fragmenter (sizes multiple of 8 as the spec
    wants, or exactly ``size`` when a case wants to break that rule).  GIOP
    1.1: cut where no primitive is split (the cases use bodies made of octets
    and strings after the header, which a cut at a multiple of 8 keeps whole)."""
    version = (data[4], data[5])
    little = bool(data[6] & 1)
    if version >= (1, 2) and size % 8 == 0:
        return fragment_message(data, size + 16)    # 16: GIOP + fragment header
    body = data[HEADER_SIZE:]
    pieces = [body[i:i + size] for i in range(0, len(body), size)]
    first = encode_header(version, little, data[7], len(pieces[0]),
                          more_fragments=len(pieces) > 1) + pieces[0]
    out = [first]
    rid = data[HEADER_SIZE:HEADER_SIZE + 4] if version >= (1, 2) else b""
    for i, piece in enumerate(pieces[1:], 1):
        payload = rid + piece
        out.append(encode_header(version, little, MsgType.Fragment, len(payload),
                                 more_fragments=i < len(pieces) - 1) + payload)
    return out


def _mutate(data: bytes, mutations, little: bool) -> bytes:
    """Byte-level damage applied after encoding."""
    b = bytearray(data)
    for name, arg in mutations:
        if name == "magic":
            b[0:4] = arg
        elif name == "version":
            b[4], b[5] = arg
        elif name == "flags_or":
            b[6] |= arg
        elif name == "msg_type":
            b[7] = arg
        elif name == "size":
            b[8:12] = arg.to_bytes(4, "little" if little else "big")
        elif name == "size_delta":
            size = int.from_bytes(b[8:12], "little" if little else "big") + arg
            b[8:12] = size.to_bytes(4, "little" if little else "big")
        elif name == "truncate":
            del b[arg:]
        elif name == "append":
            b += arg
        elif name == "poke":                 # (offset from the end if negative, value)
            offset, value = arg
            b[offset] = value
        elif name == "pad_empty_body":       # 1.2: pad an empty body to 8 anyway
            pad = (-len(b)) & 7
            b += bytes(pad)
            size = len(b) - HEADER_SIZE
            b[8:12] = size.to_bytes(4, "little" if little else "big")
        elif name == "nonzero_padding":      # applied in render(), which knows the gap
            pass
        else:  # pragma: no cover
            raise ValueError(f"unknown mutation {name!r}")
    return bytes(b)


# --------------------------------------------------------------------------
# Cases whose bytes no template describes
# --------------------------------------------------------------------------
def _request_bytes(ctx, case, **fields) -> bytes:
    msg = Request(version=case.version, little=case.little, request_id=ctx.next_id(),
                  target=KeyAddr(ctx.target.object_key), **fields)
    return encode_message(msg)


def _header_with(case, body: bytes, msg_type=MsgType.Request) -> bytes:
    return encode_header(case.version, case.little, msg_type, len(body)) + body


def _special_interleaved(case, ctx):
    """Two fragmented requests; their fragments alternate on the wire."""
    a = Msg("request", operation="_is_a", body=("is_a", NOT_A_TYPE), fragment=16)
    first = render(replace(case, send=(a,), special=""), ctx)
    second = render(replace(case, send=(a,), special=""), ctx)
    out = []
    for i in range(max(len(first), len(second))):
        out.extend(x[i] for x in (first, second) if i < len(x))
    return out


def _special_cancel_fragmented(case, ctx):
    """The first fragments of a request, a CancelRequest, and no last fragment."""
    a = Msg("request", operation="_is_a", body=("is_a", NOT_A_TYPE), fragment=16)
    parts = render(replace(case, send=(a,), special=""), ctx)
    rid = ctx._next_id
    cancel = encode_message(CancelRequest(version=case.version, little=case.little,
                                          request_id=rid))
    return parts[:-1] + [cancel]


def _special_operation_length(case, ctx):
    w = CDRWriter(little=case.little, version=case.version, offset=HEADER_SIZE)
    w.write_ulong(ctx.next_id())
    w.write_octet(3)
    w.write_raw(b"\0\0\0")
    w.write_short(0)
    w.write_octet_sequence(ctx.target.object_key)
    w.write_ulong(0x7FFFFFFF)             # the operation's length
    w.write_raw(b"_non_existent\0")
    return [_header_with(case, w.getvalue())]


def _special_operation_no_nul(case, ctx):
    data = bytearray(_request_bytes(ctx, case, operation="_non_existent"))
    # The operation string is the last thing of a 1.2 header without contexts
    # but for the empty service-context count: ..."_non_existent\0" + count.
    at = data.rindex(b"_non_existent\0") + len("_non_existent")
    data[at] = ord("!")
    return [bytes(data)]


def _special_key_length(case, ctx):
    w = CDRWriter(little=case.little, version=case.version, offset=HEADER_SIZE)
    w.write_ulong(ctx.next_id())
    w.write_octet(3)
    w.write_raw(b"\0\0\0")
    w.write_short(0)
    w.write_ulong(0x00FFFFF0)             # the key's length, far past the message
    w.write_raw(ctx.target.object_key)
    return [_header_with(case, w.getvalue())]


def _special_operation_length_cut(case, ctx):
    # The key (the target's, lengthened to end 3 bytes short of a 4-aligned offset)
    # is followed by 4 more bytes: enough for a length before the padding, 1 byte of
    # it after.  A receiver that checks the room before aligning reads past the end.
    key = ctx.target.object_key
    key += b"!" * ((1 - len(key)) % 4)
    w = CDRWriter(little=case.little, version=case.version, offset=HEADER_SIZE)
    w.write_ulong(ctx.next_id())
    w.write_octet(3)
    w.write_raw(b"\0\0\0")
    w.write_short(0)
    w.write_octet_sequence(key)
    w.write_raw(b"\0\0\0\0")
    return [_header_with(case, w.getvalue())]


def _special_boolean(case, ctx, value: int):
    """GIOP 1.0 Request: service contexts (count 0), request_id, then the
    response_expected boolean at offset 20."""
    data = bytearray(_request_bytes(ctx, case, operation="_non_existent"))
    assert data[20] == 1
    data[20] = value
    return [bytes(data)]


def _special_wide_1_0(case, ctx, op_name: str):
    """A wide-character argument in GIOP 1.0, marshaled as GIOP 1.1 would."""
    op = ctx.echo.operation(op_name)
    value = "\u20ac" if op_name == "echo_wchar" else "wide \u20ac"

    def write(w):
        w.version = (1, 1)        # 1.0 has no wchar encoding; borrow 1.1's
        write_value(w, op.in_params[0].type, value)
    msg = Request(version=case.version, little=case.little, request_id=ctx.next_id(),
                  target=KeyAddr(ctx.target.object_key), operation=op_name)
    return [encode_message(msg, write_body=write)]


def _echo_request(case, ctx, write_body) -> list[bytes]:
    m = case.send[0]
    msg = Request(version=case.version, little=case.little, request_id=ctx.next_id(),
                  target=KeyAddr(ctx.target.object_key), operation=m.operation,
                  service_contexts=_contexts(m.contexts, case.little))
    return [encode_message(msg, write_body=write_body)]


def _special_enum_range(case, ctx):
    return _echo_request(case, ctx, lambda w: w.write_ulong(7))


def _special_typecode_other_order(case, ctx):
    value = case.send[0].body[2][0]

    def write(w):
        write_typecode(w, value.tc, encapsulation_little=not w.little)
        write_value(w, value.tc, value.value)
    return _echo_request(case, ctx, write)


def _special_wstring_bom(case, ctx, bom: str):
    text = case.send[0].body[2][0]
    data = bytes.fromhex(bom) + text.encode("utf-16-be" if bom == "feff" else "utf-16-le")

    def write(w):
        w.write_ulong(len(data))
        w.write_raw(data)
    return _echo_request(case, ctx, write)


def ziop_bomb(prefix: bytes, zeros: int, original_length: int | None = None) -> bytes:
    """A ZIOP message whose GIOP body is ``prefix``'s (an encoded GIOP message)
    followed by ``zeros`` zero bytes, compressed a MiB at a time (what it inflates
    to is never held).  ``original_length``: what its CompressionData claims
    (default: the truth)."""
    header = parse_header(prefix)
    c = zlib.compressobj(9)
    parts = [c.compress(prefix[HEADER_SIZE:])]
    mib = bytes(1 << 20)
    left = zeros
    while left:
        n = min(left, len(mib))
        parts.append(c.compress(mib if n == len(mib) else mib[:n]))
        left -= n
    parts.append(c.flush())
    size = len(prefix) - HEADER_SIZE + zeros
    w = CDRWriter(little=header.little, version=header.version, offset=HEADER_SIZE)
    w.write_ushort(COMPRESSOR_ZLIB)
    w.write_ulong(size if original_length is None else original_length)
    w.write_octet_sequence(b"".join(parts))
    payload = w.getvalue()
    return encode_header(header.version, header.little, header.msg_type, len(payload),
                         magic=ZIOP_MAGIC) + payload


def _special_ziop_bomb(case, ctx):
    return [ziop_bomb(_request_bytes(ctx, case, operation="_non_existent"), ZIOP_BOMB_SIZE)]


def render_case(case: Case, ctx: RenderContext) -> list[bytes]:
    if not case.special:
        return render(case, ctx)
    name, _, arg = case.special.partition(":")
    if name == "interleaved":
        return _special_interleaved(case, ctx)
    if name == "cancel_fragmented":
        return _special_cancel_fragmented(case, ctx)
    if name == "operation_length":
        return _special_operation_length(case, ctx)
    if name == "operation_no_nul":
        return _special_operation_no_nul(case, ctx)
    if name == "key_length":
        return _special_key_length(case, ctx)
    if name == "operation_length_cut":
        return _special_operation_length_cut(case, ctx)
    if name == "boolean":
        return _special_boolean(case, ctx, int(arg))
    if name == "wide_1_0":
        return _special_wide_1_0(case, ctx, arg.split(":")[0])
    if name == "enum_range":
        return _special_enum_range(case, ctx)
    if name == "typecode_other_order":
        return _special_typecode_other_order(case, ctx)
    if name == "wstring_bom":
        return _special_wstring_bom(case, ctx, arg)
    if name == "ziop_bomb":
        return _special_ziop_bomb(case, ctx)
    raise ValueError(f"unknown special renderer {case.special!r}")  # pragma: no cover
