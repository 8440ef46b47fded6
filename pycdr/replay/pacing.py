"""How fast a replay goes: ``--rate`` over all its connections, and whether a
``--window 1`` replay may poll for a reply before it sleeps (Replay._poll)."""

from __future__ import annotations

import os
import time

# How long a --window 1 replay polls for a reply before it sleeps on the selector, when
# a core is free for it: a reply on loopback or a LAN comes within tens of microseconds,
# and sleeping on each one costs the wake-up (measured, load average 1.2-1.5 on two
# cores: --window 1 against omniORBpy made 9k calls/s sleeping on every reply, 13-16k
# polling first).  On busy cores the polling takes CPU the target or others need
# (measured, load 2-3.6: no gain against omniORBpy, 20-40 % more CPU a call and fewer
# calls against the reference ORB, a Python server), so it is only done while the load
# average is below the CPUs the process may use (checked every SPIN_CHECK seconds).
# A pipelined replay has other calls in flight and sleeps at once.
SPIN = 300e-6
SPIN_CHECK = 1.0


def _cores_free() -> bool:
    """Whether the load average of the last minute leaves a core idle."""
    try:
        return os.getloadavg()[0] < len(os.sched_getaffinity(0))
    except (OSError, AttributeError):       # (no load average, or no affinity: not Linux)
        return False


class RateLimit:
    """At most ``rate`` sends a second, all connections together."""

    def __init__(self, rate: float | None):
        self.interval = 1.0 / rate if rate else 0.0
        self._next = time.monotonic()

    def wait(self) -> None:
        if not self.interval:
            return
        now = time.monotonic()
        at = max(self._next, now)
        self._next = at + self.interval
        if at > now:
            time.sleep(at - now)
