"""The reference ORB's TTCP client: sends the points it is given to a TTCP server and prints
the seconds each repetition took, as JSON.

    python pycdr_client.py --ior IOR --points short:1024:oneway:65536,... [--repeat N]
                           [--arrays] [--cpu N] [--blocking] [--server-pid PID]

A repetition: reset(), then ``calls`` sends of the same buffer (oneway: each returns once
the request is written; twoway: each waits for its reply), then received() until the server
has every element. The time covers the sends and the receipt.  --blocking: the calls
made from this thread over a blocking socket (SyncORB, pycdr.orb.blocking) instead of the
asyncio ORB's event loop.
"""

import argparse
import asyncio
import json
import time

import ttcp_common as common
from benchprocs import pin_to_cpu

from pycdr import idl
from pycdr.orb.aio import run as run_loop
from pycdr.codec.marshal import IMPLEMENTATION
from pycdr.orb import ORB
from pycdr.orb.sync import SyncORB


async def wait_until_received(ref, received_op, expected: int) -> int:
    """The async form of common.wait_until_received."""
    deadline = time.monotonic() + common.RECEIPT_TIMEOUT
    while True:
        got = await ref.invoke(received_op)
        if got >= expected or time.monotonic() > deadline:
            return got
        await asyncio.sleep(0.001)


def point_calls(ref, point: dict, module, arrays: bool):
    """(value, op, received, reset, send, element count) of a point."""
    count = common.element_count(point["type"], point["size_bytes"])
    value = common.make_sequence(point["type"], count, module["TTCP::BinStruct"],
                                 arrays=arrays and point["type"] in common.ARRAY_CODE)
    op = ref.operation(common.operation_name(point["type"], point["mode"]))
    received_op, reset_op = ref.operation("received"), ref.operation("reset")
    send = ref.send_oneway if point["mode"] == "oneway" else ref.invoke
    return value, op, received_op, reset_op, send, count


async def measure(ref, point: dict, module, repeat: int, arrays: bool,
                  server_pid=None) -> dict:
    value, op, received_op, reset_op, send, count = point_calls(ref, point, module, arrays)
    calls = point["calls"]
    await ref.invoke(reset_op)             # warm-up: plans built, connection up; the
    await send(op, value)                  # server has counted it before the reset below
    await wait_until_received(ref, received_op, count)
    seconds, got = [], 0
    meters = common.cpu_meters(server_pid)
    for _ in range(repeat):
        await ref.invoke(reset_op)
        started = time.perf_counter()
        for _ in range(calls):
            await send(op, value)
        got = await wait_until_received(ref, received_op, count * calls)
        seconds.append(time.perf_counter() - started)
    return common.point_result(point, seconds, got, meters)


async def run(ior: str, points: list, repeat: int, arrays: bool, server_pid=None) -> list:
    module = idl.load(common.IDL_PATH)
    orb = ORB(timeout=common.RECEIPT_TIMEOUT)
    try:
        ref = await orb.string_to_object(ior, module.interfaces[common.INTERFACE])
        return [await measure(ref, point, module, repeat, arrays, server_pid)
                for point in points]
    finally:
        await orb.close()


def measure_blocking(ref, point: dict, module, repeat: int, arrays: bool,
                     server_pid=None) -> dict:
    """measure() over a blocking socket."""
    value, op, received_op, reset_op, send, count = point_calls(ref, point, module, arrays)
    calls = point["calls"]
    ref.invoke(reset_op)
    send(op, value)
    common.wait_until_received(lambda: ref.invoke(received_op), count)
    seconds, got = [], 0
    meters = common.cpu_meters(server_pid)
    for _ in range(repeat):
        ref.invoke(reset_op)
        started = time.perf_counter()
        for _ in range(calls):
            send(op, value)
        got = common.wait_until_received(lambda: ref.invoke(received_op), count * calls)
        seconds.append(time.perf_counter() - started)
    return common.point_result(point, seconds, got, meters)


def run_blocking(ior: str, points: list, repeat: int, arrays: bool, server_pid=None) -> list:
    module = idl.load(common.IDL_PATH)
    with SyncORB(timeout=common.RECEIPT_TIMEOUT) as orb:
        ref = orb.string_to_object(ior, module.interfaces[common.INTERFACE])
        return [measure_blocking(ref, point, module, repeat, arrays, server_pid)
                for point in points]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ior", required=True)
    parser.add_argument("--points", type=common.parse_points, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--arrays", action="store_true",
                        help="send numeric sequences as array.array")
    parser.add_argument("--cpu", type=int, default=None)
    parser.add_argument("--blocking", action="store_true",
                        help="calls over a blocking socket (SyncORB), not the event loop")
    parser.add_argument("--server-pid", type=int, default=None)
    args = parser.parse_args()
    pinned = pin_to_cpu(args.cpu)
    arguments = (args.ior, args.points, args.repeat, args.arrays, args.server_pid)
    results = run_blocking(*arguments) if args.blocking else run_loop(run(*arguments))
    print(json.dumps({"implementation": IMPLEMENTATION, "pinned": pinned, "results": results}))


if __name__ == "__main__":
    main()
