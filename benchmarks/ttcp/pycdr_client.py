"""The reference ORB's TTCP client: sends the points it is given to a TTCP server and prints
the seconds each repetition took, as JSON.

    python pycdr_client.py --ior IOR --points short:1024:oneway:65536,... [--repeat N]
                           [--arrays] [--cpu N]

A repetition: reset(), then ``calls`` sends of the same buffer (oneway: each returns once
the request is written; twoway: each waits for its reply), then received() until the server
has every element. The time covers the sends and the receipt.
"""

import argparse
import asyncio
import json
import time

import ttcp_common as common
from benchprocs import pin_to_cpu

from pycdr import idl
from pycdr.orb.aio import run as run_loop
from pycdr.marshal import IMPLEMENTATION
from pycdr.orb import ORB


async def wait_until_received(ref, received_op, expected: int) -> int:
    """The async form of common.wait_until_received."""
    deadline = time.monotonic() + common.RECEIPT_TIMEOUT
    while True:
        got = await ref.invoke(received_op)
        if got >= expected or time.monotonic() > deadline:
            return got
        await asyncio.sleep(0.001)


async def measure(ref, point: dict, module, repeat: int, arrays: bool) -> dict:
    count = common.element_count(point["type"], point["size_bytes"])
    value = common.make_sequence(point["type"], count, module["TTCP::BinStruct"],
                                 arrays=arrays and point["type"] in common.ARRAY_CODE)
    op = ref.operation(common.operation_name(point["type"], point["mode"]))
    received_op, reset_op = ref.operation("received"), ref.operation("reset")
    send = ref.send_oneway if point["mode"] == "oneway" else ref.invoke
    calls = point["calls"]
    await ref.invoke(reset_op)             # warm-up: plans built, connection up; the
    await send(op, value)                  # server has counted it before the reset below
    await wait_until_received(ref, received_op, count)
    seconds, got = [], 0
    for _ in range(repeat):
        await ref.invoke(reset_op)
        started = time.perf_counter()
        for _ in range(calls):
            await send(op, value)
        got = await wait_until_received(ref, received_op, count * calls)
        seconds.append(time.perf_counter() - started)
    return common.point_result(point, seconds, got)


async def run(ior: str, points: list, repeat: int, arrays: bool) -> list:
    module = idl.load(common.IDL_PATH)
    orb = ORB(timeout=common.RECEIPT_TIMEOUT)
    try:
        ref = await orb.string_to_object(ior, module.interfaces[common.INTERFACE])
        return [await measure(ref, point, module, repeat, arrays) for point in points]
    finally:
        await orb.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ior", required=True)
    parser.add_argument("--points", type=common.parse_points, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--arrays", action="store_true",
                        help="send numeric sequences as array.array")
    parser.add_argument("--cpu", type=int, default=None)
    args = parser.parse_args()
    pinned = pin_to_cpu(args.cpu)
    results = run_loop(run(args.ior, args.points, args.repeat, args.arrays))
    print(json.dumps({"implementation": IMPLEMENTATION, "pinned": pinned, "results": results}))


if __name__ == "__main__":
    main()
