"""The reference ORB's client against a hostile server (issue 22): a reply whose header
claims gigabytes is refused before its body is buffered, and a reply trickled byte by byte
costs no more than the call's timeout (then the connection it blocks is dropped).

The hostile server is a loopback asyncio server run by each test, bounded in the bytes it
trickles, and stopped by the test."""

import asyncio

import pytest

from orb_echo_values import ECHO_INTERFACE, load_echo_module
from pycdr.giop.header import HEADER_SIZE, MsgType, encode_header, parse_header
from pycdr.giop.messages import Reply, ReplyStatus, decode_message, encode_message
from pycdr.giop.sysexc import COMM_FAILURE, TIMEOUT
from pycdr.orb import ORB
from test_orb_limits import run

ECHO = load_echo_module().interfaces[ECHO_INTERFACE]


class HostileServer:
    """A loopback server that answers the first Request of each connection with a Reply
    header claiming ``reply_size`` bytes and a few of them, then ``trickle`` more bytes
    one at a time, ``interval`` apart, and waits for the client to close."""

    def __init__(self, reply_size, trickle=0, interval=0.02):
        self.reply_size = reply_size
        self.trickle = trickle
        self.interval = interval
        self.sent = 0
        self.client_closed = asyncio.Event()
        self.connections = 0

    async def start(self):
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def _serve(self, reader, writer):
        self.connections += 1
        try:
            head = await reader.readexactly(HEADER_SIZE)
            body = await reader.readexactly(parse_header(head).size)
            request, _ = decode_message(head + body)
            reply = encode_message(Reply(version=(1, 2), request_id=request.request_id,
                                         reply_status=ReplyStatus.NO_EXCEPTION,
                                         body=bytes(8)))
            writer.write(encode_header((1, 2), False, MsgType.Reply, self.reply_size) +
                         reply[HEADER_SIZE:])
            await writer.drain()
            for _ in range(self.trickle):
                await asyncio.sleep(self.interval)
                writer.write(b"\0")
                await writer.drain()
                self.sent += 1
            await reader.read()            # until the client closes
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.client_closed.set()
            writer.close()

    async def stop(self):
        self.server.close()
        await self.server.wait_closed()


def corbaloc(port):
    return f"corbaloc:iiop:1.2@127.0.0.1:{port}/Echo"


def test_client_refuses_a_reply_claiming_gigabytes_before_buffering_it():
    async def main():
        hostile = await HostileServer(reply_size=3 << 30, trickle=200, interval=0.005).start()
        async with ORB(timeout=20) as orb:
            ref = await orb.string_to_object(corbaloc(hostile.port), ECHO)
            with pytest.raises(COMM_FAILURE):
                await ref.echo_long(1)
            assert not orb._connections         # the connection was dropped
        await asyncio.wait_for(hostile.client_closed.wait(), 5)
        assert hostile.sent < 200           # refused at the header, not after the bytes
        await hostile.stop()
    run(main())


def test_client_max_reply_size_is_an_option():
    async def main():
        hostile = await HostileServer(reply_size=5000).start()
        async with ORB(timeout=20, max_message_size=4096) as orb:
            ref = await orb.string_to_object(corbaloc(hostile.port), ECHO)
            with pytest.raises(COMM_FAILURE):
                await ref.echo_long(1)
        await asyncio.wait_for(hostile.client_closed.wait(), 5)
        await hostile.stop()
    run(main())


def test_client_call_timeout_holds_while_a_reply_trickles_and_the_connection_is_dropped():
    async def main():
        hostile = await HostileServer(reply_size=1000, trickle=500, interval=0.01).start()
        async with ORB(timeout=0.5) as orb:
            ref = await orb.string_to_object(corbaloc(hostile.port), ECHO)
            call = asyncio.ensure_future(ref.echo_long(1))
            while hostile.sent < 5 and not call.done():
                await asyncio.sleep(0.01)
            (connection,) = orb._connections.values()
            assert 0 < connection.giop.incomplete_bytes < 1000    # what came, so far
            with pytest.raises(TIMEOUT):
                await call
            # The stalled reply would hold up every later one: the connection closed,
            # and what it held is let go.
            assert connection.closed and connection.giop.incomplete_bytes == 0
            await asyncio.wait_for(hostile.client_closed.wait(), 5)
            assert hostile.sent < 500
            with pytest.raises(TIMEOUT):     # a new connection, the same trickle
                await ref.echo_long(2)
            assert hostile.connections == 2
        await hostile.stop()
    run(main())
