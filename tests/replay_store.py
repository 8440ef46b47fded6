"""The ReplayTest::Store servant of the replay tests, spoken at the GIOP level:
replies computed by pycdr's codec from tests/idl/replay/store.idl, for writing a
"recorded" capture and for a target server (a thread on 127.0.0.1) to replay it to.

A variant says where the servant lives (its object keys) and how it may differ:
``differ="list"`` makes the fourth item's name of list() another (``"numbers"``: its count
and weight); ``padding`` is the
byte its replies leave in their padding (omniORB leaves it uninitialised: the same
values in other bytes).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from dataclasses import dataclass

from pycdr import idl
from pycdr.codec.cdr import CDRReader, CDRWriter
from pycdr.errors import PycdrError
from pycdr.giop.connection import GiopConnection, Role
from pycdr.giop.events import NEED_DATA, ConnectionClosed, MessageReceived
from pycdr.giop.messages import (KeyAddr, LocateReply, LocateRequest, LocateStatus, Reply,
                                 ReplyStatus, Request, encode_message)
from pycdr.addressing.iiop import IIOPProfile, make_ior
from pycdr.codec.marshal import read_value, write_value
from pycdr.capture.write import TcpSession, write_pcap

STORE_IDL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "idl", "replay",
                         "store.idl")
MODULE = idl.load(STORE_IDL, register=False)
STORE = MODULE.interfaces["ReplayTest::Store"]
OPS = STORE.all_operations()
ITEM = MODULE.classes["ReplayTest::Item"]
NOT_FOUND_TC = MODULE.types["ReplayTest::NotFound"]
NOT_FOUND = MODULE.classes["ReplayTest::NotFound"]
STORE_ID = STORE.repo_id


@dataclass
class Variant:
    store_key: bytes = b"OldStore"
    other_key: bytes = b"OldOther"
    host: str = "10.0.0.2"
    port: int = 2809
    differ: str = ""
    little: bool = False
    slow: float = 0.0                   # seconds find() takes (StoreServer)
    padding: int = 0                    # the byte the replies' padding holds


def body(types, values, little: bool, version=(1, 2)) -> bytes:
    w = CDRWriter(little=little, version=version)
    for tc, v in zip(types, values):
        write_value(w, tc, v)
    return w.getvalue()


_PADDED: dict = {}


def padded(types, values, data: bytes, little: bool, version, junk: int) -> bytes:
    """``data``, the CDR bytes of ``values``, with ``junk`` in its padding: the zero
    bytes whose change changes no value read back (strictly) and breaks no read."""
    key = (data, little, version, junk)
    if key not in _PADDED:
        out = bytearray(data)
        for i, b in enumerate(data):
            if b:
                continue
            trial = bytearray(data)
            trial[i] = junk
            r = CDRReader(bytes(trial), little=little, version=version)
            try:
                back = [read_value(r, tc) for tc in types]
            except PycdrError:
                continue
            if back == list(values) and r.pos == len(data):
                out[i] = junk
        _PADDED[key] = bytes(out)
    return _PADDED[key]


def request(rid: int, op: str, args, *, key=b"OldStore", little=False, version=(1, 2),
            oneway=False) -> Request:
    types = [p.type for p in OPS[op].in_params]
    return Request(version=version, little=little, request_id=rid, operation=op,
                   target=KeyAddr(key), response_flags=0 if oneway else 3,
                   body=body(types, args, little, version))


def reply_to(msg, variant: Variant):
    """The servant's reply to a decoded Request or LocateRequest (None: a oneway or a
    CancelRequest)."""
    if not isinstance(msg, (Request, LocateRequest)):
        return None
    if isinstance(msg, LocateRequest):
        return LocateReply(version=msg.version, little=variant.little, request_id=msg.request_id,
                           locate_status=LocateStatus.OBJECT_HERE)
    op = OPS[msg.operation]
    r = msg.body_reader()
    args = [read_value(r, p.type) for p in op.in_params]
    if msg.operation == "ping":
        return None
    status = ReplyStatus.NO_EXCEPTION
    if msg.operation == "list":
        items = [ITEM(f"item{i}", i, i * 1.5) for i in range(args[0])]
        if variant.differ == "list" and len(items) > 3:
            items[3] = ITEM("changed", 3, 4.5)
        if variant.differ == "numbers" and len(items) > 3:
            items[3] = ITEM("item3", 30, 4.75)
        types, values = [op.result], [items]
    elif msg.operation == "find":
        if args[0] == "missing":
            status = ReplyStatus.USER_EXCEPTION
            types, values = [NOT_FOUND_TC], [NOT_FOUND(args[0], 7)]
        else:
            types, values = [op.result], [ITEM(args[0], len(args[0]), 0.5)]
    elif msg.operation == "total":
        types = [op.result] + [p.type for p in op.out_params]
        values = [args[0] * 2, f"total {args[0]}", args[1] * 2]
    else:                                               # other()
        ior = make_ior(STORE_ID, [IIOPProfile((1, 2), variant.host, variant.port,
                                              variant.other_key)])
        types, values = [op.result], [ior]
    data = body(types, values, variant.little, msg.version)
    if variant.padding:
        data = padded(types, values, data, variant.little, msg.version, variant.padding)
    return Reply(version=msg.version, little=variant.little, request_id=msg.request_id,
                 reply_status=status, body=data)


def record(path: str, conversations, variant: Variant = Variant(), *,
           client_ip="10.0.0.1") -> None:
    """A capture of ``conversations`` (per connection, a list of Requests; ``None``
    between them: wait for the replies so far) answered by ``variant``'s servant."""
    packets: list = []
    for messages in conversations:
        session = TcpSession(packets, variant.port, client_ip=client_ip,
                             server_ip=variant.host)
        for msg in messages:
            session.client_sends(encode_message(msg))
            answer = reply_to(msg, variant)
            if answer is not None:
                session.server_sends(encode_message(answer))
        session.close()
    write_pcap(path, packets)


class StoreServer:
    """The servant served on 127.0.0.1 (a thread per connection); ``received``
    holds every Request/LocateRequest that came, in order."""

    def __init__(self, variant: Variant, ssl_context=None):
        self.variant = variant
        self.ssl_context = ssl_context          # TLS when given (a server context)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        variant.host, variant.port = "127.0.0.1", self.port
        self.received: list = []
        self.most_at_once = 0           # the most requests that came in one recv()
        self.connections = 0
        self._threads: list = []
        self._stop = False
        self._accept = threading.Thread(target=self._serve, daemon=True)
        self._accept.start()

    @property
    def corbaloc(self) -> str:
        key = "".join(chr(b) if chr(b).isalnum() else f"%{b:02x}"
                      for b in self.variant.store_key)
        return f"corbaloc::1.2@127.0.0.1:{self.port}/{key}"

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            t = threading.Thread(target=self._connection, args=(conn,), daemon=True)
            t.start()                   # (before close() may see it and join it)
            self._threads.append(t)

    def _connection(self, conn) -> None:
        giop = GiopConnection(Role.SERVER, version=(1, 3), lenient=True,
                              check_request_ids=False)
        if self.ssl_context is not None:
            try:
                conn = self.ssl_context.wrap_socket(conn, server_side=True)
            except OSError:
                conn.close()
                return
        with conn:
            while True:
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                giop.receive_data(data)
                events = []
                while True:
                    event = giop.next_event()
                    if event is NEED_DATA:
                        break
                    events.append(event)
                    if isinstance(event, ConnectionClosed):
                        break
                self.most_at_once = max(self.most_at_once, sum(
                    isinstance(e, MessageReceived) and
                    isinstance(e.message, (Request, LocateRequest)) for e in events))
                for event in events:
                    if isinstance(event, ConnectionClosed):
                        return
                    if isinstance(event, MessageReceived) and \
                            isinstance(event.message, (Request, LocateRequest)):
                        self.received.append(event.message)
                        if getattr(event.message, "operation", "") == "find":
                            time.sleep(self.variant.slow)
                        answer = reply_to(event.message, self.variant)
                        if answer is not None:
                            try:
                                conn.sendall(encode_message(answer))
                            except OSError:     # the replay closed first (a test's end)
                                return
                if not data:
                    return

    def close(self) -> None:
        self._stop = True
        self.sock.close()
        for t in self._threads:
            t.join(timeout=5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
