"""JacORB 3.9 peers for tests: an echo server and an echo client, both in Java on the installed
JDK (sources in tests/peers/jacorb/src; jars and classes in .peers/jacorb, made by
.ci/install-peers.sh).

    from peers.jacorb import start_jacorb_echo_server, run_jacorb_client

    with start_jacorb_echo_server(giop=(1, 1)) as server:
        server.ior, server.host, server.port, server.object_key, server.corbaloc
        run_jacorb_client(server.ior, [("echo_wstring", "h\u00e9")])

Both use the DSI/DII, so no IDL compiler is involved; they know the operations of
tests/peers/echo.idl (echo_ops.ECHO_OPERATIONS), wchar and wstring included. JacORB always
marshals big-endian, which makes it the big-endian interop peer.
"""

import os
import shutil

from peers import echo_ops
from peers.process import (
    LOOPBACK, PEERS_DIR, REPO_ROOT, PeerNotInstalled, PeerProcess, RunningPeer,
    read_echo_server_banner, run_client_process, start_server_with_retries)

JACORB_HOME = os.path.join(REPO_ROOT, ".peers", "jacorb")
JACORB_SOURCES = os.path.join(PEERS_DIR, "jacorb", "src")
# JacORB persistent object keys are <implname>/<POA name>/<object id>.
IMPLEMENTATION_NAME = "PycdrEcho"

# A JVM that starts fast: the peers are short-lived and do little work.
_JVM_OPTIONS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]


def _java_command(main_class):
    """`java ... main_class` with the JacORB classpath; PeerNotInstalled if a part is missing or
    the compiled classes are older than their sources."""
    java = shutil.which("java")
    classes = os.path.join(JACORB_HOME, "classes")
    lib = os.path.join(JACORB_HOME, "lib")
    if java is None or not os.path.isdir(classes) or not os.path.isdir(lib):
        raise PeerNotInstalled("JacORB peers are not installed: run .ci/install-peers.sh")
    built = os.path.getmtime(os.path.join(JACORB_HOME, "classes.stamp"))
    for directory, _subdirs, files in os.walk(JACORB_SOURCES):
        for name in files:
            if os.path.getmtime(os.path.join(directory, name)) > built:
                raise PeerNotInstalled(f"JacORB peer classes are older than {name}: run .ci/install-peers.sh")
    classpath = os.pathsep.join([classes, os.path.join(lib, "*")])
    return [java, *_JVM_OPTIONS, "-cp", classpath, main_class]


def giop_properties(giop):
    """JacORB server properties for GIOP version `giop` ((1, 0), (1, 1) or (1, 2)); none for None.
    This sets the IIOP profile version of the server's IORs (checked with catior). It does not
    change the version a JacORB client sends: that follows the target's profile version."""
    if giop is None:
        return {}
    if giop[0] != 1:
        raise ValueError(f"JacORB speaks GIOP 1.x only, not {giop}")
    return {"jacorb.giop_minor_version": str(giop[1])}


def _property_arguments(properties):
    return [f"{name}={value}" for name, value in properties.items()]


def start_jacorb_echo_server(*, port=None, giop=None, properties=None, timeout=60):
    """Start the JacORB echo server on 127.0.0.1:`port` (a free port if None). Its object key is
    b"PycdrEcho/EchoPOA/Echo" (persistent POA). `giop` sets the GIOP version of its IOR;
    `properties` are more JacORB properties (name -> value). Returns a RunningPeer."""
    def start_once(chosen_port):
        server_properties = {"OAIAddr": LOOPBACK, "OAPort": str(chosen_port),
                             "jacorb.implname": IMPLEMENTATION_NAME,
                             **giop_properties(giop), **(properties or {})}
        argv = _java_command("pycdrpeers.EchoServer") + _property_arguments(server_properties)
        process = PeerProcess("JacORB-echo", argv)
        ior, object_key = read_echo_server_banner(process, timeout)
        return RunningPeer(process, ior=ior, host=LOOPBACK, port=chosen_port, object_key=object_key)
    return start_server_with_retries(start_once, port)


def run_jacorb_client(ior, calls, *, properties=None, timeout=60):
    """Call echo operations on `ior` (an IOR or a corbaloc URL) from a JacORB client process
    (DII). `calls` are (operation, value) pairs of echo_ops.ECHO_OPERATIONS. Returns one dict per
    call: {"op", "result"} or {"op", "exception", "minor", "completed"}.

    A JacORB client sends the GIOP version of the target's IIOP profile (jacorb.giop_minor_version
    does not lower it; observed through a proxy): to choose the version, pass a corbaloc URL with
    it, peers.process.corbaloc(host, port, key, giop=(1, 0)), or an IOR with that profile version."""
    argv = (_java_command("pycdrpeers.EchoClient") + [ior] + _property_arguments(properties or {})
            + ["--"] + echo_ops.call_arguments(calls))
    return echo_ops.parse_client_output(run_client_process("JacORB", argv, timeout))
