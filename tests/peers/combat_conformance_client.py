"""Combat (the Tcl ORB) as a conformance client command (pycdr conformance --client):

    python combat_conformance_client.py {ior} {operation} {args} {count}

The JSON arguments become Combat's Tcl mapping here, by the types pycdr reads from
conformance/echo.idl (structs as {member value ...}, unions as {discriminator value}, enums by
name, sequences and arrays as lists, an octet as a one-character string and sequence<octet> as a
string of the octets, an any as {typecode value}); tests/peers/combat/conformance_client.tcl makes the call(s) and prints each
answer as Tcl text; this turns it back into the contract's JSON line.

Combat reaches the object by its IOR (the repository id there names the interface pycdr wrote
into Combat's local interface repository), so it does not ask the object for `_interface` first
(by a corbaloc URL it would). It has no call timeout: a server that never answers leaves it
waiting (the suite kills it after the case's time: "hung").
"""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from peers.combat import tclsh_command, write_interface  # noqa: E402
from pycdr.conformance.echo import ECHO_INTERFACE, load_echo_module  # noqa: E402
from pycdr.giop.sysexc import CompletionStatus  # noqa: E402
from pycdr.codec.typecode import TCKind as K  # noqa: E402

# The any's contract type names and Combat's names of those TypeCodes.
ANY_TYPES = {"long": "long", "double": "double", "string": "string", "boolean": "boolean",
             "longlong": "{long long}", "octet": "octet"}
ANY_NAMES = {"long": "long", "double": "double", "string": "string", "boolean": "boolean",
             "long long": "longlong", "octet": "octet"}
PROCESS_TIMEOUT = 60
# The operations this driver cannot express (run_client_suite's ``unsupported``: their cases are
# not run for Combat, with the reason given): Combat passes inout/out parameters by Tcl variable
# name, returns an object reference as a handle and reaches attributes by the attribute's name,
# none of which this driver's one-line call maps (MARSHAL before anything is sent); and a oneway
# note returned with no Request seen by the server.
UNSUPPORTED = {
    "echo_object": "a reference argument and result are Combat object handles (not mapped)",
    "echo_inout": "inout values are Tcl variable names in Combat's call (not mapped)",
    "echo_multi": "inout values are Tcl variable names in Combat's call (not mapped)",
    "note": "the call returns, but no Request reaches the server before the process exits",
    "_get_counter": "Combat reaches an attribute as `$obj counter`, not `_get_counter`",
    "_set_counter": "Combat reaches an attribute as `$obj counter value`, not `_set_counter`",
}
SPECIAL = set(' \t\n\r{}[]"\\$;')


def _unalias(t):
    while t.kind() == K.tk_alias:
        t = t.content_type()
    return t


def tcl_word(text: str) -> str:
    """``text`` as one element of a Tcl list."""
    if text and not SPECIAL & set(text):
        return text
    if "\\" not in text and _braces_balance(text) and not text.endswith("\\"):
        return "{" + text + "}"
    return "".join("\\" + c if c in SPECIAL else c for c in text) or "{}"


def _braces_balance(text: str) -> bool:
    depth = 0
    for c in text:
        depth += {"{": 1, "}": -1}.get(c, 0)
        if depth < 0:
            return False
    return depth == 0


def tcl_list(words) -> str:
    return " ".join(tcl_word(w) for w in words)


def to_tcl(t, value) -> str:
    """Combat's Tcl text for the contract JSON ``value`` of pycdr type ``t``."""
    t = _unalias(t)
    k = t.kind()
    if k in (K.tk_struct, K.tk_except):
        words = []
        for i in range(t.member_count()):
            words += [t.member_name(i), to_tcl(t.member_type(i), value[t.member_name(i)])]
        return tcl_list(words)
    if k == K.tk_union:
        for i in range(t.member_count()):
            if i != t.default_index() and _label(t, i) == value["d"]:
                return tcl_list([to_tcl(t.discriminator_type(), value["d"]),
                                 to_tcl(t.member_type(i), value["v"])])
        return tcl_list([to_tcl(t.discriminator_type(), value["d"]),
                         to_tcl(t.member_type(t.default_index()), value["v"])])
    if k in (K.tk_sequence, K.tk_array):
        content = _unalias(t.content_type())
        if content.kind() == K.tk_octet:
            octets = bytes.fromhex(value) if isinstance(value, str) else bytes(value)
            return octets.decode("latin-1")
        return tcl_list(to_tcl(content, v) for v in value)
    if k == K.tk_any:
        inner = value["value"]
        return tcl_list([ANY_TYPES[value["type"]],
                         chr(inner) if value["type"] == "octet" else to_tcl_scalar(inner)])
    if k == K.tk_octet:
        return chr(value)                # Combat's octet is a one-character (binary) string
    return to_tcl_scalar(value)


def to_tcl_scalar(value) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _label(t, i):
    label = t.member_label(i)
    d_type = _unalias(t.discriminator_type())
    if d_type.kind() == K.tk_enum and isinstance(label, int):
        return d_type.member_name(label)
    return label


def split_tcl_list(text: str) -> list:
    """The elements of a Tcl list (braces, quotes and backslashes as Tcl reads them)."""
    out, i, n = [], 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return out
        if text[i] == "{":
            depth, j = 1, i + 1
            while j < n and depth:
                if text[j] == "\\":
                    j += 1
                elif text[j] == "{":
                    depth += 1
                elif text[j] == "}":
                    depth -= 1
                j += 1
            out.append(text[i + 1:j - 1])
            i = j
        else:
            quoted = text[i] == '"'
            j, word = i + 1 if quoted else i, []
            while j < n and (text[j] != '"' if quoted else not text[j].isspace()):
                if text[j] == "\\" and j + 1 < n:
                    j += 1
                    word.append({"n": "\n", "t": "\t", "r": "\r"}.get(text[j], text[j]))
                else:
                    word.append(text[j])
                j += 1
            out.append("".join(word))
            i = j + 1 if quoted else j


def from_tcl(t, text: str):
    """The contract JSON for Combat's Tcl text of a value of pycdr type ``t``."""
    t = _unalias(t)
    k = t.kind()
    if k in (K.tk_struct, K.tk_except):
        words = split_tcl_list(text)
        members = dict(zip(words[::2], words[1::2]))
        return {t.member_name(i): from_tcl(t.member_type(i), members.get(t.member_name(i), ""))
                for i in range(t.member_count())}
    if k == K.tk_union:
        d_text, v_text = (split_tcl_list(text) + ["", ""])[:2]
        d = from_tcl(t.discriminator_type(), d_text)
        index = next((i for i in range(t.member_count())
                      if i != t.default_index() and _label(t, i) == d), t.default_index())
        return {"d": d, "v": from_tcl(t.member_type(index), v_text)}
    if k in (K.tk_sequence, K.tk_array):
        content = _unalias(t.content_type())
        if content.kind() == K.tk_octet:
            return text.encode("latin-1", "replace").hex()
        return [from_tcl(content, w) for w in split_tcl_list(text)]
    if k == K.tk_any:
        type_name, value = (split_tcl_list(text) + ["", ""])[:2]
        name = ANY_NAMES.get(type_name.strip("{}"), type_name)
        kind = {"long": K.tk_long, "longlong": K.tk_longlong, "octet": K.tk_octet,
                "double": K.tk_double, "boolean": K.tk_boolean}.get(name, K.tk_string)
        return {"type": name, "value": _scalar(kind, value)}
    if k == K.tk_void:
        return None
    return _scalar(k, text)


def _scalar(k, text):
    if k == K.tk_octet and len(text) == 1:
        return ord(text)
    try:
        if k in (K.tk_short, K.tk_ushort, K.tk_long, K.tk_ulong, K.tk_longlong, K.tk_ulonglong):
            return int(text)
        if k in (K.tk_float, K.tk_double):
            return float(text)
        if k == K.tk_boolean:
            return text.lower() in ("1", "true")
    except ValueError:
        return text                      # reported as it came: judged a wrong value
    return text


def exception_line(operation, text: str) -> dict:
    """The contract's line for an exception as Combat raises it: "<repository id> {members}"
    (a system exception's members: minor_code_value, completion_status)."""
    words = split_tcl_list(text)
    repo_id = words[0] if words else text
    members = split_tcl_list(words[1]) if len(words) > 1 else []
    fields = dict(zip(members[::2], members[1::2]))
    if repo_id.startswith("IDL:omg.org/CORBA/"):
        completed = fields.get("completion_status", "")
        if completed in CompletionStatus.__members__:
            completed = CompletionStatus[completed].name
        minor = fields.get("minor_code_value", "0")
        return {"system_exception": {"exception_id": repo_id, "completed": completed,
                                     "minor": int(minor) if minor.lstrip("-").isdigit()
                                     else minor}}
    declared = next((e for e in operation.raises if e.id() == repo_id), None)
    members_json = from_tcl(declared, words[1]) if declared and len(words) > 1 else None
    return {"user_exception": {"id": repo_id, "members": members_json}}


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit("usage: combat_conformance_client.py IOR OPERATION ARGS_JSON [COUNT]")
    reference, op_name, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    count = int(sys.argv[4]) if len(sys.argv) == 5 else 1
    interface = load_echo_module().interfaces[ECHO_INTERFACE]
    operation = interface.all_operations()[op_name]
    words = [to_tcl(p.type, a) for p, a in zip(operation.in_params, args)]
    with tempfile.TemporaryDirectory(prefix="pycdr-combat-conformance-") as work_dir:
        interface_tcl = write_interface(interface, work_dir)
        args_file = os.path.join(work_dir, "args.tcl")
        with open(args_file, "w", encoding="utf-8") as f:
            f.write(tcl_list(words))
        argv = tclsh_command("conformance_client.tcl") + [interface_tcl, reference, op_name, args_file,
                                                   str(count)]
        completed = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                                   text=True, timeout=PROCESS_TIMEOUT)
    sys.stderr.write(completed.stderr)
    for line in completed.stdout.splitlines():
        status, _, hex_text = line.partition(" ")
        if status not in ("ok", "exception"):
            continue
        text = bytes.fromhex(hex_text).decode("utf-8")
        if status == "ok":
            print(json.dumps({"result": from_tcl(operation.result, text)}), flush=True)
        else:
            print(json.dumps(exception_line(operation, text)), flush=True)
    sys.exit(completed.returncode)


if __name__ == "__main__":
    main()
