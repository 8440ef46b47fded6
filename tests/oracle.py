"""omniORBpy as an oracle: marshal the same TypeCode and value with omniORB's
C++ core and compare bytes with pycdr's, padding masked.

omniORB leaves alignment padding uninitialised, so the comparison masks the
padding positions of pycdr's own layout: they are found by decoding pycdr's
bytes with a reader that records every padding run it skips.
"""

from __future__ import annotations

import functools

from pycdr.codec.cdr import CDRReader
from pycdr.codec.marshal import read_value
from pycdr.codec.tcmarshal import encode_typecode_encapsulation, read_typecode


@functools.lru_cache(maxsize=None)
def omni():
    """The omniORB module with an initialised ORB (cdrMarshal needs one), or None."""
    try:
        import omniORB
        from omniORB import CORBA
    except ImportError:
        return None
    CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
    return omniORB


def omni_typecode(tc):
    """omniORB's TypeCode for a pycdr TypeCode, built from pycdr's CDR encoding."""
    omniORB = omni()
    from omniORB import CORBA
    return omniORB.cdrUnmarshal(CORBA.TC_TypeCode, encode_typecode_encapsulation(tc))


class PaddingRecorder(CDRReader):
    """A reader that records the positions of every padding byte it skips."""

    __slots__ = ("pads",)

    def _check_pad(self, start, stop):
        self.pads.update(range(start, stop))

    def sub_reader(self, start, end):
        sub = super().sub_reader(start, end)
        sub.pads = self.pads
        return sub


def padding_positions(data: bytes, tc=None, *, typecode=False, stream_little=None) -> set:
    """Padding positions in an encapsulation of a value (or of a TypeCode), or,
    with ``stream_little`` set, in a bare stream aligned from its first byte."""
    r = PaddingRecorder(data, lenient=True, check_padding=True,
                        little=bool(stream_little))
    r.pads = set()
    if stream_little is None:
        r.read_encapsulation_byte_order()
    r.context = {}
    if typecode:
        read_typecode(r)
    else:
        read_value(r, tc)
    assert r.pos == len(data), "pycdr did not consume its own encoding"
    return r.pads


def masked(data: bytes, positions: set) -> bytes:
    return bytes(0 if i in positions else b for i, b in enumerate(data))
