"""Transmission code sets (OSF code set registry ids) for char and wchar data.

char data is byte oriented: one octet per char, multi-octet code sets (UTF-8)
only in strings.  wchar data uses the TCS-W: UTF-16 (the CORBA default), UCS-2
(UTF-16 without surrogates), or UCS-4.
"""

from __future__ import annotations

ISO_8859_1 = 0x00010001
ISO_8859_15 = 0x0001000F
ASCII = 0x00010020
UTF_8 = 0x05010001
UCS_2_L1 = 0x00010100
UCS_2_L2 = 0x00010101
UCS_2_L3 = 0x00010102
UCS_4 = 0x00010106
UTF_16 = 0x00010109
WINDOWS_1252 = 0x100204E4

DEFAULT_TCS_C = ISO_8859_1
DEFAULT_TCS_W = UTF_16

NAMES = {
    ISO_8859_1: "ISO-8859-1",
    ISO_8859_15: "ISO-8859-15",
    ASCII: "ISO-646 (ASCII)",
    UTF_8: "UTF-8",
    UCS_2_L1: "UCS-2 Level 1",
    UCS_2_L2: "UCS-2 Level 2",
    UCS_2_L3: "UCS-2 Level 3",
    UCS_4: "UCS-4",
    UTF_16: "UTF-16",
    WINDOWS_1252: "Windows-1252",
}

# Python codec for each char code set this library can transmit.
CHAR_CODECS = {
    ISO_8859_1: "latin-1",
    ISO_8859_15: "iso8859-15",
    ASCII: "ascii",
    UTF_8: "utf-8",
    WINDOWS_1252: "cp1252",
}

# Wide code sets: (octets per code unit, allows surrogate pairs).
WCHAR_UNITS = {
    UTF_16: (2, True),
    UCS_2_L1: (2, False),
    UCS_2_L2: (2, False),
    UCS_2_L3: (2, False),
    UCS_4: (4, False),
}


def name(code_set: int) -> str:
    return NAMES.get(code_set, f"0x{code_set:08x}")
