"""omniORBpy as a conformance client command (pycdr conformance --client):

    python omni_conformance_client.py {ior} {operation} {args}

Calls OPERATION of conformance/echo.idl with ARGS (a JSON array) through omniORBpy stubs and
prints what came back as one JSON line (the contract in pycdr/conformance/client_cases.py).
The client's own timeouts are set (5 s a call), so a server that stalls ends the call.
Never ask it for echo_wchar or echo_wstring: the salome omniORBpy aborts on wchar data.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from omniORB import CORBA  # noqa: E402

import omni_idl  # noqa: E402

IDL = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                   "conformance", "echo.idl")
ORB_OPTIONS = ["-ORBclientCallTimeOutPeriod", "5000", "-ORBclientConnectTimeOutPeriod", "5000"]


def from_json(operation, value):
    """omniORBpy's value for a contract argument (the structs are built from their JSON)."""
    if operation == "echo_padding":
        return sys.modules["EchoAll"].Padding(value["c1"], value["ll"])
    if operation == "echo_reverse":
        return sys.modules["EchoAll"].Reverse(value["ll"], value["c1"])
    return value


def to_json(value):
    if hasattr(value, "__dict__"):         # a struct: its members by name
        return {k: v for k, v in value.__dict__.items() if not k.startswith("_")}
    return value


def report(target, operation, args):
    try:
        result = to_json(getattr(target, operation)(*(from_json(operation, a) for a in args)))
    except CORBA.SystemException as error:
        return {"system_exception": {"exception_id": error._NP_RepositoryId,
                                     "minor": error.minor, "completed": int(error.completed._v)}}
    except CORBA.UserException as error:
        members = {k: v for k, v in error.__dict__.items() if not k.startswith("_")}
        return {"user_exception": {"id": error._NP_RepositoryId, "members": members}}
    return {"result": result}


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: omni_conformance_client.py IOR OPERATION ARGS_JSON")
    reference, operation, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    orb = CORBA.ORB_init([sys.argv[0], *ORB_OPTIONS], CORBA.ORB_ID)
    omni_idl.import_idl(IDL)
    stub_class, _skeleton = omni_idl.interface_classes("EchoAll::Echo")
    try:
        target = orb.string_to_object(reference)._narrow(stub_class)
        print(json.dumps(report(target, operation, args)), flush=True)
    except CORBA.SystemException as error:      # narrowing a corbaloc reference calls _is_a
        print(json.dumps({"system_exception": {"exception_id": error._NP_RepositoryId,
                                               "minor": error.minor,
                                               "completed": int(error.completed._v)}}),
              flush=True)
    orb.destroy()


if __name__ == "__main__":
    main()
