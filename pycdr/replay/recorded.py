"""One recorded connection as the replay holds it: its messages read from the
capture and not handled yet, and the state of its replay to the target."""

from __future__ import annotations

import collections

QUEUE_MESSAGES = 256          # per recorded connection, read but not handled yet

_END = object()


class _Recorded:
    """One recorded connection: the reader's view of it, and its replay.

    ``items``: its messages in capture order not handled yet ((from_client, raw,
    ts), or _END).  ``waiting``: the calls whose replayed reply must come (or
    time out) before the next item is handled -- with a window, the calls sent
    whose replayed reply has not come -- oldest first, with the deadline of the
    first."""
    __slots__ = ("client_key", "server", "target", "session", "items", "waiting",
                 "deadline", "sock", "pcap_flow", "failure", "ended", "replies_lost",
                 "undecided", "barrier", "unsent", "outbuf", "write_deadline", "prepared",
                 "lane", "lane_on", "lane_stamp", "lane_taken", "short_runs")

    def __init__(self):
        self.client_key = None     # the client flow's key, once known
        self.server = ""
        self.target = None         # Target; None: skipped (no target for its server)
        self.session = None
        self.items: collections.deque = collections.deque()
        self.waiting: collections.deque = collections.deque()
        self.deadline = 0.0
        self.sock = None
        self.pcap_flow = None
        self.failure = ""          # why nothing more can be sent
        self.ended = False         # the recording's connection ended
        self.replies_lost = False  # bytes the server sent are missing from the capture
        # --window > 1: the calls whose replayed reply came before their recorded one
        # (replay id -> Call); the call whose replayed reply may teach a key (nothing
        # more is sent before it comes); the messages to send in one go.
        self.undecided: dict = {}
        self.barrier = None
        self.unsent: list = []
        # --window > 1 (a non-blocking socket): the bytes the target has not taken yet,
        # written as it reads (the replay reads its replies meanwhile: neither side
        # waits on the other), and when they must have been taken by.
        self.outbuf = bytearray()
        self.write_deadline = 0.0
        # --window 1: the next client message, rewritten while the reply it follows is
        # awaited ((bytes, Call) as ReplaySession.outgoing gives them), sent as soon as
        # that reply comes, before it is compared (see Replay._prepare).
        self.prepared = None
        # The connection's pycdr._replaylane.Lane (None: none), whether it holds the
        # connection now, and what its shape table was built from.
        self.lane = None
        self.lane_on = False
        self.lane_stamp = None
        # Items the lane took since it last took the connection on; how many of its
        # last runs in a row took fewer than LANE_RUN (see _advance).
        self.lane_taken = 0
        self.short_runs = 0
