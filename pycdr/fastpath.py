"""Whether pycdr's C extensions may be used: ``PYCDR_PURE=1`` in the environment asks every
module with a C fast path (CDR plans, pcap walking, replay lanes, edge-map scans) for its
pure-Python twin instead. The two paths give the same results byte for byte; the switch
lets the test suite run both and a user rule out the C path when something looks wrong."""

import os

PURE_VARIABLE = "PYCDR_PURE"


def c_allowed() -> bool:
    """False when the environment asks for the pure-Python path."""
    return os.environ.get(PURE_VARIABLE) != "1"
