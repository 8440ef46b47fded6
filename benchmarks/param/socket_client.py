"""The floor of a Param_Test client: a plain socket loop that sends one operation's Request
bytes again and again and reads each Reply whole with a short struct-based reader, decoding
nothing.  No client that marshals its arguments and decodes its results can make more calls
than this from Python over the same socket; omniORBpy's client (C++ under a Python stub)
and the reference ORB's are measured against it.

    python socket_client.py --ior IOR [--seconds S] [--repeat N] [--operations a,b] [--cpu N]

The Requests are encoded once, before the timings, by pycdr (GIOP 1.2, big-endian, the
first one of the connection with the CodeSets context, as an ORB's first request has it);
the first Reply of each operation is decoded once and checked against what was sent.
"""

import argparse
import json
import socket
import struct

import param_common as common
from benchprocs import pin_to_cpu

from pycdr import idl
from pycdr.codesets import DEFAULT_TCS_C, DEFAULT_TCS_W
from pycdr.giop.messages import KeyAddr, Request, decode_message, encode_message
from pycdr.giop.service_contexts import CodeSetsContext
from pycdr.addressing.iiop import decode_profile
from pycdr.codec.ior import ior_from_string
from pycdr.orb.invocation import read_results, write_arguments

_SIZE = {False: struct.Struct(">I"), True: struct.Struct("<I")}


def read_reply(sock, buffer: bytearray, view: memoryview) -> int:
    """Read one whole message into ``buffer``; its length."""
    got = 0
    while got < 12:
        n = sock.recv_into(view[got:])
        if not n:
            raise ConnectionError("the server closed the connection")
        got += n
    total = 12 + _SIZE[bool(buffer[6] & 1)].unpack_from(buffer, 8)[0]
    while got < total:
        n = sock.recv_into(view[got:])
        if not n:
            raise ConnectionError("the server closed the connection")
        got += n
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ior", required=True)
    parser.add_argument("--operations", default=",".join(common.OPERATIONS))
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cpu", type=int, default=None)
    parser.add_argument("--server-pid", type=int, default=None,
                        help="the server's process: its CPU per call is reported")
    args = parser.parse_args()
    pinned = pin_to_cpu(args.cpu)
    module = idl.load(common.IDL_PATH)
    interface = module.interfaces[common.INTERFACE]
    classes = {n: module[f"ParamTest::{n}"]
               for n in ("Fixed_Struct", "Var_Struct", "Nested_Struct")}
    profile = decode_profile(ior_from_string(args.ior).profiles[0])
    sock = socket.create_connection((profile.host, profile.port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buffer = bytearray(1 << 20)
    view = memoryview(buffer)
    contexts = [CodeSetsContext(char_data=DEFAULT_TCS_C, wchar_data=DEFAULT_TCS_W)]
    results = []
    for name in args.operations.split(","):
        op = interface.all_operations()[name]
        value = common.make_value(name, classes)

        def request(service_contexts):
            return encode_message(
                Request(version=(1, 2), little=False, request_id=1, response_flags=3,
                        target=KeyAddr(profile.object_key), operation=name,
                        service_contexts=service_contexts),
                write_body=lambda w: write_arguments(w, op, [value, value]))
        sock.sendall(request(contexts))
        reply, _ = decode_message(bytes(view[:read_reply(sock, buffer, view)]))
        answer = read_results(reply.body_reader(), op)
        correct = common.members(answer) == common.members([value, value, value])
        contexts = []           # (the connection's code sets are set by its first request)
        data = request([])

        def call():
            sock.sendall(data)
            read_reply(sock, buffer, view)
        results.append(common.timed_row(name, call, correct, args.seconds, args.repeat,
                                        args.server_pid))
    sock.close()
    print(json.dumps({"implementation": "socket", "pinned": pinned, "results": results}))


if __name__ == "__main__":
    main()
