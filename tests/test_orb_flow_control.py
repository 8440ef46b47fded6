"""The reference ORB's reading: it pauses while too many requests are in flight (the server's
buffered bytes stay bounded) and resumes when they finish; every request is then served.
Messages are handled in order, also after one whose handling waits, and a connection the
client closes is forgotten."""

import asyncio

from pycdr import idl
from pycdr.orb import ORB, ClassServant, DynamicServant, Server, ServerLimits
from pycdr.giop.connection import SCRATCH_SIZE
from pycdr.orb.aio import PAUSE_READING_ABOVE

IDL = """
module FlowTest {
  typedef sequence<octet> Octets;
  interface Sink {
    oneway void put(in Octets data);
    long count();
  };
};
"""
SINK = idl.load_string(IDL, register=False).interfaces["FlowTest::Sink"]
CHUNK = 256 * 1024
CALLS = 48                  # 12 MiB: far more than the socket buffers and the pause limit


def test_reading_pauses_while_requests_are_in_flight_and_resumes():
    async def main():
        release = asyncio.Event()
        received = []

        async def handler(name, args):
            if name == "put":
                await release.wait()
                received.append(len(args[0]))
                return None
            return len(received)

        server = Server(limits=ServerLimits(max_requests_in_flight=2))
        key = server.activate(DynamicServant(SINK, handler), "Sink")
        await server.start()
        async with ORB() as orb:
            sink = await orb.string_to_object(server.corbaloc(key), SINK)
            data = bytes(CHUNK)

            async def send_all():
                for _ in range(CALLS):
                    await sink.send_oneway("put", data)
            sending = asyncio.create_task(send_all())
            while not server.connections:
                await asyncio.sleep(0.01)
            (connection,) = server.connections
            # The servant holds two requests; the server stops reading, the client's
            # writes back up, and what the server holds stays bounded.
            for _ in range(200):
                await asyncio.sleep(0.02)
                if connection.stream._reading_paused:
                    break
            assert connection.stream._reading_paused
            peak = connection.giop.buffered
            await asyncio.sleep(0.2)
            assert not sending.done()
            assert connection.giop.buffered == peak
            # (beyond the limit by at most the read that crossed it: a message
            # received in place, or a scratch buffer)
            assert peak <= PAUSE_READING_ABOVE + max(CHUNK, SCRATCH_SIZE) + 2 * 1024
            assert len(received) == 0
            release.set()
            await asyncio.wait_for(sending, 30)
            for _ in range(500):
                if await sink.count() == CALLS:
                    break
                await asyncio.sleep(0.01)
            assert await sink.count() == CALLS
            assert received == [CHUNK] * CALLS
            assert not connection.stream._reading_paused
        await server.stop()
    asyncio.run(asyncio.wait_for(main(), 60))


ORDER_IDL = """
module OrderTest {
  interface Log {
    long add(in long v);
    oneway void note(in long v);
  };
};
"""
LOG = idl.load_string(ORDER_IDL, register=False).interfaces["OrderTest::Log"]


async def forgotten(server) -> None:
    """Wait (up to 1 s) until the server has forgotten every connection."""
    for _ in range(100):
        if not server.connections:
            return
        await asyncio.sleep(0.01)
    assert not server.connections


def test_requests_after_one_that_waits_are_handled_after_it_in_order():
    """Messages are handled in the transport's callback; one whose handling
    waits (a plain method returning an awaitable) goes on in a task, and what
    arrives meanwhile waits for it: every request runs, in the order sent."""
    async def main():
        gate = asyncio.Event()
        seen = []

        class Log:
            def add(self, v):
                seen.append(v)
                if v == 1:
                    async def later():
                        await gate.wait()
                        return v
                    return later()        # the server awaits it: the batch waits
                return v

            def note(self, v):
                seen.append(v)

        server = Server()
        key = server.activate(ClassServant(LOG, Log()), "Log")
        await server.start()
        async with ORB() as orb:
            log = await orb.string_to_object(server.corbaloc(key), LOG)
            first = asyncio.create_task(log.add(1))
            while seen != [1]:
                await asyncio.sleep(0.01)
            for v in (2, 3):
                await log.send_oneway("note", v)
            last = asyncio.create_task(log.add(4))
            await asyncio.sleep(0.2)
            assert seen == [1] and not first.done() and not last.done()
            gate.set()
            assert await first == 1 and await last == 4
            assert seen == [1, 2, 3, 4]
        await forgotten(server)       # the client closed
        await server.stop()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_connections_are_forgotten_when_clients_go():
    async def main():
        server = Server()
        key = server.activate(ClassServant(LOG, type("Log", (), {"add": lambda self, v: v})()),
                              "Log")
        await server.start()
        for _ in range(3):
            async with ORB() as orb:
                log = await orb.string_to_object(server.corbaloc(key), LOG)
                assert await log.add(5) == 5
                assert len(server.connections) == 1
            await forgotten(server)
        await server.stop()

    asyncio.run(asyncio.wait_for(main(), 30))
