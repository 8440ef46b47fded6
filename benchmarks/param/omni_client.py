"""omniORBpy's Param_Test client (static stubs): twoway calls per second of each operation.

    python omni_client.py --ior IOR [--seconds S] [--repeat N] [--operations a,b] [--cpu N]
"""

import argparse
import json
import sys

import param_common as common
from benchprocs import omni_client, pin_to_cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ior", required=True)
    parser.add_argument("--style", choices=("static",), default="static")
    parser.add_argument("--operations", default=",".join(common.OPERATIONS))
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cpu", type=int, default=None)
    args = parser.parse_args()
    pinned = pin_to_cpu(args.cpu)
    orb, obj = omni_client(common.IDL_PATH, common.INTERFACE, args.ior)
    module = sys.modules["ParamTest"]
    classes = {n: getattr(module, n) for n in ("Fixed_Struct", "Var_Struct", "Nested_Struct")}
    results = []
    for name in args.operations.split(","):
        value = common.make_value(name, classes)
        method = getattr(obj, name)
        answer = method(value, value)
        correct = common.members(list(answer)) == common.members([value, value, value])
        rates = common.calls_per_second(lambda: method(value, value), args.seconds,
                                        args.repeat)
        results.append({"operation": name, "calls_per_s": rates, "correct": correct})
    orb.destroy()
    print(json.dumps({"implementation": "omniORBpy", "pinned": pinned, "results": results}))


if __name__ == "__main__":
    main()
