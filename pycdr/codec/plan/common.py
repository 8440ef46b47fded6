"""What the plan modules share: the bounds of a decode (the C path reads
``MAX_DEPTH`` and ``GC_PAUSE_MIN`` from :mod:`pycdr.codec.plan` at import) and the
signal a fast path gives when only the general path may judge a value."""

from __future__ import annotations

import sys

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
