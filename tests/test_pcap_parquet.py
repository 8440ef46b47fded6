"""pycdr pcap --parquet: a row a message, in row groups, the entries' fields."""

from __future__ import annotations

import glob
import os

import pytest
from click.testing import CliRunner

pq = pytest.importorskip("pyarrow.parquet")

from pycdr.cli.main import main  # noqa: E402
from pycdr.capture.giop import decode_capture, iter_capture  # noqa: E402
from pycdr.capture.parquet import ParquetSink, SCHEMA, row_of  # noqa: E402

CAPTURES = os.path.join(os.path.dirname(__file__), os.pardir, "captures")
PCAPS = sorted(glob.glob(os.path.join(CAPTURES, "**", "*.pcap"), recursive=True))


@pytest.mark.parametrize("pcap", PCAPS, ids=os.path.basename)
def test_rows_are_the_entries_in_small_row_groups(pcap, tmp_path):
    path = str(tmp_path / "out.parquet")
    sink = ParquetSink(path, row_group_size=7)
    for entry in iter_capture(pcap, matched=sink.matched):
        sink.add(entry)
    sink.close()
    entries = decode_capture(pcap)
    table = pq.read_table(path)
    assert pq.ParquetFile(path).num_row_groups == -(-len(entries) // 7) == sink.row_groups
    rows = table.to_pylist()
    assert len(rows) == len(entries)
    for row, entry in zip(rows, entries):
        expected = dict(zip(SCHEMA.names, row_of(entry)))
        # A reply outside its request's row group leaves reply_frame null.
        if row["reply_frame"] is None:
            expected["reply_frame"] = None
        assert round(row["time"].timestamp() * 1e6) == expected.pop("time")
        row.pop("time")
        assert row == expected
    # Replies in the same group as their request: the request row knows its reply.
    assert all(r["reply_frame"] == e.get("reply_frame") for r, e in zip(rows, entries)
               if r["reply_frame"] is not None)


def test_cli_parquet(tmp_path):
    pcap = os.path.join(CAPTURES, "messages.pcap")
    path = str(tmp_path / "m.parquet")
    out = CliRunner().invoke(main, ["pcap", "--parquet", path, pcap])
    assert out.exit_code == 0, out.output
    table = pq.read_table(path)
    requests = [r for r in table.to_pylist() if r["type"] == "Request"]
    assert {"add", "fail", "notify"} <= {r["operation"] for r in requests}
    assert all(r["reply_frame"] for r in requests if r["operation"] == "fail")
    assert {r["exception"] for r in table.to_pylist()} >= {"IDL:CaptureTest/Failure:1.0",
                                                          "OBJECT_NOT_EXIST"}
    bad = CliRunner().invoke(main, ["pcap", "--parquet", path, "--stats", pcap])
    assert bad.exit_code == 2
