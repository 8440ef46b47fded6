"""`pycdr explain`: a request in hex or in a capture, text and JSON; every bad input ends with
one line and a documented exit status, never a traceback."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from click.testing import CliRunner

from pycdr.cli.main import main
from pycdr.codec import marshal
from pycdr.codec.ior import ior_to_string
from pycdr.conformance.echo import ECHO_IDL, ECHO_INTERFACE, load_echo_module
from pycdr.giop.messages import KeyAddr, Reply, ReplyStatus, Request, encode_message
from pycdr.giop.sysexc import MARSHAL, SUN_VMCID, CompletionStatus

from test_explain import OMNI_CODE_SETS, ior_with

ECHO = load_echo_module()
FIXED = ECHO.interfaces[ECHO_INTERFACE].all_operations()["echo_fixed"].in_params[0].type


def invoke(*args):
    result = CliRunner().invoke(main, ["explain", *[str(a) for a in args]])
    # Click's runner turns an escaping exception into exit code 1: tell them apart.
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    return result


def fixed_request(value="-12.5", request_id=5, *, sign=None):
    msg = Request(version=(1, 2), request_id=request_id, response_flags=3,
                  target=KeyAddr(b"key"), operation="echo_fixed")
    data = bytearray(encode_message(
        msg, write_body=lambda w: marshal.write_value(w, FIXED, Decimal(value))))
    if sign is not None:
        data[61] = (data[61] & 0xF0) | sign
    return bytes(data)


def marshal_reply(request_id=5):
    return encode_message(Reply(version=(1, 2), request_id=request_id,
                                reply_status=ReplyStatus.SYSTEM_EXCEPTION,
                                system_exception=MARSHAL(SUN_VMCID | 258,
                                                         CompletionStatus.COMPLETED_NO)))


def test_hex_request_that_is_clean():
    result = invoke("--request", fixed_request().hex(), "--reply", marshal_reply().hex(),
                    "--idl", ECHO_IDL)
    assert result.exit_code == 0, result.output
    assert result.output == (
        "the request is clean: the fault is the peer's (the peer answered CORBA::MARSHAL minor "
        "0x53550102 (Sun 258: badArgumentsNvlist: the arguments did not read into the DSI "
        "argument list), COMPLETED_NO)\n")


def test_hex_request_that_breaks_a_rule_text_and_json():
    args = ("--request", fixed_request(sign=0xA).hex(), "--reply", marshal_reply().hex(),
            "--idl", ECHO_IDL)
    result = invoke(*args)
    assert result.exit_code == 1
    assert result.output.splitlines()[0] == (
        "@61 request.body.v: fixed sign nibble 0xa is not 0xc or 0xd "
        "[CORBA 3.x Part 2, 9.3.2.8 Fixed-Point Decimal Type]")
    assert result.output.splitlines()[1].startswith("the request breaks 1 rule; the peer "
                                                    "answered CORBA::MARSHAL")
    out = json.loads(invoke(*args, "--json").output)
    assert out["clean"] is False and out["operation"] == "echo_fixed"
    assert [(f["offset"], f["path"], f["code"]) for f in out["findings"]] == \
        [(61, "request.body.v", "bad-fixed-sign")]
    assert out["answer"]["name"] == "MARSHAL" and out["answer"]["minor_name"].startswith(
        "badArgumentsNvlist")


def test_ior_option_checks_the_code_sets(tmp_path):
    from pycdr import codesets as cs
    from pycdr.giop.service_contexts import CodeSetsContext
    msg = Request(version=(1, 2), request_id=5, response_flags=3, target=KeyAddr(b"key"),
                  operation="echo_fixed",
                  service_contexts=[CodeSetsContext(char_data=cs.WINDOWS_1252,
                                                    wchar_data=cs.UTF_16)])
    data = encode_message(msg, write_body=lambda w: marshal.write_value(w, FIXED,
                                                                         Decimal("1")))
    ior = ior_to_string(ior_with(OMNI_CODE_SETS))
    result = invoke("--request", data.hex(), "--ior", ior)
    assert result.exit_code == 1
    assert result.output.startswith("@64 request.service_context[0].char_data: TCS-C "
                                    "Windows-1252 is not a code set the server offered")


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    pytest.importorskip("scapy")
    from pycdr.capture.write import TcpSession, write_pcap
    path = tmp_path_factory.mktemp("explain") / "fixed.pcap"
    packets: list = []
    session = TcpSession(packets, 2809)
    ok = encode_message(Reply(version=(1, 2), request_id=4,
                              reply_status=ReplyStatus.NO_EXCEPTION))
    session.client_sends(fixed_request("1.5", 4))
    session.server_sends(ok)
    session.client_sends(fixed_request(request_id=5))
    session.server_sends(marshal_reply(5))
    session.close()
    write_pcap(str(path), packets)
    return path


def test_capture_every_request_a_system_exception_answered(capture):
    result = invoke(capture, "--idl", ECHO_IDL)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("stream ") and lines[0].endswith(" request 5 (echo_fixed):")
    assert lines[1].startswith("    the request is clean: the fault is the peer's")
    assert len(lines) == 2
    stream = int(lines[0].split()[1])
    one = invoke(capture, "--stream", stream, "--request-id", 4, "--idl", ECHO_IDL, "--json")
    out = json.loads(one.output)
    assert one.exit_code == 0 and out["stream"] == stream and out["request_id"] == 4
    assert out["reply_status"] == "NO_EXCEPTION" and out["findings"] == []
    assert out["verdict"] == "the request is clean: no rule of the specification is broken " \
        "(the peer answered NO_EXCEPTION)"


BAD_INPUTS = [
    # (arguments, exit status, the line on stderr)
    ((), 2, "give a CAPTURE or --request HEX"),
    (("--request", "zz"), 2, "Invalid value for --request: not hexadecimal bytes"),
    (("--request", "474"), 2, "not hexadecimal bytes"),
    (("--request", "00", "--reply", "0x1g"), 2, "Invalid value for --reply: not hexadecimal bytes"),
    (("--request", "00", "--ior", "IOR:zz"), 2, "Invalid value for --ior: not an IOR"),
    (("--request", "00", "--stream", "1"), 2, "--stream, --request-id and --port go with"),
    (("--request", "00", "--idl", "/nonexistent.idl"), 2, "does not exist"),
    (("--request", marshal_reply().hex()), 1, "error: the message is a Reply, not a Request"),
    (("--request-id", "-1", "--request", "00"), 2, "-1 is not in the range"),
]


@pytest.mark.parametrize("args, status, line", BAD_INPUTS, ids=[str(i) for i in
                                                                  range(len(BAD_INPUTS))])
def test_bad_input_is_one_line_and_a_status(args, status, line):
    result = invoke(*args)
    assert result.exit_code == status, result.output
    assert line in result.output
    assert "Traceback" not in result.output and "{'" not in result.output


def test_bad_files_and_bytes(tmp_path, capture):
    idl = tmp_path / "bad.idl"
    idl.write_text("module M { interface I { void op(in nosuch x); }; };\n")
    not_pcap = tmp_path / "not.pcap"
    not_pcap.write_bytes(b"this is not a capture at all")
    cases = [
        (("--request", fixed_request().hex(), "--idl", idl), 1, "nosuch"),
        ((not_pcap,), 1, "error: "),
        ((capture, "--reply", "00"), 2, "--reply goes with --request"),
        ((capture, "--request-id", 99), 1, "error: no request 99 in"),
        ((capture, "--stream", 7), 1, "error: no request answered by a system exception "
                                      "in stream 7"),
    ]
    for args, status, line in cases:
        result = invoke(*args)
        assert (result.exit_code, line in result.output) == (status, True), \
            (args, result.output)
        # (a usage error comes after Click's usage lines, as for every command)
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 or (status == 2 and lines[-1].startswith("Error: ")), \
            result.output
        assert "Traceback" not in result.output


@pytest.mark.parametrize("data, findings", [
    (b"", [("header.magic", "not-giop")]),
    (b"GIOP\x01\x02\x00\x00\x00\x00\x01\x00",
     [("header.message_size", "message-truncated"), ("message", "undecodable")]),
])
def test_bytes_that_are_no_request_are_findings(data, findings):
    result = invoke("--request", data.hex(), "--json")
    assert result.exit_code == 1, result.output
    out = json.loads(result.output)
    assert [(f["path"], f["code"]) for f in out["findings"]] == findings
    assert out["verdict"].startswith("the request breaks ")


def test_a_lone_fragment_is_no_request():
    fragment = b"GIOP\x01\x02\x00\x07\x00\x00\x00\x04\x00\x00\x00\x05"
    result = invoke("--request", fragment.hex())
    assert (result.exit_code, result.output) == \
        (1, "error: the message is a Fragment, not a Request\n")


def test_pcap_explain_adds_the_explanations(capture):
    def pcap(*args):
        result = CliRunner().invoke(main, ["pcap", str(capture), "--explain", *args])
        assert result.exception is None or isinstance(result.exception, SystemExit), \
            repr(result.exception)
        return result
    text = pcap("--idl", ECHO_IDL)
    assert text.exit_code == 0, text.output
    lines = text.output.splitlines()
    assert lines[-2].startswith("explain stream ") and \
        lines[-2].endswith(" request 5 (echo_fixed):")
    assert lines[-1].startswith("    the request is clean: the fault is the peer's (the peer "
                                "answered CORBA::MARSHAL minor 0x53550102 (Sun 258")
    as_json = pcap("--json", "--idl", ECHO_IDL).output.splitlines()
    last = json.loads(as_json[-1])["explain"]
    assert (last["request_id"], last["findings"], last["clean"]) == (5, [], True)
    assert all("explain" not in json.loads(line) for line in as_json[:-1])
    refused = pcap("--stats")
    assert refused.exit_code == 2 and \
        "--explain goes with a capture FILE's text or --json output" in refused.output


def test_capture_with_a_fragmented_giop_11_request(tmp_path):
    pytest.importorskip("scapy")
    from pycdr.capture.write import TcpSession, write_pcap
    from pycdr.giop.sysexc import OMG_VMCID
    from test_explain import echo_type, fragments_11, request
    data = request("echo_long", echo_type("echo_long"), 0x01020304, version=(1, 1))
    refused = encode_message(Reply(version=(1, 1), request_id=5,
                                   reply_status=ReplyStatus.SYSTEM_EXCEPTION,
                                   system_exception=MARSHAL(OMG_VMCID,
                                                            CompletionStatus.COMPLETED_NO)))
    packets: list = []
    session = TcpSession(packets, 2809)
    session.client_sends(*fragments_11(data, 54))
    session.server_sends(refused)
    session.close()
    path = tmp_path / "split.pcap"
    write_pcap(str(path), packets)
    result = invoke(path, "--idl", ECHO_IDL)
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[1] == "    @52 request.body.v: long split between two fragments: GIOP 1.1 " \
        "fragments are cut only between primitives [CORBA 3.x Part 2, 9.4.9 Fragment Message]"
    assert lines[2] == "    the request breaks 1 rule; the peer answered CORBA::MARSHAL minor " \
        "0x4f4d0000 (OMG 0), COMPLETED_NO"
