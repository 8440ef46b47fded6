"""Code set negotiation (CORBA 3.x Part 2, 7.10.2.6): the server publishes
TAG_CODE_SETS in its IORs; the client picks transmission code sets from it and
sends them in a CodeSets service context with its first request on a
connection (GIOP 1.1 and later); they hold for the connection."""

from __future__ import annotations

from .. import codesets as cs
from ..addressing.iiop import CodeSetsComponent

# What this ORB publishes: native ISO-8859-1 with UTF-8 conversion for char;
# native UTF-16 with UCS-2 conversion for wchar (both the CDR core handles).
SERVER_CODE_SETS = CodeSetsComponent(cs.ISO_8859_1, (cs.UTF_8,), cs.UTF_16, (cs.UCS_2_L1,))


def acceptable(char_data: int, wchar_data: int) -> bool:
    """Whether a CodeSets context's choice can be served here.  A TCS-W of 0
    means the client chose none (omniORB sends that with GIOP 1.1): fine
    until it sends wchar data, which is then read in the default UTF-16."""
    return char_data in cs.CHAR_CODECS and (wchar_data == 0 or wchar_data in cs.WCHAR_UNITS)


def choose(server: CodeSetsComponent | None) -> tuple[int, int]:
    """The (TCS-C, TCS-W) a client uses with a server publishing ``server``
    (None: the IOR had no code set component; use the CORBA defaults)."""
    if server is None:
        return cs.DEFAULT_TCS_C, cs.DEFAULT_TCS_W
    return (_pick(server.char_native, server.char_conversion, cs.CHAR_CODECS, cs.DEFAULT_TCS_C),
            _pick(server.wchar_native, server.wchar_conversion, cs.WCHAR_UNITS,
                  cs.DEFAULT_TCS_W))


def _pick(native: int, conversion: tuple, supported, fallback: int) -> int:
    # The spec's order: the server's native set if the client can use it,
    # else one of its conversion sets, else the fallback (UTF-8 / UTF-16).
    if native in supported:
        return native
    for code_set in conversion:
        if code_set in supported:
            return code_set
    return fallback
