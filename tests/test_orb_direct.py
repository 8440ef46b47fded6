"""The server's fast path (issue 21): a Request answered in one C call
(pycdr.codec._speedups.serve_request, entered by RequestDispatch._run_direct) gives the
very bytes the general path gives, for every GIOP version and byte order, and
leaves everything unusual to the general path untouched (nothing run, the
general path's typed errors).

The threaded server's connection is driven here in process (ThreadConnection
over a socket stand-in whose writes are collected); the asyncio server and the
blocking client run the same fast path over real sockets in test_orb_threads.py,
test_orb_roundtrip.py and test_orb_omni.py."""

import random

import pytest

from orb_echo_values import ECHO_INTERFACE, WIDE_OPERATIONS, echo_cases, load_echo_module
from pycdr.codec import marshal, tc
from pycdr.errors import PycdrError
from pycdr.giop.events import TAKEN, MessageReceived, NEED_DATA, ProtocolViolation
from pycdr.giop.messages import (KeyAddr, LocateRequest, Reply, ReplyStatus, Request,
                                 decode_message, encode_message)
from pycdr.giop.service_contexts import CodeSetsContext
from pycdr.giop.sysexc import BAD_PARAM, CompletionStatus, SystemException
from pycdr.orb import ClassServant, EchoServant, ServerLimits, ThreadedServer
from pycdr.orb.invocation import write_arguments
from pycdr.orb.threads import ThreadConnection

MODULE = load_echo_module()
ECHO = MODULE.interfaces[ECHO_INTERFACE]
VERSIONS = [(1, 0), (1, 1), (1, 2)]
C_PATH = marshal.IMPLEMENTATION == "c"


class _Socket:
    """What ThreadConnection asks of its socket before any I/O."""
    def setsockopt(self, *args):
        pass

    def settimeout(self, value):
        pass

    def close(self):
        pass


class Harness:
    """A threaded-server connection fed whole messages; its replies collected."""

    def __init__(self, servant, limits=None):
        self.server = ThreadedServer(limits=limits) if limits else ThreadedServer()
        self.key = self.server.activate(servant, b"Echo")
        self.conn = ThreadConnection(self.server, _Socket(), ("127.0.0.1", 1))
        self.sent = []
        self.conn._write = self.sent.append
        self.served_directly = 0
        self.events = []

    def feed(self, data: bytes) -> list:
        """The replies to ``data`` (one or more messages)."""
        self.sent.clear()
        giop = self.conn.giop
        giop.receive_data(data)
        while True:
            event = giop.next_event()
            if event is NEED_DATA:
                break
            self.events.append(event)
            if event is TAKEN:
                self.served_directly += 1
            elif isinstance(event, MessageReceived):
                if isinstance(event.message, Request):
                    self.conn._serve(event.message)
                else:
                    self.conn._on_other_message(event.message)
            elif isinstance(event, ProtocolViolation):
                self.conn._violation(event)
                break
        return [bytes(s) for s in self.sent]


def request(key, op_name, args, *, version=(1, 2), little=False, rid=1, flags=3,
            contexts=()):
    op = ECHO.all_operations()[op_name]
    return encode_message(Request(version=version, little=little, request_id=rid,
                                  response_flags=flags, target=KeyAddr(key),
                                  operation=op_name, service_contexts=list(contexts)),
                          write_body=lambda w: write_arguments(w, op, list(args)))


def replies_both_ways(make_servant, messages, monkeypatch):
    """The replies of a fresh harness to ``messages`` with the C path on (fast path
    free to take them) and off (the general path, all Python); and how many the
    fast path took."""
    from pycdr.codec import _cmarshal
    out = {}
    for enabled in (True, False):
        monkeypatch.setattr(_cmarshal, "enabled", enabled)
        h = Harness(make_servant())
        out[enabled] = ([h.feed(m(h.key)) for m in messages], h.served_directly)
    return out[True], out[False]


@pytest.fixture
def c_only():
    if not C_PATH:
        pytest.skip("pycdr.codec._speedups not in use (PYCDR_PURE=1 or not built)")


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"giop1.{v[1]}")
@pytest.mark.parametrize("little", [False, True], ids=["big", "little"])
def test_every_echo_reply_is_the_general_paths_bytes(version, little, monkeypatch):
    """Each echo case twice (the first teaches the table, the second may take the
    fast path); every reply is byte for byte the general path's."""
    cases = [(op, args) for op, args in echo_cases(MODULE)
             if not (version == (1, 0) and op in WIDE_OPERATIONS)]
    messages = []
    for i, (op, args) in enumerate(cases):
        for again in range(2):
            messages.append(lambda key, op=op, args=args, rid=2 * i + again + 1:
                            request(key, op, args, version=version, little=little, rid=rid))
    (fast, taken), (general, none_taken) = replies_both_ways(
        lambda: EchoServant(ECHO), messages, monkeypatch)
    assert none_taken == 0
    assert fast == general
    assert all(len(r) == 1 for r in fast)          # one reply each
    for replies in fast:
        reply, _ = decode_message(replies[0])
        assert reply.reply_status in (ReplyStatus.NO_EXCEPTION,
                                      ReplyStatus.SYSTEM_EXCEPTION)
    if C_PATH:
        # Most of the second calls went the fast path (not any, fixed, wchar...).
        assert taken >= len(cases) // 2, taken


class Behaving:
    """A ClassServant implementation whose methods misbehave on request."""
    def __init__(self):
        self.calls = 0

    def echo_short(self, value):
        self.calls += 1
        if value == 1:
            raise BAD_PARAM(7, CompletionStatus.COMPLETED_YES)
        if value == 2:
            raise RuntimeError("a bug in the servant")
        if value == 3:
            return "not a short"
        if value == 4:
            return self._later(value)
        return value

    async def _later(self, value):
        return value + 1

    def echo_long(self, value):
        self.calls += 1
        return value


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"giop1.{v[1]}")
@pytest.mark.parametrize("little", [False, True], ids=["big", "little"])
def test_servant_exceptions_and_bad_results_as_the_general_path(version, little,
                                                                monkeypatch, caplog):
    """A servant that raises a system exception, raises anything else, returns a value
    its type does not take, or returns an awaitable: the same replies either way,
    and the servant ran once per request."""
    values = [5, 5, 1, 5, 2, 3, 4, 5]
    messages = [lambda key, v=v, rid=i + 1:
                request(key, "echo_short", (v,), version=version, little=little, rid=rid)
                for i, v in enumerate(values)]
    impls = []

    def make():
        impls.append(Behaving())
        return ClassServant(ECHO, impls[-1])
    (fast, taken), (general, _) = replies_both_ways(make, messages, monkeypatch)
    assert fast == general
    assert [impl.calls for impl in impls] == [len(values)] * 2
    statuses = [decode_message(r[0])[0].reply_status for r in fast]
    assert statuses[2] == statuses[4] == statuses[5] == ReplyStatus.SYSTEM_EXCEPTION
    assert decode_message(fast[6][0])[0].reply_status == ReplyStatus.NO_EXCEPTION
    if C_PATH:
        assert taken >= 5, taken


def test_a_method_that_turns_out_to_await_leaves_the_fast_path(c_only):
    impl = Behaving()
    h = Harness(ClassServant(ECHO, impl))
    h.feed(request(h.key, "echo_short", (5,), rid=1))     # learnt
    h.feed(request(h.key, "echo_short", (5,), rid=2))
    assert h.served_directly == 1
    [reply] = h.feed(request(h.key, "echo_short", (4,), rid=3))     # awaitable: 5
    assert decode_message(reply)[0].reply_status == ReplyStatus.NO_EXCEPTION
    assert "echo_short" not in h.server.adapter.direct.get(h.key, {})
    h.feed(request(h.key, "echo_short", (5,), rid=4))
    assert h.served_directly == 2         # (the awaiting one counted; not the last)


class Noting:
    """A servant of the oneway operation note: a list of what it was given; it raises
    for "boom" and returns a value (which a method without results must not) for
    "value"."""
    def __init__(self):
        self.notes = []

    def note(self, text):
        if text == "boom":
            raise RuntimeError("a oneway call's servant failing")
        self.notes.append(text)
        return 5 if text == "value" else None


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"giop1.{v[1]}")
def test_oneway_requests_of_an_operation_without_results_are_served_directly(
        version, monkeypatch, caplog):
    """A oneway request (response flags 0) of a learnt operation without results: its
    servant runs in C and nothing is sent, as on the general path; a servant that
    raises or returns a value is judged by the general path (logged, nothing sent)."""
    texts = ["learn", "a", "boom", "b", "value", "c"]
    messages = [lambda key, text=text, rid=rid: request(key, "note", (text,), flags=0,
                                                        version=version, rid=rid)
                for rid, text in enumerate(texts, 1)]
    servants = []

    def make():
        servants.append(Noting())
        return ClassServant(ECHO, servants[-1])
    (fast, taken), (general, none_taken) = replies_both_ways(make, messages, monkeypatch)
    assert fast == general == [[]] * len(texts)
    assert servants[0].notes == servants[1].notes == ["learn", "a", "b", "value", "c"]
    assert none_taken == 0
    if C_PATH:
        # a, b, c: served in C; boom and value ran in C, the general path judged them
        assert taken == 5, taken


def test_not_taken_is_left_to_the_general_path(c_only):
    """What the fast path leaves alone: service contexts, oneway requests of an
    operation with results, SYNC_WITH_SERVER requests, a LocateRequest, another key, a fragment, a request id
    still outstanding, a deactivated servant."""
    impl = Behaving()
    h = Harness(ClassServant(ECHO, impl))
    h.feed(request(h.key, "echo_short", (5,), rid=1))
    assert h.served_directly == 0 and impl.calls == 1
    codesets = CodeSetsContext(char_data=0x00010001, wchar_data=0x00010109)
    for data in [request(h.key, "echo_short", (5,), rid=2, contexts=[codesets]),
                 request(h.key, "echo_short", (5,), rid=3, flags=0),
                 request(h.key, "echo_short", (5,), rid=4, flags=1),
                 encode_message(LocateRequest(version=(1, 2), request_id=5,
                                              target=KeyAddr(h.key))),
                 request(b"Other", "echo_short", (5,), rid=6)]:
        h.feed(data)
    assert h.served_directly == 0
    # (a request id outstanding: served by the general path)
    h.conn.giop.outstanding.add(7)
    assert h.conn._run_direct(request(h.key, "echo_short", (5,), rid=7)) is False
    h.conn.giop.outstanding.discard(7)
    h.feed(request(h.key, "echo_short", (5,), rid=8))
    assert h.served_directly == 1
    h.server.adapter.deactivate(h.key)
    [reply] = h.feed(request(h.key, "echo_short", (5,), rid=9))
    assert decode_message(reply)[0].reply_status == ReplyStatus.SYSTEM_EXCEPTION
    assert h.served_directly == 1


def test_fragmenting_server_and_other_char_code_sets_take_the_general_path(c_only):
    h = Harness(EchoServant(ECHO), limits=ServerLimits(fragment_size=64))
    for rid in (1, 2):
        h.feed(request(h.key, "echo_short", (5,), rid=rid))
    assert h.served_directly == 0
    h = Harness(EchoServant(ECHO))
    utf8 = CodeSetsContext(char_data=0x05010001, wchar_data=0x00010109)
    h.feed(request(h.key, "echo_string", ("a",), rid=1, contexts=[utf8]))
    h.feed(request(h.key, "echo_string", ("a",), rid=2))
    assert h.served_directly == 0


def _table(key):
    op = ECHO.all_operations()["echo_long"]
    from pycdr.codec.plan import plan_for
    calls = []

    def call(op, args):
        calls.append(args)
        return args[0]
    return {key: {"echo_long": (op, call, (plan_for(tc.long),), (plan_for(tc.long),))}}, calls


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"giop1.{v[1]}")
@pytest.mark.parametrize("little", [False, True], ids=["big", "little"])
def test_malformed_requests_are_not_taken_and_error_as_before(version, little, c_only):
    """serve_request on every truncation and many corruptions of a request: None
    (the servant not run) or a reply; never a crash.  The general path then gives
    its typed errors with offsets."""
    from pycdr.codec._speedups import serve_request
    good = request(b"Echo", "echo_long", (7,), version=version, little=little, rid=9)
    table, calls = _table(b"Echo")
    reply = serve_request(good, table, set())
    assert isinstance(reply, bytes) and calls == [[7]]
    assert decode_message(reply)[0].request_id == 9
    for n in range(len(good)):
        assert serve_request(good[:n], table, set()) is None, n
    # the size field claiming more or less than there is
    for delta in (-4, -1, 1, 4, 1 << 20):
        size = int.from_bytes(good[8:12], "little" if little else "big") + delta
        bad = good[:8] + (size & 0xFFFFFFFF).to_bytes(4, "little" if little else "big") \
            + good[12:]
        assert serve_request(bad, table, set()) is None
    rng = random.Random(21)
    for _ in range(3000):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        got = serve_request(bytes(data), table, set())
        assert got is None or isinstance(got, bytes)
    # lengths past the end, through a connection: typed errors with offsets
    h = Harness(EchoServant(ECHO))
    body_len = len(good) - 12
    for pos in range(12, len(good) - 3, 4):
        bad = bytearray(request(h.key, "echo_long", (7,), version=version, little=little))
        bad[pos:pos + 4] = (0x7FFFFFF0).to_bytes(4, "little" if little else "big")
        h.feed(bytes(bad))
        event = h.events[-1]
        if isinstance(event, ProtocolViolation):
            assert isinstance(event.error, PycdrError)
            assert event.error.offset is not None
        assert len(bad) - 12 == body_len


def test_serve_request_arguments_are_checked(c_only):
    from pycdr.codec._speedups import serve_request
    with pytest.raises(TypeError):
        serve_request(b"", [], set())
    with pytest.raises(TypeError):
        serve_request(b"", {}, [])
    assert serve_request(memoryview(b"GIOP"), {}, set()) is None
    table, _ = _table(b"Echo")
    table[b"Echo"]["echo_long"] = ("not", "an entry")
    with pytest.raises(TypeError):
        serve_request(request(b"Echo", "echo_long", (7,)), table, set())


def test_system_exception_raised_by_servant_keeps_its_reply(c_only):
    """(what the fast path hands back when a servant raised: the general path's
    SYSTEM_EXCEPTION reply with the exception's minor code and completion)"""
    impl = Behaving()
    h = Harness(ClassServant(ECHO, impl))
    h.feed(request(h.key, "echo_short", (5,), rid=1))
    [reply] = h.feed(request(h.key, "echo_short", (1,), rid=2))
    msg, _ = decode_message(reply)
    assert isinstance(msg, Reply) and msg.reply_status == ReplyStatus.SYSTEM_EXCEPTION
    assert isinstance(msg.system_exception, SystemException)
    assert msg.system_exception.minor == 7
    assert h.served_directly == 1


# --- the client's side: encode_request and decode_reply ----------------------------

def _request_template(version, little, op_name):
    from pycdr.giop.messages import MessageTemplate
    return MessageTemplate(Request(version=version, little=little, response_flags=3,
                                   target=KeyAddr(b"Echo"), operation=op_name))


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"giop1.{v[1]}")
@pytest.mark.parametrize("little", [False, True], ids=["big", "little"])
def test_requests_and_replies_in_c_are_the_general_paths(version, little, c_only):
    """Every echo case: the Request encode_request makes from the template is the
    template's own encoding; the values decode_reply reads from the Reply are
    read_results'.  Those the C plans hand back (any, fixed, wide chars) give None."""
    from pycdr.codec._speedups import decode_reply, encode_request
    from pycdr.giop.messages import MessageTemplate
    from pycdr.orb.invocation import read_results, write_results
    taken = 0
    cases = [(op, args) for op, args in echo_cases(MODULE)
             if not (version == (1, 0) and op in WIDE_OPERATIONS)]
    for rid, (op_name, args) in enumerate(cases, 1):
        op = ECHO.all_operations()[op_name]
        template = _request_template(version, little, op_name)
        general = bytes(template.encode(rid, lambda w: write_arguments(w, op, list(args))))
        fast = encode_request(template.prefix, template.request_id_at, rid, little,
                              op.in_plans, tuple(args))
        assert fast is None or fast == general, op_name
        reply_template = MessageTemplate(Reply(version=version, little=little,
                                               reply_status=ReplyStatus.NO_EXCEPTION))
        values = list(args) if len(op.result_types) == len(args) else list(args)[:1]
        reply = bytes(reply_template.encode(rid, lambda w: write_results(w, op, values)))
        got = decode_reply(reply, {rid: op.result_plans})
        if got is not None:
            msg, _ = decode_message(reply)
            assert got == (rid, read_results(msg.body_reader(), op)), op_name
            assert decode_reply(reply, {rid + 1: op.result_plans}) is None
            taken += fast is not None
    assert taken >= len(cases) // 2, taken


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"giop1.{v[1]}")
@pytest.mark.parametrize("little", [False, True], ids=["big", "little"])
def test_malformed_replies_are_left_to_the_general_path(version, little, c_only):
    from pycdr.codec._speedups import decode_reply
    from pycdr.giop.messages import MessageTemplate
    from pycdr.orb.invocation import write_results
    op = ECHO.all_operations()["echo_string"]
    template = MessageTemplate(Reply(version=version, little=little,
                                     reply_status=ReplyStatus.NO_EXCEPTION))
    good = bytes(template.encode(5, lambda w: write_results(w, op, ["héllo"])))
    awaited = {5: op.result_plans}
    assert decode_reply(good, awaited) == (5, ["héllo"])
    assert decode_reply(bytearray(good), awaited) == (5, ["héllo"])
    assert decode_reply(good, {4: op.result_plans}) is None
    for n in range(len(good)):
        assert decode_reply(good[:n], awaited) is None, n
    order = "little" if little else "big"
    # the string's length past the end
    at = len(good) - len("héllo") - 1 - 4
    bad = good[:at] + (1 << 30).to_bytes(4, order) + good[at + 4:]
    assert decode_reply(bad, awaited) is None
    rng = random.Random(5)
    for _ in range(3000):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        got = decode_reply(bytes(data), awaited)
        assert got is None or (got[0] == 5 and isinstance(got[1], list) and len(got[1]) == 1)
    exception = encode_message(Reply(version=version, little=little, request_id=5,
                                     reply_status=ReplyStatus.SYSTEM_EXCEPTION,
                                     system_exception=BAD_PARAM(1, CompletionStatus.COMPLETED_NO)))
    assert decode_reply(exception, awaited) is None
    with pytest.raises(TypeError):
        decode_reply(good, {5: [op.result_plans]})


def test_encode_request_refuses_what_the_general_path_refuses(c_only):
    from pycdr.codec._speedups import encode_request
    op = ECHO.all_operations()["echo_short"]
    template = _request_template((1, 2), False, "echo_short")
    for bad in (("seven",), (1 << 20,), (None,)):
        assert encode_request(template.prefix, template.request_id_at, 1, False,
                              op.in_plans, bad) is None, bad
    with pytest.raises(TypeError):
        encode_request(template.prefix, template.request_id_at, 1, False, op.in_plans, ())
    with pytest.raises(ValueError):
        encode_request(b"GIOP", 12, 1, False, (), ())
    with pytest.raises(ValueError):          # (not a ulong)
        encode_request(template.prefix, template.request_id_at, 1 << 40, False,
                       op.in_plans, (1,))


def count_replies_taken(conn) -> list:
    """What a client connection's _take_reply answers from now on (a list that grows),
    and True for each Reply the blocking client's one-call lane (_speedups.exchange)
    takes whole."""
    taken = []
    if conn.giop.take_directly is not None:
        def counted(raw):
            took = conn._take_reply(raw)
            taken.append(took)
            return took
        conn.giop.take_directly = counted
    took_whole = conn.giop.took_whole

    def counted_whole(nbytes):
        taken.append(True)
        took_whole(nbytes)
    conn.giop.took_whole = counted_whole
    return taken


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"giop1.{v[1]}")
def test_blocking_client_takes_replies_in_c(version, impl):
    """SyncORB against the threaded server, every echo case: the same answers with the
    C path on (its one-call paths taken) and off."""
    from orb_echo_values import expected_result
    from pycdr.orb.sync import SyncORB
    with SyncORB() as orb:
        server = orb.serve(EchoServant(ECHO), "Echo", threads=True)
        echo = orb.string_to_object(server.corbaloc.replace("1.2@", f"1.{version[1]}@"),
                                    ECHO)
        assert echo.invoke("echo_short", 1) == 1
        conn = next(iter(orb.blocking._connections.values()))
        taken = count_replies_taken(conn)
        for op, args in echo_cases(MODULE, server.server.ior(server.key)):
            if version == (1, 0) and op in WIDE_OPERATIONS:
                continue
            for _ in range(2):
                assert echo.invoke(op, *args) == expected_result(args), op
        assert (sum(taken) > len(taken) // 2) == (impl == "c"), taken


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"giop1.{v[1]}")
def test_asyncio_client_and_server_take_calls_in_c(version, impl):
    """The asyncio ORB against the asyncio server, every echo case twice: the same
    answers with the C path on (replies taken by _take_reply, requests answered by
    serve_request) and off (neither)."""
    import asyncio

    from orb_echo_values import expected_result
    from pycdr.orb import ORB, Server

    async def run():
        server = Server()
        key = server.activate(EchoServant(ECHO), "Echo")
        await server.start()
        orb = ORB()
        try:
            echo = await orb.string_to_object(
                server.corbaloc(key).replace("1.2@", f"1.{version[1]}@"), ECHO)
            assert await echo.invoke("echo_short", 1) == 1
            conn = next(iter(orb._connections.values()))
            taken = count_replies_taken(conn)
            for op, args in echo_cases(MODULE, server.ior(key)):
                if version == (1, 0) and op in WIDE_OPERATIONS:
                    continue
                for _ in range(2):
                    assert await echo.invoke(op, *args) == expected_result(args), op
            assert not conn._reply_plans          # (none left behind)
            return taken, server.adapter.direct.get(key, {})
        finally:
            await orb.close()
            await server.stop()
    taken, learnt = asyncio.run(run())
    assert (sum(taken) > len(taken) // 2) == (impl == "c"), taken
    assert bool(learnt) == C_PATH


def test_a_servant_that_changes_the_table_while_it_runs(c_only):
    """A method that deactivates its own object (dropping its table entry) while the
    fast path runs it: its reply still goes out, as on the general path; the next
    request gets OBJECT_NOT_EXIST."""
    holder = {}

    class Leaving:
        def echo_long(self, value):
            holder["harness"].server.adapter.deactivate(holder["harness"].key)
            holder["harness"].server.adapter.direct.clear()
            return value

    h = holder["harness"] = Harness(ClassServant(ECHO, Leaving()))
    h.server.adapter.direct[h.key] = {}
    h.conn._learn_direct(h.key, "echo_long", h.server.adapter.servant(h.key),
                         ECHO.all_operations()["echo_long"])
    [reply] = h.feed(request(h.key, "echo_long", (7,), rid=1))
    assert h.served_directly == 1
    msg, _ = decode_message(reply)
    assert msg.reply_status == ReplyStatus.NO_EXCEPTION and msg.request_id == 1
    [reply] = h.feed(request(h.key, "echo_long", (7,), rid=2))
    assert decode_message(reply)[0].reply_status == ReplyStatus.SYSTEM_EXCEPTION
