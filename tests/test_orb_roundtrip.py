"""The reference ORB against itself: pycdr client -> pycdr server for every type of
conformance/echo.idl over GIOP 1.0/1.1/1.2 in both byte orders, the system exceptions the
server must raise, oneway, deferred and dynamic invocation, attributes, forwarding and
cancellation."""

import asyncio
import gc
import logging

import pytest

from orb_echo_values import (ECHO_INTERFACE, ECHO_REPO_ID, WIDE_OPERATIONS, echo_cases,
                             expected_result, load_echo_module)
from pycdr.codec import tc
from pycdr.giop.messages import LocateStatus
from pycdr.giop.sysexc import (BAD_OPERATION, MARSHAL, NO_IMPLEMENT, OBJECT_NOT_EXIST,
                               TIMEOUT, TRANSIENT, UNKNOWN, CompletionStatus)
from pycdr.orb import ORB, ClassServant, EchoServant, Server, ServerLimits
from pycdr.codec.ior import ior_to_string
from pycdr.orb.client import ClientOptions
from pycdr.orb.interface_def import INTERFACE_DEF, INTERFACE_DEF_ID
from pycdr.codec.values import LongDouble, UserException

MODULE = load_echo_module()
ECHO = MODULE.interfaces[ECHO_INTERFACE]
VERSIONS = [(1, 0), (1, 1), (1, 2)]


def run(coroutine, timeout=30):
    return asyncio.run(asyncio.wait_for(coroutine, timeout))


class Implementation:
    """A class servant: echoes through EchoServant's rules, plus what an echo cannot do."""

    def __init__(self):
        self.counter = 0
        self.notes = []
        self.release = None

    def echo_raise(self, code):
        if code == 0:
            raise RuntimeError("a servant bug")
        raise MODULE["EchoAll::Oops"](code=code, why="asked to")

    def note(self, text):
        self.notes.append(text)

    async def echo_long(self, v):
        if v == 13:         # a slow call, for timeouts and out-of-order replies
            await asyncio.sleep(0.5)
        return v


async def start_server(**limits):
    server = Server(limits=ServerLimits(**limits))
    echo_key = server.activate(EchoServant(ECHO), "Echo")
    await server.start()
    return server, echo_key


async def start_class_server():
    """A server with an Implementation as its class servant: (server, its key)."""
    server = Server()
    key = server.activate(ClassServant(ECHO, Implementation()), "Cls")
    await server.start()
    return server, key


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"giop{v[0]}.{v[1]}")
@pytest.mark.parametrize("little", [False, True], ids=["big", "little"])
def test_every_type_round_trips(version, little):
    async def main():
        server, key = await start_server()
        async with ORB() as orb:
            ref = await orb.string_to_object(server.ior_string(key), ECHO, version=version,
                                             little=little)
            for op, args in echo_cases(MODULE, server.ior(key)):
                if version == (1, 0) and op in WIDE_OPERATIONS:
                    # GIOP 1.0 has no wchar: the client refuses to marshal it.
                    with pytest.raises(Exception):
                        await ref.invoke(op, *args)
                    continue
                assert await ref.invoke(op, *args) == expected_result(args), op
        await server.stop()
    run(main())


def test_wchar_in_giop_1_0_request_is_marshal():
    """A hand-made 1.0 request carrying wchar data: the server answers MARSHAL."""
    from pycdr.giop.messages import KeyAddr, Request, encode_message, decode_message

    async def main():
        server, key = await start_server()
        async with ORB() as orb:
            raw = await orb.raw_connection("127.0.0.1", server.port)
            body = b"\x02\x00\x41"    # what a 1.2 wchar looks like; 1.0 cannot carry one
            await raw.send(encode_message(Request(version=(1, 0), request_id=1,
                                                  target=KeyAddr(key), operation="echo_wchar",
                                                  body=body)))
            read = await raw.read_messages(1, timeout=5)
            reply, _ = decode_message(read.messages[0])
            assert reply.system_exception == MARSHAL(reply.system_exception.minor,
                                                     CompletionStatus.COMPLETED_NO)
        await server.stop()
    run(main())


def test_system_exceptions_and_object_operations():
    async def main():
        server, key = await start_server()
        impl = Implementation()
        class_key = server.activate(ClassServant(ECHO, impl))
        async with ORB() as orb:
            ref = await orb.string_to_object(server.ior_string(key), ECHO)
            missing = await orb.string_to_object(server.corbaloc(b"NoSuchKey"), ECHO)
            with pytest.raises(OBJECT_NOT_EXIST) as info:
                await missing.echo_long(1)
            assert info.value.completed == CompletionStatus.COMPLETED_NO
            assert await missing.non_existent() is True
            # corbaloc with no "/"<key_string>: the empty object key goes on the wire as such.
            keyless = await orb.string_to_object(f"corbaloc::127.0.0.1:{server.port}", ECHO)
            assert (await keyless.locate()).locate_status == LocateStatus.UNKNOWN_OBJECT
            with pytest.raises(OBJECT_NOT_EXIST):
                await keyless.echo_long(1)
            with pytest.raises(BAD_OPERATION):
                await ref.invoke_dynamic("no_such_operation", [], tc.void, [])
            # _interface: the InterfaceDef of the servant's interface (pycdr.orb.interface_def)
            interface_def = await ref.invoke_dynamic("_interface", [], tc.Object, [])
            assert interface_def.type_id == INTERFACE_DEF_ID
            described = await orb.string_to_object(ior_to_string(interface_def), INTERFACE_DEF)
            full = await described.describe_interface()
            assert (full.name, full.id) == ("Echo", ECHO_REPO_ID)
            assert {op.name for op in full.operations} == \
                {name for name, op in ECHO.all_operations().items() if op.attribute is None}
            assert [a.name for a in full.attributes] == [a.name for a in ECHO.attributes]
            echo_long = next(op for op in full.operations if op.name == "echo_long")
            assert echo_long.result.equal(tc.long) and echo_long.id == \
                ECHO_REPO_ID.replace(":1.0", "/echo_long:1.0")
            assert [(p.name, p.mode.name) for p in echo_long.parameters] == [("v", "PARAM_IN")]
            assert await ref.invoke_dynamic("_get_interface", [], tc.Object, []) == interface_def
            assert await ref.is_a(ECHO_REPO_ID) is True
            assert await ref.is_a("IDL:omg.org/CORBA/Object:1.0") is True
            assert await ref.is_a("IDL:Other:1.0") is False
            assert await ref.non_existent() is False
            component = await ref.invoke_dynamic("_get_component", [], tc.Object, [])
            assert component is None or component.is_nil      # not a component's facet
            # Arguments that do not decode: a long where a string is expected.
            with pytest.raises(MARSHAL) as info:
                await ref.invoke_dynamic("echo_string", [("v", "in", tc.long)], tc.string, [5])
            assert info.value.completed == CompletionStatus.COMPLETED_NO

            cls_ref = await orb.string_to_object(server.ior_string(class_key), ECHO)
            # Caught by base class: whichever load of the IDL registered last (the CLI tests
            # load it too) provides the class of decoded values.
            with pytest.raises(UserException) as info:
                await cls_ref.echo_raise(7)
            assert type(info.value)._tc.id() == "IDL:EchoAll/Oops:1.0"
            assert (info.value.code, info.value.why) == (7, "asked to")
            with pytest.raises(UNKNOWN) as info:
                await cls_ref.echo_raise(0)       # logged by the server
            assert info.value.completed == CompletionStatus.COMPLETED_MAYBE
            # A class servant lacking a method: NO_IMPLEMENT.
            with pytest.raises(NO_IMPLEMENT):
                await cls_ref.echo_short(1)
            # Attributes: to the implementation's attribute.
            await cls_ref._set_counter(41)
            assert await cls_ref._get_counter() == 41 and impl.counter == 41
            await cls_ref.note("hello")
            assert await cls_ref.echo_long(3) == 3          # after the oneway, in order
            assert impl.notes == ["hello"]
            # Locate.
            assert (await ref.locate()).locate_status == LocateStatus.OBJECT_HERE
            assert (await missing.locate()).locate_status == LocateStatus.UNKNOWN_OBJECT
        await server.stop()
    run(main())


def test_deferred_out_of_order_timeout_and_cancel():
    async def main():
        server, key = await start_class_server()
        async with ORB() as orb:
            ref = await orb.string_to_object(server.corbaloc(key), ECHO)
            slow = await ref.send_deferred("echo_long", 13)
            fast = await ref.send_deferred("echo_long", 1)
            assert await fast.result() == 1 and not slow.poll()   # replies out of order
            assert await slow.result() == 13
            hurried = ref.with_options(timeout=0.1)
            with pytest.raises(TIMEOUT) as info:
                await hurried.echo_long(13)        # the client sends CancelRequest
            assert info.value.completed == CompletionStatus.COMPLETED_MAYBE
            assert await ref.echo_long(2) == 2     # the connection is still good
        await server.stop()
    run(main())


def test_deadlines_of_one_connection_share_its_timer():
    """Each call's deadline holds on a connection whose one timer serves them all:
    a short deadline after a long one fires first, answered calls leave no trace."""
    async def main():
        server, key = await start_class_server()
        async with ORB() as orb:
            patient = await orb.string_to_object(server.corbaloc(key), ECHO)
            patient = patient.with_options(timeout=5.0)
            slow = await patient.send_deferred("echo_long", 13)     # 0.5 s, within 5 s
            hurried = patient.with_options(timeout=0.1)
            with pytest.raises(TIMEOUT):       # before its reply (0.5 s) and slow's deadline
                await hurried.echo_long(13)
            assert await slow.result() == 13
            for i in range(200):
                assert await patient.echo_long(i) == i
            (connection,) = orb._connections.values()
            assert len(connection._deadlines) <= 2      # answered calls are forgotten
            late = patient.with_options(timeout=0.05)
            deferred = await late.send_deferred("echo_long", 13)
            await asyncio.sleep(0.2)
            assert deferred.poll()                      # the deadline passed: done
            with pytest.raises(TIMEOUT):
                await deferred.result()
        await server.stop()
    run(main())


def test_location_forward_and_hop_limit():
    async def main():
        target, key = await start_server()
        front = Server()
        await front.start()
        front.adapter.forward(b"Moved", target.ior(key))
        front.adapter.forward(b"Gone", target.ior(key), permanent=True)
        front.adapter.forward(b"Loop", front.ior(b"Loop"))
        async with ORB() as orb:
            moved = await orb.string_to_object(front.corbaloc(b"Moved"), ECHO)
            before = moved.ior
            assert await moved.echo_long(5) == 5
            assert moved.ior == before                 # LOCATION_FORWARD is not permanent
            gone = await orb.string_to_object(front.corbaloc(b"Gone"), ECHO)
            assert await gone.echo_long(6) == 6
            assert gone.ior == target.ior(key)                          # permanent
            old = await orb.string_to_object(front.corbaloc(b"Gone", version=(1, 0)), ECHO)
            assert await old.echo_long(7) == 7        # 1.0 gets LOCATION_FORWARD
            loop = await orb.string_to_object(front.corbaloc(b"Loop"), ECHO)
            with pytest.raises(TRANSIENT):
                await loop.echo_long(1)
            located = await (await orb.string_to_object(front.corbaloc(b"Moved"))).locate()
            assert located.locate_status == LocateStatus.OBJECT_FORWARD
            assert located.forward == target.ior(key)
            assert (await gone.with_options().locate()).locate_status == LocateStatus.OBJECT_HERE
        await front.stop()
        await target.stop()
    run(main())


@pytest.mark.parametrize("version", [(1, 1), (1, 2)], ids=["giop1.1", "giop1.2"])
def test_fragments_in_and_out(version):
    """Requests fragmented by the client and replies fragmented by the server, both ways at
    GIOP 1.1 (fragment data realigned from each fragment's start) and 1.2."""
    async def main():
        server, key = await start_server(fragment_size=64)
        options = ClientOptions(fragment_size=64)
        async with ORB(options) as orb:
            ref = await orb.string_to_object(server.ior_string(key), ECHO, version=version)
            payload = bytes(range(256)) * 20
            assert await ref.echo_octets(payload) == payload
            # Structs of chars, long longs and doubles, cut between (never inside) primitives.
            records = next(args[0] for op, args in echo_cases(MODULE) if op == "echo_records")
            records = records * 20
            assert await ref.echo_records(records) == records
            raw = await orb.raw_connection("127.0.0.1", server.port)
            from pycdr.giop.messages import KeyAddr, Request, encode_message
            from pycdr.codec.marshal import write_value
            request = encode_message(
                Request(version=version, request_id=9, target=KeyAddr(key),
                        operation="echo_octets"),
                write_body=lambda w: write_value(w, MODULE.types["EchoAll::Octets"], payload))
            await raw.send(request)
            messages = []
            while not messages or messages[-1][6] & 2:      # until the last fragment
                read = await raw.read_messages(1, timeout=5)
                assert read.messages, read
                messages += read.messages
            assert len(messages) > 1 and all(len(m) <= 64 for m in messages)
            assert messages[0][7] == 1 and all(m[7] == 7 for m in messages[1:])
            assert all(m[5] == version[1] for m in messages)
        await server.stop()
    run(main())


def test_code_set_negotiation_utf8_char():
    """A client choosing UTF-8 for char data in its CodeSets context gets UTF-8 back."""
    from pycdr import codesets
    from pycdr.addressing.iiop import CodeSetsComponent, IIOPProfile, make_ior

    async def main():
        server, key = await start_server()
        utf8_only = make_ior(ECHO_REPO_ID, [IIOPProfile(
            (1, 2), "127.0.0.1", server.port, key,
            (CodeSetsComponent(codesets.UTF_8, (), codesets.UTF_16, ()),))])
        async with ORB() as orb:
            ref = orb.object(utf8_only, ECHO)
            assert await ref.echo_string("\u20ac uro") == "\u20ac uro"   # not in Latin-1
            conn = next(iter(orb._connections.values()))
            assert conn.code_sets == (codesets.UTF_8, codesets.UTF_16)
        await server.stop()
    run(main())


def test_servant_error_is_logged(caplog):
    async def main():
        server = Server()
        key = server.activate(ClassServant(ECHO, Implementation()))
        await server.start()
        async with ORB() as orb:
            ref = await orb.string_to_object(server.ior_string(key), ECHO)
            with pytest.raises(UNKNOWN):
                await ref.echo_raise(0)
        await server.stop()
    with caplog.at_level(logging.ERROR, logger="pycdr.orb.server"):
        run(main())
    assert "a servant bug" in caplog.text


def test_long_double_and_dii():
    """long double (not in conformance/echo.idl: omniORBpy has no mapping) through a run-time
    interface, invoked with the DII."""
    from pycdr import idl
    module = idl.load_string("interface LD { long double echo_ld(in long double v); };",
                             register=False)

    async def main():
        server = Server()
        key = server.activate(EchoServant(module.interfaces["LD"]))
        await server.start()
        async with ORB() as orb:
            ref = await orb.string_to_object(server.ior_string(key))
            for version in VERSIONS:
                value = LongDouble.from_float(-1.5)
                got = await ref.with_options(version=version).invoke_dynamic(
                    "echo_ld", [("v", "in", tc.longdouble)], tc.longdouble, [value])
                assert got == value
        await server.stop()
    run(main())


class GcWatcher:
    """A class servant noting whether the cyclic GC was enabled in a synchronous method
    (echo_short) and in a coroutine one (echo_long)."""

    def __init__(self):
        self.seen = []

    def echo_short(self, v):
        self.seen.append(("sync", gc.isenabled()))
        return v

    async def echo_long(self, v):
        self.seen.append(("async", gc.isenabled()))
        return v


def test_cyclic_gc_is_paused_only_while_a_synchronous_request_runs():
    # The server pauses the cyclic GC while a servant method that cannot yield runs
    # (its arguments are made and dropped within the request), and puts it back as
    # it was; an async method runs with the GC as it is.
    async def main():
        server = Server()
        watcher = GcWatcher()
        key = server.activate(ClassServant(ECHO, watcher), "Gc")
        await server.start()
        was = gc.isenabled()
        try:
            async with ORB() as orb:
                ref = await orb.string_to_object(server.corbaloc(key), ECHO)
                for enabled in (True, False):
                    (gc.enable if enabled else gc.disable)()
                    watcher.seen.clear()
                    assert await ref.echo_short(3) == 3
                    assert gc.isenabled() == enabled
                    assert await ref.echo_long(4) == 4
                    assert gc.isenabled() == enabled
                    assert watcher.seen == [("sync", False), ("async", enabled)]
        finally:
            (gc.enable if was else gc.disable)()
            await server.stop()
    run(main())


def test_a_servant_subclass_that_redefines_invoke_is_served_through_it():
    # The server runs a servant that does not await through Servant.call, without
    # invoke's coroutine; a subclass's own invoke must still be what runs.
    class Counting(EchoServant):
        invoked = 0

        async def invoke(self, op, args):
            Counting.invoked += 1
            return await super().invoke(op, args)

    async def main():
        server = Server(host="127.0.0.1", port=0)
        key = server.activate(Counting(ECHO), "Counting")
        await server.start()
        async with ORB() as orb:
            ref = await orb.string_to_object(server.ior_string(key), ECHO)
            assert await ref.echo_long(5) == 5
        await server.stop()
    run(main())
    assert Counting.invoked == 1
