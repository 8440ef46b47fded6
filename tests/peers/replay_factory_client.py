"""An omniORBpy client of ReplayFactory::Maker (tests/idl/replay/factory.idl), run by
tests/test_replay_peers.py while its traffic is recorded: calls on objects whose
references a recorded reply returned.

    python replay_factory_client.py IDL IOR

Makes the counters "a" and "b" and calls each (name, twice), then "a" again; prints
"done" at the end.
"""

import sys

from omniORB import CORBA

import omni_idl


def main():
    idl_path, ior = sys.argv[1], sys.argv[2]
    orb = CORBA.ORB_init([sys.argv[0]], CORBA.ORB_ID)
    omni_idl.import_idl(idl_path)
    maker_class, _ = omni_idl.interface_classes("ReplayFactory::Maker")
    maker = orb.string_to_object(ior)._narrow(maker_class)
    a = maker.make("a")
    assert a.name() == "a" and a.twice(21) == 42
    b = maker.make("b")
    assert b.name() == "b" and b.twice(-4) == -8
    assert a.twice(5) == 10
    orb.destroy()
    print("done")


if __name__ == "__main__":
    main()
