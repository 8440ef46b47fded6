import os
import signal
import sys

# Helper modules under tests/ (peers, oracles) import as top-level names.
sys.path.insert(0, os.path.dirname(__file__))

# A suite started in the background of a script (.ci/run runs the pure-Python pass so,
# beside the C pass) inherits SIGINT ignored, and so would every pycdr process a test
# starts: Python then installs no KeyboardInterrupt handler and the tests that press
# Ctrl-C on a command would see it ignored. The tests stand for a terminal's Ctrl-C.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# --- issue 7: run a test against both marshal implementations ----------------------
import pytest  # noqa: E402


@pytest.fixture(params=["c", "python"])
def impl(request):
    """The marshal implementation under test, as cbor2's ``impl`` fixture: "c" runs
    pycdr.codec.marshal through pycdr.codec._speedups (skipped when it is not built or
    PYCDR_PURE=1), "python" switches the C path off for the test."""
    from pycdr.codec import marshal
    if marshal.IMPLEMENTATION != "c":
        if request.param == "c":
            pytest.skip("pycdr.codec._speedups not in use (not built, or PYCDR_PURE=1)")
        yield request.param
        return
    from pycdr.codec import _cmarshal
    _cmarshal.enabled = request.param == "c"
    try:
        yield request.param
    finally:
        _cmarshal.enabled = True


# --- issue 28: the replay tests run as recorded and pipelined ----------------------
# The CLI arguments tests/test_replay*.py add to every `pycdr replay` they run.
REPLAY_WINDOW = ["--window", "1"]


@pytest.fixture(params=[1, 8], ids=["window1", "window8"])
def replay_window(request):
    """--window 1 (as recorded) and --window 8 (pipelined): a replay test that uses this
    fixture runs with each, and the outcomes must be the same."""
    REPLAY_WINDOW[1] = str(request.param)
    yield request.param
    REPLAY_WINDOW[1] = "1"
