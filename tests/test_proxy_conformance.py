"""Transparency: the server conformance suite run through `pycdr proxy` against the
reference ORB gives the same verdict for every case as run directly (malformed
messages, fragments, versions and byte orders included)."""

import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor

from pycdr_serve import PYCDR, serving_echo
from pycdr.conformance.suite import Suite


def test_the_server_suite_gives_the_same_verdicts_through_the_proxy():
    with serving_echo() as (server, ior, url):
        proxy = subprocess.Popen(PYCDR + ["proxy", "--listen", "127.0.0.1:0", "--target", ior,
                                          "-q"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            proxied = proxy.stdout.readline().strip()
            assert proxied.startswith("IOR:"), proxy.stderr.read()
            with ThreadPoolExecutor(max_workers=2) as pool:
                direct, through = pool.map(lambda target: Suite(target).run_all(),
                                           [ior, proxied])
        finally:
            proxy.send_signal(signal.SIGTERM)
            _, err = proxy.communicate(timeout=20)
    assert proxy.returncode == 0, err
    assert len(direct.results) == len(through.results) > 500
    differing = [(a.case.id, a.verdict, b.verdict, b.reason)
                 for a, b in zip(direct.results, through.results)
                 if (a.case.id, a.verdict) != (b.case.id, b.verdict)]
    assert differing == []
