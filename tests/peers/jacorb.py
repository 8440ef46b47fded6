"""JacORB 3.9 peers for tests: an echo server and a client, both in Java on the installed JDK
(sources in tests/peers/jacorb/src; jars and classes in .peers/jacorb, made by
.ci/install-peers.sh).

    from peers.jacorb import start_jacorb_echo_server, run_jacorb_client, call_from_jacorb

    with start_jacorb_echo_server(giop=(1, 1)) as server:       # tests/peers/echo.idl
        server.ior, server.host, server.port, server.object_key, server.corbaloc
        run_jacorb_client(server.ior, [("echo_wstring", "h\u00e9")])
    with start_jacorb_echo_server(interface=module.interfaces["EchoAll::Echo"]) as server:
        call_from_jacorb(server.ior, interface, [("echo_multi", (6, 2.5))])

Both are the Java programs of peers.java_orb run on JacORB's jars. JacORB always marshals
big-endian, which makes it the big-endian interop peer.
"""

import functools
import json
import os

from peers.java_orb import JavaOrb, call_from_java_orb, start_java_echo_server
from peers.process import PEERS_DIR, run_client_process
from pycdr import idl

# JacORB persistent object keys are <implname>/<POA name>/<object id>.
IMPLEMENTATION_NAME = "PycdrEcho"
PEERS_ECHO_IDL = os.path.join(PEERS_DIR, "echo.idl")

JACORB = JavaOrb(
    name="JacORB", lib="jacorb",
    properties={"org.omg.CORBA.ORBClass": "org.jacorb.orb.ORB",
                "org.omg.CORBA.ORBSingletonClass": "org.jacorb.orb.ORBSingleton"},
    listen_properties=lambda host, port: {"OAIAddr": host, "OAPort": str(port),
                                          "jacorb.implname": IMPLEMENTATION_NAME})

# JacORB 3.4 (tests/peers/jacorb-3.4/pom.xml), an old release the same programs run on; its
# CDR streams predate the ones pycdrpeers.JacorbValueStreams uses, so they use the IOP Codec.
JACORB_3_4 = JavaOrb(
    name="JacORB-3.4", lib="jacorb-3.4", properties=JACORB.properties,
    listen_properties=JACORB.listen_properties,
    system_properties={"pycdrpeers.valueStreams": "codec"})


@functools.lru_cache(maxsize=None)
def peers_echo_interface():
    """PycdrTest::Echo of tests/peers/echo.idl, the default interface of the JacORB peers."""
    return idl.load(PEERS_ECHO_IDL, register=False).interfaces["PycdrTest::Echo"]


def giop_properties(giop):
    """JacORB server properties for GIOP version `giop` ((1, 0), (1, 1) or (1, 2)); none for None.
    This sets the IIOP profile version of the server's IORs (checked with catior). It does not
    change the version a JacORB client sends: that follows the target's profile version."""
    if giop is None:
        return {}
    if giop[0] != 1:
        raise ValueError(f"JacORB speaks GIOP 1.x only, not {giop}")
    return {"jacorb.giop_minor_version": str(giop[1])}


def start_jacorb_echo_server(*, port=None, giop=None, properties=None, interface=None, timeout=60):
    """Start the JacORB echo server on 127.0.0.1:`port` (a free port if None), serving one object
    of `interface` (a pycdr.idl Interface; tests/peers/echo.idl's PycdrTest::Echo if None) whose
    operations echo their arguments (see EchoServer.java). Its object key is
    b"PycdrEcho/EchoPOA/Echo" (persistent POA). `giop` sets the GIOP version of its IOR;
    `properties` are more JacORB properties (name -> value). Returns a RunningPeer."""
    return start_java_echo_server(JACORB, interface or peers_echo_interface(), port=port,
                                  properties={**giop_properties(giop), **(properties or {})},
                                  timeout=timeout)


def call_from_jacorb(ior, interface, calls, *, properties=None, timeout=60):
    """call_from_java_orb on JacORB: call operations of `interface` on `ior` from a JacORB
    client process (DII). `calls` are (operation, in/inout arguments) pairs.

    A JacORB client sends the GIOP version of the target's IIOP profile (jacorb.giop_minor_version
    does not lower it; observed through a proxy): to choose the version, pass a corbaloc URL with
    it, peers.process.corbaloc(host, port, key, giop=(1, 0)), or an IOR with that profile version."""
    return call_from_java_orb(JACORB, ior, interface, calls, properties=properties, timeout=timeout)


def run_jacorb_client(ior, calls, *, properties=None, timeout=60):
    """call_from_jacorb for tests/peers/echo.idl, whose operations take one argument: `calls` are
    (operation, value) pairs."""
    return call_from_jacorb(ior, peers_echo_interface(), [(name, (value,)) for name, value in calls],
                            properties=properties, timeout=timeout)


def call_returned_reference_from_jacorb(ior, argument_ior, *, timeout=60):
    """In one JacORB client process (ReturnedReferenceClient.java), echo_object(`argument_ior`)
    on `ior` (conformance/echo.idl's EchoAll::Echo), then echo_long(7) on the reference that
    came back: {"returned": its IOR as JacORB stringifies it, "echo_long": the result}, or
    {"exception": repository id}."""
    argv = JACORB.java_command("pycdrpeers.ReturnedReferenceClient") + [ior, argument_ior] + \
        [f"{name}={value}" for name, value in JACORB.properties.items()]
    return json.loads(run_client_process(JACORB.name, argv, timeout)[-1])
