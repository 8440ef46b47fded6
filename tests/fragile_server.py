"""A deliberately fragile GIOP server for the fuzzer's tests: the reference
ORB's transport (pycdr.orb.server) serving the conformance Echo interface,
with three planted faults.

- crash: an ``echo_any`` Request whose any's TypeCode is an indirection to
  itself (kind 0xffffffff, offset -4) makes the process exit (os._exit(70));
- hang: a GIOP 1.2 Fragment naming a request id other than the fragmented
  message(s) pending on the connection (a lying fragment chain) blocks the
  event loop for an hour: nobody gets an answer any more;
- flood: a GIOP 1.2 LocateRequest whose TargetAddress discriminator is 3
  (there are only 0, 1 and 2) is answered with LocateReplies without end.

Everything else is the reference ORB.  Run as a script it prints its IOR and
serves on 127.0.0.1 (a free port, or --port) until killed:

    python tests/fragile_server.py [--port N]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pycdr.codec.cdr import CDRReader  # noqa: E402
from pycdr.errors import PycdrError                                # noqa: E402
from pycdr.giop.connection import GiopConnection, Role             # noqa: E402
from pycdr.giop.header import HEADER_SIZE, MsgType                 # noqa: E402
from pycdr.giop.messages import (LocateReply, LocateStatus,        # noqa: E402
                                 decode_message, encode_message)
from pycdr.orb import EchoServant                                  # noqa: E402
from pycdr.orb import server as orb_server                         # noqa: E402

CRASH_EXIT_CODE = 70
SELF_INDIRECTION = -4
BAD_TARGET_DISCRIMINATOR = 3


class FragileGiop(GiopConnection):
    owner = None        # the _FragileConnection (for the flood)

    def _handle(self, header, raw, offset):
        if header.msg_type == MsgType.Request and not header.more_fragments:
            _crash_on_self_indirection(raw)
        if header.msg_type == MsgType.LocateRequest and header.version >= (1, 2) \
                and len(raw) >= HEADER_SIZE + 6:
            r = CDRReader(raw, start=HEADER_SIZE, little=header.little)
            request_id = r.read_ulong()
            if r.read_short() == BAD_TARGET_DISCRIMINATOR:
                self.owner.start_flood(header, request_id)
                return None
        return super()._handle(header, raw, offset)

    def _handle_fragment(self, header, raw, offset):
        if header.version >= (1, 2) and len(raw) >= HEADER_SIZE + 4 and self._fragmented:
            request_id = CDRReader(raw, start=HEADER_SIZE, little=header.little).read_ulong()
            if request_id not in self._fragmented and request_id not in \
                    self._dropped_fragment_ids:
                time.sleep(3600)            # the planted hang: blocks the whole server
        return super()._handle_fragment(header, raw, offset)


def _crash_on_self_indirection(raw: bytes) -> None:
    try:
        msg, _ = decode_message(raw, lenient=True)
        if msg.operation != "echo_any" or not msg.body:
            return
        r = msg.body_reader()
        if r.read_ulong() == 0xFFFFFFFF and r.read_long() == SELF_INDIRECTION:
            os._exit(CRASH_EXIT_CODE)           # the planted crash
    except (PycdrError, AttributeError, ValueError):
        return


class _FragileConnection(orb_server._ServerConnection):
    def __init__(self, server, stream):
        super().__init__(server, stream)
        self.giop.owner = self

    def start_flood(self, header, request_id) -> None:
        reply = encode_message(LocateReply(version=header.version, little=header.little,
                                           request_id=request_id,
                                           locate_status=LocateStatus.OBJECT_HERE))

        async def flood():
            while not self.closed:          # the planted flood: replies without end
                self._write(reply * 16)
                await self._drain()
                # drain() returns at once while the write buffer has room: yield,
                # so that the loop sees the peer go (and the flood stop).
                await asyncio.sleep(0)
        task = asyncio.ensure_future(flood())
        self.tasks.add(task)


class FragileServer(orb_server.Server):
    def _new_stream(self):
        stream = super()._new_stream()
        # The same connection as the reference ORB's, with the planted faults.
        stream.giop = FragileGiop(Role.SERVER, version=orb_server.SERVER_GIOP_VERSION,
                                  max_message_size=self.limits.max_message_size)
        return stream

    def _accept(self, stream) -> None:
        connection = _FragileConnection(self, stream)
        self.connections.add(connection)
        connection.start()


async def serve(port: int) -> None:
    from pycdr.conformance.echo import ECHO_INTERFACE, load_echo_module
    server = FragileServer(host="127.0.0.1", port=port)
    key = server.activate(EchoServant(load_echo_module().interfaces[ECHO_INTERFACE]), "Echo")
    await server.start()
    print(server.ior_string(key), flush=True)
    await asyncio.Event().wait()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.CRITICAL)
    asyncio.run(serve(args.port))


if __name__ == "__main__":
    main()
