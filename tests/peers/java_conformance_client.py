"""The Java ORBs (JacORB, the OpenJDK ORB, the GlassFish ORB) as conformance client commands
(pycdr conformance --client):

    python java_conformance_client.py ORB {ior} {operation} {args} {count}

ORB is jacorb, openjdk-orb or glassfish-orb (a peers.java_orb.JavaOrb). The JSON arguments become
a CDR encapsulation here (pycdr knows echo.idl's types), the Java program
(pycdrpeers.ConformanceClient) calls the operation through the DII {count} times at once and
prints each call's reply as CDR, and this prints one contract line a call
({"result": ...}, {"system_exception": ...}, {"user_exception": ...}): so every type of
conformance/echo.idl goes through the ORB's own marshalling, with no IDL compiler.

The client's own timeouts are set where the ORB has them: JacORB's pending-reply and connect
timeouts, the GlassFish ORB's wait-for-response timeout (5 s). The OpenJDK ORB has no call timeout
property, so it waits for a reply as long as the connection lives.
"""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from peers.jacorb import JACORB  # noqa: E402
from peers.jacorb_interface import (  # noqa: E402
    decode_exception, decode_results, encode_arguments, write_description)
from peers.jdk_orbs import GLASSFISH_ORB, OPENJDK_ORB  # noqa: E402
from peers.process import run_client_process  # noqa: E402
from pycdr.conformance.echo import ECHO_INTERFACE, load_echo_module  # noqa: E402
from pycdr.orb.invocation import values_to_results  # noqa: E402
from pycdr.orb.jsonvalues import from_json, to_json  # noqa: E402

CALL_TIMEOUT_MS = "5000"
ORBS = {
    "jacorb": (JACORB, {"jacorb.connection.client.pending_reply_timeout": CALL_TIMEOUT_MS,
                        "jacorb.connection.client.connect_timeout": CALL_TIMEOUT_MS}),
    "openjdk-orb": (OPENJDK_ORB, {}),
    "glassfish-orb": (GLASSFISH_ORB,
                      {"com.sun.corba.ee.transport.ORBWaitForResponseTimeout": CALL_TIMEOUT_MS}),
}
# Long enough for a JVM on a loaded machine; the conformance case's own limit is shorter.
PROCESS_TIMEOUT = 60


def java_conformance_command(orb_name: str, python: str = sys.executable) -> str:
    """The client command for `pycdr conformance --client` on ORB_NAME (a key of ORBS);
    PeerNotInstalled when that ORB's jars or the compiled programs are missing."""
    ORBS[orb_name][0].java_command("pycdrpeers.ConformanceClient")
    return f"{python} {os.path.abspath(__file__)} {orb_name} {{ior}} {{operation}} {{args}} {{count}}"


def contract_line(operation, entry: dict) -> dict:
    """The contract's JSON for one line of ConformanceClient's output."""
    if "reply" in entry:
        values = decode_results(operation, entry["reply"]) if entry["reply"] else []
        return {"result": to_json(values_to_results(operation, values))}
    if "user_exception" in entry:
        repo_id = entry["user_exception"]
        declared = next((t for t in operation.raises if t.id() == repo_id), None)
        members = to_json(decode_exception(declared, entry["body"])) if declared else None
        return {"user_exception": {"id": repo_id, "members": members}}
    return {"system_exception": {"exception_id": entry["exception"], "minor": entry["minor"],
                                 "completed": entry["completed"]}}


def main():
    if len(sys.argv) not in (5, 6) or sys.argv[1] not in ORBS:
        sys.exit(f"usage: java_conformance_client.py {{{'|'.join(ORBS)}}} IOR OPERATION "
                 "ARGS_JSON [COUNT]")
    (orb, properties), reference, op_name = ORBS[sys.argv[1]], sys.argv[2], sys.argv[3]
    count = int(sys.argv[5]) if len(sys.argv) == 6 else 1
    interface = load_echo_module().interfaces[ECHO_INTERFACE]
    operation = interface.all_operations()[op_name]
    args = [from_json(p.type, a) for p, a in zip(operation.in_params, json.loads(sys.argv[4]))]
    with tempfile.TemporaryDirectory(prefix=f"pycdr-{orb.lib}-conformance-") as work_dir:
        description = os.path.join(work_dir, "interface.txt")
        write_description(interface, description)
        argv = (orb.java_command("pycdrpeers.ConformanceClient")
                + [description, reference, op_name, encode_arguments(operation, args), str(count)]
                + [f"{k}={v}" for k, v in {**orb.properties, **properties}.items()])
        lines = run_client_process(orb.name, argv, PROCESS_TIMEOUT)
    for line in lines:
        print(json.dumps(contract_line(operation, json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
