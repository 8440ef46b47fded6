"""pycdr monitor --otlp: one span a call, sent to an OTLP/HTTP receiver the test runs
(it decodes the protobuf ExportTraceServiceRequest it is sent); the trace context
read from the requests' service contexts."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pycdr.addressing.iiop import IIOPProfile, make_ior
from pycdr.calls.traces import TRACE_CONTEXT_ID, trace_parent, traces_endpoint
from pycdr.capture.monitor import iter_calls
from pycdr.capture.write import TcpSession, write_pcap
from pycdr.codec.cdr import CDRWriter
from pycdr.codec.ior import ior_to_string
from pycdr.errors import PycdrError
from pycdr.giop.messages import (KeyAddr, LocateRequest, Reply, ReplyStatus, Request,
                                 encode_message)
from pycdr.giop.service_contexts import CodeSetsContext, RawServiceContext

pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest, ExportTraceServiceResponse)

MESSAGES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "captures", "messages.pcap")
PYCDR = [sys.executable, "-c", "from pycdr.cli.main import main; main()", "monitor"]
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
OTHER_TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
OTHER_CALLER_SPAN = "b7ad6b7169203331"
SPAN_KIND_SERVER = 2
STATUS_ERROR, STATUS_UNSET = 2, 0
SYSTEM_EXCEPTION = "IDL:omg.org/CORBA/BAD_PARAM:1.0"
USER_EXCEPTION = "IDL:Demo/NotFound:1.0"


def encapsulated_string(text: str) -> bytes:
    w = CDRWriter().encapsulation_writer()
    w.write_string(text)
    return w.getvalue()


def request(rid, op, *, contexts=(), expected=True):
    return encode_message(Request(version=(1, 2), request_id=rid, operation=op,
                                  response_flags=3 if expected else 0,
                                  target=KeyAddr(b"Echo"), service_contexts=list(contexts)))


def reply(rid, status=ReplyStatus.NO_EXCEPTION, body=b""):
    return encode_message(Reply(version=(1, 2), request_id=rid, reply_status=status,
                                body=body))


def body(*strings_and_ulongs):
    w = CDRWriter()
    for v in strings_and_ulongs:
        w.write_string(v) if isinstance(v, str) else w.write_ulong(v)
    return w.getvalue()


@pytest.fixture
def traffic(tmp_path):
    """A capture of calls with and without a trace context; an --ior file naming the
    target's interface."""
    packets = []
    s = TcpSession(packets)
    # 1: the traceparent as a CDR string under the id the docs suggest; codesets beside
    s.client_sends(request(1, "echo", contexts=[
        CodeSetsContext(0x05010001, 0x00010109),
        RawServiceContext(id=TRACE_CONTEXT_ID, data=encapsulated_string(
            f"00-{TRACE_ID}-{CALLER_SPAN}-01"))]))
    s.server_sends(reply(1))
    # 2: the traceparent as ASCII with a NUL under another (vendor) id; a system exception
    s.client_sends(request(2, "fail", contexts=[RawServiceContext(
        id=0x41424301, data=f"00-{OTHER_TRACE_ID}-{OTHER_CALLER_SPAN}-01\0".encode())]))
    s.server_sends(reply(2, ReplyStatus.SYSTEM_EXCEPTION,
                         body(SYSTEM_EXCEPTION, 0x4F4D0002, 1)))
    # 3: no context; a user exception
    s.client_sends(request(3, "find"))
    s.server_sends(reply(3, ReplyStatus.USER_EXCEPTION, body(USER_EXCEPTION)))
    # 4: a context that looks like one but is not (an upper-case trace id); oneway
    s.client_sends(request(4, "notify", expected=False, contexts=[RawServiceContext(
        id=TRACE_CONTEXT_ID, data=f"00-{TRACE_ID.upper()}-{CALLER_SPAN}-01".encode())]))
    # 5: a LocateRequest; 6: a request whose connection closes unanswered
    s.client_sends(encode_message(LocateRequest(version=(1, 2), request_id=5,
                                                target=KeyAddr(b"Echo"))))
    s.server_sends(encode_message(Reply(version=(1, 2), request_id=99,
                                        reply_status=ReplyStatus.NO_EXCEPTION)))
    # 7: a caller that did not sample its trace (flags 00): its decision holds, no span
    s.client_sends(request(7, "echo", contexts=[RawServiceContext(
        id=TRACE_CONTEXT_ID, data=f"00-{OTHER_TRACE_ID}-{CALLER_SPAN}-00".encode())]))
    s.server_sends(reply(7))
    s.client_sends(request(6, "echo"))
    s.close()
    path = str(tmp_path / "traced.pcap")
    write_pcap(path, packets)
    iors = tmp_path / "refs.txt"
    iors.write_text(ior_to_string(make_ior("IDL:Demo/Echo:1.0",
                                           [IIOPProfile((1, 2), "10.0.0.2", 2809, b"Echo")]))
                    + "\n")
    return path, str(iors)


class Receiver:
    """An OTLP/HTTP receiver on 127.0.0.1: POST /v1/traces, protobuf bodies decoded."""

    def __init__(self, status: int = 200):
        self.requests: list = []
        self.paths: list = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                data = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.paths.append((self.path, self.headers["Content-Type"]))
                message = ExportTraceServiceRequest()
                message.ParseFromString(data)
                receiver.requests.append(message)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def spans(self) -> list:
        out = []
        for message in self.requests:
            for resource_spans in message.resource_spans:
                resource = attributes(resource_spans.resource.attributes)
                for scope in resource_spans.scope_spans:
                    out += [(resource, span) for span in scope.spans]
        return out

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def attributes(kvs) -> dict:
    out = {}
    for kv in kvs:
        v = kv.value
        out[kv.key] = getattr(v, v.WhichOneof("value"))
    return out


def test_one_span_a_call_with_packet_times_attributes_and_trace_context(traffic, receiver):
    path, iors = traffic
    rows = {r["request_id"]: r for r in iter_calls(path)
            if r["message_type"] in ("Request", "LocateRequest")}
    p = subprocess.run(PYCDR + [path, "--ior", iors, "--sensor", "lab", "--otlp",
                                f"http://127.0.0.1:{receiver.port}"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
    assert {pth for pth, _ in receiver.paths} == {"/v1/traces"}
    assert {t for _, t in receiver.paths} == {"application/x-protobuf"}
    spans = receiver.spans()
    # the unmatched reply (id 99) is no call, 7's caller did not sample: no span
    assert len(spans) == 6
    resource = spans[0][0]
    assert resource["service.name"] == "pycdr-monitor" and resource["host.name"] == "lab"
    by_id = {}
    for _, span in spans:
        a = attributes(span.attributes)
        by_id[a["corba.request_id"]] = (span, a)
    assert set(by_id) == {1, 2, 3, 4, 5, 6}
    for rid, (span, a) in by_id.items():
        row = rows[rid]
        assert span.kind == SPAN_KIND_SERVER
        assert span.start_time_unix_nano == row["ts"]
        assert span.end_time_unix_nano == (row["reply_ts"] or row["ts"])
        assert (a["rpc.system.name"], a["server.address"], a["server.port"],
                a["client.address"], a["client.port"], a["network.transport"],
                a["network.protocol.name"], a["network.protocol.version"]) == \
            ("corba", "10.0.0.2", 2809, "10.0.0.1", row["client_port"], "tcp", "giop", "1.2")
        assert a["rpc.service"] == "IDL:Demo/Echo:1.0"
        assert a["corba.outcome"] == row["outcome"]
        assert a["network.community_id"] == row["community_id"]
    span, a = by_id[1]
    assert span.name == a["rpc.method"] == "IDL:Demo/Echo:1.0/echo"
    assert span.end_time_unix_nano - span.start_time_unix_nano == rows[1]["duration_ns"] > 0
    assert span.trace_id.hex() == TRACE_ID and span.parent_span_id.hex() == CALLER_SPAN
    assert span.span_id.hex() != CALLER_SPAN
    assert a["rpc.response.status_code"] == "NO_EXCEPTION" and "error.type" not in a
    assert span.status.code == STATUS_UNSET and not span.events
    span, a = by_id[2]
    assert span.trace_id.hex() == OTHER_TRACE_ID
    assert span.parent_span_id.hex() == OTHER_CALLER_SPAN
    assert a["error.type"] == SYSTEM_EXCEPTION
    assert (a["corba.minor_code"], a["corba.minor_code_name"],
            a["corba.completion_status"]) == (0x4F4D0002, "OMG minor 2", "COMPLETED_NO")
    assert span.status.code == STATUS_ERROR
    (event,) = span.events
    e = attributes(event.attributes)
    assert event.name == "exception" and event.time_unix_nano == rows[2]["reply_ts"]
    assert e["exception.type"] == SYSTEM_EXCEPTION
    assert e["exception.message"] == "SYSTEM_EXCEPTION, minor 0x4f4d0002 (OMG minor 2), " \
                                     "COMPLETED_NO"
    span, a = by_id[3]
    assert not span.parent_span_id and span.trace_id.hex() not in (TRACE_ID, OTHER_TRACE_ID)
    assert span.status.code == STATUS_ERROR and a["error.type"] == USER_EXCEPTION
    assert [attributes(ev.attributes)["exception.type"] for ev in span.events] == \
        [USER_EXCEPTION]
    span, a = by_id[4]
    assert not span.parent_span_id and a["corba.outcome"] == "oneway"
    span, a = by_id[5]
    assert span.name == "IDL:Demo/Echo:1.0/_locate"
    span, a = by_id[6]
    assert a["corba.outcome"] == "connection_closed" and span.status.code == STATUS_ERROR
    # every span of its own trace but those with a caller's context
    assert len({span.trace_id for span, _ in by_id.values()}) == 6


def test_trace_parent_forms():
    text = f"00-{TRACE_ID}-{CALLER_SPAN}-01"

    def entry(data: bytes):
        return {"service_contexts": [{"context_id": 1, "name": "CodeSets"},
                                     {"context_id": 77, "data": data.hex()}]}
    assert trace_parent(entry(text.encode())) == text
    assert trace_parent(entry(text.encode() + b"\0")) == text
    assert trace_parent(entry(encapsulated_string(text))) == text
    little = CDRWriter(little=True).encapsulation_writer()
    little.write_string(text)
    assert trace_parent(entry(little.getvalue())) == text
    for bad in (text[:-1].encode(), (text + "0").encode(), text.replace("-", "_").encode(),
                b"\xff" * 60, encapsulated_string(text)[:-2] + b"\0\0", b""):
        assert trace_parent(entry(bad)) is None
    assert trace_parent({}) is None and trace_parent({"service_contexts": None}) is None


def test_receiver_urls():
    assert traces_endpoint("http://h:4318") == "http://h:4318/v1/traces"
    assert traces_endpoint("http://h:4318/") == "http://h:4318/v1/traces"
    assert traces_endpoint("https://h/otlp/v1/traces") == "https://h/otlp/v1/traces"
    for bad in ("h:4318", "ftp://h/", "http://"):
        with pytest.raises(PycdrError):
            traces_endpoint(bad)
    p = subprocess.run(PYCDR + [os.devnull, "--otlp", "collector:4318"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "--otlp" in p.stderr


def test_spans_the_receiver_refuses_are_one_error_line():
    refusing = Receiver(status=400)         # (not a status the exporter retries)
    try:
        p = subprocess.run(PYCDR + [MESSAGES, "--otlp", f"http://127.0.0.1:{refusing.port}"],
                           capture_output=True, text=True, timeout=120)
    finally:
        refusing.close()
    spans = sum(1 for r in iter_calls(MESSAGES)
                if r["message_type"] in ("Request", "LocateRequest"))
    assert refusing.requests and p.returncode == 3 and p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert lines[0].startswith("warning: --otlp ") and "did not take" in lines[0]
    assert lines[-1] == f"error: --otlp http://127.0.0.1:{refusing.port}: {spans} of " \
                        f"{spans} spans could not be sent"
    assert len(lines) == 3 and "Traceback" not in p.stderr
