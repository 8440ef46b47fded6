"""omniORBpy's TTCP client: the same points, buffers and timing as pycdr_client.py, with
omniORBpy's static stubs (ttcp.idl compiled by omniidl).

    python omni_client.py --ior IOR --points short:1024:oneway:65536,... [--repeat N] [--cpu N]
                          [--server-pid PID]
"""

import argparse
import json
import sys
import time

import ttcp_common as common
from benchprocs import omni_client, pin_to_cpu


def measure(obj, point: dict, bin_struct, repeat: int, server_pid=None) -> dict:
    count = common.element_count(point["type"], point["size_bytes"])
    value = common.make_sequence(point["type"], count, bin_struct)
    send = getattr(obj, common.operation_name(point["type"], point["mode"]))
    calls = point["calls"]
    obj.reset()                      # warm-up, counted before the first reset below
    send(value)
    common.wait_until_received(obj.received, count)
    seconds, got = [], 0
    meters = common.cpu_meters(server_pid)
    for _ in range(repeat):
        obj.reset()
        started = time.perf_counter()
        for _ in range(calls):
            send(value)
        got = common.wait_until_received(obj.received, count * calls)
        seconds.append(time.perf_counter() - started)
    return common.point_result(point, seconds, got, meters)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ior", required=True)
    parser.add_argument("--points", type=common.parse_points, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cpu", type=int, default=None)
    parser.add_argument("--server-pid", type=int, default=None)
    args = parser.parse_args()
    pinned = pin_to_cpu(args.cpu)

    orb, obj = omni_client(common.IDL_PATH, common.INTERFACE, args.ior)
    bin_struct = sys.modules["TTCP"].BinStruct
    results = [measure(obj, point, bin_struct, args.repeat, args.server_pid)
               for point in args.points]
    orb.destroy()
    print(json.dumps({"implementation": "omniORBpy", "pinned": pinned, "results": results}))


if __name__ == "__main__":
    main()
