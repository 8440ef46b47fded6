"""Whole-catalog client suite runs shared by the test modules of one pytest session: the
conformance matrix (tests/test_conformance_client.py) and the proxy's transparency test
(tests/test_proxy_conformance.py) compare with the same direct run of a client, made once
(a run is minutes of client processes)."""

import threading
from concurrent.futures import Future, ThreadPoolExecutor

from pycdr.conformance.client_runner import run_client_suite

_lock = threading.Lock()
_runs: dict = {}
_pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="client-suite")


def whole_catalog_run(command: str, options: dict) -> Future:
    """The Future of the whole client catalog run by ``command`` with run_client_suite's
    ``options``: started by the first caller, the same Future for the next ones."""
    key = (command, repr(sorted(options.items())))
    with _lock:
        if key not in _runs:
            _runs[key] = _pool.submit(run_client_suite, command, **options)
        return _runs[key]
