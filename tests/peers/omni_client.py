"""omniORBpy echo client, run as a subprocess by tests/peers/omni.py.

    python omni_client.py --idl FILE --interface Module::Interface IOR operation=text ... [-- ORB options...]

Calls each operation of the Echo interface (tests/peers/echo.idl) with the argument given in the
text form of echo_ops.py and prints one JSON object per call on stdout:
    {"op": "echo_long", "result": "42"}
    {"op": "echo_long", "exception": "IDL:omg.org/CORBA/TRANSIENT:1.0", "minor": 1096024066, "completed": 1}
Never call echo_wchar or echo_wstring here: the salome-omniorb omniORBpy aborts on wchar data.
"""

import argparse
import json
import sys

from omniORB import CORBA

import echo_ops
import omni_idl


def call(target, operation, text):
    try:
        result = getattr(target, operation)(echo_ops.from_text(operation, text))
    except CORBA.SystemException as error:
        return {"op": operation, "exception": error._NP_RepositoryId,
                "minor": error.minor, "completed": int(error.completed._v)}
    except CORBA.UserException as error:
        return {"op": operation, "exception": error._NP_RepositoryId}
    return {"op": operation, "result": echo_ops.to_text(operation, result)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--idl", required=True)
    parser.add_argument("--interface", required=True, help="scoped name, e.g. PycdrTest::Echo")
    parser.add_argument("ior")
    parser.add_argument("calls", nargs="*", help="operation=text")
    # ORB options follow "--"; split them off first, or argparse would count them as calls.
    arguments, orb_args = sys.argv[1:], []
    if "--" in arguments:
        separator = arguments.index("--")
        arguments, orb_args = arguments[:separator], arguments[separator + 1:]
    options = parser.parse_args(arguments)

    orb = CORBA.ORB_init([sys.argv[0]] + orb_args, CORBA.ORB_ID)
    omni_idl.import_idl(options.idl)
    interface_class, _skeleton_class = omni_idl.interface_classes(options.interface)
    # Narrowing is local when the IOR names the interface; a corbaloc reference costs an _is_a call.
    target = orb.string_to_object(options.ior)._narrow(interface_class)
    if target is None:
        sys.exit(f"{options.ior} is not a {options.interface}")
    for call_spec in options.calls:
        operation, _, text = call_spec.partition("=")
        print(json.dumps(call(target, operation, text)), flush=True)
    orb.destroy()


if __name__ == "__main__":
    main()
