"""omniORBpy making a list of calls in one process, for the resilience matrix
(tests/test_resilience_matrix.py):

    python omni_resilience_client.py IOR CALLS_FILE [ORB options ...]

CALLS_FILE has one call a line: the operation of conformance/echo.idl and its arguments as a
JSON array, separated by a space. The calls are made one after the other through omniORBpy
stubs, and one JSON line is printed as each ends, in the contract's form (the conformance
driver's, omni_conformance_client.report)."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from omniORB import CORBA  # noqa: E402

import omni_idl  # noqa: E402
from omni_conformance_client import IDL, report  # noqa: E402


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: omni_resilience_client.py IOR CALLS_FILE [ORB options ...]")
    reference, calls_file, options = sys.argv[1], sys.argv[2], sys.argv[3:]
    orb = CORBA.ORB_init([sys.argv[0], *options], CORBA.ORB_ID)
    omni_idl.import_idl(IDL)
    stub_class, _skeleton = omni_idl.interface_classes("EchoAll::Echo")
    target = orb.string_to_object(reference)._narrow(stub_class)
    with open(calls_file, encoding="utf-8") as f:
        calls = [line.split(" ", 1) for line in f.read().splitlines() if line]
    for name, args in calls:
        print(json.dumps(report(orb, target, name, json.loads(args))), flush=True)
    orb.destroy()


if __name__ == "__main__":
    main()
