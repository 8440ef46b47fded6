"""Each warning once per cause in a command's run (pycdr.cli.warn): decode warnings that recur
(in several profiles of an IOR, twice in one message, in a capture's message), the --insecure
warning, the library's log warnings; a new run warns afresh."""

import json
import logging

import click
from click.testing import CliRunner

from pycdr.addressing.iiop import IIOPProfile, TaggedComponent, make_ior
from pycdr.capture.write import StreamPcapWriter
from pycdr.cli.main import EXIT_OK, main
from pycdr.cli.warn import start_run, warn
from pycdr.codec.ior import ior_to_string
from pycdr.giop.messages import KeyAddr, Request, encode_message


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def twice_padded_request() -> bytes:
    """A GIOP 1.2 Request whose two 2-octet paddings (at 22 and 38) hold the same non-zero
    octets: one cause (non-zero padding 5500) at two offsets."""
    data = bytearray(encode_message(Request(request_id=1, operation="a", target=KeyAddr(b"k"),
                                            body=b"\x01")))
    data[22] = data[38] = 0x55
    return bytes(data)


def test_a_warning_repeated_in_several_profiles_is_one_line():
    """The same malformed component in every profile (one per address, as an ORB with several
    listeners writes it): one line naming the cause, with every offset."""
    bad = TaggedComponent(36, b"")
    ior = ior_to_string(make_ior("IDL:X:1.0", [
        IIOPProfile((1, 2), host, 2809, b"k", (bad,)) for host in ("a.example", "b.example")]))
    r = run("ior", ior)
    assert r.exit_code == EXIT_OK, r.output
    lines = [line for line in r.output.splitlines() if "TAG_TLS_SEC_TRANS has no data" in line
             and line.startswith("warning:")]
    assert len(lines) == 1 and "at offsets " in lines[0], r.output
    [w] = json.loads(run("ior", "--json", ior).output)["warnings"]
    assert len(w["offsets"]) == 2 and w["offset"] == w["offsets"][0]


def test_corbaloc_with_several_addresses_warns_once():
    """`pycdr probe` of a corbaloc with several (unreachable) addresses, --insecure: the
    warning that nothing is verified is printed once, and again in the next run."""
    for _ in range(2):
        r = run("probe", "corbaloc:ssliop:127.0.0.1:1,ssliop:127.0.0.1:2,iiop:127.0.0.1:3/k",
                "--insecure", "--timeout", "0.5")
        assert r.stderr.count("NOT verified") == 1, r.stderr


def test_corbaloc_ssliop_addresses_say_tls():
    r = run("ior", "corbaloc:iiop:a:1,ssliop:1.2@b:2/x")
    assert "  IIOP 1.0 a 1\n  SSLIOP 1.2 b 2 (TLS required)\n" in r.output
    j = json.loads(run("ior", "--json", "corbaloc:ssliop:b:2/x").output)
    assert (j["addresses"][0]["protocol"], j["addresses"][0]["tls"]) == ("ssliop", True)


def test_warn_prints_each_cause_once_per_run(monkeypatch):
    # pytest's log capture sits on the root logger; a command's run has none there
    monkeypatch.setattr(logging.getLogger(), "handlers", [])

    @click.command()
    def command():
        start_run()                       # as the pycdr group does
        logging.getLogger("pycdr").addHandler(logging.NullHandler())
        for host in ("a", "b", "a"):
            warn(f"{host} is slow")
        warn("a is slow", cause="slow")
        warn("b is slow (again)", cause="slow")
        warn("a is slow", label="note")
        # the library's log records are no warnings of a command (no server log lines
        # in a client's output)
        logging.getLogger("pycdr.orb.client").warning("%s:%d: %s", "h", 1, "violation")
    first = CliRunner().invoke(command, [])
    assert first.exit_code == 0, first.output
    assert first.stderr.splitlines() == ["warning: a is slow", "warning: b is slow",
                                         "warning: a is slow", "note: a is slow"]
    # a new run starts afresh
    assert CliRunner().invoke(command, []).stderr == first.stderr


def test_decode_repeated_padding_warning_is_one_line():
    r = run("decode", twice_padded_request().hex())
    assert r.exit_code == EXIT_OK, r.output
    [line] = [line for line in r.output.splitlines() if "[nonzero-padding]" in line]
    assert line.strip() == "note @22, @38: [nonzero-padding] non-zero padding bytes 5500"


def test_pcap_repeated_warning_in_a_message_is_one_line(tmp_path):
    path = tmp_path / "padded.pcap"
    writer = StreamPcapWriter(str(path))
    flow = writer.connection(("10.0.0.1", 40001), ("10.0.0.2", 2809))
    flow.sends(True, twice_padded_request())
    flow.close()
    writer.close()
    r = run("pcap", path)
    assert r.exit_code == EXIT_OK, r.output
    assert r.output.count("[nonzero-padding] non-zero padding bytes 5500") == 1, r.output
