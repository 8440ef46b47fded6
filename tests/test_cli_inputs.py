"""Inputs as users have them (issue 42, items 5 and 6): a reference in a file (wrapped over
lines), a file:// URL or on stdin; the operations every object has, called without IDL;
JSON that is RFC 8259 JSON both ways; `decode --idl`; pycdr's own ORB named in its IORs."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from orb_echo_values import ECHO_ALL_IDL
from pycdr.cli.main import main
from pycdr.giop.messages import KeyAddr, Reply, Request, encode_message
from pycdr_serve import serving_echo


@pytest.fixture(scope="module")
def echo():
    with serving_echo() as (process, ior, url):
        yield ior, url


def invoke(*args, stdin=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=stdin)


def test_a_reference_from_a_file_a_file_url_and_stdin(echo, tmp_path):
    ior, _ = echo
    wrapped = tmp_path / "echo.ior"
    # As a mail or a terminal wraps it: 64 characters a line, indented.
    wrapped.write_text("\n".join("  " + ior[i:i + 64] for i in range(0, len(ior), 64)) + "\n")
    for target, stdin in ((wrapped, None), (f"file://{wrapped}", None), ("-", ior + "\n")):
        result = invoke("call", target, "echo_long", "7", "--idl", ECHO_ALL_IDL, stdin=stdin)
        assert result.exit_code == 0, result.output
        assert result.stdout.strip() == "7"
    shown = invoke("ior", wrapped)
    assert shown.exit_code == 0 and 'Type ID: "IDL:EchoAll/Echo:1.0"' in shown.stdout
    assert "ORB: pycdr (TAG_ORB_TYPE)" in shown.stdout
    probed = invoke("probe", wrapped, "--timeout", "10", "--json")
    assert probed.exit_code == 0, probed.output
    assert json.loads(probed.stdout)["giop"] is True


def test_the_operations_of_every_object_need_no_idl(echo):
    _, url = echo
    result = invoke("call", url, "_non_existent")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "false"
    result = invoke("call", url, "_is_a", '"IDL:EchoAll/Echo:1.0"', "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"result": True}
    result = invoke("call", url, "_interface", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["result"].startswith("IOR:")
    # Another operation still needs the IDL, and says so.
    result = invoke("call", url, "echo_long", "1")
    assert result.exit_code == 2 and "--idl FILE is needed" in result.stderr


@pytest.mark.parametrize("text", ['"NaN"', '"Infinity"', '"-Infinity"'])
def test_non_finite_doubles_are_json_strings_both_ways(echo, text):
    _, url = echo
    result = invoke("call", url, "echo_double", text, "--idl", ECHO_ALL_IDL, "--json")
    assert result.exit_code == 0, result.output
    assert "NaN" not in result.stdout.replace('"NaN"', "")       # never a bare NaN
    assert json.loads(result.stdout) == {"result": json.loads(text)}


def test_bare_nan_and_numbers_beyond_the_type_are_refused_naming_them(echo):
    _, url = echo
    result = invoke("call", url, "echo_double", "NaN", "--idl", ECHO_ALL_IDL)
    assert result.exit_code == 2
    assert "NaN is not a JSON number" in result.stderr and "'\"NaN\"'" in result.stderr
    result = invoke("call", url, "echo_double", "1e400", "--idl", ECHO_ALL_IDL)
    assert result.exit_code == 2 and "beyond the range of a double" in result.stderr
    result = invoke("call", url, "echo_long", str(2 ** 40), "--idl", ECHO_ALL_IDL)
    assert result.exit_code == 2 and "does not fit long" in result.stderr
    assert "Invalid value for v" in result.stderr        # the parameter, by name


def test_decode_with_idl_gives_typed_values():
    body = (7).to_bytes(4, "big")
    stream = encode_message(Request(request_id=5, operation="echo_long", target=KeyAddr(b"k"),
                                    body=body)) + \
        encode_message(Reply(request_id=5, body=(8).to_bytes(4, "big")))
    result = invoke("decode", stream.hex(), "--idl", ECHO_ALL_IDL, "--json")
    assert result.exit_code == 0, result.output
    request, reply = (json.loads(line) for line in result.stdout.splitlines())
    assert request["decoded"]["typed"] == {"v": 7}
    assert reply["decoded"] == {"operation": "echo_long", "kind": "results",
                                "values": [["return", "8"]], "typed": {"return": 8}}
    tree = invoke("decode", stream.hex(), "--idl", ECHO_ALL_IDL)
    assert tree.exit_code == 0 and "  decoded:" in tree.stdout and "v: 7" in tree.stdout


def test_a_reference_of_another_type_than_the_interface_is_warned_about(echo, tmp_path):
    ior, url = echo
    other = tmp_path / "other.idl"
    other.write_text("module Other { interface Thing { long echo_long(in long v); }; };\n")
    result = invoke("call", ior, "echo_long", "5", "--idl", other)
    assert result.exit_code == 0 and result.stdout.strip() == "5"
    assert "warning: the reference's type is IDL:EchoAll/Echo:1.0, not Other::Thing" \
        in result.stderr
    same = invoke("call", ior, "echo_long", "5", "--idl", ECHO_ALL_IDL)
    assert same.exit_code == 0 and "warning" not in same.stderr


def test_a_wstring_over_corbaloc_without_version_hints_at_giop_1_0(echo):
    _, url = echo
    bare = url.replace("corbaloc:iiop:1.2@", "corbaloc::")
    result = invoke("call", bare, "echo_wstring", '"h\u00e9llo"', "--idl", ECHO_ALL_IDL)
    assert result.exit_code == 1 and "GIOP 1.0" in result.stdout
    assert "hint: a corbaloc address without a version is GIOP 1.0" in result.stderr
    result = invoke("call", url, "echo_wstring", '"h\u00e9llo"', "--idl", ECHO_ALL_IDL, "--json")
    assert result.exit_code == 0 and json.loads(result.stdout) == {"result": "h\u00e9llo"}
