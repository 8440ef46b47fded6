"""The one mapping between pycdr's expected decodings (captures/*.json, from
pycdr.capture.giop) and the Lua dissector's fields (dissector/pycdr_giop.lua), and
the tshark runner the dissector tests share.

``expected_fields(entry)`` says, for one decoded GIOP message, which values
each giopx field must show; ``tshark_messages(pcap)`` gives the giopx
instances tshark shows per frame, each as {field: [values]}.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess

from pycdr.giop.header import MsgType
from pycdr.giop.messages import AddressingDisposition, LocateStatus, ReplyStatus
from pycdr.codec.ior import ior_from_string

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLUGIN = os.path.join(ROOT, "dissector", "pycdr_giop.lua")
CAPTURES = os.path.join(ROOT, "captures")


def corpus_pcaps() -> list:
    """Every capture of the corpus: the synthetic ones and the real sessions (captures/real/)."""
    return sorted(glob.glob(os.path.join(CAPTURES, "*.pcap"))) + \
        sorted(glob.glob(os.path.join(CAPTURES, "real", "*.pcap")))
TSHARK = shutil.which("tshark")


def lua_field_names() -> set:
    """Every field the plugin declares (`field("name", ...)` in the Lua source)."""
    with open(PLUGIN) as f:
        return {"giopx." + m for m in re.findall(r'^field\("([^"]+)"', f.read(), re.M)}


def _enum_value(enum_cls, name: str) -> str:
    if name.startswith("invalid("):
        return name[len("invalid("):-1]
    return str(int(enum_cls[name]))


def expected_fields(entry: dict) -> dict:
    """giopx field -> the list of values tshark must show for this message."""
    out: dict = {}

    def put(name, *values):
        out.setdefault(name, []).extend(str(v) for v in values)
    if "error" in entry:
        put("giopx.error", entry["error"]["kind"])
        return out
    put("giopx.version", entry["version"])
    put("giopx.type", int(MsgType[entry["type"]]))
    put("giopx.little_endian", int(entry["little_endian"]))
    put("giopx.more_fragments", int(entry["more_fragments"]))
    put("giopx.message_size", entry["message_size"])
    if "request_id" in entry:
        put("giopx.request_id", entry["request_id"])
    if "operation" in entry:
        put("giopx.operation", entry["operation"])
    if "response_flags" in entry:
        put("giopx.response_flags", entry["response_flags"])
    if "response_expected" in entry:
        put("giopx.response_expected", int(entry["response_expected"]))
    target = entry.get("target")
    if target is not None:
        if entry["version"] in ("1.2", "1.3"):
            put("giopx.target.disposition", int(AddressingDisposition[target["disposition"]]))
        if "object_key_text" in target:
            put("giopx.object_key_text", target["object_key_text"])
    for c in entry.get("service_contexts", []):
        put("giopx.sc.id", c["context_id"])
        put("giopx.sc.vscid", c["context_id"] >> 8)
        put("giopx.sc.scid", c["context_id"] & 0xFF)
        if "message" in c:
            put("giopx.sc.message", c["message"])
        if "priority" in c:
            put("giopx.sc.priority", c["priority"])
    if "reply_status" in entry:
        put("giopx.reply_status", _enum_value(ReplyStatus, entry["reply_status"]))
    if "locate_status" in entry:
        put("giopx.locate_status", _enum_value(LocateStatus, entry["locate_status"]))
    if entry.get("body_offset") is not None:
        put("giopx.body_offset", entry["body_offset"])
    sysex = entry.get("system_exception")
    if sysex:
        put("giopx.sysex.id", sysex["exception_id"])
        put("giopx.sysex.minor", sysex["minor"])
        completed = sysex["completed"]
        put("giopx.sysex.completed", completed[len("invalid("):-1] if completed.startswith("invalid(")
            else ["COMPLETED_YES", "COMPLETED_NO", "COMPLETED_MAYBE"].index(completed))
    if "exception_id" in entry:
        put("giopx.exception_id", entry["exception_id"])
    if "addressing_disposition" in entry:
        put("giopx.addressing_disposition",
            _enum_value(AddressingDisposition, entry["addressing_disposition"]))
    codes = sorted(w["code"] for w in entry.get("warnings", []) if w["severity"] == "warning")
    notes = sorted(w["code"] for w in entry.get("warnings", []) if w["severity"] == "note")
    if codes:
        put("giopx.violation", *codes)
    if notes:
        put("giopx.note", *notes)
    if "request_frame" in entry:
        put("giopx.response_to", entry["request_frame"])
    if "reply_frame" in entry:
        put("giopx.response_in", entry["reply_frame"])
    if "reassembled" in entry:
        put("giopx.reassembled.fragments", entry["reassembled"]["fragments"])
        put("giopx.reassembled.first_frame", entry["reassembled"]["first_frame"])
    decoded = entry.get("decoded")
    if decoded:
        put("giopx.arg.operation", decoded["operation"])
        put("giopx.arg.kind", decoded["kind"])
        for path, text in decoded["values"]:
            put("giopx.arg.path", path)
            put("giopx.arg.value", text)
        if "error" in decoded:
            put("giopx.arg.error", decoded["error"]["kind"])
        for severity, name in (("warning", "giopx.arg.violation"), ("note", "giopx.arg.note")):
            codes = sorted(w["code"] for w in decoded.get("warnings", []) if w["severity"] == severity)
            if codes:
                put(name, *codes)
    return out


def forward_type_id(entry: dict) -> str | None:
    """The type_id of a LOCATION_FORWARD / OBJECT_FORWARD IOR, if any."""
    if "forward" not in entry:
        return None
    return ior_from_string(entry["forward"]).type_id


# Sorted before comparing: pycdr and the plugin may note them in another order.
UNORDERED = {"giopx.violation", "giopx.note", "giopx.arg.violation", "giopx.arg.note"}


def _normalize(name: str, value: str) -> str:
    if name in ("giopx.sc.id", "giopx.sc.vscid", "giopx.sysex.minor"):
        return str(int(value, 0))
    if name in ("giopx.little_endian", "giopx.more_fragments", "giopx.response_expected"):
        return {"True": "1", "False": "0"}.get(value, value)
    return value


def _collect(node, out: dict) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key.startswith("giopx.") and not key.endswith("_tree") and \
                    not isinstance(value, dict):
                values = value if isinstance(value, list) else [value]
                for v in values:
                    if isinstance(v, str):
                        out.setdefault(key, []).append(_normalize(key, v))
                    else:
                        _collect(v, out)
            else:
                _collect(value, out)
    elif isinstance(node, list):
        for item in node:
            _collect(item, out)


def run_tshark(pcap: str, extra=()) -> subprocess.CompletedProcess:
    argv = [TSHARK, "-2", "-n", "-X", f"lua_script:{PLUGIN}", "--disable-heuristic", "giop_tcp",
            "-o", f"giopx.types_dir:{os.path.join(ROOT, 'dissector', 'types')}",
            "-r", pcap, *extra]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300)


def lua_errors(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in (proc.stdout + proc.stderr).splitlines() if "Lua Error" in line
            or "lua_script" in line.lower() and "error" in line.lower()]


def tshark_messages(pcap: str) -> tuple[dict, list]:
    """frame number -> [ {giopx field: [values]} per giopx instance ], and Lua errors."""
    proc = run_tshark(pcap, ["-T", "json", "--no-duplicate-keys", "-J", "frame giopx"])
    errors = lua_errors(proc)
    frames: dict = {}
    for pkt in json.loads(proc.stdout or "[]"):
        layers = pkt["_source"]["layers"]
        number = int(layers["frame"]["frame.number"])
        instances = layers.get("giopx")
        if instances is None:
            continue
        if isinstance(instances, dict):
            instances = [instances]
        msgs = []
        for inst in instances:
            fields: dict = {}
            _collect(inst, fields)
            msgs.append(fields)
        frames[number] = msgs
    return frames, errors
