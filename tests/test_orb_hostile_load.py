"""The reference ORB server under hostile load (issue 22), at small scale: bounded attackers
on loopback hold incomplete messages against a server with a lowered connection limit and
memory budget; an honest client still gets served, the budget holds, memory is given back.
(The client facing a hostile server: test_orb_client_hostile_server.py.)

Every attacker here is a fixed number of connections that each send one piece and wait;
every test stops its servers and attackers (assertions are about behaviour, not timing)."""

import asyncio
import gc
import tracemalloc

import pytest

from orb_echo_values import ECHO_INTERFACE, load_echo_module
from pycdr.giop.header import HEADER_SIZE, MsgType, encode_header, parse_header
from pycdr.codec import tc
from pycdr.giop.messages import KeyAddr, Request, encode_message
from pycdr.codec.marshal import encode
from pycdr.orb import ORB, DynamicServant, Server, ServerLimits
from pycdr.orb import memory as orb_memory
from pycdr.orb import server as orb_server
from test_orb_limits import run, serve

ECHO = load_echo_module().interfaces[ECHO_INTERFACE]


async def honest_call(server, key, value=7):
    """One echo call on a new connection, as `pycdr call` makes it."""
    async with ORB(timeout=5, connect_timeout=5) as orb:
        ref = await orb.string_to_object(server.corbaloc(key), ECHO)
        return await ref.echo_long(value)


async def stalled_request(port, claim, body):
    """An attacker connection: a GIOP 1.2 Request header claiming ``claim`` bytes of
    body, then ``body`` bytes of it, and nothing more."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(encode_header((1, 2), False, MsgType.Request, claim) + bytes(body))
    await writer.drain()
    return reader, writer


async def until(condition, what, tries=300):
    for _ in range(tries):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


async def closed_with(reader) -> list:
    """The message types the server sent before closing (bounded read)."""
    data = await asyncio.wait_for(reader.read(), 5)
    types = []
    while len(data) >= HEADER_SIZE:
        header = parse_header(data)
        types.append(header.msg_type)
        data = data[header.total_size:]
    return types


async def close_all(writers):
    for writer in writers:
        writer.close()


def test_server_holds_the_bytes_received_not_the_claims():
    # Eight connections claim 200 KB each and send 10 KB: the server holds 10 KB (and
    # the headers) for each, as its accounting says, not a buffer per connection.
    async def main():
        server, key = await serve(max_message_size=1 << 20, max_incomplete_bytes=4 << 20)
        assert await honest_call(server, key) == 7        # (the loop's shared buffers made)
        tracemalloc.start()
        try:
            attackers = [await stalled_request(server.port, 200_000, 10_000)
                         for _ in range(8)]
            per_connection = HEADER_SIZE + 10_000
            await until(lambda: len(server.connections) == 8 and
                        all(c.giop.incomplete_bytes == per_connection
                            for c in server.connections), "every attacker's bytes in")
            allocated = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        print("allocated per attacker connection (both ends):", allocated // 8)
        assert allocated < 8 * (per_connection + 40_000)
        assert server.incomplete_bytes == 8 * per_connection
        for connection in server.connections:
            assert connection.giop.incomplete_bytes == per_connection
        assert await honest_call(server, key) == 7
        await close_all(w for _, w in attackers)
        await until(lambda: not server.connections, "the attackers forgotten")
        assert server.incomplete_bytes == 0
        await server.stop()
    run(main())


def test_over_the_budget_the_oldest_incomplete_message_is_refused_with_message_error():
    async def main():
        budget = 100_000
        server, key = await serve(max_message_size=budget, max_incomplete_bytes=budget)
        attackers = []
        for i in range(6):             # 30 KB each: the fourth goes over the budget
            attackers.append(await stalled_request(server.port, 90_000, 30_000))
            await until(lambda: server.incomplete_bytes >= min(i + 1, 3) * 30_000,
                        "the attacker's bytes accounted")
            assert server.incomplete_bytes <= budget
        # The oldest three were refused, in age order, each with a MessageError.
        for reader, _ in attackers[:3]:
            assert await closed_with(reader) == [MsgType.MessageError]
        assert server.refused_for_memory == 3
        for reader, _ in attackers[3:]:
            assert not reader.at_eof()
        assert server.incomplete_bytes == 3 * (HEADER_SIZE + 30_000) <= budget
        assert await honest_call(server, key) == 7
        await close_all(w for _, w in attackers)
        await server.stop()
    run(main())


def test_a_message_that_progresses_is_not_the_oldest():
    # The age of an incomplete message counts from the last message the connection
    # completed: a client streaming requests (always one half sent) keeps its place,
    # and the stalled connection opened after it is the one refused.
    async def main():
        budget = 100_000
        server, key = await serve(max_message_size=budget, max_incomplete_bytes=budget)
        streaming = await stalled_request(server.port, 60_000, 40_000)
        stalled = await stalled_request(server.port, 90_000, 40_000)
        await until(lambda: server.incomplete_bytes >= 80_000, "both accounted")
        # The streaming client completes its message and starts the next one.
        reply_request = encode_message(_locate(key, 1))
        streaming[1].write(bytes(20_000) + reply_request +
                           encode_header((1, 2), False, MsgType.Request, 90_000) +
                           bytes(70_000))
        await streaming[1].drain()
        await until(lambda: server.refused_for_memory == 1, "one refusal")
        assert await closed_with(stalled[0]) == [MsgType.MessageError]
        assert not streaming[0].at_eof()
        await close_all([streaming[1], stalled[1]])
        await server.stop()
    run(main())


def _locate(key, request_id):
    from pycdr.giop.messages import KeyAddr, LocateRequest
    return LocateRequest(version=(1, 2), request_id=request_id, target=KeyAddr(key))


def test_at_the_connection_limit_an_honest_client_gets_in():
    # Stalled connections fill the limit; each honest call (a new connection) closes the
    # one that waited longest (MessageError) and succeeds; a new attacker fills the place
    # again after it.
    async def main():
        server, key = await serve(max_connections=4, incomplete_message_timeout=60)
        attackers = []

        async def attack():            # one after the other: their ages are in this order
            attackers.append(await stalled_request(server.port, 1000, 10))
            here = attackers[-1][1].get_extra_info("sockname")
            await until(lambda: any(c.peer == here for c in server.connections) and
                        server.incomplete_bytes == len(server.connections) *
                        (HEADER_SIZE + 10), "the attacker in, its bytes accounted")
        for _ in range(4):
            await attack()
        for i in range(3):
            assert await honest_call(server, key, i) == i
            assert await closed_with(attackers[i][0]) == [MsgType.MessageError]
            await attack()
        assert server.evicted_at_limit == 3
        assert all(not reader.at_eof() for reader, _ in attackers[3:])
        await close_all(w for _, w in attackers)
        await server.stop()
    run(main())


def test_a_flood_of_connections_that_send_nothing_does_not_lock_out_an_honest_client():
    async def main():
        server, key = await serve(max_connections=8, incomplete_message_timeout=60)
        flood = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(20)]
        await until(lambda: len(server.connections) == 8, "the flood in")
        assert await honest_call(server, key) == 7
        # The oldest of the flood were closed with CloseConnection (they were idle).
        assert await closed_with(flood[0][0]) == [MsgType.CloseConnection]
        assert len(server.connections) <= 8
        await close_all(w for _, w in flood)
        await server.stop()
    run(main())


def test_bytes_that_arrive_while_handling_waits_count_in_the_budget():
    # With one request in flight allowed and one running (its servant waits), the next
    # request makes the connection's handling wait; an incomplete message sent then
    # is counted at once, and is the oldest when another connection goes over the budget.
    async def main():
        release = asyncio.Event()

        async def handler(name, args):
            await release.wait()
            return args[0]
        budget = 100_000
        server = Server(limits=ServerLimits(max_requests_in_flight=1,
                                            max_message_size=budget,
                                            max_incomplete_bytes=budget))
        key = server.activate(DynamicServant(ECHO, handler), "Echo")
        await server.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        for request_id in (1, 2):
            writer.write(encode_message(Request(
                version=(1, 2), request_id=request_id, target=KeyAddr(key),
                operation="echo_long", body=encode(tc.long, request_id))))
        await writer.drain()
        (connection,) = server.connections
        await until(lambda: connection._batch is not None, "handling waits")
        writer.write(encode_header((1, 2), False, MsgType.Request, 90_000) + bytes(60_000))
        await until(lambda: server.incomplete_bytes == HEADER_SIZE + 60_000,
                    "the bytes counted while handling waits")
        # Another connection's 50 KB go over the budget: the older one is refused.
        other = await stalled_request(server.port, 90_000, 50_000)
        assert MsgType.MessageError in await closed_with(reader)
        assert server.refused_for_memory == 1 and not other[0].at_eof()
        release.set()
        await close_all([writer, other[1]])
        await server.stop()
    run(main())


def test_memory_is_given_back_when_the_load_drops(monkeypatch):
    trims = []
    monkeypatch.setattr(orb_server, "TRIM_AFTER_BYTES", 100_000)
    monkeypatch.setattr(orb_server, "TRIM_DELAY", 0.01)
    monkeypatch.setattr(orb_server, "release_free_memory", lambda: trims.append(1) or True)

    async def main():
        server, key = await serve()
        attackers = [await stalled_request(server.port, 1 << 20, 50_000) for _ in range(4)]
        await until(lambda: server.incomplete_bytes >= 200_000, "the attack held")
        assert not trims
        await close_all(w for _, w in attackers)
        await until(lambda: trims, "a trim after the attackers left")
        assert len(trims) == 1 and server.load.trims == 1     # one trim for the wave
        assert await honest_call(server, key) == 7
        await server.stop()
    run(main())


def test_a_closed_connection_lets_its_buffers_go_without_the_garbage_collector():
    # Connections the server closes (here: their messages time out) free what they
    # held by reference counting alone: an idle server may not run the cyclic GC for a
    # long time, and a connection and its stream refer to each other.
    async def main():
        server, key = await serve(incomplete_message_timeout=0.3)
        assert await honest_call(server, key) == 7
        gc.collect()
        gc.disable()
        tracemalloc.start()
        try:
            attackers = [await stalled_request(server.port, 1 << 20, 100_000)
                         for _ in range(8)]
            await until(lambda: server.incomplete_bytes >= 8 * 100_000, "the attack held")
            await until(lambda: not server.connections, "the attackers timed out")
            await asyncio.sleep(0.05)    # (the transports' connection_lost callbacks)
            left = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
            gc.enable()
        assert left < 8 * 100_000 // 4
        await close_all(w for _, w in attackers)
        await server.stop()
    run(main())


def test_release_free_memory_calls_glibc():
    if not orb_memory.can_release_free_memory():
        pytest.skip("not glibc")
    assert orb_memory.release_free_memory() in (True, False)


def test_budget_below_the_message_size_is_refused():
    with pytest.raises(ValueError, match="max_incomplete_bytes"):
        ServerLimits(max_message_size=1 << 20, max_incomplete_bytes=1000)
