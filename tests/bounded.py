"""Run the `pycdr` command on hostile input in a child process bounded in time
and address space, so a regression shows as a failed test (a timeout, or a
MemoryError traceback) and never as a hung or swapping test run."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys

# The console script installed beside the interpreter (pip install -e .).
PYCDR = os.path.join(os.path.dirname(sys.executable), "pycdr")
MEMORY_LIMIT = 1 << 30      # the interpreter and pycdr need ~100 MB of it
TIME_LIMIT = 60             # seconds; the fixed inputs answer in about one


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_pycdr(*args, timeout: float = TIME_LIMIT, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([PYCDR, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=_limit_memory, cwd=cwd,
                          stdin=subprocess.DEVNULL)


def assert_diagnostic(result: subprocess.CompletedProcess, file_name: str, phrase: str,
                      exit_code: int = 1) -> str:
    """The process failed cleanly with exit code ``exit_code`` and a
    file:line:column diagnostic of ``file_name`` containing ``phrase``; returns it."""
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.returncode == exit_code, (result.returncode, result.stderr[-3000:])
    pattern = re.compile(rf"^(?:.*/)?{re.escape(file_name)}:\d+:\d+: error: .*{re.escape(phrase)}",
                         re.MULTILINE)
    found = pattern.search(result.stderr)
    assert found, result.stderr[-3000:]
    return found.group()
