"""Record real omniORBpy GIOP traffic on loopback with tshark, for bench_pcap.py.

    .venv/bin/python benchmarks/record_load.py OUT.pcapng --calls 70000
    .venv/bin/python benchmarks/record_load.py OUT.pcapng --megabytes 1100

An omniORBpy echo server (tests/peers/echo.idl) on 127.0.0.1 and omniORBpy
client processes calling it over several connections: mostly small calls
(echo_long, echo_double, echo_string, echo_octets of a few hundred bytes), one
call in 50 (``--big``) an echo_octets of 20 KB, which omniORB sends as GIOP 1.2 fragments.
tshark captures the server's port on the loopback interface (capture rights:
root or CAP_NET_RAW); the file is a pcapng as tshark writes it.  ``--megabytes``
calls on until the capture has grown to that size.  Not for CI: captures this
size are made by hand, under /tmp.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

# An omniORBpy client of the echo server: argv[1] the tests directory, argv[2] the IDL,
# argv[3] the server's IOR; ``one_call(rng, i, big_calls)`` makes one call of the mix
# and gives its operation's name.  The start of every client script here
# (bench_monitor_live.py's too).
CLIENT_SETUP = r'''
import os, random, sys
sys.path.insert(0, sys.argv[1])
from omniORB import CORBA
from peers import omni_idl
orb = CORBA.ORB_init([sys.argv[0]], CORBA.ORB_ID)
omni_idl.import_idl(sys.argv[2])
Echo, _ = omni_idl.interface_classes("PycdrTest::Echo")
target = orb.string_to_object(sys.argv[3])._narrow(Echo)
small = bytes(range(256)) * 2
big = bytes(range(256)) * 80


def one_call(rng, i, big_calls):
    k = rng.randrange(50)
    if k < big_calls:
        target.echo_octets(big)
        return "echo_octets"
    if k < 15:
        target.echo_octets(small[:rng.randrange(64, 512)])
        return "echo_octets"
    if k < 30:
        target.echo_string("call %d of a recorded load" % i)
        return "echo_string"
    if k < 40:
        target.echo_long(i)
        return "echo_long"
    target.echo_double(i / 7)
    return "echo_double"
'''

CLIENT = CLIENT_SETUP + r'''
rng = random.Random(int(sys.argv[5]))
stop_file = sys.argv[6]
big_calls = int(sys.argv[7])
calls = int(sys.argv[4])
i = 0
while calls <= 0 or i < calls:
    if calls <= 0 and i % 1000 == 0 and not os.path.exists(stop_file):
        break
    one_call(rng, i, big_calls)
    i += 1
orb.destroy()
'''


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("output")
    ap.add_argument("--calls", type=int, default=70000,
                    help="calls in all (with --megabytes: none)")
    ap.add_argument("--megabytes", type=float, help="call until the capture is this large")
    ap.add_argument("--clients", type=int, default=4, help="client processes (connections)")
    ap.add_argument("--big", type=int, default=1,
                    help="calls in 50 that send 20 KB (fragments); the rest are small")
    ap.add_argument("--interface", default="lo")
    args = ap.parse_args(argv)

    from peers.omni import ECHO_IDL, start_omni_echo_server
    output = os.path.abspath(args.output)
    if os.path.exists(output):
        os.unlink(output)
    stop_file = output + ".running"
    with start_omni_echo_server(giop=(1, 2)) as server:
        tshark = subprocess.Popen(["tshark", "-q", "-i", args.interface, "-f",
                                   f"tcp port {server.port}", "-w", output],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 30
            while not os.path.exists(output) and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(1)            # tshark's capture starts a moment after the file
            open(stop_file, "w").close()
            per_client = 0 if args.megabytes else -(-args.calls // args.clients)
            clients = [subprocess.Popen([sys.executable, "-c", CLIENT, os.path.join(ROOT, "tests"),
                                         ECHO_IDL, server.ior, str(per_client), str(seed),
                                         stop_file, str(args.big)])
                       for seed in range(args.clients)]
            while any(c.poll() is None for c in clients):
                if (args.megabytes and os.path.exists(stop_file)
                        and os.path.getsize(output) >= args.megabytes * 1e6):
                    os.unlink(stop_file)
                time.sleep(0.5)
            if any(c.returncode for c in clients):
                sys.exit(f"a client failed: {[c.returncode for c in clients]}")
            time.sleep(2)            # the last packets reach the file
        finally:
            if os.path.exists(stop_file):
                os.unlink(stop_file)
            tshark.terminate()
            tshark.wait(timeout=30)
    print(f"{output}: {os.path.getsize(output) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
