"""Benchmark (not a test): tshark's full dissection (-V) of a >= 50 MB
generated GIOP capture with the giopx Lua plugin (arguments decoded from type
tables) versus Wireshark's built-in giop dissector alone; prints the capture
size, its number of GIOP messages, both times and their ratio.

    .venv/bin/python benchmarks/bench_dissector.py [--mb 50] [--runs 3] [--keep FILE]

The capture repeats the conversation of captures/make_captures.py's
``messages_session`` (every message type, GIOP 1.0-1.3, both byte orders, with
service contexts, arguments, results, exceptions and IORs), each copy on a
client port of its own.  The conversation is encoded once by pycdr and scapy;
the copies are written with struct (scapy would take minutes for 50 MB).

Each tshark run is timed by wall clock and by its CPU time (user + system,
from the child's resource usage); the best of ``--runs`` runs counts, which
keeps other load on the machine out of the numbers as far as possible.

Peer: Wireshark's built-in giop dissector on the same capture, which decodes headers
but not arguments; the ratio plugin/built-in is the cost of decoding every argument,
result and exception from the type tables (``pycdr dissector`` writes them).  No floor:
both are tshark.  Needs tshark on PATH.
"""

from __future__ import annotations

import argparse
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "captures"))
sys.path.insert(0, ROOT)

PORT = 2809
# The run benchmarks/README.md's table comes from (50 MB, best of 2): about 2 minutes
# on 2 cores.
FULL_RUN = "python benchmarks/bench_dissector.py --mb 50 --runs 2 --results"


def conversation_template() -> list:
    """The payloads of one copy of the conversations: [(conversation index, from_client,
    bytes)]."""
    from scapy.layers.inet import IP, TCP
    from make_captures import VERSIONS, Builder, load_modules, messages_session
    b = Builder(load_modules())
    packets: list = []
    conversations = []
    for v in VERSIONS:
        for little in (False, True):
            start = len(packets)
            messages_session(packets, b, v, little, PORT)
            conversations.append(packets[start:])
    out = []
    for index, pkts in enumerate(conversations):
        client_port = pkts[0][TCP].sport
        for p in pkts:
            payload = bytes(p[TCP].payload)
            if payload:
                out.append((index, p[TCP].sport == client_port, payload))
        del pkts
    del IP
    return out


def giop_message_count(payloads) -> int:
    """GIOP messages in a stream of payloads (framed by the header's size)."""
    count = 0
    streams: dict = {}
    for index, from_client, data in payloads:
        buf = streams.get((index, from_client), b"") + data
        while len(buf) >= 12:
            size = struct.unpack("<I" if buf[6] & 1 else ">I", buf[8:12])[0]
            if len(buf) < 12 + size:
                break
            count += 1
            buf = buf[12 + size:]
        streams[(index, from_client)] = buf
    return count


def _ip_checksum(header: bytes) -> int:
    total = sum(struct.unpack("!10H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def write_capture(path: str, megabytes: int) -> tuple[int, int]:
    """Writes copies of the template conversations until the file reaches the
    size; returns (bytes written, GIOP messages)."""
    template = conversation_template()
    per_copy = giop_message_count(template)
    conversations = {index for index, _, _ in template}
    client_ip, server_ip = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    mac = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x08\x00"
    t = 1.7e9
    written = messages = copies = 0
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))   # Ethernet
        written += 24
        port = 10000            # above 2809: tshark tries the lower port's dissector first
        while written < megabytes * 1_000_000:
            seq: dict = {}
            ports = {}
            for index in conversations:
                ports[index] = port
                port = port + 1 if port < 65000 else 10000
            for index, from_client, data in template:
                cport = ports[index]
                key = (index, from_client)
                s = seq.setdefault(key, 1000 if from_client else 5000)
                ack = seq.get((index, not from_client), 5000 if from_client else 1000)
                src, dst = (client_ip, server_ip) if from_client else (server_ip, client_ip)
                sport, dport = (cport, PORT) if from_client else (PORT, cport)
                tcp = struct.pack("!HHIIBBHHH", sport, dport, s, ack, 5 << 4, 0x18, 65535, 0, 0)
                ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + len(data), 1, 0, 64, 6, 0, src, dst)
                ip = ip[:10] + struct.pack("!H", _ip_checksum(ip)) + ip[12:]
                frame = mac + ip + tcp + data
                t += 0.0001
                f.write(struct.pack("<IIII", int(t), int(t % 1 * 1e6), len(frame), len(frame)))
                f.write(frame)
                written += 16 + len(frame)
                seq[key] = (s + len(data)) & 0xFFFFFFFF
            messages += per_copy
            copies += 1
    return written, messages


def timed(argv) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def commands(path: str) -> dict:
    plugin = os.path.join(ROOT, "dissector", "pycdr_giop.lua")
    types = os.path.join(ROOT, "dissector", "types")
    # Full dissection (-V) so every field is built, as in the 18 s figure.
    return {
        "giopx plugin (arguments decoded)": [
            "tshark", "-n", "-V", "-r", path, "-X", f"lua_script:{plugin}",
            "-o", f"giopx.types_dir:{types}", "--disable-protocol", "giop"],
        "built-in giop alone": ["tshark", "-n", "-V", "-r", path, "-d", f"tcp.port=={PORT},giop"],
    }


def main(argv=None) -> None:
    import results as results_format
    command_line = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=50, help="capture size in MB (10^6 bytes)")
    ap.add_argument("--runs", type=int, default=3, help="runs of each tshark; the best counts")
    ap.add_argument("--keep", help="write the capture here and keep it")
    results_format.add_argument(ap)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or os.path.join(tmp, "bench.pcap")
        size, messages = write_capture(path, args.mb)
        print(f"capture: {size / 1e6:.1f} MB, {messages} GIOP messages")
        best: dict = {}
        for _ in range(args.runs):                 # alternate, so load hits both alike
            for name, argv in commands(path).items():
                wall, cpu = timed(argv)
                w, c = best.get(name, (wall, cpu))
                best[name] = (min(w, wall), min(c, cpu))
        for name, (wall, cpu) in best.items():
            print(f"{name:34s} {wall:7.2f} s wall  {cpu:7.2f} s CPU  (best of {args.runs})")
        (ow, oc), (bw, bc) = best.values()
        print(f"ratio plugin/built-in: {ow / bw:.2f} (wall)  {oc / bc:.2f} (CPU)")
    ratio = results_format.ratio
    results_format.write(args.results, "dissector", results_format.record(
        "dissector", script=__file__, argv=command_line,
        quick=args.mb < 50, path={"tshark": tshark_version()},
        settings={"capture_mb": round(size / 1e6, 1), "giop_messages": messages,
                  "runs": args.runs},
        tables=[results_format.table(
            f"tshark -V of the capture, best of {args.runs}",
            ["dissection", "wall s", "CPU s", f"wall / built-in {results_format.RATIO}",
             f"CPU / built-in {results_format.RATIO}"],
            [[name, round(wall, 2), round(cpu, 2), ratio(wall, bw), ratio(cpu, bc)]
             for name, (wall, cpu) in best.items()])]))


def tshark_version() -> str:
    done = subprocess.run(["tshark", "--version"], capture_output=True, text=True)
    return done.stdout.splitlines()[0] if done.returncode == 0 and done.stdout else "?"


if __name__ == "__main__":
    main()
