"""The target: an address, maybe a process the fuzzer starts (and restarts
after a finding) from a command line."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import threading
import queue
import time

from ..errors import PycdrError
from ..conformance.target import resolve_target
from ..orb.tls import DEFAULT_TLS, TLSOptions


# --------------------------------------------------------------------------
# The target: an address, maybe a process we started.
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
IOR_RE = re.compile(r"(IOR:[0-9A-Fa-f]+|corbaloc:\S+)")


class SpawnedTarget:
    """A target process the fuzzer starts from a command line and restarts
    after a finding; its IOR or corbaloc URL is read from its output."""

    def __init__(self, command: str, *, start_timeout: float = 30.0):
        self.command = command
        self.start_timeout = start_timeout
        self.process: subprocess.Popen | None = None
        self.address_text = ""
        self.restarts = 0
        self.baseline_rss = None
        self.cpu_of_stopped = 0.0     # CPU seconds of the processes stopped so far

    def start(self) -> str:
        self.process = subprocess.Popen(shlex.split(self.command), stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, errors="replace")
        lines: queue.Queue = queue.Queue()
        started = threading.Event()

        def pump(stream):
            # Keep reading so the child never blocks on a full pipe; once its
            # address is known, what it prints (a reference ORB logs every bad
            # message) is dropped, not piled up for the whole campaign.
            for line in stream:
                if not started.is_set():
                    lines.put(line)
        threading.Thread(target=pump, args=(self.process.stdout,), daemon=True).start()
        deadline = time.monotonic() + self.start_timeout
        seen = []
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.1)
            except queue.Empty:
                if self.process.poll() is not None:
                    break
                continue
            seen.append(line)
            m = IOR_RE.search(line)
            if m:
                started.set()
                self.address_text = m.group(1)
                self.baseline_rss = None
                return self.address_text
        self.stop()
        raise PycdrError(f"the spawned target printed no IOR or corbaloc URL: "
                         f"{''.join(seen)[-500:]!r}")

    def exited(self):
        """None while running, else the exit code (negative: the signal)."""
        return None if self.process is None else self.process.poll()

    def rss(self) -> int | None:
        try:
            with open(f"/proc/{self.process.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024
        except (OSError, AttributeError):
            return None
        return None

    def cpu_seconds(self) -> float | None:
        """User + system CPU time of the process so far (Linux /proc), or
        None when it cannot be read."""
        try:
            with open(f"/proc/{self.process.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, AttributeError, IndexError):
            return None
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS

    def total_cpu_seconds(self) -> float | None:
        """CPU seconds of every process started so far (the restarted ones
        too; those that died on their own before being stopped not counted)."""
        now = self.cpu_seconds() if self.process is not None else 0.0
        return None if now is None else self.cpu_of_stopped + now

    def stop(self) -> None:
        p = self.process
        if p is None:
            return
        self.cpu_of_stopped += self.cpu_seconds() or 0.0
        if p.poll() is None:
            p.kill()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass
        for stream in (p.stdin, p.stdout):
            try:
                stream.close()
            except (OSError, AttributeError):
                pass
        self.process = None

    def restart(self) -> str:
        self.stop()
        self.restarts += 1
        return self.start()


def resolve(text: str, tls: TLSOptions = DEFAULT_TLS):
    return resolve_target(text, tls=tls)
