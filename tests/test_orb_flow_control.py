"""The reference ORB's reading pauses while too many requests are in flight (the server's
buffered bytes stay bounded) and resumes when they finish; every request is then served."""

import asyncio

from pycdr import idl
from pycdr.orb import ORB, DynamicServant, Server, ServerLimits
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
            assert peak <= PAUSE_READING_ABOVE + CHUNK + 2 * 1024
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
