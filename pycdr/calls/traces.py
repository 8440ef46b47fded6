"""Call rows as OpenTelemetry spans (``pycdr monitor --otlp URL``).

:class:`CallSpans` is an output (``add(row)``, ``close()``) that makes one span a call
-- a row opened by a Request or LocateRequest -- with the OpenTelemetry SDK and sends
them in batches to an OTLP/HTTP (protobuf) receiver (the ``monitor`` extra).

- Kind SERVER: a passive monitor sees both sides of a call, and each span stands for
  the call as it crossed the wire into the server.  When the request carries the
  caller's trace context, the caller's own span is the CLIENT span and this span its
  child; without one, the span starts a trace as an instrumented server's would.
- Times: start at the request's capture time, end at the reply's (the packets'
  timestamps, not the clock of the exporting machine); a call without a reply ends
  where it started.
- Attributes after the RPC semantic conventions (stable RPC conventions, v1.38 on):
  ``rpc.system.name`` ``corba`` (a value of the open list's own choosing: the list
  names no CORBA), ``rpc.method`` ``INTERFACE/operation`` (the operation alone when the
  interface is not known) and the span's name, ``rpc.service`` the interface
  (earlier conventions), ``rpc.response.status_code`` the reply status,
  ``error.type`` the exception's repository id, ``server.address``/``server.port``,
  ``client.address``/``client.port``, ``network.transport`` ``tcp``,
  ``network.protocol.name`` ``giop`` and its version; ``corba.*`` for the rest of
  the row (:data:`CORBA_ATTRIBUTES`).
- A user or system exception: an ``exception`` event (``exception.type``,
  ``exception.message``) at the reply's time, and status ERROR; a call whose
  connection closed before its reply is ERROR too.
- The trace context: CORBA defines no service context for it (IOP::ServiceId lists
  none), so the W3C ``traceparent`` is read from any service context pycdr does not
  decode itself (:func:`trace_parent`): its data the traceparent text (ASCII, a
  trailing NUL allowed) or a CDR encapsulation of a string holding it.
  :data:`TRACE_CONTEXT_ID` is the id pycdr's docs suggest to an ORB's interceptor.
  The span is the caller's span's child, and the caller's sampling decision holds
  (the SDK's parent-based sampler: no span when the flags say "not sampled").
"""

from __future__ import annotations

import re
import struct
from urllib.parse import urlsplit

from ..errors import PycdrError

SERVICE_NAME = "pycdr-monitor"
RPC_SYSTEM = "corba"
# The context id the docs suggest for a traceparent: "PCT" and 1 (a vendor-range id,
# not an OMG-assigned one; any id is read, see trace_parent).
TRACE_CONTEXT_ID = 0x50435401
_TRACEPARENT = re.compile(rb"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")
_TRACEPARENT_BYTES = 55
# row field -> span attribute, for what the RPC conventions have no name for
CORBA_ATTRIBUTES = {
    "outcome": "corba.outcome", "request_id": "corba.request_id",
    "object_key": "corba.object_key", "object_key_text": "corba.object_key_text",
    "minor_code": "corba.minor_code", "minor_code_name": "corba.minor_code_name",
    "completion_status": "corba.completion_status", "forward_to": "corba.forward_to",
    "request_bytes": "corba.request_bytes", "reply_bytes": "corba.reply_bytes",
    "community_id": "network.community_id", "stream": "corba.stream",
}
_ERRORS = frozenset(("failure", "connection_closed"))


def trace_parent(entry: dict) -> str | None:
    """The W3C traceparent a request's service contexts carry (see the module doc),
    or None."""
    for context in entry.get("service_contexts") or ():
        data = context.get("data")
        if data is None or not 2 * _TRACEPARENT_BYTES <= len(data) <= 2 * 72:
            continue                # a context pycdr decodes, or one too short or long
        raw = bytes.fromhex(data)
        text = _encapsulated_string(raw)
        for candidate in (raw.rstrip(b"\0"), text):
            if candidate is not None and len(candidate) == _TRACEPARENT_BYTES and \
                    _TRACEPARENT.fullmatch(candidate):
                return candidate.decode("ascii")
    return None


def _encapsulated_string(raw: bytes) -> bytes | None:
    """The string of a CDR encapsulation holding one string (without its NUL)."""
    if len(raw) < 8 or raw[0] > 1:
        return None
    (n,) = struct.unpack_from("<I" if raw[0] else ">I", raw, 4)
    if n != len(raw) - 8 or n < 1 or raw[-1] != 0:
        return None
    return raw[8:-1]


def traces_endpoint(url: str) -> str:
    """The URL spans are posted to: ``url``, or ``url/v1/traces`` when it has no path."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise PycdrError(f"--otlp {url}: give an http:// or https:// URL, e.g. "
                         "http://127.0.0.1:4318/v1/traces")
    if parts.path in ("", "/"):
        return url.rstrip("/") + "/v1/traces"
    return url


class CallSpans:
    """Rows in (:meth:`add`), spans out to the OTLP/HTTP receiver at ``url``
    (:meth:`request` is the tracker's ``on_request``: it keeps the trace context).
    ``failed``: spans the receiver did not take (after the exporter's retries);
    ``on_failure()`` hears of the first batch lost."""

    def __init__(self, url: str, *, sensor: str | None = None, timeout: float = 10.0,
                 on_failure=None):
        endpoint = traces_endpoint(url)
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import \
                OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
            from opentelemetry.trace import SpanKind, Status, StatusCode
            from opentelemetry.trace.propagation.tracecontext import \
                TraceContextTextMapPropagator
        except ImportError:
            raise PycdrError("--otlp needs the OpenTelemetry SDK and its OTLP exporter: "
                             "pip install 'pycdr[monitor]'") from None
        import os
        resource = {} if os.environ.get("OTEL_SERVICE_NAME") else {
            "service.name": SERVICE_NAME}
        if sensor:
            resource["host.name"] = sensor
        self.provider = TracerProvider(resource=Resource.create(resource))
        self.exporter = _CountingExporter(OTLPSpanExporter(endpoint=endpoint,
                                                           timeout=timeout), on_failure)
        self.provider.add_span_processor(BatchSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("pycdr.calls.traces")
        self._kind = SpanKind.SERVER
        self._status = Status
        self._error = StatusCode.ERROR
        self._extract = TraceContextTextMapPropagator().extract
        self._parents: dict = {}        # id(row) -> traceparent, until the row comes
        self.spans = 0

    def request(self, row: dict, entry: dict) -> None:
        parent = trace_parent(entry)
        if parent is not None:
            self._parents[id(row)] = parent

    def add(self, row: dict) -> None:
        parent = self._parents.pop(id(row), None) if self._parents else None
        if row["message_type"] not in ("Request", "LocateRequest"):
            return                  # not a call: an unmatched reply, a gap, a cancel...
        interface, operation = row["interface"], row["operation"]
        if operation is None:
            operation = "_locate"   # a LocateRequest names no operation
        method = f"{interface}/{operation}" if interface else operation
        attributes = {"rpc.system.name": RPC_SYSTEM, "rpc.method": method,
                      "network.transport": "tcp", "network.protocol.name": "giop",
                      "network.protocol.version": row["giop_version"],
                      "server.address": row["server_ip"], "server.port": row["server_port"],
                      "client.address": row["client_ip"], "client.port": row["client_port"]}
        if interface:
            attributes["rpc.service"] = interface
        status = row["reply_status"]
        if status is not None:
            attributes["rpc.response.status_code"] = status
        for name, key in CORBA_ATTRIBUTES.items():
            value = row[name]
            if value is not None:
                attributes[key] = value
        outcome = row["outcome"]
        exception = row["exception_id"]
        if outcome == "failure":
            attributes["error.type"] = exception or status
        context = None if parent is None else self._extract({"traceparent": parent})
        start = row["ts"]
        end = row["reply_ts"] if row["reply_ts"] is not None else start
        span = self.tracer.start_span(method, context=context, kind=self._kind,
                                      attributes=attributes, start_time=start)
        if exception is not None:
            message = status
            if row["minor_code"] is not None:
                message += f", minor 0x{row['minor_code']:08x}"
                if row["minor_code_name"]:
                    message += f" ({row['minor_code_name']})"
            if row["completion_status"]:
                message += ", " + row["completion_status"]
            span.add_event("exception", {"exception.type": exception,
                                         "exception.message": message}, timestamp=end)
        if outcome in _ERRORS:
            span.set_status(self._status(self._error, exception or status or outcome))
        span.end(end_time=end)
        self.spans += 1

    @property
    def failed(self) -> int:
        return self.exporter.failed

    def close(self) -> None:
        """Send the spans still waiting, then stop."""
        self.provider.shutdown()


def _CountingExporter(exporter, on_failure):
    """``exporter``, counting the spans of the batches it could not send."""
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class CountingExporter(SpanExporter):
        def __init__(self):
            self.failed = 0

        def export(self, spans):
            result = exporter.export(spans)
            if result is not SpanExportResult.SUCCESS:
                if not self.failed and on_failure is not None:
                    on_failure()
                self.failed += len(spans)
            return result

        def shutdown(self):
            exporter.shutdown()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return exporter.force_flush(timeout_millis)

    return CountingExporter()
