"""JacORB 3.9 peers for tests: an echo server and a client, both in Java on the installed JDK
(sources in tests/peers/jacorb/src; jars and classes in .peers/jacorb, made by
.ci/install-peers.sh).

    from peers.jacorb import start_jacorb_echo_server, run_jacorb_client, call_from_jacorb

    with start_jacorb_echo_server(giop=(1, 1)) as server:       # tests/peers/echo.idl
        server.ior, server.host, server.port, server.object_key, server.corbaloc
        run_jacorb_client(server.ior, [("echo_wstring", "h\u00e9")])
    with start_jacorb_echo_server(interface=module.interfaces["EchoAll::Echo"]) as server:
        call_from_jacorb(server.ior, interface, [("echo_multi", (6, 2.5))])

Both use the DSI/DII on any IDL interface without an IDL compiler: pycdr writes a description of
the interface with its TypeCodes in CDR (peers.jacorb_interface), JacORB reads it, and values cross
between pycdr and JacORB as CDR encapsulations. JacORB always marshals big-endian, which makes it
the big-endian interop peer.
"""

import functools
import json
import os
import shlex
import shutil
import tempfile

from peers.jacorb_interface import (
    decode_exception, decode_results, encode_arguments, write_description)
from peers.process import (
    LOOPBACK, PEERS_DIR, REPO_ROOT, PeerNotInstalled, PeerProcess, RunningPeer,
    read_echo_server_banner, run_client_process, start_server_with_retries)
from pycdr import idl
from pycdr.orb.invocation import values_to_results

JACORB_HOME = os.path.join(REPO_ROOT, ".peers", "jacorb")
JACORB_SOURCES = os.path.join(PEERS_DIR, "jacorb", "src")
# JacORB persistent object keys are <implname>/<POA name>/<object id>.
IMPLEMENTATION_NAME = "PycdrEcho"
PEERS_ECHO_IDL = os.path.join(PEERS_DIR, "echo.idl")

# A JVM that starts fast: the peers are short-lived and do little work.
_JVM_OPTIONS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]


@functools.lru_cache(maxsize=None)
def peers_echo_interface():
    """PycdrTest::Echo of tests/peers/echo.idl, the default interface of the JacORB peers."""
    return idl.load(PEERS_ECHO_IDL, register=False).interfaces["PycdrTest::Echo"]


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


def start_jacorb_echo_server(*, port=None, giop=None, properties=None, interface=None, timeout=60):
    """Start the JacORB echo server on 127.0.0.1:`port` (a free port if None), serving one object
    of `interface` (a pycdr.idl Interface; tests/peers/echo.idl's PycdrTest::Echo if None) whose
    operations echo their arguments (see EchoServer.java). Its object key is
    b"PycdrEcho/EchoPOA/Echo" (persistent POA). `giop` sets the GIOP version of its IOR;
    `properties` are more JacORB properties (name -> value). Returns a RunningPeer."""
    description_dir = tempfile.mkdtemp(prefix="pycdr-jacorb-description-")
    description = os.path.join(description_dir, "interface.txt")
    write_description(interface or peers_echo_interface(), description)

    def start_once(chosen_port):
        server_properties = {"OAIAddr": LOOPBACK, "OAPort": str(chosen_port),
                             "jacorb.implname": IMPLEMENTATION_NAME,
                             **giop_properties(giop), **(properties or {})}
        argv = (_java_command("pycdrpeers.EchoServer") + [description]
                + _property_arguments(server_properties))
        process = PeerProcess("JacORB-echo", argv)
        ior, object_key = read_echo_server_banner(process, timeout)
        return RunningPeer(process, ior=ior, host=LOOPBACK, port=chosen_port, object_key=object_key,
                           extra_dirs=[description_dir])
    try:
        return start_server_with_retries(start_once, port)
    except BaseException:
        shutil.rmtree(description_dir, ignore_errors=True)
        raise


def call_from_jacorb(ior, interface, calls, *, properties=None, timeout=60):
    """Call operations of `interface` (a pycdr.idl Interface) on `ior` (an IOR or a corbaloc URL)
    from a JacORB client process (DII). `calls` are (operation, in/inout arguments) pairs. Returns
    one dict per call: {"op", "result"} (None, the single value or the tuple, as pycdr's ORB
    returns), {"op", "user_exception"} (the decoded exception), or {"op", "exception", "minor",
    "completed"} for a system exception.

    A JacORB client sends the GIOP version of the target's IIOP profile (jacorb.giop_minor_version
    does not lower it; observed through a proxy): to choose the version, pass a corbaloc URL with
    it, peers.process.corbaloc(host, port, key, giop=(1, 0)), or an IOR with that profile version."""
    operations = interface.all_operations()
    with tempfile.TemporaryDirectory(prefix="pycdr-jacorb-client-") as work_dir:
        description = os.path.join(work_dir, "interface.txt")
        write_description(interface, description)
        calls_file = os.path.join(work_dir, "calls.txt")
        with open(calls_file, "w", encoding="ascii") as f:
            for name, args in calls:
                f.write(f"{name} {encode_arguments(operations[name], args)}\n")
        argv = (_java_command("pycdrpeers.EchoClient") + [description, ior, calls_file]
                + _property_arguments(properties or {}))
        lines = run_client_process("JacORB", argv, timeout)
    results = [json.loads(line) for line in lines]
    for entry in results:
        operation = operations[entry["op"]]
        if "reply" in entry:
            reply = entry.pop("reply")       # empty for a oneway call: nothing came back
            values = decode_results(operation, reply) if reply else []
            entry["result"] = values_to_results(operation, values)
        elif "user_exception" in entry:
            exception_type = next(t for t in operation.raises if t.id() == entry["user_exception"])
            entry["user_exception"] = decode_exception(exception_type, entry.pop("body"))
    return results


def jacorb_conformance_command():
    """The client command for `pycdr conformance --client`: JacORB's ConformanceClient (DII)."""
    return " ".join(shlex.quote(word) for word in _java_command("pycdrpeers.ConformanceClient")) \
        + " {ior} {operation} {args}"


def run_jacorb_client(ior, calls, *, properties=None, timeout=60):
    """call_from_jacorb for tests/peers/echo.idl, whose operations take one argument: `calls` are
    (operation, value) pairs."""
    return call_from_jacorb(ior, peers_echo_interface(), [(name, (value,)) for name, value in calls],
                            properties=properties, timeout=timeout)
