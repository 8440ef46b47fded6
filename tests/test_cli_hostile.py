"""Every command on hostile or careless input (issue 25, points 5 and 6): a
message and exit code 1 (bad input), 2 (usage) or 3 (unreachable), never a
traceback; numbers that do not fit their IDL type are refused, not truncated."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest
from click.testing import CliRunner

from bounded import PYCDR, run_pycdr
from orb_echo_values import ECHO_ALL_IDL
from pycdr.cli.main import main
from pycdr.codec.ior import IOR, TaggedProfile, ior_to_string
from hostile_idl import diamond
from test_orb_cli import served  # noqa: F401 (the fixture: `pycdr serve` of the Echo)


def invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    # Click's runner turns an escaping exception into exit code 1: tell them apart.
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    return result


def call(url, operation, *args):
    return invoke("call", url, operation, *args, "--idl", ECHO_ALL_IDL)


# --- pycdr call: arguments -----------------------------------------------------
def test_call_arguments_that_do_not_fit_are_refused_with_the_type(served):
    _, _, url = served
    refused = [
        ("echo_long", "1.5", "1.5 is not an integer (long)"),
        ("echo_long", "true", "is not an integer (long)"),
        ("echo_long", '"5"', "is not an integer (long)"),
        ("echo_long", "2147483648", "does not fit long"),
        ("echo_octet", "256", "does not fit octet"),
        ("echo_ulonglong", "-1", "does not fit unsigned long long"),
        ("echo_short", "-32769", "does not fit short"),
        ("echo_float", "1e39", "does not fit float"),
        ("echo_fixed", '"abc"', "is not a decimal number (Money (fixed<10,3>))"),
        ("echo_fixed", '"1.2345"', "more than 3 fractional digits"),
        ("echo_short8", '"123456789"', "exceeds bound 8"),
        ("echo_char", '"ab"', "is not one character (char)"),
        ("echo_long", "x" * 100, "is not JSON"),
        ("echo_long", "9" * 5000, "is not JSON"),
    ]
    for operation, text, message in refused:
        result = call(url, operation, text)
        assert result.exit_code == 2, (operation, text, result.output)
        assert message in result.output, (operation, text, result.output)


def test_call_accepts_negative_numbers_without_a_double_dash(served):
    _, _, url = served
    result = call(url, "echo_long", "-5")
    assert result.exit_code == 0 and result.output.strip() == "-5", result.output
    result = call(url, "echo_multi", "-7", "-2.5")
    assert result.exit_code == 0 and json.loads(result.output) == [-7, -2.5], result.output
    result = call(url, "echo_fixed", '"-1.5"')
    assert result.exit_code == 0 and json.loads(result.output) == "-1.500", result.output
    # An option that does not exist is still refused as one.
    result = call(url, "echo_long", "--bogus")
    assert result.exit_code == 2 and "No such option" in result.output


def test_call_refuses_deeply_nested_json(served):
    _, _, url = served
    result = call(url, "echo_longs", "[" * 30_000 + "]" * 30_000)
    assert result.exit_code == 2 and "nested too deeply" in result.output, result.output[-500:]
    # Within what json reads (two levels a node), deeper than values go.
    depth = 450
    text = '{"value": 1, "children": [' * depth + '{"value": 1, "children": []}' + "]}" * depth
    result = call(url, "echo_node", text)
    assert result.exit_code == 2 and "nested too deeply" in result.output, result.output[-500:]


def test_call_usage_errors(served):
    _, _, url = served
    result = invoke("call", url, "nosuch", "--interface", "EchoAll::Echo", "--idl", ECHO_ALL_IDL)
    assert result.exit_code == 2 and "has no operation nosuch; its operations:" in result.output
    result = invoke("call", url, "echo_long", "5", "--giop", "7.1", "--idl", ECHO_ALL_IDL)
    assert result.exit_code == 2 and "'7.1' is not one of" in result.output
    result = invoke("call", "corbaloc:iiop:1.2@127.0.0.1:70000/Echo", "echo_long", "5",
                    "--idl", ECHO_ALL_IDL)
    assert result.exit_code == 1 and "above 65535" in result.output


# --- ports ---------------------------------------------------------------------
def test_ports_out_of_range_are_usage_errors():
    # (a reference that cannot be used is bad input, as in `call`)
    result = invoke("probe", "127.0.0.1:70000")
    assert result.exit_code == 1 and "above 65535" in result.output
    result = invoke("probe", "corbaloc:rir:/NameService")
    assert result.exit_code == 1 and "no IIOP address" in result.output
    no_iiop = ior_to_string(IOR("IDL:X:1.0", (TaggedProfile(1, bytes(4)),)))
    result = invoke("probe", no_iiop)
    assert result.exit_code == 1 and "INV_OBJREF" in result.output
    result = invoke("capture", "out.pcap", "--port", "70000")
    assert result.exit_code == 2 and "'--port'" in result.output
    for port in ("-5", "70000"):
        result = run_pycdr("serve", "--idl", ECHO_ALL_IDL, "--interface", "EchoAll::Echo",
                           "--port", port)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert "'--port'" in result.stderr


# --- fuzz --replay ----------------------------------------------------------------
@pytest.mark.parametrize("content, message", [
    ('{"kind": "crash"', "not a finding's JSON"),
    ("[1, 2]", "a JSON object is expected"),
    ('{"minimized": ["00"]}', 'no "kind" string'),
    ('{"kind": "crash"}', 'no "minimized" list'),
    ('{"kind": "crash", "minimized": ["zz"]}', "minimized message 0 is not hex"),
    ('{"kind": "crash", "minimized": [5]}', "minimized message 0 is not hex"),
    ("[" * 100_000, "not a finding's JSON"),
    (b"\xff\xfe", "not a finding's JSON"),
])
def test_fuzz_replay_of_a_damaged_finding(tmp_path, content, message):
    path = tmp_path / "finding.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    result = invoke("fuzz", "127.0.0.1:9", "--replay", tmp_path)
    assert result.exit_code == 1 and "cannot replay" in result.output and message in \
        result.output, result.output


# --- the server's _is_a over a diamond of inheritance --------------------------------
def test_server_is_a_over_a_deep_diamond_answers_within_the_probe_timeout(tmp_path):
    # Issue 25: is_a walked every path (2**24 here), 18.9 s on the event loop.
    idl_path = tmp_path / "diamond.idl"
    idl_path.write_text(diamond(24))
    process = subprocess.Popen([PYCDR, "serve", idl_path, "--interface", "I24"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        process.stdout.readline()
        url = process.stdout.readline().strip()
        assert url.startswith("corbaloc:"), process.stderr.read() if process.poll() else url
        for repo_id, expected in (("IDL:Nothing:1.0", False), ("IDL:I0:1.0", True)):
            result = invoke("probe", url, "--is-a", repo_id, "--json", "--timeout", "10")
            assert result.exit_code == 0, result.output
            assert json.loads(result.output)["object"]["is_a"] is expected, result.output
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
