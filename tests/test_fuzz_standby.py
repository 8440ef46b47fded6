"""A spawned target's standby: the next process is started while the current
one runs, so a restart takes it at once; a target on a fixed port cannot
have one (it could not listen, or would share the port), and the standby is
given up."""

import os
import socket
import sys

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
