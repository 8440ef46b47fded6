"""The spin check (TargetHealth._spinning) reads the target's CPU every
SPIN_SAMPLE seconds and ends a window as soon as its answer is known: a
spinning target is called spinning after the CPU its share of the windows
allows, not after the windows' whole length; its answers are those of the
whole windows.  Against a stand-in target whose CPU follows a stand-in
clock (the check's waits move it on: no test here depends on the machine's
speed)."""

import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from pycdr.fuzz import health
from pycdr.fuzz.health import IDLE_SAMPLES, SPIN_CONFIRM, SPIN_SHARE, SPIN_WINDOW, TargetHealth


class Clock:
    """time.monotonic and time.sleep for pycdr.fuzz.health: a sleep moves it on."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += max(0.0, seconds)


CLOCK = Clock()


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    monkeypatch.setattr(health, "time", CLOCK)


class Burning:
    """A spawned target's stand-in: ``share`` of a core used from its start,
    for ``seconds`` (for ever: None)."""

    def __init__(self, share, seconds=None, process=None):
        self.share, self.seconds, self.began = share, seconds, CLOCK.monotonic()
        self.reads = 0
        self.process = process      # (whose threads' states are read)

    def cpu_seconds(self):
        self.reads += 1
        busy = CLOCK.monotonic() - self.began
        if self.seconds is not None:
            busy = min(busy, self.seconds)
        return self.share * busy


class Health(TargetHealth):
    def __init__(self, spawned):
        self.spawned = spawned

    def _make_ahead(self, sent):
        return 0


def test_a_spinning_target_is_called_spinning_within_a_fraction_of_the_windows():
    target = Burning(1.0)
    began = CLOCK.monotonic()
    assert Health(target)._spinning()
    # (All of both windows: SPIN_WINDOW + SPIN_CONFIRM; a core's spin passes the
    # share in a fifth of each.)
    assert CLOCK.monotonic() - began < 0.3 * (SPIN_WINDOW + SPIN_CONFIRM)
    assert target.reads > 3


def test_the_early_answers_are_the_whole_windows_answers():
    assert not Health(Burning(0.0))._spinning()
    assert not Health(Burning(SPIN_SHARE / 2))._spinning()
    # A burst (a JVM's garbage collection) past the first window's share, over
    # before the second window's is reached.
    assert not Health(Burning(1.0, seconds=SPIN_WINDOW))._spinning()
    assert Health(Burning(2 * SPIN_SHARE))._spinning()


def test_a_clearly_idle_target_is_called_idle_after_a_few_reads():
    """No CPU used and no thread running or waiting to run (a process asleep),
    IDLE_SAMPLES reads in a row: not spinning, the window not waited out."""
    asleep = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        time.sleep(0.3)                     # (its start's CPU done)
        target = Burning(0.0, process=asleep)
        assert not Health(target)._spinning()
        assert target.reads == 1 + IDLE_SAMPLES
        # A thread running (this process, reading) is never clearly idle: the
        # window's end gives the answer.
        me = Burning(0.0, process=SimpleNamespace(pid=os.getpid()))
        assert not Health(me)._spinning()
        assert me.reads > 1 + IDLE_SAMPLES
    finally:
        asleep.kill()
        asleep.wait()
