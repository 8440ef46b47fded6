"""omniORBpy's TTCP server (ttcp.idl), the peer the reference ORB is measured against.

    python omni_server.py --port P [--cpu N]

Counts the sequence elements it receives, like pycdr_server.py. Prints "IOR:...",
"KEY <hex>", "READY"; serves until stdin closes.
"""

import argparse

import ttcp_common as common
from benchprocs import pin_to_cpu, serve_omni


def servant_class(skeleton_class):
    class Throughput(skeleton_class):
        def __init__(self):
            self.count = 0

        def received(self):
            return self.count

        def reset(self):
            self.count = 0

    def counting(self, seq):
        self.count += len(seq)
    for stem in common.OPERATION_STEM.values():
        setattr(Throughput, stem, counting)
        setattr(Throughput, stem + "2way", counting)
    return Throughput


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cpu", type=int, default=None)
    args = parser.parse_args()
    pin_to_cpu(args.cpu)          # before ORB_init: omniORB's threads inherit it
    serve_omni(common.IDL_PATH, common.INTERFACE, lambda skeleton: servant_class(skeleton)(),
               b"TTCP", args.port)


if __name__ == "__main__":
    main()
