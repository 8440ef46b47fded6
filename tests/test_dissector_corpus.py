"""The Lua dissector against pycdr's Python decoder: tshark with the plugin
over every capture of captures/ shows, message by message, the field values
of the expected decodings (captures/*.json).  The captures are merged into
one file so tshark starts once."""

from __future__ import annotations

import json
import os

import pytest

from dissector_fields import (TSHARK, corpus_pcaps, UNORDERED, expected_fields, forward_type_id,
                              lua_field_names, tshark_messages)

pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")
scapy = pytest.importorskip("scapy")


def merged_corpus(tmp_path):
    """One pcap of every capture, and the expected entries with frames renumbered."""
    from scapy.utils import PcapReader, wrpcap
    packets, expected = [], []
    for pcap in corpus_pcaps():
        base = len(packets)
        with PcapReader(pcap) as reader:
            packets.extend(reader)
        with open(pcap[:-5] + ".json") as f:
            for entry in json.load(f):
                entry = dict(entry, frame=entry["frame"] + base, capture=os.path.basename(pcap))
                for key in ("request_frame", "reply_frame"):
                    if key in entry:
                        entry[key] += base
                if "reassembled" in entry:
                    entry["reassembled"] = dict(entry["reassembled"],
                                                first_frame=entry["reassembled"]["first_frame"] + base)
                expected.append(entry)
    path = str(tmp_path / "corpus.pcap")
    wrpcap(path, packets)
    return path, expected


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path, expected = merged_corpus(tmp_path_factory.mktemp("corpus"))
    frames, errors = tshark_messages(path)
    return expected, frames, errors


def test_corpus_is_not_empty(corpus):
    expected, frames, _ = corpus
    assert len(expected) > 300 and len(frames) > 200


def test_no_lua_error(corpus):
    assert corpus[2] == []


def test_fields_are_declared_by_the_plugin(corpus):
    declared = lua_field_names()
    used = {name for e in corpus[0] for name in expected_fields(e)}
    assert used <= declared, used - declared


def test_every_message_matches_the_python_decoding(corpus):
    expected, frames, _ = corpus
    by_frame: dict = {}
    for e in expected:
        by_frame.setdefault(e["frame"], []).append(e)
    mismatches = []
    for frame, entries in sorted(by_frame.items()):
        shown = frames.get(frame, [])
        if len(shown) != len(entries):
            mismatches.append((frame, entries[0]["capture"], "messages", len(entries), len(shown)))
            continue
        for entry, actual in zip(entries, shown):
            for name, values in expected_fields(entry).items():
                got = actual.get(name, [])
                if name in UNORDERED:
                    values, got = sorted(values), sorted(got)
                if got != values:
                    mismatches.append((frame, entry["capture"], name, values, got))
            fwd = forward_type_id(entry)
            if fwd is not None and fwd not in actual.get("giopx.ior.type_id", []):
                mismatches.append((frame, entry["capture"], "forward IOR", fwd, actual.get("giopx.ior.type_id")))
    assert not mismatches, "\n".join(map(str, mismatches[:40])) + f"\n({len(mismatches)} in all)"


def test_no_message_the_python_decoder_does_not_see(corpus):
    expected, frames, _ = corpus
    seen = {e["frame"] for e in expected}
    extra = [f for f in frames if f not in seen]
    assert not extra, extra[:20]


# ----------------------------------------------------------------------------
# captures/kinds.pcap: the kinds decoded through TypeCodes and value state.
KIND_OPERATIONS = ["pass_any", "prices", "wide", "precise", "link", "derive", "truncate"]


def _kinds_entries():
    with open(os.path.join(os.path.dirname(corpus_pcaps()[0]), "kinds.json")) as f:
        return json.load(f)


def test_kinds_capture_decodes_every_kind_in_both_byte_orders_and_versions():
    """Held to the Python decoding by the test above; here: that decoding is
    not empty or an error for any operation, version, byte order, or the 1.1
    fragmented form (so the comparison cannot pass on nothing)."""
    seen = set()
    for e in _kinds_entries():
        decoded = e.get("decoded")
        if not decoded:
            continue
        assert "error" not in decoded, (e["frame"], decoded)
        assert decoded["values"], e["frame"]
        seen.add((decoded["operation"], decoded["kind"], e["version"], e["little_endian"],
                  "reassembled" in e))
    for op in KIND_OPERATIONS:
        for version in ("1.1", "1.2"):
            for little in (False, True):
                for kind in ("arguments", "results"):
                    assert (op, kind, version, little, False) in seen, (op, kind, version, little)
        for little in (False, True):
            assert (op, "arguments", "1.1", little, True) in seen, (op, little)
    texts = {text for e in _kinds_entries() for _, text in e.get("decoded", {}).get("values", [])}
    # one of each form: fixed, long double, TypeCode, any, value indirection, null, truncation
    assert {"-1234567.89", "0x1.8000000000000000000000000000p+0", "inf",
            "union IDL:CaptureTest/Shape:1.0", "struct IDL:CaptureTest/Tree:1.0",
            "-> n", "-> d", "null", "h\u00e9llo \U0001d11e"} <= texts


def test_giop11_fragment_cuts_need_each_fragments_own_alignment():
    """The 1.1 fragments of kinds.pcap are cut where a reader aligning the
    reassembled message from one origin reads other values than the
    segment-aware one (pycdr's, and the plugin's, held equal above)."""
    import importlib.util
    from pycdr.codec.cdr import CDRReader
    from pycdr.errors import PycdrError
    from pycdr.giop.header import HEADER_SIZE
    from pycdr.giop.messages import decode_message
    from pycdr.capture.giop import flatten_value
    from pycdr.codec.marshal import read_value
    spec = importlib.util.spec_from_file_location(
        "make_captures", os.path.join(os.path.dirname(corpus_pcaps()[0]), "make_captures.py"))
    mc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mc)
    b = mc.Builder(mc.load_modules())
    args = [mc.V.LongDouble.from_float(1.5), mc.V.LongDouble.from_float(-2.0), mc.V.LongDouble(1)]
    parts = b.fragmented(b.request_parts((1, 1), False, 1, "precise", args), 45)
    assert len(parts) > 2
    data = b"".join(p[HEADER_SIZE:] for p in parts)
    whole = parts[0][:8] + len(data).to_bytes(4, "big") + data
    whole = whole[:6] + bytes([whole[6] & ~2]) + whole[7:]
    segments, pos = [(0, 0)], len(parts[0])
    for p in parts[1:]:
        segments.append((pos, pos - HEADER_SIZE))
        pos += len(p) - HEADER_SIZE

    def values(segs):
        msg, _ = decode_message(whole, lenient=True, segments=segs)
        r = msg.body_reader(lenient=True) if segs else \
            CDRReader(msg.body, origin=-msg.body_offset, lenient=True, version=(1, 1))
        out = []
        try:
            for p in b.op("precise").in_params:
                flatten_value(p.type, read_value(r, p.type), p.name, out)
        except PycdrError as e:         # a single-origin reader may also fail outright
            out.append(["error", type(e).__name__])
        return out
    segmented = values(segments)
    assert [text for _, text in segmented] == [
        "0x1.8000000000000000000000000000p+0", "-0x1.0000000000000000000000000000p+1",
        "0x0.0000000000000000000000000001p-16382"]
    assert values(None) != segmented
