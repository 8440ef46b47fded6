"""Polling before sleeping (issue 21): the blocking client's and the threaded server's C
reads poll their socket for up to poll_wait before they sleep on it
(pycdr/_speedups.c, recv_polled; invocation.POLL_WAIT).

What is checked: calls answer the same with polling on and off; reads that poll are
counted (poll_counts) on either side; a peer that answers slowly makes the reads back
off instead of polling on every call; a signal whose handler raises while the client
polls ends the call at once, as it would have ended a sleeping read, and the client
goes on over a new connection; poll_wait=0 polls nothing.

Beside it, the threaded server's float pool (release_arguments): the floats of a
served call's arguments that nothing else holds are decoded into again; every value a
servant kept (a list, a float) stays as it was."""

import signal
import threading
import time

import pytest

from orb_echo_values import ECHO_INTERFACE, load_echo_module
from pycdr.codec import marshal
from pycdr.orb import EchoServant, ThreadedServer, blocking
from pycdr.orb.invocation import POLL_WAIT, poll_ns
from pycdr.orb.server import ServerLimits
from pycdr.orb.sync import SyncORB
from test_orb_blocking_lane import answer_long, scripted, whole
from test_orb_threads import RawServer

ECHO = load_echo_module().interfaces[ECHO_INTERFACE]
C_LANES = marshal.IMPLEMENTATION == "c" and blocking.exchange is not None
needs_lanes = pytest.mark.skipif(not C_LANES, reason="no C lanes (PYCDR_PURE=1 or not built)")


def poll_counts() -> dict:
    from pycdr.codec import _speedups
    return _speedups.poll_counts()


def grown(before: dict, after: dict) -> dict:
    return {k: after[k] - before[k] for k in ("got", "missed", "backed_off", "no_slot")}


def threaded_echo_server(poll_wait: float):
    server = ThreadedServer(limits=ServerLimits(poll_wait=poll_wait))
    server.activate(EchoServant(ECHO), b"Echo")
    server.open()
    return server


def test_poll_wait_in_nanoseconds():
    assert poll_ns(POLL_WAIT) == 300_000
    assert poll_ns(0) == poll_ns(None) == poll_ns(-1) == poll_ns(float("nan")) == 0
    assert poll_ns(float("inf")) == poll_ns(5) == 1_000_000_000     # (at most 1 s)


@needs_lanes
@pytest.mark.parametrize("client_poll, server_poll", [(POLL_WAIT, 0), (0, POLL_WAIT),
                                                      (POLL_WAIT, POLL_WAIT), (0, 0)])
def test_calls_answer_the_same_polled_or_not(client_poll, server_poll):
    server = threaded_echo_server(server_poll)
    try:
        with SyncORB(timeout=5, poll_wait=client_poll) as orb:
            echo = orb.string_to_object(server.ior_string(b"Echo"), ECHO)
            assert echo.echo_long(-1) == -1         # (the general path: CodeSets)
            before = poll_counts()
            values = [echo.echo_long(i) for i in range(1000)]
            octets = echo.echo_octets(bytes(range(256)) * 400)    # (a 100 KiB tail)
            after = poll_counts()
    finally:
        server.close()
    assert values == list(range(1000))
    assert octets == bytes(range(256)) * 400
    counted = grown(before, after)
    if client_poll or server_poll:
        # Every lane read that may poll is counted one way or another.  (Whether any
        # came while polling 0.3 ms depends on the machine's load: on a busy machine
        # every poll may miss and the backoff make the polls few; the next test shows
        # reads that got their message while polling.)
        assert sum(counted.values()) >= 1000, counted
    else:
        assert counted == {"got": 0, "missed": 0, "backed_off": 0, "no_slot": 0}


# Long enough for an answer from a thread of this process even on a loaded machine (the
# C reads poll at most 1 s).
GENEROUS_POLL_WAIT = 0.25


@needs_lanes
@pytest.mark.parametrize("side", ["client", "server"])
def test_a_message_that_comes_while_polling_is_got(side):
    client_poll, server_poll = ((GENEROUS_POLL_WAIT, 0) if side == "client"
                                else (0, GENEROUS_POLL_WAIT))
    server = threaded_echo_server(server_poll)
    try:
        with SyncORB(timeout=5, poll_wait=client_poll) as orb:
            echo = orb.string_to_object(server.ior_string(b"Echo"), ECHO)
            assert echo.echo_long(-1) == -1
            done = {}

            def run():
                before = poll_counts()
                done["values"] = [echo.echo_long(i) for i in range(20)]
                done["counted"] = grown(before, poll_counts())
            # (a thread of its own: a read's backoff is kept per thread, and this
            # process's main thread may be backing off after an earlier test)
            thread = threading.Thread(target=run)
            thread.start()
            thread.join(30)
    finally:
        server.close()
    assert done["values"] == list(range(20))
    assert done["counted"]["got"] > 0, done["counted"]


def slowly(delay):
    def answer(request, sock):
        time.sleep(delay)
        sock.sendall(answer_long(request))
    return answer


@needs_lanes
def test_a_slow_peer_makes_the_client_back_off():
    # Every Reply comes 20 ms after its Request, far beyond the poll: after a miss the
    # client's thread sleeps at once on its next 2, 4, ... reads, so 40 calls poll only a
    # handful of times (a poll each would be 40 misses).
    calls = 40
    with RawServer(scripted([whole] + [slowly(0.02)] * calls)) as server:
        with SyncORB(timeout=5, poll_wait=POLL_WAIT) as orb:
            echo = orb.string_to_object(server.corbaloc(), ECHO)
            assert echo.echo_long(0) == 0
            done = {}

            def run():
                before = poll_counts()
                done["values"] = [echo.echo_long(i) for i in range(calls)]
                done["counted"] = grown(before, poll_counts())
            # (a thread of its own: a fresh backoff, and no other test's reads counted)
            thread = threading.Thread(target=run)
            thread.start()
            thread.join(30)
    assert done["values"] == list(range(calls))
    counted = done["counted"]
    assert counted["missed"] <= 8, counted
    assert counted["backed_off"] >= calls - 8, counted


@needs_lanes
@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signal handlers run in the main thread")
def test_a_signal_while_the_client_polls_ends_the_call_at_once():
    class Interrupted(Exception):
        pass

    def handler(signum, frame):
        raise Interrupted()

    # The Reply to the call under test comes after 3 s; the client polls for 1 s and
    # the timer fires 50 ms in, during the poll.  No system call is interrupted then,
    # so the handler must run when the poll ends, not when the Reply comes.
    warm = 70                   # calls first: any backoff this thread was in, worn off
    with RawServer(scripted([whole] * (1 + warm) + [slowly(3.0)])) as server:
        with SyncORB(timeout=10, poll_wait=1.0) as orb:
            echo = orb.string_to_object(server.corbaloc(), ECHO)
            assert echo.echo_long(0) == 0
            for i in range(warm):
                assert echo.echo_long(i) == i
            previous = signal.signal(signal.SIGALRM, handler)
            try:
                start = time.monotonic()
                signal.setitimer(signal.ITIMER_REAL, 0.05)
                with pytest.raises(Interrupted):
                    echo.echo_long(1)
                elapsed = time.monotonic() - start
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
            assert elapsed < 2.0, elapsed
            # The interrupted call's Request is in flight: its connection is given up,
            # and the next call goes over a new one.
            assert echo.echo_long(2) == 2
    assert server.connections == 2


# --- floats kept for reuse (release_arguments in _speedups.c) -----------------------------

KEEP_IDL = """
module FloatPool {
    typedef sequence<double> Doubles;
    typedef sequence<float> Floats;
    interface Keeper {
        double total(in Doubles d, in Floats f);
        oneway void drop(in Doubles d);
    };
};
"""


class Keeper:
    """total(): the sum of both lists; the first call's lists and one float of every
    call are kept (a servant that holds on to what it was given)."""

    def __init__(self):
        self.first = None
        self.kept = []

    def total(self, d, f):
        if self.first is None:
            # (their values as text: a copy of a list or float() of a float would hold
            # the very objects whose values are checked)
            self.first = (d, f, [repr(x) for x in d], [repr(x) for x in f])
        if d:
            self.kept.append((d[-1], repr(d[-1])))
        return sum(d) + sum(f)

    def drop(self, d):
        self.dropped = len(d)


@needs_lanes
def test_floats_reused_by_the_server_keep_every_value_a_servant_holds():
    from pycdr import idl
    from pycdr.orb import ClassServant
    module = idl.load_string(KEEP_IDL, register=False)
    interface = module.interfaces["FloatPool::Keeper"]
    keeper = Keeper()
    server = ThreadedServer(limits=ServerLimits())
    server.activate(ClassServant(interface, keeper), b"Keeper")
    server.open()
    try:
        with SyncORB(timeout=5) as orb:
            ref = orb.string_to_object(server.ior_string(b"Keeper"), interface)
            big = [k / 3 for k in range(20000)]      # (more floats than the pool holds)
            for call in range(30):
                d = [call + k / 7 for k in range(3000)]
                f = [float(call + k) for k in range(500)]
                # Each call's values are new; floats freed by the calls before (the
                # lists the servant did not keep) are decoded into again, and every
                # float in the pool is taken by the next drop.
                assert ref.total(d, f) == pytest.approx(sum(d) + sum(f))
                ref.drop(big)
            assert ref.total([], []) == 0       # (after the last drop, served in order)
            assert keeper.dropped == 20000
    finally:
        server.close()
    d, f, d_then, f_then = keeper.first
    assert [repr(x) for x in d] == d_then       # the lists kept, unchanged
    assert [repr(x) for x in f] == f_then
    assert all(repr(value) == then for value, then in keeper.kept)  # and the floats kept
