"""Where call rows go: JSON Lines, one text line a call, Parquet partitioned by hour.

:class:`ParquetDirectory` writes a Hive-partitioned table
(``DIR/date=2024-05-01/hour=12/part-<run>-<n>.parquet``, by each row's ``ts``).  Each
part is written under a hidden temporary name (``.part-...parquet.tmp``) and renamed
when complete, so a reader never sees half a file and a crash loses at most the rows
of the parts being filled.  Rows wait in Arrow record batches (compact), ``part_rows``
at most over all partitions (past it every part being filled is written), and, live,
``part_seconds`` of wall time at most.  Without ``part_seconds`` the parts depend on the
rows alone: the same rows with the same ``prefix`` give the same files, so a task run
again replaces its parts instead of adding rows.
"""

from __future__ import annotations

import json
import os
import time
import uuid

from .schema import JSON_VALUES, NAMES, arrow_schema, row_json, timestamp_text

PART_ROWS = 100_000
BATCH_ROWS = 4096
PART_SECONDS_LIVE = 60.0
_SHOWN_TEXT = 120          # characters of a wire string a text line shows at most


class JsonLines:
    """Rows as JSON Lines to a text stream (``flush`` each row: live output to a pipe)."""

    def __init__(self, stream, flush: bool = False):
        self._write = stream.write
        self._flush = stream.flush if flush else None

    def add(self, row: dict) -> None:
        self._write(row_json(row) + "\n")
        if self._flush is not None:
            self._flush()

    def close(self) -> None:
        if self._flush is not None:
            self._flush()


def safe_text(text: str | None) -> str:
    """A string from the wire as a terminal may show it: printable ASCII kept, other
    characters escaped (\\xNN, \\uNNNN), at most _SHOWN_TEXT characters."""
    if text is None:
        return "-"
    if text.isascii() and text.isprintable() and len(text) <= _SHOWN_TEXT:
        return text
    out = []
    for ch in text[:_SHOWN_TEXT]:
        if ch.isascii() and ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
    if len(text) > _SHOWN_TEXT:
        out.append(f"...({len(text)} characters)")
    return "".join(out)


def call_text(row: dict) -> str:
    """One line a call (no newline): when, who to whom, what, how it ended, how long."""
    when = timestamp_text(row["ts"])
    line = f"{when} {_endpoint(row['client_ip'], row['client_port'])} -> " \
           f"{_endpoint(row['server_ip'], row['server_port'])} {row['outcome']}"
    if row["message_type"] is not None:
        line += f" GIOP {row['giop_version']} {row['message_type']}"
        if row["request_id"] is not None:
            line += f" id={row['request_id']}"
    if row["operation"] is not None:
        line += " " + safe_text(row["operation"])
    if row["reply_status"] is not None:
        line += " " + row["reply_status"]
    if row["exception_id"] is not None:
        line += " " + safe_text(row["exception_id"])
    if row["minor_code"] is not None:
        line += f" minor 0x{row['minor_code']:08x}"
        if row["minor_code_name"]:
            line += f" ({row['minor_code_name']})"
    if row["duration_ns"] is not None:
        line += f" {row['duration_ns'] / 1e6:.3f} ms"
    if row["outcome"] == "gap" and row["message_type"] is None:
        missing = row["request_bytes"] if row["request_bytes"] is not None else \
            row["reply_bytes"]
        line += f" ({missing} bytes missing from the capture)"
    violations = row["violations"]
    if violations:
        line += " [" + ", ".join(safe_text(v["code"]) for v in violations) + "]"
    faults = row.get("faults")
    if faults:                  # (pycdr proxy's rules that hit the call)
        line += " {" + ", ".join(f"rule {f['rule']}: {safe_text(f['type'])}"
                                 for f in faults) + "}"
    return line


def _endpoint(ip, port) -> str:
    return f"[{ip}]:{port}" if ip and ":" in ip else f"{ip}:{port}"


class TextLines:
    def __init__(self, stream, flush: bool = False):
        self._write = stream.write
        self._flush = stream.flush if flush else None

    def add(self, row: dict) -> None:
        self._write(call_text(row) + "\n")
        if self._flush is not None:
            self._flush()

    def close(self) -> None:
        if self._flush is not None:
            self._flush()


class ParquetDirectory:
    """Rows in (:meth:`add`), parts out under ``directory`` (see the module doc).
    ``prefix`` names this writer's parts (default: a random run id): writers with
    different prefixes share a directory."""

    def __init__(self, directory: str, *, part_rows: int = PART_ROWS,
                 part_seconds: float | None = None, prefix: str | None = None):
        import pyarrow as pa        # (the parquet extra: only this output needs it)
        import pyarrow.parquet as pq
        self._pa, self._pq = pa, pq
        self.schema = arrow_schema()
        self._types = self.schema.types
        self._json = [n in JSON_VALUES for n in NAMES]
        self.directory = directory
        self.part_rows = part_rows
        self.part_seconds = part_seconds
        self.prefix = prefix or uuid.uuid4().hex[:12]
        os.makedirs(directory, exist_ok=True)
        self._parts: dict = {}        # (date, hour) -> _Part
        self._buffered = 0            # rows waiting, all parts
        self._started = time.monotonic()
        self._seq = 0
        self.rows_written = 0
        self.files_written = 0
        self.written: list = []       # the paths of the parts written, in order

    def add(self, row: dict) -> None:
        ts = row["ts"]
        t = time.gmtime(ts // 1_000_000_000)
        key = (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}", f"{t.tm_hour:02d}")
        part = self._parts.get(key)
        if part is None:
            part = self._parts[key] = _Part()
        part.rows.append(row)
        if len(part.rows) >= BATCH_ROWS:
            self._batch(part)
        self._buffered += 1
        if self._buffered >= self.part_rows or (
                self.part_seconds is not None and
                time.monotonic() - self._started >= self.part_seconds):
            self.flush()

    def flush(self) -> None:
        """Write every part being filled."""
        for key in sorted(self._parts):
            self._write(key, self._parts.pop(key))
        self._buffered = 0
        self._started = time.monotonic()

    close = flush

    def _batch(self, part) -> None:
        pa = self._pa
        columns = []
        for i, (name, t) in enumerate(zip(NAMES, self._types)):
            values = [row[name] for row in part.rows]
            if self._json[i]:
                values = [None if v is None else json.dumps(v) for v in values]
            columns.append(pa.array(values, type=t))
        part.batches.append(pa.RecordBatch.from_arrays(columns, schema=self.schema))
        part.count += len(part.rows)
        part.rows = []

    def _write(self, key, part) -> None:
        if part.rows:
            self._batch(part)
        if not part.count:
            return
        date, hour = key
        where = os.path.join(self.directory, f"date={date}", f"hour={hour}")
        os.makedirs(where, exist_ok=True)
        name = f"part-{self.prefix}-{self._seq:06d}.parquet"
        self._seq += 1
        temporary = os.path.join(where, "." + name + ".tmp")
        table = self._pa.Table.from_batches(part.batches, schema=self.schema)
        self._pq.write_table(table, temporary)
        os.replace(temporary, os.path.join(where, name))
        self.written.append(os.path.join(where, name))
        self.rows_written += part.count
        self.files_written += 1


class _Part:
    __slots__ = ("rows", "batches", "count")

    def __init__(self):
        self.rows: list = []
        self.batches: list = []
        self.count = 0

