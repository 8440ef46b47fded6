"""Findings: what a case did to the target, minimized and saved.

A finding is one fault: its kind, the symptom (for a hang: of the ORB core
or past it), its trigger's signature (the message types of the minimized
case) and where the minimized case ends (the field of the original case
holding its last byte: where the target read what broke it); a case that
does a confirmed finding's kind with the same message types through the
same mutated fields, or does the same fault, is listed under it (``hits``)
instead of being a finding of its own.  It is
confirmed only when its case, alone, does the same against a fresh target
several times (the engine's _attribute); it is minimized on the way by delta
debugging: first the message sequence (ddmin over the messages), then each
remaining message's tail (the shortest prefix, with the header's size
fixed, that still triggers).  A confirmed finding's folder holds:

    finding.json    kind, path, details, the case (index, campaign seed,
                    mutations), the original and the minimized messages,
                    how often it reproduced, the cases that were in flight
    messages.hex    the minimized messages, one per line
    original.hex    the case's messages as first sent
    seed.json       the seed the case was mutated from
    capture.pcap    the minimized messages and the answers to them (scapy)
    replay.txt      the one-line `pycdr fuzz ... --replay FOLDER` command
    sanitizer.txt   for a crash of a target built with a sanitizer: its
                    report (the error's kind and top frames are in
                    finding.json's details, "sanitizer")

An unconfirmed one (the target broke, but no case in flight did it alone)
gets finding.json and in-flight.hex (every case in flight, one line of
hex messages joined by spaces per case), and no replay.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass, field

from ..capture.write import StreamPcapWriter
from ..errors import PycdrError
from .mutators import fix_size
from .sanitizer import symbolize_frames

# Tests a minimization may spend (each is one isolated run, maybe a restart).
MAX_TESTS = 40


@dataclass
class Finding:
    kind: str
    path: str
    case: object                       # case.Case
    details: dict
    campaign_seed: int
    seed: object = None                # seeds.Seed
    minimized: list = field(default_factory=list)
    confirmed: bool = False
    reproductions: int = 0             # in a row, alone, against a fresh target
    in_flight: list = field(default_factory=list)   # case.Case sent while it happened
    hits: list = field(default_factory=list)        # other case.Cases that did it since
    tests: int = 0
    folder: str | None = None
    answers: bytes = b""

    @property
    def messages(self) -> list:
        return self.minimized or self.case.messages

    def to_json(self) -> dict:
        details = {k: v for k, v in self.details.items() if k != "sanitizer_report"}
        return {"kind": self.kind, "path": self.path, "details": details,
                "confirmed": self.confirmed, "reproductions": self.reproductions,
                "in_flight": [c.index for c in self.in_flight],
                "hits": [{"index": c.index, "path": c.path} for c in self.hits],
                "minimization_tests": self.tests,
                "campaign_seed": self.campaign_seed, "case": self.case.to_json(),
                "minimized": [m.hex() for m in self.messages], "folder": self.folder}


def ddmin(items: list, test) -> list:
    """Zeller's delta debugging: a 1-minimal sub-list of ``items`` for which
    ``test`` holds (``test(items)`` is assumed to hold)."""
    n = 2
    while len(items) >= 2:
        size = max(1, len(items) // n)
        chunks = [items[i:i + size] for i in range(0, len(items), size)]
        reduced = False
        for i in range(len(chunks)):
            complement = [x for j, c in enumerate(chunks) if j != i for x in c]
            if complement and test(complement):
                items = complement
                n = max(n - 1, 2)
                reduced = True
                break
        if not reduced:
            if n >= len(items):
                break
            n = min(len(items), n * 2)
    return items


def minimize(campaign, finding: Finding) -> None:
    """Shrink the finding's messages while they still trigger its kind (its
    case is known to trigger it once)."""
    budget = [MAX_TESTS]

    def test(messages) -> bool:
        if budget[0] <= 0:
            return False
        budget[0] -= 1
        finding.tests += 1
        if campaign.reproduces(finding.kind, messages):
            finding.answers = campaign.last_received
            return True
        return False

    messages = ddmin(list(finding.case.messages), test)
    # The tail of each message: binary search for the shortest prefix.
    for i, message in enumerate(messages):
        lo, hi = min(16, len(message)), len(message)
        while lo < hi and budget[0] > 0:
            mid = (lo + hi) // 2
            shorter = bytearray(message[:mid])
            fix_size(shorter)
            trial = messages[:i] + [bytes(shorter)] + messages[i + 1:]
            if test(trial):
                hi = mid
                messages = trial
            else:
                lo = mid + 1
    finding.minimized = messages


def known_hit(finding: Finding, case) -> None:
    """``case`` did ``finding``'s fault again: listed under it (and in its
    saved finding.json, once saved)."""
    if case is finding.case or any(c is case for c in finding.hits):
        return
    finding.hits.append(case)
    if finding.folder is not None:
        path = os.path.join(finding.folder, "finding.json")
        with open(path) as f:
            data = json.load(f)
        data["hits"] = finding.to_json()["hits"]
        with open(path, "w") as f:
            json.dump(data, f, indent=1)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)[:80]


def replay_command(target_text: str | None, spawn: str | None, folder: str) -> str:
    where = f"--spawn {shlex.quote(spawn)}" if spawn else shlex.quote(target_text or "")
    return f"pycdr fuzz {where} --replay {shlex.quote(folder)}"


def save(finding: Finding, out_dir: str, number: int, *, target_text, spawn,
         answers: bytes = b"") -> str:
    if not finding.confirmed:
        return save_unconfirmed(finding, out_dir, number)
    folder = os.path.join(out_dir, f"{number:03d}-{finding.kind}-{_slug(finding.path)}")
    os.makedirs(folder, exist_ok=True)
    finding.folder = folder
    _save_sanitizer_report(finding, folder)
    command = replay_command(target_text, spawn, folder)
    data = finding.to_json()
    data["replay"] = command
    with open(os.path.join(folder, "finding.json"), "w") as f:
        json.dump(data, f, indent=1)
    with open(os.path.join(folder, "messages.hex"), "w") as f:
        f.write("".join(m.hex() + "\n" for m in finding.messages))
    with open(os.path.join(folder, "original.hex"), "w") as f:
        f.write("".join(m.hex() + "\n" for m in finding.case.messages))
    with open(os.path.join(folder, "seed.json"), "w") as f:
        json.dump({"campaign_seed": finding.campaign_seed, "case_index": finding.case.index,
                   "seed": finding.seed.to_json() if finding.seed is not None else None},
                  f, indent=1)
    with open(os.path.join(folder, "replay.txt"), "w") as f:
        f.write(command + "\n")
    write_pcap(os.path.join(folder, "capture.pcap"), finding.messages, answers)
    return folder


def save_unconfirmed(finding: Finding, out_dir: str, number: int) -> str:
    folder = os.path.join(out_dir, "unconfirmed", f"{number:03d}-{finding.kind}")
    os.makedirs(folder, exist_ok=True)
    finding.folder = folder
    _save_sanitizer_report(finding, folder)
    with open(os.path.join(folder, "finding.json"), "w") as f:
        json.dump(dict(finding.to_json(),
                       in_flight_cases=[c.to_json() for c in finding.in_flight]), f, indent=1)
    with open(os.path.join(folder, "in-flight.hex"), "w") as f:
        f.write("".join(" ".join(m.hex() for m in c.messages) + "\n"
                        for c in finding.in_flight))
    return folder


def _save_sanitizer_report(finding: Finding, folder: str) -> None:
    """A crash with a sanitizer report: the report in sanitizer.txt, its top
    frames named (once, here: llvm-symbolizer takes a while on a large
    library) in the details."""
    text = finding.details.get("sanitizer_report")
    if not text:
        return
    with open(os.path.join(folder, "sanitizer.txt"), "w") as f:
        f.write(text)
    report = finding.details.get("sanitizer")
    if report:
        finding.details["sanitizer"] = dict(report, frames=symbolize_frames(report["frames"]))


class FindingError(PycdrError):
    """A saved finding that cannot be read back (a damaged or hand-edited folder)."""


def load_messages(folder: str) -> tuple[str, list]:
    """(kind, minimized messages) of a saved finding; FindingError if it is damaged."""
    path = os.path.join(folder, "finding.json")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise FindingError(f"{path}: cannot read: {e.strerror}") from None
    except (ValueError, RecursionError) as e:    # not UTF-8, not JSON, or absurdly nested
        raise FindingError(f"{path}: not a finding's JSON ({e or 'nested too deeply'})") from None
    if not isinstance(data, dict):
        raise FindingError(f"{path}: not a finding (a JSON object is expected)")
    kind, minimized = data.get("kind"), data.get("minimized")
    if not isinstance(kind, str):
        raise FindingError(f"{path}: no \"kind\" string")
    if not isinstance(minimized, list) or not minimized:
        raise FindingError(f"{path}: no \"minimized\" list of messages")
    messages = []
    for number, text in enumerate(minimized):
        try:
            messages.append(bytes.fromhex(text))
        except (TypeError, ValueError):
            raise FindingError(f"{path}: minimized message {number} is not hex") from None
    return kind, messages


def write_pcap(path: str, messages, answers: bytes = b"", port: int = 2809) -> None:
    """A pcap of one TCP session: the client's messages, then the server's
    answer bytes.  Written with pycdr.capture.write's own writer, not scapy: a
    finding is saved in the middle of a campaign, and importing scapy there
    stalled it for most of a second."""
    writer = StreamPcapWriter(path)
    try:
        flow = writer.connection(("10.0.0.1", 40000), ("10.0.0.2", port))
        for m in messages:
            flow.sends(True, m)
        if answers:
            flow.sends(False, answers)
        flow.close()
    finally:
        writer.close()
