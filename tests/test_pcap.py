"""pycdr.capture.giop and `pycdr pcap` on the corpus: the expected JSON files are
what pycdr decodes now, and the decodings hold what the captures were made of."""

from __future__ import annotations

import glob
import json
import os
import struct

import pytest
from click.testing import CliRunner

pytest.importorskip("scapy")

from pycdr.cli.main import main  # noqa: E402
from pycdr.capture.giop import decode_capture  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAPTURES = os.path.join(ROOT, "captures")
sys_path_added = __import__("sys").path.insert(0, CAPTURES)
__import__("sys").path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_captures import body_decoder  # noqa: E402


@pytest.mark.parametrize("pcap", sorted(glob.glob(os.path.join(CAPTURES, "*.pcap"))
                                         + glob.glob(os.path.join(CAPTURES, "real", "*.pcap"))),
                         ids=os.path.basename)
def test_expected_json_is_current(pcap):
    with open(pcap[:-5] + ".json") as f:
        assert decode_capture(pcap, decode_body=body_decoder()) == json.load(f)


@pytest.mark.parametrize("pcap", sorted(glob.glob(os.path.join(CAPTURES, "*.pcap"))
                                         + glob.glob(os.path.join(CAPTURES, "real", "*.pcap"))),
                         ids=os.path.basename)
def test_entry_json_is_json_dumps(pcap):
    from pycdr.capture.giop import ShapedEntry, entry_json
    entries = decode_capture(pcap, decode_body=body_decoder())
    assert [entry_json(e) for e in entries] == [json.dumps(e) for e in entries]
    if "real" in pcap:
        assert any(type(e) is ShapedEntry for e in entries)


def test_every_type_version_and_byte_order_is_in_the_corpus():
    entries = json.load(open(os.path.join(CAPTURES, "messages.json")))
    seen = {(e["type"], e["version"], e["little_endian"]) for e in entries if "type" in e}
    for v in ("1.0", "1.1", "1.2", "1.3"):
        for little in (False, True):
            for t in ("Request", "Reply", "CancelRequest", "LocateRequest", "LocateReply",
                      "CloseConnection", "MessageError"):
                assert (t, v, little) in seen


def test_fragments_are_reassembled_and_replies_matched():
    entries = json.load(open(os.path.join(CAPTURES, "fragments.json")))
    whole = [e for e in entries if "reassembled" in e]
    assert {e["version"] for e in whole} == {"1.1", "1.2", "1.3"}
    assert all(e["decoded"]["values"] for e in whole if e["type"] == "Request")
    assert any("response_time" in e for e in whole if e["type"] == "Reply")


def test_giop11_fragments_of_two_requests_stay_apart():
    entries = json.load(open(os.path.join(CAPTURES, "wsfault-giop11-fragments.json")))
    requests = [e for e in entries if "reassembled" in e and e["type"] == "Request"]
    assert [e["request_id"] for e in requests] == [21, 22]
    assert all(e["decoded"]["values"][0] == ["pts[0].x", "0"] for e in requests)


def test_every_malformed_case_is_reported():
    entries = json.load(open(os.path.join(CAPTURES, "malformed.json")))
    codes = {w["code"] for e in entries for w in e.get("warnings", [])}
    assert {"bad-boolean", "string-no-nul", "bad-status", "trailing-bytes", "may-not-fragment",
            "fragment-in-1.0", "reserved-flags", "unexpected-body", "bad-completion-status",
            "nonzero-padding", "fragment-misuse", "bad-byte-order", "short-body-padding",
            "bad-profile-index"} <= codes
    kinds = [e["error"]["kind"] for e in entries if "error" in e]
    assert "truncated" in kinds and "malformed" in kinds


def test_cli_json_and_listing():
    pcap = os.path.join(CAPTURES, "wsfault-ior-result.pcap")
    out = CliRunner().invoke(main, ["pcap", pcap, "--json", "--idl",
                                    os.path.join(CAPTURES, "capture_test.idl")])
    assert out.exit_code == 0
    # JSON Lines: one object a line.
    reply = [e for e in map(json.loads, out.output.splitlines()) if e.get("type") == "Reply"][0]
    assert ["return.host", "found.example"] in reply["decoded"]["values"]
    listing = CliRunner().invoke(main, ["pcap", pcap])
    assert "GIOP 1.2 Reply id=3 NO_EXCEPTION" in listing.output


def test_not_a_capture_is_a_clear_error(tmp_path):
    bad = tmp_path / "x.pcap"
    bad.write_bytes(b"not a capture at all")
    out = CliRunner().invoke(main, ["pcap", str(bad)])
    assert out.exit_code == 1 and "not a pcap" in out.output


def test_pcap_needs_no_scapy():
    """`pip install -e .` alone is enough: the command runs with scapy unimportable."""
    import subprocess
    import sys
    pcap = os.path.join(CAPTURES, "wsfault-ior-result.pcap")
    code = ("import sys; sys.modules['scapy'] = None; from pycdr.cli.main import main; "
            f"main(['pcap', '--json', {pcap!r}])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["type"] for line in proc.stdout.splitlines()][:2] == \
        ["Request", "Reply"]


def test_listing_streams_before_the_end_of_a_bad_file(tmp_path):
    """Entries decoded before a broken record are written, then the error (exit 1)."""
    pcap = os.path.join(CAPTURES, "segments.pcap")
    data = open(pcap, "rb").read()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data + data[24:40])       # a record header claiming what is not there
    out = CliRunner().invoke(main, ["pcap", str(cut)])
    assert out.exit_code == 1
    assert out.output.count("GIOP 1.") == len([e for e in decode_capture(pcap) if "type" in e])
    assert "error: frame" in out.output


def test_shape_memo_gives_the_decoder_s_entries():
    """Messages decoded by their shape (request id, size and body their own) are
    what decoding them gives: random variants of every sample message and of
    the corpus' messages -- new request ids and bodies, bytes changed anywhere
    after the header, cut short -- with the memo and without."""
    import random
    import struct

    from giop_samples import sample_messages
    from pycdr.giop.messages import split_messages
    from pycdr.capture.giop import CaptureDecoder, _ShapeMemo
    from pycdr.capture.read import read_tcp_segments
    from pycdr.capture.tcp import TcpReassembler

    bases = list(sample_messages())
    for path in sorted(glob.glob(os.path.join(CAPTURES, "real", "*.pcap"))):
        data = b"".join(s.payload for s in read_tcp_segments(path))
        bases += [data[o:o + h.total_size] for (o, h), _ in zip(split_messages(data), range(40))]
    rng = random.Random(11)
    stream = []
    for base in bases:
        little = base[6] & 1
        for _ in range(12):
            m = bytearray(base)
            kind = rng.randrange(4)
            if kind == 0 and len(m) > 16:
                m[12:16] = rng.randbytes(4)            # request_id in 1.2 (elsewhere: a field)
            elif kind == 1:
                m += rng.randbytes(rng.randrange(1, 40))
            elif kind == 2 and len(m) > 12:
                i = rng.randrange(12, len(m))
                m[i] = rng.randrange(256)
            elif kind == 3 and len(m) > 13:
                del m[rng.randrange(13, len(m)):]
            m[8:12] = struct.pack("<I" if little else ">I", len(m) - 12)
            stream += [base, bytes(m)]

    def entries(memo, bodies=True):
        out = []
        decoder = CaptureDecoder(out.append, memo=memo, bodies=bodies)
        tcp = TcpReassembler(decoder)
        a, b = (b"\x0a\0\0\x01", 40000), (b"\x0a\0\0\x02", 2809)
        seq = 1
        tcp.feed((1, 0, a[0], a[1], b[0], b[1], 0, 0, 0x02, b""))
        for frame, m in enumerate(stream, 2):
            tcp.feed((frame, frame, a[0], a[1], b[0], b[1], seq, 0, 0x18, m))
            seq += len(m)
        tcp.finish()
        return out, decoder.memo

    with_memo, memo = entries(True)
    hits = []
    original = _ShapeMemo.lookup
    try:
        _ShapeMemo.lookup = lambda self, raw: hits.append(original(self, raw)) or hits[-1]
        with_memo, memo = entries(True)
    finally:
        _ShapeMemo.lookup = original
    assert sum(h is not None for h in hits) > len(stream) // 4    # the memo was used
    # Entries from the memo are written as json.dumps writes them.
    from pycdr.capture.giop import entry_json
    assert [entry_json(e) for e in with_memo] == [json.dumps(e) for e in with_memo]
    without = entries(False)[0]
    for a, b in zip(with_memo, without):
        assert {k: v for k, v in a.items() if a.get(k) != b.get(k)} == \
            {k: v for k, v in b.items() if a.get(k) != b.get(k)}, a["frame"]
    assert with_memo == without
    # bodies=False (text, --stats, --parquet): the same entries without "body".
    bodiless = [{k: v for k, v in e.items() if k != "body"} for e in without]
    assert any("body" in e for e in without)
    for memo in (True, False):
        assert entries(memo, bodies=False)[0] == bodiless


def test_progress_bar_leaves_the_output_alone(monkeypatch):
    import pycdr.cli.pcap as cli_pcap
    monkeypatch.setattr(cli_pcap, "PROGRESS_EVERY", 1)      # an update every entry
    pcap = os.path.join(CAPTURES, "fragments.pcap")
    plain = CliRunner().invoke(main, ["pcap", "--no-progress", pcap])
    shown = CliRunner().invoke(main, ["pcap", "--progress", pcap])
    # (exit status 1: the capture holds messages that cannot be decoded, as decode's)
    assert shown.exit_code == plain.exit_code == 1
    assert shown.stdout == plain.stdout       # the bar goes to stderr only


def test_cli_block_claiming_4_gib_is_a_typed_error(tmp_path):
    """A pcapng block whose length claims 4 GiB: nothing allocated for it, the
    error names the frame and the file offset, exit 1, no traceback."""
    import struct
    shb = struct.pack("<IIIHHqI", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1, 28)
    idb = struct.pack("<IIHHII", 1, 20, 1, 0, 0, 20)
    path = tmp_path / "huge.pcapng"
    path.write_bytes(shb + idb + struct.pack("<II", 6, 0xFFFFFFF0) + bytes(64))
    out = CliRunner().invoke(main, ["pcap", "--json", str(path)])
    assert out.exit_code == 1 and out.stdout == ""
    assert "frame 1, file offset 48" in out.stderr and "4294967280" in out.stderr
    assert out.exception is None or isinstance(out.exception, SystemExit)


@pytest.mark.parametrize("pcap", sorted(glob.glob(os.path.join(CAPTURES, "real", "*.pcap"))),
                         ids=os.path.basename)
def test_listing_of_memo_entries_is_the_general_one(pcap):
    from pycdr import idl
    from pycdr.cli.pcap import _entry_text, entry_text
    from pycdr.capture.giop import IdlBodyDecoder, ShapedEntry
    echo = IdlBodyDecoder([idl.load(os.path.join(os.path.dirname(__file__), "peers", "echo.idl"),
                                    register=False)])
    for decode_body in (None, echo):       # (with --idl: the decoded values' lines too)
        entries = decode_capture(pcap, decode_body=decode_body)
        assert any(type(e) is ShapedEntry for e in entries)
        assert any("decoded" in e for e in entries) == (decode_body is not None)
        assert [entry_text(e) for e in entries] == [_entry_text(dict(e)) for e in entries]


def test_listing_names_system_exceptions_and_forward_targets():
    """Issue 27: the text listing gives a system exception's name, minor code (whole and
    as vendor and code) and completion status, and where a forward sends the client."""
    out = CliRunner().invoke(main, ["pcap", os.path.join(CAPTURES, "messages.pcap")])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert any("Reply id=9 SYSTEM_EXCEPTION OBJECT_NOT_EXIST minor 0x4f4d0002 (OMG 2: the "
               "servant manager could not incarnate the object) COMPLETED_NO" in line
               for line in lines)
    assert any("Reply id=10 LOCATION_FORWARD -> IDL:CaptureTest/Demo:1.0 at "
               "demo.example:2810" in line for line in lines)
    assert any("LocateReply id=12 OBJECT_FORWARD -> IDL:CaptureTest/Demo:1.0 at "
               "demo.example:2811" in line for line in lines)


def test_listing_decodes_the_object_operations_without_idl():
    """Issue 27: _is_a's repository id and answer (and the other operations every
    object has) are decoded without --idl, the reply by its request's operation."""
    out = CliRunner().invoke(main, ["pcap", os.path.join(CAPTURES, "messages.pcap")])
    assert out.exit_code == 0, out.output
    text = out.output
    assert "Request id=13 _is_a\n    logical_type_id = IDL:CaptureTest/Demo:1.0\n" in text
    assert "Reply id=13 NO_EXCEPTION [1.000 ms after frame 27]\n    return = true\n" in text
    assert "Request id=14 _is_a\n    logical_type_id = IDL:omg.org/CORBA/Object:1.0\n" in text
    assert "ms after frame 29]\n    return = false\n" in text
    assert "return = IDL:CaptureTest/Demo:1.0\n" in text                     # _repository_id
    assert "return = IDL:omg.org/CORBA/InterfaceDef:1.0\n    return.host = ir.example\n" in text
    entries = [json.loads(line) for line in CliRunner().invoke(
        main, ["pcap", "--json", os.path.join(CAPTURES, "messages.pcap")]).output.splitlines()]
    decoded = {(e["request_id"], e["type"]): e["decoded"] for e in entries
               if e["stream"] == 0 and "decoded" in e}
    assert decoded[(14, "Request")] == {"operation": "_is_a", "kind": "arguments", "values": [
        ["logical_type_id", "IDL:omg.org/CORBA/Object:1.0"]],
        "typed": {"logical_type_id": "IDL:omg.org/CORBA/Object:1.0"}}
    assert decoded[(18, "Reply")]["values"] == [["return", "nil"]]      # _get_component
    # Operations of an IDL are not known without it.
    assert (1, "Request") not in decoded


def test_dissector_name_tables_are_current():
    """dissector/pycdr_names.lua is what pycdr.lua_types.names_table() writes
    (captures/make_captures.py rewrites it)."""
    from pycdr.lua_types import names_table
    with open(os.path.join(os.path.dirname(CAPTURES), "dissector", "pycdr_names.lua")) as f:
        assert f.read() == names_table()
