"""The pytest plugin (registered as the ``pytest11`` entry point ``pycdr``):

    pytest --pyargs pycdr.conformance --target IOR|corbaloc|host:port
    pytest --pyargs pycdr.conformance --client "CMD {ior} {operation} {args}"

Without ``--target`` the reference ORB is started in-process.  Each case is
one test: a failure fails it, a tolerated deviation passes with its reason in
the report, a case that does not apply to the endpoint is skipped with why.
"""

from __future__ import annotations

import json

import pytest


def pytest_addoption(parser):
    group = parser.getgroup("pycdr-conformance", "pycdr GIOP conformance suite")
    group.addoption("--target", default=None,
                    help="endpoint under test: an IOR, a corbaloc URL or host:port "
                         "(default: the reference ORB, started in-process)")
    group.addoption("--no-wide", action="store_true", default=False,
                    help="do not send wchar/wstring (some ORBs abort on them)")
    group.addoption("--client", default=None, metavar="CMD",
                    help="test an ORB's client instead: run CMD ({ior}, {corbaloc}, {operation}, "
                         "{args} and the optional {count} replaced) against a crafted server, "
                         "one case a test")
    group.addoption("--target-tls", action="store_true", default=False,
                    help="speak TLS to a corbaloc:iiop or host:port target")
    group.addoption("--target-cacert", default=None, help="CA certificates (PEM) for TLS")
    group.addoption("--target-cert", default=None, help="client certificate (PEM) for TLS")
    group.addoption("--target-key", default=None, help="the client certificate's key (PEM)")
    group.addoption("--target-insecure", action="store_true", default=False,
                    help="do not verify the target's certificate")
    group.addoption("--conformance-json", default=None,
                    help="write every verdict, with the bytes sent and received, as JSON")


def conformance_suite_for(config):
    """The session's Suite (resolved once, at collection)."""
    suite = getattr(config, "_pycdr_conformance_suite", None)
    if suite is None:
        from pycdr.orb.tls import TLSOptions
        from .suite import Suite, target_or_reference
        context = target_or_reference(config.getoption("--target"))
        endpoint = context.__enter__()
        config.add_cleanup(lambda: context.__exit__(None, None, None))
        tls = TLSOptions(force=config.getoption("--target-tls"),
                         cacert=config.getoption("--target-cacert"),
                         cert=config.getoption("--target-cert"),
                         key=config.getoption("--target-key"),
                         insecure=config.getoption("--target-insecure"))
        suite = Suite(endpoint, wide_chars=not config.getoption("--no-wide"), tls=tls)
        config._pycdr_conformance_suite = suite
    return suite


def client_suite_for(config):
    """The session's ClientSuite, when --client was given (else None)."""
    command = config.getoption("--client", None)
    if command is None:
        return None
    suite = getattr(config, "_pycdr_client_suite", None)
    if suite is None:
        from .client_runner import ClientSuite
        suite = ClientSuite(command, wide_chars=not config.getoption("--no-wide"))
        config._pycdr_client_suite = suite
    return suite


def pytest_unconfigure(config):
    client = getattr(config, "_pycdr_client_suite", None)
    if client is not None:
        client.runner.close()           # a {batch} command's process
    path = config.getoption("--conformance-json", None)
    if not path:
        return
    from .report import client_run_json, to_json
    client = getattr(config, "_pycdr_client_suite", None)
    suite = getattr(config, "_pycdr_conformance_suite", None)
    if client is not None:
        with open(path, "w") as f:
            json.dump(client_run_json(client.run), f, indent=1)
    elif suite is not None:
        with open(path, "w") as f:
            json.dump(to_json(suite.run), f, indent=1)
