"""Thread findings: a JVM target that hangs because a thread it started with died without a
word (tests/targets/DeadListener.java: its connection-accepting thread dies, silently, after
a Request holding "plant").  The hung process's threads (jcmd) lack the one of its start:
a `thread` finding naming it, where a target whose threads are all there hangs as a hang."""

import os
import shutil
import subprocess

import pytest

from pycdr.fuzz.engine import Campaign
from pycdr.fuzz.seeds import Seed
from pycdr.giop.messages import KeyAddr, Request, encode_message

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "targets", "DeadListener.java")


@pytest.fixture(scope="module")
def dead_listener(tmp_path_factory):
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None or shutil.which("jcmd") is None:
        pytest.skip("no JDK (javac, java, jcmd)")
    classes = tmp_path_factory.mktemp("dead-listener")
    subprocess.run([javac, "-d", str(classes), SOURCE], check=True, timeout=120)
    return f"{java} -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp {classes} DeadListener"


def _request(operation: str) -> bytes:
    return encode_message(Request(version=(1, 2), request_id=3, target=KeyAddr(b"Dead"),
                                  operation=operation))


def test_silent_listener_death_is_a_thread_finding(dead_listener):
    campaign = Campaign(None, spawn=dead_listener, timeout=0.5, probe_timeout=0.5,
                        seeds=[Seed("plant", [_request("plant")])], standby=False,
                        coverage="none")
    try:
        assert "ServerSocketListener" in campaign._start_threads
        # A Request without the trigger: the target answers on.
        assert not campaign.reproduces("thread", [_request("echo")], fresh=False)
        assert campaign.last_verdict.kind is None
        # The trigger: the next connection is accepted by no one; the process lives.
        assert campaign.reproduces("thread", [_request("plant")], fresh=False)
        details = campaign.last_verdict.details
        assert details["threads_gone"] == ["ServerSocketListener"]
        assert details["probe"] == "silent" and campaign.spawned.exited() is None
        # Again, against a restarted target.
        assert campaign.reproduces("thread", [_request("plant")], fresh=True)
    finally:
        campaign.close()
