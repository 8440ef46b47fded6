"""omniORBpy server of ReplayFactory::Maker (tests/idl/replay/factory.idl), run as a
subprocess by tests/peers/omni.py (start_omni_factory_server).

    python omni_factory_server.py --idl FILE --prefix PREFIX -- ORB options...

Serves the Maker under the object key "Maker" (omniINSPOA: the key is the object id,
so corbaloc works).  make(name) returns a Counter activated under the key PREFIX + name
(the same one when asked again): servers started with different prefixes hand out
references with different keys for the same calls, as a restarted or replaced server
does.  A Counter's name() is its name, twice(v) is 2 v.

Prints "IOR:...", "KEY <hex object key>", "READY" on stdout, then serves until stdin closes.
"""

import argparse
import sys
import threading

from omniORB import CORBA

import omni_idl
from omni_server import serve


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--idl", required=True)
    parser.add_argument("--prefix", required=True, help="the Counters' keys start with it")
    parser.add_argument("orb_args", nargs="*", help="ORB options, after --")
    options = parser.parse_args()

    orb = CORBA.ORB_init([sys.argv[0]] + options.orb_args, CORBA.ORB_ID)
    omni_idl.import_idl(options.idl)
    _, counter_skeleton = omni_idl.interface_classes("ReplayFactory::Counter")
    _, maker_skeleton = omni_idl.interface_classes("ReplayFactory::Maker")
    ins_poa = orb.resolve_initial_references("omniINSPOA")
    made = {}
    lock = threading.Lock()

    class Counter(counter_skeleton):
        def __init__(self, name):
            self._name = name

        def name(self):
            return self._name

        def twice(self, value):
            return 2 * value

    class Maker(maker_skeleton):
        def make(self, name):
            object_id = (options.prefix + name).encode("utf-8")
            with lock:
                if object_id not in made:
                    ins_poa.activate_object_with_id(object_id, Counter(name))
                    made[object_id] = ins_poa.id_to_reference(object_id)
                return made[object_id]

    ins_poa.activate_object_with_id(b"Maker", Maker())
    ins_poa._get_the_POAManager().activate()
    serve(orb, ins_poa, b"Maker")


if __name__ == "__main__":
    main()
