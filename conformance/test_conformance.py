"""The conformance cases as pytest tests (see plugin.py for the options)."""

import pytest

from pycdr.conformance.plugin import client_suite_for, conformance_suite_for
from pycdr.conformance.runner import FAIL, NOT_RUN, TOLERATED


def pytest_generate_tests(metafunc):
    if "conformance_case" in metafunc.fixturenames:
        suite = client_suite_for(metafunc.config) or conformance_suite_for(metafunc.config)
        metafunc.parametrize("conformance_case", suite.cases, ids=[c.id for c in suite.cases])


def test_case(conformance_case, request, record_property):
    suite = client_suite_for(request.config) or conformance_suite_for(request.config)
    result = suite.run_case(conformance_case)
    record_property("spec", conformance_case.spec)
    record_property("outcome", str(result.outcome))
    if result.verdict == NOT_RUN:
        pytest.skip(result.reason)
    if result.verdict == TOLERATED:
        record_property("tolerated", result.reason)
        record_property("tolerated_reason", result.reason_code)
    assert result.verdict != FAIL, (
        f"{conformance_case.title} [{conformance_case.spec}]: got {result.outcome}; "
        f"{result.reason}\nsent: {' '.join(b.hex() for b in result.sent)}\n"
        f"received: {result.received.hex()}")
