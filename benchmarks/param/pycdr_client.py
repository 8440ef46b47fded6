"""The reference ORB's Param_Test client: twoway calls per second of each operation.

    python pycdr_client.py --ior IOR --style static|dii [--seconds S] [--repeat N]
                           [--operations a,b] [--cpu N] [--blocking]

static: the operation as the IDL front end describes it (``ref.invoke(op, s1, s2)``, the
description looked up once, as compiled stubs do); dii: the Dynamic Invocation Interface,
a request built at run time on every call (``ref.invoke_dynamic(name, params, result,
args)``), as a DII client creates a Request per call.  --blocking: the calls made
from this thread over a blocking socket (SyncORB, pycdr.orb.blocking) instead of the
asyncio ORB's event loop.
"""

import argparse
import json
import time

import param_common as common
from benchprocs import pin_to_cpu

from pycdr import idl
from pycdr.orb.aio import run as run_loop
from pycdr.codec.marshal import IMPLEMENTATION
from pycdr.orb import ORB
from pycdr.orb.sync import SyncORB
from pycdr.orb.tls import TLSOptions


async def calls_per_second(call, seconds: float, repeat: int, counted: list) -> list:
    """The async form of param_common.calls_per_second."""
    rates = []
    for _ in range(repeat):
        calls = 0
        started = time.perf_counter()
        deadline = started + seconds
        while True:
            for _ in range(10):
                await call()
            calls += 10
            now = time.perf_counter()
            if now >= deadline:
                break
        rates.append(calls / (now - started))
        counted.append(calls)
    return rates


def operation_call(ref, module, name: str, style: str):
    """(the call of ``name`` in ``style``: a function of no arguments, the value sent)."""
    classes = {n: module[f"ParamTest::{n}"]
               for n in ("Fixed_Struct", "Var_Struct", "Nested_Struct")}
    value = common.make_value(name, classes)
    op = ref.operation(name)
    if style == "static":
        def call():
            return ref.invoke(op, value, value)
    else:
        params = [(p.name, p.mode, p.type) for p in op.params]    # what a DII client knows

        def call():
            return ref.invoke_dynamic(name, params, op.result, (value, value))
    return call, value


def result_row(name, answer, value, rates, counted, meter, own) -> dict:
    return {"operation": name, "calls_per_s": rates,
            "correct": common.members(list(answer)) == common.members([value, value, value]),
            "server_cpu_us": meter.per_call(sum(counted)),
            "client_cpu_us": own.per_call(sum(counted))}


async def measure(ref, module, name: str, style: str, seconds: float, repeat: int,
                  server_pid: int | None = None) -> dict:
    call, value = operation_call(ref, module, name, style)
    answer = await call()
    counted: list = []
    meter, own = common.ServerCPU(server_pid), common.OwnCPU()
    rates = await calls_per_second(call, seconds, repeat, counted)
    return result_row(name, answer, value, rates, counted, meter, own)


async def run(ior: str, style: str, operations, seconds: float, repeat: int,
              cacert: str | None = None, server_pid: int | None = None) -> list:
    module = idl.load(common.IDL_PATH)
    orb = ORB(tls=TLSOptions(cacert=cacert))
    try:
        ref = await orb.string_to_object(ior, module.interfaces[common.INTERFACE])
        return [await measure(ref, module, name, style, seconds, repeat, server_pid)
                for name in operations]
    finally:
        await orb.close()


def run_blocking(ior: str, style: str, operations, seconds: float, repeat: int,
                 cacert: str | None = None, server_pid: int | None = None) -> list:
    """run() with the calls made over a blocking socket from this thread."""
    module = idl.load(common.IDL_PATH)
    results = []
    with SyncORB(tls=TLSOptions(cacert=cacert)) as orb:
        ref = orb.string_to_object(ior, module.interfaces[common.INTERFACE])
        for name in operations:
            call, value = operation_call(ref, module, name, style)
            answer = call()
            counted: list = []
            meter, own = common.ServerCPU(server_pid), common.OwnCPU()
            rates = common.calls_per_second(call, seconds, repeat, counted)
            results.append(result_row(name, answer, value, rates, counted, meter, own))
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ior", required=True)
    parser.add_argument("--style", choices=("static", "dii"), default="static")
    parser.add_argument("--operations", default=",".join(common.OPERATIONS))
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cpu", type=int, default=None)
    parser.add_argument("--cacert", default=None, help="CA certificates for a TLS target")
    parser.add_argument("--server-pid", type=int, default=None,
                        help="the server's process: its CPU per call is reported")
    parser.add_argument("--blocking", action="store_true",
                        help="calls over a blocking socket (SyncORB), not the event loop")
    args = parser.parse_args()
    pinned = pin_to_cpu(args.cpu)
    arguments = (args.ior, args.style, args.operations.split(","), args.seconds,
                 args.repeat, args.cacert, args.server_pid)
    results = run_blocking(*arguments) if args.blocking else run_loop(run(*arguments))
    print(json.dumps({"implementation": IMPLEMENTATION, "pinned": pinned, "results": results}))


if __name__ == "__main__":
    main()
