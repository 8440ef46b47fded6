"""`pycdr pcap -j N`: connections decoded in N processes give the output of one."""

from __future__ import annotations

import glob
import os
import struct

import pytest
from click.testing import CliRunner

from pycdr.cli.main import main

CAPTURES = os.path.join(os.path.dirname(__file__), os.pardir, "captures")
IDL = os.path.join(CAPTURES, "capture_test.idl")
FILES = sorted(glob.glob(os.path.join(CAPTURES, "**", "*.pcap"), recursive=True))


def run(*args):
    result = CliRunner().invoke(main, ["pcap", "--no-progress", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("mode", [[], ["--json"], ["--idl", IDL], ["--json", "--idl", IDL]],
                         ids=["text", "json", "idl", "json-idl"])
def test_sharded_output_is_the_single_process_output(mode):
    for path in FILES:
        one = run(*mode, path)
        # (1: a capture with messages that cannot be decoded, as the single process says)
        assert one[0] in (0, 1) and one[1], path
        for jobs in ("2", "3"):
            assert run("-j", jobs, *mode, path) == one, (path, jobs)


def joined_capture(tmp_path):
    """The corpus' pcap files one after the other in one file (many connections,
    some open at the end), cut inside its last record."""
    frames = b""
    for path in FILES:
        data = open(path, "rb").read()
        assert data[:4] == b"\xd4\xc3\xb2\xa1" and struct.unpack_from("<I", data, 20)[0] == 1
        frames += data[24:]
    whole = open(FILES[0], "rb").read()[:24] + frames
    path = tmp_path / "joined.pcap"
    path.write_bytes(whole[:-5])
    return str(path)


def test_sharded_output_of_a_cut_capture_and_its_error(tmp_path):
    path = joined_capture(tmp_path)
    for mode in ([], ["--json", "--idl", IDL]):
        one = run(*mode, path)
        assert one[0] == 1 and "error: frame" in one[2] and one[1].count("\n") > 500
        for jobs in ("2", "4"):
            assert run("-j", jobs, *mode, path) == one


def test_jobs_go_with_file_output_only(tmp_path):
    path = FILES[0]
    for extra in (["--stats"], ["--parquet", str(tmp_path / "x.parquet")]):
        code, _, err = run("-j", "2", *extra, path)
        assert code == 2 and "-j goes with" in err


def test_entries_made_at_the_end_of_the_capture_keep_their_order(tmp_path):
    """Connections left with holes at the end: their gaps and the messages held
    behind them come out as the capture ends, connection by connection."""
    from scapy.layers.inet import IP, TCP
    from test_pcapread import pcap_file

    from pycdr.capture.read import read_tcp_segments
    message = next(s.payload for s in read_tcp_segments(FILES[0]) if s.payload[:4] == b"GIOP")
    frames = []
    for i in range(7):
        ip = IP(src="10.0.0.1", dst=f"10.0.0.{2 + i % 3}")
        frames.append(bytes(ip / TCP(sport=40000 + i, dport=2809, flags="S", seq=1000)))
    for gone in (0, 1):
        for i in range(7):
            ip = IP(src="10.0.0.1", dst=f"10.0.0.{2 + i % 3}")
            # A message, then one not in the capture, then one waiting behind it.
            frames.append(bytes(ip / TCP(sport=40000 + i, dport=2809, flags="PA",
                                         seq=1001 + 2 * gone * len(message)) / message))
    path = tmp_path / "holes.pcap"
    path.write_bytes(pcap_file(101, frames))
    one = run("--json", str(path))
    assert one[0] == 0 and one[1].count('"kind": "gap"') == 7 and one[1].count("\n") == 21
    for jobs in ("2", "3"):
        assert run("-j", jobs, "--json", str(path)) == one
