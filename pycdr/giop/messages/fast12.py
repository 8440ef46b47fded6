"""The ORB's hot path of decoding: GIOP 1.2/1.3 Requests with a KeyAddr target
and NO_EXCEPTION Replies read by struct calls over the bytes, in Python or
(on the C path) by :mod:`pycdr.codec._speedups`; anything else is left to
:func:`pycdr.giop.messages.decode_message`'s general decoder."""

from __future__ import annotations

import dataclasses
import struct

from ...codec import marshal
from ...codec.cdr import CDRReader
from ...errors import PycdrError
from .. import service_contexts as sc
from ..header import (FLAG_MORE_FRAGMENTS, GIOP_MAGIC, HEADER_SIZE, GiopHeader, MsgType,
                      encode_header, parse_header)
from .model import AddressingDisposition, KeyAddr, Message, Reply, ReplyStatus, Request

if marshal.IMPLEMENTATION == "c":
    from ...codec._speedups import (configure_giop, decode_common_12, frame_chain_12,
                                    frame_common_12)


# --- The ORB's hot path: GIOP 1.2/1.3 Requests with a KeyAddr target and
# NO_EXCEPTION Replies, as struct calls over the bytes instead of a reader and
# a field reader (a third of a small call's server time went to the general
# decoder).  Anything else -- another version, target or status, a note-worthy
# flag or reserved octet, a bound crossed -- returns None and takes the general
# path, which judges it and gives the detailed decoder's errors.
# pycdr.codec._speedups.decode_common_12 is _decode_common_12 in C, used on the C path
# (see _c_decode_common_12 below): a change here is a change there too, and
# tests/test_giop_fast_decode.py and .ci/fuzz_speedups.py compare the two.
_REQUEST_12_START = {False: struct.Struct(">IB3sH"), True: struct.Struct("<IB3sH")}
_REPLY_12_START = {False: struct.Struct(">II"), True: struct.Struct("<II")}
_ULONG = {False: struct.Struct(">I"), True: struct.Struct("<I")}
_FAST_VERSIONS = ((1, 2), (1, 3))


def _decode_common_12(data, header: GiopHeader | None, body_view: bool = False) -> Message | None:
    if header is None:
        header = parse_header(data)
    end = header.total_size
    if end != len(data) or header.version not in _FAST_VERSIONS or header.flags > 1 \
            or header.magic != GIOP_MAGIC:
        return None
    little = header.flags == 1
    if header.msg_type == MsgType.Request:
        if end < 28:
            return None
        request_id, response_flags, reserved, disposition = \
            _REQUEST_12_START[little].unpack_from(data, 12)
        if disposition != AddressingDisposition.KeyAddr or reserved != b"\0\0\0":
            return None
        ulong = _ULONG[little].unpack_from
        key_end = 28 + ulong(data, 24)[0]
        pos = key_end + (-key_end & 3)          # the operation's length, 4-aligned
        if pos + 4 > end:
            return None
        object_key = bytes(data[28:key_end])
        n = ulong(data, pos)[0]
        pos += 4
        if n == 0 or pos + n > end or data[pos + n - 1] != 0:
            return None
        cls = Request
        fields = {"request_id": request_id, "response_flags": response_flags,
                  "target": KeyAddr(object_key),
                  "operation": bytes(data[pos:pos + n - 1]).decode("latin-1")}
        pos += n
    elif header.msg_type == MsgType.Reply:
        if end < 24:
            return None
        request_id, reply_status = _REPLY_12_START[little].unpack_from(data, 12)
        if reply_status != ReplyStatus.NO_EXCEPTION:
            return None
        cls = Reply
        fields = {"request_id": request_id, "reply_status": reply_status}
        pos = 20
    else:
        return None
    contexts, pos = _fast_service_contexts(data, pos, end, little, header.version)
    if contexts is None:
        return None
    body, body_offset = _fast_body(data, pos, end, body_view)
    if body is None:
        return None
    msg = cls(version=header.version, little=little, service_contexts=contexts, body=body,
              body_offset=body_offset, **fields)
    msg.message_size = header.size
    return msg


def _fast_service_contexts(data, pos: int, end: int, little: bool, version):
    """(contexts, position after them) at the 4-aligned ``pos``; (None, 0) when the
    general decoder must look (an error there is its to report)."""
    pos += -pos & 3
    if pos + 4 > end:
        return None, 0
    if _ULONG[little].unpack_from(data, pos)[0] == 0:
        return [], pos + 4
    r = CDRReader(data, start=pos, end=end, origin=0, little=little, version=version)
    try:
        contexts = sc.read_service_contexts(r)
    except PycdrError:
        return None, 0
    if r.warnings:
        return None, 0
    return contexts, r.pos


def _fast_body(data, pos: int, end: int, view: bool):
    """(body, body_offset): the 8-aligned rest of a 1.2 message (no padding when
    nothing follows the header), a read-only memoryview of ``data`` when ``view``;
    (None, 0) when the padding does not fit."""
    if pos < end:
        pos += -pos & 7
        if pos > end:
            return None, 0
    if view:
        return memoryview(data)[pos:end].toreadonly(), pos
    # One copy whatever the buffer (a bytearray when received in place).
    body = data[pos:end] if type(data) is bytes else bytes(memoryview(data)[pos:end])
    return body, pos


def _field_template(cls) -> tuple[dict, tuple]:
    """A dataclass's field defaults in field order (None where a default_factory
    makes the value) and its ((field, default_factory), ...): what the C decoder
    copies instead of calling __init__."""
    defaults, factories = {}, []
    for f in dataclasses.fields(cls):
        if f.default_factory is not dataclasses.MISSING:
            defaults[f.name] = None
            factories.append((f.name, f.default_factory))
        elif f.default is not dataclasses.MISSING:
            defaults[f.name] = f.default
        else:
            raise TypeError(f"{cls.__name__}.{f.name} has no default")
    return defaults, tuple(factories)


def _c_decode_common_12():
    """_decode_common_12 run by pycdr.codec._speedups when pycdr runs its C path (the same
    messages, or None, for the same bytes: tests/test_giop_fast_decode.py); None
    on the pure-Python path."""
    if marshal.IMPLEMENTATION != "c":
        return None
    configure_giop(Request, *_field_template(Request), Reply, *_field_template(Reply), KeyAddr,
                   _fast_service_contexts, parse_header, _decode_common_12)
    return decode_common_12


_decode_common_12_python = _decode_common_12
_decode_common_12 = _c_decode_common_12() or _decode_common_12


# --- A proxy's hot path: a run of such messages framed and decoded in one call.
# pycdr.codec._speedups.frame_common_12 is _frame_common_12 in C (on the C path):
# tests/test_giop_fast_decode.py compares the two.
def _frame_common_12(data: bytes, pos: int, max_message_size: int) -> tuple[list, int]:
    """([(bytes, message), ...], end): the whole messages at ``data[pos:]`` that
    _decode_common_12 takes, one after the other, each message's body a view of its
    bytes (a message that is all of ``data`` is ``data`` itself); ``end``: where the
    first other one starts (incomplete, a header parse_header refuses, over
    ``max_message_size``, or one for the general decoder), for the caller to frame."""
    taken = []
    end = len(data)
    while end - pos >= HEADER_SIZE:
        try:
            header = parse_header(data, pos)
        except PycdrError:
            break
        total = header.total_size
        if header.size > max_message_size or total > end - pos:
            break
        raw = data if pos == 0 and total == end else data[pos:pos + total]
        msg = _decode_common_12(raw, header, True)
        if msg is None:
            break
        taken.append((raw, msg))
        pos += total
    return taken, pos


def _frame_chain_12(data: bytes, pos: int, max_message_size: int,
                    max_reassembly_size: int):
    """(frames, whole, message, end) of a fragmented GIOP 1.2/1.3 Request or Reply at
    ``data[pos:]`` whose first message (flags 2 or 3, a multiple of 8 bytes) and
    Fragments (its request id, version and byte order; each a multiple of 8 bytes but
    the last; each within ``max_message_size``, together within ``max_reassembly_size``)
    are all whole there: ``frames`` views of ``data`` when the chain is all of it, else
    copies, ``whole`` the message joined as
    GiopConnection joins fragments, ``message`` what _decode_common_12 makes of it (body
    a view), ``end`` where the chain ends; None for anything else."""
    end = len(data)
    if end - pos < HEADER_SIZE:
        return None
    try:
        first = parse_header(data, pos)
    except PycdrError:
        return None
    version, flags, total = first.version, first.flags, first.total_size
    if first.magic != GIOP_MAGIC or version not in _FAST_VERSIONS or flags not in (2, 3) \
            or first.msg_type > MsgType.Reply or not 4 <= first.size <= max_message_size \
            or total > end - pos or total % 8:
        return None
    ulong = _ULONG[flags == 3].unpack_from
    request_id = ulong(data, pos + HEADER_SIZE)[0]
    view = memoryview(data)
    frames = [view[pos:pos + total]]
    parts = [view[pos + HEADER_SIZE:pos + total]]
    size = first.size
    p = pos + total
    while True:
        # (the fragment's header read here: parse_header's checks and these)
        if end - p < HEADER_SIZE:
            return None
        magic, major, minor, fragment_flags, msg_type = _HEAD.unpack_from(data, p)
        fragment_size = ulong(data, p + 8)[0]
        t = HEADER_SIZE + fragment_size
        if magic != GIOP_MAGIC or msg_type != MsgType.Fragment or \
                (major, minor) != version or (fragment_flags & 1) != (flags & 1) or \
                not 4 <= fragment_size <= max_message_size or t > end - p or \
                ulong(data, p + HEADER_SIZE)[0] != request_id:
            return None
        more = fragment_flags & FLAG_MORE_FRAGMENTS
        size += fragment_size - 4
        if more and t % 8 or size > max_reassembly_size:
            return None
        frames.append(view[p:p + t])
        parts.append(view[p + HEADER_SIZE + 4:p + t])
        p += t
        if not more:
            break
    whole = b"".join([encode_header(version, flags == 3, first.msg_type, size), *parts])
    if pos or p != end:
        # (views only when the chain is all of data: a view keeps all of it alive)
        frames = [bytes(f) for f in frames]
    msg = _decode_common_12(whole, None, True)
    return None if msg is None else (frames, whole, msg, p)


_HEAD = struct.Struct("4sBBBB")             # a header's magic, version, flags and type


def _c_frame_common_12():
    return frame_common_12 if marshal.IMPLEMENTATION == "c" else None


def _c_frame_chain_12():
    return frame_chain_12 if marshal.IMPLEMENTATION == "c" else None


_frame_common_12_python = _frame_common_12
frame_common_12 = _c_frame_common_12() or _frame_common_12
_frame_chain_12_python = _frame_chain_12
frame_chain_12 = _c_frame_chain_12() or _frame_chain_12
