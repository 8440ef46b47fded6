"""The call table's explain column (--explain in `pycdr monitor` and `pycdr proxy`): a
request a system exception answered, checked as `pycdr explain` checks it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from pycdr.capture.write import TcpSession, write_pcap
from pycdr.conformance.echo import ECHO_IDL
from pycdr.giop.messages import Reply, ReplyStatus, encode_message
from pycdr.giop.sysexc import MARSHAL, OMNIORB_VMCID, CompletionStatus

from test_explain import echo_type, request

PYCDR = [sys.executable, "-c", "from pycdr.cli.main import main; main()"]


def capture_of(path, calls):
    """A capture of (request bytes, reply) pairs on one connection."""
    packets = []
    session = TcpSession(packets, 2809, client_ip="10.0.0.1", server_ip="10.0.0.2")
    for data, reply in calls:
        session.client_sends(data)
        session.server_sends(encode_message(reply))
    session.close()
    write_pcap(path, packets)


def marshal_reply(rid):
    return Reply(version=(1, 2), request_id=rid, reply_status=ReplyStatus.SYSTEM_EXCEPTION,
                 system_exception=MARSHAL(OMNIORB_VMCID | 22, CompletionStatus.COMPLETED_NO))


def test_monitor_explains_the_requests_a_system_exception_answered(tmp_path):
    bad = bytearray(request("echo_string", echo_type("echo_string"), "hello", request_id=2))
    bad[65] = ord("!")                                  # the string's NUL, gone
    good = request("echo_string", echo_type("echo_string"), "hello", request_id=1)
    answered = Reply(version=(1, 2), request_id=1, reply_status=ReplyStatus.NO_EXCEPTION,
                     body=bytes(good[56:66]))
    capture = str(tmp_path / "calls.pcap")
    capture_of(capture, [(good, answered), (bytes(bad), marshal_reply(2))])
    done = subprocess.run(PYCDR + ["monitor", capture, "--explain", "--idl", ECHO_IDL,
                                   "--json", "-"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    first, second = [json.loads(line) for line in done.stdout.splitlines()]
    assert first["outcome"] == "success" and first["explain"] is None
    assert second["outcome"] == "failure"
    explained = second["explain"]
    assert not explained["clean"]
    assert [(f["offset"], f["path"], f["code"]) for f in explained["findings"]
            if f["severity"] != "note"] == [(65, "request.body.v.nul", "string-no-nul")]
    assert "omniORB 22: StringNotEndWithNull" in explained["verdict"]
    # Without --explain the column stays empty and nothing is kept for it.
    plain = subprocess.run(PYCDR + ["monitor", capture, "--json", "-"], capture_output=True,
                           text=True, timeout=60)
    assert all(json.loads(line)["explain"] is None for line in plain.stdout.splitlines())


def test_the_explain_column_is_in_the_parquet_table(tmp_path):
    import pyarrow.dataset as ds
    bad = bytearray(request("echo_string", echo_type("echo_string"), "hello", request_id=1))
    bad[65] = ord("!")
    capture = str(tmp_path / "calls.pcap")
    capture_of(capture, [(bytes(bad), marshal_reply(1))])
    out = tmp_path / "table"
    done = subprocess.run(PYCDR + ["monitor", capture, "--explain", "--idl", ECHO_IDL,
                                   "--parquet", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (row,) = ds.dataset(str(out), format="parquet", partitioning="hive").to_table().to_pylist()
    assert json.loads(row["explain"])["clean"] is False
