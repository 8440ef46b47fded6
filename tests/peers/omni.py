"""omniORBpy (PyPI salome-omniorb) peers for tests: an echo server, an echo client and omniNames.

    from peers.omni import start_omni_echo_server, run_omni_client, start_omni_names

    with start_omni_echo_server(giop=(1, 1)) as server:
        server.ior, server.host, server.port, server.object_key, server.corbaloc
        run_omni_client(server.ior, [("echo_long", 42)])  # -> [{"op": "echo_long", "result": 42}]

omniORB marshals in its host byte order (little-endian here). The salome-omniorb build aborts
the process when it receives wchar data: send no wchar/wstring to it, nor through its client.
"""

import os
import shutil
import sys
import tempfile

from peers import echo_ops
from peers.process import (
    LOOPBACK, PEERS_DIR, PeerError, PeerNotInstalled, PeerProcess, RunningPeer, read_echo_server_banner,
    run_client_process, start_server_with_retries)

ECHO_IDL = os.path.join(PEERS_DIR, "echo.idl")
OMNI_SERVER_SCRIPT = os.path.join(PEERS_DIR, "omni_server.py")
OMNI_CLIENT_SCRIPT = os.path.join(PEERS_DIR, "omni_client.py")
OMNI_FACTORY_SERVER_SCRIPT = os.path.join(PEERS_DIR, "omni_factory_server.py")
# The wheel installs omniNames beside the interpreter that has omniORB (the project venv).
OMNI_NAMES = os.path.join(os.path.dirname(sys.executable), "omniNames")


def giop_orb_args(giop):
    """omniORB options that cap the GIOP version at `giop` ((1, 0), (1, 1) or (1, 2)); none for None.
    For a server this sets the IIOP profile version of its IORs; a client sends at most this
    version (and at most the target profile's or corbaloc's version)."""
    if giop is None:
        return []
    return ["-ORBmaxGIOPVersion", f"{giop[0]}.{giop[1]}"]


def start_omni_echo_server(*, port=None, giop=None, orb_args=(), idl=ECHO_IDL,
                           interface="PycdrTest::Echo", object_id="Echo", timeout=30,
                           differ=None):
    """Start an omniORBpy server on 127.0.0.1:`port` (a free port if None) serving one object of
    `interface` from `idl` whose operations echo their arguments (see omni_server.py), under the
    object key `object_id`. `giop` caps the GIOP version; `orb_args` are more omniORB options;
    `differ` names an operation that answers otherwise (omni_server.differ). Returns a
    RunningPeer."""
    def start_once(chosen_port):
        endpoint = f"giop:tcp:{LOOPBACK}:{chosen_port}"
        argv = [sys.executable, OMNI_SERVER_SCRIPT, "--idl", idl, "--interface", interface,
                "--object-id", object_id, *(["--differ", differ] if differ else []), "--",
                "-ORBendPoint", endpoint, *giop_orb_args(giop), *orb_args]
        process = PeerProcess("omniORBpy-echo", argv)
        ior, object_key = read_echo_server_banner(process, timeout)
        return RunningPeer(process, ior=ior, host=LOOPBACK, port=chosen_port, object_key=object_key)
    return start_server_with_retries(start_once, port)


def start_omni_factory_server(*, prefix, idl, port=None, timeout=30):
    """Start an omniORBpy server of ReplayFactory::Maker (omni_factory_server.py) on
    127.0.0.1:`port` (a free port if None) whose Counters' keys start with `prefix`. Returns a
    RunningPeer (its object key: the Maker's)."""
    def start_once(chosen_port):
        argv = [sys.executable, OMNI_FACTORY_SERVER_SCRIPT, "--idl", idl, "--prefix", prefix,
                "--", "-ORBendPoint", f"giop:tcp:{LOOPBACK}:{chosen_port}"]
        process = PeerProcess("omniORBpy-factory", argv)
        ior, object_key = read_echo_server_banner(process, timeout)
        return RunningPeer(process, ior=ior, host=LOOPBACK, port=chosen_port, object_key=object_key)
    return start_server_with_retries(start_once, port)


def run_omni_client(ior, calls, *, giop=None, orb_args=(), idl=ECHO_IDL, interface="PycdrTest::Echo",
                    timeout=60):
    """Call echo operations on `ior` (an IOR or a corbaloc/corbaname URL) from an omniORBpy
    client process. `calls` are
    (operation, value) pairs of echo_ops.ECHO_OPERATIONS (no wchar/wstring, see above). Returns one
    dict per call: {"op", "result"} or {"op", "exception", "minor", "completed"}."""
    argv = [sys.executable, OMNI_CLIENT_SCRIPT, "--idl", idl, "--interface", interface, ior, *echo_ops.call_arguments(calls),
            "--", *giop_orb_args(giop), *orb_args]
    return echo_ops.parse_client_output(run_client_process("omniORBpy", argv, timeout))


class NamingPeer(RunningPeer):
    def corbaname(self, name):
        """corbaname URL resolving the stringified name `name` (e.g. "test/Echo.obj") here."""
        return f"corbaname::{self.host}:{self.port}#{name}"


def start_omni_names(*, port=None, orb_args=(), timeout=30):
    """Start omniNames on 127.0.0.1:`port` (a free port if None) with a fresh data directory.
    Returns a RunningPeer whose `ior` is the root naming context and `corbaloc` its
    corbaloc:iiop:1.2@127.0.0.1:PORT/NameService; `corbaname(name)` builds a corbaname URL."""
    if not os.path.exists(OMNI_NAMES):
        raise PeerNotInstalled(f"{OMNI_NAMES} is missing: install the test extra (salome-omniorb)")

    def start_once(chosen_port):
        data_dir = tempfile.mkdtemp(prefix="pycdr-omninames-")
        argv = [OMNI_NAMES, "-start", str(chosen_port), "-datadir", data_dir,
                "-ORBendPoint", f"giop:tcp:{LOOPBACK}:{chosen_port}", *orb_args]
        process = PeerProcess("omniNames", argv, exits_when_stdin_closes=False)
        marker = "Root context is "
        try:
            line = process.wait_for_line(lambda text: marker in text, timeout, stream="stderr")
        except PeerError:
            process.stop()
            shutil.rmtree(data_dir, ignore_errors=True)
            raise
        ior = line[line.index(marker) + len(marker):].strip()
        return NamingPeer(process, ior=ior, host=LOOPBACK, port=chosen_port,
                          object_key=b"NameService", extra_dirs=[data_dir])
    return start_server_with_retries(start_once, port)
