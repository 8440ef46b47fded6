"""The echo operations of tests/peers/echo.idl and the text form their values take between a test
and the omniORBpy client process (command-line arguments in, JSON lines out; the JacORB client
takes CDR instead, see jacorb_interface.py).

The text form carries every value exactly whatever the locale:
long as decimal, double as the 16 hex digits of its IEEE-754 bits, string/wstring/wchar as the hex
of their UTF-8 bytes, octets as hex.
"""

import json
import struct

# operation name -> kind of its single parameter (and result)
ECHO_OPERATIONS = {
    "echo_long": "long",
    "echo_double": "double",
    "echo_string": "string",
    "echo_wstring": "wstring",
    "echo_wchar": "wchar",
    "echo_octets": "octets",
}

ECHO_REPOSITORY_ID = "IDL:PycdrTest/Echo:1.0"


def _kind(operation):
    try:
        return ECHO_OPERATIONS[operation]
    except KeyError:
        raise ValueError(f"unknown echo operation {operation!r}; known: {sorted(ECHO_OPERATIONS)}") from None


def to_text(operation, value):
    """The text form of `value` as the argument or result of `operation`."""
    kind = _kind(operation)
    if kind == "long":
        return str(int(value))
    if kind == "double":
        return struct.pack(">d", value).hex()
    if kind in ("string", "wstring", "wchar"):
        return value.encode("utf-8", "surrogatepass").hex()
    return bytes(value).hex()


def from_text(operation, text):
    """The Python value (omniORBpy mapping: int, float, str, bytes) of a text form."""
    kind = _kind(operation)
    if kind == "long":
        return int(text)
    if kind == "double":
        return struct.unpack(">d", bytes.fromhex(text))[0]
    if kind in ("string", "wstring", "wchar"):
        return bytes.fromhex(text).decode("utf-8", "surrogatepass")
    return bytes.fromhex(text)


def call_arguments(calls):
    """Command-line words "operation=text" for a client program, from (operation, value) pairs."""
    return [f"{operation}={to_text(operation, value)}" for operation, value in calls]


def parse_client_output(lines):
    """The JSON lines a client program printed, with each "result" turned back into its Python
    value. Exception entries ("exception", "minor", "completed") are passed on as they are."""
    results = []
    for line in lines:
        entry = json.loads(line)
        if "result" in entry:
            entry["result"] = from_text(entry["op"], entry["result"])
        results.append(entry)
    return results
