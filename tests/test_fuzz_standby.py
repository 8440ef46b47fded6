"""A spawned target's standby: the next process is started while the current
one runs, so a restart takes it at once; a target on a fixed port cannot
have one (it could not listen, or would share the port), and the standby is
given up.  And the target's output, read as it comes."""

import os
import socket
import sys
import time

from pycdr.fuzz.target import SpawnedTarget, endpoint
from pycdr.giop.messages import KeyAddr, LocateRequest, encode_message
from pycdr.conformance.target import resolve_target

HERE = os.path.dirname(os.path.abspath(__file__))
RAW = f"{sys.executable} {os.path.join(HERE, 'raw_giop_server.py')} --no-faults"


def answers_locate(address_text: str) -> bool:
    target = resolve_target(address_text)
    message = encode_message(LocateRequest(version=(1, 2), request_id=7,
                                           target=KeyAddr(target.object_key)))
    with socket.create_connection((target.host, target.port), timeout=5) as sock:
        sock.sendall(message)
        return len(sock.recv(64)) >= 12


def test_restart_takes_the_standby():
    spawned = SpawnedTarget(RAW, standby=True)
    try:
        first = spawned.start()
        first_process = spawned.process
        standby_process = spawned._standby.process
        assert standby_process.poll() is None          # started beside the current one
        second = spawned.restart()
        assert spawned.standby_used == 1 and spawned.restarts == 1
        assert spawned.process is standby_process
        assert first_process.poll() is not None        # the old one is stopped
        assert endpoint(second) != endpoint(first)
        assert answers_locate(second)
        assert spawned._standby is not None            # and the next one is starting
        next_standby = spawned._standby.process
    finally:
        spawned.stop()
    assert spawned.process is None and spawned._standby is None
    assert next_standby.poll() is not None and standby_process.poll() is not None


def test_fixed_port_gives_up_the_standby():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spawned = SpawnedTarget(f"{RAW} --port {port}", standby=True)
    try:
        first = spawned.start()
        second = spawned.restart()
        assert spawned.standby_used == 0 and not spawned.standby
        assert endpoint(second) == endpoint(first) == ("127.0.0.1", port)
        assert answers_locate(second)
        third = spawned.restart()                      # no standby tried again
        assert spawned._standby is None and answers_locate(third)
    finally:
        spawned.stop()


def test_two_restarts_in_a_row_take_started_processes():
    """A spare is started behind the standby: a second restart right after
    the first (a confirmation's) takes it, not a process just started."""
    spawned = SpawnedTarget(RAW, standby=True)
    try:
        spawned.start()
        standby, spare = spawned._standby.process, spawned._spare.process
        assert standby.poll() is None and spare.poll() is None
        spawned.restart()
        assert spawned.process is standby
        second = spawned.restart()
        assert spawned.process is spare and spawned.standby_used == 2
        assert answers_locate(second)
        assert spawned._standby is not None and spawned._spare is not None
        left = [spawned._standby.process, spawned._spare.process]
    finally:
        spawned.stop()
    assert spawned._standby is None and spawned._spare is None
    assert all(p.poll() is not None for p in left + [standby])


def test_restart_keeps_the_cases_made_ahead_that_hold_nothing_of_the_address():
    """The standby listens on another port than the process it replaces:
    the cases made ahead whose making read the target's address (object
    key, profile, IOR) are made again for the new one, the others kept."""
    from pycdr.fuzz.engine import Campaign
    from pycdr.fuzz.seeds import catalog_seeds
    campaign = Campaign(None, seed=3, spawn=RAW, seed_sources=catalog_seeds, minimize=False)
    try:
        campaign._taken, campaign._ahead_end = -1, None
        campaign._make_ahead(300)
        before = list(campaign._ahead)
        old = endpoint(campaign.target_text)
        assert campaign._restart() and endpoint(campaign.target_text) != old
        after = list(campaign._ahead)
    finally:
        campaign.close()
    assert [c.index for c in after] == [c.index for c in before] == list(range(300))
    addressed = [c.addressed for c in before]
    assert any(addressed) and not all(addressed)
    assert all((new is old) != old.addressed for new, old in zip(after, before))


def test_output_without_end_is_read_and_its_defects_still_seen(tmp_path):
    """A target that logs without end (as omniORB 4.2.5's spinning thread
    does) is read a chunk at a time: a defect logged after megabytes of
    other lines, split across reads, is still seen with the top of its
    stack, and so is a sanitizer report."""
    script = tmp_path / "chatty.py"
    script.write_text(
        "import sys, time\n"
        "print('corbaloc::127.0.0.1:1/Chatty', flush=True)\n"
        "time.sleep(0.2)\n"
        "line = 'omniORB: (4) To endpoint: giop:tcp:127.0.0.1:1. Send GIOP 1.2 MessageError.\\n'\n"
        "for _ in range(40000):\n"
        "    sys.stdout.write(line)\n"
        "sys.stdout.write('Exception in thread \"worker\" java.lang.StackOverflowError\\n')\n"
        "for n in range(5):\n"
        "    sys.stdout.write(f'\\tat org.example.Reader.read{n}(Reader.java:{n})\\n')\n"
        "sys.stdout.write(line * 1000)\n"
        "sys.stdout.write('==7==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x1\\n')\n"
        "sys.stdout.write('==7==ABORTING\\n')\n"
        "sys.stdout.flush()\n"
        "time.sleep(30)\n")
    spawned = SpawnedTarget(f"{sys.executable} {script}")
    try:
        assert spawned.start() == "corbaloc::127.0.0.1:1/Chatty"
        for _ in range(100):
            if spawned._launch.report.complete:
                break
            time.sleep(0.05)
        defects = spawned.defects_since(0)
        report = spawned.sanitizer_report()
    finally:
        spawned.stop()
    assert [(d["exception"], d.get("thread")) for d in defects] == \
        [("java.lang.StackOverflowError", "worker")]
    assert defects[0]["frames"] == [f"org.example.Reader.read{n}" for n in range(3)]
    assert "heap-buffer-overflow" in report and report.rstrip().endswith("ABORTING")
