"""Java ORBs as test peers: one echo server and one client program (tests/peers/jacorb/src,
compiled by .ci/install-peers.sh into .peers/jacorb/classes) that run on the jars of any of the
Java ORBs described here (.peers/<orb>/lib): JacORB (peers.jacorb), the OpenJDK ORB and the
GlassFish ORB (peers.jdk_orbs).

Both programs use the DSI/DII on any IDL interface without an IDL compiler: pycdr writes a
description of the interface with its TypeCodes in CDR (peers.jacorb_interface), the ORB reads it,
and values cross between pycdr and the ORB as CDR encapsulations (pycdrpeers.ValueStreams: JacORB's
own streams, the standard IOP Codec on the others).
"""

import functools
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Callable, Dict, List

from peers.jacorb_interface import (
    decode_exception, decode_results, encode_arguments, write_description)
from peers.process import (
    LOOPBACK, PEERS_DIR, REPO_ROOT, PeerNotInstalled, PeerProcess, RunningPeer,
    read_echo_server_banner, run_client_process, start_server_with_retries)
from pycdr.orb.invocation import values_to_results

PEERS_HOME = os.path.join(REPO_ROOT, ".peers")
PROGRAM_SOURCES = os.path.join(PEERS_DIR, "jacorb", "src")
PROGRAM_CLASSES = os.path.join(PEERS_HOME, "jacorb", "classes")
PROGRAM_STAMP = os.path.join(PEERS_HOME, "jacorb", "classes.stamp")

# A JVM that starts fast: the peers are short-lived and do little work.
_JVM_OPTIONS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]


@dataclass(frozen=True)
class JavaOrb:
    """One Java ORB the programs run on. `name` labels its processes; `lib` is the directory
    under .peers/ its jars are in (tests/peers/<lib>/pom.xml lists them); `properties` are the
    ORB properties every program gets (selecting the ORB); `system_properties` are -D options for
    settings the ORB reads from the JVM, not from ORB.init; `listen_properties(host, port)` are
    the server properties that put its persistent POA's endpoint on host:port."""
    name: str
    lib: str
    properties: Dict[str, str]
    listen_properties: Callable[[str, int], Dict[str, str]]
    system_properties: Dict[str, str] = field(default_factory=dict)

    def java_command(self, main_class, jvm_options=()):
        """`java ... main_class` on this ORB's jars, with `jvm_options` (a -javaagent, say) before
        the class path; PeerNotInstalled if a part is missing or the compiled programs are older
        than their sources."""
        java = shutil.which("java")
        lib = os.path.join(PEERS_HOME, self.lib, "lib")
        if java is None or not os.path.isdir(PROGRAM_CLASSES) or not os.path.isdir(lib):
            raise PeerNotInstalled(f"{self.name} peers are not installed: run .ci/install-peers.sh")
        if not _classes_match_sources():
            raise PeerNotInstalled("the Java peer classes were compiled from other sources than "
                                   "tests/peers/jacorb/src: run .ci/install-peers.sh")
        classpath = os.pathsep.join([PROGRAM_CLASSES, os.path.join(lib, "*")])
        system = [f"-D{name}={value}" for name, value in self.system_properties.items()]
        return [java, *_JVM_OPTIONS, *system, *jvm_options, "-cp", classpath, main_class]


@functools.lru_cache(maxsize=None)
def _classes_match_sources() -> bool:
    """Whether classes.stamp names the sources as they are now. The stamp's second word is
    install-peers.sh's hash of them (`find src -name '*.java' | LC_ALL=C sort | xargs
    sha256sum | sha256sum`, computed the same way here). Content, not mtimes: a copied .peers
    (cp -r into a fresh checkout) has new mtimes and looked up to date while it held classes
    of older sources (a JacORB client without send_oneway, failing the oneway cases)."""
    try:
        with open(PROGRAM_STAMP, encoding="ascii") as f:
            words = f.read().split()
    except OSError:
        return False
    root = os.path.dirname(PROGRAM_SOURCES)
    paths = sorted((os.path.relpath(os.path.join(d, n), root).encode()
                    for d, _subdirs, files in os.walk(PROGRAM_SOURCES)
                    for n in files if n.endswith(".java")))
    listing = b"".join(hashlib.sha256(open(os.path.join(root, p.decode()), "rb").read())
                       .hexdigest().encode() + b"  " + p + b"\n" for p in paths)
    return len(words) == 2 and words[1] == hashlib.sha256(listing).hexdigest()


def _property_arguments(properties):
    return [f"{name}={value}" for name, value in properties.items()]


def start_java_echo_server(orb, interface, *, port=None, properties=None, jvm_options=(),
                           timeout=60):
    """Start the echo server on `orb` (a JavaOrb) at 127.0.0.1:`port` (a free port if None),
    serving one object of `interface` (a pycdr.idl Interface) whose operations echo their
    arguments (see EchoServer.java), activated with the id "Echo" in the persistent POA "EchoPOA".
    `properties` are more ORB properties (name -> value); `jvm_options` more JVM options (a
    -javaagent, say). Returns a RunningPeer."""
    description_dir = tempfile.mkdtemp(prefix=f"pycdr-{orb.lib}-description-")
    description = os.path.join(description_dir, "interface.txt")
    write_description(interface, description)

    def start_once(chosen_port):
        server_properties = {**orb.properties, **orb.listen_properties(LOOPBACK, chosen_port),
                             **(properties or {})}
        argv = (orb.java_command("pycdrpeers.EchoServer", jvm_options) + [description]
                + _property_arguments(server_properties))
        process = PeerProcess(f"{orb.name}-echo", argv)
        ior, object_key = read_echo_server_banner(process, timeout)
        return RunningPeer(process, ior=ior, host=LOOPBACK, port=chosen_port, object_key=object_key,
                           extra_dirs=[description_dir])
    try:
        return start_server_with_retries(start_once, port)
    except BaseException:
        shutil.rmtree(description_dir, ignore_errors=True)
        raise


def call_from_java_orb(orb, ior, interface, calls, *, properties=None, timeout=60):
    """Call operations of `interface` (a pycdr.idl Interface) on `ior` (an IOR or a corbaloc URL)
    from a client process on `orb` (a JavaOrb; DII). `calls` are (operation, in/inout arguments)
    pairs. Returns one dict per call: {"op", "result"} (None, the single value or the tuple, as
    pycdr's ORB returns), {"op", "user_exception"} (the decoded exception), or {"op",
    "exception", "minor", "completed"} for a system exception."""
    operations = interface.all_operations()
    with tempfile.TemporaryDirectory(prefix=f"pycdr-{orb.lib}-client-") as work_dir:
        description = os.path.join(work_dir, "interface.txt")
        write_description(interface, description)
        calls_file = os.path.join(work_dir, "calls.txt")
        with open(calls_file, "w", encoding="ascii") as f:
            for name, args in calls:
                f.write(f"{name} {encode_arguments(operations[name], args)}\n")
        argv = (orb.java_command("pycdrpeers.EchoClient") + [description, ior, calls_file]
                + _property_arguments({**orb.properties, **(properties or {})}))
        lines = run_client_process(orb.name, argv, timeout)
    results: List[dict] = [json.loads(line) for line in lines]
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
