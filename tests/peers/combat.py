"""Combat 0.8.1, the Tcl ORB (Debian tcl-combat, installed by .ci/install-peers.sh), as a test
peer: an echo server and a client, Tcl programs in tests/peers/combat, run by tclsh.

    from peers.combat import start_combat_echo_server, call_from_combat

    with start_combat_echo_server(interface) as server:           # a pycdr.idl Interface
        server.ior, server.port, server.object_key
    call_from_combat(ior, interface, ["echo_long 5", "echo_longs {1 2 3}"])

Combat has no IDL compiler of its own (idl2tcl needs MICO, TAO or ORBacus): pycdr writes the
interface in Combat's interface-repository form, and an echo servant (peers.combat_interface).
Combat marshals little-endian (with "foo" as its padding bytes), which makes it a second
little-endian peer beside omniORBpy.
"""

import os
import shutil
import tempfile

from peers.combat_interface import combat_echo_servant, combat_ir
from peers.process import (
    LOOPBACK, PEERS_DIR, PeerError, PeerNotInstalled, PeerProcess, RunningPeer,
    run_client_process, start_server_with_retries)
from pycdr.addressing.iiop import decode_iiop_profile
from pycdr.codec.ior import ior_from_string

COMBAT_PROGRAMS = os.path.join(PEERS_DIR, "combat")
# Where Debian's tcl-combat puts the package (tclsh finds it there by itself).
COMBAT_PACKAGE = "/usr/share/tcltk/combat0.8"
TAG_INTERNET_IOP = 0


def tclsh_command(program):
    tclsh = shutil.which("tclsh")
    if tclsh is None or not os.path.isdir(COMBAT_PACKAGE):
        raise PeerNotInstalled("Combat is not installed: run .ci/install-peers.sh (tcl-combat)")
    return [tclsh, os.path.join(COMBAT_PROGRAMS, program)]


def write_interface(interface, directory):
    path = os.path.join(directory, "interface.tcl")
    with open(path, "w", encoding="utf-8") as f:
        f.write(combat_ir(interface))
        f.write(combat_echo_servant(interface))
    return path


def _object_key(ior):
    """The object key of the IOR's IIOP profile (Combat prints no key of its own)."""
    for profile in ior_from_string(ior).profiles:
        if profile.tag == TAG_INTERNET_IOP:
            return decode_iiop_profile(profile.data).object_key
    raise PeerError(f"Combat's IOR has no IIOP profile: {ior}")


def start_combat_echo_server(interface, *, port=None, timeout=30):
    """Start Combat's echo server of `interface` (a pycdr.idl Interface) on 127.0.0.1:`port` (a
    free port if None): every operation echoes its in/inout values (combat_echo_servant).
    Returns a RunningPeer."""
    work_dir = tempfile.mkdtemp(prefix="pycdr-combat-server-")
    interface_tcl = write_interface(interface, work_dir)

    def start_once(chosen_port):
        argv = tclsh_command("echo_server.tcl") + [interface_tcl, "-ORBHostName", LOOPBACK,
                                            "-ORBServerPort", str(chosen_port)]
        process = PeerProcess("Combat-echo", argv)
        try:
            process.wait_for_line(lambda line: line == "READY", timeout)
        except PeerError:
            process.stop()
            raise
        ior = next(line for line in process.stdout_text().splitlines() if line.startswith("IOR:"))
        return RunningPeer(process, ior=ior, host=LOOPBACK, port=chosen_port,
                           object_key=_object_key(ior), extra_dirs=[work_dir])
    try:
        return start_server_with_retries(start_once, port)
    except BaseException:
        shutil.rmtree(work_dir, ignore_errors=True)
        raise


def call_from_combat(ior, interface, calls, *, timeout=30):
    """Call operations on `ior` (an IOR or a corbaloc URL) from a Combat client process that
    knows `interface` (None: knows nothing, and asks the object for its interface: _interface,
    then describe_interface). `calls` are Tcl command tails in Combat's mapping ("echo_long 5",
    "echo_padding {c1 a ll 5}"). Returns one (status, text) pair a call: ("ok", the result as
    Tcl text) or ("exception", the exception as Combat raises it)."""
    with tempfile.TemporaryDirectory(prefix="pycdr-combat-client-") as work_dir:
        interface_tcl = "-" if interface is None else write_interface(interface, work_dir)
        calls_file = os.path.join(work_dir, "calls.txt")
        with open(calls_file, "w", encoding="utf-8") as f:
            f.write("".join(call + "\n" for call in calls))
        lines = run_client_process("Combat", tclsh_command("echo_client.tcl")
                                   + [interface_tcl, ior, calls_file], timeout)
    results = []
    for line in lines:
        status, _, text = line.partition(" ")
        results.append((status, text))
    return results
