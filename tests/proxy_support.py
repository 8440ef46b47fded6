"""The proxy in-process for tests: a pycdr server, a Proxy in front of it, the rows it
writes, all on the test's event loop."""

import asyncio
import contextlib

from orb_echo_values import ECHO_INTERFACE, load_echo_module
from pycdr.addressing.rewrite import ReferenceRewriter
from pycdr.calls.bodies import CallBodies
from pycdr.orb import EchoServant, Server, ServerLimits
from pycdr.proxy.core import ProxyCore
from pycdr.proxy.rules import parse_rules
from pycdr.proxy.server import Listener, Proxy

MODULE = load_echo_module()
ECHO = MODULE.interfaces[ECHO_INTERFACE]


def run(coroutine, timeout=30):
    return asyncio.run(asyncio.wait_for(coroutine, timeout))


async def echo_server(**limits):
    server = Server(limits=ServerLimits(**limits))
    key = server.activate(EchoServant(ECHO), "Echo")
    await server.start()
    return server, key


@contextlib.asynccontextmanager
async def proxied(upstreams, *, rules=None, seed=1, limits=None, idl=True, tls_upstream=False,
                  hooks=None, explain=None, **options):
    """A Proxy listening on 127.0.0.1 (a free port) for each (host, port) of
    ``upstreams`` (spoken to over TLS with ``tls_upstream``); yields (proxy, rows)."""
    rows = []
    core = ProxyCore(rewriter=ReferenceRewriter({}), emit=rows.append, seed=seed,
                     rules=parse_rules(rules, seed) if rules is not None else None,
                     bodies=CallBodies([MODULE]) if idl else None, limits=limits,
                     hooks=hooks, explain=explain)
    proxy = Proxy(core, [Listener("127.0.0.1", 0, up, tls=tls_upstream) for up in upstreams],
                  **options)
    await proxy.start()
    try:
        yield proxy, rows
    finally:
        await proxy.close()


def address(server):
    """(host, port) a pycdr Server listens on."""
    return server.host, server.port


def through(proxy, index=0):
    """The (host, port) of the proxy's ``index``-th listener."""
    listener = proxy.listeners[index]
    return listener.advertised
