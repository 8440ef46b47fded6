"""pycdr.explain on reproductions of interop failures reported against the ORBs: the request
built with pycdr's encoders as the failing ORB sent it, the answer as the refusing ORB gave it;
each test asserts the field path and offset explain names (or that the request is clean).

The offsets are worked out by hand from the GIOP layouts (CORBA 3.x Part 2, 9.4): a GIOP 1.2
Request header for object key b"key" is request_id 12, response_flags 16, reserved 17,
TargetAddress 20 (discriminator, 2 pad), key length 24, key 28-30, 1 pad, operation length 32,
name from 36; then the service contexts and the body, 8-aligned."""

from decimal import Decimal

import pytest

from pycdr import codesets as cs
from pycdr.addressing.iiop import CodeSetsComponent, IIOPProfile, make_ior
from pycdr.codec import marshal, tc
from pycdr.conformance.echo import ECHO_INTERFACE, load_echo_module
from pycdr.explain import Exchanges, ExplainError, explain
from pycdr.giop.header import MsgType, encode_header
from pycdr.giop.layout import message_fields
from pycdr.giop.messages import KeyAddr, Reply, ReplyStatus, Request, encode_message
from pycdr.giop.service_contexts import CodeSetsContext
from pycdr.giop.sysexc import (BAD_PARAM, CODESET_INCOMPATIBLE, DATA_CONVERSION, MARSHAL,
                               OMG_VMCID, OMNIORB_VMCID, SUN_VMCID, CompletionStatus)
from pycdr.idl import load_string

ECHO = load_echo_module()
NO = CompletionStatus.COMPLETED_NO


def request(operation, t, value, *, version=(1, 2), contexts=(), tcs_c=None, key=b"key",
            request_id=5):
    msg = Request(version=version, request_id=request_id, response_flags=3,
                  target=KeyAddr(key), operation=operation, service_contexts=list(contexts))

    def body(w):
        if tcs_c is not None:
            w.tcs_c = tcs_c
        marshal.write_value(w, t, value)
    return encode_message(msg, write_body=body)


def echo_type(operation):
    return ECHO.interfaces[ECHO_INTERFACE].all_operations()[operation].in_params[0].type


def where(explanation):
    return [(f.message, f.offset, f.path, f.code) for f in explanation.violations]


# --- a negative fixed, which the JDK-lineage ORBs refuse -----------------------------------
def test_negative_fixed_is_clean_and_the_jdk_orbs_refusal_is_theirs():
    # echo_fixed(in Money v), Money = fixed<10,3>: -12.5 is the digits 00000125 00 (a
    # leading zero pads the ten digits to an odd count) and the sign nibble 0xd: six octets,
    # the body's first, at 56-61.
    data = request("echo_fixed", echo_type("echo_fixed"), Decimal("-12.5"))
    assert data[56:62] == bytes.fromhex("00000012500d")
    answer = MARSHAL(SUN_VMCID | 258, NO)         # what the OpenJDK ORB answers
    ex = explain([data], answer, modules=[ECHO])
    assert ex.findings == [] and ex.clean
    assert ex.verdict() == (
        "the request is clean: the fault is the peer's (the peer answered CORBA::MARSHAL minor "
        "0x53550102 (Sun 258: badArgumentsNvlist: the arguments did not read into the DSI "
        "argument list), COMPLETED_NO)")


@pytest.mark.parametrize("last, code, offset", [
    (0x0A, "bad-fixed-sign", 61),           # the sign nibble is neither 0xc nor 0xd
    (None, "bad-fixed", 59),                # a digit nibble of 0xb
])
def test_bad_fixed_names_the_nibble(last, code, offset):
    data = bytearray(request("echo_fixed", echo_type("echo_fixed"), Decimal("-12.5")))
    if last is not None:
        data[61] = (data[61] & 0xF0) | last
    else:
        data[59] = 0xB5
    ex = explain([bytes(data)], MARSHAL(SUN_VMCID | 233, NO), modules=[ECHO])
    assert where(ex) == [(0, offset, "request.body.v", code)]
    assert ex.violations[0].rule == "CORBA 3.x Part 2, 9.3.2.8 Fixed-Point Decimal Type"
    assert "badDigitInFixed" in ex.verdict()


# --- a string without its NUL (omniORB: MARSHAL StringNotEndWithNull) ----------------------
def test_string_without_nul_names_the_last_octet():
    data = bytearray(request("echo_string", echo_type("echo_string"), "hello"))
    # body at 56 (operation "echo_string" 36-47, contexts count 48-51, pad to 56):
    # length 56-59, "hello\0" 60-65.
    assert data[56:66] == b"\0\0\0\x06hello\0"
    data[65] = ord("!")
    ex = explain([bytes(data)], MARSHAL(OMNIORB_VMCID | 22, NO), modules=[ECHO])
    assert where(ex) == [(0, 65, "request.body.v.nul", "string-no-nul")]
    assert "omniORB 22: StringNotEndWithNull" in ex.verdict()


def test_string_length_past_the_end_of_the_body():
    data = bytearray(request("echo_string", echo_type("echo_string"), "hello"))
    data[56:60] = (100).to_bytes(4, "big")
    ex = explain([bytes(data)], MARSHAL(OMNIORB_VMCID | 10, NO), modules=[ECHO])
    # The length claims 100 octets where 6 remain: the length field is named.
    assert where(ex) == [(0, 56, "request.body.v.length", "body-truncated")]
    assert "PassEndOfMessage" in ex.verdict()


def test_bad_boolean_and_enum_and_trailing_bytes():
    idl = load_string("""
        module X { enum Colour { red, green };
                   interface T { void op(in boolean b, in Colour c); }; };
    """, register=False)
    msg = Request(version=(1, 2), request_id=1, response_flags=3, target=KeyAddr(b"key"),
                  operation="op")

    def body(w):
        marshal.write_value(w, tc.boolean, True)
        w.align(4)
        w.write_ulong(1)
    data = bytearray(encode_message(msg, write_body=body))
    # operation "op" 36-38, contexts 40-43, body at 48: boolean 48, pad 49-51, enum 52-55.
    assert data[48] == 1 and data[52:56] == b"\0\0\0\x01"
    data[48] = 2
    data[52:56] = (7).to_bytes(4, "big")
    data += b"\0\0\0\0"
    data[8:12] = (len(data) - 12).to_bytes(4, "big")
    ex = explain([bytes(data)], BAD_PARAM(OMG_VMCID | 25, NO), modules=[idl])
    assert where(ex) == [(0, 48, "request.body.b", "bad-boolean"),
                         (0, 52, "request.body.c", "enum-range"),
                         (0, 56, "request.body", "body-trailing-bytes")]
    assert "EnumValueOutOfRange" in ex.verdict()


def test_union_discriminator_that_is_no_enumerator():
    idl = load_string("""
        module U { enum K { a, b }; union V switch (K) { case a: long x; case b: string s; };
                   interface T { void op(in V v); }; };
    """, register=False)
    msg = Request(version=(1, 2), request_id=1, response_flags=3, target=KeyAddr(b"key"),
                  operation="op")
    data = encode_message(msg, write_body=lambda w: w.write_ulong(5))
    ex = explain([data], MARSHAL(SUN_VMCID | 238, NO), modules=[idl])
    # body at 48: the discriminator 48-51 is no enumerator of K
    assert where(ex) == [(0, 48, "request.body.v.discriminator", "enum-range"),
                         (0, 48, "request.body.v.discriminator", "union-discriminator")]
    assert "unionDiscriminatorError" in ex.verdict()


# --- GIOP 1.1 fragments ------------------------------------------------------------------
def fragments_11(data, cut, *, flag=True):
    """``data`` (a GIOP 1.1 message) cut at ``cut`` as an ORB that fragments at a byte count
    does: the first part with the more-fragments flag (``flag``), the rest in a Fragment."""
    first = encode_header((1, 1), False, MsgType.Request, cut - 12,
                          extra_flags=2 if flag else 0) + data[12:cut]
    return [first, encode_header((1, 1), False, MsgType.Fragment, len(data) - cut) + data[cut:]]


def test_giop_11_fragment_that_splits_a_primitive():
    # omniORB closes the connection on it.  echo_long(in long v) in GIOP 1.1: contexts
    # count 12, request_id 16, response_expected 20, reserved 21-23, key length 24, key
    # 28-30, pad 31, operation length 32, "echo_long\0" 36-45, pad 46-47, principal 48-51,
    # the long at 52-55; cut at 54, inside it.
    data = request("echo_long", echo_type("echo_long"), 0x01020304, version=(1, 1))
    assert data[52:56] == bytes.fromhex("01020304")
    ex = explain(fragments_11(data, 54), None, modules=[ECHO])
    assert where(ex) == [(0, 52, "request.body.v", "fragment-split-primitive")]
    assert ex.violations[0].rule == "CORBA 3.x Part 2, 9.4.9 Fragment Message"


def test_giop_11_fragment_after_a_request_without_the_flag():
    # omniORB reads the first message as the whole request (MARSHAL PassEndOfMessage): the
    # sender left the more-fragments flag clear.  echo_string "hello world": the string's
    # length at 52-55, its text from 56; cut at 60.
    data = request("echo_string", echo_type("echo_string"), "hello world", version=(1, 1))
    parts = fragments_11(data, 60, flag=False)
    ex = explain(parts, MARSHAL(OMNIORB_VMCID | 10, NO), modules=[ECHO])
    assert where(ex) == [(1, 7, "header.message_type", "fragment-misuse"),
                         (0, 52, "request.body.v.length", "body-truncated")]
    assert "msg[0] has no more-fragments flag" in ex.violations[0].text
    assert ex.lines()[0].startswith("msg[1]@7 header.message_type: ")


def test_giop_12_fragment_size():
    data = request("echo_string", echo_type("echo_string"), "x" * 40)
    first = encode_header((1, 2), False, MsgType.Request, 62 - 12, extra_flags=2) + data[12:62]
    rest = encode_header((1, 2), False, MsgType.Fragment, 4 + len(data) - 62) + \
        (5).to_bytes(4, "big") + data[62:]
    ex = explain([first, rest], None, modules=[ECHO])
    # The first message is 62 octets: its message_size (at 8) says so.
    assert where(ex) == [(0, 8, "header.message_size", "fragment-not-multiple-of-8")]


# --- code sets ---------------------------------------------------------------------------
OMNI_CODE_SETS = CodeSetsComponent(cs.ISO_8859_1, (cs.UTF_8,), cs.UTF_16, (cs.UCS_2_L1,))


def ior_with(code_sets, version=(1, 2)):
    components = (code_sets,) if code_sets is not None else ()
    return make_ior("IDL:PycdrConformance/Echo:1.0",
                    [IIOPProfile(version, "127.0.0.1", 2809, b"key", components)])


def test_code_sets_the_server_did_not_offer():
    context = CodeSetsContext(char_data=cs.ISO_8859_15, wchar_data=cs.UCS_4)
    data = request("echo_string", echo_type("echo_string"), "hello", contexts=[context])
    # contexts count 48, id 52, length 56, encapsulation 60 (byte order, 3 pad), char_data
    # 64, wchar_data 68.
    assert data[64:72] == bytes.fromhex("0001000f00010106")
    ex = explain([data], CODESET_INCOMPATIBLE(OMG_VMCID, NO), modules=[ECHO],
                 ior=ior_with(OMNI_CODE_SETS))
    assert where(ex) == [(0, 64, "request.service_context[0].char_data", "code-set-not-offered"),
                         (0, 68, "request.service_context[0].wchar_data",
                          "code-set-not-offered")]
    assert ex.violations[0].rule == "CORBA 3.x Part 2, 7.10.2.6 Code Set Negotiation"
    # Without the IOR nothing says what the server offered: the choice stands.
    assert explain([data], None, modules=[ECHO]).clean


def test_utf8_fallback_the_server_did_not_offer_is_a_note():
    context = CodeSetsContext(char_data=cs.UTF_8, wchar_data=cs.UTF_16)
    data = request("echo_string", echo_type("echo_string"), "hello", contexts=[context])
    ex = explain([data], None, modules=[ECHO],
                 ior=ior_with(CodeSetsComponent(cs.ISO_8859_1, (), cs.UTF_16, ())))
    assert ex.clean and [(f.offset, f.path, f.severity) for f in ex.findings] == \
        [(64, "request.service_context[0].char_data", "note")]


def test_utf8_chars_under_a_giop_10_profile():
    # A client whose native char code set is UTF-8 sends "café" to a GIOP 1.0 server: GIOP
    # 1.0 has no negotiation, the server reads ISO-8859-1 ("cafÃ©").  GIOP 1.0 echo_string:
    # contexts 12, request_id 16, response_expected 20, pad 21-23, key length 24, key 28-30,
    # pad 31, operation 32, "echo_string\0" 36-47, principal 48-51, string length 52, text 56.
    data = request("echo_string", echo_type("echo_string"), "café", version=(1, 0),
                   tcs_c=cs.UTF_8)
    assert data[56:62] == "café".encode() + b"\0"
    ex = explain([data], DATA_CONVERSION(OMG_VMCID | 1, NO), modules=[ECHO],
                 ior=ior_with(None, (1, 0)))
    assert where(ex) == [(0, 59, "request.body.v", "utf8-as-latin1")]
    assert "'\\xe9'" in ex.violations[0].text and "CannotMapChar" in ex.verdict()
    # The same octets in a GIOP 1.2 request whose CodeSets context chose UTF-8: clean.
    context = CodeSetsContext(char_data=cs.UTF_8, wchar_data=cs.UTF_16)
    ok = request("echo_string", echo_type("echo_string"), "café", contexts=[context],
                 tcs_c=cs.UTF_8)
    assert explain([ok], None, modules=[ECHO], ior=ior_with(OMNI_CODE_SETS)).findings == []


def test_giop_12_and_utf8_to_a_giop_10_profile():
    # The same client speaking GIOP 1.2 to the GIOP 1.0 server, its CodeSets context naming
    # UTF-8 (contexts count 48, char_data 64): both the version and the code set are beyond
    # what the reference offers.
    context = CodeSetsContext(char_data=cs.UTF_8, wchar_data=cs.UTF_16)
    data = request("echo_string", echo_type("echo_string"), "café", contexts=[context],
                   tcs_c=cs.UTF_8)
    ex = explain([data], None, modules=[ECHO], ior=ior_with(None, (1, 0)))
    assert where(ex) == [(0, 4, "header.version", "giop-above-profile"),
                         (0, 64, "request.service_context[0].char_data",
                          "code-set-not-offered")]
    assert ex.violations[0].rule == \
        "CORBA 3.x Part 2, 9.7.2 IIOP IOR Profiles (the highest GIOP version the server speaks)"


def test_utf8_octets_with_code_sets_unknown_are_not_judged():
    # A GIOP 1.2 request without a CodeSets context (the connection's first request had it):
    # without that request or the IOR the char code set is not known.
    data = request("echo_string", echo_type("echo_string"), "café", tcs_c=cs.UTF_8)
    assert explain([data], None, modules=[ECHO]).findings == []
    # With the earlier choice given (as a capture's connection has it), it is judged.
    ex = explain([data], None, modules=[ECHO], code_sets=(cs.ISO_8859_1, cs.UTF_16))
    assert where(ex) == [(0, 63, "request.body.v", "utf8-as-latin1")]


def test_an_operation_the_idl_does_not_have_is_a_note():
    data = request("nosuch", tc.long, 1)
    ex = explain([data], None, modules=[ECHO])
    assert ex.clean and [(f.offset, f.path, f.code, f.severity) for f in ex.findings] == \
        [(36, "request.operation.name", "operation-not-in-idl", "note")]


def test_wchar_without_a_negotiated_wchar_code_set():
    # omniORB's GIOP 1.1 clients send TCS-W 0 when the server offers no wchar code set;
    # wchar data then has none (OMG BAD_PARAM minor 23).  echo_wstring: "echo_wstring\0"
    # 36-48, contexts count 52, the CodeSets context's encapsulation 64-75, the body at 80
    # (at 56 without the context).
    context = CodeSetsContext(char_data=cs.ISO_8859_1, wchar_data=0)
    data = request("echo_wstring", echo_type("echo_wstring"), "hi", contexts=[context])
    ex = explain([data], BAD_PARAM(OMG_VMCID | 23, NO), modules=[ECHO])
    assert where(ex) == [(0, 80, "request.body.v", "wchar-without-tcs")]
    assert "WCharTCSNotKnown" in ex.verdict()
    # And to a reference that offers no code sets at all.
    plain = request("echo_wstring", echo_type("echo_wstring"), "hi")
    ex = explain([plain], None, modules=[ECHO], ior=ior_with(None))
    assert where(ex) == [(0, 56, "request.body.v", "wchar-without-tcs")]


def test_wchar_in_giop_10():
    # wchar may not be sent in GIOP 1.0 (OMG MARSHAL minor 5).  A sender that writes it as
    # in GIOP 1.1 (a 2-octet unit): echo_wchar's operation "echo_wchar\0" 36-46, pad 47,
    # principal 48-51, the wchar at 52.
    msg = Request(version=(1, 0), request_id=5, response_flags=3, target=KeyAddr(b"key"),
                  operation="echo_wchar")
    data = encode_message(msg, write_body=lambda w: w.write_raw(b"\0A"))
    ex = explain([data], MARSHAL(OMG_VMCID | 5, NO), modules=[ECHO])
    assert where(ex) == [(0, 52, "request.body.v", "wchar-in-1.0")]
    assert "WCharSentByGIOP10Client" in ex.verdict()


# --- a UserException read past its end -----------------------------------------------------
EXC_IDL = """
module E { exception Oops { long code; string why; };
           interface T { void op(in long x) raises (Oops); }; };
"""


def test_user_exception_read_past_its_end():
    idl = load_string(EXC_IDL, register=False)
    req = Request(version=(1, 2), request_id=3, response_flags=3, target=KeyAddr(b"key"),
                  operation="op")
    data = encode_message(req, write_body=lambda w: w.write_long(1))
    # The server's reply body holds the exception id and code, not why.
    reply = Reply(version=(1, 2), request_id=3, reply_status=ReplyStatus.USER_EXCEPTION)

    def body(w):
        w.write_string("IDL:E/Oops:1.0")
        w.write_long(7)
    raw = encode_message(reply, write_body=body)
    # Reply 1.2: request_id 12, status 16, contexts 20, body at 24: id length 24, id 28-42,
    # pad 43, code 44-47; why's length would be at 48.
    assert raw[44:48] == (7).to_bytes(4, "big") and len(raw) == 48
    ex = explain([data], raw, modules=[idl])
    assert ex.clean and ex.user_exception == "IDL:E/Oops:1.0"
    assert [(f.side, f.offset, f.path, f.code) for f in ex.violations] == \
        [("reply", 48, "reply.body.Oops.why", "exception-truncated")]
    assert ex.lines()[0].startswith("reply @48 reply.body.Oops.why: ")
    assert ex.verdict() == "the request is clean: no rule of the specification is broken " \
        "(the peer answered USER_EXCEPTION IDL:E/Oops:1.0); the reply breaks 1 rule"


# --- capture pairing -----------------------------------------------------------------------
def test_exchanges_pair_requests_with_system_exception_replies():
    found = []
    pairs = Exchanges(found.append)
    context = CodeSetsContext(char_data=cs.UTF_8, wchar_data=cs.UTF_16)
    first = request("echo_string", echo_type("echo_string"), "a", contexts=[context],
                    request_id=1)
    second = request("echo_string", echo_type("echo_string"), "b", request_id=2)
    ok = encode_message(Reply(version=(1, 2), request_id=1,
                              reply_status=ReplyStatus.NO_EXCEPTION))
    bad = encode_message(Reply(version=(1, 2), request_id=2,
                               reply_status=ReplyStatus.SYSTEM_EXCEPTION,
                               system_exception=MARSHAL(OMG_VMCID, NO)))
    for sender, raw in (("c", first), ("c", second), ("s", ok), ("s", bad)):
        pairs.feed(0, sender, raw)
    pairs.finish()
    assert [(e.request_id, e.messages, e.reply, e.code_sets) for e in found] == \
        [(2, [second], bad, (cs.UTF_8, cs.UTF_16))]
    assert found[0].explain(modules=[ECHO]).answer == MARSHAL(OMG_VMCID, NO)
    # A code the vendor's table does not hold is said to be unknown, not guessed.
    unknown = explain([second], MARSHAL(OMNIORB_VMCID | 4000, NO), modules=[ECHO])
    assert unknown.answer_text() == "the peer answered CORBA::MARSHAL minor 0x41540fa0 " \
        "(omniORB 4000, not in pycdr's table of its codes), COMPLETED_NO"
    # A TAO code is named by its location and errno, as everywhere else.
    tao = explain([second], MARSHAL(0x54410113, NO), modules=[ECHO])
    assert tao.answer_text() == "the peer answered CORBA::MARSHAL minor 0x54410113 " \
        "(TAO 0x113: sending the request failed, ECONNRESET), COMPLETED_NO"


def test_a_message_that_is_not_a_request():
    reply = encode_message(Reply(version=(1, 2), request_id=1,
                                 reply_status=ReplyStatus.NO_EXCEPTION))
    with pytest.raises(ExplainError):
        explain([reply])
    with pytest.raises(ExplainError):
        explain([])
    ex = explain([b"GIOX" + bytes(8)])
    assert where(ex) == [(0, 0, "header.magic", "not-giop")]


def test_layout_values_leave_the_fuzzer_fields_alone():
    data = request("echo_fixed", echo_type("echo_fixed"), Decimal("1.5"))
    plain = message_fields(data, [echo_type("echo_fixed")])
    full = message_fields(data, [echo_type("echo_fixed")], values=True)
    assert [f for f in full if f.kind != "value"] == plain
    assert [(f.path, f.offset, f.size) for f in full if f.kind == "value"] == \
        [("request.body.arg[0]", 56, 6)]


def test_exchanges_take_the_ior_of_a_forward_to_the_key_requested():
    found = []
    pairs = Exchanges(found.append)
    forward = ior_with(OMNI_CODE_SETS)
    located = encode_message(Reply(version=(1, 2), request_id=1,
                                   reply_status=ReplyStatus.LOCATION_FORWARD, forward=forward))
    context = CodeSetsContext(char_data=cs.ISO_8859_15, wchar_data=cs.UTF_16)
    sent = request("echo_string", echo_type("echo_string"), "a", contexts=[context],
                   request_id=2)
    refused = encode_message(Reply(version=(1, 2), request_id=2,
                                   reply_status=ReplyStatus.SYSTEM_EXCEPTION,
                                   system_exception=CODESET_INCOMPATIBLE(OMG_VMCID, NO)))
    for sender, raw in (("s", located), ("c", sent), ("s", refused)):
        pairs.feed(0, sender, raw)
    assert [e.ior for e in found] == [forward]
    assert where(found[0].explain(modules=[ECHO])) == \
        [(0, 64, "request.service_context[0].char_data", "code-set-not-offered")]


def test_layout_aligns_body_values_from_the_message_start():
    # A 1.2 body at 56 of (long, double, boolean): the long 56-59, the double 8-aligned from
    # the message's first octet (as the decoder reads it) at 64-71, the boolean at 72.
    msg = Request(version=(1, 2), request_id=1, response_flags=3, target=KeyAddr(b"key"),
                  operation="echo_string")

    def body(w):
        w.write_long(1)
        w.write_double(2.5)
        w.write_boolean(True)
    data = encode_message(msg, write_body=body)
    fields = message_fields(data, [tc.long, tc.double, tc.boolean], values=True)
    assert [(f.path, f.offset, f.size) for f in fields if f.kind == "value"] == \
        [("request.body.arg[0]", 56, 4), ("request.body.arg[1]", 64, 8),
         ("request.body.arg[2]", 72, 1)]
    assert [(f.path, f.offset) for f in message_fields(data, [tc.long, tc.double, tc.boolean])
            if f.kind == "boolean"] == [("request.body.arg[2].boolean", 72)]
