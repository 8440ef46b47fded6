"""A fuzz case (the messages one case sends, the mutations that made them) and
what tells one fault from another: the message types of a trigger and where in the
original case it ends; the verdict of one run of a case on its own."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..conformance.wire import Observation
from ..giop.header import HEADER_SIZE, MsgType
from ..giop.layout import message_fields
from .prediction import Prediction

_TYPE_NAMES = {t.value: t.name for t in MsgType}


@dataclass
class Case:
    index: int
    seed_name: str
    messages: list
    mutations: list
    prediction: Prediction | None = None
    batchable: bool = False
    tail: bool = False
    parent: object = None        # the corpus entry it was mutated from (feedback campaigns)
    addressed: bool = False      # its making read the target's address (MutationContext)
    rerun_of: object = None      # the corpus entry it runs again unmutated (a first run's)

    @property
    def path(self) -> str:
        return "+".join(sorted({m.path for m in self.mutations})) or "unmutated"

    @property
    def field_keys(self) -> set:
        """The mutated field paths without message and element indexes (one
        bug reached through the third fragment or the fifth is one finding)."""
        return {normalize_path(m.path) for m in self.mutations} or {"unmutated"}

    def to_json(self) -> dict:
        return {"index": self.index, "seed": self.seed_name,
                "mutations": [m.to_json() for m in self.mutations],
                "messages": [m.hex() for m in self.messages]}


def normalize_path(path: str) -> str:
    return re.sub(r"\[\d+\]", "[]", re.sub(r"^msg\[\d+\]\.", "", path))


def trigger_signature(messages) -> tuple:
    """The GIOP message types of ``messages`` in order, a run of one type
    counted once (a fragment chain of three or of five is one shape)."""
    names = []
    for m in messages:
        name = _TYPE_NAMES.get(m[7], "invalid") if len(m) >= 8 and m[:4] == b"GIOP" \
            else "not-GIOP"
        if not names or names[-1] != name:
            names.append(name)
    return tuple(names)


def trigger_location(messages, original) -> str:
    """Where the trigger ends: the field of the original case holding the
    last byte the minimized ``messages`` kept of it (minimization cuts a
    message to the shortest prefix that still does it: there the target read
    what broke it), without indexes; "" when not known (the last message is
    no prefix of one of ``original``, or that one does not decode)."""
    if not messages:
        return ""
    last = messages[-1]
    for whole in original:
        if len(whole) >= len(last) >= HEADER_SIZE and whole[:8] == last[:8] and \
                whole[HEADER_SIZE:len(last)] == last[HEADER_SIZE:]:
            cut = len(last) - 1
            holding = [f for f in message_fields(whole)
                       if f.offset <= cut < f.offset + f.size and f.kind != "padding"]
            if not holding:
                return ""
            return normalize_path(min(holding, key=lambda f: f.size).path)
    return ""


@dataclass
class Verdict:
    """What one run of a case on its own connection showed: ``kind`` is None
    (nothing wrong, or a close: an outcome) or a finding kind: crash, hang,
    flood, memory, spin."""
    kind: str | None
    details: dict = field(default_factory=dict)
    observation: Observation | None = None
