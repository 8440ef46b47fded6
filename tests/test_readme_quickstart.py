"""The README's quick start, run for real.

The block after the ``<!-- quickstart`` comment in README.md is a console session:
a line ``$ COMMAND`` is typed, the lines under it are what it printed.  Each command
runs here, in that order, in a temporary folder (with the checkout's ``conformance/``
beside it, as in a checkout), and its output must be the one shown, after the
normalisations in NORMALISE.  A change to a command's output fails here until the
README shows the new one.

How the commands run:

- ``pycdr`` is the executable named by the environment variable PYCDR_EXE (CI points
  it at a wheel installed in another venv), else ``python -m pycdr.cli.main`` with
  this interpreter.  Each command line goes to ``bash -c``, so quoting and
  redirections are the shell's; standard output and standard error are read together,
  as a terminal shows them.  A command must exit with status 0.
- The README's port, 2809, is replaced by a free port this test picks on 127.0.0.1,
  in the commands, and back in what they print.
- A command ending in ``&`` runs in the background: its output is read until it has
  printed as many lines as the README shows under it (and whatever follows within
  a fifth of a second).  When it names ``--ready-file FILE``, the next command starts
  once FILE is written (a person typing is slower than that write).  The background
  processes are stopped at the end.
- ``wait $!`` waits for the last background command to exit, with status 0.
- A live capture (``pycdr pcap -i``) needs capture rights (root, or CAP_NET_RAW and
  CAP_NET_ADMIN).  Without them that step, ``wait $!`` after it and the commands that
  read the file it writes are skipped, with that reason; the others still run.
"""

from __future__ import annotations

import os
import queue
import re
import shlex
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from peers.process import free_port

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MARKER = "<!-- quickstart"
SHOWN_PORT = "2809"

# (pattern, replacement, why): applied, in order, to the README's output and to the
# command's (after the test's port is written back as 2809).  Only what changes from run
# to run is normalised.
NORMALISE = [
    (r"IOR:[0-9a-f]+", "IOR:<hex>",
     "a stringified IOR holds the server's port in hex"),
    (r"(127\.0\.0\.1:)(?!2809\b)\d+", r"\g<1><port>",
     "a client's ephemeral port"),
    (r"\bframe \d+", "frame <n>",
     "which packet of a capture carries a message depends on the TCP stack's ACKs"),
    (r"\b\d+(\.\d+)? (ms|s)\b", r"<time> \2",
     "times: a reply's delay, how long the suite ran"),
    (r"'(min|mean|max)': \d+(\.\d+)?", r"'\1': <time>",
     "probe's round-trip times"),
]

CAPTURE_RIGHTS = "capturing needs rights"


@dataclass
class Step:
    command: str
    shown: list[str]


@dataclass
class Outcome:
    output: list[str] = field(default_factory=list)
    returncode: int | None = 0
    skipped: str | None = None
    failure: str | None = None


def quickstart_steps(text: str) -> list[Step]:
    """The commands of the marked block and the output shown under each."""
    start = text.find(MARKER)
    if start < 0:
        raise AssertionError(f"README.md has no {MARKER} ... --> comment before the quick start")
    lines = text[start:].splitlines()[1:]
    if not lines or not lines[0].startswith("```"):
        raise AssertionError("the quick start comment must stand right above a ``` block")
    steps: list[Step] = []
    for line in lines[1:]:
        if line.startswith("```"):
            return steps
        if line.startswith("$ "):
            steps.append(Step(line[2:], []))
        elif steps:
            steps[-1].shown.append(line)
        else:
            raise AssertionError(f"output before the first command: {line!r}")
    raise AssertionError("the quick start block does not end")


STEPS = quickstart_steps(README.read_text(encoding="utf-8"))


def normalise(lines: list[str]) -> list[str]:
    text = "\n".join(line.rstrip() for line in lines)
    for pattern, replacement, _why in NORMALISE:
        text = re.sub(pattern, replacement, text)
    return text.split("\n") if text else []


def pycdr_command() -> str:
    exe = os.environ.get("PYCDR_EXE")
    if exe:
        return shlex.quote(exe)
    return f"{shlex.quote(sys.executable)} -m pycdr.cli.main"


def shell_line(command: str, port: int) -> str:
    """The README's command as this test runs it: its port, its pycdr."""
    line = re.sub(rf"\b{SHOWN_PORT}\b", str(port), command)
    return re.sub(r"(^|[;&|]\s*)pycdr(?=\s)", lambda m: m.group(1) + pycdr_command(), line)


class Background:
    """A command run with ``&``: its lines are collected as they come."""

    def __init__(self, line: str, cwd: Path):
        # exec: the process stopped at the end is the command itself, not a shell.
        self.proc = subprocess.Popen(["bash", "-c", "exec " + line], cwd=cwd,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, text=True)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def take(self, count: int, timeout: float) -> list[str]:
        got: list[str] = []
        deadline = time.monotonic() + timeout
        while len(got) < count:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                return got
            got.append(line)
        grace = time.monotonic() + 0.2
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, grace - time.monotonic()))
            except queue.Empty:
                return got
            if line is None:
                return got
            got.append(line)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _written_file(command: str, option: str) -> str | None:
    words = shlex.split(command.rstrip("& "))
    return words[words.index(option) + 1] if option in words[:-1] else None


def run_quickstart(workdir: Path) -> tuple[list[Outcome], int]:
    (workdir / "conformance").symlink_to(ROOT / "conformance", target_is_directory=True)
    port = free_port()
    background: list[Background] = []
    outcomes: list[Outcome] = []
    skipped_files: dict[str, str] = {}     # a file a skipped capture would have written
    last_skip: str | None = None            # the reason the last background step was skipped
    try:
        for step in STEPS:
            outcome = Outcome()
            outcomes.append(outcome)
            command = step.command
            line = shell_line(command, port)
            reason = next((why for name, why in skipped_files.items()
                           if name in shlex.split(command)), None)
            if command.strip() == "wait $!":
                if last_skip:
                    outcome.skipped = last_skip
                    continue
                proc = background[-1].proc
                try:
                    outcome.returncode = proc.wait(60)
                except subprocess.TimeoutExpired:
                    outcome.failure = "the last background command did not end within 60 s"
                continue
            if reason:
                outcome.skipped = reason
                continue
            if command.rstrip().endswith("&"):
                job = Background(line.rstrip().rstrip("&"), workdir)
                background.append(job)
                outcome.output = job.take(len(step.shown), timeout=30)
                outcome.returncode = job.proc.poll() or 0
                last_skip = None
                if any(CAPTURE_RIGHTS in out for out in outcome.output):
                    why = ("live capture needs capture rights (root, or CAP_NET_RAW and "
                           "CAP_NET_ADMIN), which this test does not have")
                    outcome.skipped = last_skip = why
                    saved = _written_file(command, "-w")
                    if saved:
                        skipped_files[saved] = why
                    continue
                ready = _written_file(command, "--ready-file")
                if ready:
                    deadline = time.monotonic() + 10
                    path = workdir / ready
                    while time.monotonic() < deadline and not (
                            path.exists() and path.read_text().endswith("\n")):
                        time.sleep(0.05)
                continue
            try:
                done = subprocess.run(["bash", "-c", line], cwd=workdir, timeout=180,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, text=True)
            except subprocess.TimeoutExpired as e:
                outcome.failure = f"did not end within {e.timeout} s"
                continue
            outcome.output = done.stdout.splitlines()
            outcome.returncode = done.returncode
    finally:
        for job in reversed(background):
            job.stop()
    return outcomes, port


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
    return run_quickstart(tmp_path_factory.mktemp("quickstart"))


def test_the_readme_is_a_front_page():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; the long parts go to docs/"
    assert 6 <= len(STEPS) <= 8, f"the quick start has {len(STEPS)} commands, not 6 to 8"


def test_the_readmes_links_name_files_of_the_tree():
    """The front page links into docs/ and beside it: each relative link names a file or
    folder of the repository (the site's own links are checked by mkdocs build --strict)."""
    text = README.read_text(encoding="utf-8")
    targets = {t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", text)
               if "://" not in t and not t.startswith("#")}
    assert targets, "README.md links nowhere"
    assert [t for t in sorted(targets) if not (ROOT / t).exists()] == []


@pytest.mark.parametrize("index", range(len(STEPS)),
                         ids=[f"{i + 1}-{s.command.split()[0]}-{s.command.split()[1]}"
                              if len(s.command.split()) > 1 else str(i + 1)
                              for i, s in enumerate(STEPS)])
def test_quickstart_command_prints_what_the_readme_shows(quickstart, index):
    outcomes, port = quickstart
    step, outcome = STEPS[index], outcomes[index]
    if outcome.skipped:
        pytest.skip(outcome.skipped)
    shown_output = "\n".join(outcome.output)
    assert outcome.failure is None, f"$ {step.command}\n{outcome.failure}\n{shown_output}"
    assert outcome.returncode == 0, \
        f"$ {step.command}\nexit status {outcome.returncode}\n{shown_output}"
    printed = [re.sub(rf"\b{port}\b", SHOWN_PORT, line) for line in outcome.output]
    assert normalise(printed) == normalise(step.shown), (
        f"$ {step.command}\nprints (left) otherwise than README.md shows (right); "
        f"update the README if the change is meant")

