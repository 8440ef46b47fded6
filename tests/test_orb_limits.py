"""The reference ORB server's limits, timeouts and protocol-violation answers, seen through raw
managed connections (pre-built bytes, bounded reads)."""

import asyncio

from orb_echo_values import ECHO_INTERFACE, load_echo_module
from pycdr.giop.header import MsgType, encode_header, parse_header
from pycdr.giop.messages import (CancelRequest, KeyAddr, LocateReply, LocateRequest,
                                 LocateStatus, Request, decode_message, encode_message)
from pycdr.codec.marshal import encode
from pycdr.orb import ORB, EchoServant, Server, ServerLimits
from pycdr.codec import tc

MODULE = load_echo_module()
ECHO = MODULE.interfaces[ECHO_INTERFACE]


def run(coroutine, timeout=30):
    return asyncio.run(asyncio.wait_for(coroutine, timeout))


async def serve(**limits):
    server = Server(limits=ServerLimits(**limits))
    key = server.activate(EchoServant(ECHO), "Echo")
    await server.start()
    return server, key


def locate_bytes(key, version=(1, 2), request_id=1, little=False):
    return encode_message(LocateRequest(version=version, little=little, request_id=request_id,
                                        target=KeyAddr(key)))


def msg_type(raw):
    return parse_header(raw).msg_type


def test_version_above_ours_gets_message_error_with_our_minor_then_close():
    async def main():
        server, key = await serve()
        async with ORB() as orb:
            raw = await orb.raw_connection("127.0.0.1", server.port)
            await raw.send(locate_bytes(key, version=(1, 3)))
            read = await raw.read_until_closed(timeout=5)
            assert read.closed and len(read.messages) == 1
            header = parse_header(read.messages[0])
            assert header.msg_type == MsgType.MessageError and header.version == (1, 2)
        await server.stop()
    run(main())


def test_bad_magic_and_oversized_message_close_with_message_error():
    async def main():
        server, key = await serve(max_message_size=1000)
        async with ORB() as orb:
            raw = await orb.raw_connection("127.0.0.1", server.port)
            await raw.send(b"GIOX" + locate_bytes(key)[4:])
            read = await raw.read_until_closed(timeout=5)
            assert read.closed and msg_type(read.messages[0]) == MsgType.MessageError
            raw = await orb.raw_connection("127.0.0.1", server.port)
            await raw.send(encode_header((1, 2), False, MsgType.Request, 5000))  # no body yet
            read = await raw.read_until_closed(timeout=5)
            assert read.closed and msg_type(read.messages[0]) == MsgType.MessageError
        await server.stop()
    run(main())


def test_byte_by_byte_sender_is_cut_off_by_the_incomplete_message_timeout():
    async def main():
        server, key = await serve(incomplete_message_timeout=0.5)
        async with ORB() as orb:
            slow = await orb.raw_connection("127.0.0.1", server.port)
            message = locate_bytes(key)
            started = asyncio.get_running_loop().time()
            for i in range(len(message) - 1):      # never the last byte
                if not await slow.send(message[i:i + 1]):
                    break
                await asyncio.sleep(0.05)
            read = await slow.read_until_closed(timeout=3)
            assert read.closed and not read.messages
            assert asyncio.get_running_loop().time() - started < 3
            # Others are served meanwhile and after.
            fine = await orb.raw_connection("127.0.0.1", server.port)
            await fine.send(locate_bytes(key))
            reply, _ = decode_message((await fine.read_messages(1, timeout=3)).messages[0])
            assert isinstance(reply, LocateReply) and reply.locate_status == LocateStatus.OBJECT_HERE
        await server.stop()
    run(main())


def test_idle_connection_gets_close_connection():
    async def main():
        server, key = await serve(idle_timeout=0.3)
        async with ORB() as orb:
            raw = await orb.raw_connection("127.0.0.1", server.port)
            await raw.send(locate_bytes(key, version=(1, 1)))
            read = await raw.read_messages(1, timeout=3)
            assert msg_type(read.messages[0]) == MsgType.LocateReply
            read = await raw.read_until_closed(timeout=3)
            assert read.closed and [msg_type(m) for m in read.messages] == [MsgType.CloseConnection]
            assert parse_header(read.messages[0]).version == (1, 1)
            # The client ORB retries transparently on a new connection after CloseConnection.
            ref = await orb.string_to_object(server.corbaloc(key), ECHO)
            assert await ref.echo_long(1) == 1
            await asyncio.sleep(0.6)
            assert await ref.echo_long(2) == 2
        await server.stop()
    run(main())


def test_activity_keeps_moving_the_idle_deadline():
    # One timer per connection watches the idle deadline; each message moves it.
    async def main():
        server, key = await serve(idle_timeout=0.3)
        async with ORB() as orb:
            raw = await orb.raw_connection("127.0.0.1", server.port)
            started = asyncio.get_running_loop().time()
            for request_id in range(1, 11):          # 1 s of a message every 0.1 s
                await raw.send(locate_bytes(key, request_id=request_id))
                read = await raw.read_messages(1, timeout=3)
                assert [msg_type(m) for m in read.messages] == [MsgType.LocateReply]
                await asyncio.sleep(0.1)
            assert asyncio.get_running_loop().time() - started > 0.9
            read = await raw.read_until_closed(timeout=3)      # then idle: closed
            assert read.closed and [msg_type(m) for m in read.messages] == [MsgType.CloseConnection]
        await server.stop()
    run(main())


def test_connection_limit_closes_the_longest_idle_and_shutdown_closes_all():
    # At the limit a new connection gets in: the one idle longest gets CloseConnection
    # (an orderly close its client retries after).
    async def main():
        server, key = await serve(max_connections=2)
        async with ORB() as orb:
            first = await orb.raw_connection("127.0.0.1", server.port)
            second = await orb.raw_connection("127.0.0.1", server.port)
            for raw in (first, second):
                await raw.send(locate_bytes(key))
                assert (await raw.read_messages(1, timeout=3)).messages
            third = await orb.raw_connection("127.0.0.1", server.port)
            await third.send(locate_bytes(key))
            assert msg_type((await third.read_messages(1, timeout=3)).messages[0]) == \
                MsgType.LocateReply
            read = await first.read_until_closed(timeout=3)
            assert read.closed and [msg_type(m) for m in read.messages] == \
                [MsgType.CloseConnection]
            assert server.evicted_at_limit == 1 and len(server.connections) == 2
            await server.stop()
            for raw in (second, third):
                read = await raw.read_until_closed(timeout=3)
                assert read.closed and [msg_type(m) for m in read.messages] == \
                    [MsgType.CloseConnection]
    run(main())


def test_cancel_request_of_a_fragmented_request_and_unknown_contexts():
    """A 1.2 request cancelled between its fragments gets no reply; a request with unknown
    service contexts is served; the connection stays usable."""
    from pycdr.giop.messages import fragment_message
    from pycdr.giop.service_contexts import RawServiceContext

    async def main():
        server, key = await serve()
        async with ORB() as orb:
            raw = await orb.raw_connection("127.0.0.1", server.port)
            body = encode(tc.sequence(tc.octet), bytes(300))
            request = encode_message(Request(version=(1, 2), request_id=5, target=KeyAddr(key),
                                             operation="echo_octets", body=body))
            pieces = fragment_message(request, 64)
            await raw.send(b"".join(pieces[:2]))
            await raw.send(encode_message(CancelRequest(version=(1, 2), request_id=5)))
            await raw.send(b"".join(pieces[2:]))          # dropped quietly
            contexts = [RawServiceContext(id=0x7777, data=b"\x00junk"),
                        RawServiceContext(id=0x7777, data=b"")]
            await raw.send(encode_message(Request(
                version=(1, 2), little=True, request_id=6, target=KeyAddr(key),
                operation="echo_long", service_contexts=contexts,
                body=encode(tc.long, 99, little=True))))
            read = await raw.read_messages(2, timeout=1)
            assert len(read.messages) == 1
            reply, _ = decode_message(read.messages[0])
            assert reply.request_id == 6 and reply.little
            assert reply.body_reader().read_long() == 99
        await server.stop()
    run(main())


def test_killed_client_mid_message_does_not_disturb_others():
    async def main():
        server, key = await serve()
        async with ORB() as orb:
            ref = await orb.string_to_object(server.corbaloc(key), ECHO)
            assert await ref.echo_long(1) == 1
            victim = await orb.raw_connection("127.0.0.1", server.port)
            request = encode_message(Request(version=(1, 2), request_id=1, target=KeyAddr(key),
                                             operation="echo_long", body=encode(tc.long, 5)))
            await victim.send(request[:20])
            victim.writer.transport.abort()          # a reset, as when the process dies
            calls = [ref.echo_long(i) for i in range(50)]
            assert await asyncio.gather(*calls) == list(range(50))
        await server.stop()
    run(main())


def test_giop_1_1_fragmented_request_is_reassembled():
    """A GIOP 1.1 Request cut inside its octet data (alignment-neutral) into a first message with
    the more-fragments bit and a 1.1 Fragment (no request id) is served as one request."""
    async def main():
        server, key = await serve()
        async with ORB() as orb:
            raw = await orb.raw_connection("127.0.0.1", server.port)
            payload = bytes(range(200))
            whole = encode_message(Request(version=(1, 1), request_id=3, target=KeyAddr(key),
                                           operation="echo_octets",
                                           body=encode(tc.sequence(tc.octet), payload,
                                                       offset=0)))
            body = whole[12:]
            cut = len(body) - 100         # inside the octets
            first = encode_header((1, 1), False, MsgType.Request, cut,
                                  more_fragments=True) + body[:cut]
            rest = encode_header((1, 1), False, MsgType.Fragment, len(body) - cut) + body[cut:]
            await raw.send(first)
            await asyncio.sleep(0.05)
            await raw.send(rest)
            reply, _ = decode_message((await raw.read_messages(1, timeout=3)).messages[0])
            assert reply.request_id == 3 and reply.version == (1, 1)
            r = reply.body_reader()
            assert r.read_octet_sequence() == payload
        await server.stop()
    run(main())


def test_messages_larger_than_the_reading_pause_limit_both_ways():
    """Requests and replies of several MiB on one connection, larger than the bytes a
    stream holds before it pauses its reading: the message still arriving must not
    count towards that pause (else its reading stops for good), and a client must
    resume a reading a large reply paused (else the next reply is never read).
    Both stalled before: 3 MiB at the server, the reply after an 8 MiB one at the
    client."""
    async def main():
        server, key = await serve()
        try:
            async with ORB() as orb:
                ref = await orb.string_to_object(server.ior_string(key), ECHO)
                for size in (3 << 20, 8 << 20, 9 << 20, 1 << 20):
                    data = bytes(range(256)) * (size // 256)
                    assert await ref.echo_octets(data) == data
                assert await ref.echo_long(7) == 7
        finally:
            await server.stop()
    run(main(), timeout=120)
