"""`pycdr decode` and `pycdr ior`."""

import json

from click.testing import CliRunner

from pycdr.cli.main import EXIT_BAD_INPUT, EXIT_OK, EXIT_USAGE, main
from pycdr.giop.messages import KeyAddr, Reply, Request, encode_message
from pycdr.addressing.iiop import AlternateIIOPAddress, CodeSetsComponent, CompoundSecMech, CSISecMechList, IIOPProfile, InvocationPolicyComponent, OmniORBUnixTransport, ORBTypeComponent, OTSPolicyComponent, SSLSecTrans, TaggedComponent, TLSSecTrans, make_ior
from pycdr.codec.ior import NIL, ior_to_string

PROBE = "47494f50010200030000001700000002000000000000000b4e616d6553657276696365"


def run(*args, stdin=None):
    return CliRunner().invoke(main, list(args), input=stdin)


def test_decode_probe_tree():
    r = run("decode", PROBE)
    assert r.exit_code == EXIT_OK, r.output
    assert "GIOP 1.2 LocateRequest, big-endian" in r.output
    assert "request_id: 2  @12" in r.output
    assert "object_key_text: NameService" in r.output
    assert "padding @18: 2 bytes 0000" in r.output


def test_decode_json_stream_from_stdin_with_spaces():
    stream = encode_message(Request(request_id=1, operation="op", target=KeyAddr(b"k"),
                                    body=b"\x01")) + encode_message(Reply(request_id=1,
                                                                          little=True))
    spaced = " ".join(stream[i:i + 4].hex() for i in range(0, len(stream), 4))
    r = run("decode", "--json", stdin=spaced + "\n")
    assert r.exit_code == EXIT_OK, r.output
    out = [json.loads(line) for line in r.output.splitlines()]      # JSON Lines
    assert [m["type"] for m in out] == ["Request", "Reply"]
    assert out[1]["stream_offset"] == len(stream) - 24
    assert out[0]["offsets"]["body"] == 48 and out[0]["body"] == "01"


def test_decode_binary_file_and_warnings(tmp_path):
    data = bytearray(encode_message(Request(request_id=1, operation="ab", target=KeyAddr(b"k"),
                                            body=b"\x01")))
    data[-2] = 0x55                                     # a non-zero pad byte
    path = tmp_path / "msg.bin"
    path.write_bytes(bytes(data))
    r = run("decode", "--file", str(path))
    assert r.exit_code == EXIT_OK, r.output
    assert "note @" in r.output and "[nonzero-padding]" in r.output
    r = run("decode", "--json", "-f", str(path))
    assert json.loads(r.output)["warnings"][0]["code"] == "nonzero-padding"


def test_decode_errors_are_one_line_with_offset():
    r = run("decode", "47494f50010200030000001700000002")        # header claims more
    assert r.exit_code == EXIT_BAD_INPUT
    assert r.output.strip().splitlines()[-1].startswith("error: ")
    assert "offset" in r.output
    r = run("decode", "--strict", PROBE + "00")
    assert r.exit_code == EXIT_BAD_INPUT and "at offset 35" in r.output
    r = run("decode", "4749zz")
    assert r.exit_code == EXIT_BAD_INPUT and "'z' is not a hex digit at offset 4" in r.output
    r = run("decode", "474")
    assert r.exit_code == EXIT_BAD_INPUT and "odd number" in r.output
    r = run("decode", "47494f50020000000000000000")
    assert r.exit_code == EXIT_BAD_INPUT and "version 2.0" in r.output
    r = run("decode", "--bogus")
    assert r.exit_code == EXIT_USAGE


def test_decode_second_message_error_offset_is_absolute():
    bad = PROBE + "47494f5001090000" + "00000000"
    r = run("decode", bad)
    assert r.exit_code == EXIT_BAD_INPUT
    assert "LocateRequest" in r.output and "at offset 39" in r.output


def test_decode_json_lines_report_an_undecodable_message_and_go_on():
    # A Request, a message of unknown type 9 (its header frames it), a Reply.
    good = encode_message(Request(request_id=1, operation="op", target=KeyAddr(b"k")))
    bad = bytes.fromhex("47494f5001020009" "00000004" "01020304")
    reply = encode_message(Reply(request_id=1))
    r = run("decode", "--json", (good + bad + reply).hex())
    assert r.exit_code == EXIT_BAD_INPUT
    lines = r.output.splitlines()
    entries = [json.loads(line) for line in lines[:3]]
    assert entries[0]["type"] == "Request" and entries[2]["type"] == "Reply"
    err = entries[1]
    assert err["stream_offset"] == len(good) and err["bytes"] == bad.hex()
    assert err["error"] == {"type": "GIOPError", "kind": "malformed",
                            "message": "unknown message type 9", "offset": len(good) + 7}
    assert err["header"]["message_type"] == "unknown(9)"
    assert lines[3].startswith("error: GIOPError: unknown message type 9")
    # The tree says it in place too, and strict mode stops there.
    r = run("decode", (good + bad + reply).hex())
    assert f"message at offset {len(good)}: undecodable: GIOPError" in r.output
    assert "GIOP 1.2 Reply" in r.output
    r = run("decode", "--strict", "--json", (good + bad + reply).hex())
    assert [json.loads(line).get("type") for line in r.output.splitlines()[:2]] == \
        ["Request", None]
    assert "Reply" not in r.output


IOR = ior_to_string(make_ior("IDL:Test/Echo:1.0", [IIOPProfile(
    (1, 2), "127.0.0.1", 4242, b"\xffkey",
    (ORBTypeComponent(0x41545400), CodeSetsComponent(0x05010001, (0x00010001,), 0x00010109, ()),
     AlternateIIOPAddress("10.0.0.9", 4243)))]))


def test_ior_text_and_json():
    r = run("ior", IOR)
    assert r.exit_code == EXIT_OK, r.output
    assert 'Type ID: "IDL:Test/Echo:1.0"' in r.output
    assert '1. IIOP 1.2 127.0.0.1 4242 "\\xffkey"' in r.output
    assert "TAG_ORB_TYPE omniORB" in r.output and "UTF-8" in r.output
    assert "Addresses: 127.0.0.1:4242, 10.0.0.9:4243" in r.output
    assert "ORB: omniORB" in r.output
    j = json.loads(run("ior", "--json", IOR).output)
    assert j["profiles"][0]["components"][0]["vendor"] == "omniORB"
    assert j["addresses"] == [{"host": "127.0.0.1", "port": 4242, "transport": "iiop"},
                              {"host": "10.0.0.9", "port": 4243, "transport": "iiop"}]
    assert "nil object reference" in run("ior", ior_to_string(NIL)).output
    assert run("ior", stdin=IOR + "\n").exit_code == EXIT_OK


def test_ior_warning_is_printed_once():
    """The profiles are decoded once for every section of the output."""
    bad = ior_to_string(make_ior("IDL:X:1.0", [IIOPProfile(
        (1, 2), "h", 1, b"k", (TaggedComponent(1, b"\x00\x01"),))]))
    r = run("ior", bad)
    assert r.exit_code == EXIT_OK, r.output
    assert r.output.count("[bad-encapsulation]") == 1, r.output
    assert len(json.loads(run("ior", "--json", bad).output)["warnings"]) == 1


def test_ior_ssl_only_addresses():
    """Port 0 in the profile means no plain listener: the TLS ports are the addresses."""
    tls = TLSSecTrans(0x66, 0x66, (("10.1.1.1", 3529),))
    mech = CompoundSecMech(0x66, tls)
    ior = ior_to_string(make_ior("IDL:X:1.0", [
        IIOPProfile((1, 2), "secure.example", 0, b"k", (SSLSecTrans(0x66, 0x66, 2810),)),
        IIOPProfile((1, 2), "csi.example", 0, b"k", (CSISecMechList(False, (mech,)),))]))
    r = run("ior", ior)
    assert r.exit_code == EXIT_OK, r.output
    assert "Addresses: secure.example:2810 (TLS), 10.1.1.1:3529 (TLS)\n" in r.output
    assert ":0" not in r.output.split("Addresses:")[1]
    j = json.loads(run("ior", "--json", ior).output)
    assert j["addresses"] == [{"host": "secure.example", "port": 2810, "transport": "tls"},
                              {"host": "10.1.1.1", "port": 3529, "transport": "tls"}]


def test_ior_corbaloc_without_key():
    r = run("ior", "corbaloc::ns.example:2900")
    assert r.exit_code == EXIT_OK, r.output
    assert "IIOP 1.0 ns.example 2900" in r.output and 'Key: (none: the empty object key)' in r.output
    assert json.loads(run("ior", "--json", "corbaloc:rir:").output)["key_text"] == "NameService"


def test_ior_corbaloc_and_corbaname():
    r = run("ior", "corbaloc:iiop:1.2@[::1]:2000,:h/Na%20me")
    assert r.exit_code == EXIT_OK
    assert "IIOP 1.2 ::1 2000" in r.output and "IIOP 1.0 h 2809" in r.output
    j = json.loads(run("ior", "--json", "corbaname::ns#a.k/b").output)
    assert j["kind"] == "corbaname" and j["name"] == [{"id": "a", "kind": "k"},
                                                       {"id": "b", "kind": ""}]


def test_ior_errors():
    r = run("ior", IOR + "0")
    assert r.exit_code == EXIT_BAD_INPUT and "odd number of hex digits" in r.output
    r = run("ior", "corbaloc::h:70000/k")
    assert r.exit_code == EXIT_BAD_INPUT and "at offset 12" in r.output
    r = run("ior", "IOR:00000000ff")
    assert r.exit_code == EXIT_BAD_INPUT and r.output.count("\n") == 1


def real_ior(orb, what):
    for line in open("tests/data/objectkeys/iors.txt"):
        if line.startswith(f"{orb} {what} "):
            return line.split()[2]
    raise LookupError(orb, what)


def test_ior_names_the_orb_from_the_object_key():
    """A JDK-lineage IOR has no TAG_ORB_TYPE: the key's magic names it, with POA and id."""
    ior = real_ior("openjdk-orb-10.1.3", "persistent")
    r = run("ior", ior)
    assert r.exit_code == EXIT_OK, r.output
    assert "object key: JDK ORB (Sun/OpenJDK/GlassFish) (POA key), POA /child, " \
           'object id 6d796f626a "myobj"' in r.output
    assert "TAG_RMI_CUSTOM_MAX_STREAM_FORMAT max_stream_format_version 2" in r.output
    assert "ORB: JDK ORB (Sun/OpenJDK/GlassFish) (object key)" in r.output
    j = json.loads(run("ior", "--json", ior).output)
    info = j["profiles"][0]["object_key_info"]
    assert info["poa_path"] == ["child"] and info["object_id"] == "6d796f626a"
    assert j["orb"] == [{"vendor": "JDK ORB (Sun/OpenJDK/GlassFish)", "from": "object key"}]
    r = run("ior", real_ior("jacorb-3.9", "persistent"))
    assert "POA /child" in r.output and "ORB: JacORB (TAG_ORB_TYPE)" in r.output


def test_ior_vendor_profiles_and_components_named():
    from pycdr.codec.ior import TaggedProfile
    ior = ior_to_string(make_ior("IDL:X:1.0", [
        IIOPProfile((1, 2), "h", 1, b"k", (TaggedComponent(0x49424D0A, b"\x00\x01"),
                                            TaggedComponent(34, b""), OTSPolicyComponent(1),
                                            InvocationPolicyComponent(0),
                                            OmniORBUnixTransport("h", "/tmp/s"))),
        TaggedProfile(0x54414F04, b"\x00\x01")]))
    r = run("ior", ior)
    assert r.exit_code == EXIT_OK, r.output
    assert "IBM component 0x49424d0a 0001" in r.output
    assert "TAG_NULL_TAG (no data)" in r.output
    assert "TAG_OTS_POLICY REQUIRES (1)" in r.output and "TAG_INV_POLICY EITHER (0)" in r.output
    assert "TAG_OMNIORB_UNIX_TRANS host h socket /tmp/s" in r.output
    assert "2. TAO DIOP (GIOP over UDP) (tag 0x54414f04): 0001" in r.output
    j = json.loads(run("ior", "--json", ior).output)
    assert j["profiles"][1]["name"] == "TAO DIOP (GIOP over UDP)"
