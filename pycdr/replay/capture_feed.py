"""The capture's side of a replay: its segments to the TCP reassembler (only the
selected connections' with --jobs), the reassembled streams to the GIOP decoder, the
replay told of gaps and closes, and capture errors as it lists them."""

from __future__ import annotations

from ..capture.giop import CaptureDecoder


def capture_error_line(entry: dict) -> str:
    """A capture error (a CaptureDecoder error entry) as the replay lists it."""
    return f"frame {entry['frame']} ({entry['src']} -> {entry['dst']}): " \
        f"{entry['error']['message']}"


def _only_flows(feed, flows: frozenset):
    """``feed`` given only the segments of ``flows`` (4-tuples)."""
    def feed_selected(segment):
        if segment[2:6] in flows:
            feed(segment)
    return feed_selected


class _SelectedSink:
    """(--jobs) A sink that tells ``selection`` of each connection the first time it
    delivers anything, as the plan's reader did (see pycdr.replay.jobs.ConnectionIds)."""

    def __init__(self, sink, selection):
        self._sink = sink
        self._seen = selection.ids.of
        self._forget = selection.ids.forget

    def data(self, flow, data, frame, ts):
        self._seen(flow)
        self._sink.data(flow, data, frame, ts)

    def gap(self, flow, missing, frame, ts):
        self._seen(flow)
        self._sink.gap(flow, missing, frame, ts)

    def closed(self, connection):
        self._sink.closed(connection)
        self._forget(connection)


class _Sink:
    """TcpReassembler's sink: the CaptureDecoder frames, the replay hears of gaps and
    closes."""

    def __init__(self, decoder: CaptureDecoder, closed, gap):
        self.data = decoder.data
        self._decoder_gap = decoder.gap
        self._decoder_closed = decoder.closed
        self._closed = closed
        self._gap = gap

    def gap(self, flow, missing: int, frame: int, ts: int) -> None:
        self._decoder_gap(flow, missing, frame, ts)
        self._gap(flow)

    def closed(self, connection) -> None:
        self._decoder_closed(connection)
        self._closed(connection)
