"""The client runner's batch contract ({batch} in the command, docs/conformance.md): one
process runs case after case, and each case is judged as a process of its own would be.

The client here is a small Python program (GIOP by hand, no ORB) that does, case after case,
what a list of actions says: hang, die, end a case with a status, answer rightly or wrongly. The
same actions run as one process a case and as a batch give the same verdicts and outcomes; the
batch process is started anew after a case that hung (it is killed) or that it died in, and only
then."""

import dataclasses
import os
import sys

import pytest

from pycdr.conformance.client_cases import client_catalog
from pycdr.conformance.client_processes import batch_argv, end_status
from pycdr.conformance.client_runner import ClientCommandError, ClientSuite, run_client_suite
from pycdr.conformance.runner import FAIL, PASS

CLIENT = r'''
import json, os, socket, sys, time
from pycdr.codec.ior import ior_from_string
from pycdr.addressing.iiop import decode_profile
from pycdr.giop.messages import KeyAddr, Request, encode_message

ACTIONS, STARTS = sys.argv[1], sys.argv[2]
with open(STARTS, "a") as f:
    f.write(f"{os.getpid()}\n")


def next_action():
    with open(ACTIONS) as f:
        actions = f.read().split()
    with open(ACTIONS, "w") as f:
        f.write("\n".join(actions[1:]))
    return actions[0]


def call(ior, operation, argument):
    profile = decode_profile(ior_from_string(ior).profiles[0])
    s = socket.create_connection((profile.host, profile.port))
    req = Request(version=(1, 2), request_id=5, target=KeyAddr(profile.object_key),
                  operation=operation)
    s.sendall(encode_message(req, write_body=lambda w: w.write_long(argument)))
    data = b""
    while len(data) < 12 or len(data) < 12 + int.from_bytes(data[8:12], "big"):
        data += s.recv(4096)
    s.close()
    return int.from_bytes(data[-4:], "big", signed=True)


def case(ior, operation, args, end):
    """One case's action; end(status) ends it."""
    action = next_action()
    print("a line that is no report")
    if action == "hang":
        time.sleep(60)
    elif action == "die":
        sys.stdout.flush()
        os._exit(3)
    elif action == "status":
        end(4)
    elif action == "call":
        print(json.dumps({"result": call(ior, operation, args[0])}))
        end(0)
    elif action == "lie":
        print(json.dumps({"result": args[0]}))
        end(0)


if sys.argv[3] == "--batch":
    def end(status):
        print(json.dumps({"exit": status}), flush=True)
    for line in sys.stdin:
        given = json.loads(line)
        case(given["ior"], given["operation"], given["args"], end)
else:
    def end(status):
        sys.stdout.flush()
        sys.exit(status)
    case(sys.argv[3], sys.argv[4], json.loads(sys.argv[5]), end)
'''
ACTIONS = ["hang", "die", "call", "status", "lie", "call", "hang", "call"]
# (verdict, outcome kind, the outcome's exit status) the actions are judged
JUDGED = [(FAIL, "hung", None), (FAIL, "crashed", 3), (PASS, "result", None),
          (FAIL, "crashed", 4), (FAIL, "result", None), (PASS, "result", None),
          (FAIL, "hung", None), (PASS, "result", None)]


def _cases():
    (case,) = [c for c in client_catalog() if c.id == "reply.echo-long[1.2-BE]"]
    # a hang costs the case's time: 2 s here
    return [dataclasses.replace(case, timeout=2.0) for _ in ACTIONS]


def _run(tmp_path, mode):
    client = tmp_path / "client.py"
    client.write_text(CLIENT)
    actions, starts = tmp_path / f"{mode}.actions", tmp_path / f"{mode}.starts"
    actions.write_text("\n".join(ACTIONS))
    prefix = f"{sys.executable} {client} {actions} {starts}"
    command = f"{prefix} --batch {{batch}}" if mode == "batch" else \
        f"{prefix} {{ior}} {{operation}} {{args}}"
    run = run_client_suite(command, _cases())
    judged = [(r.verdict, r.outcome.kind, r.outcome.details.get("exit")) for r in run.results]
    return run, judged, [int(p) for p in starts.read_text().split()]


def test_a_batch_is_judged_case_by_case_as_a_process_a_case(tmp_path):
    _, one_by_one, starts = _run(tmp_path, "one")
    assert one_by_one == JUDGED
    assert len(starts) == len(ACTIONS)
    run, batch, starts = _run(tmp_path, "batch")
    assert batch == one_by_one
    # a new process after the hang (killed) and after the death, and after the second hang:
    # the cases in between share theirs
    assert len(starts) == 4
    assert all(r.command[:-1] == run.results[0].command[:-1] for r in run.results)
    # each case's output is its own: the line before the report, once
    assert [r.stdout.count("a line that is no report") for r in run.results] == [1] * len(ACTIONS)
    # no process is left: the last one ended when its standard input closed
    for pid in starts:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_batch_command_takes_the_cases_counts_and_no_per_case_placeholder(tmp_path):
    suite = ClientSuite("client --batch {batch}")
    concurrent = next(c for c in client_catalog() if c.calls > 1)
    assert suite.runner.applicable(concurrent) == ""
    assert ClientSuite("client {ior} {operation}").runner.applicable(concurrent) != ""
    with pytest.raises(ClientCommandError, match="standard input"):
        ClientSuite("client {batch} {ior}")
    assert batch_argv(["client", "{batch}", "--mode={batch}lines"]) == \
        ["client", "--mode=lines"]
    assert end_status('{"exit": 0}') == 0 and end_status(' {"exit": 3}\n') == 3
    for other in ('{"result": 0}', '{"exit": 0, "result": 1}', '{"exit": true}', "exit 0"):
        assert end_status(other) is None
