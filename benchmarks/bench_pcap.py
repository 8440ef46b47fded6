"""`pycdr pcap` against the floor, on one capture, in one run.

    .venv/bin/python benchmarks/bench_pcap.py CAPTURE [--repeat 3] [--idl tests/peers/echo.idl]

Each contender runs as its own process, output to /dev/null, file in page cache
(read once first); wall time is the median of ``--repeat`` runs, peak RSS the
largest of them (the child's ru_maxrss).  Contenders:

- ``ref-frame``, ``ref-text``, ``ref-json``: the reference reader below (plain
  Python, written for this benchmark: ``struct`` over 1 MiB chunks of pcap or
  pcapng, Ethernet/IPv4/IPv6, in-order TCP reassembly per direction, GIOP
  framing, request id and operation of 1.2 Requests and Replies), framing only,
  printing a line a message, ``json.dumps`` of a dict a message (body as hex).
- ``tshark``: ``tshark -r F -q -z io,phs`` (its built-in GIOP dissector).
- ``pycdr``, ``pycdr-json``, ``pycdr-idl`` (with ``--idl``), ``pycdr-stats``:
  ``pycdr pcap`` in text, ``--json``, ``--idl FILE`` and ``--stats`` modes;
  ``pycdr-j2``, ``pycdr-idl-j2``: text and ``--idl`` with ``-j 2`` (the
  connections decoded in two processes; CPU time is both processes').

It prints the table and the ratios the targets are stated in: pycdr --json to
ref-json (target <= 2.5), pycdr text to ref-text (<= 3), --idl to pycdr text
(<= 2), tshark to pycdr --json; each of wall time and of CPU time (user +
system), the steadier of the two on a machine others share.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# The operations record_load.py calls: what --idl decodes.
ECHO_IDL = os.path.join(ROOT, "tests", "peers", "echo.idl")
# The run benchmarks/README.md's table comes from, on an ~80 MB capture of real omniORBpy
# traffic (run_all.py records it first with record_load.py), median of 2: about 3 minutes
# on 2 cores, two thirds of it tshark.
FULL_RUN = "python benchmarks/bench_pcap.py /tmp/pycdr-bench/load.pcapng --repeat 2 --results"


# ----------------------------------------------------------------------------
# The reference reader: the least a Python program does to list GIOP messages.
def reference_messages(path):
    """(src, dst, message bytes) of every GIOP message, in order per direction."""
    streams = {}                                    # (src, dst) -> [next_seq, bytearray]
    for src, dst, seq, flags, payload in _reference_segments(path):
        state = streams.get((src, dst))
        if state is None:
            state = streams[(src, dst)] = [None, bytearray()]
        if flags & 0x02:                            # SYN
            state[0] = (seq + 1) & 0xFFFFFFFF
            continue
        if not payload:
            continue
        if state[0] is not None and seq != state[0]:
            continue                                # not in order: skipped
        state[0] = (seq + len(payload)) & 0xFFFFFFFF
        buf = state[1]
        buf += payload
        pos = 0
        while len(buf) - pos >= 12:
            if buf[pos:pos + 4] != b"GIOP":
                pos = len(buf)
                break
            size = struct.unpack_from("<I" if buf[pos + 6] & 1 else ">I", buf, pos + 8)[0]
            if len(buf) - pos < 12 + size:
                break
            yield src, dst, bytes(buf[pos:pos + 12 + size])
            pos += 12 + size
        del buf[:pos]


def _reference_segments(path):
    with open(path, "rb") as f:
        data = f.read(1 << 20)
        magic = data[:4]
        if magic == b"\n\r\r\n":
            yield from _reference_pcapng(f, data)
        else:
            yield from _reference_pcap(f, data)


def _chunks(f, data, pos, need):
    rest = data[pos:]
    while len(rest) < need:
        more = f.read(1 << 20)
        if not more:
            break
        rest += more
    return rest


def _reference_pcap(f, data):
    e = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    link = struct.unpack_from(e + "I", data, 20)[0]
    pos = 24
    rec = struct.Struct(e + "IIII")
    while True:
        if len(data) - pos < 16:
            data, pos = _chunks(f, data, pos, 16), 0
            if len(data) < 16:
                return
        incl = rec.unpack_from(data, pos)[2]
        if len(data) - pos < 16 + incl:
            data, pos = _chunks(f, data, pos, 16 + incl), 0
        seg = _reference_tcp(link, data, pos + 16, pos + 16 + incl)
        if seg:
            yield seg
        pos += 16 + incl


def _reference_pcapng(f, data):
    pos = 0
    links = []
    e = "<"
    while True:
        if len(data) - pos < 12:
            data, pos = _chunks(f, data, pos, 12), 0
            if len(data) < 12:
                return
        if data[pos:pos + 4] == b"\n\r\r\n":
            e = "<" if data[pos + 8:pos + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            links = []
        btype, length = struct.unpack_from(e + "II", data, pos)
        if len(data) - pos < length:
            data, pos = _chunks(f, data, pos, length), 0
        if btype == 1:
            links.append(struct.unpack_from(e + "H", data, pos + 8)[0])
        elif btype == 6:
            iface, _, _, cap = struct.unpack_from(e + "IIII", data, pos + 8)
            seg = _reference_tcp(links[iface], data, pos + 28, pos + 28 + cap)
            if seg:
                yield seg
        pos += length


def _reference_tcp(link, d, p, end):
    if link == 1:
        ethertype = struct.unpack_from(">H", d, p + 12)[0]
        p += 14
    elif link == 113:
        ethertype = struct.unpack_from(">H", d, p + 14)[0]
        p += 16
    else:
        return None
    if ethertype == 0x0800:
        if d[p + 9] != 6:
            return None
        ihl = (d[p] & 15) * 4
        total = struct.unpack_from(">H", d, p + 2)[0]
        src, dst = d[p + 12:p + 16], d[p + 16:p + 20]
        ip_end = min(p + total, end) if total else end
        t = p + ihl
    elif ethertype == 0x86DD:
        if d[p + 6] != 6:
            return None
        src, dst = d[p + 8:p + 24], d[p + 24:p + 40]
        ip_end = end
        t = p + 40
    else:
        return None
    sport, dport, seq, _ack, off = struct.unpack_from(">HHIIH", d, t)
    return (src, sport), (dst, dport), seq, off & 0x1FF, d[t + (off >> 12) * 4:ip_end]


def _request_id_operation(msg):
    """(type, request id, operation or None) of a GIOP 1.2 message."""
    e = "<" if msg[6] & 1 else ">"
    kind = msg[7]
    if msg[5] < 2 or kind not in (0, 1) or len(msg) < 20:
        return kind, None, None
    rid = struct.unpack_from(e + "I", msg, 12)[0]
    if kind != 0:
        return kind, rid, None
    key_len = struct.unpack_from(e + "I", msg, 24)[0]
    pos = 28 + key_len
    pos += -pos & 3
    n = struct.unpack_from(e + "I", msg, pos)[0]
    return kind, rid, msg[pos + 4:pos + 3 + n].decode("latin-1")


def run_reference(path, mode):
    out = sys.stdout
    n = 0
    for src, dst, msg in reference_messages(path):
        n += 1
        if mode == "frame":
            continue
        kind, rid, op = _request_id_operation(msg)
        if mode == "text":
            out.write(f"{src[1]} -> {dst[1]}: GIOP {msg[4]}.{msg[5]} type={kind} id={rid} {op}\n")
        else:
            out.write(json.dumps({"src": src[1], "dst": dst[1], "version": f"{msg[4]}.{msg[5]}",
                                  "type": kind, "request_id": rid, "operation": op,
                                  "body": msg[12:].hex()}) + "\n")
    if mode == "frame":
        out.write(f"{n}\n")


# ----------------------------------------------------------------------------
def measure(argv, repeat):
    """(median wall seconds, peak RSS in MB, median CPU seconds: user + system)
    of running argv ``repeat`` times.  On a shared machine the CPU time is the
    steadier of the two."""
    walls, cpus, peak = [], [], 0
    for _ in range(repeat):
        t = time.perf_counter()
        with open(os.devnull, "wb") as null:
            proc = subprocess.Popen(argv, stdout=null, stderr=subprocess.PIPE)
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            err = proc.stderr.read().decode(errors="replace")
            proc.stderr.close()
        walls.append(time.perf_counter() - t)
        cpus.append(usage.ru_utime + usage.ru_stime)
        peak = max(peak, usage.ru_maxrss / 1024)
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"{argv} exited {proc.returncode}: {err[-2000:]}")
    return statistics.median(walls), peak, statistics.median(cpus)


def contenders(capture, idl):
    pycdr = [sys.executable, "-c", "from pycdr.cli.main import main; main()", "pcap",
             "--no-progress"]
    me = [sys.executable, os.path.abspath(__file__), "--reference"]
    out = [("ref-frame", me + ["frame", capture]), ("ref-text", me + ["text", capture]),
           ("ref-json", me + ["json", capture])]
    if shutil.which("tshark"):
        out.append(("tshark", ["tshark", "-r", capture, "-q", "-z", "io,phs"]))
    out += [("pycdr", pycdr + [capture]), ("pycdr-json", pycdr + ["--json", capture])]
    out.append(("pycdr-j2", pycdr + ["-j", "2", capture]))
    if idl:
        out.append(("pycdr-idl", pycdr + ["--idl", idl, capture]))
        out.append(("pycdr-idl-j2", pycdr + ["-j", "2", "--idl", idl, capture]))
    out.append(("pycdr-stats", pycdr + ["--stats", capture]))
    return out


RATIOS = [("pycdr-json", "ref-json", "pycdr --json / reference JSON", 2.5),
          ("pycdr", "ref-text", "pycdr text / reference text", 3.0),
          ("pycdr-idl", "pycdr", "pycdr --idl / pycdr text", 2.0),
          ("pycdr-stats", "ref-frame", "pycdr --stats / reference framing", None),
          ("pycdr-j2", "pycdr", "pycdr -j 2 / pycdr text", None),
          ("pycdr-idl-j2", "pycdr-idl", "pycdr -j 2 --idl / pycdr --idl", None),
          ("tshark", "pycdr-json", "tshark / pycdr --json", None)]


def run(capture, repeat=3, idl=ECHO_IDL, only=None):
    with open(capture, "rb") as f:               # into the page cache
        while f.read(1 << 24):
            pass
    messages = sum(1 for _ in reference_messages(capture))
    rows = {}
    for name, argv in contenders(capture, idl):
        if only and name not in only:
            continue
        print(f"  {name} ...", file=sys.stderr, flush=True)
        rows[name] = measure(argv, repeat)
    return {"capture": capture, "size": os.path.getsize(capture), "messages": messages,
            "repeat": repeat, "rows": rows}


def format_table(results) -> str:
    lines = [f"{results['capture']}: {results['size'] / 1e6:.1f} MB, "
             f"{results['messages']} GIOP messages (reference framing); "
             f"median of {results['repeat']}",
             f"{'':14} {'wall s':>8} {'cpu s':>8} {'peak MB':>8} {'msg/s':>10}"]
    for name, (wall, rss, cpu) in results["rows"].items():
        lines.append(f"{name:14} {wall:8.2f} {cpu:8.2f} {rss:8.0f} "
                     f"{results['messages'] / wall:10,.0f}")
    lines.append("")
    rows = results["rows"]
    lines.append(f"{'ratio':38} {'wall':>7} {'cpu':>7}")
    for a, b, text, target in RATIOS:
        if a in rows and b in rows:
            ratio = rows[a][0] / rows[b][0]
            cpu_ratio = rows[a][2] / rows[b][2]
            verdict = "" if target is None else \
                f"  (target <= {target}: wall {'met' if ratio <= target else 'NOT met'}, " \
                f"cpu {'met' if cpu_ratio <= target else 'NOT met'})"
            lines.append(f"{text:38} {ratio:6.2f}x {cpu_ratio:6.2f}x{verdict}")
    return "\n".join(lines)


def results_tables(results) -> list:
    """format_table's figures as a results file's tables."""
    import results as results_format
    rows = results["rows"]
    x = results_format.RATIO
    return [results_format.table(
                f"{results['size'] / 1e6:.1f} MB capture, {results['messages']} GIOP messages "
                f"(reference framing); median of {results['repeat']}",
                ["contender", "wall s", "CPU s", "peak MB", "msg/s (wall)"],
                [[name, round(wall, 2), round(cpu, 2), round(rss),
                  round(results["messages"] / wall)] for name, (wall, rss, cpu) in rows.items()]),
            results_format.table(
                "ratios (pycdr against the reference reader, the floor; tshark the peer)",
                ["ratio", f"wall {x}", f"CPU {x}", "target"],
                [[text, results_format.ratio(rows[a][0], rows[b][0]),
                  results_format.ratio(rows[a][2], rows[b][2]),
                  None if target is None else f"<= {target}"]
                 for a, b, text, target in RATIOS if a in rows and b in rows])]


def main(argv=None) -> None:
    import results as results_format
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("capture", nargs="?")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--idl", default=ECHO_IDL)
    ap.add_argument("--only", help="comma-separated contenders")
    ap.add_argument("--json", dest="json_file", help="also write the results here")
    ap.add_argument("--reference", choices=("frame", "text", "json"),
                    help=argparse.SUPPRESS)        # a contender's own process
    results_format.add_argument(ap)
    args = ap.parse_args(argv)
    if not args.capture:
        ap.error("a capture is needed (benchmarks/record_load.py records one)")
    if args.reference:
        run_reference(args.capture, args.reference)
        return
    results = run(args.capture, args.repeat, args.idl,
                  set(args.only.split(",")) if args.only else None)
    print(format_table(results))
    if args.json_file:
        with open(args.json_file, "w") as f:
            json.dump(results, f, indent=1)
    results_format.write(args.results, "pcap", results_format.record(
        "pcap", script=__file__, argv=sys.argv[1:] if argv is None else argv,
        quick=results["size"] < 50e6, path={"codec": results_format.codec_path()},
        settings={"capture_mb": round(results["size"] / 1e6, 1), "repeat": args.repeat},
        tables=results_tables(results)))


if __name__ == "__main__":
    main()
