"""pycdr monitor: the call table (pycdr.calls), its rows from captures, its outputs, and
bad input (gaps, captures starting mid-connection, retransmissions, replies before their
requests, reused request ids, hostile strings, lengths claiming 4 GiB)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from collections import OrderedDict

import pytest

from pycdr.addressing.iiop import IIOPProfile, make_ior
from pycdr.calls import schema
from pycdr.calls.communityid import UDP, community_id
from pycdr.calls.output import ParquetDirectory, call_text, safe_text
from pycdr.calls.tracker import CallTracker
from pycdr.capture.giop import iter_capture
from pycdr.capture.monitor import iter_calls
from pycdr.capture.write import TcpSession, write_pcap
from pycdr.codec.cdr import CDRWriter
from pycdr.codec.ior import ior_to_string
from pycdr.giop import sysexc
from pycdr.giop.header import encode_header, MsgType
from pycdr.giop.messages import (CancelRequest, KeyAddr, LocateReply, LocateRequest,
                                 LocateStatus, Reply, ReplyStatus, Request, encode_message)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CAPTURES = os.path.join(ROOT, "captures")
PYCDR = [sys.executable, "-c", "from pycdr.cli.main import main; main()", "monitor"]


def request(rid, op="echo", key=b"Echo", *, version=(1, 2), expected=True, body=b""):
    return encode_message(Request(version=version, request_id=rid, operation=op,
                                  response_flags=3 if expected else 0, target=KeyAddr(key),
                                  body=body))


def reply(rid, *, version=(1, 2), status=ReplyStatus.NO_EXCEPTION, body=b"", **fields):
    return encode_message(Reply(version=version, request_id=rid, reply_status=status,
                                body=body, **fields))


def capture(tmp_path, build, name="t.pcap"):
    """A pcap of the sessions ``build(packets)`` makes; its path."""
    packets = []
    build(packets)
    path = str(tmp_path / name)
    write_pcap(path, packets)
    return path


def by_outcome(rows):
    out = {}
    for r in rows:
        out.setdefault(r["outcome"], []).append(r)
    return out


# -- the table, defined once -------------------------------------------------------------

def test_community_id_matches_the_published_vectors():
    # corelight/community-id-spec's baseline (as Zeek's community-id tests repeat them)
    a, b = bytes([1, 2, 3, 4]), bytes([5, 6, 7, 8])
    assert community_id(a, 1122, b, 3344) == "1:wCb3OG7yAFWelaUydu0D+125CLM="
    assert community_id(b, 3344, a, 1122) == "1:wCb3OG7yAFWelaUydu0D+125CLM="
    assert community_id(a, 1122, b, 3344, seed=1) == "1:HhA1B+6CoLbiKPEs5nhNYN4XWfk="
    assert community_id(a, 1122, b, 3344, UDP) == "1:0Mu9InQx6z4ZiCZM/7HXi2WMhOg="
    assert community_id(a, 1122, b, 3344, UDP, seed=1) == "1:OShq+iKDAMVouh/4bMxB9Sz4amw="
    v6a, v6b = bytes(range(16)), bytes(range(16, 32))
    assert community_id(v6a, 1, v6b, 2) == community_id(v6b, 2, v6a, 1)
    with pytest.raises(ValueError):
        community_id(a, 1, v6b, 2)


def test_the_arrow_schema_and_json_rows_have_the_fields_of_the_definition():
    names = [f.name for f in schema.FIELDS]
    assert schema.arrow_schema().names == names
    rows = list(iter_calls(os.path.join(CAPTURES, "messages.pcap")))
    assert rows and all(list(r) == names for r in rows)
    assert list(json.loads(schema.row_json(rows[0]))) == names
    assert len(set(names)) == len(names)


def test_the_docs_page_lists_the_fields_of_the_schema_module():
    with open(os.path.join(ROOT, "docs", "monitor.md")) as f:
        page = f.read()
    assert schema.markdown_table() in page


def test_timestamps_are_rfc3339_with_nanoseconds():
    assert schema.timestamp_text(1_700_000_000_123_456_789) == \
        "2023-11-14T22:13:20.123456789Z"
    assert schema.timestamp_text(5) == "1970-01-01T00:00:00.000000005Z"


# -- rows of a capture ---------------------------------------------------------------------

def test_rows_of_a_capture_agree_with_pcap_s_pairing():
    path = os.path.join(CAPTURES, "messages.pcap")
    rows = list(iter_calls(path, sensor="s1", capture_file="messages.pcap"))
    entries = [e for e in iter_capture(path) if "error" not in e]
    replies = [e for e in entries if "request_frame" in e]
    paired = [r for r in rows if r["reply_ts"] is not None and r["outcome"] != "orphan_reply"]
    assert len(paired) == len(replies)
    index = {(r["stream"], r["message_type"], r["request_id"]): r for r in paired}
    kinds = {"Reply": "Request", "LocateReply": "LocateRequest"}
    for e in replies:
        row = index[(e["stream"], kinds[e["type"]], e["request_id"])]
        assert row["duration_ns"] == round(e["response_time"] * 1e9)
        assert row["duration_ns"] == row["reply_ts"] - row["ts"]
        assert row["reply_bytes"] == 12 + e["message_size"]
        assert row["reply_status"] == e.get("reply_status", e.get("locate_status"))
    requests = [e for e in entries if e["type"] in ("Request", "LocateRequest")]
    assert sum(1 for r in rows if r["message_type"] in ("Request", "LocateRequest")) == \
        len(requests)
    assert all(r["sensor"] == "s1" and r["capture_file"] == "messages.pcap" for r in rows)
    first = rows[0]
    assert (first["client_ip"], first["client_port"], first["server_ip"],
            first["server_port"]) == ("10.0.0.1", 40000, "10.0.0.2", 2809)
    assert first["community_id"] == community_id(bytes([10, 0, 0, 1]), 40000,
                                                  bytes([10, 0, 0, 2]), 2809)
    assert first["object_key"] == b"DemoPOA\x00demo".hex()
    assert "DemoPOA" in first["object_key_text"]
    assert first["request_bytes"] == 12 + requests[0]["message_size"]


def test_exceptions_forwards_oneways_locates_and_cancels():
    rows = [r for r in iter_calls(os.path.join(CAPTURES, "messages.pcap"))
            if r["stream"] == 0]
    by_id = {}
    for r in rows:
        by_id.setdefault(r["request_id"], []).append(r)
    (user,) = by_id[6]
    assert (user["outcome"], user["reply_status"], user["exception_id"]) == \
        ("failure", "USER_EXCEPTION", "IDL:CaptureTest/Failure:1.0")
    assert user["minor_code"] is None
    (system,) = by_id[9]
    assert (system["outcome"], system["exception_id"], system["minor_code"],
            system["minor_code_name"], system["completion_status"]) == \
        ("failure", "IDL:omg.org/CORBA/OBJECT_NOT_EXIST:1.0", 0x4F4D0002,
         "OMG 2: the servant manager could not incarnate the object",
         "COMPLETED_NO")
    (forward,) = by_id[10]
    assert forward["outcome"] == "success" and forward["forward_to"].startswith("IOR:")
    (oneway,) = by_id[8]
    assert (oneway["outcome"], oneway["response_expected"], oneway["reply_ts"],
            oneway["duration_ns"]) == ("oneway", False, None, None)
    (locate,) = by_id[11]
    assert (locate["message_type"], locate["outcome"], locate["reply_status"]) == \
        ("LocateRequest", "success", "OBJECT_HERE")
    cancel, cancelled = sorted(by_id[19], key=lambda r: r["message_type"])
    assert cancel["message_type"] == "CancelRequest" and cancel["outcome"] == "cancelled"
    assert cancelled["message_type"] == "Request" and cancelled["outcome"] == "cancelled"
    assert cancel["operation"] == cancelled["operation"] == "add"


def test_fragmented_messages_are_one_call_with_their_fragments_counted():
    path = os.path.join(CAPTURES, "fragments.pcap")
    rows = list(iter_calls(path))
    joined = [e for e in iter_capture(path) if "reassembled" in e]
    assert joined
    assert sum(r["fragments"] for r in rows if r["fragments"]) == \
        sum(e["reassembled"]["fragments"] - 1 for e in joined)
    # A Fragment that continued a message is no row of its own; one that continued none is.
    strays = [e for e in iter_capture(path) if e.get("type") == "Fragment" and
              any(w["code"] == "fragment-misuse" for w in e["warnings"])]
    assert len([r for r in rows if r["message_type"] == "Fragment"]) == len(strays)
    assert not [r for r in rows if r["outcome"] == "malformed" and r["message_type"] != "Fragment"]


def test_arguments_and_results_as_typed_json_with_the_idl():
    from pycdr import idl
    from pycdr.calls.bodies import CallBodies
    bodies = CallBodies([idl.load(os.path.join(CAPTURES, "capture_test.idl"),
                                  register=False)])
    rows = [r for r in iter_calls(os.path.join(CAPTURES, "messages.pcap"), bodies=bodies)
            if r["stream"] == 0]
    ops = {}
    for r in rows:
        if r["message_type"] == "Request":
            ops.setdefault(r["operation"], r)
    assert ops["add"]["arguments"] == {"a": 2, "b": 40}
    assert ops["add"]["result"] == {"return": 42}
    assert ops["fail"]["result"] == {"reason": "no reason", "code": -7}
    assert ops["big"]["arguments"]["data"] == "0001fe"
    # An object reference in a result teaches the interface of its object.
    found = ops["find"]["result"]["return"]
    assert found.startswith("IOR:")
    without = [r for r in iter_calls(os.path.join(CAPTURES, "messages.pcap"))][0]
    assert without["arguments"] is None and without["result"] is None


# -- item 2: the interface of each object ------------------------------------------------

def _string(w, s):
    w.write_string(s)


def _shared_names_capture(tmp_path, with_factory):
    """Calls of SharedNames: reading() on a Meter (key "m") and on a Label (key "l");
    with_factory: the client first asks a Workshop for both (their IORs in the replies)."""
    meter_ior = make_ior("IDL:SharedNames/Meter:1.0",
                         [IIOPProfile((1, 2), "10.0.0.2", 2809, b"m")])
    label_ior = make_ior("IDL:SharedNames/Label:1.0",
                         [IIOPProfile((1, 2), "10.0.0.2", 2809, b"l")])

    def ior_body(ior):
        from pycdr.codec.ior import write_ior
        w = CDRWriter()
        write_ior(w, ior)
        return w.getvalue()

    def body(write):
        w = CDRWriter()
        write(w)
        return w.getvalue()

    def build(packets):
        s = TcpSession(packets)
        if with_factory:
            s.client_sends(request(1, "make_meter", b"w"))
            s.server_sends(reply(1, body=ior_body(meter_ior)))
            s.client_sends(request(2, "make_label", b"w"))
            s.server_sends(reply(2, body=ior_body(label_ior)))
        s.client_sends(request(3, "reading", b"m", body=body(lambda w: w.write_long(7))))
        s.server_sends(reply(3, body=body(lambda w: w.write_long(700))))
        s.client_sends(request(4, "reading", b"l", body=body(
            lambda w: (w.write_string("ab"), w.write_boolean(True)))))
        s.server_sends(reply(4, body=body(lambda w: w.write_string("AB"))))
        s.close()
    return capture(tmp_path, build), meter_ior, label_ior


def _bodies():
    from pycdr import idl
    from pycdr.calls.bodies import CallBodies
    return CallBodies([idl.load(os.path.join(HERE, "idl", "monitor", "shared_names.idl"),
                                register=False)])


def test_an_operation_name_two_interfaces_share_decodes_by_the_target_s_interface(tmp_path):
    path, _, _ = _shared_names_capture(tmp_path, with_factory=True)
    rows = {r["request_id"]: r for r in iter_calls(path, bodies=_bodies())}
    assert rows[1]["result"]["return"].startswith("IOR:")
    meter, label = rows[3], rows[4]
    assert meter["interface"] == "IDL:SharedNames/Meter:1.0"
    assert (meter["arguments"], meter["result"]) == ({"channel": 7}, {"return": 700})
    assert label["interface"] == "IDL:SharedNames/Label:1.0"
    assert (label["arguments"], label["result"]) == ({"prefix": "ab", "upper": True},
                                                     {"return": "AB"})


def test_without_references_an_ambiguous_name_is_not_guessed(tmp_path):
    path, _, _ = _shared_names_capture(tmp_path, with_factory=False)
    rows = {r["request_id"]: r for r in iter_calls(path, bodies=_bodies())}
    assert rows[3]["interface"] is None and rows[3]["arguments"] is None
    assert rows[4]["interface"] is None and rows[4]["arguments"] is None


def test_ior_files_given_on_the_command_line_name_the_interfaces(tmp_path):
    path, meter_ior, label_ior = _shared_names_capture(tmp_path, with_factory=False)
    iors = tmp_path / "refs.txt"
    iors.write_text(f"# the two objects\n{ior_to_string(meter_ior)}\n"
                    f"{ior_to_string(label_ior)}\n")
    out = tmp_path / "calls.jsonl"
    done = subprocess.run(PYCDR + [path, "--idl", os.path.join(HERE, "idl", "monitor",
                                                               "shared_names.idl"),
                                   "--ior", str(iors), "--json", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = {r["request_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert rows[3]["arguments"] == {"channel": 7}
    assert rows[4]["arguments"] == {"prefix": "ab", "upper": True}
    bad = tmp_path / "bad.txt"
    bad.write_text("IOR:zz\n")
    done = subprocess.run(PYCDR + [path, "--ior", str(bad)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: {bad}, line 1: not an IOR")
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1


# -- item 7: bad input ----------------------------------------------------------------------

def test_a_lost_reply_is_a_gap_and_the_stream_resynchronises(tmp_path):
    def build(packets):
        s = TcpSession(packets)
        s.client_sends(request(1))
        s.server_sends(reply(1))
        s.client_sends(request(2))
        s.server_sends(reply(2, body=b"x" * 40))
        del packets[-1]                         # the capture missed the reply's segment
        s.client_sends(request(3))
        s.server_sends(reply(3))
        s.close()
    rows = list(iter_calls(capture(tmp_path, build)))
    outcomes = by_outcome(rows)
    assert [r["request_id"] for r in outcomes["success"]] == [1, 3]
    (gap_row, lost) = sorted(outcomes["gap"], key=lambda r: r["message_type"] or "")
    assert gap_row["message_type"] is None
    assert gap_row["reply_bytes"] == len(reply(2, body=b"x" * 40))
    assert lost["request_id"] == 2 and lost["message_type"] == "Request"
    assert "bytes missing" in call_text(gap_row)


def test_a_gap_inside_a_message_loses_that_message_alone(tmp_path):
    big = reply(2, body=b"y" * 400)

    def build(packets):
        s = TcpSession(packets)
        s.client_sends(request(1))
        s.server_sends(reply(1))
        s.client_sends(request(2))
        s.server_sends(big, reply(9), cuts=(100, 200))
        del packets[-2]                         # its middle segment
        s.client_sends(request(3))
        s.server_sends(reply(3))
        s.close()
    rows = list(iter_calls(capture(tmp_path, build)))
    outcomes = by_outcome(rows)
    assert [r["request_id"] for r in outcomes["success"]] == [1, 3]
    assert [r["request_id"] for r in outcomes["orphan_reply"]] == [9]
    assert {r["request_id"] for r in outcomes["gap"]} == {None, 2}


def test_a_capture_starting_mid_connection(tmp_path):
    first = request(1, body=b"z" * 64)

    def build(packets):
        s = TcpSession(packets)
        s.client_sends(first, cuts=(30,))
        s.server_sends(reply(1))
        s.client_sends(request(2))
        s.server_sends(reply(2))
        del packets[:4]                     # the handshake and the request's first bytes
    rows = list(iter_calls(capture(tmp_path, build)))
    assert [r["outcome"] for r in rows] == ["malformed", "orphan_reply", "success"]
    assert rows[2]["request_id"] == 2 and rows[2]["client_port"] == rows[0]["client_port"]


def test_retransmitted_segments_make_no_second_row(tmp_path):
    def build(packets):
        s = TcpSession(packets)
        s.client_sends(request(1))
        packets.append(packets[-1].copy())
        s.server_sends(reply(1))
        packets.append(packets[-1].copy())
        s.close()
    rows = list(iter_calls(capture(tmp_path, build)))
    assert [(r["request_id"], r["outcome"]) for r in rows] == [(1, "success")]


def test_a_reply_captured_before_its_request(tmp_path):
    def build(packets):
        s = TcpSession(packets)
        s.client_sends(request(1))
        s.server_sends(reply(1))
        packets[-2], packets[-1] = packets[-1], packets[-2]
        packets[-2].time, packets[-1].time = packets[-1].time, packets[-2].time
        s.close()
    rows = list(iter_calls(capture(tmp_path, build)))
    assert [r["outcome"] for r in rows] == ["orphan_reply", "connection_closed"]
    assert rows[0]["client_ip"] == "10.0.0.1"       # the reply went to the client


def test_a_reused_request_id(tmp_path):
    def build(packets):
        s = TcpSession(packets)
        s.client_sends(request(5, "first"))
        s.client_sends(request(5, "second"))
        s.server_sends(reply(5))
        s.close()
    rows = list(iter_calls(capture(tmp_path, build)))
    assert [(r["operation"], r["outcome"]) for r in rows] == [("first", "no_reply"),
                                                               ("second", "success")]
    assert rows[0]["violations"] == [{"message": "request", "code": "request-id-reused",
                                      "offset": None}]


def test_a_hostile_operation_name(tmp_path):
    name = "\x1b[2J\x1b[31mred\x07\x9b" + "A" * 5000

    def build(packets):
        s = TcpSession(packets)
        s.client_sends(request(1, name))
        s.server_sends(reply(1))
        s.close()
    path = capture(tmp_path, build)
    (row,) = list(iter_calls(path))
    assert row["operation"] == name
    assert json.loads(schema.row_json(row))["operation"] == name
    line = call_text(row)
    assert line.isascii() and line.isprintable() and len(line) < 400
    assert "\\x1b[2J" in line and "\\x9b" in line and f"({len(name)} characters)" in line
    done = subprocess.run(PYCDR + [path], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "\x1b" not in done.stdout


def test_a_4_gib_length_claim_is_a_row_not_an_allocation(tmp_path):
    huge = encode_header((1, 2), False, MsgType.Request, 0xFFFFFF00) + b"\0" * 8

    def build(packets):
        s = TcpSession(packets)
        s.client_sends(request(1))
        s.server_sends(reply(1))
        s.client_sends(huge)
        s.close()
    path = capture(tmp_path, build)
    tracemalloc.start()
    rows = list(iter_calls(path))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 4 << 20
    assert [r["outcome"] for r in rows] == ["success", "malformed"]
    bad = rows[1]
    assert bad["violations"][0]["code"] == "MessageTooLargeError"
    assert bad["message_type"] == "Request" and bad["request_bytes"] == 12 + 0xFFFFFF00


def test_a_truncated_file_gives_its_rows_then_one_error_line(tmp_path):
    data = open(os.path.join(CAPTURES, "messages.pcap"), "rb").read()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[:3000])
    done = subprocess.run(PYCDR + [str(cut), "--json", "-"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1
    said = done.stderr.splitlines()       # what was read, then the one error line
    assert len(said) == 2 and said[0].startswith("10 calls (")
    assert said[1].startswith("error: frame ") and "record claims" in said[1]
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert rows and rows[-1]["outcome"] in ("no_reply", "success", "oneway", "failure")
    header_only = tmp_path / "header.pcap"
    header_only.write_bytes(data[:10])
    done = subprocess.run(PYCDR + [str(header_only)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("error: ") and "Traceback" not in done.stderr


def test_malformed_capture_gives_rows_never_a_traceback():
    rows = list(iter_calls(os.path.join(CAPTURES, "malformed.pcap")))
    outcomes = by_outcome(rows)
    assert len(outcomes["malformed"]) >= 4
    assert all(r["violations"] for r in outcomes["malformed"])


# -- the pending table is bounded -----------------------------------------------------------

def test_the_pending_table_is_bounded_by_count(tmp_path):
    def build(packets):
        s = TcpSession(packets)
        for rid in range(1, 6):
            s.client_sends(request(rid))
        s.server_sends(reply(5))
        s.close()
    seen = []
    path = capture(tmp_path, build)
    from pycdr.capture.monitor import CaptureCalls
    from pycdr.capture.read import CaptureReader
    calls = CaptureCalls(seen.append, max_pending=2)
    with CaptureReader(path) as reader:
        for segment in reader:
            calls.feed(segment)
            assert calls.tracker.counts.pending <= 2
    calls.finish()
    assert [(r["request_id"], r["outcome"]) for r in seen] == [
        (1, "no_reply"), (2, "no_reply"), (3, "no_reply"), (5, "success"),
        (4, "connection_closed")]
    assert calls.tracker.counts.evicted == 3
    assert calls.tracker.counts.pending_peak == 2
    assert calls.tracker.counts.summary() == (
        "5 calls (3 no_reply, 1 success, 1 connection_closed) on 1 connection; 3 evicted "
        "from the pending table (at most 2 waiting)")


def test_the_pending_table_is_bounded_by_age(tmp_path):
    def build(packets):
        s = TcpSession(packets)
        s.client_sends(request(1))          # TcpSession: 1 ms between packets
        for _ in range(5):
            s.client_sends(request(9, "x", expected=False))
        s.client_sends(request(2))
        s.server_sends(reply(2))
        s.close()
    rows = list(iter_calls(capture(tmp_path, build), max_age_ns=3_000_000))
    assert [(r["request_id"], r["outcome"]) for r in rows if r["request_id"] != 9] == [
        (1, "no_reply"), (2, "success")]


def test_a_request_left_at_the_end_of_the_capture_has_no_reply(tmp_path):
    def build(packets):
        s = TcpSession(packets)
        s.client_sends(request(1))
        s.client_sends(encode_message(LocateRequest(version=(1, 2), request_id=2,
                                                    target=KeyAddr(b"Echo"))))
        s.server_sends(encode_message(LocateReply(version=(1, 2), request_id=2,
                                                  locate_status=LocateStatus.UNKNOWN_OBJECT)))
        s.server_sends(encode_message(LocateReply(version=(1, 2), request_id=3,
                                                  locate_status=LocateStatus.OBJECT_HERE)))
    rows = list(iter_calls(capture(tmp_path, build)))
    assert [(r["message_type"], r["request_id"], r["outcome"]) for r in rows] == [
        ("LocateRequest", 2, "failure"), ("LocateReply", 3, "orphan_reply"),
        ("Request", 1, "no_reply")]


def test_the_tracker_without_a_capture():
    """Sans-I/O: messages as JSON in, rows out (what a proxy would feed it)."""
    rows = []
    tracker = CallTracker(rows.append, sensor="proxy")
    conn = tracker.connection(0, "::1", 5000, "::1", 2809, None)
    req = {"type": "Request", "version": "1.2", "little_endian": True, "message_size": 40,
           "request_id": 1, "response_flags": 3, "operation": "op",
           "target": {"object_key": "6b"}, "warnings": []}
    rep = {"type": "Reply", "version": "1.2", "little_endian": True, "message_size": 20,
           "request_id": 1, "reply_status": "SYSTEM_EXCEPTION", "warnings": [],
           "system_exception": sysexc.TRANSIENT(0x41540002, 2).to_json()}
    tracker.message(conn, 0, req, 1_000)
    assert rows == []
    tracker.message(conn, 1, rep, 3_500)
    (row,) = rows
    assert (row["duration_ns"], row["outcome"], row["minor_code_name"],
            row["completion_status"], row["client_port"], row["sensor"]) == \
        (2_500, "failure", "omniORB 2: connect failed", "COMPLETED_MAYBE", 5000, "proxy")
    assert call_text(row).startswith("1970-01-01T00:00:00.000001000Z [::1]:5000 -> [::1]:2809")


# -- outputs ---------------------------------------------------------------------------------

def test_safe_text():
    assert safe_text("plain_op") == "plain_op"
    assert safe_text("a\nb\\") == "a\\x0ab\\"
    assert safe_text(None) == "-"


def test_json_lines_to_stdout_and_the_text_form():
    path = os.path.join(CAPTURES, "messages.pcap")
    done = subprocess.run(PYCDR + [path, "--json", "-", "--sensor", "lab"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(rows) == len(list(iter_calls(path)))
    assert all(r["sensor"] == "lab" and r["capture_file"] == path for r in rows)
    assert rows[0]["ts"] == "2023-11-14T22:13:20.004000000Z"
    text = subprocess.run(PYCDR + [path], capture_output=True, text=True, timeout=60)
    assert text.returncode == 0
    assert len(text.stdout.splitlines()) == len(rows)
    assert " failure GIOP 1.0 Request id=9 _non_existent SYSTEM_EXCEPTION " \
        "IDL:omg.org/CORBA/OBJECT_NOT_EXIST:1.0 minor 0x4f4d0002 (OMG 2: the servant manager " \
        "could not incarnate the object) 1.000 ms" in text.stdout


def test_usage_errors_are_one_line():
    for args in ([], [os.path.join(CAPTURES, "messages.pcap"), "-i", "lo"],
                 [os.path.join(CAPTURES, "messages.pcap"), "-c", "3"]):
        done = subprocess.run(PYCDR + args, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and "Traceback" not in done.stderr
    done = subprocess.run(PYCDR + [os.path.join(CAPTURES, "messages.pcap"), "--json",
                                   "/nonexistent/dir/x.jsonl"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.startswith("error: /nonexistent/dir/x.jsonl")
    if os.path.exists("/dev/full"):         # a disk that is full
        # (--json=FILE: a FILE not ending in .json or .jsonl goes after "=")
        done = subprocess.run(PYCDR + [os.path.join(CAPTURES, "messages.pcap"),
                                       "--json=/dev/full"], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert done.stderr.splitlines()[-1] == \
            "error: cannot write the output (No space left on device)"


def test_parquet_parts_are_hive_partitioned_and_renamed_whole(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "calls"
    paths = [os.path.join(CAPTURES, "messages.pcap"), os.path.join(CAPTURES, "kinds.pcap")]
    done = subprocess.run(PYCDR + paths + ["--parquet", str(out)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    files = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert files and all(str(f).startswith("date=2023-11-14/hour=22/part-") and
                         str(f).endswith(".parquet") for f in files)
    table = pq.read_table(str(out))
    expected = sum(len(list(iter_calls(p))) for p in paths)
    assert table.num_rows == expected
    assert f"{expected} calls in " in done.stderr
    assert done.stderr.startswith(f"{expected} calls (")


def test_parquet_parts_roll_over_and_leave_no_temporary_file(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    rows = list(iter_calls(os.path.join(CAPTURES, "messages.pcap")))
    sink = ParquetDirectory(str(tmp_path), part_rows=10, prefix="fixed")
    for r in rows:
        sink.add(r)
        assert not [p for p in tmp_path.rglob(".*")]
    sink.close()
    parts = sorted(tmp_path.rglob("part-fixed-*.parquet"))
    assert len(parts) == -(-len(rows) // 10)
    assert sum(pq.read_metadata(str(p)).num_rows for p in parts) == len(rows)
    back = pq.read_table(str(tmp_path)).to_pylist()
    assert {r["request_id"] for r in back} == {r["request_id"] for r in rows}
    violations = [r["violations"] for r in back if r["violations"]]
    assert all(set(v[0]) == {"message", "code", "offset"} for v in violations)


def test_the_docs_duckdb_example_runs(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    out = tmp_path / "calls"
    done = subprocess.run(PYCDR + [os.path.join(CAPTURES, "messages.pcap"), "--parquet",
                                   str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    with open(os.path.join(ROOT, "docs", "monitor.md")) as f:
        page = f.read()
    query = page.split("```sql\n", 1)[1].split("```", 1)[0].replace("calls/", f"{out}/")
    result = duckdb.sql(query).fetchall()
    with open(os.path.join(ROOT, "README.md")) as f:      # its worked example, the same
        readme = f.read().split("## Calls as rows", 1)[1]
    shown = readme.split('duckdb -c "', 1)[1].split('"\n', 1)[0].replace("calls/", f"{out}/")
    assert duckdb.sql(shown).fetchall() == result
    rows = [r for r in iter_calls(os.path.join(CAPTURES, "messages.pcap"))
            if r["operation"] == "add" and r["duration_ns"] is not None]
    by_op = {r[0]: r for r in result}
    assert by_op["add"][1] == len(rows)
    failures = [r for r in iter_calls(os.path.join(CAPTURES, "messages.pcap"))
                if r["operation"] == "_non_existent" and r["outcome"] == "failure"]
    assert by_op["_non_existent"][2] == len(failures)


def test_forwards_and_repository_id_answers_teach_interfaces(tmp_path):
    from pycdr.codec.ior import write_ior
    label_ior = make_ior("IDL:SharedNames/Label:1.0",
                         [IIOPProfile((1, 2), "10.0.0.2", 2809, b"l")])

    def body(write):
        w = CDRWriter()
        write(w)
        return w.getvalue()

    def build(packets):
        s = TcpSession(packets)
        # A call forwarded to the Label: its IOR names the key's interface.
        s.client_sends(request(1, "reading", b"old"))
        s.server_sends(reply(1, status=ReplyStatus.LOCATION_FORWARD, forward=label_ior))
        # The Meter says its interface when asked.
        s.client_sends(request(2, "_repository_id", b"m"))
        s.server_sends(reply(2, body=body(lambda w: w.write_string(
            "IDL:SharedNames/Meter:1.0"))))
        s.client_sends(request(3, "reading", b"m", body=body(lambda w: w.write_long(1))))
        s.server_sends(reply(3, body=body(lambda w: w.write_long(2))))
        s.client_sends(request(4, "reading", b"l", body=body(
            lambda w: (w.write_string("x"), w.write_boolean(False)))))
        s.server_sends(reply(4, body=body(lambda w: w.write_string("x"))))
        s.close()
    rows = {r["request_id"]: r for r in iter_calls(capture(tmp_path, build), bodies=_bodies())}
    assert rows[1]["forward_to"] == ior_to_string(label_ior)
    assert rows[2]["result"] == {"return": "IDL:SharedNames/Meter:1.0"}
    assert (rows[3]["interface"], rows[3]["arguments"]) == ("IDL:SharedNames/Meter:1.0",
                                                            {"channel": 1})
    assert (rows[4]["interface"], rows[4]["arguments"]) == ("IDL:SharedNames/Label:1.0",
                                                            {"prefix": "x", "upper": False})


def test_a_stray_fragment_and_a_message_error_are_malformed_rows(tmp_path):
    from pycdr.giop.messages import Fragment, MessageError

    def build(packets):
        s = TcpSession(packets)
        s.client_sends(encode_message(Fragment(version=(1, 2), request_id=99, data=b"abcd")))
        s.server_sends(encode_message(MessageError(version=(1, 2))))
        s.close()
    rows = list(iter_calls(capture(tmp_path, build)))
    assert [(r["outcome"], r["message_type"]) for r in rows] == [
        ("malformed", "Fragment"), ("malformed", "MessageError")]
    assert rows[0]["violations"][0]["code"] == "fragment-misuse"
    assert rows[0]["request_id"] == 99


def test_shards_of_a_file_give_its_rows_each_once():
    path = os.path.join(CAPTURES, "messages.pcap")

    def key(r):
        return (r["stream"], r["ts"], r["message_type"] or "", r["request_id"] or -1)
    whole = sorted(iter_calls(path), key=key)
    shards = sorted([r for k in range(3) for r in iter_calls(path, shard=(k, 3))], key=key)
    assert shards == whole and len({r["stream"] for r in whole}) > 3


def test_a_capture_starting_in_the_middle_of_a_reply(tmp_path):
    def build(packets):
        s = TcpSession(packets, client_port=51000)
        s.client_sends(request(1))
        s.server_sends(reply(1, body=b"r" * 64), cuts=(30,))
        s.client_sends(request(2))
        s.server_sends(reply(2))
        del packets[:5]                     # the handshake, the request, the reply's start
    rows = list(iter_calls(capture(tmp_path, build)))
    assert [r["outcome"] for r in rows] == ["malformed", "success"]
    # The client is the side on the ephemeral port before any request says so.
    assert [(r["client_port"], r["server_port"]) for r in rows] == [(51000, 2809)] * 2
    assert rows[0]["reply_bytes"] is None and rows[0]["violations"][0]["message"] == "stream"


def test_parquet_parts_written_again_replace_themselves(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    rows = list(iter_calls(os.path.join(CAPTURES, "messages.pcap")))
    for _ in range(2):                      # a task that ran twice
        sink = ParquetDirectory(str(tmp_path), part_rows=50, prefix="file0-shard1")
        for r in rows:
            sink.add(r)
        sink.close()
    assert pq.read_table(str(tmp_path)).num_rows == len(rows)


def test_length_claims_inside_messages_allocate_nothing(tmp_path):
    import struct
    # A Request whose operation name claims 4 GiB (the decoder's own lenient framing) and
    # one whose sequence<long> argument does (decoded with the IDL).
    good = request(1, "total", b"m", body=struct.pack(">I", 0xFFFFFFF0))
    op_at = good.index(b"total") - 4
    bad_op = bytearray(request(2, "total", b"m"))
    bad_op[op_at:op_at + 4] = struct.pack(">I", 0xFFFFFFF0)

    def build(packets):
        s = TcpSession(packets)
        s.client_sends(good)
        s.server_sends(reply(1, body=struct.pack(">i", 0)))
        s.client_sends(bytes(bad_op))
        s.close()
    path = capture(tmp_path, build)
    bodies = _bodies()
    tracemalloc.start()
    known = OrderedDict([(b"m".hex(), "IDL:SharedNames/Meter:1.0")])
    rows = list(iter_calls(path, bodies=bodies, interfaces=known))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 4 << 20
    call, bad = rows
    assert call["outcome"] == "success" and call["arguments"] == {}
    assert [v["code"] for v in call["violations"]] == ["undecodable-body"]
    assert bad["outcome"] == "malformed" and bad["message_type"] == "Request"


def test_bidirectional_giop_each_side_s_requests_pair_with_their_own_replies(tmp_path):
    def build(packets):
        s = TcpSession(packets)
        s.client_sends(request(1, "call"))
        s.server_sends(request(1, "callback"))      # the same id, the other way
        s.client_sends(reply(1, body=b"c" * 8))
        s.server_sends(reply(1))
        s.close()
    rows = list(iter_calls(capture(tmp_path, build)))
    assert [(r["operation"], r["outcome"], r["client_port"] != 2809, r["reply_bytes"])
            for r in rows] == [("callback", "success", False, len(reply(1, body=b"c" * 8))),
                               ("call", "success", True, len(reply(1)))]


def test_a_cancelled_request_whose_reply_still_comes(tmp_path):
    def build(packets):
        s = TcpSession(packets)
        s.client_sends(request(1, "slow"))
        s.client_sends(encode_message(CancelRequest(version=(1, 2), request_id=1)))
        s.server_sends(reply(1))
        s.client_sends(encode_message(CancelRequest(version=(1, 2), request_id=7)))
        s.close()
    rows = list(iter_calls(capture(tmp_path, build)))
    assert [(r["message_type"], r["request_id"], r["operation"], r["outcome"])
            for r in rows] == [("CancelRequest", 1, "slow", "cancelled"),
                               ("Request", 1, "slow", "success"),
                               ("CancelRequest", 7, None, "cancelled")]


def test_mutated_bodies_decode_to_values_or_violations_never_an_exception():
    import random

    from pycdr import idl
    from pycdr.calls.bodies import CallBodies
    from pycdr.capture.giop import CaptureDecoder
    from pycdr.capture.read import CaptureReader
    from pycdr.capture.tcp import TcpReassembler
    from pycdr.errors import PycdrError
    from pycdr.giop.messages import decode_message
    bodies = CallBodies([idl.load(os.path.join(CAPTURES, "capture_test.idl"),
                                  register=False)])
    raws = []
    tcp = TcpReassembler(CaptureDecoder(None, raw_message=lambda f, raw, n, t: raws.append(raw)))
    with CaptureReader(os.path.join(CAPTURES, "messages.pcap")) as reader:
        for segment in reader:
            tcp.feed(segment)
    requests = [r for r in raws if r[7] == MsgType.Request]
    rng = random.Random(43)
    decoded = 0
    for _ in range(600):
        raw = bytearray(rng.choice(requests))
        for _ in range(rng.randint(1, 6)):
            raw[rng.randrange(12, len(raw))] = rng.randrange(256)
        try:
            msg, _ = decode_message(bytes(raw), lenient=True)
        except PycdrError:
            continue
        op = bodies.operation(None, getattr(msg, "operation", None))
        if op is None:
            continue
        values, violations = bodies.arguments(op, msg, None, lambda ior: None)
        reply_values, _ = bodies.result(op, msg, "NO_EXCEPTION", None, None, lambda ior: None)
        assert isinstance(values, dict) and (violations is None or isinstance(violations, list))
        json.dumps([values, reply_values])
        decoded += 1
    assert decoded > 100


def test_live_parquet_parts_are_written_by_time_as_well(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    rows = list(iter_calls(os.path.join(CAPTURES, "messages.pcap")))[:3]
    sink = ParquetDirectory(str(tmp_path), part_seconds=0.0)
    for n, r in enumerate(rows, 1):
        sink.add(r)                         # a part older than part_seconds: written now
        assert len(list(tmp_path.rglob("*.parquet"))) == n
    sink.close()
    assert pq.read_table(str(tmp_path)).num_rows == 3
