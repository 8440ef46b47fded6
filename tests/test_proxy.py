"""pycdr proxy with the reference ORB on both sides: the relay (every version, both byte
orders, fragments), references rewritten (results by IDL, anys by TypeCode,
LOCATION_FORWARD, OBJECT_FORWARD, routes), and what a client sees under each fault."""

import asyncio
import time

import pytest

from proxy_support import ECHO, MODULE, address, echo_server, proxied, run, through
from pycdr.addressing.corbaloc import IIOPAddress
from pycdr.codec import tc
from pycdr.codec.ior import ior_from_string, ior_to_string
from pycdr.codec.values import Any
from pycdr.giop.messages import LocateStatus
from pycdr.giop.sysexc import COMM_FAILURE, TIMEOUT, TRANSIENT, CompletionStatus
from pycdr.orb import ORB, ClassServant, Server
from pycdr.orb.client import ClientOptions, first_iiop_profile
from pycdr.proxy.core import ProxyLimits
from pycdr.proxy.server import READ_SIZE

VERSIONS = [(1, 0), (1, 1), (1, 2)]


def corbaloc(host_port, key, version=(1, 2)):
    return f"corbaloc:{IIOPAddress(*host_port, version).to_url()}/{key.decode()}"


def address_of(ior):
    p = first_iiop_profile(ior)
    return p.host, p.port


def calls(rows, operation=None):
    return [r for r in rows if r["message_type"] == "Request" and
            (operation is None or r["operation"] == operation)]


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"giop{v[0]}.{v[1]}")
@pytest.mark.parametrize("little", [False, True], ids=["big", "little"])
def test_calls_relayed_and_recorded_as_call_rows(version, little):
    async def main():
        server, key = await echo_server()
        async with proxied([address(server)]) as (proxy, rows):
            async with ORB() as orb:
                ref = await orb.string_to_object(corbaloc(through(proxy), key, version), ECHO,
                                                 version=version, little=little)
                assert await ref.echo_long(42) == 42
                assert await ref.echo_string("through") == "through"
                assert await ref.echo_octets(bytes(range(256)) * 40) == \
                    bytes(range(256)) * 40
                assert await ref.is_a("IDL:EchoAll/Echo:1.0") is True
        await server.stop()
        return rows
    rows = run(main())
    done = calls(rows)
    assert [r["operation"] for r in done] == ["echo_long", "echo_string", "echo_octets",
                                              "_is_a"]
    for r in done:
        assert r["outcome"] == "success" and r["reply_status"] == "NO_EXCEPTION"
        assert r["giop_version"] == f"{version[0]}.{version[1]}"
        assert r["little_endian"] is little
        assert r["duration_ns"] > 0 and r["faults"] is None
    assert done[0]["arguments"] == {"v": 42} and done[0]["result"] == {"return": 42}


@pytest.mark.parametrize("version", [(1, 1), (1, 2)], ids=["giop1.1", "giop1.2"])
def test_fragments_pass_through_both_ways(version):
    async def main():
        server, key = await echo_server(fragment_size=64)
        async with proxied([address(server)]) as (proxy, rows):
            async with ORB(ClientOptions(fragment_size=64)) as orb:
                ref = await orb.string_to_object(corbaloc(through(proxy), key, version), ECHO,
                                                 version=version)
                text = "fragmented " * 30
                assert await ref.echo_string(text) == text
        await server.stop()
        return rows
    (row,) = calls(run(main()))
    assert row["outcome"] == "success" and row["fragments"] >= 8


def test_a_returned_reference_is_rewritten_and_its_calls_come_through_the_proxy():
    async def main():
        server, key = await echo_server()
        async with proxied([address(server)]) as (proxy, rows):
            async with ORB() as orb:
                ref = await orb.string_to_object(corbaloc(through(proxy), key), ECHO)
                direct = server.ior(key)
                returned = await ref.echo_object(direct)
                assert address_of(returned) == through(proxy)
                assert first_iiop_profile(returned).object_key == key
                again = await orb.string_to_object(ior_to_string(returned), ECHO)
                assert await again.echo_long(7) == 7
                # inside an any, found by the TypeCode it carries
                value = await ref.echo_any(Any(tc.Object, direct))
                assert address_of(value.value) == through(proxy)
                # the operations every object has need no IDL: _interface's answer
                interface_def = await ref.invoke_dynamic("_interface", [], tc.Object, [])
                assert address_of(interface_def) == through(proxy)
                # a reference to another server is left as it is
                other = Server()
                await other.start()
                elsewhere = other.ior(b"Other")
                assert address_of(await ref.echo_object(elsewhere)) == \
                    (other.host, other.port)
                await other.stop()
        await server.stop()
        return rows
    rows = run(main())
    assert [r["operation"] for r in calls(rows)] == ["echo_object", "echo_long", "echo_any",
                                                     "_interface", "echo_object"]
    # the rows hold the rewritten references the client got, decoded cleanly
    assert all(r["violations"] is None for r in rows)
    assert address_of(ior_from_string(rows[0]["result"]["return"]))[1] != \
        rows[0]["server_port"]


def test_location_forward_and_object_forward_go_to_a_routed_port():
    async def main():
        target, key = await echo_server()
        front = Server()
        await front.start()
        front.adapter.forward(b"Moved", target.ior(key))
        async with proxied([address(front), address(target)]) as (proxy, rows):
            async with ORB() as orb:
                moved = await orb.string_to_object(corbaloc(through(proxy), b"Moved"), ECHO)
                assert await moved.echo_long(5) == 5
                located = await (await orb.string_to_object(
                    corbaloc(through(proxy), b"Moved"))).locate()
                assert located.locate_status == LocateStatus.OBJECT_FORWARD
                assert address_of(located.forward) == through(proxy, 1)
        await front.stop()
        await target.stop()
        return rows
    rows = run(main())
    done = calls(rows, "echo_long")
    assert [r["reply_status"] for r in done] == ["LOCATION_FORWARD", "NO_EXCEPTION"]
    assert done[1]["server_port"] != done[0]["server_port"]
    assert "LOCATION_FORWARD" in [r["reply_status"] for r in done]
    forwarded = done[0]["forward_to"]
    assert forwarded.startswith("IOR:")


async def _call_under(rules, call, *, version=(1, 2), timeout=None, hooks=None, explain=None,
                      **server_limits):
    """(what the call returned or raised, rows, seconds) with ``rules`` (and ``hooks``)
    in force."""
    server, key = await echo_server(**server_limits)
    async with proxied([address(server)], rules=rules, hooks=hooks, explain=explain) as (proxy,
                                                                                       rows):
        options = ClientOptions() if timeout is None else ClientOptions(timeout=timeout)
        async with ORB(options) as orb:
            ref = await orb.string_to_object(corbaloc(through(proxy), key, version), ECHO,
                                             version=version)
            started = time.monotonic()
            try:
                outcome = await call(ref)
            except Exception as e:      # what the client saw is the result
                outcome = e
            took = time.monotonic() - started
    await server.stop()
    return outcome, rows, took


def test_system_exception_rule_answers_transient_in_the_servers_stead():
    rules = [{"match": {"operation": "echo_long"},
              "action": {"type": "system_exception", "id": "TRANSIENT", "minor": 0x4F4D0002,
                         "completed": "no"}}]
    seen, rows, _ = run(_call_under(rules, lambda ref: ref.echo_long(1)))
    assert isinstance(seen, TRANSIENT)
    assert seen.minor == 0x4F4D0002 and seen.completed == CompletionStatus.COMPLETED_NO
    (row,) = calls(rows)
    assert row["reply_status"] == "SYSTEM_EXCEPTION" and \
        row["exception_id"] == "IDL:omg.org/CORBA/TRANSIENT:1.0"
    assert row["faults"] == [{"rule": 1, "direction": "request", "type": "system_exception",
                              "id": "TRANSIENT", "minor": 0x4F4D0002, "completed": "no"}]


def test_explain_column_judges_the_request_a_fault_answered():
    from pycdr.cli.explain import explain_column
    from pycdr.conformance.echo import ECHO_IDL
    rules = [{"match": {"operation": "echo_long"},
              "action": {"type": "system_exception", "id": "MARSHAL", "minor": 0x4F4D0001}}]
    seen, rows, _ = run(_call_under(rules, lambda ref: ref.echo_long(1),
                                    explain=explain_column([ECHO_IDL])))
    (row,) = calls(rows)
    # The client's request broke no rule: the exception is the (injected) peer's doing.
    assert row["explain"]["clean"] is True and row["explain"]["findings"] == []
    assert row["explain"]["answer"]["exception_id"] == "IDL:omg.org/CORBA/MARSHAL:1.0"
    # Without explain nothing is kept for it.
    seen, rows, _ = run(_call_under(rules, lambda ref: ref.echo_long(1)))
    assert calls(rows)[0]["explain"] is None


def test_nth_rule_hits_only_that_call_and_others_pass():
    rules = [{"match": {"operation": "echo_long", "nth": 2},
              "action": {"type": "system_exception", "id": "NO_RESOURCES"}}]

    async def three(ref):
        out = []
        for i in range(3):
            try:
                out.append(await ref.echo_long(i))
            except Exception as e:
                out.append(type(e).__name__)
        return out
    seen, rows, _ = run(_call_under(rules, three))
    assert seen == [0, "NO_RESOURCES", 2]
    assert [r["faults"] is not None for r in calls(rows)] == [False, True, False]


def test_delay_and_stall_slow_the_answer():
    delay = [{"match": {}, "action": {"type": "delay", "ms": 300}}]
    seen, rows, took = run(_call_under(delay, lambda ref: ref.echo_long(3)))
    assert seen == 3 and took >= 0.3
    stall = [{"match": {}, "action": {"type": "stall", "ms": 300}}]
    seen, rows, took = run(_call_under(stall, lambda ref: ref.echo_long(4)))
    assert seen == 4 and took >= 0.3
    assert calls(rows)[0]["faults"][0]["direction"] == "reply"


def test_forward_rule_sends_the_client_elsewhere_through_the_proxy():
    async def main():
        target, key = await echo_server()
        other, other_key = await echo_server()
        rules = [{"match": {"operation": "echo_long", "first": 1},
                  "action": {"type": "forward",
                             "to": ior_to_string(other.ior(other_key))}}]
        async with proxied([address(target), address(other)], rules=rules) as (proxy, rows):
            async with ORB() as orb:
                ref = await orb.string_to_object(corbaloc(through(proxy), key), ECHO)
                assert await ref.echo_long(8) == 8
        await target.stop()
        await other.stop()
        return rows
    rows = run(main())
    done = calls(rows)
    assert [r["reply_status"] for r in done] == ["LOCATION_FORWARD", "NO_EXCEPTION"]
    assert done[1]["server_port"] != done[0]["server_port"]     # via the routed port


def test_close_before_makes_the_client_retry():
    rules = [{"match": {"first": 1}, "action": {"type": "close", "when": "before"}}]
    seen, rows, _ = run(_call_under(rules, lambda ref: ref.echo_long(9)))
    assert seen == 9                # CloseConnection: not processed, so retried
    assert [r["outcome"] for r in calls(rows)] == ["connection_closed", "success"]


def test_reset_and_message_error_and_duplicate():
    reset = [{"match": {}, "action": {"type": "reset"}}]
    seen, _, _ = run(_call_under(reset, lambda ref: ref.echo_long(1)))
    assert isinstance(seen, COMM_FAILURE) and \
        seen.completed == CompletionStatus.COMPLETED_MAYBE
    # the reference ORB takes a MessageError as no answer: its call waits for its timeout
    error = [{"match": {}, "action": {"type": "message_error"}}]
    seen, _, took = run(_call_under(error, lambda ref: ref.echo_long(1), timeout=0.5))
    assert isinstance(seen, TIMEOUT) and took >= 0.5
    twice = [{"match": {}, "action": {"type": "duplicate"}}]

    async def two(ref):
        return [await ref.echo_long(1), await ref.echo_long(2)]
    seen, rows, _ = run(_call_under(twice, two))
    assert seen == [1, 2]           # the second copy answers no request: dropped
    assert all(r["faults"][0]["type"] == "duplicate" for r in calls(rows))


def test_drop_leaves_the_client_to_its_timeout():
    drop = [{"match": {"direction": "reply"}, "action": {"type": "drop"}}]
    seen, rows, took = run(_call_under(drop, lambda ref: ref.echo_long(1), timeout=0.5))
    assert isinstance(seen, TIMEOUT) and took >= 0.5
    assert calls(rows)[0]["reply_status"] == "NO_EXCEPTION"     # what the server said


@pytest.mark.parametrize("version", [(1, 2)], ids=["giop1.2"])
def test_fragment_and_trickle_deliver_the_same_answer(version):
    fragment = [{"match": {"direction": "reply"}, "action": {"type": "fragment", "size": 1}}]
    seen, rows, _ = run(_call_under(fragment, lambda ref: ref.echo_string("x" * 100),
                                    version=version))
    assert seen == "x" * 100
    trickle = [{"match": {}, "action": {"type": "trickle", "bytes": 7, "interval_ms": 1}},
               {"match": {"direction": "reply"},
                "action": {"type": "trickle", "bytes": 5, "interval_ms": 1}}]
    seen, rows, took = run(_call_under(trickle, lambda ref: ref.echo_string("y" * 40),
                                       version=version))
    assert seen == "y" * 40 and took >= 0.01
    assert [f["direction"] for f in calls(rows)[0]["faults"]] == ["request", "reply"]


def test_corrupt_a_field_by_its_layout_path():
    corrupt = [{"match": {"direction": "reply"},
                "action": {"type": "corrupt", "path": "reply.service_context.count",
                           "value": 0x7FFFFFFF}}]
    # the client answers the reply it cannot read with a MessageError (the proxy passes it
    # to the server) and its call waits for its timeout
    seen, rows, _ = run(_call_under(corrupt, lambda ref: ref.echo_long(1), timeout=0.5))
    assert isinstance(seen, TIMEOUT)
    # (then the CancelRequest the client sends at its timeout, when it reaches the proxy
    # before the test stops it)
    assert [(r["outcome"], r["message_type"]) for r in rows[2:]] in \
        ([], [("cancelled", "CancelRequest")])
    assert [r["outcome"] for r in rows[:2]] == ["success", "malformed"]
    assert rows[1]["message_type"] == "MessageError"
    missing = [{"match": {"direction": "reply"},
                "action": {"type": "corrupt", "path": "reply.no_such_field", "value": 1}}]
    seen, rows, _ = run(_call_under(missing, lambda ref: ref.echo_long(2)))
    assert seen == 2
    (fault,) = calls(rows)[0]["faults"]
    assert fault["applied"] is False and "no_such_field" in fault["why"]


def test_a_target_that_is_down_answers_transient_completed_no():
    async def main():
        server, key = await echo_server()
        upstream = address(server)
        await server.stop()
        async with proxied([upstream], connect_timeout=2) as (proxy, rows):
            async with ORB() as orb:
                ref = await orb.string_to_object(corbaloc(through(proxy), key), ECHO)
                with pytest.raises(TRANSIENT) as seen:
                    await ref.echo_long(1)
                assert seen.value.completed == CompletionStatus.COMPLETED_NO
        return rows
    rows = run(main())
    assert calls(rows)[0]["exception_id"] == "IDL:omg.org/CORBA/TRANSIENT:1.0"


def test_garbage_from_a_client_is_the_servers_to_answer_and_others_are_unharmed():
    async def main():
        server, key = await echo_server()
        async with proxied([address(server)]) as (proxy, rows):
            async with ORB() as orb:
                ref = await orb.string_to_object(corbaloc(through(proxy), key), ECHO)
                assert await ref.echo_long(1) == 1
                reader, writer = await asyncio.open_connection(*through(proxy))
                writer.write(b"GET / HTTP/1.0\r\n\r\n")
                answer = await asyncio.wait_for(reader.read(), 5)     # then closed
                # the server's MessageError (GIOP 1.2, its own), not one the proxy made
                assert answer[:4] == b"GIOP" and answer[7] == 6
                assert answer[4:6] == bytes([1, 2])
                writer.close()
                assert await ref.echo_long(2) == 2
        await server.stop()
    run(main())


def test_a_message_over_the_budget_goes_on_undecoded():
    async def main():
        server, key = await echo_server()
        limits = ProxyLimits(max_message_size=1024, max_connection_bytes=4096,
                             max_total_bytes=8192)
        async with proxied([address(server)], limits=limits) as (proxy, rows):
            async with ORB() as orb:
                ref = await orb.string_to_object(corbaloc(through(proxy), key), ECHO)
                assert await ref.echo_octets(b"s" * 500) == b"s" * 500
                # relayed byte for byte: the server answers it, the proxy holds nothing
                assert await ref.echo_octets(b"b" * 5000) == b"b" * 5000
                assert await ref.echo_long(3) == 3
            assert proxy.core.held_total == 0
        await server.stop()
        # the calls before the relay began are rows; those after are not decoded
        assert [r["operation"] for r in rows if r["message_type"] == "Request"] == \
            ["echo_octets"]
    run(main())


async def _garbage_server(answer: bytes):
    async def handle(reader, writer):
        await reader.read(65536)
        writer.write(answer)
        await writer.drain()
        await reader.read()
        writer.close()
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[:2]


def test_garbage_from_the_server_reaches_the_client_as_comm_failure():
    async def main():
        server, upstream = await _garbage_server(b"HTTP/1.0 400 Bad Request\r\n\r\n")
        async with proxied([upstream]) as (proxy, rows):
            async with ORB() as orb:
                ref = await orb.string_to_object(corbaloc(through(proxy), b"Echo"), ECHO)
                with pytest.raises(COMM_FAILURE) as seen:
                    await ref.echo_long(1)
                assert seen.value.completed == CompletionStatus.COMPLETED_MAYBE
        server.close()
    run(main())


def test_a_slow_reader_does_not_make_the_proxy_buffer_without_bound():
    """A client sends many requests for large replies and reads nothing: the proxy's
    queue toward it stays near its bound (it stops reading the server), and every reply
    arrives once the client reads."""
    from pycdr.giop.messages import Request, encode_message
    from pycdr.giop.messages.model import KeyAddr
    from pycdr.codec.cdr import CDRWriter

    async def main():
        server, key = await echo_server()
        bound = 256 * 1024
        async with proxied([address(server)], max_queued=bound) as (proxy, rows):
            reader, writer = await asyncio.open_connection(*through(proxy))
            payload = b"p" * (128 * 1024)
            n = 80
            for rid in range(1, n + 1):
                w = CDRWriter()
                w.write_ulong(len(payload))
                w.write_raw(payload)
                writer.write(encode_message(Request(request_id=rid, response_flags=3,
                                                    target=KeyAddr(key),
                                                    operation="echo_octets", body=w.getvalue())))
            await writer.drain()
            await asyncio.sleep(1.0)
            peak = proxy.queued_peak
            got = 0
            while got < n:
                header = await reader.readexactly(12)
                size = int.from_bytes(header[8:12], "big")
                await reader.readexactly(size)
                got += 1
            writer.close()
        await server.stop()
        return peak, bound, n * len(payload)
    peak, bound, total = run(main())
    # at most one read of the server's bytes past the bound (it is checked before each read)
    assert peak <= bound + READ_SIZE < total / 10


def test_callbacks_a_client_passes_come_back_through_the_proxy():
    """--callbacks: the reference a client passes is rewritten to a port the proxy opens
    for its server, so the server's call back on it comes through the proxy."""
    async def main():
        callback_server, callback_key = await echo_server()
        async with ORB() as server_orb:
            class Calling:
                async def echo_object(self, v):
                    ref = await server_orb.string_to_object(ior_to_string(v), ECHO)
                    assert await ref.echo_long(99) == 99
                    return v
            server = Server()
            key = server.activate(ClassServant(ECHO, Calling()), "Calling")
            await server.start()
            async with proxied([address(server)], callbacks=True) as (proxy, rows):
                async with ORB() as orb:
                    ref = await orb.string_to_object(corbaloc(through(proxy), key), ECHO)
                    returned = await ref.echo_object(callback_server.ior(callback_key))
                    assert address_of(returned) == through(proxy, 1)
                    assert proxy.listeners[1].upstream == address(callback_server)
            await server.stop()
        await callback_server.stop()
        return rows
    rows = run(main())
    by_operation = {r["operation"]: r for r in calls(rows)}
    assert by_operation["echo_long"]["outcome"] == "success"      # the call back, relayed
    assert by_operation["echo_long"]["server_port"] != by_operation["echo_object"]["server_port"]


def test_many_connections_at_once():
    from pycdr.codec.cdr import CDRWriter
    from pycdr.giop.messages import Request, decode_message, encode_message
    from pycdr.giop.messages.model import KeyAddr

    async def one(proxy, key, n):
        reader, writer = await asyncio.open_connection(*through(proxy))
        w = CDRWriter()
        w.write_long(n)
        writer.write(encode_message(Request(request_id=n, response_flags=3,
                                            target=KeyAddr(key), operation="echo_long",
                                            body=w.getvalue())))
        header = await reader.readexactly(12)
        body = await reader.readexactly(int.from_bytes(header[8:], "big"))
        writer.close()
        reply, _ = decode_message(header + body)
        return reply.request_id, reply.body_reader().read_long()

    async def main():
        server, key = await echo_server()
        async with proxied([address(server)]) as (proxy, rows):
            answers = await asyncio.gather(*(one(proxy, key, n) for n in range(1, 201)))
        await server.stop()
        return answers, rows
    answers, rows = run(main())
    assert answers == [(n, n) for n in range(1, 201)]
    assert len({r["stream"] for r in rows}) == 200
    assert all(r["outcome"] == "success" for r in rows)


def test_user_exception_rule_raises_the_idl_exception_with_its_members():
    rules = [{"match": {"operation": "echo_raise"},
              "action": {"type": "user_exception", "id": "IDL:EchoAll/Oops:1.0",
                         "members": {"code": 77, "why": "by rule"}}}]
    seen, rows, _ = run(_call_under(rules, lambda ref: ref.echo_raise(1)))
    assert type(seen).__name__ == "Oops" and (seen.code, seen.why) == (77, "by rule")
    (row,) = calls(rows)
    assert row["reply_status"] == "USER_EXCEPTION"
    assert row["exception_id"] == "IDL:EchoAll/Oops:1.0"
    assert row["result"] == {"code": 77, "why": "by rule"}


@pytest.mark.parametrize("action, message", [
    ({"type": "user_exception", "id": "IDL:Nowhere/Gone:1.0"}, "no operation of the --idl"),
    ({"type": "user_exception", "id": "IDL:EchoAll/Oops:1.0", "members": {"code": "x"}},
     "members"),
])
def test_user_exception_rules_are_checked_against_the_idl(action, message):
    from pycdr.proxy.rules import RuleError
    with pytest.raises(RuleError) as e:
        run(_call_under([{"action": action}], lambda ref: ref.echo_long(1)))
    assert message in str(e.value) and "rule 1" in str(e.value)


def test_a_hook_decides_by_the_decoded_arguments_and_results(tmp_path):
    from pycdr.proxy.hooks import load_hooks
    path = tmp_path / "hook.py"
    path.write_text(
        "seen = []\n"
        "def request(call):\n"
        "    seen.append(('request', call.operation, call.arguments))\n"
        "    if call.arguments == {'v': 13}:\n"
        "        return {'type': 'system_exception', 'id': 'NO_PERMISSION', 'minor': 13}\n"
        "def reply(call):\n"
        "    seen.append(('reply', call.reply_status, call.result))\n"
        "    if call.result == {'return': 7}:\n"
        "        return [{'type': 'delay', 'ms': 1}, {'type': 'duplicate'}]\n"
        "    if call.result == {'return': 8}:\n"
        "        raise RuntimeError('a bug in the hook')\n")
    hooks = load_hooks(str(path))

    async def three(ref):
        out = [await ref.echo_long(7), await ref.echo_long(8)]
        try:
            await ref.echo_long(13)
        except Exception as e:
            out.append(type(e).__name__)
        return out
    seen, rows, _ = run(_call_under(None, three, hooks=hooks))
    assert seen == [7, 8, "NO_PERMISSION"]
    assert [r["faults"] for r in calls(rows)] == [
        [{"rule": "hook", "direction": "reply", "type": "delay", "ms": 1},
         {"rule": "hook", "direction": "reply", "type": "duplicate"}],
        None,
        [{"rule": "hook", "direction": "request", "type": "system_exception",
          "id": "NO_PERMISSION", "minor": 13}]]
    assert hooks.request.__globals__["seen"][:2] == [
        ("request", "echo_long", {"v": 7}), ("reply", "NO_EXCEPTION", {"return": 7})]


@pytest.mark.parametrize("text, message", [
    ("x = 1\n", "defines neither request(call) nor reply(call)"),
    ("def request(call:\n", "failed to load: SyntaxError"),
])
def test_bad_hook_files_are_named(tmp_path, text, message):
    from pycdr.proxy.hooks import load_hooks
    from pycdr.proxy.rules import RuleError
    path = tmp_path / "hook.py"
    path.write_text(text)
    with pytest.raises(RuleError) as e:
        load_hooks(str(path))
    assert message in str(e.value) and str(path) in str(e.value)


def test_set_changes_an_argument_or_a_result_by_its_idl_path():
    rules = [{"match": {"operation": "echo_long"},
              "action": {"type": "set", "path": "v", "value": 1000}},
             {"match": {"operation": "echo_node", "direction": "reply"},
              "action": {"type": "set", "path": "return.children[1].value", "value": -5}},
             {"match": {"operation": "echo_longs", "direction": "reply"},
              "action": {"type": "set", "path": "return[9]", "value": 1}},
             {"match": {"operation": "echo_string"},
              "action": {"type": "set", "path": "v", "value": 12}}]
    node = MODULE["EchoAll::Node"]

    async def calls_made(ref):
        tree = node(value=1, children=[node(value=2, children=[]),
                                       node(value=3, children=[])])
        got = await ref.echo_node(tree)
        return [await ref.echo_long(1), [c.value for c in got.children],
                await ref.echo_longs([1, 2]), await ref.echo_string("kept")]
    seen, rows, _ = run(_call_under(rules, calls_made))
    assert seen == [1000, [2, -5], [1, 2], "kept"]
    faults = {r["operation"]: r["faults"][0] for r in calls(rows)}
    assert "applied" not in faults["echo_long"] and "applied" not in faults["echo_node"]
    assert faults["echo_longs"]["applied"] is False and "no element 9" in \
        faults["echo_longs"]["why"]
    assert faults["echo_string"]["applied"] is False
    assert calls(rows, "echo_long")[0]["arguments"] == {"v": 1}     # what the client sent


def test_close_after_the_request_reached_the_server_makes_it_run_twice():
    """close "after": the server got the call, the client got CloseConnection (which says
    it was not processed) and sent it again: the reference ORB's servant ran twice."""
    async def main():
        ran = []

        class Counting:
            def note(self, text):
                ran.append(text)

            def echo_long(self, v):
                ran.append(v)
                return v
        server = Server()
        key = server.activate(ClassServant(ECHO, Counting()), "Counting")
        await server.start()
        rules = [{"match": {"operation": "echo_long", "first": 1},
                  "action": {"type": "close", "when": "after"}}]
        async with proxied([address(server)], rules=rules) as (proxy, rows):
            async with ORB() as orb:
                ref = await orb.string_to_object(corbaloc(through(proxy), key), ECHO)
                answer = await ref.echo_long(4)
        await asyncio.sleep(0.1)
        await server.stop()
        return answer, ran, rows
    answer, ran, rows = run(main())
    assert answer == 4 and ran == [4, 4]
    assert [r["outcome"] for r in calls(rows)] == ["connection_closed", "success"]
