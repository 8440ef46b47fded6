"""The reference ORB's TTCP server (ttcp.idl), in a process of its own.

    python pycdr_server.py --port P [--cpu N] [--numeric-arrays] [--threads]

Counts the sequence elements it receives (``received()``; ``reset()`` zeroes the count).
With --numeric-arrays the servant takes numeric sequences as array.array (the opt-in array
mapping), otherwise as lists.  --threads: a thread per connection (pycdr.orb.threads)
instead of the event loop.  Prints "IOR:...", "KEY <hex>", "READY"; serves until stdin
closes.
"""

import argparse

import ttcp_common as common  # (puts benchmarks/ on sys.path)
from benchprocs import pin_to_cpu, serve_pycdr

from pycdr import idl
from pycdr.orb import ClassServant


class Throughput:
    """The TTCP servant: every send operation adds its sequence's length to a counter."""

    def __init__(self):
        self.count = 0

    def received(self):
        return self.count

    def reset(self):
        self.count = 0


def _counting(self, seq):
    self.count += len(seq)


for _stem in common.OPERATION_STEM.values():
    setattr(Throughput, _stem, _counting)
    setattr(Throughput, _stem + "2way", _counting)


class ArrayServant(ClassServant):
    numeric_arrays = True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cpu", type=int, default=None)
    parser.add_argument("--numeric-arrays", action="store_true")
    parser.add_argument("--threads", action="store_true")
    args = parser.parse_args()
    pin_to_cpu(args.cpu)
    interface = idl.load(common.IDL_PATH).interfaces[common.INTERFACE]
    servant_class = ArrayServant if args.numeric_arrays else ClassServant
    serve_pycdr(servant_class(interface, Throughput()), b"TTCP", args.port,
                threads=args.threads)


if __name__ == "__main__":
    main()
