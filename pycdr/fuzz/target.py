"""The target: an address, maybe a process the fuzzer starts (and restarts
after a finding) from a command line."""

from __future__ import annotations

import codecs
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
from .sanitizer import ReportWatcher


# --------------------------------------------------------------------------
# The target: an address, maybe a process we started.
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
IOR_RE = re.compile(r"(IOR:[0-9A-Fa-f]+|corbaloc:\S+)")
# Seconds the rest of an exited target's output (its sanitizer report) is
# waited for.
REPORT_WAIT = 2.0
# What a JVM target's output shows of a defect: an Error (StackOverflowError,
# OutOfMemoryError, ...), an exception no code caught (the JVM prints
# `Exception in thread "NAME"` as the thread dies), or an exception that only
# a missing check on a length lets through.  Caught exceptions an ORB logs for
# a malformed message are not defects.
UNCAUGHT_RE = re.compile(r'Exception in thread "(?P<thread>[^"]*)"\s+(?P<name>[\w$.]+)')
# (A Java class name: a package, then the class; a word that merely ends in
# Error, like a GIOP MessageError in a log line, is none.)  The
# ObjectStreamExceptions only java.io.ObjectInputStream throws: the target
# deserialises Java objects from a peer's bytes (the OpenJDK ORB with its
# Java-serialisation GIOP encoding on), the way in of gadget-chain attacks.
ERROR_RE = re.compile(r"(?<![\w$.])(?P<name>(?:[a-z_][\w$]*\.)+"
                      r"(?:[A-Z][\w$]*Error|NegativeArraySizeException)"
                      r"|java\.io\.(?:StreamCorrupted|InvalidClass|OptionalData)Exception)\b")
FRAME_RE = re.compile(r"^\s+at\s+(\S+?)(?:\(|$)")
# Frames of a logged defect kept (the top ones tell one defect from another).
TOP_FRAMES = 3
# A dotted Java name of a class whose name ends in Error: what ERROR_RE
# looks for (most of it), found far faster in much output at once.
DOTTED_ERROR_RE = re.compile(r"\.[A-Z][\w$]*Error")
# Bytes of a target's output read at once.
OUTPUT_CHUNK = 1 << 16
# A line longer than this is taken as it is (no end of line waited for).
LONGEST_LINE = 1 << 20
# Defects kept per process, the latest (a target that logs one per case needs
# no more; they are counted on past it, so a group of many cases that each log
# one still shows the defects after its own start).
MAX_LOGGED = 64


def may_log_defect(text: str) -> bool:
    """Whether some line of ``text`` may name a defect (logged_defect):
    False only when none can."""
    return "Exception in thread" in text or "NegativeArraySizeException" in text or \
        "java.io." in text or DOTTED_ERROR_RE.search(text) is not None


def logged_defect(line: str) -> dict | None:
    """The defect a line of a target's output names, if any: its exception
    class, and the thread it killed for an uncaught one."""
    m = UNCAUGHT_RE.search(line)
    if m:
        return {"exception": m.group("name").rstrip(":"), "thread": m.group("thread"),
                "uncaught": True, "line": line.strip()[:300], "frames": []}
    m = ERROR_RE.search(line)
    if m and not FRAME_RE.match(line):
        return {"exception": m.group("name"), "line": line.strip()[:300], "frames": []}
    return None


class _Launch:
    """A process started from the target's command line, its output read
    by a thread (so the child never blocks on a full pipe) until it prints
    its IOR or corbaloc URL; what it prints after (a reference ORB logs
    every bad message) is dropped, not piled up for the whole campaign, but
    for a sanitizer's report (pycdr.fuzz.sanitizer), which is kept."""

    def __init__(self, command: str, env: dict | None = None, own=None):
        # What this process alone has (SpawnedTarget's ``per_launch``), closed
        # once it is stopped.
        self.own = own
        if own is not None:
            env = {**(env or {}), **own.environment()}
        try:
            self.process = subprocess.Popen(shlex.split(command), stdin=subprocess.PIPE,
                                            env=None if env is None else {**os.environ, **env},
                                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                            text=True, errors="replace")
        except BaseException:
            if own is not None:
                own.close()
            raise
        self.lines: queue.Queue = queue.Queue()
        self.started = threading.Event()
        self.address_text = ""
        self.report = ReportWatcher()
        # The latest logged_defect()s seen after the start, with frames, each
        # with its number among all seen (the first is 0).
        self.defects: list = []
        self.logged = 0                # defects seen after the start, all of them
        self._pumping = threading.Thread(target=self._pump, args=(self.process.stdout,),
                                         daemon=True)
        self._pumping.start()

    def _pump(self, stream) -> None:
        """Read the output as it comes, a chunk at a time; its lines are
        looked at one by one only where they may matter (before the address,
        a defect or a sanitizer report in them, the top of a defect's stack
        still to come): a target that logs without end (omniORB 4.2.5's
        spinning thread logs an exception in a loop, hundreds of megabytes
        a minute) would otherwise cost the fuzzer's CPU a line at a time."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        pending = ""
        try:
            raw = stream.buffer
            while True:
                data = raw.read1(OUTPUT_CHUNK)
                text = pending + decoder.decode(data, final=not data)
                if data:
                    cut = text.rfind("\n") + 1
                    if cut == 0 and len(text) < LONGEST_LINE:
                        pending = text
                        continue
                    text, pending = (text[:cut], text[cut:]) if cut else (text, "")
                if text and self._wants_lines(text):
                    for line in text.splitlines(keepends=True):
                        self._line(line)
                if not data:
                    return
        except (OSError, ValueError):
            pass            # the stream closed under the read: the process was stopped

    def _wants_lines(self, text: str) -> bool:
        if not self.started.is_set() or self.report.waiting(text):
            return True
        if self.defects and len(self.defects[-1][1]["frames"]) < TOP_FRAMES:
            return True
        return may_log_defect(text)

    def _line(self, line: str) -> None:
        if not self.started.is_set():
            self.lines.put(line)
        else:
            self._scan(line)
        self.report.feed(line)

    def sanitizer_report(self, wait: float = REPORT_WAIT) -> str:
        """The sanitizer report the process wrote, or ""; once it has
        exited, its output is read to the end first (for up to ``wait``
        seconds)."""
        if self.process.poll() is not None:
            self._pumping.join(wait)
        return self.report.text

    def _scan(self, line: str) -> None:
        """Note a defect the line names, or a frame of the last one's stack."""
        frame = FRAME_RE.match(line)
        if frame:
            if self.defects and len(self.defects[-1][1]["frames"]) < TOP_FRAMES:
                self.defects[-1][1]["frames"].append(frame.group(1))
            return
        defect = logged_defect(line)
        if defect is not None:
            number, self.logged = self.logged, self.logged + 1
            self.defects = self.defects[1 - MAX_LOGGED:] + [(number, defect)]

    def address(self, timeout: float) -> str:
        """Its address, once printed (waited for up to ``timeout`` seconds);
        a PycdrError when it exits or stays silent so long (it is then
        stopped)."""
        if self.address_text:
            return self.address_text
        deadline = time.monotonic() + timeout
        seen = []
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                if self.process.poll() is not None:
                    break
                continue
            seen.append(line)
            m = IOR_RE.search(line)
            if m:
                self.started.set()
                self.address_text = m.group(1)
                return self.address_text
        self.stop()
        raise PycdrError(f"the spawned target printed no IOR or corbaloc URL: "
                         f"{''.join(seen)[-500:]!r}")

    def cpu_seconds(self) -> float | None:
        return process_cpu_seconds(self.process.pid)

    def stop(self) -> float:
        """Stop it; the CPU seconds it used."""
        p = self.process
        cpu = self.cpu_seconds() or 0.0
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
        if self.own is not None:
            self.own.close()
        return cpu


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (Linux /proc), or None
    when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class SpawnedTarget:
    """A target process the fuzzer starts from a command line and restarts
    after a finding; its IOR or corbaloc URL is read from its output.

    With ``standby``, the next process is started while the current one
    runs, so a restart costs no start-up wait (an omniORBpy target compiles
    its IDL as it starts: 0.1-0.5 s, and a campaign against it restarts it
    after every finding and confirmation), and a spare behind it: a
    finding's confirmation restarts the target REPRODUCTIONS times in a
    row, each time sooner than a process that has just been started is
    listening.  A target that listens on a fixed port cannot have a standby
    (it cannot listen beside the current one, or would share its port):
    the standby is then given up for the rest of the campaign.

    ``per_launch``, when given, is called for each process started: what it
    returns (an object with ``environment()``, added to that process's
    environment, and ``close()``, called once the process is stopped) is the
    process's own (``own``: the current process's), as the edge map each
    process of a sancov campaign writes, so that a standby starting up
    writes into its own."""

    def __init__(self, command: str, *, start_timeout: float = 30.0, standby: bool = False,
                 env: dict | None = None, per_launch=None):
        self.command = command
        self.env = env               # added to the environment of the processes started
        self.per_launch = per_launch
        self.start_timeout = start_timeout
        self.standby = standby
        self._launch: _Launch | None = None
        self._standby: _Launch | None = None
        self._spare: _Launch | None = None      # the next standby, started too
        self.start_seconds = 0.0     # how long the first start took
        self.address_text = ""
        self.restarts = 0
        self.standby_used = 0        # restarts that took the standby
        self.baseline_rss = None
        self.cpu_of_stopped = 0.0     # CPU seconds of the processes stopped so far

    @property
    def process(self) -> subprocess.Popen | None:
        return None if self._launch is None else self._launch.process

    @property
    def own(self):
        """What ``per_launch`` gave the current process (None without)."""
        return None if self._launch is None else self._launch.own

    def _new_launch(self) -> _Launch:
        return _Launch(self.command, self.env,
                       None if self.per_launch is None else self.per_launch())

    def start(self) -> str:
        began = time.monotonic()
        self._launch = self._new_launch()
        try:
            self.address_text = self._launch.address(self.start_timeout)
        except PycdrError:
            self.cpu_of_stopped += self._launch.stop()
            self._launch = None
            raise
        self.start_seconds = self.start_seconds or time.monotonic() - began
        self.baseline_rss = None
        self._start_standby()
        return self.address_text

    def _start_standby(self) -> None:
        if self.standby and self._standby is None:
            self._standby, self._spare = self._spare, None
        if self.standby and self._standby is None:
            self._standby = self._new_launch()
        if self.standby and self._spare is None:
            self._spare = self._new_launch()

    def _take_standby(self) -> _Launch | None:
        """The standby, started and listening elsewhere than the current
        process; None (and no standby from now on) when it cannot be."""
        launch, self._standby = self._standby, None
        if launch is None:
            return None
        try:
            # It has been starting for a while; one that takes much longer
            # than the first start did is stuck (on a port in use?).
            address = launch.address(min(self.start_timeout, max(1.0, 4 * self.start_seconds)))
        except PycdrError:
            address = None
        if address is None or endpoint(address) == endpoint(self.address_text):
            self.cpu_of_stopped += launch.stop()
            self.standby = False
            self._stop_spare()
            return None
        return launch

    def _stop_spare(self) -> None:
        if self._spare is not None:
            self.cpu_of_stopped += self._spare.stop()
            self._spare = None

    def exited(self):
        """None while running, else the exit code (negative: the signal)."""
        return None if self.process is None else self.process.poll()

    def sanitizer_report(self) -> str:
        """The sanitizer report of the current process (see
        _Launch.sanitizer_report), or ""."""
        return "" if self._launch is None else self._launch.sanitizer_report()

    def logged(self) -> int:
        """How many defects the current process has logged so far."""
        return 0 if self._launch is None else self._launch.logged

    def defects_since(self, count: int) -> list:
        """The defects the current process logged after the first ``count``
        (the latest MAX_LOGGED of them at most)."""
        if self._launch is None:
            return []
        return [defect for number, defect in self._launch.defects if number >= count]

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
        """User + system CPU time of the current process so far (Linux
        /proc), or None when it cannot be read."""
        return None if self._launch is None else self._launch.cpu_seconds()

    def total_cpu_seconds(self) -> float | None:
        """CPU seconds of every process started so far (the restarted ones
        and the standby too; those that died on their own before being
        stopped not counted)."""
        now = self.cpu_seconds() if self._launch is not None else 0.0
        if now is None:
            return None
        standby = sum((launch.cpu_seconds() or 0.0) for launch in (self._standby, self._spare)
                      if launch is not None)
        return self.cpu_of_stopped + now + standby

    def _stop_current(self) -> None:
        if self._launch is not None:
            self.cpu_of_stopped += self._launch.stop()
            self._launch = None

    def stop(self) -> None:
        """Stop the target and its standby (and spare)."""
        self._stop_current()
        if self._standby is not None:
            self.cpu_of_stopped += self._standby.stop()
            self._standby = None
        self._stop_spare()

    def restart(self) -> str:
        self.restarts += 1
        standby = self._take_standby()
        self._stop_current()
        if standby is None:
            return self.start()
        self.standby_used += 1
        self._launch = standby
        self.address_text = standby.address_text
        self.baseline_rss = None
        self._start_standby()
        return self.address_text


def endpoint(address_text: str) -> tuple:
    """(host, port) of an IOR or corbaloc URL; the text itself when it does
    not parse."""
    try:
        target = resolve_target(address_text)
    except PycdrError:
        return (address_text,)
    return (target.host, target.port)


def resolve(text: str, tls: TLSOptions = DEFAULT_TLS):
    return resolve_target(text, tls=tls)


def _tasks(pid: int) -> list:
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []


def runnable_threads(pid: int) -> int:
    """How many threads of process ``pid`` are running or waiting for a
    CPU now (state R): a target still working on a case."""
    count = 0
    for tid in _tasks(pid):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                count += f.read().rsplit(")", 1)[1].split()[0] == "R"
        except (OSError, IndexError):
            continue            # (a thread that ended meanwhile)
    return count
