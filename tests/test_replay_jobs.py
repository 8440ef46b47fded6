"""pycdr replay --jobs N: the capture's connections replayed by N worker processes must
report what one process reports (tests/replay_store.py's servant; omniORBpy in
tests/test_replay_peers.py): the same summary, the same calls (in another order across
connections), keys learned across connections, differences with their path, one
merged --pcap, a failing worker reported."""

from __future__ import annotations

import json
import multiprocessing
import os
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

pytest.importorskip("scapy")

import replay_store as rs  # noqa: E402
from conftest import REPLAY_WINDOW  # noqa: E402
from pycdr.cli.main import main  # noqa: E402
from pycdr.capture.giop import IdlBodyDecoder, decode_capture  # noqa: E402
from pycdr.capture.read import CaptureReader  # noqa: E402
from pycdr.replay import jobs as replay_jobs  # noqa: E402
from pycdr.replay.compare import Comparison  # noqa: E402
from pycdr.replay.runner import ReplayOptions  # noqa: E402
from pycdr.replay.targets import parse_targets  # noqa: E402
from test_replay import conversation, json_lines  # noqa: E402

IDL = rs.STORE_IDL

# Every replay of these tests runs as recorded (--window 1) and pipelined (--window 8).
pytestmark = pytest.mark.usefixtures("replay_window")


def several_connections(tmp_path) -> str:
    """Five connections: two that learn OldOther from other() and use it (one group with
    the IDL), three that only use the target's key (a group each)."""
    capture = str(tmp_path / "rec.pcap")
    rs.record(capture, [conversation(),
                        [rs.request(1, "find", ["pear"]), rs.request(2, "list", [3])],
                        conversation(little=True),
                        [rs.request(1, "list", [4]), rs.request(2, "find", ["missing"])],
                        [rs.request(1, "total", [2, 1.5])]])
    return capture


def replay(args, jobs: int, **kw):
    return CliRunner().invoke(main, ["replay", *args, "--jobs", str(jobs), *REPLAY_WINDOW],
                              catch_exceptions=False, **kw)


def counts(output: str) -> list:
    """The summary table's rows without the latency columns (which differ run to run)."""
    rows = []
    for line in output.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 10 and cells[1].isdigit():
            rows.append(cells[:6])
    return rows


def outcomes(path: str, leave_out=()) -> list:
    """Every call's JSON object but for its latencies (and ``leave_out``), sorted (the
    order across connections is the workers')."""
    calls = [{k: v for k, v in c.items() if not k.endswith("_latency") and k not in leave_out}
             for c in json_lines(path)]
    return sorted(calls, key=lambda c: json.dumps(c, sort_keys=True))


def plan(capture, target, idl=True, jobs=3):
    default, mapped = parse_targets([target])
    decoder = IdlBodyDecoder([rs.MODULE]) if idl else None
    return replay_jobs.plan_jobs(capture, ReplayOptions(default_target=default, targets=mapped,
                                                        comparison=Comparison(decoder)), jobs)


@pytest.mark.parametrize("jobs", [2, 3])
def test_jobs_report_what_one_process_reports(tmp_path, jobs):
    capture = several_connections(tmp_path)
    with rs.StoreServer(rs.Variant(store_key=b"NewStore", other_key=b"NewOther")) as server:
        results = {}
        for n in (1, jobs):
            out = str(tmp_path / f"calls{n}.jsonl")
            junit = str(tmp_path / f"junit{n}.xml")
            result = replay([capture, "--target", server.corbaloc, "--idl", IDL,
                             "--json", out, "--junit", junit], n)
            assert result.exit_code == 0, result.output
            results[n] = (counts(result.output), outcomes(out),
                          ET.parse(junit).getroot().attrib)
    one, several = results[1], results[jobs]
    assert one[0] == several[0] and len(one[0]) == 7       # six operations and "all"
    assert ["all", "21", "21", "0", "0", "0"] in one[0]
    assert one[1] == several[1] and len(one[1]) == 21
    assert one[2] == several[2]
    # The two connections that learn OldOther are one group: four groups, as many workers
    # at most.
    shared = plan(capture, server.corbaloc, jobs=jobs)
    assert shared.groups == 4 and len(shared.workers) == min(jobs, 4)
    together = [w for w in shared.workers if {0, 2} <= {c.index for c in w}]
    assert len(together) == 1


def test_without_the_idl_nothing_taught_every_connection_its_own_group(tmp_path):
    capture = several_connections(tmp_path)
    shared = plan(capture, "corbaloc:iiop:127.0.0.1:2809/NewStore", idl=False, jobs=8)
    assert shared.groups == 5 and len(shared.workers) == 5
    assert shared.explicit == {b"OldStore": b"NewStore"}     # the first key, decided once
    # Balanced by client messages: the two conversations (8 each) first, then the rest.
    assert [sum(c.messages for c in w) for w in plan(
        capture, "corbaloc:iiop:127.0.0.1:2809/NewStore", idl=False, jobs=2).workers] \
        == [8 + 2 + 1, 8 + 2]


def _shape(p):
    return ([[(c.index, c.server, c.messages, sorted(c.keys), sorted(c.taught)) for c in w]
             for w in p.workers], p.explicit, p.targets, p.skipped.connections,
            p.skipped.requests, p.capture_errors, p.capture_error_count, p.groups)


@pytest.mark.parametrize("shards", [2, 3])
def test_the_workers_shards_of_the_capture_plan_as_one_reader(tmp_path, shards):
    # Two recorded servers (one without a target: skipped), the connections numbered as
    # one reader numbers them, though each shard sees only its own.
    from scapy.utils import rdpcap, wrpcap
    capture = str(tmp_path / "two.pcap")
    rs.record(str(tmp_path / "a.pcap"), [conversation(), [rs.request(1, "list", [2])]])
    rs.record(str(tmp_path / "b.pcap"), [conversation()[:3], [rs.request(1, "total", [1, 2.0])]],
              rs.Variant(host="10.0.0.3"))
    wrpcap(capture, list(rdpcap(str(tmp_path / "a.pcap"))) +
           list(rdpcap(str(tmp_path / "b.pcap"))))
    default, mapped = parse_targets(["10.0.0.3:2809=corbaloc:iiop:127.0.0.1:2809/NewStore"])
    options = ReplayOptions(default_target=default, targets=mapped,
                            comparison=Comparison(IdlBodyDecoder([rs.MODULE])))
    one = replay_jobs.plan_jobs(capture, options, shards)
    sharded = replay_jobs.plan_from_scans(
        [replay_jobs.scan_capture(capture, options, (k, shards)) for k in range(shards)],
        options, shards)
    assert _shape(sharded) == _shape(one)
    assert sorted(c.index for w in one.workers for c in w) == [2, 3]
    assert one.skipped.connections == {"10.0.0.2:2809": 2}
    assert one.skipped.requests == {"10.0.0.2:2809": 9}
    assert one.explicit == {b"OldStore": b"NewStore"}


def test_skipped_servers_are_counted_once_with_jobs(tmp_path):
    from scapy.utils import rdpcap, wrpcap
    capture = str(tmp_path / "two.pcap")
    rs.record(str(tmp_path / "a.pcap"), [conversation()[:2], conversation()[:2]])
    rs.record(str(tmp_path / "b.pcap"), [conversation()[:3], [rs.request(1, "list", [3])]],
              rs.Variant(host="10.0.0.3"))
    wrpcap(capture, list(rdpcap(str(tmp_path / "a.pcap"))) +
           list(rdpcap(str(tmp_path / "b.pcap"))))
    with rs.StoreServer(rs.Variant(store_key=b"NewStore")) as server:
        result = replay([capture, "--target", f"10.0.0.3:2809={server.corbaloc}", "--idl",
                         IDL], 3)
        assert result.exit_code == 0, result.output
        assert len(server.received) == 4
    assert result.stderr.count("skipped: recorded server 10.0.0.2:2809 has no --target "
                                "(2 connections, 4 client messages)") == 1


def test_a_key_learned_on_one_connection_is_used_on_another(tmp_path):
    # Connection 0 learns OldOther from other(); connection 1 calls find() twice (0.3 s
    # each at the target: other()'s reply has come before the second is sent, when the
    # request after it is rewritten) and then list() on OldOther; connection 2 is
    # unrelated.  With jobs, 0 and 1 must be replayed by one worker, where the key
    # learned on 0 is known when 1 sends list().
    if REPLAY_WINDOW[1] != "1":
        pytest.skip("a window sends list() before find()'s reply (see test_replay.py)")
    capture = str(tmp_path / "rec.pcap")
    rs.record(capture, [[rs.request(1, "other", [])],
                        [rs.request(1, "find", ["pear"]), rs.request(2, "find", ["fig"]),
                         rs.request(3, "list", [2], key=b"OldOther")],
                        [rs.request(1, "total", [2, 1.5])]])
    shared = plan(capture, "corbaloc:iiop:127.0.0.1:2809/NewStore", jobs=2)
    assert [sorted(c.index for c in w) for w in shared.workers] == [[0, 1], [2]]
    with rs.StoreServer(rs.Variant(store_key=b"NewStore", other_key=b"NewOther",
                                   slow=0.3)) as server:
        out = str(tmp_path / "calls.jsonl")
        result = replay([capture, "--target", server.corbaloc, "--idl", IDL, "--json", out], 2)
        assert result.exit_code == 0, result.output
        keys = {(m.operation, m.object_key) for m in server.received}
    assert ("list", b"NewOther") in keys and ("other", b"NewStore") in keys, keys
    assert [c["outcome"] for c in json_lines(out)] == ["same"] * 5


def test_a_differing_servant_is_reported_with_the_path(tmp_path):
    capture = several_connections(tmp_path)
    with rs.StoreServer(rs.Variant(store_key=b"NewStore", other_key=b"NewOther",
                                   differ="list")) as server:
        out = str(tmp_path / "calls.jsonl")
        junit = str(tmp_path / "junit.xml")
        result = replay([capture, "--target", server.corbaloc, "--idl", IDL, "--json", out,
                         "--junit", junit], 3)
    assert result.exit_code == 1, result.output
    different = [c for c in json_lines(out) if c["outcome"] != "same"]
    # list(6) in each conversation and list(4): the fourth item differs; list(3), list(2)
    # have no fourth item.
    assert sorted((c["connection"], c["operation"], c["recorded_request_id"])
                  for c in different) == [(0, "list", 1), (2, "list", 1), (3, "list", 1)]
    assert all(c["differences"] == [{"path": "result[3].name", "recorded": "item3",
                                     "replayed": "changed"}] for c in different)
    assert result.output.count("result[3].name: recorded item3, replayed changed") == 3
    assert ET.parse(junit).getroot().get("failures") == "3"


def test_the_workers_pcap_files_are_merged_into_one(tmp_path):
    capture = several_connections(tmp_path)
    written = str(tmp_path / "replayed.pcap")
    with rs.StoreServer(rs.Variant(store_key=b"NewStore", other_key=b"NewOther")) as server:
        result = replay([capture, "--target", server.corbaloc, "--idl", IDL, "--pcap", written],
                        3)
        assert result.exit_code == 0, result.output
    assert sorted(os.listdir(tmp_path)) == ["rec.pcap", "replayed.pcap"]   # parts removed
    entries = [e for e in decode_capture(written, ports=[server.port]) if "error" not in e]
    requests = [e for e in entries if e["type"] == "Request"]
    replies = [e for e in entries if e["type"] in ("Reply", "LocateReply")]
    # Every message replayed: 7 requests of each conversation, 5 of the others; a reply
    # to each but the two oneways' ping(); the two LocateRequests and their replies.
    assert len(requests) == 7 + 7 + 5 and len(replies) == 2 * 6 + 2 * 1 + 5
    assert len({e["src"] for e in requests}) == 5
    assert all("request_frame" in e for e in replies)
    with CaptureReader(written) as reader:
        times = [segment[1] for segment in reader]
    assert times == sorted(times) and len(times) > 19


def test_a_damaged_capture_is_reported_once_with_the_same_calls(tmp_path):
    # Two connections, the second one's second reply lost from the capture (its call
    # fails: the recorded reply is missing), every error counted once, not per worker.
    from pycdr.capture.write import TcpSession, write_pcap
    from test_replay import encode_message
    packets: list = []
    for port in (40001, 40002):
        session = TcpSession(packets, 2809, client_port=port)
        for msg in conversation()[:3]:
            session.client_sends(encode_message(msg))
            session.server_sends(encode_message(rs.reply_to(msg, rs.Variant())))
        session.close()
    from scapy.layers.inet import TCP
    replies = [i for i, p in enumerate(packets)
               if p[TCP].sport == 2809 and p[TCP].dport == 40002 and bytes(p[TCP].payload)]
    lost = replies[1]                   # the second connection's second reply
    capture = str(tmp_path / "gap.pcap")
    write_pcap(capture, packets[:lost] + packets[lost + 1:])
    results = {}
    with rs.StoreServer(rs.Variant(store_key=b"NewStore")) as server:
        for jobs in (1, 2):
            out = str(tmp_path / f"calls{jobs}.jsonl")
            result = replay([capture, "--target", server.corbaloc, "--idl", IDL,
                             "--json", out], jobs)
            assert result.exit_code == 1, result.output
            assert "the capture is damaged: 1 errors" in result.stderr, result.stderr
            results[jobs] = (counts(result.output), outcomes(out), result.stderr)
    assert results[1] == results[2]
    assert sorted(c["outcome"] for c in results[2][1]) == ["failed"] + ["same"] * 5


def test_the_rate_is_shared_among_the_workers(tmp_path):
    import time
    capture = several_connections(tmp_path)
    with rs.StoreServer(rs.Variant(store_key=b"NewStore", other_key=b"NewOther")) as server:
        start = time.monotonic()
        result = replay([capture, "--target", server.corbaloc, "--idl", IDL, "--rate", "20"], 3)
        elapsed = time.monotonic() - start
    assert result.exit_code == 0, result.output
    # Three workers at 20/3 messages a second each, the busiest with the two conversations
    # (one group: 16 messages): 15 intervals of 0.15 s.  At 20 a second each: 0.75 s.
    assert elapsed >= 1.5, elapsed


def test_a_dry_run_with_jobs_lists_as_one_process(tmp_path):
    capture = several_connections(tmp_path)
    one = replay([capture, "--target", "127.0.0.1:1", "--dry-run"], 1)
    three = replay([capture, "--target", "127.0.0.1:1", "--dry-run"], 3)
    assert one.exit_code == three.exit_code == 0
    assert one.output == three.output and one.output.count("request") >= 21


def _crash(self, reader, progress=None):
    os._exit(7)


def _fail(self, reader, progress=None):
    raise RuntimeError("a worker's bug")


# (The servant's threads answer connections the stopped workers left: their broken pipes
# are expected here.)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize("broken, message", [
    (_crash, "replay worker 0 ended without its results (exit code 7)"),
    (_fail, "replay worker 0 failed: RuntimeError: a worker's bug")])
def test_a_failing_worker_stops_the_replay_with_an_error(tmp_path, monkeypatch, broken,
                                                          message):
    capture = several_connections(tmp_path)
    # (the workers are forked from this process: they run the patched Replay.run; the
    # others wait on the target meanwhile, a slow find() keeping them busy.)
    original = replay_jobs.Replay.run

    def first_worker_broken(self, reader, progress=None):
        if 0 in self.selection.indices.values():
            return broken(self, reader, progress)
        return original(self, reader, progress)
    monkeypatch.setattr(replay_jobs.Replay, "run", first_worker_broken)
    with rs.StoreServer(rs.Variant(store_key=b"NewStore", other_key=b"NewOther",
                                   slow=0.5)) as server:
        result = CliRunner().invoke(
            main, ["replay", capture, "--target", server.corbaloc, "--idl", IDL,
                   "--jobs", "3", *REPLAY_WINDOW])
    assert result.exit_code == 1, result.output
    assert f"error: {message}" in result.stderr
    assert multiprocessing.active_children() == []          # no worker left behind


# -- against omniORBpy (recorded on loopback: dumpcap and capture rights needed) -------------
def test_three_omniorbpy_clients_replayed_by_two_workers_as_by_one(tmp_path):
    from peers.omni import start_omni_echo_server
    from peers.process import PEERS_DIR
    from peers.recording import CAN_RECORD, WHY_NOT, record_loopback
    from test_replay_peers import IDL as ECHO_IDL, INTERFACE, OPERATIONS, ROUNDS
    if not CAN_RECORD:
        pytest.skip(WHY_NOT)
    import subprocess
    import sys
    capture = str(tmp_path / "three.pcapng")
    with start_omni_echo_server(idl=ECHO_IDL, interface=INTERFACE) as server:
        with record_loopback(capture, server.port):
            clients = [subprocess.Popen([sys.executable, os.path.join(PEERS_DIR,
                                                                      "replay_client.py"),
                                         ECHO_IDL, server.ior, str(ROUNDS)],
                                        stdout=subprocess.PIPE, text=True)
                       for _ in range(3)]
            assert [c.communicate(timeout=120)[0].strip() for c in clients] == ["done"] * 3
    results = {}
    for jobs in (1, 2):
        with start_omni_echo_server(idl=ECHO_IDL, interface=INTERFACE) as server:
            out = str(tmp_path / f"calls{jobs}.jsonl")
            result = replay([capture, "--target", server.ior, "--idl", ECHO_IDL,
                             "--json", out], jobs)
            assert result.exit_code == 0, result.output
        # (omniORB leaves its replies' padding as it finds it in memory: the replayed bytes
        # differ run to run, the values -- compared with the IDL -- do not.)
        results[jobs] = (counts(result.output), outcomes(out, ["replayed_reply"]))
    assert results[1] == results[2]
    calls = results[2][1]
    assert len({c["connection"] for c in calls}) == 3
    assert len(calls) == 3 * sum(OPERATIONS.values())
    assert {c["outcome"] for c in calls} == {"same"}
    # Nothing to learn here: each connection its own group, two workers.
    assert len(plan(capture, server.ior, idl=False, jobs=2).workers) == 2


def _children(pid: int) -> set:
    found = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            found |= {int(p) for p in f.read().split()}
    return found


# (The servant's threads answer connections the stopped workers left: their broken pipes
# are expected here.)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="needs Linux's /proc")
def test_ctrl_c_stops_every_worker_and_fails_clearly(tmp_path):
    import signal
    import subprocess
    import sys
    import time
    capture = several_connections(tmp_path)
    with rs.StoreServer(rs.Variant(store_key=b"NewStore", other_key=b"NewOther",
                                   slow=3.0)) as server:
        proc = subprocess.Popen([sys.executable, "-c", "from pycdr.cli.main import main; main()",
                                 "replay", capture, "--target", server.corbaloc, "--idl", IDL,
                                 "--jobs", "3", *REPLAY_WINDOW],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        deadline = time.monotonic() + 30
        while len(_children(proc.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = _children(proc.pid)
        assert len(workers) == 3
        # Ctrl-C once the replay is under way (a worker waiting on a slow find()): on a
        # loaded machine the workers take a while to get there, and a signal before
        # they are is not the case this test is about.
        while not any(getattr(m, "operation", "") == "find" for m in list(server.received)) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, out + err
    assert "error: interrupted: the replay workers were stopped" in err, err
    assert "Traceback" not in err
    assert not [w for w in workers if os.path.exists(f"/proc/{w}")], "a worker was left"


def test_jobs_refuse_a_capture_that_cannot_be_read_twice(tmp_path):
    import threading
    capture = several_connections(tmp_path)
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as f, open(capture, "rb") as g:
            f.write(g.read())
    threading.Thread(target=feed, daemon=True).start()
    with rs.StoreServer(rs.Variant(store_key=b"NewStore")) as server:
        result = replay([fifo, "--target", server.corbaloc], 2)
    assert result.exit_code == 2
    assert "--jobs needs a capture that can be read more than once" in result.output
