"""The reference ORB's Param_Test server (param.idl), in a process of its own.

    python pycdr_server.py --port P [--cpu N] [--tls CERT KEY] [--threads]

A DynamicServant answering every operation with (s1, s1, s1): the result, the new inout
value and the out value. Prints "IOR:...", "KEY <hex>", "READY"; serves until stdin closes.
With --tls also on a TLS port (in the IOR's TAG_SSL_SEC_TRANS); with --threads a thread
per connection (pycdr.orb.threads) instead of the event loop.
"""

import argparse

import param_common as common  # (puts benchmarks/ on sys.path)
from benchprocs import pin_to_cpu, serve_pycdr

from pycdr import idl
from pycdr.orb import DynamicServant
from pycdr.orb.tls import server_context


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cpu", type=int, default=None)
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), default=None)
    parser.add_argument("--threads", action="store_true")
    args = parser.parse_args()
    pin_to_cpu(args.cpu)
    interface = idl.load(common.IDL_PATH).interfaces[common.INTERFACE]
    servant = DynamicServant(interface, lambda _operation, args: common.answer(*args))
    serve_pycdr(servant, b"Param_Test", args.port,
                tls=server_context(*args.tls) if args.tls else None, threads=args.threads)


if __name__ == "__main__":
    main()
