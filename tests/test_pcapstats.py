"""pycdr pcap --stats: the counters agree with the entries they summarize, the
response-time quantiles are within the histogram's 1%."""

from __future__ import annotations

import glob
import json
import os
import random

import pytest
from click.testing import CliRunner

from pycdr.cli.main import main
from pycdr.capture.giop import decode_capture, iter_capture
from pycdr.capture.stats import CaptureStats, LatencyHistogram, operation_of

CAPTURES = os.path.join(os.path.dirname(__file__), os.pardir, "captures")
PCAPS = sorted(glob.glob(os.path.join(CAPTURES, "**", "*.pcap"), recursive=True))


def stats_of(path):
    stats = CaptureStats()
    for entry in iter_capture(path, matched=stats.matched, unanswered=stats.unanswered):
        stats.add(entry)
    return stats.to_json()


@pytest.mark.parametrize("pcap", PCAPS, ids=os.path.basename)
def test_counters_agree_with_the_entries(pcap):
    entries = decode_capture(pcap)          # requests gain reply_frame in the list
    by_frame = {}
    for e in entries:
        by_frame.setdefault(e["frame"], []).append(e)
    expected: dict = {}
    for e in entries:
        if e.get("type") not in ("Request", "LocateRequest") or e["more_fragments"]:
            continue
        s = expected.setdefault(operation_of(e), {"calls": 0, "replies": 0, "unanswered": 0,
                                                   "oneway": 0, "user": {}, "system": {}})
        s["calls"] += 1
        oneway = e["type"] == "Request" and \
            not e.get("response_expected", e.get("response_flags", 3) != 0)
        s["oneway"] += oneway
        if "reply_frame" in e:
            s["replies"] += 1
            (reply,) = [r for r in by_frame[e["reply_frame"]]
                        if r.get("request_frame") == e["frame"]
                        and r.get("request_id") == e["request_id"] and not r["more_fragments"]]
            if reply.get("reply_status") == "USER_EXCEPTION":
                s["user"][reply["exception_id"]] = s["user"].get(reply["exception_id"], 0) + 1
            if "system_exception" in reply:
                name = reply["system_exception"]["name"]
                s["system"][name] = s["system"].get(name, 0) + 1
        elif not oneway:
            s["unanswered"] += 1
    got = stats_of(pcap)
    assert {op: {"calls": s["calls"], "replies": s["replies"], "unanswered": s["unanswered"],
                 "oneway": s["oneway"], "user": s["user_exceptions"],
                 "system": s["system_exceptions"]}
            for op, s in got["operations"].items()} == expected
    assert sum(got["versions"].values()) == sum(got["message_types"].values()) == \
        len([e for e in entries if "type" in e])
    codes = [w["code"] for e in entries for w in e.get("warnings", [])]
    assert got["violations"] == {c: codes.count(c) for c in sorted(set(codes))}
    assert sum(got["errors"].values()) == len([e for e in entries if "error" in e])
    # The pairs split the same calls.
    for key in ("calls", "replies", "unanswered", "bytes"):
        assert sum(s[key] for s in got["endpoint_pairs"].values()) == \
            sum(s[key] for s in got["operations"].values())


def test_latency_quantiles_within_one_percent():
    rng = random.Random(5)
    values = [rng.lognormvariate(-8, 1.5) for _ in range(20000)]
    h = LatencyHistogram()
    for v in values:
        h.add(v)
    values.sort()
    for q in (0.5, 0.9, 0.99):
        exact = values[int(q * len(values)) - 1]
        assert abs(h.quantile(q) - exact) <= 0.011 * exact
    assert h.max == values[-1]


def test_cli_stats_table_and_json():
    pcap = os.path.join(CAPTURES, "messages.pcap")
    out = CliRunner().invoke(main, ["pcap", "--stats", "--json", pcap])
    assert out.exit_code == 0
    stats = json.loads(out.output)
    assert stats["operations"]["fail"]["user_exceptions"] == {"IDL:CaptureTest/Failure:1.0": 8}
    assert stats["operations"]["notify"]["oneway"] == 8
    assert {"1.0 big-endian", "1.3 little-endian"} <= set(stats["versions"])
    table = CliRunner().invoke(main, ["pcap", "--stats", pcap])
    assert table.exit_code == 0
    assert "Operations" in table.output and "OBJECT_NOT_EXIST" in table.output
