"""pycdr.pcap and `pycdr pcap` on the corpus: the expected JSON files are
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
from pycdr.pcap import decode_capture  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAPTURES = os.path.join(ROOT, "captures")
sys_path_added = __import__("sys").path.insert(0, CAPTURES)
from make_captures import body_decoder  # noqa: E402


@pytest.mark.parametrize("pcap", sorted(glob.glob(os.path.join(CAPTURES, "*.pcap"))
                                         + glob.glob(os.path.join(CAPTURES, "real", "*.pcap"))),
                         ids=os.path.basename)
def test_expected_json_is_current(pcap):
    with open(pcap[:-5] + ".json") as f:
        assert decode_capture(pcap, decode_body=body_decoder()) == json.load(f)


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
    reply = [e for e in json.loads(out.output) if e.get("type") == "Reply"][0]
    assert ["return.host", "found.example"] in reply["decoded"]["values"]
    listing = CliRunner().invoke(main, ["pcap", pcap])
    assert "GIOP 1.2 Reply id=3 NO_EXCEPTION" in listing.output


def test_not_a_capture_is_a_clear_error(tmp_path):
    bad = tmp_path / "x.pcap"
    bad.write_bytes(b"not a capture at all")
    out = CliRunner().invoke(main, ["pcap", str(bad)])
    assert out.exit_code == 1 and "not a pcap" in out.output


def _pcapng_with_block_claiming(length: int) -> bytes:
    """A section header, an Ethernet interface, then a block whose length field
    says ``length`` and whose body is 64 bytes."""
    shb = struct.pack("<IIIHHqI", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1, 28)
    idb = struct.pack("<IIHHII", 1, 20, 1, 0, 0, 20)
    return shb + idb + struct.pack("<II", 6, length) + bytes(64)


def test_block_claiming_4_gib_is_not_allocated(tmp_path):
    # Issue 25: scapy read the claimed 4 GiB in one read(); under an address-space
    # limit that was a MemoryError traceback.  Now the capture ends there.
    from bounded import run_pycdr
    path = tmp_path / "huge.pcapng"
    path.write_bytes(_pcapng_with_block_claiming(0xFFFFFFF0))
    result = run_pycdr("pcap", path, "--json")
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 0 and json.loads(result.stdout) == []


def test_damaged_capture_names_the_frame(tmp_path, monkeypatch):
    # Whatever scapy raises inside the packet loop becomes pycdr's error with the frame.
    from scapy.utils import PcapReader
    calls = []
    original = PcapReader.read_packet

    def failing_third(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise MemoryError("as for a length field claiming 4 GiB")
        return original(self, *args, **kwargs)
    monkeypatch.setattr(PcapReader, "read_packet", failing_third)
    out = CliRunner().invoke(main, ["pcap", os.path.join(CAPTURES, "kinds.pcap")])
    assert out.exit_code == 1 and isinstance(out.exception, SystemExit), out.exception
    assert "kinds.pcap: frame 3: damaged capture (MemoryError" in out.output
