"""Mutators.  Each takes a case's messages (a list of ``bytearray``, one per
GIOP message) and changes one thing, returning a :class:`Mutation` that names
the field path it touched (``header.message_size``,
``request.service_context[1].length``, ``msg[2].fragment.request_id``) or
None when it does not apply.  Field-level mutators aim at the fields
:func:`pycdr.giop.layout.message_fields` finds; message-level ones rebuild
target addresses and fragment chains; byte flips, splices and truncation know
nothing of the structure.

Mutators that change a message's length fix its header's message_size, so the
damage stays where it was aimed (the header mutator is the one that lies
about the size)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from itertools import accumulate

from ..errors import PycdrError
from ..addressing.iiop import IIOPProfile, encode_profile
from ..codec.ior import IOR
from ..giop.header import (FLAG_LITTLE_ENDIAN, FLAG_MORE_FRAGMENTS, HEADER_SIZE, MsgType,
                           encode_header)
from ..giop.messages import (KeyAddr, LocateRequest, ProfileAddr, ReferenceAddr, Request,
                             decode_message, encode_message, fragment_message)
from ..giop.layout import Field, INDIRECTION, message_fields

U32 = 0xFFFFFFFF


@dataclass(frozen=True)
class Mutation:
    mutator: str
    path: str
    detail: str = ""

    def to_json(self) -> dict:
        return {"mutator": self.mutator, "path": self.path, "detail": self.detail}


class MutationContext:
    """What mutators may draw on beyond the case: other seeds (splices,
    interleaving) and the target (object key, an IIOP profile for it)."""

    def __init__(self, seeds, object_key: bytes, profile=None, ior=None):
        self.seeds = seeds
        # How many times a mutator read the target's address (its object
        # key, profile or IOR): a case whose making read none of them holds
        # nothing of the target's address, and stays good when a restart
        # moves the target (see Campaign._restart).
        self.address_reads = 0
        self._object_key = object_key
        self._profile = profile       # pycdr.codec.ior.TaggedProfile of the target, if known
        self._ior = ior
        # The call-out planter (pycdr.fuzz.callback.Planter) under --callback, else None.
        self.callback = None
        # The seeds' layouts, worked out once: most mutations start from a
        # seed's unchanged message.  (A mutated message's layout is worked out
        # when asked for, and not kept: it is rarely asked for twice.)  A
        # seed's is worked out when first asked for: a campaign's start would
        # otherwise wait for all of them (some 50 ms of CPU for the Echo
        # catalog's 600 seeds), where its cases are made while the target works.
        self._layouts: dict = {}         # (data, id(body_types)) -> _layout() or _later()
        self._derived: dict = {}         # ((data, id(body_types)), make) -> make(fields)
        for seed in seeds:
            for k, message in enumerate(seed.messages):
                data = bytes(message)
                self._layouts[(data, id(None))] = _later(None)
                if k == 0 and seed.body_types is not None:
                    self._layouts[(data, id(seed.body_types))] = _later(seed.body_types)

    @property
    def object_key(self) -> bytes:
        self.address_reads += 1
        return self._object_key

    @object_key.setter
    def object_key(self, value: bytes) -> None:
        self._object_key = value

    @property
    def profile(self):
        self.address_reads += 1
        return self._profile

    @profile.setter
    def profile(self, value) -> None:
        self._profile = value

    @property
    def ior(self):
        self.address_reads += 1
        return self._ior

    @ior.setter
    def ior(self, value) -> None:
        self._ior = value

    def address(self) -> tuple:
        """(object key, profile, IOR), not counted as a mutator's read."""
        return self._object_key, self._profile, self._ior

    def remember(self, data: bytes, body_types=None) -> None:
        """Keep the layout of ``data`` as the seeds' are kept (an input a
        feedback campaign kept: it is mutated again and again)."""
        for types in {id(None): None, id(body_types): body_types}.values():
            self._layouts[(data, id(types))] = _layout(data, types)

    def fields(self, data: bytes, body_types=None) -> list:
        """message_fields(data, body_types).  The list returned may be
        shared: read it, do not change it."""
        return self._layout(data, body_types)[1]

    def derived(self, data: bytes, body_types, fields, make):
        """``make(fields)``, ``fields`` being the layout of ``data``: kept
        beside a kept layout (a seed's, a kept input's), worked out again
        for others."""
        key = (data, id(body_types))
        entry = self._kept(key, body_types)
        if entry is None:
            return make(fields)
        out = self._derived.get((key, make))
        if out is None:
            out = self._derived[(key, make)] = make(entry[1])
        return out

    def aimable(self, data: bytes, body_types=None) -> tuple[list, list]:
        """The fields that lie wholly inside ``data`` and their cumulative
        weights (FIELD_WEIGHT), for ``rng.choices``."""
        return self._layout(data, body_types)[2]

    def _layout(self, data: bytes, body_types) -> tuple:
        entry = self._kept((data, id(body_types)), body_types)
        return entry if entry is not None else _layout(data, body_types)

    def _kept(self, key: tuple, body_types) -> tuple | None:
        """The kept layout under ``key`` (worked out now when it is a seed's
        not asked for before), or None."""
        entry = self._layouts.get(key)
        if entry is None or entry[0] is not body_types:
            return None
        if entry[1] is None:
            entry = self._layouts[key] = _layout(key[0], body_types)
        return entry


def _later(body_types) -> tuple:
    """A seed's layout not worked out yet (MutationContext._kept)."""
    return (body_types, None, None)


def _layout(data: bytes, body_types) -> tuple:
    """(body_types, message_fields(data, body_types), (the fields inside
    data, their cumulative weights))."""
    fields = message_fields(data, body_types)
    inside = [f for f in fields if f.offset + f.size <= len(data)]
    return (body_types, fields,
            (inside, list(accumulate(FIELD_WEIGHT.get(f.kind, 1) for f in inside))))


# --------------------------------------------------------------------------
# Helpers
def _little(m) -> bool:
    return bool(m[6] & FLAG_LITTLE_ENDIAN) if len(m) > 6 else False


def _put(m: bytearray, at: int, size: int, value: int) -> None:
    m[at:at + size] = (value & ((1 << (8 * size)) - 1)).to_bytes(
        size, "little" if _little(m) else "big")


def _get(m, at: int, size: int) -> int:
    return int.from_bytes(m[at:at + size], "little" if _little(m) else "big")


def fix_size(m: bytearray) -> None:
    if len(m) >= HEADER_SIZE:
        _put(m, 8, 4, len(m) - HEADER_SIZE)


def _path(index: int, field_path: str) -> str:
    return field_path if index == 0 else f"msg[{index}].{field_path}"


def _pick(rng: random.Random, values):
    return values[rng.randrange(len(values))]


# --------------------------------------------------------------------------
# Field mutators: (message, field, rng, ctx, messages, index) -> detail or None
def m_magic(m, f, rng, ctx, msgs, i):
    new = _pick(rng, (b"GIOX", b"ZIOP", b"giop", b"\0\0\0\0"))
    m[f.offset:f.offset + 4] = new
    return new.decode("latin-1")


def m_version(m, f, rng, ctx, msgs, i):
    # (13, 1): the JDK-lineage ORBs' Java-serialisation encoding, which the OpenJDK ORB
    # with ORBEnableJavaSerialization reads (after the request id) with an ObjectInputStream.
    major, minor = _pick(rng, ((1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (1, 9), (2, 0),
                               (0, 0), (255, 255), (13, 1)))
    m[4], m[5] = major, minor
    return f"{major}.{minor}"


def m_flags(m, f, rng, ctx, msgs, i):
    choice = rng.randrange(4)
    if choice == 0:      # the byte-order flag against the real byte order
        m[6] ^= FLAG_LITTLE_ENDIAN
        return "byte order flipped"
    bit = _pick(rng, (FLAG_MORE_FRAGMENTS, 0x04, 0x08, 0x10, 0x80, 0xF0))
    m[6] ^= bit
    return f"flags ^= {bit:#x}"


def m_msg_type(m, f, rng, ctx, msgs, i):
    value = _pick(rng, (0, 1, 2, 3, 4, 5, 6, 7, 8, 0x7F, 0xFF))
    m[7] = value
    return f"type {value}"


def m_size(m, f, rng, ctx, msgs, i):
    size = _get(m, 8, 4)
    # (0x7FFFFFF0: with the header, just under the largest Java array: an ORB that
    # allocates the size it is told at once, JacORB's GIOPConnection, takes 2 GB.)
    value = _pick(rng, (size + 1, size - 1, size + 4, size - 4, size + 64, 0, 1,
                        0x7FFFFFFF, U32, U32 - 15, size * 2, 0x7FFFFFF0))
    _put(m, 8, 4, value)
    return f"message_size {size} -> {value & U32}"


def m_request_id(m, f, rng, ctx, msgs, i):
    old = _get(m, f.offset, 4)
    others = [_get(x, 12, 4) for j, x in enumerate(msgs) if j != i and len(x) >= 16]
    choices = [0, U32, old + 1, old ^ 0x80000000, rng.randrange(1 << 32)]
    if others:
        choices.append(_pick(rng, others))    # reuse another message's id
    value = _pick(rng, choices)
    _put(m, f.offset, 4, value)
    return f"request_id {old} -> {value & U32}"


def m_response_flags(m, f, rng, ctx, msgs, i):
    value = _pick(rng, (0, 1, 2, 3, 4, 0x80, 0xFF))
    m[f.offset] = value
    return f"response_flags {value}"


def m_boolean(m, f, rng, ctx, msgs, i):
    value = _pick(rng, (2, 0x7F, 0x80, 0xFF))
    m[f.offset] = value
    return f"boolean octet {value}"


def m_target_disc(m, f, rng, ctx, msgs, i):
    value = _pick(rng, (0, 1, 2, 3, 4, -1, 0x7FFF, -32768))
    _put(m, f.offset, 2, value)
    return f"TargetAddress discriminator {value}"


def m_profile_index(m, f, rng, ctx, msgs, i):
    value = _pick(rng, (1, 7, U32, 0x80000000))
    _put(m, f.offset, 4, value)
    return f"selected_profile_index {value}"


def m_length(m, f, rng, ctx, msgs, i):
    """A CDR length or count: 0, 1, max, just beyond the message, 0xffffffff."""
    old = _get(m, f.offset, 4)
    beyond = len(m) - (f.offset + 4) + 1
    value = _pick(rng, (0, 1, 0x7FFFFFFF, U32, beyond, beyond - 1, old + 1, old - 1,
                        old * 2 + 1, 0x10000))
    _put(m, f.offset, 4, value)
    return f"{old} -> {value & U32}"


def m_ulong(m, f, rng, ctx, msgs, i):
    value = _pick(rng, (0, 1, U32, 0x7FFFFFFF, rng.randrange(1 << 32)))
    _put(m, f.offset, 4, value)
    return f"{value & U32}"


def m_string_nul(m, f, rng, ctx, msgs, i):
    value = _pick(rng, (0x41, 0xFF, 0x01))
    m[f.offset] = value
    return f"terminator {value:#x}"


def m_enum(m, f, rng, ctx, msgs, i):
    value = _pick(rng, (U32, 0x7FFFFFFF, 0x10000, 1000, _get(m, f.offset, 4) + 64))
    _put(m, f.offset, 4, value)
    return f"enum {value & U32}"


def m_discriminator(m, f, rng, ctx, msgs, i):
    bits = 8 * f.size
    value = _pick(rng, (0, 1, 2, (1 << bits) - 1, 1 << (bits - 1), (1 << (bits - 1)) - 1,
                        rng.randrange(1 << bits)))
    _put(m, f.offset, f.size, value)
    return f"discriminator {value}"


# Indirection offsets relative to the offset field itself (CORBA 3.x Part 2, 9.3.5.1):
# -4 lands on the 0xffffffff that starts this very TypeCode.
_INDIRECTIONS = {"self": -4, "zero": 0, "forward": 8, "outside": -4096, "misaligned": -6,
                 "huge": 0x7FFFFFF0}


# An any value's own TypeCode (the layout's path for it; the kinds inside its
# parameters are ``...typecode.content.kind``, ``...member[0].kind``): where
# nest_any aims, on a share of the cases aimed at it.
ANY_TYPECODE = ".typecode.kind"
NEST_SHARE = 0.25
# Levels of any put around an any value: even (8 bytes a pair, so what
# follows keeps its 8-byte alignment), a few to many.  (Decoders that
# recurse per level, or copy the inner value at each, pay per level:
# omniORB 4.2.5's C++ ORB doubles its CPU with each, 0.15 s at 17 levels,
# 18 minutes at 30: one step of 16 or more from an any of a seed makes a
# cost the campaign sees, a case still running past its watch included.)
NEST_LEVELS = (2, 4, 8, 16, 24)
TK_ANY = 11


def nest_any(m, f, rng):
    """The any value whose TypeCode kind is field ``f`` put inside
    NEST_LEVELS anys (an any holding an any holding ... the value): that
    many tk_any TypeCodes before its own."""
    levels = _pick(rng, NEST_LEVELS)
    m[f.offset:f.offset] = TK_ANY.to_bytes(4, "little" if _little(m) else "big") * levels
    fix_size(m)
    return f"any nested {levels} levels deeper"


def m_tc_kind(m, f, rng, ctx, msgs, i):
    if f.path.endswith(ANY_TYPECODE):
        # The draw below, peeked at: nesting takes the top NEST_SHARE of it
        # (of the kind values' half), so the other cases draw as they did
        # before nest_any was (a fixed seed's campaign makes them again).
        state = rng.getstate()
        peeked = rng.random()
        if peeked >= 1 - NEST_SHARE:
            return nest_any(m, f, rng)
        rng.setstate(state)
    if rng.random() < 0.5 and f.offset + 8 <= len(m):
        name = _pick(rng, tuple(_INDIRECTIONS))
        _put(m, f.offset, 4, INDIRECTION)
        _put(m, f.offset + 4, 4, _INDIRECTIONS[name])
        return f"indirection {name}"
    value = _pick(rng, (0, 1, 11, 12, 13, 14, 15, 16, 19, 21, 29, 31, 37, 0x7FFFFFFF, U32 - 1,
                        rng.randrange(40)))
    _put(m, f.offset, 4, value)
    return f"kind {value}"


def m_tc_indirection(m, f, rng, ctx, msgs, i):
    name = _pick(rng, tuple(_INDIRECTIONS))
    _put(m, f.offset, 4, _INDIRECTIONS[name])
    return f"indirection {name}"


def m_tc_length(m, f, rng, ctx, msgs, i):
    old = _get(m, f.offset, 4)
    value = _pick(rng, (0, 1, old + 4, max(old - 4, 0), U32, len(m)))
    _put(m, f.offset, 4, value)
    return f"encapsulation length {old} -> {value & U32}"


def m_encap_order(m, f, rng, ctx, msgs, i):
    m[f.offset] = _pick(rng, (m[f.offset] ^ 1, 0xFF, 2))
    return f"encapsulation byte order octet {m[f.offset]}"


def m_padding(m, f, rng, ctx, msgs, i):
    value = _pick(rng, (0xA5, 0xFF, 0x01))
    m[f.offset:f.offset + f.size] = bytes([value]) * f.size
    return f"padding {value:#x}"


def m_bytes(m, f, rng, ctx, msgs, i):
    m[f.offset:f.offset + f.size] = bytes(rng.randrange(256) for _ in range(f.size))
    return "random"


def m_context_id(m, f, rng, ctx, msgs, i):
    value = _pick(rng, (1, 0, 6, 15, 0x4F4D4F00, U32))   # CodeSets, TransactionService, ...
    _put(m, f.offset, 4, value)
    return f"context id {value:#x}"


def _replace_sequence(m: bytearray, length_at: int, old_len: int, new: bytes,
                      nul: bool) -> None:
    """Replace an octet sequence or string (at its length field) by ``new``."""
    body = new + (b"\0" if nul else b"")
    end = length_at + 4 + old_len
    m[length_at:end] = len(body).to_bytes(4, "little" if _little(m) else "big") + body
    fix_size(m)


def m_operation(m, f, rng, ctx, msgs, i):
    new = _pick(rng, (b"", b"_is_a", b"_non_existent", b"_interface", b"A" * 1000,
                      b"\xff\xfe", b"op\0hidden", b"_get_" + bytes(f.size)))
    _replace_sequence(m, f.offset - 4, f.size + 1, new, nul=True)
    return f"operation {new[:20]!r}"


def m_object_key(m, f, rng, ctx, msgs, i):
    new = _pick(rng, (b"", ctx.object_key, b"\xff" * 32, ctx.object_key + b"\0",
                      ctx.object_key[:-1], b"RootPOA", bytes(4096)))
    _replace_sequence(m, f.offset - 4, f.size, new, nul=False)
    return f"object key {new[:20]!r}"


FIELD_MUTATORS = {
    "magic": m_magic, "version": m_version, "flags": m_flags, "msg_type": m_msg_type,
    "size": m_size, "request_id": m_request_id, "response_flags": m_response_flags,
    "boolean": m_boolean, "target_disc": m_target_disc, "profile_index": m_profile_index,
    "length": m_length, "count": m_length, "ulong": m_ulong, "string_nul": m_string_nul,
    "enum": m_enum, "discriminator": m_discriminator, "tc_kind": m_tc_kind,
    "tc_indirection": m_tc_indirection, "tc_length": m_tc_length,
    "encap_order": m_encap_order, "padding": m_padding, "bytes": m_bytes,
    "context_id": m_context_id, "operation": m_operation, "object_key": m_object_key,
}
# Fields inside the structure get picked more often than the header's five.
FIELD_WEIGHT = {"tc_kind": 3, "tc_indirection": 3, "tc_length": 2, "discriminator": 2,
                "enum": 2, "boolean": 2, "count": 2, "length": 2, "target_disc": 3,
                "request_id": 2}


# --------------------------------------------------------------------------
# Message-level mutators: (msgs, index, rng, ctx) -> Mutation or None
def x_readdress(msgs, i, rng, ctx):
    """Re-encode a 1.2+ Request/LocateRequest with another TargetAddress:
    ProfileAddr, ReferenceAddr (a good or a bad profile index), another key."""
    m = msgs[i]
    if len(m) < HEADER_SIZE or (m[4], m[5]) < (1, 2) or m[7] not in (0, 3) or \
            m[6] & FLAG_MORE_FRAGMENTS:
        return None
    try:
        msg, _ = decode_message(bytes(m), lenient=True)
    except (PycdrError, ValueError):
        # (ValueError: a ZIOP header whose message_size passes the bytes there are)
        return None
    choices = ["key"]
    if ctx.profile is not None:
        choices += ["profile", "reference", "reference-bad-index"]
    how = _pick(rng, choices)
    if how == "profile":
        msg.target = ProfileAddr(ctx.profile)
    elif how.startswith("reference"):
        msg.target = ReferenceAddr(7 if how.endswith("index") else 0, ctx.ior)
    else:
        msg.target = KeyAddr(_pick(rng, (b"", ctx.object_key + b"x", b"\0" * 8)))
    body = getattr(msg, "body", b"")
    try:
        data = encode_message(msg, write_body=(lambda w: (w.align(8), w.write_raw(body)))
                              if body else None)
    except (PycdrError, ValueError):
        return None
    msgs[i] = bytearray(data)
    kind = "request" if m[7] == 0 else "locate_request"
    return Mutation("target_address", _path(i, f"{kind}.target"), f"readdressed: {how}")


def x_duplicate_context(msgs, i, rng, ctx):
    layout = ctx.fields(bytes(msgs[i]))
    fields = [f for f in layout if f.path.endswith("].id")]
    count = [f for f in layout if f.path.endswith("service_context.count")]
    if not fields or not count:
        return None
    f = _pick(rng, fields)
    m = msgs[i]
    length = _get(m, f.offset + 4, 4)
    entry = bytes(m[f.offset:f.offset + 8 + length])
    entry += bytes((-len(entry)) & 3)          # the next entry's id is 4-aligned
    m[f.offset:f.offset] = entry
    _put(m, count[0].offset, 4, _get(m, count[0].offset, 4) + 1)
    fix_size(m)
    return Mutation("service_context", _path(i, f.path.rsplit(".", 1)[0]), "duplicated")


def _fragment_chain(m: bytes, rng) -> list | None:
    if len(m) < HEADER_SIZE:          # an earlier mutation cut the header
        return None
    version = (m[4], m[5])
    if m[7] not in (MsgType.Request, MsgType.Reply, MsgType.LocateRequest,
                    MsgType.LocateReply) or m[6] & FLAG_MORE_FRAGMENTS:
        return None
    if version >= (1, 2):
        try:
            chain = fragment_message(bytes(m), _pick(rng, (24, 32, 40)))
        except PycdrError:
            return None
        return chain if len(chain) > 1 else None
    if version == (1, 1) and m[7] in (MsgType.Request, MsgType.Reply):
        body = bytes(m[HEADER_SIZE:])
        size = _pick(rng, (8, 16))
        pieces = [body[k:k + size] for k in range(0, len(body), size)]
        if len(pieces) < 2:
            return None
        little = _little(m)
        out = [encode_header(version, little, m[7], len(pieces[0]), more_fragments=True)
               + pieces[0]]
        for k, piece in enumerate(pieces[1:], 1):
            out.append(encode_header(version, little, MsgType.Fragment, len(piece),
                                     more_fragments=k < len(pieces) - 1) + piece)
        return out
    return None


def x_fragments(msgs, i, rng, ctx):
    """Fragment chains: split, reorder, duplicate, interleave, drop the last,
    more-fragments on a type that may not be fragmented."""
    m = bytes(msgs[i])
    if len(m) < HEADER_SIZE:          # an earlier mutation cut the header
        return None
    op = _pick(rng, ("split", "reorder", "duplicate", "interleave", "drop-last",
                     "more-on-wrong-type", "more-cleared"))
    if op == "more-on-wrong-type":
        if m[7] not in (MsgType.CancelRequest, MsgType.CloseConnection, MsgType.MessageError) \
                and not ((m[4], m[5]) == (1, 1) and m[7] == MsgType.LocateRequest):
            return None
        msgs[i][6] |= FLAG_MORE_FRAGMENTS
        return Mutation("fragments", _path(i, "header.flags.more_fragments"), op)
    if op == "more-cleared":
        if not m[6] & FLAG_MORE_FRAGMENTS:
            return None
        msgs[i][6] &= ~FLAG_MORE_FRAGMENTS
        return Mutation("fragments", _path(i, "header.flags.more_fragments"), op)
    chain = _fragment_chain(m, rng)
    if chain is None:
        return None
    chain = [bytearray(c) for c in chain]
    if op == "reorder":
        a, b = rng.sample(range(len(chain)), 2)
        chain[a], chain[b] = chain[b], chain[a]
    elif op == "duplicate":
        k = rng.randrange(1, len(chain))
        chain.insert(k, bytearray(chain[k]))
    elif op == "drop-last":
        chain.pop()
    elif op == "interleave":
        other = _other_message(rng, ctx)
        second = _fragment_chain(other, rng) if other is not None else None
        if second:
            merged = []
            for k in range(max(len(chain), len(second))):
                merged += [bytearray(x[k]) for x in (chain, second) if k < len(x)]
            chain = merged
    msgs[i:i + 1] = chain
    return Mutation("fragments", _path(i, "fragments"), op)


def _other_message(rng, ctx):
    if not ctx.seeds:
        return None
    seed = _pick(rng, ctx.seeds)
    return _pick(rng, seed.messages)


def x_flip(msgs, i, rng, ctx):
    """Structure-blind: flip 1-4 bits; the path is the field the first one hit."""
    m = msgs[i]
    if not m:
        return None
    offsets = [rng.randrange(len(m)) for _ in range(rng.randint(1, 4))]
    for at in offsets:
        m[at] ^= 1 << rng.randrange(8)
    return Mutation("byte_flip", _path(i, field_at(ctx, bytes(m), offsets[0])),
                    "bits at " + ",".join(map(str, offsets)))


def field_at(ctx: MutationContext, data: bytes, offset: int, fields=None) -> str:
    """The narrowest known field holding ``offset`` (``body`` past the header);
    ``fields``: those of ``data``, when already worked out."""
    best = None
    for f in ctx.fields(data) if fields is None else fields:
        if f.offset <= offset < f.offset + f.size and (best is None or f.size <= best.size):
            best = f
    if best is not None:
        return best.path
    return "header" if offset < HEADER_SIZE else "payload"


def x_splice(msgs, i, rng, ctx):
    other = _other_message(rng, ctx)
    m = msgs[i]
    if other is None or len(m) <= HEADER_SIZE or len(other) <= HEADER_SIZE:
        return None
    a = rng.randrange(HEADER_SIZE, len(m) + 1)
    b = rng.randrange(HEADER_SIZE, len(other) + 1)
    msgs[i] = bytearray(m[:a] + other[b:])
    fix_size(msgs[i])
    return Mutation("splice", _path(i, field_at(ctx, bytes(m), min(a, len(m) - 1))),
                    f"{a}+{b}")


def x_truncate(msgs, i, rng, ctx):
    m = msgs[i]
    if len(m) <= HEADER_SIZE + 1:
        return None
    at = rng.randrange(HEADER_SIZE, len(m))
    path = field_at(ctx, bytes(m), at)
    del m[at:]
    fix_size(m)
    return Mutation("truncate", _path(i, path), f"cut at {at}")


MESSAGE_MUTATORS = {"target_address": x_readdress, "service_context": x_duplicate_context,
                    "fragments": x_fragments, "byte_flip": x_flip, "splice": x_splice,
                    "truncate": x_truncate}
# The mutator names a coverage table lists: field kinds grouped as the issue names them.
FIELD_GROUP = {"magic": "header", "version": "header", "flags": "header",
               "msg_type": "header", "size": "header", "request_id": "request_id",
               "response_flags": "response_flags", "boolean": "boolean_enum",
               "enum": "boolean_enum", "target_disc": "target_address",
               "profile_index": "target_address", "length": "cdr_length", "count": "cdr_length",
               "ulong": "cdr_length", "string_nul": "string_terminator",
               "discriminator": "union_discriminator", "tc_kind": "typecode",
               "tc_indirection": "typecode", "tc_length": "typecode",
               "encap_order": "encapsulation_order", "padding": "padding", "bytes": "padding",
               "context_id": "service_context", "operation": "operation",
               "object_key": "object_key"}
MUTATOR_NAMES = sorted(set(FIELD_GROUP.values()) | set(MESSAGE_MUTATORS))


def mutate(messages, rng: random.Random, ctx: MutationContext,
           body_types=None) -> tuple[list, list]:
    """Apply 1-3 mutations to a copy of ``messages``; return the new messages
    and the mutations made."""
    msgs = [bytearray(m) for m in messages]
    done: list[Mutation] = []
    count = 1 if rng.random() < 0.75 else (2 if rng.random() < 0.8 else 3)
    for _ in range(count * 3):            # a few tries: some mutators do not apply
        if len(done) >= count or not msgs:
            break
        i = rng.randrange(len(msgs))
        # (rng is drawn from for it only under --callback: other campaigns'
        # cases stay what they were.)
        if ctx.callback is not None and rng.random() < ctx.callback.share:
            result = ctx.callback.plant(msgs, i, rng, ctx, body_types if i == 0 else None)
            if result is not None:
                done.append(result)
        elif rng.random() < 0.72:
            fields, cum_weights = ctx.aimable(bytes(msgs[i]), body_types if i == 0 else None)
            if not fields:
                continue
            f = rng.choices(fields, cum_weights=cum_weights)[0]
            detail = FIELD_MUTATORS[f.kind](msgs[i], f, rng, ctx, msgs, i)
            if detail is None:
                continue
            done.append(Mutation(FIELD_GROUP[f.kind], _path(i, f.path), detail))
        else:
            name = _pick(rng, tuple(MESSAGE_MUTATORS))
            if len(msgs[i]) < HEADER_SIZE and name != "byte_flip":
                continue        # a header fragment: only blind flips make sense
            result = MESSAGE_MUTATORS[name](msgs, i, rng, ctx)
            if result is None:
                continue
            done.append(result)
    return [bytes(m) for m in msgs], done


def target_profile(target):
    """The TaggedProfile and IOR the readdressing mutator uses for ``target``."""
    profile = encode_profile(IIOPProfile((1, 2), target.host, target.port, target.object_key,
                                         (), False))
    ior = target.ior if target.ior is not None and target.ior.profiles else \
        IOR(target.type_id or "IDL:omg.org/CORBA/Object:1.0", (profile,))
    return profile, ior
