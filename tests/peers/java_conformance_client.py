"""The Java ORBs (JacORB, the OpenJDK ORB, the GlassFish ORB) as conformance client commands
(pycdr conformance --client):

    python java_conformance_client.py ORB {ior} {operation} {args} {count}
    python java_conformance_client.py ORB --batch {batch}

ORB is jacorb, openjdk-orb or glassfish-orb (a peers.java_orb.JavaOrb). The JSON arguments become
a CDR encapsulation here (pycdr knows echo.idl's types), the Java program
(pycdrpeers.ConformanceClient) calls the operation through the DII {count} times at once and
prints each call's reply as CDR, and this prints one contract line a call
({"result": ...}, {"system_exception": ...}, {"user_exception": ...}): so every type of
conformance/echo.idl goes through the ORB's own marshalling, with no IDL compiler.

The batch form is the client runner's batch contract (docs/conformance.md): one case a JSON line
on standard input, its contract lines and then {"exit": STATUS} on standard output. One JVM
(pycdrpeers.ConformanceBatchClient) makes every case's calls, each case on an ORB of its own; a
JVM that dies is started anew for the next case. STATUS is what the one-case form's exit status
would have been: 0, or 1 when the Java program failed (its lines are dropped then, as the one-case
form drops them).

The client's own timeouts are set where the ORB has them: JacORB's pending-reply and connect
timeouts, the GlassFish ORB's wait-for-response timeout (5 s). The OpenJDK ORB has no call timeout
property, so it waits for a reply as long as the connection lives.
"""

import json
import os
import subprocess
import sys
import tempfile
import traceback

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


def java_conformance_command(orb_name: str, python: str = sys.executable, *,
                             batch: bool = False) -> str:
    """The client command for `pycdr conformance --client` on ORB_NAME (a key of ORBS): a
    process a case, or with ``batch`` one process for all the cases (the runner's {batch}
    contract); PeerNotInstalled when that ORB's jars or the compiled programs are missing."""
    ORBS[orb_name][0].java_command("pycdrpeers.ConformanceClient")
    if batch:
        return f"{python} {os.path.abspath(__file__)} {orb_name} --batch {{batch}}"
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


def orb_properties(orb, properties) -> list:
    return [f"{k}={v}" for k, v in {**orb.properties, **properties}.items()]


class BatchJvm:
    """The batch form's JVM: started for the first case and again after one died."""

    def __init__(self, orb, properties, description):
        self.argv = (orb.java_command("pycdrpeers.ConformanceBatchClient") + [description]
                     + orb_properties(orb, properties))
        self.process = None

    def run(self, reference, op_name, arguments_hex, count):
        """(the Java lines of the case, the one-case form's exit status)."""
        if self.process is None or self.process.poll() is not None:
            # its stderr is ours: the runner keeps it in the case's report
            self.process = subprocess.Popen(self.argv, stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, text=True, bufsize=1)
        lines = []
        try:
            self.process.stdin.write(f"{reference}\t{op_name}\t{arguments_hex}\t{count}\n")
            self.process.stdin.flush()
        except OSError:
            pass                # it died: its end is read below
        for line in self.process.stdout:
            line = line.rstrip("\n")
            if line.startswith("END "):
                return (lines, 0) if line == "END 0" else ([], 1)
            lines.append(line)
        status = self.process.wait()
        print(f"the Java program exited with status {status} during the case", file=sys.stderr,
              flush=True)
        return [], 1

    def close(self):
        if self.process is not None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def batch_main(orb_name):
    """The batch form: cases from standard input until it ends."""
    orb, properties = ORBS[orb_name]
    interface = load_echo_module().interfaces[ECHO_INTERFACE]
    with tempfile.TemporaryDirectory(prefix=f"pycdr-{orb.lib}-conformance-") as work_dir:
        description = os.path.join(work_dir, "interface.txt")
        write_description(interface, description)
        jvm = BatchJvm(orb, properties, description)
        try:
            for text in sys.stdin:
                if not text.strip():
                    continue
                try:
                    case = json.loads(text)
                    operation = interface.all_operations()[case["operation"]]
                    args = [from_json(p.type, a)
                            for p, a in zip(operation.in_params, case["args"])]
                    lines, status = jvm.run(case["ior"], case["operation"],
                                            encode_arguments(operation, args), case["count"])
                    out = [json.dumps(contract_line(operation, json.loads(line)))
                           for line in lines]
                except Exception:               # what would end the one-case form: status 1
                    traceback.print_exc()
                    out, status = [], 1
                for line in out:
                    print(line)
                print(json.dumps({"exit": status}), flush=True)
        finally:
            jvm.close()


def main():
    if len(sys.argv) == 3 and sys.argv[2] == "--batch" and sys.argv[1] in ORBS:
        batch_main(sys.argv[1])
        return
    if len(sys.argv) not in (5, 6) or sys.argv[1] not in ORBS:
        sys.exit(f"usage: java_conformance_client.py {{{'|'.join(ORBS)}}} IOR OPERATION "
                 "ARGS_JSON [COUNT]\n       java_conformance_client.py ORB --batch")
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
                + orb_properties(orb, properties))
        lines = run_client_process(orb.name, argv, PROCESS_TIMEOUT)
    for line in lines:
        print(json.dumps(contract_line(operation, json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
