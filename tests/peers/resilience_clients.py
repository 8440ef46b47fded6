"""The client ORBs of the resilience matrix (tests/test_resilience_matrix.py), each as one
process that makes a list of calls and prints a line as each call ends:

    client = CLIENTS[label]
    argv = client.command(work_dir, ior, calls)      # calls: [(operation, JSON args), ...]
    client.parse(operation, line)                    # -> the contract's JSON of that call

The programs are the ones the other peer tests run: the reference ORB's and omniORBpy's
resilience clients (tests/peers/*_resilience_client.py), the Java ORBs' EchoClient (DII, from
the interface description pycdr writes) and Combat's echo_client.tcl. The call timeouts are
set where the ORB has one (TIMEOUT_S); `configuration` says what each client was given.
A client's `check()` raises PeerNotInstalled when its peer is missing."""

import importlib.util
import json
import os
import sys
from dataclasses import dataclass
from typing import Callable

from peers.combat import tclsh_command, write_interface
from peers.combat_conformance_client import exception_line, from_tcl, tcl_list, to_tcl
from peers.jacorb import JACORB
from peers.jacorb_interface import encode_arguments, write_description
from peers.java_conformance_client import contract_line
from peers.jdk_orbs import GLASSFISH_ORB, OPENJDK_ORB
from peers.process import PEERS_DIR, PeerNotInstalled
from pycdr.conformance.echo import ECHO_INTERFACE, load_echo_module
from pycdr.orb.jsonvalues import from_json

TIMEOUT_S = 3           # the clients' call (and connect) timeouts, where they have them
TIMEOUT_MS = str(TIMEOUT_S * 1000)
INTERFACE = load_echo_module().interfaces[ECHO_INTERFACE]
OPERATIONS = INTERFACE.all_operations()
OMNI_OPTIONS = ["-ORBclientCallTimeOutPeriod", TIMEOUT_MS,
                "-ORBclientConnectTimeOutPeriod", TIMEOUT_MS]
JAVA_PROPERTIES = {
    "jacorb": {"jacorb.connection.client.pending_reply_timeout": TIMEOUT_MS,
               "jacorb.connection.client.connect_timeout": TIMEOUT_MS},
    "openjdk-orb": {},
    "glassfish-orb": {"com.sun.corba.ee.transport.ORBWaitForResponseTimeout": TIMEOUT_MS},
}


@dataclass(frozen=True)
class ResilienceClient:
    command: Callable       # (work_dir, ior, calls) -> argv
    parse: Callable         # (operation name, stdout line) -> contract JSON, or None (not a call's)
    configuration: str
    check: Callable = lambda: None      # PeerNotInstalled when the client cannot run here


def _omni_check():
    if importlib.util.find_spec("omniORB") is None:
        raise PeerNotInstalled("omniORBpy is not installed: install the test extra "
                               "(salome-omniorb)")


def _json_calls(work_dir, calls):
    path = os.path.join(work_dir, "calls.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(f"{name} {json.dumps(args)}\n" for name, args in calls))
    return path


def _json_line(_operation, line):
    return json.loads(line) if line.startswith("{") else None


def _reference(work_dir, ior, calls):
    return [sys.executable, os.path.join(PEERS_DIR, "reference_resilience_client.py"),
            str(TIMEOUT_S), ior, _json_calls(work_dir, calls)]


def _omni(work_dir, ior, calls):
    return [sys.executable, os.path.join(PEERS_DIR, "omni_resilience_client.py"), ior,
            _json_calls(work_dir, calls), *OMNI_OPTIONS]


def _java(orb_name, orb) -> ResilienceClient:
    """EchoClient on ``orb`` (a peers.java_orb.JavaOrb) with JAVA_PROPERTIES[orb_name]."""
    properties = JAVA_PROPERTIES[orb_name]

    def command(work_dir, ior, calls):
        description = os.path.join(work_dir, "interface.txt")
        write_description(INTERFACE, description)
        calls_file = os.path.join(work_dir, "calls.txt")
        with open(calls_file, "w", encoding="ascii") as f:
            for name, args in calls:
                op = OPERATIONS[name]
                values = [from_json(p.type, a) for p, a in zip(op.in_params, args)]
                f.write(f"{name} {encode_arguments(op, values)}\n")
        return (orb.java_command("pycdrpeers.EchoClient") + [description, ior, calls_file]
                + [f"{k}={v}" for k, v in {**orb.properties, **properties}.items()])

    def parse(operation, line):
        if not line.startswith("{"):
            return None
        return contract_line(OPERATIONS[operation], json.loads(line))

    settings = " ".join(f"`-D{k}={v}`" for k, v in properties.items()) or \
        "no properties set (it has no call timeout property)"
    return ResilienceClient(command, parse, settings,
                            lambda: orb.java_command("pycdrpeers.EchoClient"))


def _combat(work_dir, ior, calls):
    interface_tcl = write_interface(INTERFACE, work_dir)
    calls_file = os.path.join(work_dir, "calls.txt")
    with open(calls_file, "w", encoding="utf-8") as f:
        for name, args in calls:
            op = OPERATIONS[name]
            f.write(tcl_list([name] + [to_tcl(p.type, a) for p, a in zip(op.in_params, args)])
                    + "\n")
    return tclsh_command("echo_client.tcl") + [interface_tcl, ior, calls_file]


def _combat_line(operation, line):
    status, _, text = line.partition(" ")
    if status == "ok":
        return {"result": from_tcl(OPERATIONS[operation].result, text)}
    if status == "exception":
        return exception_line(OPERATIONS[operation], text)
    return None


def _clients():
    return {
        "pycdr reference ORB": ResilienceClient(
            _reference, _json_line, f"call and connect timeouts of {TIMEOUT_S} s"),
        "omniORBpy 4.2.5": ResilienceClient(_omni, _json_line, f"`{' '.join(OMNI_OPTIONS)}`",
                                            _omni_check),
        "JacORB 3.9": _java("jacorb", JACORB),
        "OpenJDK ORB 10.1.3": _java("openjdk-orb", OPENJDK_ORB),
        "GlassFish ORB 5.0.0": _java("glassfish-orb", GLASSFISH_ORB),
        "Combat 0.8.1": ResilienceClient(_combat, _combat_line,
                                         "its defaults (Combat has no call or connect timeout)",
                                         lambda: tclsh_command("echo_client.tcl")),
    }


CLIENTS = _clients()
