"""Dead ORB threads of a JVM target.

An ORB thread that dies of an uncaught exception is seen in the target's
output (``Exception in thread "NAME"``: an exception finding, see
pycdr.fuzz.target).  One that dies without a word (an ORB that installs a
silent uncaught-exception handler, or whose thread just returns) is not;
when it is the thread that accepts connections, the process lives on and
every new connection waits: a hang.  So when a spawned JVM target hangs,
its threads are listed (``jcmd PID Thread.print``, about half a second:
only then, never per case) and compared with those of the first process
the campaign started, listed once at its start: a thread of the start
missing from the hung process is a **thread** finding (``details.threads_gone``),
told apart from a hang by the names of the threads gone.  Thread names are
compared with their numbers left out (pool workers come and go by number).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

THREAD_RE = re.compile(r'^"(?P<name>[^"]*)"', re.M)
# Threads the JVM starts and stops by itself (the attach mechanism's own,
# compiler threads that come and go): never a finding.
JVM_THREADS = re.compile(r"^(Attach Listener|C\d CompilerThread\d*|Common-Cleaner|"
                         r"Sweeper thread|Notification Thread|VM .*|GC .*|G1 .*)$")
JCMD_TIMEOUT = 10.0


def thread_key(name: str) -> str:
    return re.sub(r"\d+", "#", name)


def jvm_threads(pid: int) -> set | None:
    """The thread names (numbers left out) of JVM process ``pid``; None when
    it is no JVM or cannot be listed."""
    jcmd = shutil.which("jcmd")
    if jcmd is None or not _is_jvm(pid):
        return None
    try:
        done = subprocess.run([jcmd, str(pid), "Thread.print"], capture_output=True,
                              text=True, timeout=JCMD_TIMEOUT, errors="replace")
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = {thread_key(m.group("name")) for m in THREAD_RE.finditer(done.stdout)}
    if done.returncode != 0 or not names:
        return None
    return {n for n in names if not JVM_THREADS.match(n)}


def _is_jvm(pid: int) -> bool:
    """Whether ``pid`` runs a JVM (jcmd signals any process it is pointed at:
    a process that is no JVM would die of it)."""
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe")) == "java"
    except OSError:
        return False


class DeadThreads:
    """The campaign's side (mixed into pycdr.fuzz.engine.Campaign): the
    threads of its first JVM process, and the ones a hung process lost."""

    _start_threads: set | None = None

    def _note_start_threads(self) -> None:
        """List the threads of the target the campaign started (once)."""
        if self.spawned is not None and self.spawned.process is not None:
            self._start_threads = jvm_threads(self.spawned.process.pid)

    def _threads_gone(self) -> list:
        """The start's threads the running target no longer has ([] when it
        is no JVM, is gone, or lost none)."""
        if not self._start_threads or self.spawned is None or \
                self.spawned.process is None or self.spawned.exited() is not None:
            return []
        now = jvm_threads(self.spawned.process.pid)
        if now is None:
            return []
        return sorted(self._start_threads - now)

    def _with_dead_threads(self, kind: str | None, details: dict) -> tuple:
        """A hang of a JVM target that lost threads is a ``thread`` finding."""
        if kind != "hang":
            return kind, details
        gone = self._threads_gone()
        if not gone:
            return kind, details
        return "thread", dict(details, threads_gone=gone)
