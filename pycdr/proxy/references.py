"""Object references moved in the messages the proxy relays.

A reply's references (results and out parameters by the operation's IDL, ``any``
values by their TypeCodes, a LOCATION_FORWARD's or an OBJECT_FORWARD's target) are
read with where each one's CDR lies in the body (``REFERENCE_SPANS``), and each one
to move gets the CDR of its moved IOR in its place: the bytes before, between and
after the references are kept as they came, and the message size is set anew.  An
IOR's CDR aligns to 4 at most (strings, ulongs, octet sequences: the profiles'
data are encapsulations, aligned from their own start), so its bytes are the same
wherever it sits; nothing is added to them.

What follows a reference whose new CDR is longer or shorter moves with it, which
keeps its alignment only when the lengths differ by a multiple of 8 (GIOP aligns
from the message's start; CORBA 3.x Part 2, 9.3.1 and 9.4), and no length or
offset that spans the change may be kept (a valuetype's chunk lengths and
indirections, CORBA 3.x Part 2, 9.3.4; an encapsulation's length).  So the bytes
are spliced when every reference keeps its length, or when no valuetype was read and
each change is a multiple of 8 but the last one, after which nothing is read;
else, and for references whose bytes are not of the message's one stream (a body the
GIOP 1.1 fragments it came in cut, each aligned from its own start; an
encapsulation, with its own byte order), the message is encoded again from its
values with the references moved.  Either way what a reader decodes of the
message is the same.
"""

from __future__ import annotations

import struct

from ..codec.ior import REFERENCE_SPANS, IOR, read_ior, write_ior
from ..codec.cdr import CDRReader, CDRWriter
from ..codec.marshal import read_value, write_value
from ..codec.references import map_references
from ..errors import PycdrError
from ..giop.header import HEADER_SIZE
from ..giop.messages import LocateReply, decode_message, encode_message

_SIZE = {False: struct.Struct(">I"), True: struct.Struct("<I")}


def moved_body(msg, raw, items, move, whole: bool = False) -> tuple | None:
    """(message, bytes, body writer or None) of ``msg`` (``raw``: its bytes) with the
    references among its body's values (of the TypeCodes ``items``) moved by
    ``move(data, little, reference)`` -> (its new CDR, the new IOR, changes) or None to
    keep it (:meth:`pycdr.addressing.rewrite.ReferenceRewriter.rewrite_encoded`).
    None when none moved or the body does not read by ``items`` (it passes as it came),
    or with ``whole``, when it holds more than them (a request's IDL context: as sent).
    The body writer is given when the message was encoded again (GIOP 1.1 fragments
    are cut with it)."""
    try:
        r = msg.body_reader()
    except ValueError:
        return None
    spans: list = []
    r.context = {REFERENCE_SPANS: spans}
    try:
        values = [read_value(r, tc) for tc in items]
    except (PycdrError, ValueError):
        return None                 # passed on as it came: the client judges it
    if not spans or whole and r.end - r.pos >= 8:
        return None
    top = r.origin
    if msg.segments or any(span[3] != top for span in spans):
        # (the references' bytes are not all of one stream in the message's byte order:
        # GIOP 1.1 fragments align each from its own start; an encapsulation has its own
        # byte order)
        return _encoded_again(msg, items, values, {}, move)
    body = r.buf
    little = msg.little
    new = []                        # (start, end, new CDR) of each reference moved
    by_id = {}                      # id(old IOR) -> new IOR (None: kept)
    for ior, start, end, _ in spans:
        got = move(bytes(body[start:end]), little, ior)
        if got is None:
            by_id[id(ior)] = None
        else:
            new.append((start, end, got[0]))
            by_id[id(ior)] = got[1]
    if not new:
        return None
    if _splices(msg, raw, new, "values" in r.context, r.pos):
        return (*_spliced(msg, raw, msg.body_offset, new), None)
    return _encoded_again(msg, items, values, by_id, move)


def moved_forward(msg, raw, move) -> tuple | None:
    """(message, bytes, None) of a LOCATION_FORWARD Reply or an OBJECT_FORWARD
    LocateReply ``msg`` (``raw``: its bytes) with its target moved (``move``: as
    moved_body's), or None."""
    if msg.forward is None:             # (one a lenient decoder could not read)
        return None
    if type(msg) is LocateReply:
        # (its body follows the status, unpadded; padded to 8 in the layout some
        # ORBs send, which the decoder took)
        at, start = HEADER_SIZE + 8, msg.body_padding or 0
    else:
        at, start = msg.body_offset, 0
    end = None
    if at is not None and _whole(msg, raw, at):
        try:
            r = CDRReader(msg.body, start=start, little=msg.little)
            read_ior(r)
            end = r.pos
        except PycdrError:
            pass
    if end is None:
        got = move(_encoded_ior(msg.forward, msg.little), msg.little, msg.forward)
        if got is None:
            return None
        moved = _copy(msg)
        moved.body = b""
        moved.forward = got[1]
        return _encoded(moved, None)
    got = move(bytes(msg.body[start:end]), msg.little, msg.forward)
    if got is None:
        return None
    moved, data = _spliced(msg, raw, at, [(start, end, got[0])])
    moved.forward = got[1]
    return moved, data, None


def _encoded_ior(ior: IOR, little: bool) -> bytes:
    w = CDRWriter(little=little)
    write_ior(w, ior)
    return w.getvalue()


def _splices(msg, raw, new, read_values: bool, ends_read: int) -> bool:
    """Whether the references ``new`` may go in the places of the old ones in ``raw``
    (see the module doc; ``ends_read``: where the values read end)."""
    if msg.body_offset is None or not _whole(msg, raw, msg.body_offset):
        return False
    if all(len(cdr) == end - start for start, end, cdr in new):
        return True
    if read_values:
        return False
    shift = 0
    for i, (start, end, cdr) in enumerate(new):
        shift += len(cdr) - (end - start)
        if shift % 8 and not (i == len(new) - 1 and end == ends_read):
            return False
    return True


def _whole(msg, raw, at: int) -> bool:
    """Whether ``msg``'s body is ``raw`` from ``at`` on, as one stream (not inflated
    from ZIOP, not joined from GIOP 1.1 fragments)."""
    return not msg.segments and msg.ziop is None and len(raw) - at == len(msg.body)


def _spliced(msg, raw, at: int, new):
    """(a copy of ``msg`` reading the new bytes, the bytes): ``raw`` with each
    (start, end, CDR) of ``new`` (positions in the body, which starts at ``at``) in
    place of what was there."""
    pieces, pos, shift = [], 0, 0
    for start, end, cdr in new:
        pieces.append(raw[pos:at + start])
        pieces.append(cdr)
        pos = at + end
        shift += len(cdr) - (end - start)
    pieces.append(raw[pos:])
    size = len(raw) - HEADER_SIZE + shift
    if shift:
        first = pieces[0]
        pieces[0:1] = [first[:8], _SIZE[bool(raw[6] & 1)].pack(size), first[12:]]
    data = b"".join(pieces)
    moved = _copy(msg)
    moved.body = memoryview(data)[at:]
    moved.message_size = size
    return moved, data


def _copy(msg):
    """A shallow copy of the message ``msg`` (what copy.copy makes, in a fraction of its
    time: the messages are plain dataclasses)."""
    moved = object.__new__(type(msg))
    moved.__dict__.update(msg.__dict__)
    return moved


def _encoded_again(msg, items, values, by_id: dict, move) -> tuple | None:
    """(message, bytes, body writer): ``msg`` encoded again with its body's ``values``
    (of ``items``) holding the new references (``by_id``: id of an old one -> its new
    one, or None when it is kept; others are moved here by their own CDR); None when
    none moved."""
    moved_any = any(new is not None for new in by_id.values())

    def replace(reference, path):
        nonlocal moved_any
        key = id(reference)
        if key in by_id:
            return by_id[key] or reference
        got = move(_encoded_ior(reference, msg.little), msg.little, reference)
        if got is None:
            return reference
        moved_any = True
        return got[1]
    values = [map_references(tc, v, replace) for tc, v in zip(items, values)]
    if not moved_any:
        return None

    def write_body(w):
        for tc, v in zip(items, values):
            write_value(w, tc, v)
    # (a shallow copy with its body emptied: what dataclasses.replace(msg, body=b"")
    # makes, the messages having no __post_init__, in a fraction of its time)
    moved = _copy(msg)
    moved.body = b""
    return _encoded(moved, write_body)


def _encoded(msg, write_body) -> tuple:
    """(the message as decoded from its new bytes, the bytes, ``write_body``): what
    reads its body next (the call row's result, a hook) reads the new one."""
    raw = encode_message(msg, write_body=write_body)
    # (without each field's offset, which nothing after reads; its body a view of raw,
    # bytes that do not change)
    decoded, _ = decode_message(raw, field_offsets=False, body_view=True)
    return decoded, raw, write_body
