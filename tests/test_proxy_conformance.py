"""Transparency: the conformance suites give the same verdict for every case through
`pycdr proxy` as directly, with no rule set.

- The server suite (every case: malformed messages, fragments, versions and byte orders
  included) against the reference ORB, omniORBpy's server and JacORB's server. Where a
  peer's answer to a bad message differs from what the proxy's own checks would say, the
  peer's answer must still be what the suite sees.
- The client suite, each case's crafted server behind a proxy of its own: omniORBpy's,
  JacORB's, the OpenJDK ORB's and the GlassFish ORB's clients on the whole catalog (the Java
  clients as batch commands: one JVM a run, an ORB a case). The direct run of a whole
  catalog is the conformance matrix's (tests/test_conformance_client.py) when the session has
  made it. NOT_FOR names the cases no proxy can hold, VERDICT_ONLY those whose outcome may
  differ while the verdict may not.

A case whose verdict differs fails the test, named with both verdicts."""

import contextlib
import os
import signal
import subprocess
import sys
import types
from concurrent.futures import ThreadPoolExecutor

import pytest

from pycdr_serve import PYCDR, serving_echo
from pycdr.conformance.suite import Suite

PEERS = pytest.mark.skipif(os.environ.get("PYCDR_PURE") == "1",
                           reason="the peers do not use pycdr's codec: run once, in the "
                                  "C-path pass")


@contextlib.contextmanager
def proxy_in_front_of(ior, stderr):
    """`pycdr proxy` with no rule in front of ``ior``: yields the IOR through it."""
    proxy = subprocess.Popen(PYCDR + ["proxy", "--listen", "127.0.0.1:0", "--target", ior,
                                      "-q"],
                             stdout=subprocess.PIPE, stderr=stderr, text=True)
    try:
        proxied = proxy.stdout.readline().strip()
        assert proxied.startswith("IOR:"), "the proxy did not start"
        yield proxied
    finally:
        proxy.send_signal(signal.SIGTERM)
        proxy.communicate(timeout=20)
    assert proxy.returncode == 0


def differing(direct, through) -> list:
    """(case, verdict directly, verdict through the proxy, why) of each case that differs."""
    assert [r.case.id for r in direct.results] == [r.case.id for r in through.results]
    return [(a.case.id, a.verdict, b.verdict, b.reason)
            for a, b in zip(direct.results, through.results) if a.verdict != b.verdict]


def outcome(result) -> tuple:
    """A client case's result as the client saw it: (verdict, outcome kind, the system
    exception's name)."""
    kind = result.outcome.kind if result.outcome else None
    name = result.outcome.details.get("name") if kind == "system_exception" else None
    return result.verdict, kind, name


def differing_outcomes(direct, through, verdict_only=frozenset()) -> list:
    """(case, outcome directly, outcome through the proxy) of each client case that
    differs (for the cases of ``verdict_only``, in its verdict)."""
    assert [r.case.id for r in direct.results] == [r.case.id for r in through.results]
    return [(a.case.id, outcome(a), outcome(b))
            for a, b in zip(direct.results, through.results)
            if (a.verdict != b.verdict if a.case.id in verdict_only
                else outcome(a) != outcome(b))]


def test_the_server_suite_gives_the_same_verdicts_through_the_proxy(tmp_path):
    with serving_echo() as (server, ior, url), \
            open(tmp_path / "proxy.err", "w") as err, proxy_in_front_of(ior, err) as proxied:
        with ThreadPoolExecutor(max_workers=2) as pool:
            direct, through = pool.map(lambda target: Suite(target).run_all(),
                                       [ior, proxied])
    assert len(direct.results) == len(through.results) > 500
    assert differing(direct, through) == []


@pytest.fixture(scope="module")
def peer_server_runs(tmp_path_factory):
    """The server suite against omniORBpy's and JacORB's servers, directly and through a
    proxy each, the four runs at once (most of a run is waiting on the peer): ``runs``,
    label -> (direct run, run through the proxy); ``again(label, case ids)``, those cases
    run once more both ways, alone."""
    from peers.jacorb import start_jacorb_echo_server
    from peers.omni import start_omni_echo_server
    from peers.process import PeerNotInstalled
    from pycdr.conformance.echo import ECHO_IDL, ECHO_INTERFACE, load_echo_module
    echo = load_echo_module().interfaces[ECHO_INTERFACE]
    logs = tmp_path_factory.mktemp("proxies")
    with contextlib.ExitStack() as stack:
        # omniORBpy aborts on wchar data: no wide characters for it (as in the matrix)
        omni = stack.enter_context(start_omni_echo_server(idl=ECHO_IDL,
                                                          interface=ECHO_INTERFACE,
                                                          object_id="Echo"))
        try:
            jacorb = stack.enter_context(start_jacorb_echo_server(interface=echo))
        except PeerNotInstalled as e:
            pytest.skip(f"JacORB not installed: {e}")
        jobs = {}
        for label, peer, options in (("omniORBpy", omni, {"wide_chars": False}),
                                     ("JacORB", jacorb, {})):
            err = stack.enter_context(open(logs / f"{label}.err", "w"))
            proxied = stack.enter_context(proxy_in_front_of(peer.ior, err))
            jobs[label] = [(peer.ior, options), (proxied, options)]
        with ThreadPoolExecutor(max_workers=4) as pool:
            futures = {label: [pool.submit(lambda t, o: Suite(t, **o).run_all(), *job)
                               for job in pair] for label, pair in jobs.items()}
            runs = {label: tuple(f.result() for f in pair) for label, pair in futures.items()}

        def again(label, case_ids):
            def run(target, options):
                suite = Suite(target, **options)
                return types.SimpleNamespace(results=[suite.run_case(c) for c in suite.cases
                                                      if c.id in case_ids])
            return tuple(run(*job) for job in jobs[label])
        yield types.SimpleNamespace(runs=runs, again=again)


def judged_again(label, compare, first, again):
    """``compare(direct, through)`` of the ``first`` runs; when it finds cases that differ,
    of those cases run once more, alone (``again(case ids)``), so that a race on a loaded
    machine is not taken for the proxy's doing. The module's runs are made once: pytest's
    own rerun would judge the same results again. The first differences are printed."""
    found = compare(*first)
    if found:
        print(f"{label}: run again, differing the first time: {found}")
        found = compare(*again({f[0] for f in found}))
    return found


@PEERS
@pytest.mark.parametrize("label", ["omniORBpy", "JacORB"])
def test_a_peer_servers_verdicts_are_the_same_through_the_proxy(peer_server_runs, label):
    direct, through = peer_server_runs.runs[label]
    assert len(direct.results) > 500
    # the peers answer the echo cases (the runs reached the servant, both ways)
    assert sum(r.case.group == "echo" and r.verdict == "pass" for r in through.results) > 20
    assert judged_again(label, differing, (direct, through),
                        lambda ids: peer_server_runs.again(label, ids)) == []


# Client cases that cannot hold through a proxy: case id -> (the clients it is left out for,
# None for all; why). The docs' proxy page lists them.
NOT_FOR = {
    "size.trickled-reply[1.2-BE]": (
        None, "the proxy passes a message on when its last byte has come: the client gets "
              "the reply at once, not trickled (the OpenJDK ORB's read timeouts can fail the "
              "trickled reply on a loaded machine, and pass it through the proxy)"),
}
# Client cases whose verdict must be the same both ways but whose outcome may not: case id ->
# (clients, why). The Java ORBs follow a forward loop until their stack overflows (some 4,700
# forwards, "crashed"); through a proxy each forward takes longer and the case's time can run
# out first ("hung"): a fail both ways.
VERDICT_ONLY = {f"forward.loop[{v}-BE]": (("OpenJDK ORB", "GlassFish ORB"),
                                          "a stack overflow or the case's time, whichever "
                                          "comes first") for v in ("1.0", "1.2")}


def for_client(table: dict, label) -> set:
    """The case ids of ``table`` (NOT_FOR, VERDICT_ONLY) that hold for the client ``label``."""
    return {case_id for case_id, (labels, _why) in table.items()
            if labels is None or label in labels}


PARTS = 2                   # a whole catalog's run through proxies: in this many runs at once
CLIENT_LABELS = ("omniORBpy", "JacORB", "OpenJDK ORB", "GlassFish ORB")


def client_commands() -> dict:
    """label -> (client command, ClientSuite options) of the client drivers the client
    suite runs (tests/test_conformance_client.py; the Java clients as batch commands)."""
    from peers.java_conformance_client import java_conformance_command
    here = os.path.dirname(os.path.abspath(__file__))
    omni = f"{sys.executable} {os.path.join(here, 'peers', 'omni_conformance_client.py')} " \
           "{ior} {operation} {args} {count}"
    return {"omniORBpy": (lambda: omni, {"wide_chars": False}),
            **{label: (lambda name=name: java_conformance_command(name, sys.executable,
                                                                        batch=True), {})
               for label, name in (("JacORB", "jacorb"), ("OpenJDK ORB", "openjdk-orb"),
                                   ("GlassFish ORB", "glassfish-orb"))}}


def through_proxies(runner_class):
    """A ClientRunner class whose clients get, for each case, the IOR of a proxy of its own
    in front of the case's crafted server (closed when the next case starts, or by
    finish()); the proxies' rows by case id in ``rows``."""
    from pycdr.codec.ior import ior_from_string, ior_to_string
    from pycdr.conformance.client_runner import PRIMARY_KEY

    class ThroughProxy(runner_class):
        def __init__(self, *args, proxies, **kw):
            super().__init__(*args, **kw)
            self.proxies, self.current, self.rows = proxies, None, {}

        def finish(self):
            if self.current is not None:
                self.proxies.close(self.current)
                self.current = None

        def case_values(self, server, case):
            self.finish()
            self.current, self.rows[case.id] = self.proxies.open(("127.0.0.1", server.port))
            moved, _ = self.current.core.rewriter.rewrite(ior_from_string(server.ior))
            host, port = self.current.listeners[0].advertised
            v = case.version
            through = types.SimpleNamespace(
                ior=ior_to_string(moved),
                corbaloc=f"corbaloc:iiop:{v[0]}.{v[1]}@{host}:{port}/{PRIMARY_KEY.decode()}")
            return super().case_values(through, case)
    return ThroughProxy


@contextlib.contextmanager
def compared_client_runs(chosen: dict, workers: int = 4):
    """Each client's cases (``chosen``: label -> case ids, None for the whole catalog) run
    directly and through proxies, every run at once (a whole catalog's direct run is the
    conformance matrix's when it has made it: shared_client_runs): yields ``runs``, label ->
    (direct run, run through proxies, the proxies' rows by case id), and ``again(label, case
    ids)``, those cases run once more both ways."""
    from peers.process import PeerNotInstalled
    from proxy_support import ThreadedProxies
    from pycdr.conformance.client_cases import client_catalog
    from pycdr.conformance.client_runner import ClientRunner, ClientSuite
    from shared_client_runs import whole_catalog_run
    catalog = client_catalog()
    cases = {label: [c for c in catalog if ids is None or c.id in ids]
             for label, ids in chosen.items()}
    for label, ids in chosen.items():
        assert ids is None or len(cases[label]) == len(ids), label
    assert set(NOT_FOR) | set(VERDICT_ONLY) <= {c.id for c in catalog}
    clients = {}
    for label in chosen:
        command, options = client_commands()[label]
        try:
            clients[label] = (command(), options)
        except PeerNotInstalled as e:
            pytest.skip(f"{label} not installed: {e}")
    proxies = ThreadedProxies()
    runner = through_proxies(ClientRunner)

    def run(label, proxied, chosen_cases=None):
        command, options = clients[label]
        left_out = for_client(NOT_FOR, label)
        if not proxied and chosen_cases is None and chosen[label] is None:
            # the whole catalog's direct run: the one the conformance matrix makes
            direct = whole_catalog_run(command, options).result()
            return types.SimpleNamespace(results=[r for r in direct.results
                                                  if r.case.id not in left_out]), None
        chosen_cases = cases[label] if chosen_cases is None else chosen_cases
        suite = ClientSuite(command, [c for c in chosen_cases if c.id not in left_out],
                            **options)
        if not proxied:
            return suite.run_all(), None
        suite.runner = runner(command, suite.runner.interface, proxies=proxies, **options)
        try:
            return suite.run_all(), suite.runner.rows
        finally:
            suite.runner.finish()

    def run_in_parts(label, proxied):
        """``run`` of the label's cases, a whole catalog through proxies in PARTS runs at
        once (most of a case's time is a process starting or a timeout), put together."""
        if not proxied or chosen[label] is not None:
            return run(label, proxied)
        with ThreadPoolExecutor(max_workers=PARTS) as parts:
            done = list(parts.map(lambda i: run(label, True, cases[label][i::PARTS]),
                                  range(PARTS)))
        by_id = {r.case.id: r for part, _rows in done for r in part.results}
        rows = {case_id: r for _part, part_rows in done for case_id, r in part_rows.items()}
        return types.SimpleNamespace(results=[by_id[c.id] for c in cases[label]
                                              if c.id in by_id]), rows

    def again(label, case_ids):
        chosen_cases = [c for c in cases[label] if c.id in case_ids]
        return tuple(run(label, proxied, chosen_cases)[0] for proxied in (False, True))
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {label: [pool.submit(run_in_parts, label, proxied)
                               for proxied in (False, True)] for label in chosen}
            yield types.SimpleNamespace(
                runs={label: (direct.result()[0], *through.result())
                      for label, (direct, through) in futures.items()},
                again=again)
    finally:
        proxies.stop()


@pytest.fixture(scope="module")
def client_runs():
    """Each client's whole catalog, directly and through proxies, the clients side by side
    (most of a run is waiting: a client's own call timeout, a process starting)."""
    with compared_client_runs({label: None for label in CLIENT_LABELS},
                              workers=2 * len(CLIENT_LABELS)) as runs:
        yield runs


def assert_same_through_the_proxy(compared, label, case_ids):
    """The client's cases (``case_ids``, those NOT_FOR it left out) gave the same outcomes
    directly and through the proxy."""
    direct, through, rows = compared.runs[label]
    assert [r.case.id for r in through.results] == \
        [i for i in case_ids if i not in for_client(NOT_FOR, label)]
    assert sum(r.verdict == "pass" for r in direct.results) >= len(through.results) // 2
    # the verdict and what the client reported: the same kind of outcome, the same
    # exception (a proxy that answered a 4 GiB claim itself gave COMM_FAILURE where the
    # client's own call timeout gives TIMEOUT)
    loose = for_client(VERDICT_ONLY, label)
    assert judged_again(label, lambda a, b: differing_outcomes(a, b, loose), (direct, through),
                        lambda ids: compared.again(label, ids)) == []
    # each client's calls went through its case's proxy: where the crafted server saw a
    # request directly, the case's proxy relayed one
    for before, result in zip(direct.results, through.results):
        if before.outcome is not None and before.outcome.details.get("requests"):
            assert any(r["message_type"] == "Request" for r in rows[result.case.id]), \
                result.case.id


@PEERS
@pytest.mark.parametrize("label", CLIENT_LABELS)
def test_a_peer_clients_verdicts_are_the_same_through_the_proxy(client_runs, label):
    from pycdr.conformance.client_cases import client_catalog
    assert_same_through_the_proxy(client_runs, label, [c.id for c in client_catalog()])
