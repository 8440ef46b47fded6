"""The reference ORB's client as a conformance client command:

    python -m pycdr.conformance.refclient {ior} {operation} {args} [{count}]

Calls OPERATION of conformance/echo.idl on the reference with ARGS (a JSON array) through
pycdr's ORB and prints what came back as one JSON line (the contract of client_cases):
{"result": ...}, {"system_exception": {...}} or {"user_exception": {...}}. With COUNT, makes
that many calls at once on the one reference (the ORB multiplexes them on its connection) and
prints a line for each."""

from __future__ import annotations

import asyncio
import json
import sys

from pycdr.giop.sysexc import SystemException
from pycdr.orb import ORB
from pycdr.orb.invocation import UnknownUserException
from pycdr.orb.jsonvalues import from_json, to_json
from pycdr.codec.values import UserException

from .echo import ECHO_INTERFACE, load_echo_module

TIMEOUT = 5.0          # seconds: the client's own call and connect timeouts


async def call(reference: str, operation: str, args: list, count: int = 1) -> list[dict]:
    interface = load_echo_module().interfaces[ECHO_INTERFACE]
    op = interface.all_operations()[operation]
    values = [from_json(p.type, a) for p, a in zip(op.in_params, args)]
    async with ORB(timeout=TIMEOUT, connect_timeout=TIMEOUT) as orb:
        try:
            ref = await orb.string_to_object(reference, interface)
        except SystemException as e:
            return [{"system_exception": e.to_json()}] * count
        return list(await asyncio.gather(*(_one_call(ref, op, values) for _ in range(count))))


async def _one_call(ref, op, values) -> dict:
    try:
        result = await ref.invoke(op, *values)
    except SystemException as e:
        return {"system_exception": e.to_json()}
    except UserException as e:
        return {"user_exception": {"id": type(e)._tc.id(), "members": to_json(e)}}
    except UnknownUserException as e:
        return {"user_exception": {"id": e.exception_id}}
    return {"result": to_json(result)}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (3, 4):
        print("usage: python -m pycdr.conformance.refclient IOR OPERATION ARGS_JSON [COUNT]",
              file=sys.stderr)
        return 2
    count = int(argv[3]) if len(argv) == 4 else 1
    for report in asyncio.run(call(argv[0], argv[1], json.loads(argv[2]), count)):
        print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
