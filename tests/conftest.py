import os
import sys

# Helper modules under tests/ (peers, oracles) import as top-level names.
sys.path.insert(0, os.path.dirname(__file__))


# --- issue 7: run a test against both marshal implementations ----------------------
import pytest  # noqa: E402


@pytest.fixture(params=["c", "python"])
def impl(request):
    """The marshal implementation under test, as cbor2's ``impl`` fixture: "c" runs
    pycdr.marshal through pycdr._speedups (skipped when it is not built or
    PYCDR_PURE=1), "python" switches the C path off for the test."""
    from pycdr import marshal
    if marshal.IMPLEMENTATION != "c":
        if request.param == "c":
            pytest.skip("pycdr._speedups not in use (not built, or PYCDR_PURE=1)")
        yield request.param
        return
    from pycdr import _cmarshal
    _cmarshal.enabled = request.param == "c"
    try:
        yield request.param
    finally:
        _cmarshal.enabled = True
