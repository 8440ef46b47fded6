"""pytest fixtures for the real peers. Import the ones a test module uses, e.g.

    from peers.fixtures import omni_echo_server, start_peer  # noqa: F401 (pytest fixtures)

    def test_something(omni_echo_server, start_peer):
        old_server = start_peer(start_omni_echo_server, giop=(1, 0))
"""

import pytest

from peers.combat import start_combat_echo_server
from peers.jacorb import start_jacorb_echo_server
from peers.java_orb import start_java_echo_server
from peers.jdk_orbs import GLASSFISH_ORB, OPENJDK_ORB
from peers.omni import start_omni_echo_server, start_omni_names
from pycdr.conformance.echo import ECHO_INTERFACE, load_echo_module


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


@pytest.fixture(scope="module", params=[OPENJDK_ORB, GLASSFISH_ORB], ids=lambda orb: orb.name)
def jdk_orb(request):
    """The two JDK-lineage ORBs (peers.jdk_orbs.JavaOrb), one after the other: a module's tests
    that use it run for the OpenJDK ORB, then for the GlassFish ORB."""
    return request.param


@pytest.fixture(scope="module")
def jdk_orb_echo_server(jdk_orb):
    """An echo server of the conformance Echo (EchoAll::Echo) on jdk_orb, shared by a test
    module (one JVM a module and ORB)."""
    with start_java_echo_server(jdk_orb, load_echo_module().interfaces[ECHO_INTERFACE]) as peer:
        yield peer


@pytest.fixture(scope="module")
def combat_echo_server():
    """A Combat echo server of the conformance Echo (EchoAll::Echo), shared by a test module."""
    with start_combat_echo_server(load_echo_module().interfaces[ECHO_INTERFACE]) as peer:
        yield peer


@pytest.fixture(scope="module")
def omni_names():
    """An omniNames naming service shared by a test module."""
    with start_omni_names() as peer:
        yield peer
