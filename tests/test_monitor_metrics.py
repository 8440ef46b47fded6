"""pycdr monitor --prometheus: the metrics of the calls, scraped by a real Prometheus
server (Debian's `prometheus`, .ci/install-peers.sh) and read back with PromQL; label
values from the wire folded past a limit."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import string
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest

from pycdr.calls.metrics import FOLDED, CallMetrics, LabelFolder, parse_address
from pycdr.calls.schema import EMPTY_ROW
from pycdr.calls.tracker import CallCounts
from pycdr.capture.monitor import iter_calls
from pycdr.errors import PycdrError

HERE = os.path.dirname(os.path.abspath(__file__))
MESSAGES = os.path.join(os.path.dirname(HERE), "captures", "messages.pcap")
PYCDR = [sys.executable, "-c", "from pycdr.cli.main import main; main()", "monitor"]
SCRAPES_SECONDS = 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def samples(registry, name: str) -> list:
    """(labels, value) of every sample named ``name`` in ``registry``."""
    return [(s.labels, s.value) for family in registry.collect() for s in family.samples
            if s.name == name]


def row(**fields) -> dict:
    r = EMPTY_ROW.copy()
    r.update(outcome="success", message_type="Request", ts=1, **fields)
    return r


# -- label folding -----------------------------------------------------------------------

def test_random_operation_names_make_at_most_the_limit_and_one_series():
    metrics = CallMetrics(CallCounts(), label_limit=10)
    rng = random.Random(43)
    names = ["".join(rng.choices(string.printable, k=rng.randint(1, 300)))
             for _ in range(500)]
    for name in names:
        metrics.add(row(operation=name, duration_ns=rng.randint(1, 10**9),
                        request_bytes=100, reply_bytes=50))
    calls = samples(metrics.registry, "giop_calls_total")
    operations = {labels["operation"] for labels, _ in calls}
    assert len(operations) == 11 and FOLDED in operations
    assert sum(v for _, v in calls) == 500
    kept = {n[:200] for n in names[:10]}
    assert operations - {FOLDED} == kept
    # every row's observation is somewhere; the folds are counted
    (folded,) = [v for labels, v in samples(metrics.registry,
                                             "giop_label_values_folded_total")
                 if labels["label"] == "operation"]
    assert folded == 500 - 10
    histogram = {labels["operation"] for labels, _ in
                 samples(metrics.registry, "giop_call_duration_seconds_count")}
    assert histogram == operations


def test_a_value_seen_before_the_limit_keeps_its_own_series():
    fold = LabelFolder(2)
    assert [fold("operation", v) for v in ("a", "b", "c", "a", None, "b")] == \
        ["a", "b", FOLDED, "a", FOLDED, "b"]
    assert fold.folded == {"operation": 2}
    assert fold("interface", "c") == "c"        # each label has its own limit
    with pytest.raises(ValueError):
        LabelFolder(0)


def test_addresses_and_bad_ones():
    assert parse_address("127.0.0.1:9464") == ("127.0.0.1", 9464)
    assert parse_address("[::1]:9464") == ("::1", 9464)
    assert parse_address(":9464") == ("0.0.0.0", 9464)
    for bad in ("9464", "host:", "host:99999", "host:http"):
        with pytest.raises(PycdrError):
            parse_address(bad)


def test_bad_addresses_on_the_command_line_are_one_line():
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        for address, said in (("nonsense", "give HOST:PORT"),
                              (f"127.0.0.1:{taken.getsockname()[1]}", "cannot listen")):
            p = subprocess.run(PYCDR + [MESSAGES, "--prometheus", address],
                               capture_output=True, text=True, timeout=60)
            assert p.returncode == 1 and p.stdout == ""
            lines = p.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0]
    finally:
        taken.close()
    p = subprocess.run(PYCDR + [MESSAGES, "--linger", "1"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and "--linger goes with --prometheus" in p.stderr


# -- a real Prometheus server ------------------------------------------------------------

def query(port: int, promql: str) -> list:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=10) as answer:
        body = json.load(answer)
    assert body["status"] == "success", body
    return body["data"]["result"]


def by_label(result: list, label: str) -> dict:
    return {r["metric"].get(label, ""): float(r["value"][1]) for r in result}


@pytest.fixture
def prometheus(tmp_path):
    """A Prometheus server scraping 127.0.0.1:<monitor port> every second: (its port,
    the monitor's port)."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("prometheus is not installed (.ci/install-peers.sh installs it)")
    if os.environ.get("PYCDR_PURE"):
        pytest.skip("the export, not pycdr's codec: run once, in the C-path pass")
    monitor_port, port = free_port(), free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(f"""
global:
  scrape_interval: {SCRAPES_SECONDS}s
  scrape_timeout: {SCRAPES_SECONDS}s
scrape_configs:
  - job_name: pycdr-monitor
    static_configs:
      - targets: ["127.0.0.1:{monitor_port}"]
""")
    server = subprocess.Popen(
        [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.log", "wb"))
    try:
        # Ready, and scraping: its service discovery hands the target to the scrape
        # manager some seconds after the start.
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/targets",
                                            timeout=2) as answer:
                    if json.load(answer)["data"]["activeTargets"]:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("prometheus did not start: " +
                                     (tmp_path / "prometheus.log").read_text()[-2000:])
            time.sleep(0.2)
        yield port, monitor_port
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_prometheus_scrapes_the_calls_of_a_capture(prometheus):
    port, monitor_port = prometheus
    rows = list(iter_calls(MESSAGES))
    p = subprocess.run(PYCDR + [MESSAGES, "--prometheus", f"127.0.0.1:{monitor_port}",
                                "--linger", str(3.5 * SCRAPES_SECONDS)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""       # (metrics alone: no text lines)
    assert f"metrics at http://127.0.0.1:{monitor_port}/metrics" in p.stderr
    # The monitor has gone: its last values are the largest of the last minute.
    window = "[1m]"

    def last(selector: str, by: str) -> dict:
        return by_label(query(port, f"sum by ({by}) (max_over_time({selector}{window}))"), by)

    scrapes = query(port, f'sum_over_time(up{{job="pycdr-monitor"}}{window})')
    assert float(scrapes[0]["value"][1]) >= 2
    expected_calls = {}
    for r in rows:
        expected_calls[r["operation"] or ""] = expected_calls.get(r["operation"] or "", 0) + 1
    assert last("giop_calls_total", "operation") == expected_calls
    assert last('giop_calls_total{operation="add"}', "outcome") == {
        outcome: sum(1 for r in rows if r["operation"] == "add" and r["outcome"] == outcome)
        for outcome in {r["outcome"] for r in rows if r["operation"] == "add"}}
    exceptions = {}
    for r in rows:
        if r["exception_id"] is not None:
            exceptions[r["exception_id"]] = exceptions.get(r["exception_id"], 0) + 1
    assert len(exceptions) >= 2
    assert last("giop_exceptions_total", "exception_id") == exceptions
    minors = last('giop_exceptions_total{exception_id="IDL:omg.org/CORBA/OBJECT_NOT_EXIST:1.0"}',
                  "minor_code")
    assert minors == {"0x4f4d0002": exceptions["IDL:omg.org/CORBA/OBJECT_NOT_EXIST:1.0"]}
    answered = [r for r in rows if r["duration_ns"] is not None]
    assert last("giop_call_duration_seconds_count", "outcome") == {
        o: sum(1 for r in answered if r["outcome"] == o) for o in ("success", "failure")}
    assert last('giop_call_duration_seconds_bucket{le="0.001"}', "job") == {
        "pycdr-monitor": sum(1 for r in answered if r["duration_ns"] / 1e9 <= 0.001)}
    assert last("giop_call_duration_seconds_sum", "job")["pycdr-monitor"] == \
        pytest.approx(sum(r["duration_ns"] for r in answered) / 1e9)
    assert last("giop_request_bytes_total", "job") == {
        "pycdr-monitor": sum(r["request_bytes"] or 0 for r in rows
                             if r["message_type"] and r["outcome"] != "malformed")}
    assert last("giop_reply_bytes_total", "job") == {
        "pycdr-monitor": sum(r["reply_bytes"] or 0 for r in rows
                             if r["message_type"] and r["outcome"] != "malformed")}
    assert last("giop_connections_total", "job") == {"pycdr-monitor": 8}
    assert last("giop_evicted_requests_total", "job") == {"pycdr-monitor": 0}
    violations = {}
    for r in rows:
        for v in r["violations"] or ():
            violations[v["code"]] = violations.get(v["code"], 0) + 1
    assert violations and last("giop_violations_total", "code") == violations
    assert query(port, f"max_over_time(giop_calls_created{window})") == []
    # (from a file libpcap counts nothing: no such metric)
    assert query(port, f"max_over_time(giop_capture_dropped_packets_total{window})") == []
    # The queries docs/monitor.md shows are PromQL Prometheus takes.
    with open(os.path.join(os.path.dirname(HERE), "docs", "monitor.md")) as f:
        page = f.read()
    shown = page.split("```promql\n")[1:]
    assert len(shown) >= 2
    for block in shown:
        query(port, block.split("```")[0].strip())


# -- live: libpcap's count of dropped packets beside the calls ---------------------------

def test_live_metrics_include_libpcap_s_dropped_packets(tmp_path):
    from peers.recording import CAN_RECORD, WHY_NOT
    if not CAN_RECORD:
        pytest.skip(WHY_NOT)
    from pycdr.giop.messages import KeyAddr, Reply, ReplyStatus, Request, encode_message
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    server_port, monitor_port = listener.getsockname()[1], free_port()
    monitor = subprocess.Popen(PYCDR + ["-i", "lo", "--filter", f"tcp port {server_port}",
                                        "--prometheus", f"127.0.0.1:{monitor_port}"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        said = [monitor.stderr.readline(), monitor.stderr.readline()]
        assert said[0].startswith("metrics at") and said[1].startswith("capturing on lo"), \
            said
        client = socket.create_connection(("127.0.0.1", server_port))
        server, _ = listener.accept()
        with client, server:
            for rid in (1, 2):
                client.sendall(encode_message(Request(
                    version=(1, 2), request_id=rid, operation="echo", response_flags=3,
                    target=KeyAddr(b"Echo"))))
                server.recv(65536)
                server.sendall(encode_message(Reply(version=(1, 2), request_id=rid,
                                                    reply_status=ReplyStatus.NO_EXCEPTION)))
                client.recv(65536)
        deadline = time.monotonic() + 20
        while True:
            with urllib.request.urlopen(f"http://127.0.0.1:{monitor_port}/metrics",
                                        timeout=5) as answer:
                text = answer.read().decode()
            if 'giop_calls_total{interface="",operation="echo",outcome="success"} 2.0' in text:
                break
            assert time.monotonic() < deadline, text
            time.sleep(0.2)
        assert "giop_capture_dropped_packets_total 0.0" in text
        assert "giop_connections_total 1.0" in text
    finally:
        listener.close()
        monitor.send_signal(signal.SIGINT)
        _, err = monitor.communicate(timeout=60)
    assert monitor.returncode == 0 and "Traceback" not in err, err
    assert "2 calls (2 success)" in err
