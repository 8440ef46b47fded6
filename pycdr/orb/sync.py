"""A synchronous facade for scripts: invocations run in the caller's thread over
blocking sockets (pycdr.orb.blocking); servers, raw connections, deferred
requests and LocateRequests run on the asyncio ORB in a background thread's
event loop.  These objects block until their answer.  ``SyncORB(blocking=False)``
runs the invocations on the loop too.

    with SyncORB() as orb:
        server = orb.serve(EchoServant(module.interfaces["Demo::Echo"]), "Echo")
        echo = orb.string_to_object(server.ior, module.interfaces["Demo::Echo"])
        echo.echo_long(5)
"""

from __future__ import annotations

import asyncio
import functools
import threading

from ..codec import tc

from . import blocking as blocking_calls
from .aio import new_event_loop
from .client import ORB, ClientOptions, ObjectRef
from .raw import RawConnection, RawRead
from .invocation import dynamic_operation
from .server import Server, ServerLimits
from .servant import Servant
from .threads import ThreadedServer


class SyncORB:
    def __init__(self, options: ClientOptions | None = None, *, blocking: bool = True,
                 **overrides):
        self.loop = new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="pycdr-orb",
                                        daemon=True)
        self._thread.start()
        self.orb: ORB = self.run(self._make_orb(options, overrides))
        self.servers: list[SyncServer] = []
        self.blocking = blocking_calls.BlockingClient(self.orb.options) if blocking else None

    @staticmethod
    async def _make_orb(options, overrides):
        return ORB(options, **overrides)

    def run(self, coroutine, timeout: float | None = None):
        """Run a coroutine on the ORB's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def string_to_object(self, text: str, interface=None, **options) -> "SyncObjectRef":
        return SyncObjectRef(self, self.run(self.orb.string_to_object(text, interface,
                                                                      **options)))

    def raw_connection(self, host: str, port: int, timeout: float | None = None):
        return SyncRawConnection(self, self.run(self.orb.raw_connection(host, port, timeout)))

    def serve(self, servant: Servant | None = None, name: str | bytes | None = None, *,
              host: str = "127.0.0.1", port: int = 0, limits: ServerLimits | None = None,
              threads: bool = False, **server_options) -> "SyncServer":
        """Start a Server on the ORB's loop (a ThreadedServer, a thread per connection,
        with ``threads``), with ``servant`` activated under ``name`` if given
        (``server_options``: Server's TLS ones)."""
        server = (ThreadedServer if threads else Server)(host=host, port=port, limits=limits,
                                                          **server_options)
        key = server.activate(servant, name) if servant is not None else None
        self.run(server.start())
        running = SyncServer(self, server, key)
        self.servers.append(running)
        return running

    def close(self) -> None:
        if self.loop.is_closed():
            return
        for server in self.servers:
            server.stop()
        if self.blocking is not None:
            self.blocking.close()
        self.run(self.orb.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


class SyncServer:
    def __init__(self, orb: SyncORB, server: Server, key: bytes | None):
        self._orb = orb
        self.server = server
        self.key = key
        self._stopped = False

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def ior(self) -> str:
        return self.server.ior_string(self.key)

    @property
    def corbaloc(self) -> str:
        return self.server.corbaloc(self.key)

    def activate(self, servant: Servant, name=None) -> bytes:
        return self._orb.run(_call_in_loop(self.server.activate, servant, name))

    def stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            self._orb.run(self.server.stop())


async def _call_in_loop(function, *args):
    return function(*args)


class SyncObjectRef:
    def __init__(self, orb: SyncORB, ref: ObjectRef):
        self._orb = orb
        self.ref = ref
        # invoke's operation functions (blocking.operation_caller), one per operation
        # (by name, or by the Operation object's id): {key: (op, function)}.
        self._callers: dict = {}

    def __getattr__(self, name: str):
        client = self._orb.blocking
        if client is not None:
            if name in _BLOCKING:
                return functools.partial(_BLOCKING[name], client, self.ref)
            if name in self.ref._operations:
                # (a BlockingInvocation's run, straight to the connection's lane once
                # it has one: blocking.operation_caller)
                call_operation = blocking_calls.operation_caller(
                    client, self.ref, self.ref._operations[name])
                call_operation.__name__ = name
                # Kept as this object's attribute: later calls find it without
                # __getattr__ (the reference and the client do not change).
                self.__dict__[name] = call_operation
                return call_operation
        async_call = getattr(self.ref, name)
        if not callable(async_call):
            return async_call

        def call(*args, **kwargs):
            result = async_call(*args, **kwargs)
            return self._orb.run(result) if asyncio.iscoroutine(result) else result
        call.__name__ = name
        return call

    def invoke(self, op, *args, timeout: float | None = -1):
        """ObjectRef.invoke, over a blocking socket from this thread (on the ORB's loop
        with ``SyncORB(blocking=False)``)."""
        client = self._orb.blocking
        if client is not None:
            # The operation's function, kept: after its first calls it goes straight to
            # the connection's lane (blocking.operation_caller), as echo.op(...) does.
            known = self._callers.get(op if type(op) is str else id(op))
            if known is None or (known[0] is not op and type(op) is not str):
                known = self._caller(client, op)
            return known[1](*args, timeout=timeout)
        return self._orb.run(self.ref.invoke(op, *args, timeout=timeout))

    def _caller(self, client, op) -> tuple:
        operation = self.ref.operation(op) if isinstance(op, str) else op
        if len(self._callers) >= _MAX_CALLERS:     # (operations made per call: DII)
            self._callers.clear()
        known = (op, blocking_calls.operation_caller(client, self.ref, operation))
        self._callers[op if type(op) is str else id(op)] = known
        return known

    def with_options(self, **options) -> "SyncObjectRef":
        return SyncObjectRef(self._orb, self.ref.with_options(**options))


def _invoke_dynamic(client, ref: ObjectRef, name: str, params, result=tc.void, args=(),
                    raises=(), oneway: bool = False, timeout: float | None = -1):
    op = dynamic_operation(name, params, result, raises, oneway)
    return blocking_calls.invoke(client, ref, op, args, timeout)


def _send_oneway(client, ref: ObjectRef, op, *args):
    return blocking_calls.invoke(client, ref, op, args, None, oneway=True)


# How many operations' functions a SyncObjectRef keeps for invoke.
_MAX_CALLERS = 256

# The calls of ObjectRef that SyncObjectRef makes over blocking sockets.
_BLOCKING = {"invoke_dynamic": _invoke_dynamic,
             "send_oneway": _send_oneway, "is_a": blocking_calls.is_a,
             "non_existent": blocking_calls.non_existent}


class SyncRawConnection:
    def __init__(self, orb: SyncORB, raw: RawConnection):
        self._orb = orb
        self.raw = raw

    def send(self, data: bytes) -> bool:
        return self._orb.run(self.raw.send(data))

    def send_in_pieces(self, pieces, delay: float = 0.0) -> bool:
        return self._orb.run(self.raw.send_in_pieces(pieces, delay))

    def read_messages(self, count: int = 1, *, timeout: float = 2.0,
                      max_bytes: int = 1 << 20) -> RawRead:
        return self._orb.run(self.raw.read_messages(count, timeout=timeout,
                                                    max_bytes=max_bytes))

    def read_until_closed(self, *, timeout: float = 2.0, max_bytes: int = 1 << 20) -> RawRead:
        return self._orb.run(self.raw.read_until_closed(timeout=timeout, max_bytes=max_bytes))

    def close(self) -> None:
        self._orb.run(self.raw.close())
