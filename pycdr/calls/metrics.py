"""Call rows as Prometheus metrics (``pycdr monitor --prometheus HOST:PORT``).

:class:`CallMetrics` is an output (``add(row)``, ``close()``) that counts rows into
metrics of the ``prometheus-client`` library (the ``monitor`` extra) and serves them
at ``http://HOST:PORT/metrics`` from a thread beside the capture.  What is not a row
(connections, requests evicted from the pending table, requests waiting, packets the
capture dropped) is read from the tracker's :class:`~pycdr.calls.tracker.CallCounts`
and from libpcap when a scrape comes.

Label values come from the wire (operation names, repository ids, exception ids), so
their number is bounded: each label takes at most ``label_limit`` distinct values;
past it a new value becomes ``other`` (:data:`FOLDED`) and the fold is counted in
``giop_label_values_folded_total{label=...}``.  A value is cut to
:data:`MAX_LABEL_CHARS` characters.  docs/monitor.md lists the metrics.
"""

from __future__ import annotations

from ..errors import PycdrError

PREFIX = "giop_"
LABEL_LIMIT = 100
FOLDED = "other"
MAX_LABEL_CHARS = 200
# Seconds: 100 µs (a call on loopback) to a minute (a timeout), about three a decade.
DURATION_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class LabelFolder:
    """Each label's values, ``limit`` distinct ones at most: past it, :data:`FOLDED`.
    ``folded[label]``: values folded so far (one a time a value was folded)."""

    def __init__(self, limit: int = LABEL_LIMIT):
        if limit < 1:
            raise ValueError("the label limit must be at least 1")
        self.limit = limit
        self.seen: dict = {}        # label -> set of its values kept
        self.folded: dict = {}      # label -> how many values became FOLDED

    def __call__(self, label: str, value) -> str:
        value = "" if value is None else str(value)[:MAX_LABEL_CHARS]
        seen = self.seen.get(label)
        if seen is None:
            seen = self.seen[label] = set()
        if value in seen:
            return value
        if len(seen) < self.limit:
            seen.add(value)
            return value
        self.folded[label] = self.folded.get(label, 0) + 1
        return FOLDED


def parse_address(text: str) -> tuple:
    """``HOST:PORT`` (``[v6]:PORT``; ``:PORT`` for every interface) as (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise PycdrError(f"--prometheus {text}: give HOST:PORT, e.g. 127.0.0.1:9464")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host or "0.0.0.0", int(port)


class CallMetrics:
    """Rows in (:meth:`add`), metrics out at ``/metrics`` once :meth:`serve` ran.
    ``counts``: the :class:`~pycdr.calls.tracker.CallCounts` the rows' trackers add to;
    ``dropped``: a callable giving the packets the capture dropped (libpcap's count),
    or None (files: the metric is absent)."""

    def __init__(self, counts, *, label_limit: int = LABEL_LIMIT, dropped=None,
                 created_series: bool = False):
        try:
            from prometheus_client import (CollectorRegistry, Counter, Histogram,
                                           disable_created_metrics)
        except ImportError:
            raise PycdrError("--prometheus needs prometheus-client: "
                             "pip install 'pycdr[monitor]'") from None
        if not created_series:
            # The library's *_created series double the series and Prometheus ignores
            # them; the switch is the library's, for the whole process.
            disable_created_metrics()
        self.counts = counts
        self.dropped = dropped
        self.fold = LabelFolder(label_limit)
        self.registry = r = CollectorRegistry(auto_describe=True)
        p = PREFIX
        call = ("interface", "operation", "outcome")
        self.duration = Histogram(
            p + "call_duration_seconds", "Time from a request to its reply, as captured",
            call, buckets=DURATION_BUCKETS, registry=r)
        self.calls = Counter(p + "calls", "Calls (rows of the call table) by outcome",
                             call, registry=r)
        self.request_bytes = Counter(
            p + "request_bytes", "Bytes of requests, GIOP headers included",
            ("interface", "operation"), registry=r)
        self.reply_bytes = Counter(
            p + "reply_bytes", "Bytes of replies, GIOP headers included",
            ("interface", "operation"), registry=r)
        self.exceptions = Counter(
            p + "exceptions", "Replies carrying a user or system exception (minor_code: "
            "a system exception's, as 0x hex; empty for a user exception)",
            ("interface", "operation", "exception_id", "minor_code"), registry=r)
        self.violations = Counter(p + "violations", "GIOP rules broken, by rule",
                                  ("code",), registry=r)
        r.register(_CountsCollector(self))
        self._server = None

    def add(self, row: dict) -> None:
        fold = self.fold
        interface = fold("interface", row["interface"])
        operation = fold("operation", row["operation"])
        outcome = row["outcome"]        # (one of schema.OUTCOMES: the code's own values)
        self.calls.labels(interface, operation, outcome).inc()
        duration = row["duration_ns"]
        if duration is not None:
            self.duration.labels(interface, operation, outcome).observe(duration / 1e9)
        # Bytes of messages seen: not a gap row's missing bytes (no message), nor the
        # size a malformed message's header claims.
        if row["message_type"] is not None and outcome != "malformed":
            if row["request_bytes"] is not None:
                self.request_bytes.labels(interface, operation).inc(row["request_bytes"])
            if row["reply_bytes"] is not None:
                self.reply_bytes.labels(interface, operation).inc(row["reply_bytes"])
        exception = row["exception_id"]
        if exception is not None:
            minor = row["minor_code"]
            self.exceptions.labels(interface, operation, fold("exception_id", exception),
                                   fold("minor_code", "" if minor is None else
                                        f"0x{minor:08x}")).inc()
        violations = row["violations"]
        if violations:
            for v in violations:
                self.violations.labels(fold("code", v["code"])).inc()

    def serve(self, host: str, port: int) -> tuple:
        """Serve ``/metrics`` on ``host:port`` from a thread; the address bound."""
        from prometheus_client import start_http_server
        try:
            self._server, _thread = start_http_server(port, host, registry=self.registry)
        except OSError as e:
            raise PycdrError(f"--prometheus {host}:{port}: cannot listen "
                             f"({e.strerror or e})") from None
        return self._server.server_address[:2]

    def close(self) -> None:
        """Stop serving (the caller lingers first when scrapes should see the end)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class _CountsCollector:
    """What is not a row, read when a scrape comes."""

    def __init__(self, metrics: CallMetrics):
        self.metrics = metrics

    def describe(self):
        return []

    def collect(self):
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
        m = self.metrics
        counts = m.counts
        p = PREFIX
        yield CounterMetricFamily(p + "connections", "TCP connections seen",
                                  value=counts.connections)
        yield CounterMetricFamily(
            p + "evicted_requests", "Requests the pending table let go (too old or too "
            "many waiting): no_reply rows", value=counts.evicted)
        yield GaugeMetricFamily(p + "pending_requests", "Requests waiting for their reply",
                                value=counts.pending)
        folded = CounterMetricFamily(
            p + "label_values_folded", f"Label values past the limit, counted as "
            f"'{FOLDED}'", labels=("label",))
        for label in ("interface", "operation", "exception_id", "minor_code", "code"):
            folded.add_metric((label,), m.fold.folded.get(label, 0))
        yield folded
        if m.dropped is not None:
            yield CounterMetricFamily(
                p + "capture_dropped_packets", "Packets the capture dropped (libpcap's "
                "count: no room in its buffer, or dropped by the interface)",
                value=m.dropped())
