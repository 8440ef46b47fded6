"""Call-outs and Java deserialisation in the JDK-lineage ORBs (tests/peers/jdk_orbs.py), each
run as a `--spawn` target of the fuzzer, serving an interface with a string and an `any`:

- the OpenJDK ORB and the GlassFish ORB, given an RMI value of a class they lack inside an
  `any`, ask the CodeBase object the request's SendingContextRunTime context names for its
  codebase (`implementation`): a connection to the fuzzer's listener (--callback), which
  names the case that planted it; the value without the context makes none (its codebase
  URL is not fetched);
- the OpenJDK ORB with its Java-serialisation encoding on reads a Request whose GIOP version
  is 13.1 with an ObjectInputStream (its log: java.io.StreamCorruptedException under
  ObjectInputStream.readStreamHeader, an exception finding); with the encoding off, the same
  bytes are only a bad version;
- JacORB 3.4 and 3.9 (tests/peers/jacorb.py) allocate the message size a GIOP header claims at
  once: with a 256 MB heap, a 32-byte Request whose size reads as 335 MB (its byte order flag
  flipped) logs an OutOfMemoryError at BufferManager.getBuffer (an exception finding), and the
  ORB answers on;
- JacORB 3.4 and 3.9 let a GIOP 1.2 Request whose response_flags are none of 0, 1 and 3 kill
  the POA thread that dispatches it (an uncaught BAD_PARAM from ServerRequest.syncScope: an
  exception finding naming the thread); the thread is not given back to the POA's pool, and
  once as many such requests came as the pool holds (20 by default) the ORB dispatches no
  request again (docs/FINDINGS.md)."""

import shlex

import pytest

from peers.jacorb_interface import write_description
from peers.jacorb import JACORB, JACORB_3_4
from peers.jdk_orbs import GLASSFISH_ORB, OPENJDK_ORB
from peers.process import LOOPBACK, PeerNotInstalled, free_port
from pycdr.codec.cdr import CDRWriter
from pycdr.fuzz.callback import tokens_in
from pycdr.fuzz.engine import Campaign
from pycdr.fuzz.mutators import fix_size
from pycdr.fuzz.seeds import Seed
from pycdr.giop.messages import KeyAddr, Request, encode_message
from pycdr.idl import load_string

IDL = """module CallOut { interface Echo {
    string echo_string(in string value);
    any echo_any(in any value);
}; };"""
JAVA_SERIALIZATION = {"com.sun.CORBA.encoding.ORBEnableJavaSerialization": "true"}


def _spawn_command(orb, tmp_path, properties=None, jvm_options=()) -> str:
    description = tmp_path / "interface.txt"
    write_description(load_string(IDL, register=False).interfaces["CallOut::Echo"],
                      str(description))
    try:
        argv = orb.java_command("pycdrpeers.EchoServer", list(jvm_options))
    except PeerNotInstalled as e:
        pytest.skip(str(e))
    props = {**orb.properties, **orb.listen_properties(LOOPBACK, free_port()),
             **(properties or {})}
    return shlex.join(argv + [str(description)] + [f"{k}={v}" for k, v in props.items()])


def _campaign(orb, tmp_path, properties=None, jvm_options=()) -> Campaign:
    # (The seed is only there for the campaign to start: the cases are made below.)
    return Campaign(None, spawn=_spawn_command(orb, tmp_path, properties, jvm_options),
                    timeout=2.0,
                    probe_timeout=2.0, seeds=[Seed("none", [b""])], standby=False,
                    coverage="none", callback=True)


def _echo_any(campaign, operation="echo_any", body=None) -> bytearray:
    """A GIOP 1.2 Request of `operation` on the target, its argument the long 5 in an any."""
    key = KeyAddr(campaign.target.object_key)
    if body is None:
        w = CDRWriter(offset=0)
        w.write_ulong(3)           # tk_long
        w.write_long(5)
        body = w.getvalue()
    return bytearray(encode_message(Request(version=(1, 2), request_id=5, target=key,
                                            operation=operation, body=body)))


def _valued(campaign, context: bool) -> list:
    """echo_any with a value of a class no one has in its any (the listener as the value's
    codebase URL), with or without a SendingContextRunTime context naming the listener as
    the CodeBase: the callback mutation's valuetype planting, made whole."""
    planter = campaign.ctx.callback
    request = _echo_any(campaign)
    at = len(request) - 8                 # the any: its TypeCode kind, then the long
    msgs = [request[:at] + planter._value_any(at, little=False)]
    fix_size(msgs[0])
    if context:
        assert planter._with_context(msgs, 0)
    return [bytes(m) for m in msgs]


@pytest.mark.parametrize("orb", [OPENJDK_ORB, GLASSFISH_ORB], ids=lambda o: o.name)
def test_rmi_value_makes_the_orb_call_the_codebase(orb, tmp_path):
    campaign = _campaign(orb, tmp_path)
    try:
        # The value alone: its codebase URL is not fetched (java.rmi.server.useCodebaseOnly).
        campaign.ctx.callback.token = "pycdrcb00000011"
        assert not campaign.reproduces("callback", _valued(campaign, context=False),
                                       fresh=False)
        campaign.ctx.callback.token = "pycdrcb0000002a"
        messages = _valued(campaign, context=True)
        assert tokens_in(b"".join(messages)) == {0x2a}
        assert campaign.reproduces("callback", messages, fresh=False)
        call = campaign.last_verdict.details["calls"][0]
        assert call["protocol"] == "giop" and call["planted_by"] == [0x2a]
        assert b"implementation" in call["first_bytes"].encode("latin-1")
        assert campaign.listener.calls == campaign.listener.since(0)
        assert len(campaign.listener.calls) == 1
    finally:
        campaign.close()


@pytest.mark.parametrize("encoding_on", [True, False], ids=["serialization-on", "off"])
def test_java_serialization_encoding_reaches_object_input_stream(encoding_on, tmp_path):
    campaign = _campaign(OPENJDK_ORB, tmp_path, JAVA_SERIALIZATION if encoding_on else None)
    try:
        request = _echo_any(campaign, "echo_string", b"\0\0\0\x03hi\0")
        request[4:6] = b"\x0d\x01"          # the version mutation's (13, 1)
        found = campaign.reproduces("exception", [bytes(request)], fresh=False)
        assert found == encoding_on
        if encoding_on:
            details = campaign.last_verdict.details
            assert details["exception"] == "java.io.StreamCorruptedException"
            assert "java.io.ObjectInputStream.readStreamHeader" in details["frames"][0]
    finally:
        campaign.close()


@pytest.mark.parametrize("orb", [JACORB_3_4, JACORB], ids=lambda o: o.name)
def test_jacorb_allocates_the_size_a_header_claims(orb, tmp_path):
    campaign = _campaign(orb, tmp_path, jvm_options=["-Xmx256m"])
    try:
        request = _echo_any(campaign, "echo_string", b"\0\0\0\x03hi\0")
        request[8:12] = (20).to_bytes(4, "big")
        request[6] |= 1                     # read little-endian: 0x14000000 bytes
        assert campaign.reproduces("exception", [bytes(request[:32])], fresh=False)
        details = campaign.last_verdict.details
        assert details["exception"] == "java.lang.OutOfMemoryError"
        assert details["frames"][0] == "org.jacorb.orb.BufferManager.getBuffer"
        assert campaign._probe() == "alive"
    finally:
        campaign.close()


@pytest.mark.parametrize("orb", [JACORB_3_4, JACORB], ids=lambda o: o.name)
def test_jacorb_invalid_response_flags_kill_the_dispatching_thread(orb, tmp_path):
    campaign = _campaign(orb, tmp_path, properties={"jacorb.poa.thread_pool_max": "3",
                                                    "jacorb.poa.thread_pool_min": "1"})
    try:
        request = _echo_any(campaign, "echo_string", b"\0\0\0\x03hi\0")
        assert campaign._probe() == "alive"
        request[16] = 0x02                  # response_flags: neither 0, 1 nor 3
        assert campaign.reproduces("exception", [bytes(request)], fresh=False)
        details = campaign.last_verdict.details
        assert details["exception"] == "org.omg.CORBA.BAD_PARAM" and details["uncaught"]
        assert details["thread"].startswith("RequestProcessor-")
        assert details["frames"][0] == "org.jacorb.orb.dsi.ServerRequest.syncScope"
        # Each such request takes a thread of the POA's pool for good: with a pool of 3,
        # three of them leave a well-formed call unanswered.
        request[16] = 0x80
        for _ in range(2):
            campaign.check([bytes(request)])
        assert campaign._probe() not in ("alive", "slow")
    finally:
        campaign.close()
