"""omniORBpy echo server, run as a subprocess by tests/peers/omni.py.

    python omni_server.py --idl FILE --interface Module::Interface --object-id ID -- ORB options...

Serves one object of the interface under a fixed object key (the omniINSPOA object id, so the
key is the id itself and corbaloc works). Each operation echoes its in arguments: with one
result value it returns the single argument, with several (result + out/inout values) it returns
the arguments as a tuple in order; oneway and void operations return nothing. An operation whose
in and out counts differ otherwise raises NO_IMPLEMENT.

``--differ OPERATION`` makes one operation answer otherwise (see ``differ``): the servant of
the replay test that must see exactly that operation reported.

Prints "IOR:...", "KEY <hex object key>", "READY" on stdout, then serves until stdin closes.
"""

import argparse
import os
import sys
import threading

from omniORB import CORBA

import omni_idl


def echo_method(in_count, out_count):
    def echo(self, *args):
        if out_count == 0:
            return None
        if out_count != in_count:
            raise CORBA.NO_IMPLEMENT(0, CORBA.COMPLETED_NO)
        return args[0] if in_count == 1 else args
    return echo


def differ(value):
    """Another value of the same type: a string gets "!", a number 1 more, a sequence its
    fourth item (or its first) changed, a struct its first member."""
    if isinstance(value, str):
        return value + "!"
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, list) and value:
        changed = list(value)
        at = 3 if len(value) > 3 else 0
        changed[at] = differ(value[at])
        return changed
    if isinstance(value, bytes) and value:
        return bytes([value[0] ^ 0xFF]) + value[1:]
    if hasattr(value, "__dict__") and value.__dict__:
        copy = type(value).__new__(type(value))
        copy.__dict__.update(value.__dict__)
        first = next(iter(value.__dict__))
        setattr(copy, first, differ(getattr(value, first)))
        return copy
    return value


def make_echo_servant_class(skeleton_class, differing=None):
    """A servant class for `skeleton_class` whose every operation echoes (see module
    docstring), but `differing`, which answers what ``differ`` makes of its argument."""
    methods = {}
    for operation, (in_types, out_types, _exceptions) in skeleton_class._omni_op_d.items():
        out_count = 0 if out_types is None else len(out_types)  # None marks a oneway operation
        method = echo_method(len(in_types), out_count)
        if operation == differing:
            method = (lambda echo: lambda self, *args: differ(echo(self, *args)))(method)
        methods[operation] = method
    return type("Echo_" + skeleton_class.__name__, (skeleton_class,), methods)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--idl", required=True)
    parser.add_argument("--interface", required=True, help="scoped name, e.g. PycdrTest::Echo")
    parser.add_argument("--object-id", default="Echo")
    parser.add_argument("--differ", help="the operation that answers otherwise")
    parser.add_argument("orb_args", nargs="*", help="ORB options, after --")
    options = parser.parse_args()

    orb = CORBA.ORB_init([sys.argv[0]] + options.orb_args, CORBA.ORB_ID)
    omni_idl.import_idl(options.idl)
    _stub_class, skeleton_class = omni_idl.interface_classes(options.interface)

    ins_poa = orb.resolve_initial_references("omniINSPOA")
    object_id = options.object_id.encode("ascii")
    servant = make_echo_servant_class(skeleton_class, options.differ)()
    ins_poa.activate_object_with_id(object_id, servant)
    ins_poa._get_the_POAManager().activate()
    serve(orb, ins_poa, object_id)


def serve(orb, ins_poa, object_id):
    """Print the banner of the object activated as ``object_id`` (its IOR, "KEY <hex>",
    "READY"), then serve until stdin closes."""
    print(orb.object_to_string(ins_poa.id_to_reference(object_id)))
    print("KEY " + object_id.hex())
    print("READY", flush=True)

    def shut_down_when_stdin_closes():
        sys.stdin.buffer.read()
        orb.shutdown(False)
    threading.Thread(target=shut_down_when_stdin_closes, daemon=True).start()
    orb.run()
    orb.destroy()
    # Straight out, past the interpreter's finalization: there the stdin thread above, still
    # in read(), is unwound by pthread_exit through omniORB's threads' handlers and aborts
    # (a core dump for each server a test stopped by closing stdin).
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
