"""The reference ORB under load (bounded in time): a flood of 10,000 oneways arrives complete,
50 concurrent clients x 200 twoway calls complete without error, and a client process killed
mid-message does not disturb the others."""

import asyncio
import subprocess
import sys
import time

from orb_echo_values import ECHO_INTERFACE, load_echo_module
from pycdr.orb import ORB, ClassServant, Server

MODULE = load_echo_module()
ECHO = MODULE.interfaces[ECHO_INTERFACE]


class Counter:
    def __init__(self):
        self.notes = 0
        self.calls = 0

    def note(self, text):
        self.notes += 1

    def echo_long(self, v):
        self.calls += 1
        return v


def run(coroutine, timeout=60):
    return asyncio.run(asyncio.wait_for(coroutine, timeout))


def test_ten_thousand_oneways_arrive():
    async def main():
        counter = Counter()
        server = Server()
        key = server.activate(ClassServant(ECHO, counter), "Echo")
        await server.start()
        async with ORB() as orb:
            ref = await orb.string_to_object(server.corbaloc(key), ECHO)
            for i in range(10_000):
                await ref.note(f"note {i}")
            # A twoway after them: one connection, served in order of arrival.
            assert await ref.echo_long(1) == 1
            deadline = time.monotonic() + 10
            while counter.notes < 10_000 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert counter.notes == 10_000
        await server.stop()
    run(main())


# A client that sends the first half of a request and then waits to be killed.
_HALF_SENDER = """
import socket, sys, time
from pycdr.giop.messages import KeyAddr, Request, encode_message
from pycdr.codec.marshal import encode
from pycdr import tc
port = int(sys.argv[1])
request = encode_message(Request(version=(1, 2), request_id=1, target=KeyAddr(b"Echo"),
                                 operation="echo_long", body=encode(tc.long, 5)))
s = socket.create_connection(("127.0.0.1", port))
s.sendall(request[:len(request) // 2])
print("sent", flush=True)
time.sleep(60)
"""


def test_fifty_clients_two_hundred_calls_and_a_killed_client():
    async def main():
        counter = Counter()
        server = Server()
        key = server.activate(ClassServant(ECHO, counter), "Echo")
        await server.start()
        victim = subprocess.Popen([sys.executable, "-c", _HALF_SENDER, str(server.port)],
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert victim.stdout.readline().strip() == "sent"

            async def client(n):
                async with ORB() as orb:     # its own ORB: its own connection
                    ref = await orb.string_to_object(server.corbaloc(key), ECHO)
                    for i in range(200):
                        assert await ref.echo_long(n * 1000 + i) == n * 1000 + i
                        if n == 0 and i == 100:
                            victim.kill()    # mid-message, while the others run
                return n
            assert sorted(await asyncio.gather(*(client(n) for n in range(50)))) == \
                list(range(50))
            assert counter.calls == 50 * 200
        finally:
            victim.kill()
            victim.wait()
        await server.stop()
    run(main(), timeout=90)
