"""The reference ORB's client making a list of calls in one process, for the resilience
matrix (tests/test_resilience_matrix.py):

    python reference_resilience_client.py TIMEOUT IOR CALLS_FILE

CALLS_FILE has one call a line: the operation of conformance/echo.idl and its arguments as a
JSON array, separated by a space. The calls are made one after the other on one ORB (so on one
connection while it lives), with TIMEOUT seconds as the call and connect timeouts, and one JSON
line is printed as each ends, in the contract's form of pycdr.conformance.client_cases
({"result": ...}, {"system_exception": {...}}, {"user_exception": {...}})."""

import asyncio
import json
import sys

from pycdr.codec.values import UserException
from pycdr.conformance.echo import ECHO_INTERFACE, load_echo_module
from pycdr.giop.sysexc import SystemException
from pycdr.orb import ORB
from pycdr.orb.jsonvalues import from_json, to_json


async def main(timeout: float, reference: str, calls_file: str) -> None:
    interface = load_echo_module().interfaces[ECHO_INTERFACE]
    operations = interface.all_operations()
    with open(calls_file, encoding="utf-8") as f:
        calls = [line.split(" ", 1) for line in f.read().splitlines() if line]
    async with ORB(timeout=timeout, connect_timeout=timeout) as orb:
        ref = await orb.string_to_object(reference, interface)
        for name, args in calls:
            op = operations[name]
            values = [from_json(p.type, a) for p, a in zip(op.in_params, json.loads(args))]
            try:
                line = {"result": to_json(await ref.invoke(op, *values))}
            except SystemException as e:
                line = {"system_exception": e.to_json()}
            except UserException as e:
                line = {"user_exception": {"id": type(e)._tc.id()}}
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: reference_resilience_client.py TIMEOUT IOR CALLS_FILE")
    asyncio.run(main(float(sys.argv[1]), sys.argv[2], sys.argv[3]))
