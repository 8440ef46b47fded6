"""Statistics of the GIOP traffic of a capture: what `pycdr pcap --stats` shows.

    stats = CaptureStats()
    for entry in iter_capture(path, matched=stats.matched, unanswered=stats.unanswered):
        stats.add(entry)
    stats.to_json()

Per operation and per endpoint pair (client -> server, as the request went):
calls, replies, user and system exceptions by name, unanswered requests (a
reply expected, none seen before the connection ended), oneway calls, response
time p50/p90/p99/max, bytes (requests and their replies, headers included).
Over the capture: messages by type, GIOP versions and byte orders seen,
protocol violations by code (the decoder's warnings) and undecodable messages
by error type, replies whose request the capture does not hold.

Memory stays flat: response times go into a histogram with buckets 1% wide
(quantiles within 1% of the exact value; the maximum is exact).
"""

from __future__ import annotations

import math

_BUCKET_RATIO = 1.01
_PER_LOG = 1 / math.log(_BUCKET_RATIO)
_FLOOR = 1e-9                   # response times below a nanosecond go into one bucket
_FLOOR_BUCKETS = -math.log(_FLOOR) * _PER_LOG   # log(s / floor) / log(ratio), one log a call


class LatencyHistogram:
    __slots__ = ("buckets", "count", "max")
    # How add() buckets a sample: (floor, buckets per unit of log, buckets below 1 s);
    # pycdr._replaylane counts latencies with the same arithmetic (see merge).
    BUCKETING = (_FLOOR, _PER_LOG, _FLOOR_BUCKETS)

    def __init__(self):
        self.buckets: dict = {}
        self.count = 0
        self.max = 0.0

    def add(self, seconds: float) -> None:
        key = -1 if seconds < _FLOOR else int(math.log(seconds) * _PER_LOG + _FLOOR_BUCKETS)
        buckets = self.buckets
        buckets[key] = buckets.get(key, 0) + 1
        self.count += 1
        if seconds > self.max:
            self.max = seconds

    def merge(self, buckets: dict | None, count: int, maximum: float) -> None:
        """Samples counted elsewhere by add()'s bucketing: ``buckets`` (bucket -> samples,
        or None for none), how many, the largest."""
        if buckets:
            mine = self.buckets
            for key, n in buckets.items():
                mine[key] = mine.get(key, 0) + n
        self.count += count
        if count and maximum > self.max:
            self.max = maximum

    def quantile(self, q: float) -> float | None:
        """The value below which a fraction ``q`` of the samples lie (the
        geometric middle of its bucket, never above the maximum)."""
        if not self.count:
            return None
        rank = q * self.count
        seen = 0
        for key in sorted(self.buckets):
            seen += self.buckets[key]
            if seen >= rank:
                if key < 0:
                    return 0.0
                return round(min(_FLOOR * _BUCKET_RATIO ** (key + 0.5), self.max), 9)
        return self.max


class CallStats:
    """The counters of one operation or one endpoint pair."""
    __slots__ = ("calls", "oneway", "replies", "user_exceptions", "system_exceptions",
                 "unanswered", "bytes", "latency")

    def __init__(self):
        self.calls = 0
        self.oneway = 0
        self.replies = 0
        self.user_exceptions: dict = {}
        self.system_exceptions: dict = {}
        self.unanswered = 0
        self.bytes = 0
        self.latency = LatencyHistogram()

    def to_json(self) -> dict:
        lat = self.latency
        return {"calls": self.calls, "oneway": self.oneway, "replies": self.replies,
                "user_exceptions": dict(sorted(self.user_exceptions.items())),
                "system_exceptions": dict(sorted(self.system_exceptions.items())),
                "unanswered": self.unanswered, "bytes": self.bytes,
                "response_time": {"p50": lat.quantile(0.5), "p90": lat.quantile(0.9),
                                  "p99": lat.quantile(0.99),
                                  "max": lat.max if lat.count else None}}


# How a LocateRequest is named where operations are (statistics, `--only`/`--skip`): in
# parentheses, which no IDL operation name has.
LOCATE_OPERATION = "(LocateRequest)"


def operation_of(entry: dict) -> str:
    """A Request's operation; ``(LocateRequest)`` for a LocateRequest."""
    return entry["operation"] if "operation" in entry else f"({entry['type']})"


def pair_of(request: dict) -> str:
    return f"{request['src']} -> {request['dst']}"


def _size(entry: dict) -> int:
    return 12 + entry.get("message_size", 0)


class CaptureStats:
    def __init__(self):
        self.operations: dict = {}
        self.pairs: dict = {}
        self.types: dict = {}
        self.versions: dict = {}            # "1.2 little-endian" -> messages
        self.violations: dict = {}          # warning code -> count
        self.errors: dict = {}              # "TruncatedError (truncated)" -> count
        self.orphan_replies = 0             # replies to requests the capture does not hold

    def _both(self, request: dict):
        op = self.operations.get(operation_of(request))
        if op is None:
            op = self.operations[operation_of(request)] = CallStats()
        pair = self.pairs.get(pair_of(request))
        if pair is None:
            pair = self.pairs[pair_of(request)] = CallStats()
        return op, pair

    def add(self, entry: dict) -> None:
        """Every entry of :func:`pycdr.capture.giop.iter_capture`, in order."""
        error = entry.get("error")
        if error is not None:
            key = f"{error['type']} ({error['kind']})"
            self.errors[key] = self.errors.get(key, 0) + 1
            return
        t = entry["type"]
        self.types[t] = self.types.get(t, 0) + 1
        version = f"{entry['version']} {'little' if entry['little_endian'] else 'big'}-endian"
        self.versions[version] = self.versions.get(version, 0) + 1
        for w in entry["warnings"]:
            self.violations[w["code"]] = self.violations.get(w["code"], 0) + 1
        if entry["more_fragments"]:
            return                          # counted once whole (the reassembled entry)
        if t == "Request" or t == "LocateRequest":
            size = _size(entry)
            oneway = t == "Request" and not entry.get(
                "response_expected", entry.get("response_flags", 3) != 0)
            for s in self._both(entry):
                s.calls += 1
                s.bytes += size
                s.oneway += oneway
        elif (t == "Reply" or t == "LocateReply") and "request_frame" not in entry:
            self.orphan_replies += 1

    def matched(self, request: dict, reply: dict) -> None:
        """A reply and its request (``CaptureDecoder``'s ``matched``)."""
        size = _size(reply)
        user = reply.get("exception_id") if reply.get("reply_status") == "USER_EXCEPTION" \
            else None
        system = reply["system_exception"]["name"] if "system_exception" in reply else None
        seconds = reply["response_time"]
        for s in self._both(request):
            s.replies += 1
            s.bytes += size
            s.latency.add(seconds)
            if user is not None:
                s.user_exceptions[user] = s.user_exceptions.get(user, 0) + 1
            if system is not None:
                s.system_exceptions[system] = s.system_exceptions.get(system, 0) + 1

    def unanswered(self, request: dict) -> None:
        """A request no reply will answer (``CaptureDecoder``'s ``unanswered``)."""
        for s in self._both(request):
            s.unanswered += 1

    def to_json(self) -> dict:
        return {"operations": {k: v.to_json() for k, v in sorted(self.operations.items())},
                "endpoint_pairs": {k: v.to_json() for k, v in sorted(self.pairs.items())},
                "message_types": dict(sorted(self.types.items())),
                "versions": dict(sorted(self.versions.items())),
                "violations": dict(sorted(self.violations.items())),
                "errors": dict(sorted(self.errors.items())),
                "replies_without_request": self.orphan_replies}
