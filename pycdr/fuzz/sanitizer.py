"""Sanitizer reports of a spawned target: a target built with
AddressSanitizer (or another of clang's sanitizers) that hits a memory error
writes a report to its stderr and exits; the report names the error
("heap-buffer-overflow", "heap-use-after-free", ...) and the stack where it
happened.  The spawned target's output is watched for the report's first
line (``==PID==ERROR: AddressSanitizer: KIND ...``) and the lines after it
are kept up to its end (``==PID==ABORTING``); a crash whose process left one
carries it in the finding's details (``sanitizer``: the sanitizer, the kind,
the access, the top frames) and the whole report is saved beside it.

Frames are kept as the report gives them: with ASAN_OPTIONS=symbolize=0 (the
report is written at once, so the crash is seen as an exit rather than as a
process that stopped answering while it symbolizes) a frame is
``(module+0xOFFSET)``; ``symbolize_frames`` names those with llvm-symbolizer
when it is on PATH.
"""

from __future__ import annotations

import re
import shutil
import subprocess

# The report's first line, its last, and a frame of one of its stacks.
START_RE = re.compile(r"==\d+==\s*ERROR: (\w+Sanitizer): ([\w-]+)(.*)")
END_RE = re.compile(r"==\d+==\s*ABORTING")
FRAME_RE = re.compile(r"^\s*#(\d+) 0x[0-9a-fA-F]+\s+(.*?)\s*(?:\(BuildId: [0-9a-f]+\))?$")
ACCESS_RE = re.compile(r"^(READ|WRITE) of size \d+ at 0x[0-9a-fA-F]+( thread \S+)?")
MODULE_OFFSET_RE = re.compile(r"^(?:in \S+ )?\((\S+)\+(0x[0-9a-fA-F]+)\)$")
# Lines of a report kept (the first stack and its summary come well before).
MAX_LINES = 400
# Frames of the first stack kept in a finding's details.
TOP_FRAMES = 8


class ReportWatcher:
    """Fed the target's output lines one by one; keeps the first sanitizer
    report (its lines from the ERROR line to ABORTING, at most MAX_LINES)."""

    def __init__(self):
        self.lines: list[str] = []
        self.complete = False

    def waiting(self, text: str) -> bool:
        """Whether lines of ``text`` (many, at once) may be fed anything
        kept: a report started and not complete, or one starts in it."""
        if self.complete:
            return False
        return bool(self.lines) or ("==" in text and START_RE.search(text) is not None)

    def feed(self, line: str) -> None:
        if self.complete:
            return
        if not self.lines:
            if START_RE.search(line):
                self.lines.append(line.rstrip("\n"))
            return
        self.lines.append(line.rstrip("\n"))
        if END_RE.search(line) or len(self.lines) >= MAX_LINES:
            self.complete = True

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n" if self.lines else ""


def parse_report(text: str) -> dict | None:
    """The facts of a sanitizer report: {"sanitizer", "kind", "access",
    "frames" (the first stack's top frames, "#N where"), "summary"}; None
    when ``text`` holds no report."""
    lines = text.splitlines()
    for start, line in enumerate(lines):
        m = START_RE.search(line)
        if m:
            break
    else:
        return None
    report = {"sanitizer": m.group(1), "kind": m.group(2), "access": None, "frames": [],
              "summary": None}
    in_first_stack = False
    for line in lines[start + 1:]:
        frame = FRAME_RE.match(line)
        if frame:
            if frame.group(1) == "0" and report["frames"]:
                in_first_stack = False       # the next stack (allocation, free)
                break
            in_first_stack = True
            if len(report["frames"]) < TOP_FRAMES:
                report["frames"].append(f"#{frame.group(1)} {frame.group(2)}")
            continue
        if in_first_stack:
            in_first_stack = False
            break
        access = ACCESS_RE.match(line.strip())
        if access and report["access"] is None:
            report["access"] = access.group(0)
    for line in lines[start + 1:]:
        if line.startswith("SUMMARY: "):
            report["summary"] = line[len("SUMMARY: "):].strip()
            break
    return report


def symbolize_frames(frames: list) -> list:
    """``frames`` with each ``(module+0xOFFSET)`` frame followed by the
    function and source line llvm-symbolizer gives for it; as they are when
    it is not on PATH or fails."""
    symbolizer = shutil.which("llvm-symbolizer")
    if symbolizer is None:
        return frames
    named = []
    for frame in frames:
        number, _, where = frame.partition(" ")
        m = MODULE_OFFSET_RE.match(where)
        if m is None:
            named.append(frame)
            continue
        try:
            done = subprocess.run([symbolizer, "--obj", m.group(1), "--functions=linkage",
                                   "--demangle", m.group(2)],
                                  capture_output=True, text=True, timeout=10)
            function, source = (done.stdout.strip().splitlines() + ["", ""])[:2]
        except (OSError, subprocess.SubprocessError, ValueError):
            function = source = ""
        if source.startswith("??"):
            source = ""                   # no line table for it (the ASan runtime's own)
        if function and function != "??":
            named.append(" ".join(filter(None, (number, function, source, where))))
        else:
            named.append(frame)
    return named
