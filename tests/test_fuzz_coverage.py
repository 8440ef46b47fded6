"""Coverage feedback: the coverage shim linked into a small GIOP server in C
(tests/targets/giop_echo.c, built here with clang's trace-pc-guard and
AddressSanitizer), the edge map and its masking of edges that flicker, a
bounded `pycdr fuzz --coverage sancov --spawn` campaign that reaches the
server's planted fault (and the same seed without feedback that does not),
a sancov group's new edges put to the case that passes them (bisection), a
restart that takes the standby and its own edge map, a crash inside a group
put to its case, state feedback, the corpus folder a campaign resumes from,
minimization and the byte-level mutations' fix-ups."""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import sys
import time

import pytest

from pycdr.conformance.wire import Observation
from pycdr.fuzz.case import Case
from pycdr.fuzz.engine import Campaign
from pycdr.fuzz.feedback import (BUCKET, Corpus, EdgeMap, Entry, load_folder, save_entry,
                                 state_of, trim)
from pycdr.fuzz.havoc import fix_lengths, havoc
from pycdr.fuzz.sanitizer import parse_report, symbolize_frames
from pycdr.fuzz.mutators import Mutation, MutationContext
from pycdr.fuzz.prediction import framing, predict
from pycdr.fuzz.seeds import Seed, idl_seeds
from pycdr.fuzz.target import SpawnedTarget
from pycdr.giop.events import MessageReceived
from pycdr.giop.layout import message_fields
from pycdr.giop.messages import CloseConnection, LocateReply, Reply, decode_message
from pycdr.giop.sysexc import system_exception

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "targets", "giop_echo.c")
IDL = os.path.join(HERE, "targets", "giop_echo.idl")
INTERFACE = "Demo::Strings"
# The campaign's seed: fixed, so the run is the same but for the target's timing.
SEED = 1
# The bounded campaign's budget; it ends at its first finding (seed 1: 5-30 s on a
# loaded 2-core machine, either codec path: the target's time dominates).
BUDGET = 60
# AddressSanitizer's report, unsymbolized, is written at once: the crash is
# seen as an exit, not as a process that stopped answering while it symbolizes.
ASAN_ENV = {"ASAN_OPTIONS": "symbolize=0"}


def _pycdr(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "pycdr.cli.main", *args], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The instrumented server's path: the shim compiled by `pycdr fuzz
    coverage-shim --build`, the server with clang's trace-pc-guard and
    AddressSanitizer, linked with it."""
    clang = shutil.which("clang")
    if clang is None:
        pytest.skip("clang is not installed (.ci/install-peers.sh installs it)")
    folder = tmp_path_factory.mktemp("sancov")
    built = _pycdr("fuzz", "coverage-shim", "--build", str(folder))
    assert built.returncode == 0, built.stderr
    shim = built.stdout.strip()
    assert os.path.isfile(shim) and shim.endswith(".o")
    binary = str(folder / "giop_echo")
    subprocess.run([clang, "-O0", "-g", "-fsanitize-coverage=trace-pc-guard",
                    "-fsanitize=address", "-pthread", SOURCE, shim, "-o", binary], check=True)
    return binary


def _locate_message() -> bytes:
    """A GIOP 1.2 LocateRequest for the server's object."""
    key = b"Echo"
    body = (7).to_bytes(4, "big") + (0).to_bytes(2, "big") + b"\0\0" + \
        len(key).to_bytes(4, "big") + key
    return b"GIOP\x01\x02\x00\x03" + len(body).to_bytes(4, "big") + body


def _locate_request(port: int) -> bytes:
    """A LocateRequest for the server's object sent, and its answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(_locate_message())
        return s.recv(100)


def test_coverage_shim_path_is_the_packaged_source():
    shown = _pycdr("fuzz", "coverage-shim")
    assert shown.returncode == 0, shown.stderr
    path = shown.stdout.strip()
    with open(path) as f:
        text = f.read()
    assert "__sanitizer_cov_trace_pc_guard_init" in text and "PYCDR_COVERAGE" in text


def test_edge_map_counts_a_case_and_masks_a_timer_thread(server):
    edge_map = EdgeMap()
    target = SpawnedTarget(f"{server} --tick 5", env=edge_map.environment())
    try:
        port = int(target.start().rsplit(":", 1)[1].split("/")[0])
        # The timer thread passes its edges with nothing sent: found and masked.
        masked = edge_map.calibrate(0.3)
        assert masked
        edge_map.reset()
        time.sleep(0.1)
        assert edge_map.edges() == {}
        # A case passes edges of its own (with their hit counts' buckets).
        edge_map.reset()
        assert _locate_request(port)[7] == 4            # a LocateReply
        time.sleep(0.05)
        features = edge_map.features()
        assert features and not {f >> 4 for f in features} & masked
        assert all(1 <= f & 15 <= 8 for f in features)
    finally:
        target.stop()
        edge_map.close()
    assert not os.path.exists(edge_map.path)
    # The same server without its timer: nothing to mask.
    quiet_map = EdgeMap()
    quiet = SpawnedTarget(server, env=quiet_map.environment())
    try:
        quiet.start()
        assert quiet_map.calibrate(0.3) == set()
    finally:
        quiet.stop()
        quiet_map.close()


def _echo_deep_request(text: bytes) -> bytes:
    """A GIOP 1.2 Request for echo_deep(text) on the server's object."""
    key, op = b"Echo", b"echo_deep\0"
    body = (1).to_bytes(4, "big") + b"\x03\0\0\0" + (0).to_bytes(2, "big") + b"\0\0" + \
        len(key).to_bytes(4, "big") + key + len(op).to_bytes(4, "big") + op
    body += b"\0" * (-len(body) % 4) + (0).to_bytes(4, "big")      # no service context
    body += b"\0" * (-len(body) % 8)
    argument = text + b"\0"
    body += len(argument).to_bytes(4, "big") + argument
    return b"GIOP\x01\x02\x00\x00" + len(body).to_bytes(4, "big") + body


def test_the_sanitizer_report_of_a_crashed_target_is_read(server):
    """The planted fault hit directly: the spawned target's AddressSanitizer
    report is kept from its output and parsed (kind, access, top frames)."""
    target = SpawnedTarget(server, env=ASAN_ENV)
    try:
        port = int(target.start().rsplit(":", 1)[1].split("/")[0])
        # A string that passes echo_deep's checks, then echoed in ASCII: no report yet.
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(_echo_deep_request(b"plain text that is long enough"))
            assert s.recv(100)[7] == 1                    # a Reply
        assert target.exited() is None and target.sanitizer_report() == ""
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(_echo_deep_request(b"\xc3\xa9" * 20))
            s.recv(100)
        deadline = time.monotonic() + 10
        while target.exited() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert target.exited() not in (None, 0)
        text = target.sanitizer_report()
    finally:
        target.stop()
    report = parse_report(text)
    assert report is not None, text
    assert (report["sanitizer"], report["kind"]) == ("AddressSanitizer", "stack-buffer-overflow")
    assert report["access"].startswith("WRITE of size 41")
    assert report["summary"].startswith("AddressSanitizer: stack-buffer-overflow")
    # Unsymbolized (symbolize=0): module+offset, named afterwards.
    assert report["frames"] and all("giop_echo+0x" in f for f in report["frames"][:2])
    if shutil.which("llvm-symbolizer"):
        named = symbolize_frames(report["frames"])
        assert any(" fold " in f and "giop_echo.c:" in f for f in named), named
    assert parse_report("no report here\n") is None


def test_bad_feedback_options_end_with_one_line(tmp_path):
    done = _pycdr("fuzz", "127.0.0.1:9", "--coverage", "sancov")
    assert done.returncode == 2 and "--coverage sancov needs --spawn" in done.stderr
    assert "Traceback" not in done.stderr
    (tmp_path / "x.hex").write_text("zz\n")
    done = _pycdr("fuzz", "127.0.0.1:9", "--corpus-dir", str(tmp_path))
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "x.hex" in done.stderr and "Traceback" not in done.stderr
    blocker = tmp_path / "file"
    blocker.write_text("")
    done = _pycdr("fuzz", "coverage-shim", "--build", str(blocker / "sub"))
    if shutil.which("clang"):
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr


def test_bucket_classes_are_afls():
    assert [BUCKET[n] for n in (0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 127, 128, 255)] == \
        [0, 1, 2, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8]


def _campaign(server, out, *extra):
    done = _pycdr("fuzz", "--spawn", server, "--idl", IDL, "--interface", INTERFACE,
                  "--no-catalog", "--seed", str(SEED), "--out", str(out), "--json", *extra,
                  env=ASAN_ENV, timeout=BUDGET + 60)
    return done.returncode, json.loads(done.stdout)


def test_sancov_campaign_reaches_the_planted_fault_and_no_feedback_does_not(server, tmp_path):
    status, summary = _campaign(server, tmp_path / "findings", "--coverage", "sancov",
                                "--duration", str(BUDGET), "--stop-on-finding",
                                "--corpus-dir", str(tmp_path / "corpus"))
    feedback = summary["feedback"]
    assert feedback["kind"] == "sancov"
    assert feedback["edges"] > feedback["initial_edges"] > 0
    assert feedback["kept"] > 0 and len(os.listdir(tmp_path / "corpus")) == feedback["kept"]
    # The planted stack-buffer overflow, confirmed, saved and replayable.
    assert status == 1, summary
    [finding] = summary["findings"]
    assert finding["kind"] == "crash" and finding["reproductions"] == 3
    folder = finding["folder"]
    # AddressSanitizer's report: its kind and top frames in the finding, the
    # report beside it.
    sanitizer = finding["details"]["sanitizer"]
    assert sanitizer["kind"] == "stack-buffer-overflow" and sanitizer["frames"]
    with open(os.path.join(folder, "sanitizer.txt")) as f:
        assert "ERROR: AddressSanitizer: stack-buffer-overflow" in f.read()
    replayed = _pycdr("fuzz", "--spawn", server, "--replay", folder, env=ASAN_ENV)
    assert replayed.returncode == 1 and replayed.stdout.startswith("REPRODUCED"), replayed.stdout
    # What crashed it is the planted fault: echo_deep's string, its first two
    # octets' high bits set, longer than the server's 16-octet buffer.
    with open(os.path.join(folder, "messages.hex")) as f:
        last = bytes.fromhex(f.read().split()[-1])
    assert b"echo_deep\0" in last
    # Twice as many cases from the same seed without feedback do not reach it
    # (cases without feedback depend on the seed and their index alone).
    status, baseline = _campaign(server, tmp_path / "baseline", "--coverage", "none",
                                 "--max-cases", str(2 * summary["cases"]))
    assert baseline["cases"] == 2 * summary["cases"]
    assert status == 0 and baseline["findings"] == [], baseline["findings"]


def test_corpus_folder_resumes(server, tmp_path):
    corpus = tmp_path / "corpus"
    status, first = _campaign(server, tmp_path / "f1", "--coverage", "sancov",
                              "--max-cases", "300", "--corpus-dir", str(corpus))
    kept = first["feedback"]["kept"]
    assert kept > 0 and len(load_folder(str(corpus))) == kept
    status, second = _campaign(server, tmp_path / "f2", "--coverage", "sancov",
                               "--max-cases", "1", "--corpus-dir", str(corpus))
    # The second campaign starts from the first one's inputs: what they reach
    # is known before its first case (all but what flickers with timing).
    assert second["feedback"]["corpus"] >= first["feedback"]["corpus"]
    assert second["feedback"]["initial_edges"] > first["feedback"]["initial_edges"]
    assert second["feedback"]["initial_edges"] >= 0.9 * first["feedback"]["edges"]


def test_state_feedback_campaign_keeps_new_states(server, tmp_path):
    status, summary = _campaign(server, tmp_path / "f", "--max-cases", "400")
    feedback = summary["feedback"]
    assert feedback["kind"] == "state"            # the default
    assert feedback["features"] > feedback["initial_features"] > 0
    assert feedback["kept"] > 0


def _observation(*messages, closed=False, reset=False):
    obs = Observation()
    obs.messages = [MessageReceived(m, b"") for m in messages]
    obs.closed, obs.reset = closed, reset
    return obs


def test_state_tuples_keep_what_is_new_and_discard_what_is_not():
    marshal = system_exception("IDL:omg.org/CORBA/MARSHAL:1.0", 4, 1)
    bad_operation = system_exception("IDL:omg.org/CORBA/BAD_OPERATION:1.0", 0, 1)
    exc = Reply(request_id=1, reply_status=2, system_exception=marshal)
    seen = [state_of(_observation(exc))]
    assert seen[0] == (("Reply", 2, "IDL:omg.org/CORBA/MARSHAL:1.0", 4, 1), "open")
    corpus = Corpus()
    corpus.observe(seen)
    # The same state again: nothing new (discarded).
    assert not corpus.new_features([state_of(_observation(
        Reply(request_id=9, reply_status=2, system_exception=marshal)))])
    # Another minor code, another exception, a close, silence: each new (kept).
    others = [
        state_of(_observation(Reply(request_id=1, reply_status=2,
                                    system_exception=system_exception(
                                        "IDL:omg.org/CORBA/MARSHAL:1.0", 5, 1)))),
        state_of(_observation(Reply(request_id=1, reply_status=2,
                                    system_exception=bad_operation))),
        state_of(_observation(exc, closed=True)),
        state_of(_observation()),
        state_of(_observation(LocateReply(request_id=1, locate_status=1))),
        state_of(_observation(CloseConnection(), closed=True)),
    ]
    assert len(set(others)) == len(others)
    assert corpus.new_features(others) == frozenset(others)
    assert state_of(_observation())[-1] == "silent"
    assert state_of(_observation(closed=True, reset=True))[-1] == "reset"


def test_power_schedule_prefers_rare_new_inputs():
    corpus = Corpus()
    old = Entry([b"x" * 20], "seed", features=frozenset({1}), found_at=0)
    new = Entry([b"y" * 20], "seed", features=frozenset({2}), found_at=900)
    corpus.entries += [old, new]
    corpus.seen.update({1: 500, 2: 1})
    assert corpus.energy(new, 1000) > 10 * corpus.energy(old, 1000)
    rng = random.Random(0)
    picks = [corpus.pick(rng, 1000) for _ in range(200)]
    assert picks.count(new) > 150
    # A newly kept input is picked in a row first (BURST).
    third = corpus.add(Entry([b"z"], "seed", features=frozenset({3})))
    assert [corpus.pick(rng, 1000) for _ in range(8)] == [third] * 8


def test_corpus_entries_round_trip_through_the_folder(tmp_path):
    entry = Entry([b"GIOP\x01\x00\x00\x05\x00\x00\x00\x00", b"\x01\x02"], "seed")
    path = save_entry(str(tmp_path), entry)
    [loaded] = load_folder(str(tmp_path))
    assert loaded.messages == entry.messages and path.endswith(loaded.name + ".hex")
    (tmp_path / "bad.hex").write_text("not hex\n")
    with pytest.raises(Exception, match="bad.hex"):
        load_folder(str(tmp_path))


def _echo_deep_seed():
    seeds = idl_seeds(IDL, INTERFACE, b"Echo", rng=random.Random("t"), per_operation=8)
    for seed in seeds:
        data = seed.messages[0]
        if b"echo_deep" in data and (data[4], data[5]) == (1, 2) and len(data) > 60:
            return seed
    raise AssertionError("no echo_deep seed")


def _size(message: bytes) -> int:
    """The GIOP header's message_size."""
    return int.from_bytes(message[8:12], "little" if message[6] & 1 else "big")


def _argument(data: bytes, body_types) -> bytes:
    msg, _ = decode_message(data)
    from pycdr.codec.cdr import CDRReader
    r = CDRReader(msg.body, little=bool(data[6] & 1))
    return r.read_string()


def test_minimization_cuts_what_the_feedback_does_not_need():
    seed = _echo_deep_seed()
    ctx = MutationContext([seed], b"Echo")
    data = seed.messages[0]
    argument = _argument(data, seed.body_types)
    # Feedback "the operation is echo_deep": everything else may go.
    calls = []

    def keeps(messages):
        calls.append(messages)
        return any(b"echo_deep\0" in m for m in messages)
    from pycdr.fuzz.learning import cut_fixed
    small = trim([data, data], keeps, budget=40, cut=lambda m, at, n: cut_fixed(m, at, n, ctx))
    assert len(small) == 1 and len(small[0]) < len(data) and keeps(small)
    assert len(calls) <= 40
    assert _size(small[0]) == len(small[0]) - 12
    assert argument is not None


def test_minimization_tried_together_gives_what_one_try_at_a_time_gives():
    """trim() with ``together`` (state feedback: the next tries run at
    once) ends with the messages trying them one at a time gives, for
    feedback that holds for some cuts and not others."""
    seed = _echo_deep_seed()
    ctx = MutationContext([seed], b"Echo")
    data = seed.messages[0]
    from pycdr.fuzz.learning import cut_fixed

    def cut(m, at, n):
        return cut_fixed(m, at, n, ctx)
    rounds = []

    def together(candidates):
        rounds.append(len(candidates))
        return [keeps(c) for c in candidates]
    for needed in (b"echo_deep\0", b"GIOP", data[40:44], data[-6:]):
        def keeps(messages):
            return any(needed in m for m in messages) and sum(map(len, messages)) > 40
        for budget in (3, 12, 40):
            rounds.clear()
            one_at_a_time = trim([data, data[:60], data], keeps, budget, cut)
            assert trim([data, data[:60], data], keeps, budget, cut, together) == one_at_a_time
            assert keeps(one_at_a_time) or one_at_a_time == [data, data[:60], data]
            # (Several tries a round: fewer rounds than tries.)
            assert max(rounds) > 1 and len(rounds) < budget


def test_havoc_fixes_up_lengths_the_layout_knows():
    seed = _echo_deep_seed()
    ctx = MutationContext([seed], b"Echo")
    data = seed.messages[0]
    string = [f for f in message_fields(data, seed.body_types) if f.kind == "length"
              and f.path.startswith("request.body")][0]
    at = string.offset + 5                     # inside the string's characters
    grown = bytearray(data[:at] + b"\x80\x80\x80" + data[at:])
    fix_lengths(grown, data, at, 3, ctx, seed.body_types)
    from pycdr.fuzz.mutators import fix_size
    fix_size(grown)
    before = _argument(data, seed.body_types)
    after = _argument(bytes(grown), seed.body_types)
    assert len(after.encode("latin-1")) == len(before.encode("latin-1")) + 3
    # havoc itself: the size right after blocks go in or out (bytes overwritten
    # in place, the size's among them, stay as they are); any byte reachable.
    rng = random.Random(3)
    touched = set()
    checked = 0
    for _ in range(300):
        [out], mutations = havoc([data], rng, ctx, body_types=seed.body_types)
        assert all(m.mutator == "havoc" for m in mutations)
        resized = [m for m in mutations if m.detail.split("@")[0] in ("insert", "delete")]
        if resized and len(resized) == len(mutations):
            assert _size(out) == len(out) - 12
            checked += 1
        if len(out) == len(data):
            touched |= {k for k in range(len(data)) if out[k] != data[k]}
    assert touched & set(range(string.offset + 4, len(data)))     # the argument's bytes
    assert touched & set(range(12))                              # the header's
    assert checked > 10


def test_a_layout_shifted_past_an_insert_or_delete_is_the_layout_parsed_again():
    """havoc keeps a message's layout across its stacked mutations: after bytes go in
    or out of a string's characters (its length fixed up), the fields moved by
    `shifted` are those message_fields finds in the new bytes."""
    from pycdr.fuzz.havoc import shifted
    seed = _echo_deep_seed()
    ctx = MutationContext([seed], b"Echo")
    data = seed.messages[0]
    fields = message_fields(data, seed.body_types)
    string = [f for f in fields if f.kind == "length" and f.path.startswith("request.body")][0]
    length = int.from_bytes(data[string.offset:string.offset + 4],
                            "little" if data[6] & 1 else "big")
    assert length > 4
    for at, delta in ((string.offset + 5, 3), (string.offset + 5, 8), (string.offset + 4, 1),
                      (string.offset + 5, -2), (string.offset + 4, -3)):
        if delta > 0:
            changed = bytearray(data[:at] + b"\x80" * delta + data[at:])
        else:
            changed = bytearray(data[:at] + data[at - delta:])
        fix_lengths(changed, data, at, delta, ctx, seed.body_types)
        from pycdr.fuzz.mutators import fix_size
        fix_size(changed)
        assert shifted(fields, at, delta) == message_fields(bytes(changed), seed.body_types), \
            (at, delta)


def test_state_features_are_answers_and_steps_not_arrangements():
    from pycdr.fuzz.feedback import state_features
    ok = Reply(request_id=1, reply_status=0)
    marshal = Reply(request_id=2, reply_status=2, system_exception=system_exception(
        "IDL:omg.org/CORBA/MARSHAL:1.0", 4, 1))
    corpus = Corpus()
    corpus.observe(state_features(state_of(_observation(ok, marshal))))
    corpus.observe(state_features(state_of(_observation(marshal, ok))))
    # ok, marshal, ok: every answer and every step between them already seen
    assert not corpus.new_features(state_features(state_of(_observation(ok, marshal, ok))))
    # marshal twice in a row: a step not seen before
    assert corpus.new_features(state_features(state_of(_observation(marshal, marshal))))
    # the same answers, the connection closed after them: a new end and step
    assert corpus.new_features(state_features(state_of(_observation(ok, marshal, closed=True))))


def test_a_pipelined_batchs_answers_go_back_to_their_cases():
    """answers_by_case: Replies and LocateReplies by request id, whatever their order;
    MessageErrors to the cases that had violations, in the order sent; None when an
    answer names no case or a case misses one."""
    from pycdr.fuzz.case import Case
    from pycdr.fuzz.feedback import answer_state, kept_open_state
    from pycdr.fuzz.learning import answers_by_case
    from pycdr.fuzz.prediction import Prediction
    from pycdr.giop.messages import MessageError

    def case(ids, errors=0):
        c = Case(0, "seed", [], [])
        c.prediction = Prediction(answers=len(ids) + errors, request_ids=tuple(ids))
        return c
    cases = [case([1, 2]), case([], errors=1), case([3]), case([4], errors=1)]
    ok = Reply(request_id=0, reply_status=0)
    error = MessageError()

    def reply(rid, status=0):
        return rid, answer_state(Reply(request_id=rid, reply_status=status))
    answers = [reply(3), (None, answer_state(error)), reply(2, 3), reply(1),
               (None, answer_state(error)), reply(4, 2)]
    assert answers_by_case(cases, answers) == [
        kept_open_state([answer_state(Reply(request_id=2, reply_status=3)), answer_state(ok)]),
        kept_open_state([answer_state(error)]),
        kept_open_state([answer_state(ok)]),
        kept_open_state([answer_state(error), answer_state(Reply(request_id=4,
                                                                 reply_status=2))])]
    assert answers_by_case(cases, answers + [reply(9)]) is None            # names no case
    assert answers_by_case(cases, answers[:-1]) is None                    # one missing
    assert answers_by_case(cases, answers + [(None, answer_state(error))]) is None


# --- groups under sancov ----------------------------------------------------------------
def _case(index: int, message: bytes) -> Case:
    case = Case(index, "test", [message], [Mutation("test", "payload")])
    case.prediction = predict(case.messages)
    case.batchable, case.tail = framing(case.prediction, case.messages)
    return case


@pytest.fixture
def sancov_campaign(server, monkeypatch, tmp_path):
    """A sancov campaign against the server whose corpus is a LocateRequest:
    what a Request passes is new to it."""
    monkeypatch.setenv("ASAN_OPTIONS", "symbolize=0")
    made = []

    def make(**options):
        made.append(Campaign(None, seed=SEED, spawn=server, coverage="sancov",
                             seeds=[Seed("locate", [_locate_message()])], minimize=False,
                             probe_interval=60.0, **options))
        return made[-1]
    yield make
    for campaign in made:
        campaign.close()


def _edges_seen(campaign) -> set:
    return {f >> 4 for f in campaign.corpus.seen}


def test_a_group_whose_one_case_passes_new_edges_keeps_that_case_alone(sancov_campaign):
    """A group's edge map is read once; when it shows new edges, the case
    that passes them alone is found (bisection) and kept, and only it: the
    LocateRequests beside it pass nothing new."""
    campaign = sancov_campaign()
    assert campaign.corpus.entries[0].features        # (the first run: its edges are its own)
    known = _edges_seen(campaign)
    echo = _case(9, _echo_deep_request(b"plain text that is long enough"))
    group = [_case(k, _locate_message()) for k in range(9)] + [echo] + \
        [_case(k, _locate_message()) for k in range(10, 16)]
    campaign._run_group(group)
    assert campaign.kept == 1
    assert campaign.corpus.entries[-1].messages == echo.messages
    assert _edges_seen(campaign) > known
    # A group whose edges are all known: kept nothing, bisected nothing.
    bisections = campaign.bisections
    campaign._run_group([_case(k, _locate_message()) for k in range(16, 32)])
    assert campaign.kept == 1 and campaign.bisections == bisections


def _start_only_edges(server) -> set:
    """The edges the server passes starting up and never for a case."""
    edge_map = EdgeMap()
    target = SpawnedTarget(server, env=edge_map.environment())
    try:
        port = int(target.start().rsplit(":", 1)[1].split("/")[0])
        time.sleep(0.2)
        started = set(edge_map.edges())
        edge_map.reset()
        _locate_request(port)
        time.sleep(0.1)
        return started - set(edge_map.edges())
    finally:
        target.stop()
        edge_map.close()


def test_a_restart_under_sancov_takes_the_standby_and_its_own_edge_map(server,
                                                                        sancov_campaign):
    """Each process writes a map of its own: a restart takes the standby
    (started long before), whose start-up is counted as no case's, and the
    campaign reads the new process's map from then on (the edges a Request
    passes are found after the restart)."""
    start_only = _start_only_edges(server)
    assert start_only
    campaign = sancov_campaign()
    first_map = campaign.edge_map.path
    campaign._run_group([_case(k, _locate_message()) for k in range(16)])
    assert campaign._fresh_target(restart=True)
    assert campaign.spawned.standby_used == 1 and campaign.edge_map.path != first_map
    assert not os.path.exists(first_map)            # (the stopped process's map is gone)
    # (At once: the new spare starts up meanwhile, writing into a map of its own.)
    echo = _case(20, _echo_deep_request(b"plain text that is long enough"))
    campaign._run_group([_case(k, _locate_message()) for k in range(16, 24)] + [echo])
    assert campaign.kept == 1 and campaign.corpus.entries[-1].messages == echo.messages
    assert not start_only & (_edges_seen(campaign) | set(campaign._missed))


def test_a_crash_inside_a_group_is_put_to_its_case_and_the_others_learned_from(
        sancov_campaign):
    """A case of a group that crashes the server is found (alone against a
    fresh target, three times); the others run again, and the one that
    passes new edges is kept."""
    campaign = sancov_campaign()
    crash = _case(5, _echo_deep_request(b"\xc3\xa9" * 20))
    echo = _case(11, _echo_deep_request(b"plain text that is long enough"))
    group = [_case(k, _locate_message()) for k in range(5)] + [crash] + \
        [_case(k, _locate_message()) for k in range(6, 11)] + [echo] + \
        [_case(k, _locate_message()) for k in range(12, 16)]
    campaign._run_group(group)
    [finding] = campaign.findings.values()
    assert finding.kind == "crash" and finding.confirmed and finding.case is crash
    assert finding.details["sanitizer"]["kind"] == "stack-buffer-overflow"
    assert campaign.kept == 1 and campaign.corpus.entries[-1].messages == echo.messages
