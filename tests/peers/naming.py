"""Naming services of the Java ORBs as test peers (omniNames is peers.omni.start_omni_names):

    from peers.naming import start_jacorb_names, start_openjdk_names

    with start_jacorb_names() as ns:      # org.jacorb.naming.NameServer (JacORB 3.9)
        ns.ior, ns.corbaloc, ns.corbaname("a/b.kind")
    with start_openjdk_names() as ns:     # the OpenJDK ORB's TransientNameServer (tnameserv)

Each listens on 127.0.0.1 at a free port (or `port`), answers corbaloc:...:PORT/NameService,
and keeps its state in a temporary folder removed when it stops.
"""

import os
import shutil
import tempfile

from peers.java_orb import _JVM_OPTIONS, PEERS_HOME
from peers.omni import NamingPeer
from peers.process import (LOOPBACK, PeerError, PeerNotInstalled, PeerProcess,
                           start_server_with_retries)

JACORB_NAME_SERVER = "org.jacorb.naming.NameServer"
OPENJDK_NAME_SERVER = "com.sun.corba.se.impl.naming.cosnaming.TransientNameServer"

# The OpenJDK ORB jar (WildFly's build) lacks the message bundle TransientNameServer prints its
# banner with (it dies with "missing resource bundle ... sunorb" before serving): these are the
# three messages it needs, given on the class path as a properties file.
_OPENJDK_BANNER = ("tnameserv.hs1=Initial Naming Context:\\n{0}\n"
                   "tnameserv.hs2=TransientNameServer: setting port for initial object "
                   "references to: {0}\n"
                   "tnameserv.hs3=Ready.\n")


def _java_command(lib, main_class, class_path=(), system_properties=None):
    java = shutil.which("java")
    lib_dir = os.path.join(PEERS_HOME, lib, "lib")
    if java is None:
        raise PeerNotInstalled("no java on PATH")
    if not os.path.isdir(lib_dir) or not os.listdir(lib_dir):
        raise PeerNotInstalled(f"{lib_dir} is missing: run .ci/install-peers.sh")
    classpath = os.pathsep.join([*class_path, os.path.join(lib_dir, "*")])
    system = [f"-D{k}={v}" for k, v in (system_properties or {}).items()]
    return [java, *_JVM_OPTIONS, *system, "-cp", classpath, main_class]


def _start(name, make_argv, read_ior, timeout):
    def start_once(chosen_port):
        state_dir = tempfile.mkdtemp(prefix=f"pycdr-{name}-")
        process = PeerProcess(name, make_argv(chosen_port, state_dir))
        try:
            ior = read_ior(process, state_dir, timeout)
        except PeerError:
            process.stop()
            shutil.rmtree(state_dir, ignore_errors=True)
            raise
        return NamingPeer(process, ior=ior, host=LOOPBACK, port=chosen_port,
                          object_key=b"NameService", extra_dirs=[state_dir])
    return start_once


def start_jacorb_names(*, port=None, timeout=60):
    """Start JacORB's naming service (org.jacorb.naming.NameServer). Returns a NamingPeer."""
    def argv(chosen_port, state_dir):
        return _java_command("jacorb", JACORB_NAME_SERVER, system_properties={
            "org.omg.CORBA.ORBClass": "org.jacorb.orb.ORB",
            "org.omg.CORBA.ORBSingletonClass": "org.jacorb.orb.ORBSingleton",
            "OAIAddr": LOOPBACK, "OAPort": str(chosen_port),
            "jacorb.naming.db_dir": state_dir,
            "jacorb.naming.ior_filename": os.path.join(state_dir, "ns.ior")})

    def read_ior(process, state_dir, timeout):
        process.wait_for_line(lambda line: "NS up" in line, timeout, stream="stderr")
        with open(os.path.join(state_dir, "ns.ior"), encoding="ascii") as f:
            return f.read().strip()
    return start_server_with_retries(_start("JacORB-NameServer", argv, read_ior, timeout), port)


def start_openjdk_names(*, port=None, timeout=60):
    """Start the OpenJDK ORB's transient naming service (TransientNameServer, what the JDK's
    tnameserv ran). Returns a NamingPeer."""
    def argv(chosen_port, state_dir):
        bundle = os.path.join(state_dir, "com", "sun", "corba", "se", "impl", "orbutil",
                              "resources")
        os.makedirs(bundle)
        with open(os.path.join(bundle, "sunorb.properties"), "w", encoding="ascii") as f:
            f.write(_OPENJDK_BANNER)
        return _java_command("openjdk-orb", OPENJDK_NAME_SERVER, class_path=[state_dir],
                             system_properties={"com.sun.CORBA.ORBServerHost": LOOPBACK}) + \
            ["-ORBInitialPort", str(chosen_port)]

    def read_ior(process, state_dir, timeout):
        process.wait_for_line(lambda line: line == "Ready.", timeout)
        return next(line for line in process.stdout_text().splitlines()
                    if line.startswith("IOR:"))
    return start_server_with_retries(_start("OpenJDK-NameServer", argv, read_ior, timeout),
                                     port)
