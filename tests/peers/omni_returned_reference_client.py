"""An omniORBpy client of conformance/echo.idl's EchoAll::Echo that calls on a reference
the server returned, in one process:

    python omni_returned_reference_client.py IOR ARGUMENT_IOR

Calls echo_object(ARGUMENT_IOR) on IOR, then echo_long(7) on the reference that came back,
and prints one JSON line: {"returned": its stringified IOR, "echo_long": the result} (or
{"exception": repository id} when a call failed).
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from omniORB import CORBA  # noqa: E402

import omni_idl  # noqa: E402

IDL = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                   "conformance", "echo.idl")


def main():
    reference, argument = sys.argv[1], sys.argv[2]
    orb = CORBA.ORB_init([sys.argv[0], "-ORBclientCallTimeOutPeriod", "10000"], CORBA.ORB_ID)
    omni_idl.import_idl(IDL)
    stub_class, _skeleton = omni_idl.interface_classes("EchoAll::Echo")
    try:
        target = orb.string_to_object(reference)._narrow(stub_class)
        returned = target.echo_object(orb.string_to_object(argument)._narrow(stub_class))
        line = {"returned": orb.object_to_string(returned), "echo_long": returned.echo_long(7)}
    except CORBA.SystemException as error:
        line = {"exception": error._NP_RepositoryId}
    print(json.dumps(line), flush=True)
    orb.destroy()


if __name__ == "__main__":
    main()
