"""pytest fixtures for the real peers. Import the ones a test module uses, e.g.

    from peers.fixtures import omni_echo_server, start_peer  # noqa: F401 (pytest fixtures)

    def test_something(omni_echo_server, start_peer):
        old_server = start_peer(start_omni_echo_server, giop=(1, 0))
"""

import pytest

from peers.jacorb import start_jacorb_echo_server
from peers.omni import start_omni_echo_server, start_omni_names


@pytest.fixture
def start_peer():
    """Factory: start_peer(launcher, **options) calls a start_* launcher and returns its
    RunningPeer; every peer started this way is stopped when the test ends."""
    started = []

    def start(launcher, **options):
        peer = launcher(**options)
        started.append(peer)
        return peer

    yield start
    for peer in reversed(started):
        peer.stop()


@pytest.fixture(scope="module")
def omni_echo_server():
    """An omniORBpy echo server (GIOP 1.2) shared by a test module."""
    with start_omni_echo_server() as peer:
        yield peer


@pytest.fixture(scope="module")
def jacorb_echo_server():
    """A JacORB echo server (GIOP 1.2) shared by a test module."""
    with start_jacorb_echo_server() as peer:
        yield peer


@pytest.fixture(scope="module")
def omni_names():
    """An omniNames naming service shared by a test module."""
    with start_omni_names() as peer:
        yield peer
