"""`pycdr pcap --parquet FILE`: one row a GIOP message, written in row groups as
the capture is read (pyarrow: the ``parquet`` extra).

Columns (null where a message has no such field):

=================  =========================  ===========================================
frame              int64                      the frame at which the message completed
time               timestamp[us, UTC]         that frame's time
stream             int32                      TCP connection index
src, dst           string                     ``ip:port``
stream_offset      int64                      offset of the message in its direction
type               string                     Request, Reply, ... (null: undecodable)
version            string                     ``1.2``
little_endian      bool
more_fragments     bool
reassembled        int32                      fragments joined into this message
message_size       int64                      bytes after the 12-byte header
request_id         int64
operation          string                     a Request's operation
object_key         binary                     a Request's / LocateRequest's KeyAddr
reply_status       string                     a Reply's (LocateReply: locate_status)
exception          string                     user exception id, or system exception name
request_frame      int64                      a reply: its request's frame
reply_frame        int64                      a request: its reply's frame, when the reply
                                              came before the request's row group was
                                              written (else null)
response_time      float64                    a reply: seconds since its request
violations         list<string>               the decoder's warning codes
error              string                     undecodable: the error type (or CaptureGap)
error_message      string
=================  =========================  ===========================================

Memory stays flat: a row group holds ``row_group_size`` rows of these columns.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import PycdrError

ROW_GROUP_SIZE = 10_000

SCHEMA = pa.schema([
    ("frame", pa.int64()), ("time", pa.timestamp("us", tz="UTC")), ("stream", pa.int32()),
    ("src", pa.string()), ("dst", pa.string()), ("stream_offset", pa.int64()),
    ("type", pa.string()), ("version", pa.string()), ("little_endian", pa.bool_()),
    ("more_fragments", pa.bool_()), ("reassembled", pa.int32()), ("message_size", pa.int64()),
    ("request_id", pa.int64()), ("operation", pa.string()), ("object_key", pa.binary()),
    ("reply_status", pa.string()), ("exception", pa.string()), ("request_frame", pa.int64()),
    ("reply_frame", pa.int64()), ("response_time", pa.float64()),
    ("violations", pa.list_(pa.string())), ("error", pa.string()), ("error_message", pa.string()),
])
_COLUMNS = SCHEMA.names


def row_of(e: dict) -> list:
    """The row of an entry of :func:`pycdr.capture.giop.iter_capture`, in column order."""
    target = e.get("target")
    key = bytes.fromhex(target["object_key"]) if target and "object_key" in target else None
    if e.get("reply_status") == "USER_EXCEPTION":
        exception = e.get("exception_id")
    else:
        exception = e["system_exception"]["name"] if "system_exception" in e else None
    error = e.get("error")
    return [e["frame"], round(e["time"] * 1_000_000), e["stream"], e["src"], e["dst"],
            e["stream_offset"], e.get("type"), e.get("version"), e.get("little_endian"),
            e.get("more_fragments"), e["reassembled"]["fragments"] if "reassembled" in e else None,
            e.get("message_size"), e.get("request_id"), e.get("operation"), key,
            e.get("reply_status", e.get("locate_status")), exception, e.get("request_frame"),
            e.get("reply_frame"), e.get("response_time"),
            [w["code"] for w in e["warnings"]] if "warnings" in e else None,
            error["type"] if error else None, error["message"] if error else None]


class ParquetSink:
    """Rows in, row groups out.  ``add`` every entry, ``matched`` every reply
    matched (``iter_capture``'s ``matched``: fills a request's ``reply_frame``
    while its row waits), ``close`` at the end."""

    def __init__(self, path: str, row_group_size: int = ROW_GROUP_SIZE):
        self.path = path
        self.row_group_size = row_group_size
        try:
            self._writer = pq.ParquetWriter(path, SCHEMA)
        except (OSError, pa.ArrowException) as e:
            raise PycdrError(f"{path}: cannot write Parquet ({e})") from None
        self._rows: list = []
        # Requests whose row waits in this group: id -> (entry, row); the entry
        # is held so that its id is not reused before the group is written.
        self._waiting: dict = {}
        self.rows_written = 0
        self.row_groups = 0
        self._reply_frame = _COLUMNS.index("reply_frame")

    def add(self, entry: dict) -> None:
        row = row_of(entry)
        self._rows.append(row)
        if entry.get("type") in ("Request", "LocateRequest") and "reply_frame" not in entry:
            self._waiting[id(entry)] = (entry, row)
        if len(self._rows) >= self.row_group_size:
            self._flush()

    def matched(self, request: dict, reply: dict) -> None:
        waiting = self._waiting.pop(id(request), None)
        if waiting is not None and waiting[0] is request:
            waiting[1][self._reply_frame] = reply["frame"]

    def _flush(self) -> None:
        if not self._rows:
            return
        columns = list(zip(*self._rows))
        table = pa.Table.from_arrays([pa.array(c, type=t) for c, t in zip(columns, SCHEMA.types)],
                                     schema=SCHEMA)
        self._writer.write_table(table)
        self.rows_written += len(self._rows)
        self.row_groups += 1
        self._rows = []
        self._waiting.clear()

    def close(self) -> None:
        self._flush()
        self._writer.close()
