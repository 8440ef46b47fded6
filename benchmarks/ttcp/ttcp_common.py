"""What every TTCP client sends (ttcp.idl): element types, buffer contents and call counts.

The clients (pycdr_client.py, omni_client.py, raw_socket.py) all send the same buffers: a
sequence of ``size_bytes // element size`` elements, ``calls`` times, so that each point moves
``--mb`` megabytes of payload (the seed papers' 64 MB per point).
"""

from __future__ import annotations

import array
import os
import sys
import time

TTCP_DIR = os.path.dirname(os.path.abspath(__file__))
IDL_PATH = os.path.join(TTCP_DIR, "ttcp.idl")
BENCH_DIR = os.path.dirname(TTCP_DIR)
if BENCH_DIR not in sys.path:
    sys.path.insert(0, BENCH_DIR)      # for benchprocs, when run as a script

from benchprocs import OwnCPU, ServerCPU  # noqa: E402

INTERFACE = "TTCP::Throughput"
# CDR octets per element (BinStruct: 32 with its padding).
ELEMENT_SIZE = {"short": 2, "long": 4, "double": 8, "char": 1, "octet": 1, "BinStruct": 32}
TYPES = tuple(ELEMENT_SIZE)
OPERATION_STEM = {"short": "sendShortSeq", "long": "sendLongSeq", "double": "sendDoubleSeq",
                  "char": "sendCharSeq", "octet": "sendOctetSeq", "BinStruct": "sendStructSeq"}
# Types the array mapping applies to, and their array.array codes (CDR long is 32 bits).
ARRAY_CODE = {"short": "h", "long": "i", "double": "d"}
MODES = ("oneway", "twoway")
RECEIPT_TIMEOUT = 600.0    # seconds a client waits for the server to have it all


def operation_name(type_name: str, mode: str) -> str:
    return OPERATION_STEM[type_name] + ("2way" if mode == "twoway" else "")


def element_count(type_name: str, size_bytes: int) -> int:
    return max(1, size_bytes // ELEMENT_SIZE[type_name])


def calls_for(type_name: str, size_bytes: int, megabytes: float) -> int:
    """Calls that move ``megabytes`` MiB of payload with buffers of ``size_bytes``."""
    per_call = element_count(type_name, size_bytes) * ELEMENT_SIZE[type_name]
    return max(1, round(megabytes * (1 << 20) / per_call))


def make_sequence(type_name: str, count: int, bin_struct=None, arrays: bool = False):
    """The buffer a client sends: ``count`` elements, deterministic contents. ``bin_struct``
    is the ORB's BinStruct class (positional constructor in member order); ``arrays`` gives
    numeric sequences as array.array."""
    if type_name == "octet":
        return bytes(i & 0xFF for i in range(count))
    if type_name == "char":
        return "".join(chr(0x41 + i % 26) for i in range(count))
    if type_name == "BinStruct":
        return [bin_struct(i % 30000, chr(0x61 + i % 26), i, i & 0xFF, i * 0.5, bytes(8))
                for i in range(count)]
    if type_name == "double":
        values = [i * 0.25 for i in range(count)]
    else:
        values = [i % 30000 for i in range(count)]
    return array.array(ARRAY_CODE[type_name], values) if arrays else values


def parse_points(text: str) -> list[dict]:
    """Points as the orchestrator passes them: "type:size_bytes:mode:calls,..."."""
    points = []
    for item in text.split(","):
        type_name, size, mode, calls = item.split(":")
        if type_name not in ELEMENT_SIZE or mode not in MODES:
            raise ValueError(f"bad point {item!r}")
        points.append({"type": type_name, "size_bytes": int(size), "mode": mode,
                       "calls": int(calls)})
    return points


def format_points(points) -> str:
    return ",".join(f"{p['type']}:{p['size_bytes']}:{p['mode']}:{p['calls']}" for p in points)


def point_result(point: dict, seconds: list, received: int, meters=None) -> dict:
    """A point's result; ``meters``: the (ServerCPU, OwnCPU) started before its timed
    repetitions, for the CPU microseconds per message of each side."""
    count = element_count(point["type"], point["size_bytes"])
    result = {**point, "elements": count, "payload_bytes": count * ELEMENT_SIZE[point["type"]],
              "seconds": seconds, "received": received,
              "expected": count * point["calls"]}
    if meters is not None:
        messages = point["calls"] * len(seconds)
        result["server_cpu_us"] = meters[0].per_call(messages)
        result["client_cpu_us"] = meters[1].per_call(messages)
    return result


def cpu_meters(server_pid: int | None):
    """(ServerCPU, OwnCPU) from now on (see point_result)."""
    return ServerCPU(server_pid), OwnCPU()


def wait_until_received(received, expected: int) -> int:
    """Poll ``received()`` (the twoway call that ends a measurement) until the server has
    ``expected`` elements; returns the count. Over one connection the first poll normally
    suffices: the server handles the oneways before it."""
    deadline = time.monotonic() + RECEIPT_TIMEOUT
    while True:
        got = received()
        if got >= expected or time.monotonic() > deadline:
            return got
        time.sleep(0.001)
