"""The call table: every column, defined once.

A row is a dict keyed by :data:`NAMES` (every key present, ``None`` for null).
From :data:`FIELDS` come the Arrow schema (:func:`arrow_schema`), the JSON form of
a row (:func:`row_json`), and the field list of docs/monitor.md
(:func:`markdown_table`; tests/test_monitor.py checks the page against it).

Types (the ``type`` of a :class:`Field`):

- ``timestamp``: UTC, nanoseconds since the epoch (an int in a row); Arrow
  ``timestamp[ns, UTC]``; JSON an RFC 3339 string with nine decimals
  (``2024-05-01T12:00:00.123456789Z``);
- ``int64``, ``int32``, ``bool``, ``string``: as named;
- ``violations``: a list of ``{"message": "request" | "reply" | "stream",
  "code": <rule>, "offset": <byte offset in that message, or null>}``;
  Arrow ``list<struct<message: string, code: string, offset: int64>>``;
- ``json``: a JSON value (object or list); Arrow a string holding its JSON text.
"""

from __future__ import annotations

import json
import time
from typing import NamedTuple


class Field(NamedTuple):
    name: str
    type: str
    doc: str
    zeek: str = ""          # the closest field of Zeek's logs (dce_rpc.log, conn.log)
    ecs: str = ""           # Elastic Common Schema
    otel: str = ""          # OpenTelemetry semantic conventions (RPC, network, exception)


# Outcomes, in the order the docs list them.
OUTCOMES = {
    "success": "a reply that is not an exception (NO_EXCEPTION, LOCATION_FORWARD, "
               "NEEDS_ADDRESSING_MODE; a LocateReply but UNKNOWN_OBJECT and "
               "LOC_SYSTEM_EXCEPTION)",
    "failure": "a reply carrying a user or system exception, or a LocateReply "
               "UNKNOWN_OBJECT / LOC_SYSTEM_EXCEPTION",
    "oneway": "a request that expects no reply",
    "no_reply": "a reply was expected and none came: the capture ended first, the "
                "pending table evicted the request (too old, or too many pending), or "
                "a request reused its id (violation `request-id-reused`)",
    "orphan_reply": "a reply (or LocateReply) whose request the capture does not hold "
                    "(the capture started after it, or the reply was captured first)",
    "cancelled": "a CancelRequest (its row), or a request cancelled and left unanswered",
    "connection_closed": "the connection ended (FIN, RST) before the reply came",
    "gap": "bytes missing from the capture (the row of the gap: `request_bytes` or "
           "`reply_bytes` holds how many), or a request whose reply may have been "
           "in them",
    "malformed": "bytes that do not decode as GIOP (`violations` says why); the "
                 "stream is framed again from the next segment or GIOP header",
}

FIELDS = (
    Field("ts", "timestamp", "when the call's first message (request, or the unmatched "
          "reply, the gap) was captured", "ts", "@timestamp, event.start", "span start"),
    Field("reply_ts", "timestamp", "when its reply was captured", "", "event.end", "span end"),
    Field("duration_ns", "int64", "`reply_ts - ts`; null without a reply", "duration "
          "(seconds)", "event.duration", "rpc.client.duration / rpc.server.duration"),
    Field("outcome", "string", "what became of the call: " + ", ".join(
          f"`{o}`" for o in OUTCOMES) + " (see below)", "", "event.outcome (success, "
          "failure; unknown for the others)", "span status (ERROR for failure)"),
    Field("message_type", "string", "the GIOP message that opened the row: Request, "
          "LocateRequest, CancelRequest, Reply or LocateReply (unmatched); for a "
          "`malformed` row the type its header names (when it parsed), Fragment (one "
          "that continues no message) or MessageError; null for a gap"),
    Field("community_id", "string", "Community ID v1 of the TCP connection",
          "community_id", "network.community_id"),
    Field("sensor", "string", "where the traffic was seen (`--sensor`; live, by default "
          "the host name)", "_node_name", "observer.name"),
    Field("capture_file", "string", "the capture file (null live)"),
    Field("stream", "int64", "TCP connection index in the capture (as `pycdr pcap`'s, "
          "Wireshark's tcp.stream)", "uid", "", ""),
    Field("client_ip", "string", "the side that sent the request", "id.orig_h",
          "client.ip", "client.address"),
    Field("client_port", "int32", "", "id.orig_p", "client.port", "client.port"),
    Field("server_ip", "string", "the side that received the request", "id.resp_h",
          "server.ip", "server.address"),
    Field("server_port", "int32", "", "id.resp_p", "server.port", "server.port"),
    Field("giop_version", "string", "GIOP version of the request (else the reply): `1.2`"),
    Field("little_endian", "bool", "byte order of the request (else the reply)"),
    Field("request_id", "int64", "GIOP request id", "", "", "rpc.message.id"),
    Field("response_expected", "bool", "false for a oneway request"),
    Field("object_key", "string", "the target's object key, hex", "", "", ""),
    Field("object_key_text", "string", "the key read by its ORB's layout "
          "(pycdr.addressing.objectkey: vendor, POA path, object id), or its printable "
          "characters"),
    Field("interface", "string", "repository id of the target's interface, when known "
          "(from object references seen in the traffic or given with `--ior`)",
          "endpoint", "", "rpc.service"),
    Field("operation", "string", "the operation (`_is_a`, `_non_existent`, ... for the "
          "ORB's own)", "operation", "", "rpc.method"),
    Field("reply_status", "string", "Reply status, or a LocateReply's locate status",
          "", "", "rpc.response.status_code"),
    Field("exception_id", "string", "repository id of the user or system exception",
          "", "error.type", "exception.type"),
    Field("minor_code", "int64", "system exception minor code (the whole 32-bit value)",
          "", "error.code", ""),
    Field("minor_code_name", "string", "the minor code as its vendor's (pycdr's one table: "
          "OMG, omniORB, Sun, JacORB, TAO, Orbix, IBM, VisiBroker): `OMG 2: NoUsableProfile`, "
          "`TAO 0x113: sending the request failed, ECONNRESET`, or `VisiBroker minor 5` for a "
          "code its vendor's table does not name; null when the VMCID is not one pycdr knows"),
    Field("completion_status", "string", "COMPLETED_YES, COMPLETED_NO or COMPLETED_MAYBE"),
    Field("forward_to", "string", "LOCATION_FORWARD / OBJECT_FORWARD target, as an IOR "
          "string"),
    Field("request_bytes", "int64", "the request's size, GIOP header included (joined "
          "fragments: the whole message); a gap row: the bytes missing", "request_body_len",
          "client.bytes", "rpc.request.size"),
    Field("reply_bytes", "int64", "the reply's size, header included", "response_body_len",
          "server.bytes", "rpc.response.size"),
    Field("fragments", "int32", "Fragment messages that carried the request and reply, "
          "beyond their first messages (0: neither was fragmented)"),
    Field("violations", "violations", "GIOP rules broken (the decoder's warning codes), "
          "with the offset in their message"),
    Field("explain", "json", "with `--explain`, for a call a system exception answered: "
          "`pycdr explain`'s verdict of its request (`findings`: each field, offset and rule "
          "it breaks; `clean`; the `answer` and its minor code by its vendor's table)"),
    Field("arguments", "json", "with `--idl`: the in and inout arguments by name",
          "", "", "rpc.request.body"),
    Field("result", "json", "with `--idl`: the return value (`return`) and out/inout "
          "values by name, or the user exception's members", "", "", "rpc.response.body"),
    Field("faults", "json", "`pycdr proxy`: the rules that hit the call, in the order "
          "applied: `{\"rule\": <its number in the rules file>, \"direction\": "
          "\"request\" | \"reply\", \"type\": <action>, <its parameters>}`, with "
          "`\"applied\": false` and `why` when the message had no room for it; null "
          "when none did (and in `pycdr monitor`'s rows)"),
)

NAMES = tuple(f.name for f in FIELDS)
# A row with every field null: rows are made as copies of it (one C-level copy).
EMPTY_ROW = dict.fromkeys(NAMES)
TIMESTAMPS = tuple(f.name for f in FIELDS if f.type == "timestamp")
JSON_VALUES = tuple(f.name for f in FIELDS if f.type == "json")


def arrow_schema():
    """The table's Arrow schema (pyarrow imported here: only Parquet needs it)."""
    import pyarrow as pa
    types = {
        "timestamp": pa.timestamp("ns", tz="UTC"), "int64": pa.int64(), "int32": pa.int32(),
        "bool": pa.bool_(), "string": pa.string(), "json": pa.string(),
        "violations": pa.list_(pa.struct([("message", pa.string()), ("code", pa.string()),
                                          ("offset", pa.int64())])),
    }
    return pa.schema([(f.name, types[f.type]) for f in FIELDS])


class _Rfc3339:
    """Nanosecond timestamps as RFC 3339 text; the seconds part is made once a second."""
    __slots__ = ("second", "text")

    def __init__(self):
        self.second = None
        self.text = ""

    def __call__(self, ns: int) -> str:
        second, fraction = divmod(ns, 1_000_000_000)
        if second != self.second:
            self.text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self.second = second
        return f"{self.text}.{fraction:09d}Z"


timestamp_text = _Rfc3339()
_encode = json.JSONEncoder(ensure_ascii=True).encode


def row_json(row: dict) -> str:
    """A row as one line of JSON (no newline), fields in table order."""
    out = dict(row)
    for name in TIMESTAMPS:
        ns = out[name]
        if ns is not None:
            out[name] = timestamp_text(ns)
    return _encode(out)


def markdown_table() -> str:
    """The field list of docs/monitor.md: name, type, meaning, Zeek/ECS/OTel names."""
    lines = ["| field | type | meaning | Zeek | ECS | OpenTelemetry |",
             "|---|---|---|---|---|---|"]
    for f in FIELDS:
        cells = [f"`{f.name}`", f.type, f.doc, f.zeek, f.ecs, f.otel]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines += ["", "| outcome | meaning |", "|---|---|"]
    lines += [f"| `{name}` | {doc} |" for name, doc in OUTCOMES.items()]
    return "\n".join(lines) + "\n"
