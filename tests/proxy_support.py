"""The proxy in-process for tests: a pycdr server, a Proxy in front of it, the rows it
writes, all on the test's event loop."""

import asyncio
import contextlib
import threading

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


class ThreadedProxies:
    """Proxies opened and closed from synchronous code (a test's threads), all on one
    event loop in a thread of their own."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="proxies",
                                       daemon=True)
        self.thread.start()

    def _call(self, coroutine, timeout=30):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def open(self, upstream) -> tuple:
        """A proxy (no rule, the echo IDL) relaying to ``upstream`` (host, port) from a free
        port on 127.0.0.1: (proxy, the list its rows go to)."""
        rows = []

        async def start():
            core = ProxyCore(rewriter=ReferenceRewriter({}), emit=rows.append,
                             bodies=CallBodies([MODULE]))
            proxy = Proxy(core, [Listener("127.0.0.1", 0, upstream)])
            await proxy.start()
            return proxy
        return self._call(start()), rows

    def close(self, proxy) -> None:
        self._call(proxy.close())

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()
