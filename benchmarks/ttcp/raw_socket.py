"""The ceiling: the same payload bytes through a plain Python TCP stream, no marshaling.

    python raw_socket.py serve --port P [--cpu N]
    python raw_socket.py send --port P --points short:1024:oneway:65536,... [--repeat N] [--cpu N]

Per repetition the sender opens a connection, sends a 17-octet header (total bytes, block
size, twoway flag), then the blocks; the receiver reads into a preallocated buffer and
answers one octet per block when twoway, and 8 octets (the byte count it got) at the end, so
the time covers the receipt as the ORB clients' received() does.
"""

import argparse
import json
import socket
import struct
import time

import ttcp_common as common
from benchprocs import LOOPBACK, pin_to_cpu, print_banner, stop_when_stdin_closes

HEADER = struct.Struct("!QQB")


def recv_exactly(sock, view) -> int:
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:])
        if n == 0:
            break
        got += n
    return got


def receive_one(conn) -> None:
    header = bytearray(HEADER.size)
    if recv_exactly(conn, memoryview(header)) < HEADER.size:
        return
    total, block, twoway = HEADER.unpack(header)
    buffer = memoryview(bytearray(max(block, 1)))
    got = 0
    if twoway:
        while got < total:
            n = recv_exactly(conn, buffer[:min(block, total - got)])
            if n == 0:
                break
            got += n
            conn.sendall(b"\x01")
    else:
        while got < total:
            n = conn.recv_into(buffer)
            if n == 0:
                break
            got += n
    conn.sendall(struct.pack("!Q", got))


def serve(port: int) -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((LOOPBACK, port))
    listener.listen(4)
    print_banner(f"IOR:raw-socket-{port}", b"raw")
    stop_when_stdin_closes(lambda: listener.shutdown(socket.SHUT_RDWR))
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            receive_one(conn)


def send_point(port: int, point: dict, repeat: int) -> dict:
    count = common.element_count(point["type"], point["size_bytes"])
    block_size = count * common.ELEMENT_SIZE[point["type"]]
    block = bytes(block_size)
    calls = point["calls"]
    twoway = point["mode"] == "twoway"
    seconds, got = [], 0
    for attempt in range(repeat + 1):      # the first one warms up and is not kept
        started = time.perf_counter()
        with socket.create_connection((LOOPBACK, port)) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.sendall(HEADER.pack(block_size * calls, block_size, twoway))
            ack = bytearray(1)
            for _ in range(calls):
                sock.sendall(block)
                if twoway:
                    sock.recv_into(ack)
            answer = bytearray(8)
            recv_exactly(sock, memoryview(answer))
            got = struct.unpack("!Q", answer)[0] // common.ELEMENT_SIZE[point["type"]]
        if attempt:
            seconds.append(time.perf_counter() - started)
    return common.point_result(point, seconds, got)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=("serve", "send"))
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--points", type=common.parse_points)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ior", help="ignored (the orchestrator passes one to every client)")
    parser.add_argument("--cpu", type=int, default=None)
    args = parser.parse_args()
    pinned = pin_to_cpu(args.cpu)
    if args.role == "serve":
        serve(args.port)
        return
    results = [send_point(args.port, point, args.repeat) for point in args.points or []]
    print(json.dumps({"implementation": "socket", "pinned": pinned, "results": results}))


if __name__ == "__main__":
    main()
