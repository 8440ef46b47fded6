"""An omniORBpy client of ReplayEcho::Echo (tests/idl/replay/echo_items.idl), run by
tests/test_replay_peers.py while its traffic is recorded: the calls pycdr replay
sends again.

    python replay_client.py IDL IOR ROUNDS

Each round: echo_long, echo_double, echo_string, echo_octets (a 20 KB one in the
last round: omniORB sends it in GIOP 1.2 fragments), echo_items (five items) and
the oneway note.  Prints "done" at the end.
"""

import sys

from omniORB import CORBA

import omni_idl


def main():
    idl_path, ior, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    orb = CORBA.ORB_init([sys.argv[0]], CORBA.ORB_ID)
    omni_idl.import_idl(idl_path)
    interface_class, _ = omni_idl.interface_classes("ReplayEcho::Echo")
    module = sys.modules["ReplayEcho"]
    echo = orb.string_to_object(ior)._narrow(interface_class)
    for i in range(rounds):
        assert echo.echo_long(i * 1000 - 7) == i * 1000 - 7
        echo.echo_double(i / 7)
        echo.echo_string("round %d" % i)
        size = 20000 if i == rounds - 1 else 300
        echo.echo_octets(bytes(range(256)) * (size // 256))
        items = [module.Item("item%d" % k, k * i, k / 3) for k in range(5)]
        echo.echo_items(items)
        echo.note("round %d done" % i)
    orb.destroy()
    print("done")


if __name__ == "__main__":
    main()
