"""The ORB's own programs run on uvloop's event loop when it is installed (pycdr[fast])
unless PYCDR_LOOP=asyncio; the ORB serves and calls alike on both loops, its
connections sharing one read buffer per loop on each."""

from __future__ import annotations

import asyncio

import pytest

from orb_echo_values import ECHO_INTERFACE, load_echo_module
from pycdr.orb import ORB, EchoServant, Server
from pycdr.orb import aio

MODULE = load_echo_module()
ECHO = MODULE.interfaces[ECHO_INTERFACE]
LOOPS = ["asyncio"] + (["uvloop"] if aio.uvloop is not None else [])


def test_new_event_loop_follows_pycdr_loop(monkeypatch):
    monkeypatch.setenv("PYCDR_LOOP", "asyncio")
    loop = aio.new_event_loop()
    try:
        assert isinstance(loop, asyncio.BaseEventLoop)
        assert not aio.uses_uvloop()
    finally:
        loop.close()
    monkeypatch.delenv("PYCDR_LOOP")
    loop = aio.new_event_loop()
    try:
        assert aio.uses_uvloop() == (aio.uvloop is not None)
        assert isinstance(loop, aio.uvloop.Loop) == (aio.uvloop is not None)
    finally:
        loop.close()


@pytest.mark.parametrize("loop_name", LOOPS)
def test_calls_over_two_connections_on_each_loop(monkeypatch, loop_name):
    monkeypatch.setenv("PYCDR_LOOP", loop_name)
    small = b"x" * 100
    large = bytes(range(256)) * 1024          # 256 KB: received in place

    async def main():
        loop = asyncio.get_running_loop()
        assert isinstance(loop, aio.uvloop.Loop) == (loop_name == "uvloop")
        server = Server(host="127.0.0.1", port=0)
        key = server.activate(EchoServant(ECHO), "Echo")
        await server.start()
        try:
            async with ORB() as first, ORB() as second:
                refs = [await orb.string_to_object(server.ior_string(key), ECHO)
                        for orb in (first, second)]
                # both connections, and the server's, read through the loop's one buffer
                assert aio.receive_scratch(loop) is not None
                for _ in range(3):
                    answers = await asyncio.gather(*[ref.echo_octets(v) for ref in refs
                                                     for v in (small, large, small)])
                    assert answers == [small, large, small] * 2
        finally:
            await server.stop()
    aio.run(main())
