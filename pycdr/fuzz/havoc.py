"""Byte-level mutations (AFL's havoc): bit flips, interesting values, small
arithmetic, random bytes, inserted, cloned and deleted blocks, splices from
another input -- anywhere in a message, the arguments' bytes included.
Beside the structure-aware mutators (pycdr.fuzz.mutators), they let coverage
feedback lead the fuzzer byte by byte into the checks a target makes.

After an insert or a delete, the length fields pycdr.giop.layout finds in the
message (strings, sequences, encapsulations: kind "length") whose extent
holds the change are fixed up, and so is the GIOP message_size: the change
stays inside the value it was made in instead of shifting every field after
it.  Bytes overwritten in place are left as they are (a length field among
them is mutated on purpose)."""

from __future__ import annotations

import random
from dataclasses import replace

from ..giop.header import HEADER_SIZE
from .mutators import Mutation, MutationContext, _get, _path, _put, field_at, fix_size

INTERESTING_8 = (0x80, 0xFF, 0, 1, 16, 32, 64, 100, 127)
INTERESTING_16 = (0x8000, 0xFF7F, 128, 255, 256, 512, 1000, 1024, 4096, 32767)
INTERESTING_32 = (0x80000000, 0xFA0000FA, 0xFFFF7FFF, 32768, 65535, 65536, 100663045,
                  0x7FFFFFFF)
ARITH_MAX = 35
MAX_BLOCK = 32
BODY_SHARE = 0.5
VALUE_HEAD = 4
# The largest message havoc grows (inserts stop there).
MAX_MESSAGE = 64 << 10


def _at(m, rng, aim: tuple, size: int = 1, floor: int = 0) -> int:
    """A position for ``size`` bytes: in ``aim`` (lo, hi) when they fit
    there, else from ``floor`` on."""
    top = len(m) - size + 1
    lo, hi = aim
    if max(lo, floor) < min(hi, top):
        return rng.randrange(max(lo, floor), min(hi, top))
    return rng.randrange(floor, top)


def _flip(m, rng, other, aim):
    at = _at(m, rng, aim)
    m[at] ^= 1 << rng.randrange(8)
    return at, 0, "flip"


def _interesting(m, rng, other, aim):
    size = rng.choice((1, 2, 4))
    if len(m) < size:
        return None
    at = _at(m, rng, aim, size)
    value = rng.choice({1: INTERESTING_8, 2: INTERESTING_16, 4: INTERESTING_32}[size])
    m[at:at + size] = value.to_bytes(size, rng.choice(("big", "little")))
    return at, 0, f"interesting{8 * size}"


def _arith(m, rng, other, aim):
    size = rng.choice((1, 2, 4))
    if len(m) < size:
        return None
    at = _at(m, rng, aim, size)
    order = rng.choice(("big", "little"))
    delta = rng.choice((-1, 1)) * rng.randint(1, ARITH_MAX)
    value = int.from_bytes(m[at:at + size], order) + delta
    m[at:at + size] = (value % (1 << (8 * size))).to_bytes(size, order)
    return at, 0, f"arith{8 * size}"


def _random_byte(m, rng, other, aim):
    at = _at(m, rng, aim)
    m[at] ^= rng.randrange(1, 256)
    return at, 0, "byte"


def _delete(m, rng, other, aim):
    if len(m) <= HEADER_SIZE + 1:
        return None
    at = _at(m, rng, aim, floor=HEADER_SIZE)
    n = rng.randint(1, min(MAX_BLOCK, len(m) - at))
    del m[at:at + n]
    return at, -n, "delete"


def _insert(m, rng, other, aim):
    if len(m) < HEADER_SIZE or len(m) >= MAX_MESSAGE:
        return None
    lo, hi = max(aim[0], HEADER_SIZE), min(aim[1], len(m))
    at = rng.randint(lo, hi) if lo <= hi else rng.randint(HEADER_SIZE, len(m))
    n = rng.randint(1, MAX_BLOCK)
    if rng.random() < 0.5 and len(m) > HEADER_SIZE:
        start = rng.randrange(HEADER_SIZE, len(m))           # a clone of bytes of its own
        block = bytes(m[start:start + n])
    else:
        block = bytes([rng.choice(INTERESTING_8)]) * n
    m[at:at] = block
    return at, len(block), "insert"


def _overwrite(m, rng, other, aim):
    source = other if other and len(other) > HEADER_SIZE and rng.random() < 0.5 else m
    if len(m) <= HEADER_SIZE or len(source) <= HEADER_SIZE:
        return None
    n = rng.randint(1, min(MAX_BLOCK, len(m) - HEADER_SIZE, len(source) - HEADER_SIZE))
    at = _at(m, rng, aim, n, floor=HEADER_SIZE)
    start = rng.randrange(HEADER_SIZE, len(source) - n + 1)
    m[at:at + n] = source[start:start + n]
    return at, 0, "overwrite"


OPERATIONS = (_flip, _flip, _interesting, _interesting, _arith, _random_byte, _delete, _insert,
              _overwrite)


def body_start(fields) -> int:
    """Where the body of a message begins, past every field of its headers
    the layout knows (HEADER_SIZE when it knows none); ``fields``: the
    message's layout."""
    ends = [f.offset + f.size for f in fields
            if ".body" not in f.path and f.kind != "padding"]
    return max(ends, default=HEADER_SIZE)


def _aim_points(fields) -> tuple:
    """(where the body begins, where the contents of its strings and
    sequences begin), from a message's layout."""
    start = body_start(fields)
    return start, [f.offset + 4 for f in fields
                   if f.kind == "length" and f.size == 4 and f.offset >= start]


def _aim(data: bytes, rng: random.Random, points: tuple) -> tuple:
    """Where a body-aimed mutation goes, (lo, hi): the body, or half the
    time the first bytes of a string's or sequence's contents in it (where
    a parser's checks on a value's prefix look); ``points``: _aim_points of
    the message's layout."""
    start, values = points
    if rng.random() < 0.5:
        if values:
            at = rng.choice(values)
            return at, at + VALUE_HEAD
    return start, len(data)


def fix_lengths(m: bytearray, before: bytes, at: int, delta: int, ctx: MutationContext,
                body_types=None, fields=None) -> None:
    """Bytes were inserted (``delta`` > 0) or deleted at ``at`` of ``before``:
    each length field of ``before`` whose value's extent holds the change
    gets ``delta`` added.  ``fields``: the layout of ``before``, when
    already worked out."""
    for f in ctx.fields(before, body_types) if fields is None else fields:
        if f.kind != "length" or f.size != 4 or f.offset + 4 > at:
            continue
        length = _get(before, f.offset, 4)
        end = f.offset + 4 + length
        inside = at < end if delta > 0 else at - delta <= end
        if inside and length + delta >= 0:
            _put(m, f.offset, 4, length + delta)


def shifted(fields, at: int, delta: int) -> list:
    """A layout after ``delta`` bytes were inserted (> 0) or deleted (< 0)
    at ``at``: fields past the change moved, fields holding it resized, fields
    wholly deleted gone."""
    out = []
    if delta > 0:
        for f in fields:
            if f.offset >= at:
                f = replace(f, offset=f.offset + delta)
            elif at < f.offset + f.size:
                f = replace(f, size=f.size + delta)
            out.append(f)
        return out
    cut_end = at - delta
    for f in fields:
        end = f.offset + f.size
        if end <= at:
            out.append(f)
        elif f.offset >= cut_end:
            out.append(replace(f, offset=f.offset + delta))
        else:
            # overlapping the deleted bytes: what is left of it, where it now lies
            start = min(f.offset, at)
            size = (min(end, at) - start) + max(0, end - cut_end)
            if size > 0:
                out.append(replace(f, offset=start, size=size))
    return out


def splice(a: bytes, b: bytes, rng: random.Random) -> bytes:
    """The head of message ``a`` and the tail of ``b``, cut past their headers."""
    if len(a) <= HEADER_SIZE or len(b) <= HEADER_SIZE:
        return a
    m = bytearray(a[:rng.randrange(HEADER_SIZE, len(a) + 1)] +
                  b[rng.randrange(HEADER_SIZE, len(b) + 1):])
    fix_size(m)
    return bytes(m)


def havoc(messages, rng: random.Random, ctx: MutationContext, other=None,
          body_types=None) -> tuple[list, list]:
    """A stack of 1-16 byte-level mutations on a copy of ``messages`` (one
    message each, chosen at random); ``other``: another input's messages,
    spliced or copied from; ``body_types``: the TypeCodes of the first
    message's body values, if known (their lengths are fixed up too).  The
    new messages and the mutations made."""
    msgs = [bytearray(m) for m in messages]
    if not msgs:
        return [], []
    done = []
    donor = b"".join(other) if other else b""
    if other and rng.random() < 0.2:
        i = rng.randrange(len(msgs))
        msgs[i] = bytearray(splice(bytes(msgs[i]), rng.choice(other), rng))
        done.append(Mutation("havoc", _path(i, "payload"), "splice"))
    # The layout of each message, worked out once and kept while the
    # mutations leave its fields where they were (not after an insert or a
    # delete, or a change to a length: the fields after it move).
    layouts: dict = {}
    for _ in range(1 << rng.randrange(5)):
        i = rng.randrange(len(msgs))
        m = msgs[i]
        if not m:
            continue
        before = bytes(m)
        types = body_types if i == 0 else None
        layout = layouts.get(i)
        if layout is None:
            layout = layouts[i] = [ctx.fields(before, types), None]
        fields = layout[0]
        # Half the time aimed at the body: the arguments' bytes, where a
        # servant's own checks are.
        if rng.random() < BODY_SHARE:
            if layout[1] is None:
                layout[1] = ctx.derived(before, types, fields, _aim_points)
            aim = _aim(before, rng, layout[1])
        else:
            aim = (0, len(before))
        result = rng.choice(OPERATIONS)(m, rng, donor, aim)
        if result is None:
            continue
        at, delta, name = result
        if delta:
            fix_lengths(m, before, at, delta, ctx, fields=fields)
            fix_size(m)
            # The fields after the change move with it, the ones around it
            # grow or shrink (their lengths were just fixed up to say so): the
            # layout the message was meant to have, without parsing it again.
            layouts[i] = [shifted(fields, at, delta), None]
        elif any(f.kind == "length" and f.offset <= at + 3 and at < f.offset + f.size
                 for f in fields):
            del layouts[i]
        done.append(Mutation("havoc", _path(i, field_at(ctx, before, min(at, len(before) - 1),
                                                        fields)), f"{name}@{at}"))
    return [bytes(m) for m in msgs], done
