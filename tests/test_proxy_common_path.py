"""The proxy's common path -- a run of common GIOP 1.2/1.3 Requests and Replies framed
and decoded in one call (GiopConnection.receive_common, pycdr.codec._speedups on the C
path), a fragmented message whose fragments came together joined in one call
(GiopConnection.receive_chain), their calls relayed and tracked without events or
entries (ProxyConnection._common,
CallTracker.common_request / common_reply) -- against the general path alone: for
streams of real and made messages of every version, byte order and kind, fragments,
oneways, reused and unknown request ids, cut and merged into reads at random, the same
bytes go to the same side and the same rows come out, with and without an IDL and rules."""

import random

import pytest

from proxy_support import MODULE
from pycdr.addressing.rewrite import ReferenceRewriter
from pycdr.calls.bodies import CallBodies
from pycdr.errors import PycdrError
from pycdr.giop.connection import GiopConnection
from pycdr.giop.header import MsgType, parse_header
from pycdr.giop.messages import KeyAddr, Reply, Request, encode_fragments, encode_message
from pycdr.giop.service_contexts import CodeSetsContext
from pycdr.proxy.core import CLIENT, SERVER, Close, ProxyCore, Send
from pycdr.proxy.rules import parse_rules

from test_giop_connection_properties import PIECES

_FROM_CLIENT = {MsgType.Request, MsgType.CancelRequest, MsgType.LocateRequest}


def made_calls(rng: random.Random) -> list:
    """(side, bytes) of calls in every version and byte order: twoway and oneway,
    with service contexts, fragmented, answered, unanswered, answered twice."""
    out = []
    for rid in range(1, 120):
        version = rng.choice([(1, 0), (1, 1), (1, 2), (1, 2), (1, 3), (1, 3)])
        little = rng.random() < 0.5
        contexts = [CodeSetsContext(char_data=1, wchar_data=2)] if rng.random() < 0.2 else []
        flags = 0 if rng.random() < 0.1 else 3
        op = rng.choice(["echo_long", "echo_long", "echo_string", "_non_existent"])
        body = b"\0\0\0\x2a" if op == "echo_long" else \
            b"\0\0\0\x03ab\0" if op == "echo_string" else b""
        req = Request(version=version, little=little, request_id=rid, response_flags=flags,
                      target=KeyAddr(rng.choice([b"Echo", b"\x00\x01key"])), operation=op,
                      service_contexts=contexts, body=body)
        data = encode_message(req)
        pieces = encode_fragments(req, data, 48) if rng.random() < 0.3 else [data]
        out += [(CLIENT, p) for p in pieces]
        if flags == 0 or rng.random() < 0.05:
            continue
        answer_id = rid if rng.random() < 0.9 else rid + 1000
        rep = Reply(version=version, little=little, request_id=answer_id,
                    service_contexts=contexts, body=b"\0\0\0\x2a" if op == "echo_long" else
                    b"\0\0\0\x03ab\0" if op == "echo_string" else b"\0")
        data = encode_message(rep)
        pieces = encode_fragments(rep, data, 40) if rng.random() < 0.3 else [data]
        out += [(SERVER, p) for p in pieces] * (2 if rng.random() < 0.03 else 1)
    return out


def captured(rng: random.Random) -> list:
    """(side, bytes) of the messages of the captures and samples, each from the side
    that sends its kind."""
    out = []
    for piece in PIECES:
        try:
            t = parse_header(piece).msg_type
        except PycdrError:
            t = None
        side = CLIENT if t in _FROM_CLIENT else SERVER if t is not None else \
            rng.choice([CLIENT, SERVER])
        out.append((side, piece))
    return out


def reads(messages: list, rng: random.Random) -> list:
    """The messages as reads: runs of one side's messages joined, cut anywhere."""
    out = []
    i = 0
    while i < len(messages):
        side = messages[i][0]
        j = i + 1
        while j < len(messages) and messages[j][0] == side and rng.random() < 0.5:
            j += 1
        data = b"".join(m for _, m in messages[i:j])
        i = j
        cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1,
                                                           rng.choice([0, 0, 0, 1, 2]))))
        for a, b in zip([0] + cuts, cuts + [len(data)]):
            out.append((side, data[a:b]))
    return out


def relayed(stream: list, *, idl: bool, rules, later: bool = False, keep_rows: bool = True,
            max_pending: int | None = None) -> tuple:
    """What a proxy core sends and the rows it makes for ``stream`` ([(side, bytes)]);
    ``later``: the rows of each read's common messages made after it, as the proxy's
    I/O does (ProxyConnection.later); ``keep_rows`` False: no rows wanted (no emit, as
    `pycdr proxy -q` without --json), the counts only; ``max_pending``: the tracker's."""
    rows = []
    core = ProxyCore(rewriter=ReferenceRewriter({("10.0.0.2", 2809): ("127.0.0.1", 9999)}),
                     rules=parse_rules(rules, 1) if rules else None,
                     emit=rows.append if keep_rows else None,
                     bodies=CallBodies([MODULE]) if idl else None, seed=1)
    if max_pending is not None:
        core.tracker.max_pending = max_pending
    conn = core.connection(("10.0.0.1", 40000), ("10.0.0.2", 2809))
    if later:
        conn.later = []
    actions = []
    deferred = 0
    for ts, (side, data) in enumerate(stream):
        for a in conn.data(side, data, ts):
            actions.append(("send", a.to, [bytes(p) for p in a.pieces], a.delay, a.interval)
                           if isinstance(a, Send) else ("close", a.which, a.abrupt))
        if later:
            deferred += len(conn.later)
            conn.track_later()
    conn.closed()
    if later and not rules:
        assert deferred > 50            # (rows were made after their reads)
    if not keep_rows:
        assert not core._faults         # (a rule's faults are kept for rows only)
    return actions, rows, core.tracker.counts.to_json(), conn.relaying


@pytest.mark.parametrize("idl", [False, True])
@pytest.mark.parametrize("rules", [None, [{"match": {"operation": "echo_string"},
                                            "action": {"type": "delay", "ms": 5}}]])
@pytest.mark.parametrize("seed", range(3))
def test_the_common_path_relays_and_tracks_as_the_general_one(monkeypatch, idl, rules, seed):
    rng = random.Random(seed)
    messages = made_calls(rng)
    if seed == 2:
        messages += captured(rng)           # (the general path's: relayed from a violation on)
    stream = reads(messages, rng)
    taken, chains = [], []
    common, chain = GiopConnection.receive_common, GiopConnection.receive_chain

    def counted(self, data, pos=0):
        got, end = common(self, data, pos)
        taken.extend(got)
        return got, end

    def counted_chain(self, data, pos=0):
        got = chain(self, data, pos)
        if got is not None:
            chains.append(got)
        return got
    monkeypatch.setattr(GiopConnection, "receive_common", counted)
    monkeypatch.setattr(GiopConnection, "receive_chain", counted_chain)
    fast = relayed(stream, idl=idl, rules=rules)
    assert len(taken) > 50 and len(chains) > 3      # (the common path was taken)
    assert relayed(stream, idl=idl, rules=rules, later=True) == fast
    monkeypatch.setattr(GiopConnection, "receive_common", lambda self, data, pos=0: ([], pos))
    monkeypatch.setattr(GiopConnection, "receive_chain", lambda self, data, pos=0: None)
    general = relayed(stream, idl=idl, rules=rules)
    assert fast[0] == general[0]
    assert fast[1] == general[1] and len(fast[1]) > 50
    assert fast[2:] == general[2:]


@pytest.mark.parametrize("idl", [False, True])
@pytest.mark.parametrize("rules", [None, [{"match": {"operation": "echo_string"},
                                            "action": {"type": "delay", "ms": 5}}]])
@pytest.mark.parametrize("max_pending", [None, 3])
def test_with_no_rows_wanted_the_same_is_relayed_and_counted(idl, rules, max_pending):
    """No rows wanted (the tracker makes none for the common path's calls: they wait
    for their replies without one): the same bytes go to the same sides, and the counts
    (rows, outcomes, evictions, the most waiting) are those of the rows made."""
    for seed in range(3):
        rng = random.Random(seed)
        messages = made_calls(rng)
        if seed == 2:
            messages += captured(rng)
        stream = reads(messages, rng)
        with_rows = relayed(stream, idl=idl, rules=rules, max_pending=max_pending)
        for later in (False, True):
            without = relayed(stream, idl=idl, rules=rules, later=later, keep_rows=False,
                              max_pending=max_pending)
            assert without[1] == []
            assert without[0] == with_rows[0]
            assert without[2:] == with_rows[2:]
        outcomes = with_rows[2]["outcomes"]
        assert outcomes["success"] > 20 and outcomes["oneway"] > 3
        if max_pending is not None:
            assert with_rows[2]["evicted"] > 0
