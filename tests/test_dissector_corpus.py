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
