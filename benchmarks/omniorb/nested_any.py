"""The CPU omniORB 4.2.5 spends on an `echo_any` call whose argument is an
any holding an any ... N levels deep, for each N given: the C++ echo
servant (--servant cxx, built by build.sh) or omniORBpy's echo server
(--servant python: the build's python-asan; --servant plain: the venv's
omniORBpy from PyPI, not instrumented).

    python benchmarks/omniorb/nested_any.py [--servant cxx|python|plain]
        [--depths 1,5,10,15,16,17,18,19,20] [--hex N]

One line per depth: the request's size, the CPU seconds the server spent
on it (its process CPU clock, every thread, before the request and once it
is idle after the reply), the wall time to the reply and the reply's status
(a system exception's repository id).  --hex N prints the request for depth N in hex (GIOP 1.2,
little-endian, object key "Echo") and exits: the bytes of
docs/FINDINGS.md's case.  A measurement, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)

from pycdr.codec import tc                                  # noqa: E402
from pycdr.codec.marshal import write_value                 # noqa: E402
from pycdr.codec.values import Any                          # noqa: E402
from pycdr.conformance.target import resolve_target         # noqa: E402
from pycdr.fuzz.cost import process_cpu, runnable_threads   # noqa: E402
from pycdr.fuzz.target import SpawnedTarget                 # noqa: E402
from pycdr.codec.cdr import CDRReader                       # noqa: E402
from pycdr.errors import PycdrError                         # noqa: E402
from pycdr.giop.messages import (KeyAddr, Reply, ReplyStatus, Request,  # noqa: E402
                                 decode_message, encode_message)

from campaign import BUILD, ENDPOINT, IDL, INTERFACE, spawn_command  # noqa: E402


def nested(depth: int) -> Any:
    """An any holding an any ... ``depth`` anys in all, the innermost a long."""
    value = Any(tc.long, 7)
    for _ in range(depth - 1):
        value = Any(tc.any, value)
    return value


def request(object_key: bytes, depth: int) -> bytes:
    message = Request(version=(1, 2), little=True, request_id=1, target=KeyAddr(object_key),
                      operation="echo_any", response_flags=3)
    return encode_message(message, write_body=lambda w: write_value(w, tc.any, nested(depth)))


def answer(data: bytes) -> str:
    """The reply's type and status (and a system exception's name)."""
    try:
        message, _ = decode_message(data, lenient=True)
    except PycdrError as e:
        return f"undecodable ({e})"
    if not isinstance(message, Reply):
        return type(message).__name__
    status = ReplyStatus(message.reply_status).name
    if message.reply_status == ReplyStatus.SYSTEM_EXCEPTION:
        status += " " + CDRReader(message.body, little=message.little).read_string()
    return f"Reply {status}"


def idle_after(pid: int, step: float = 0.05) -> None:
    """Until the process, twice in a row, used little CPU over a step and
    has no thread running or waiting to run."""
    quiet, cpu = 0, process_cpu(pid)
    while quiet < 2:
        time.sleep(step)
        later = process_cpu(pid)
        quiet = quiet + 1 if later - cpu < 0.2 * step and not runnable_threads(pid) else 0
        cpu = later


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--servant", choices=("cxx", "python", "plain"), default="cxx")
    parser.add_argument("--depths", default="1,5,10,15,16,17,18,19,20")
    parser.add_argument("--hex", type=int, default=None)
    options = parser.parse_args()
    if options.hex is not None:
        print(request(b"Echo", options.hex).hex())
        return
    os.environ.setdefault("ASAN_OPTIONS", "symbolize=0:detect_leaks=0:quarantine_size_mb=64")
    if options.servant == "plain":
        server = os.path.join(REPO, "tests", "peers", "omni_server.py")
        command = f"{sys.executable} {server} --idl {IDL} --interface {INTERFACE} -- {ENDPOINT}"
    else:
        command = spawn_command(options.servant)
        if not os.path.exists(command.split()[0]):
            sys.exit(f"nested_any.py: {command.split()[0]} is missing: run "
                     f"benchmarks/omniorb/build.sh (build: {BUILD})")
    spawned = SpawnedTarget(command)
    target = resolve_target(spawned.start())
    pid = spawned.process.pid
    print(f"{options.servant} servant, pid {pid}")
    print("depth  bytes  cpu_s    wall_s   reply")
    try:
        for depth in (int(d) for d in options.depths.split(",")):
            data = request(target.object_key, depth)
            idle_after(pid)
            cpu, began = process_cpu(pid), time.monotonic()
            with socket.create_connection((target.host, target.port)) as sock:
                sock.settimeout(600)
                sock.sendall(data)
                reply = sock.recv(1 << 16)
                wall = time.monotonic() - began
            idle_after(pid)
            spent = process_cpu(pid) - cpu
            print(f"{depth:5}  {len(data):5}  {spent:7.3f}  {wall:7.3f}  {answer(reply)}", flush=True)
    finally:
        spawned.stop()


if __name__ == "__main__":
    main()
