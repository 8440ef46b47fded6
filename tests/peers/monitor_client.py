"""An omniORBpy client whose calls tests/test_monitor_peers.py watches with pycdr monitor:
it measures each call itself and prints what it saw, one JSON object a call.

    python monitor_client.py IDL IOR CALLS BAD_REFERENCE

CALLS echo_long calls on IOR (ReplayEcho::Echo), each timed with perf_counter_ns around
the call: {"op": "echo_long", "value": v, "ns": n}; then an _is_a call on
BAD_REFERENCE (a corbaloc URL naming no object): {"op": "_is_a", "exception": id,
"minor": m, "completed": c}.
"""

import json
import sys
import time

from omniORB import CORBA

import omni_idl


def main():
    idl_path, ior, calls, bad = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    orb = CORBA.ORB_init([sys.argv[0]], CORBA.ORB_ID)
    omni_idl.import_idl(idl_path)
    interface_class, _ = omni_idl.interface_classes("ReplayEcho::Echo")
    echo = orb.string_to_object(ior)._narrow(interface_class)
    for i in range(calls):
        value = i * 37 - 5
        start = time.perf_counter_ns()
        result = echo.echo_long(value)
        took = time.perf_counter_ns() - start
        assert result == value
        print(json.dumps({"op": "echo_long", "value": value, "ns": took}), flush=True)
    try:
        orb.string_to_object(bad)._is_a("IDL:ReplayEcho/Echo:1.0")
        print(json.dumps({"op": "_is_a", "result": True}), flush=True)
    except CORBA.SystemException as error:
        print(json.dumps({"op": "_is_a", "exception": error._NP_RepositoryId,
                          "minor": error.minor, "completed": int(error.completed._v)}),
              flush=True)
    orb.destroy()


if __name__ == "__main__":
    main()
