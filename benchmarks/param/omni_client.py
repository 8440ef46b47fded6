"""omniORBpy's Param_Test client: twoway calls per second of each operation.

    python omni_client.py --ior IOR --style static|dii [--seconds S] [--repeat N]
                          [--operations a,b] [--cpu N]

static: omniORBpy's compiled stubs (``obj.test_short(s1, s2)``).
dii: omniORBpy's dynamic invocation. omniORBpy 4.2 has no CORBA::Request (no
``Object._request``/``_create_request``, no ``ORB.create_list``); what it offers instead is
``Object._dynamic_op(name, in TypeCodes, out TypeCodes)``, which returns a function
invoking an operation described by TypeCodes at run time (in and inout arguments in,
result, inout and out arguments out; the same calling convention as a stub, so every
Param_Test operation can be called). It is made again on every call, as a DII client
creates a Request per call; the TypeCodes are looked up once, as pycdr-DII takes its
parameter list from the IDL front end once.
"""

import argparse
import json
import sys

import param_common as common
from benchprocs import omni_client, pin_to_cpu


def dynamic_call(obj, stub_class, name: str):
    """A call of ``name`` through ``obj._dynamic_op``, the operation described per call by
    the TypeCodes of its in/inout arguments and of its result/inout/out values."""
    from omniORB.tcInternal import createTypeCode
    in_descriptors, out_descriptors, _exceptions = getattr(stub_class, f"_d_{name}")
    in_typecodes = [createTypeCode(d) for d in in_descriptors]
    out_typecodes = [createTypeCode(d) for d in out_descriptors]

    def call(s1, s2):
        return obj._dynamic_op(name, in_typecodes, out_typecodes)(s1, s2)
    return call


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ior", required=True)
    parser.add_argument("--style", choices=("static", "dii"), default="static")
    parser.add_argument("--operations", default=",".join(common.OPERATIONS))
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cpu", type=int, default=None)
    parser.add_argument("--server-pid", type=int, default=None,
                        help="the server's process: its CPU per call is reported")
    args = parser.parse_args()
    pinned = pin_to_cpu(args.cpu)
    orb, obj = omni_client(common.IDL_PATH, common.INTERFACE, args.ior)
    module = sys.modules["ParamTest"]
    classes = {n: getattr(module, n) for n in ("Fixed_Struct", "Var_Struct", "Nested_Struct")}
    results = []
    for name in args.operations.split(","):
        value = common.make_value(name, classes)
        if args.style == "static":
            method = getattr(obj, name)
        else:
            method = dynamic_call(obj, module.Param_Test, name)
        answer = method(value, value)
        correct = common.members(list(answer)) == common.members([value, value, value])
        results.append(common.timed_row(name, lambda: method(value, value), correct,
                                        args.seconds, args.repeat, args.server_pid))
    orb.destroy()
    print(json.dumps({"implementation": "omniORBpy", "pinned": pinned, "results": results}))


if __name__ == "__main__":
    main()
