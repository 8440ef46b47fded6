"""omniORBpy as a conformance client command (pycdr conformance --client):

    python omni_conformance_client.py [--config NAME] {ior} {operation} {args} [{count}]

Calls OPERATION of conformance/echo.idl with ARGS (a JSON array) through omniORBpy stubs (the
JSON forms turned into omniORBpy's values by the types pycdr reads from echo.idl) and prints what
came back as one JSON line (the contract in pycdr/conformance/client_cases.py).
The client's own timeouts are set (5 s a call), so a server that stalls ends the call.
--config NAME picks the ORB options (a key of CONFIGURATIONS; the first by default).
Never ask it for echo_wchar or echo_wstring: the salome omniORBpy aborts on wchar data.
"""

import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from omniORB import CORBA  # noqa: E402

import omni_idl  # noqa: E402
from pycdr.conformance.echo import ECHO_INTERFACE, load_echo_module  # noqa: E402
from pycdr.codec.typecode import TCKind as K  # noqa: E402

ECHO = load_echo_module().interfaces[ECHO_INTERFACE]
ANY_TYPECODES = {"long": CORBA.TC_long, "double": CORBA.TC_double, "string": CORBA.TC_string,
                 "boolean": CORBA.TC_boolean, "longlong": CORBA.TC_longlong,
                 "octet": CORBA.TC_octet}
ANY_NAMES = {tc.kind(): name for name, tc in ANY_TYPECODES.items()}

IDL = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                   "conformance", "echo.idl")
# The ORB options of a run, by name: the first is the default. A verdict turns on them:
# with -ORBclientConnectTimeOutPeriod set, omniORBpy 4.2.5 follows a forward loop (a new
# connection and LocateRequest each turn) until it is killed, its call timeout no longer
# ending the call; with -ORBclientCallTimeOutPeriod alone it gives up with TIMEOUT when the call
# timeout runs out. tests/test_conformance_client.py runs forward.loop with both.
CONFIGURATIONS = {
    "call-and-connect-timeouts": ["-ORBclientCallTimeOutPeriod", "5000",
                                  "-ORBclientConnectTimeOutPeriod", "5000"],
    "call-timeout-only": ["-ORBclientCallTimeOutPeriod", "5000"],
}


def _unalias(t):
    while t.kind() == K.tk_alias:
        t = t.content_type()
    return t


def from_json(t, value):
    """omniORBpy's value of pycdr type ``t`` for its contract JSON form (pycdr.orb.jsonvalues)."""
    t = _unalias(t)
    k = t.kind()
    module = sys.modules["EchoAll"]
    if k == K.tk_struct:
        return getattr(module, t.name())(*(from_json(t.member_type(i), value[t.member_name(i)])
                                           for i in range(t.member_count())))
    if k == K.tk_enum:
        return getattr(module, value)
    if k == K.tk_union:
        d_type = _unalias(t.discriminator_type())
        d = getattr(module, value["d"]) if d_type.kind() == K.tk_enum else value["d"]
        label_type = next((t.member_type(i) for i in range(t.member_count())
                           if i != t.default_index() and
                           to_json(t.member_label(i)) in (value["d"], _enum_index(d_type, value["d"]))),
                          t.member_type(t.default_index()) if t.default_index() >= 0 else None)
        return getattr(module, t.name())(d, from_json(label_type, value["v"]))
    if k == K.tk_fixed:
        return CORBA.fixed(t.fixed_digits(), t.fixed_scale(), str(value))
    if k == K.tk_any:
        return CORBA.Any(ANY_TYPECODES[value["type"]], value["value"])
    if k in (K.tk_sequence, K.tk_array):
        content = _unalias(t.content_type())
        if content.kind() == K.tk_octet:
            return bytes.fromhex(value) if isinstance(value, str) else bytes(value)
        return [from_json(content, v) for v in value]
    return value


def _enum_index(enum_type, name):
    if enum_type.kind() != K.tk_enum:
        return None
    names = [enum_type.member_name(i) for i in range(enum_type.member_count())]
    return names.index(name) if name in names else None


def to_json(value):
    """The contract JSON form of an omniORBpy value (or of a pycdr union label)."""
    if isinstance(value, (bool, str, float)) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, CORBA.Any):
        return {"type": ANY_NAMES[value.typecode().kind()], "value": to_json(value.value())}
    if hasattr(value, "_n") and hasattr(value, "_v") and not hasattr(value, "_d"):
        return value._n                                    # an enumerator
    if hasattr(value, "_d"):                               # a union
        return {"d": to_json(value._d), "v": to_json(value._v)}
    if "fixed" in type(value).__name__.lower():
        return str(value)
    if hasattr(value, "__dict__"):                         # a struct: its members by name
        return {k: to_json(v) for k, v in value.__dict__.items() if not k.startswith("_")}
    return value


def report(orb, target, operation, args):
    try:
        op = ECHO.all_operations()[operation]
        values = [from_json(p.type, a) for p, a in zip(op.in_params, args)]
        answer = getattr(target, operation)(*values)
        # An object reference is printed stringified (the contract's form for objref).
        result = orb.object_to_string(answer) if isinstance(answer, CORBA.Object) \
            else to_json(answer)
    except CORBA.SystemException as error:
        return {"system_exception": {"exception_id": error._NP_RepositoryId,
                                     "minor": error.minor, "completed": int(error.completed._v)}}
    except CORBA.UserException as error:
        members = {k: to_json(v) for k, v in error.__dict__.items() if not k.startswith("_")}
        return {"user_exception": {"id": error._NP_RepositoryId, "members": members}}
    return {"result": result}


def main():
    argv = sys.argv[1:]
    options = next(iter(CONFIGURATIONS.values()))
    if argv[:1] == ["--config"] and len(argv) > 1 and argv[1] in CONFIGURATIONS:
        options, argv = CONFIGURATIONS[argv[1]], argv[2:]
    if len(argv) not in (3, 4):
        sys.exit("usage: omni_conformance_client.py [--config NAME] IOR OPERATION ARGS_JSON "
                 f"[COUNT]  (NAME: {', '.join(repr(n) for n in CONFIGURATIONS)})")
    reference, operation, args = argv[0], argv[1], json.loads(argv[2])
    count = int(argv[3]) if len(argv) == 4 else 1
    orb = CORBA.ORB_init([sys.argv[0], *options], CORBA.ORB_ID)
    omni_idl.import_idl(IDL)
    stub_class, _skeleton = omni_idl.interface_classes("EchoAll::Echo")
    try:
        target = orb.string_to_object(reference)._narrow(stub_class)
        # COUNT calls at once, from as many threads (omniORB opens a connection per call
        # outstanding: -ORBoneCallPerConnection is left at its default).
        reports = [None] * count
        threads = [threading.Thread(target=lambda i=i: reports.__setitem__(
            i, report(orb, target, operation, args))) for i in range(count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for line in reports:
            print(json.dumps(line), flush=True)
    except CORBA.SystemException as error:      # narrowing a corbaloc reference calls _is_a
        print(json.dumps({"system_exception": {"exception_id": error._NP_RepositoryId,
                                               "minor": error.minor,
                                               "completed": int(error.completed._v)}}),
              flush=True)
    orb.destroy()


if __name__ == "__main__":
    main()
