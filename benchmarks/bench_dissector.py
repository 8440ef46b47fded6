"""Benchmark (not a test): tshark on a >= 50 MB generated GIOP capture with
the giopx Lua plugin (arguments decoded from type tables) versus Wireshark's
built-in giop dissector alone; prints both times and the ratio.

    .venv/bin/python benchmarks/bench_dissector.py [--mb 50]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "captures"))
sys.path.insert(0, ROOT)


def make_capture(path: str, megabytes: int) -> int:
    from scapy.utils import PcapWriter
    from make_captures import Builder, Session, load_modules, messages_session
    b = Builder(load_modules())
    written = messages = 0
    with PcapWriter(path, sync=False) as out:
        while written < megabytes << 20:
            packets: list = []
            for little in (False, True):
                messages_session(packets, b, (1, 2), little, 2809)
            for p in packets:
                out.write(p)
                written += len(p) + 16
            messages += sum(1 for p in packets if bytes(p)[54:58] == b"GIOP")
    del Session
    return messages


def timed(argv) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=50)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.pcap")
        n = make_capture(path, args.mb)
        size = os.path.getsize(path) / 1e6
        plugin = os.path.join(ROOT, "dissector", "pycdr_giop.lua")
        types = os.path.join(ROOT, "dissector", "types")
        # Full dissection (-V) so every field is built, as the 18 s figure.
        ours = timed(["tshark", "-n", "-V", "-r", path, "-X", f"lua_script:{plugin}",
                      "-o", f"giopx.types_dir:{types}", "--disable-protocol", "giop"])
        builtin = timed(["tshark", "-n", "-V", "-r", path, "-d", "tcp.port==2809,giop"])
        print(f"capture: {size:.1f} MB, about {n} GIOP messages")
        print(f"giopx plugin (arguments decoded): {ours:.1f} s")
        print(f"built-in giop alone:              {builtin:.1f} s")
        print(f"ratio plugin/built-in: {ours / builtin:.2f}")


if __name__ == "__main__":
    main()
