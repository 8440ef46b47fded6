"""The calls of a capture (file or live): ``pycdr monitor``'s engine.

    for row in iter_calls("traffic.pcap"):
        print(row["operation"], row["outcome"], row["duration_ns"])

:class:`CaptureCalls` is a :class:`pycdr.capture.tcp.TcpReassembler` sink over a
:class:`pycdr.capture.giop.CaptureDecoder` (framing, fragments, decoding: the same as
``pycdr pcap``'s) whose messages go to a :class:`pycdr.calls.tracker.CallTracker`:
rows (:mod:`pycdr.calls.schema`) come out as the packets go in.  Gaps (bytes the
capture lacks) and bytes that are not GIOP become rows of their own; the decoder
frames again after them (at the end of a message the gap cut, else at the next GIOP
header).  Memory is flat: connections are forgotten when they end and the tracker's
table of requests waiting for a reply is bounded.
"""

from __future__ import annotations

from ..calls.communityid import community_id
from ..errors import PycdrError
from ..calls.tracker import MAX_AGE_NS, MAX_PENDING, CallTracker
from ..giop.header import MsgType
from .giop import CaptureDecoder
from .read import CaptureReader, address_text
from .tcp import TcpReassembler

_FRAGMENT = MsgType.Fragment.value
# The decoder's warnings on a Fragment that continues no message.
_STRAY = frozenset(("fragment-misuse", "fragment-in-1.0"))


class CaptureCalls:
    """TCP segments in (:meth:`feed`, then :meth:`finish`), rows out to ``emit``.
    ``bodies``: a :class:`pycdr.calls.bodies.CallBodies` (``--idl``); ``interfaces``:
    object key (hex) -> repository id known beforehand (``--ior``), shared and added to;
    ``counts``: a :class:`pycdr.calls.tracker.CallCounts` to add to; ``on_request``:
    the tracker's (each request's row with its entry); ``explain``: the tracker's (a
    request a system exception answered, explained: --explain).
    ``shard=(k, n)``: the calls of the connections whose index is k modulo n alone (n
    such runs over one file give its rows between them, each row once: a file's
    connections spread over processes or machines)."""

    def __init__(self, emit, *, ports=None, heuristic: bool = True, bodies=None,
                 sensor: str | None = None, capture_file: str | None = None,
                 max_pending: int = MAX_PENDING, max_age_ns: int = MAX_AGE_NS,
                 interfaces=None, shard: tuple | None = None, counts=None,
                 on_request=None, explain=None):
        self.tracker = CallTracker(emit, max_pending=max_pending, max_age_ns=max_age_ns,
                                   bodies=bodies, sensor=sensor, capture_file=capture_file,
                                   interfaces=interfaces, counts=counts,
                                   on_request=on_request, explain=explain)
        self.decoder = CaptureDecoder(self._entry, ports, heuristic, bodies=False,
                                      track=self._message, track_bodies=bodies is not None,
                                      shard=shard)
        self.tcp = TcpReassembler(self)
        self.feed = self.tcp.in_order_feed(self._take_whole)
        self._conns: dict = {}          # tcp.Connection -> CallConnection
        self._flow = None               # the flow (and time) the decoder works on
        self._ts = 0
        self._ending = False
        # Fragment messages seen in the last segment: the decoder tells whether one
        # joined a message (nothing to say) or none (a violation) after it was tracked.
        self._fragments: list = []

    def finish(self) -> None:
        """The end of the traffic: connections still open end without their replies."""
        if self._fragments:
            self._settle()
        self._ending = True
        self.tcp.finish()
        self.tracker.finish()

    # -- the TcpReassembler sink (and in_order_feed's take) ------------------------------
    def data(self, flow, data: bytes, frame: int, ts: int) -> None:
        if self._fragments:
            self._settle()
        self._flow = flow
        self._ts = ts
        self.decoder.data(flow, data, frame, ts)

    def _take_whole(self, flow, data: bytes, frame: int, ts: int) -> bool:
        if self._fragments:
            self._settle()
        self._flow = flow
        self._ts = ts
        return self.decoder.take_whole(flow, data, frame, ts)

    def gap(self, flow, missing: int, frame: int, ts: int) -> None:
        if self._fragments:
            self._settle()
        self._flow = flow
        self._ts = ts
        self.decoder.gap(flow, missing, frame, ts)

    def closed(self, connection) -> None:
        if self._fragments:
            self._settle()
        self.decoder.closed(connection)
        conn = self._conns.pop(connection, None)
        if conn is not None and not self._ending:
            self.tracker.closed(conn)

    # -- the decoder's outputs -----------------------------------------------------------
    def _connection(self, connection):
        conn = self._conns.get(connection)
        if conn is None:
            src, sport, dst, dport = connection.flows[0].key
            # Until a request says, the client is the side not on a GIOP port, else
            # the one on the higher (ephemeral) port.
            ports = self.decoder.ports
            if (dport in ports) != (sport in ports):
                client = 0 if dport in ports else 1
            else:
                client = 0 if sport > dport else 1
            conn = self._conns[connection] = self.tracker.connection(
                connection.index, address_text(src), sport, address_text(dst), dport,
                community_id(src, sport, dst, dport), client)
        return conn

    def _message(self, flow, entry, msg, ts, request_id, msg_type) -> None:
        connection = flow.connection
        conn = self._conns.get(connection)
        if conn is None:
            conn = self._connection(connection)
        side = 0 if flow is connection.flows[0] else 1
        if msg_type == _FRAGMENT:
            self._fragments.append((conn, side, entry, ts))
        else:
            # The message's bytes, to explain (a message joined from fragments has none
            # whole: its last fragment's are the decoder's).
            raw = self.decoder.message_bytes \
                if self.tracker.explain is not None and "reassembled" not in entry else None
            self.tracker.message(conn, side, entry, ts, msg, raw)

    def _settle(self) -> None:
        """The Fragments that joined no message go to the tracker (a malformed row)."""
        for conn, side, entry, ts in self._fragments:
            if any(w["code"] in _STRAY for w in entry["warnings"]):
                self.tracker.message(conn, side, entry, ts)
        self._fragments.clear()

    def _entry(self, entry: dict) -> None:
        """Every entry the decoder emits: the messages went to _message already; errors
        (gaps, undecodable bytes) become rows here."""
        error = entry.get("error")
        if error is None:
            return
        header = entry.get("header")
        if header is not None and header.get("more_fragments"):
            return      # a first fragment too short to decode alone: the joined message tells
        flow = self._flow
        connection = flow.connection
        conn = self._connection(connection)
        side = 0 if flow is connection.flows[0] else 1
        if error["kind"] == "gap":
            self.tracker.gap(conn, side, self._ts, entry["missing"])
        else:
            self.tracker.malformed(conn, side, self._ts, error["type"], error["offset"],
                                   header)


def iter_calls(source=None, *, reader: CaptureReader | None = None, **options):
    """Every call row of a capture (a path or binary file, or an open ``reader``), as
    the file is read; ``options``: :class:`CaptureCalls`'s."""
    out: list = []
    calls = CaptureCalls(out.append, **options)
    feed = calls.feed
    if reader is None:
        reader = CaptureReader(source)
    with reader:
        try:
            for segment in reader:
                feed(segment)
                if out:
                    yield from out
                    out.clear()
        except PycdrError:
            # A file cut short (or bytes that are not a capture): the calls read so far
            # end as the capture does, then the error is the caller's.
            calls.finish()
            yield from out
            raise
        calls.finish()
        yield from out
