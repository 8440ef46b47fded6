"""Running a client command: a process a case, or a batch process that runs case after case
(the runner's {batch} contract, docs/conformance.md).

The runner writes one JSON line a case on the process's standard input ({"ior", "corbaloc",
"operation", "args", "count"}) and reads what it prints on standard output until the case's
end line, {"exit": STATUS}: the lines before it are the case's standard output, STATUS what a
client command run for the case alone would have exited with. So a case is judged from the
same three things as a process a case: its output, its exit status, whether it hung.

- A case that runs past its time: the process (its whole process group) is killed, the case is
  judged hung, and the next case starts a new process.
- A process that ends during a case: the case is judged by what it printed and the status it
  exited with (as a client of its own that exited so), and the next case starts a new one.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time

from pycdr.errors import PycdrError

BATCH = "{batch}"
END_KEY = "exit"
STDERR_SETTLE = 0.2      # seconds for a dead process's last standard error to be read


class ClientCommandError(PycdrError):
    """The client command is unusable (no {ior}/{corbaloc} in it, or it cannot be started)."""


def run_once(argv, timeout, *, cwd=None, env=None):
    """One case's own client process: (its standard output, its standard error, its exit
    status, hung: killed when ``timeout`` seconds had passed)."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True,
                                cwd=cwd, env=env)
    except OSError as e:
        raise ClientCommandError(f"cannot start the client command {argv[0]!r}: {e}") \
            from None
    hung = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        hung = True
        kill_group(proc)
        out, err = proc.communicate()
    else:
        # The client's own children (a JVM's helpers) go with it.
        kill_group(proc)
    return (out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
            proc.returncode, hung)


def kill_group(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def batch_argv(argv: list[str]) -> list[str]:
    """The words of a batch command with {batch} taken out (a word that was just {batch} is
    left out)."""
    words = [word.replace(BATCH, "") for word in argv]
    return [w for w, original in zip(words, argv) if w or original != BATCH]


def end_status(line: str):
    """The exit status a case's end line carries, or None when ``line`` is no end line."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if isinstance(obj, dict) and list(obj) == [END_KEY] and isinstance(obj[END_KEY], int) \
            and not isinstance(obj[END_KEY], bool):
        return obj[END_KEY]
    return None


class BatchClient:
    """The batch process of one client runner: started for the first case, again after a case
    that killed it or that it died in; close() ends it (by closing its standard input)."""

    def __init__(self, argv: list[str], *, cwd=None, env=None):
        self.argv = batch_argv(argv)
        self.cwd = cwd
        self.env = env
        self.proc = None
        self.lines: queue.Queue = queue.Queue()     # stdout lines; None at its end
        self.stderr: list[str] = []
        self.stderr_lock = threading.Lock()
        self.threads: list[threading.Thread] = []
        self.starts = 0                             # processes started so far

    def _start(self) -> None:
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         start_new_session=True, cwd=self.cwd, env=self.env)
        except OSError as e:
            raise ClientCommandError(f"cannot start the client command {self.argv[0]!r}: {e}") \
                from None
        self.starts += 1
        self.lines = queue.Queue()
        self.threads = [threading.Thread(target=self._read_stdout, args=(self.proc, self.lines),
                                         daemon=True, name="batch-stdout"),
                        threading.Thread(target=self._read_stderr, args=(self.proc,),
                                         daemon=True, name="batch-stderr")]
        for t in self.threads:
            t.start()

    @staticmethod
    def _read_stdout(proc, lines) -> None:
        for raw in proc.stdout:
            lines.put(raw.decode("utf-8", "replace"))
        lines.put(None)

    def _read_stderr(self, proc) -> None:
        for raw in proc.stderr:
            with self.stderr_lock:
                self.stderr.append(raw.decode("utf-8", "replace"))

    def _take_stderr(self) -> str:
        with self.stderr_lock:
            text, self.stderr[:] = "".join(self.stderr), []
        return text

    def run(self, case_line: dict, timeout: float):
        """One case: (its standard output, its standard error, its exit status, hung)."""
        if self.proc is None or self.proc.poll() is not None or not self._between_cases():
            self.close()
            self._start()
        self._take_stderr()                 # what came between the cases is no case's
        deadline = time.monotonic() + timeout
        out: list[str] = []
        try:
            self.proc.stdin.write(json.dumps(case_line).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError:
            pass                            # it ended: its end is read below
        while True:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0))
            except queue.Empty:
                self._kill()
                out.extend(self._drain())
                return "".join(out), self._take_stderr(), self.proc.returncode, True
            if line is None:                # it ended during the case
                returncode = self.proc.wait()
                self.threads[1].join(STDERR_SETTLE)
                self._kill()                # its children go with it, as with a case's own
                return "".join(out), self._take_stderr(), returncode, False
            status = end_status(line)
            if status is not None:
                return "".join(out), self._take_stderr(), status, False
            out.append(line)

    def _between_cases(self) -> bool:
        """Drop what the process printed after the last case's end line (no case's output);
        False when its output has ended (it is ending)."""
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return True
            if line is None:
                return False

    def _drain(self) -> list[str]:
        out = []
        while True:
            try:
                line = self.lines.get(timeout=STDERR_SETTLE)
            except queue.Empty:
                return out
            if line is None:
                return out
            out.append(line)

    def _kill(self) -> None:
        kill_group(self.proc)
        self.proc.wait()
        for t in self.threads:
            t.join(STDERR_SETTLE)

    def close(self) -> None:
        """End the process: its standard input closes (the contract: it exits then); what
        is left of it (and its children) is killed after a moment."""
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        kill_group(proc)
        proc.wait()
