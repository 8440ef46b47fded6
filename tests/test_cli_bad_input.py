"""Every command fed bad input (issue 42, item 2): one clear line, an exit status from the
documented set (pycdr.cli.main), never a traceback or a Python repr.

Endpoints that refuse, stay silent, speak HTTP or TLS are small servers of this module,
on 127.0.0.1 and a port of the system's choosing."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading

import pytest

from bounded import PYCDR, _limit_memory
from orb_echo_values import ECHO_ALL_IDL
from pycdr.cli.main import (EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_NOT_GIOP, EXIT_STATUSES,
                            EXIT_TIMEOUT, EXIT_TLS, EXIT_UNREACHABLE, EXIT_USAGE)
from pycdr_serve import serving_echo

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURES = os.path.join(os.path.dirname(HERE), "captures")
REPR_MARKS = ("Traceback", "{'", "b'", 'b"', "__init__", "Error(")
# What a TLS server answers to bytes that are not a ClientHello: an alert record.
TLS_ALERT = bytes.fromhex("15030300020228")
HTTP_ANSWER = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class _Answering:
    """A TCP server on 127.0.0.1 that reads what comes and answers ``answer`` (None: says
    nothing and keeps the connection open until the test ends)."""

    def __init__(self, answer: bytes | None):
        self.answer = answer
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.held = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if self.answer is None:
                self.held.append(conn)
                continue
            conn.settimeout(2)
            try:
                conn.recv(4096)
                conn.sendall(self.answer)
            except OSError:
                pass
            conn.close()

    def close(self):
        self.sock.close()
        for conn in self.held:
            conn.close()


def _refusing_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.fixture(scope="module")
def ends(tmp_path_factory):
    """{name: value}: the addresses and files the table refers to as {name}."""
    folder = tmp_path_factory.mktemp("bad")
    silent, http, tls = _Answering(None), _Answering(HTTP_ANSWER), _Answering(TLS_ALERT)
    files = {
        "empty": "", "hex": "47494f50 01000000 0000000c\n",
        "bad_idl": "module M { interface I { void f(in nosuchtype x); }; };\n",
        "ior_file": "", "struct_idl": "",
    }
    paths = {}
    for name, text in files.items():
        path = folder / f"{name}.txt"
        path.write_text(text)
        paths[name] = str(path)
    os.mkdir(folder / "dir")
    # A package that cannot be imported, put before the real one (a plain install
    # without the optional pyarrow).
    blocked = folder / "blocked"
    (blocked / "pyarrow").mkdir(parents=True)
    (blocked / "pyarrow" / "__init__.py").write_text(
        "raise ImportError('No module named pyarrow')\n")
    with serving_echo() as (process, ior, url):
        port = int(url.split("@")[1].split(":")[1].split("/")[0])
        ior_path = folder / "echo.ior"
        ior_path.write_text(ior[:60] + "\n" + ior[60:] + "\n")
        yield {"refused": f"127.0.0.1:{_refusing_port()}", "silent": f"127.0.0.1:{silent.port}",
               "http": f"127.0.0.1:{http.port}", "tls": f"127.0.0.1:{tls.port}",
               "url": url, "ior": ior, "echo_port": str(port), "dir": str(folder / "dir"),
               "missing": str(folder / "missing.bin"), "idl": ECHO_ALL_IDL,
               "pcap": os.path.join(CAPTURES, "messages.pcap"),
               "malformed_pcap": os.path.join(CAPTURES, "malformed.pcap"),
               "blocked": str(blocked), "out": str(folder / "out"),
               "ior_path": str(ior_path), **paths}
    for server in (silent, http, tls):
        server.close()


# (id, arguments, exit status, a phrase the one line must hold)
TABLE = [
    # decode
    ("decode-missing", ["decode", "-f", "{missing}"], EXIT_USAGE, "does not exist"),
    ("decode-dir", ["decode", "-f", "{dir}"], EXIT_USAGE, "is a directory"),
    ("decode-empty", ["decode", "-f", "{empty}"], EXIT_BAD_INPUT, "no input"),
    ("decode-pcap", ["decode", "-f", "{pcap}"], EXIT_BAD_INPUT, "pycdr pcap"),
    ("decode-not-hex", ["decode", "zz"], EXIT_BAD_INPUT, "hex digit"),
    ("decode-truncated", ["decode", "47494f50"], EXIT_BAD_INPUT, ""),
    ("decode-bad-magic", ["decode", "48545450312e3120343030"], EXIT_BAD_INPUT, ""),
    # pcap
    ("pcap-missing", ["pcap", "{missing}"], EXIT_USAGE, "does not exist"),
    ("pcap-dir", ["pcap", "{dir}"], EXIT_USAGE, "is a directory"),
    ("pcap-empty", ["pcap", "{empty}"], EXIT_BAD_INPUT, ""),
    ("pcap-hex", ["pcap", "{hex}"], EXIT_BAD_INPUT, "pycdr decode"),
    ("pcap-malformed", ["pcap", "{malformed_pcap}"], EXIT_BAD_INPUT, ""),
    ("pcap-bad-idl", ["pcap", "{pcap}", "--idl", "{bad_idl}"], EXIT_BAD_INPUT, "nosuchtype"),
    ("pcap-no-iface", ["pcap", "-i", "nosuchiface0"], EXIT_BAD_INPUT, "nosuchiface0"),
    # ior
    ("ior-garbage", ["ior", "garbage"], EXIT_BAD_INPUT, ""),
    ("ior-bad-hex", ["ior", "IOR:zz"], EXIT_BAD_INPUT, ""),
    ("ior-corbaloc", ["ior", "corbaloc::"], EXIT_BAD_INPUT, ""),
    ("ior-corbaname", ["ior", "corbaname:nothing"], EXIT_BAD_INPUT, ""),
    ("ior-missing-file", ["ior", "{missing}"], EXIT_BAD_INPUT, "missing.bin"),
    ("ior-file-url", ["ior", "file://{missing}"], EXIT_BAD_INPUT, "missing.bin"),
    ("ior-empty-file", ["ior", "{empty}"], EXIT_BAD_INPUT, ""),
    ("ior-dir", ["ior", "{dir}"], EXIT_BAD_INPUT, ""),
    # names
    ("names-refused", ["names", "ls", "--ns", "corbaloc::1.2@{refused}/NameService",
                       "--timeout", "2"], EXIT_UNREACHABLE, ""),
    ("names-bad-ns", ["names", "ls", "--ns", "garbage"], EXIT_BAD_INPUT, "garbage"),
    ("names-bad-ior-file", ["names", "bind", "a", "{missing}", "--ns",
                            "corbaloc::1.2@{refused}/NameService"], EXIT_USAGE, "is no file"),
    # monitor
    ("monitor-missing", ["monitor", "{missing}"], EXIT_USAGE, "does not exist"),
    ("monitor-dir", ["monitor", "{dir}"], EXIT_USAGE, "is a directory"),
    ("monitor-hex", ["monitor", "{hex}"], EXIT_BAD_INPUT, ""),
    ("monitor-bad-ior", ["monitor", "{pcap}", "--ior", "{hex}"], EXIT_BAD_INPUT, "not an IOR"),
    ("monitor-bad-idl", ["monitor", "{pcap}", "--idl", "{bad_idl}"], EXIT_BAD_INPUT,
     "nosuchtype"),
    # explain
    ("explain-nothing", ["explain"], EXIT_USAGE, "CAPTURE"),
    ("explain-not-hex", ["explain", "--request", "zz"], EXIT_USAGE, "hex"),
    ("explain-missing", ["explain", "{missing}"], EXIT_USAGE, "does not exist"),
    ("explain-hex-file", ["explain", "{hex}"], EXIT_BAD_INPUT, ""),
    ("explain-bad-ior", ["explain", "--request", "47494f50", "--ior", "{missing}"],
     EXIT_USAGE, "missing.bin"),
    # proxy (each refused before it listens)
    ("proxy-no-target", ["proxy", "--listen", "127.0.0.1:0"], EXIT_USAGE, "--target"),
    ("proxy-bad-listen", ["proxy", "--listen", "nohostport", "--target", "{refused}"],
     EXIT_USAGE, "nohostport"),
    ("proxy-bad-target", ["proxy", "--listen", "127.0.0.1:0", "--target", "IOR:zz"],
     EXIT_BAD_INPUT, ""),
    ("proxy-empty-rules", ["proxy", "--listen", "127.0.0.1:0", "--target", "{refused}",
                           "--rules", "{empty}"], EXIT_BAD_INPUT, ""),
    ("proxy-rules-dir", ["proxy", "--listen", "127.0.0.1:0", "--target", "{refused}",
                         "--rules", "{dir}"], EXIT_USAGE, "is a directory"),
    # idl
    ("idl-missing", ["idl", "show", "{missing}"], EXIT_USAGE, "does not exist"),
    ("idl-bad", ["idl", "show", "{bad_idl}"], EXIT_BAD_INPUT, "nosuchtype"),
    ("idl-binary", ["idl", "show", "{pcap}"], EXIT_BAD_INPUT, ""),
    ("idl-padding-bad", ["idl", "padding", "{bad_idl}"], EXIT_BAD_INPUT, ""),
    # dissector and capture
    ("dissector-dest-file", ["dissector", "install", "--dest", "{empty}/x"], EXIT_BAD_INPUT, ""),
    ("dissector-types-missing", ["dissector", "install", "--dest", "{out}", "--types",
                                 "{missing}"], EXIT_USAGE, ""),
    ("capture-no-iface", ["capture", "-i", "nosuchiface0", "{out}.pcap"], EXIT_BAD_INPUT,
     "nosuchiface0"),
    ("pcap-no-pyarrow", ["pcap", "{pcap}", "--parquet", "{out}.parquet"], EXIT_BAD_INPUT,
     "pyarrow"),
    # serve
    ("serve-missing", ["serve", "--idl", "{missing}", "--interface", "EchoAll::Echo"],
     EXIT_USAGE, "does not exist"),
    ("serve-bad-idl", ["serve", "--idl", "{bad_idl}", "--interface", "M::I"], EXIT_BAD_INPUT,
     "nosuchtype"),
    ("serve-no-interface", ["serve", "--idl", "{idl}", "--interface", "Nope"], EXIT_BAD_INPUT,
     "EchoAll::Echo"),
    ("serve-port-taken", ["serve", "--idl", "{idl}", "--interface", "EchoAll::Echo",
                          "--port", "{echo_port}"], EXIT_BAD_INPUT, ""),
    ("serve-bad-host", ["serve", "--idl", "{idl}", "--interface", "EchoAll::Echo", "--host",
                        "256.1.1.1"], EXIT_BAD_INPUT, ""),
    # call: the endpoint
    ("call-refused", ["call", "corbaloc::1.2@{refused}/Echo", "echo_long", "7", "--idl", "{idl}",
                      "--timeout", "2"], EXIT_UNREACHABLE, "TCP connect failed"),
    ("call-silent", ["call", "corbaloc::1.2@{silent}/Echo", "echo_long", "7", "--idl", "{idl}",
                     "--timeout", "1"], EXIT_TIMEOUT, "did not answer"),
    ("call-http", ["call", "corbaloc::1.2@{http}/Echo", "echo_long", "7", "--idl", "{idl}",
                   "--timeout", "2"], EXIT_NOT_GIOP, "HTTP"),
    ("call-tls", ["call", "corbaloc::1.2@{tls}/Echo", "echo_long", "7", "--idl", "{idl}",
                  "--timeout", "2"], EXIT_TLS, "--tls"),
    ("call-plain-expected", ["call", "{url}", "echo_long", "7", "--idl", "{idl}", "--tls",
                             "--timeout", "2"], EXIT_TLS, "connect without --tls"),
    ("call-bad-ior", ["call", "IOR:0011", "echo_long", "7", "--idl", "{idl}"], EXIT_BAD_INPUT, ""),
    ("call-bad-corbaloc", ["call", "corbaloc:nope", "echo_long", "7", "--idl", "{idl}"],
     EXIT_BAD_INPUT, ""),
    ("call-bad-corbaname", ["call", "corbaname::", "echo_long", "7", "--idl", "{idl}"],
     EXIT_BAD_INPUT, ""),
    ("call-missing-ior-file", ["call", "{missing}", "echo_long", "7", "--idl", "{idl}"],
     EXIT_BAD_INPUT, "missing.bin"),
    # call: the IDL and the values
    ("call-bad-idl", ["call", "{url}", "f", "1", "--idl", "{bad_idl}"], EXIT_BAD_INPUT,
     "nosuchtype"),
    ("call-idl-missing", ["call", "{url}", "f", "1", "--idl", "{missing}"], EXIT_USAGE,
     "does not exist"),
    ("call-no-op", ["call", "{url}", "nosuchop", "--idl", "{idl}"], EXIT_USAGE, "EchoAll::Echo"),
    ("call-unknown-interface", ["call", "{url}", "echo_long", "1", "--idl", "{idl}",
                                "--interface", "Echo"], EXIT_USAGE, "EchoAll::Echo"),
    ("call-unquoted-string", ["call", "{url}", "echo_string", "hello", "--idl", "{idl}"],
     EXIT_USAGE, "'\"hello\"'"),
    ("call-wrong-type", ["call", "{url}", "echo_long", '"five"', "--idl", "{idl}"], EXIT_USAGE,
     "long"),
    ("call-nan", ["call", "{url}", "echo_long", "NaN", "--idl", "{idl}"], EXIT_USAGE, "long"),
    ("call-huge-double", ["call", "{url}", "echo_double", "1e400", "--idl", "{idl}"],
     EXIT_USAGE, "double"),
    ("call-huge-long", ["call", "{url}", "echo_long", str(2 ** 40), "--idl", "{idl}"],
     EXIT_USAGE, "long"),
    ("call-infinity", ["call", "{url}", "echo_float", "Infinity", "--idl", "{idl}"],
     EXIT_USAGE, "float"),
    ("call-struct-missing", ["call", "{url}", "echo_padding", '{{"c1": "x"}}', "--idl",
                             "{idl}"], EXIT_USAGE, "ll"),
    ("call-struct-extra", ["call", "{url}", "echo_padding", '{{"c1": "x", "ll": 1, "zz": 2}}',
                           "--idl", "{idl}"], EXIT_USAGE, "zz"),
    ("call-arg-count", ["call", "{url}", "echo_long", "--idl", "{idl}"], EXIT_USAGE, "v"),
    # probe
    ("probe-refused", ["probe", "{refused}", "--timeout", "2"], EXIT_UNREACHABLE, "connect"),
    ("probe-silent", ["probe", "{silent}", "--timeout", "1"], EXIT_TIMEOUT, "did not answer"),
    ("probe-http", ["probe", "{http}", "--timeout", "2"], EXIT_NOT_GIOP, "HTTP"),
    ("probe-tls", ["probe", "{tls}", "--timeout", "2"], EXIT_TLS, "--tls"),
    ("probe-plain-expected", ["probe", "127.0.0.1:{echo_port}", "--tls", "--timeout", "2"],
     EXIT_TLS, "connect without --tls"),
    ("probe-bad-target", ["probe", "nonsense"], EXIT_BAD_INPUT, "nonsense"),
    ("probe-bad-port", ["probe", "127.0.0.1:99999"], EXIT_BAD_INPUT, "65535"),
    ("probe-bad-ior", ["probe", "IOR:0011"], EXIT_BAD_INPUT, ""),
    # conformance
    ("conformance-refused", ["conformance", "{refused}"], EXIT_UNREACHABLE, "connect"),
    ("conformance-http", ["conformance", "{http}", "--group", "locate"], EXIT_NOT_GIOP, "HTTP"),
    ("conformance-silent", ["conformance", "{silent}"], EXIT_TIMEOUT, "did not answer"),
    ("conformance-tls", ["conformance", "{tls}"], EXIT_TLS, "--tls"),
    ("conformance-bad-target", ["conformance", "nonsense"], EXIT_BAD_INPUT, "nonsense"),
    # fuzz
    ("fuzz-refused", ["fuzz", "{refused}", "--max-cases", "5", "--out", "{out}"],
     EXIT_UNREACHABLE, "connect"),
    ("fuzz-http", ["fuzz", "{http}", "--max-cases", "5", "--out", "{out}"], EXIT_NOT_GIOP,
     "HTTP"),
    ("fuzz-silent", ["fuzz", "{silent}", "--max-cases", "5", "--out", "{out}"], EXIT_TIMEOUT,
     "did not answer"),
    ("fuzz-bad-target", ["fuzz", "nonsense", "--max-cases", "5", "--out", "{out}"],
     EXIT_BAD_INPUT, "nonsense"),
    ("fuzz-replay-empty", ["fuzz", "{refused}", "--replay", "{dir}"], EXIT_BAD_INPUT, ""),
    # replay
    ("replay-missing", ["replay", "{missing}", "--target", "{refused}"], EXIT_USAGE,
     "does not exist"),
    ("replay-empty", ["replay", "{empty}", "--target", "{refused}"], EXIT_BAD_INPUT, ""),
    ("replay-hex", ["replay", "{hex}", "--target", "{refused}"], EXIT_BAD_INPUT, ""),
    ("replay-refused", ["replay", "{pcap}", "--target", "{refused}"], EXIT_UNREACHABLE,
     "connect"),
    ("replay-http", ["replay", "{pcap}", "--target", "{http}"], EXIT_NOT_GIOP, "HTTP"),
    ("replay-tls", ["replay", "{pcap}", "--target", "{tls}", "--timeout", "1"], EXIT_TLS,
     "--tls"),
    ("replay-bad-target", ["replay", "{pcap}", "--target", "nonsense"], EXIT_USAGE,
     "nonsense"),
    # bench
    ("bench-unknown", ["bench", "nosuch"], EXIT_USAGE, "nosuch"),
    # the group itself
    ("no-such-command", ["nosuch"], EXIT_USAGE, "nosuch"),
    ("no-such-option", ["decode", "--nosuch"], EXIT_USAGE, "--nosuch"),
]


def run(ends, arguments, env_extra=None):
    args = [a.format(**ends) for a in arguments]
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run([PYCDR, *args], capture_output=True, text=True, timeout=120,
                          preexec_fn=_limit_memory, stdin=subprocess.DEVNULL, env=env)


def assert_clean(result, status, phrase=""):
    output = result.stdout + result.stderr
    for mark in REPR_MARKS:
        assert mark not in output, output[-3000:]
    assert result.returncode == status, (result.returncode, output[-3000:])
    assert result.returncode in EXIT_STATUSES
    lines = result.stderr.splitlines()
    # An IDL diagnostic is followed by the source line and a caret under the column, and
    # the count of errors: context of its one line.
    context = {i for i, line in enumerate(lines) if line.strip() == "^"}
    context |= {i - 1 for i in context}
    errors = [line for i, line in enumerate(lines)
              if line.strip() and i not in context and not re.fullmatch(r"\d+ error\(s\)", line)
              # (notes beside the one error line: replay's servers left out)
              and not line.startswith(("WARNING", "warning", "pycdr: warning:", "skipped:"))]
    assert len(errors) == 1, result.stderr[-3000:]
    assert phrase in errors[0], errors[0]


@pytest.mark.parametrize("name, arguments, status, phrase", TABLE, ids=[t[0] for t in TABLE])
def test_bad_input_ends_in_one_line(ends, name, arguments, status, phrase):
    env = {"PYTHONPATH": ends["blocked"]} if name == "pcap-no-pyarrow" else None
    assert_clean(run(ends, arguments, env), status, phrase)


def test_every_command_is_in_the_table():
    from pycdr.cli.main import SUBCOMMANDS, _command_name
    tried = {arguments[0] for _, arguments, _, _ in TABLE}
    assert {_command_name(m, a) for m, a in SUBCOMMANDS} <= tried


def test_no_command_shows_the_help():
    result = subprocess.run([PYCDR], capture_output=True, text=True, timeout=60)
    assert result.stdout.startswith("Usage: pycdr [OPTIONS] COMMAND")
    assert "Exit statuses" in result.stdout and "Traceback" not in result.stderr


def test_an_unexpected_exception_is_one_line_and_a_saved_report(tmp_path):
    # A bug simulated: the decoder of `pycdr decode` raising what no command expects.
    code = ("import sys; import pycdr.cli.decode as d\n"
            "def boom(*a, **k):\n    raise KeyError('the bug')\n"
            "d.decode_stream = boom\n"
            "from pycdr.cli.main import main\n"
            "sys.argv = ['pycdr', 'decode', '47494f50010000000000000000']\n"
            "main()\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path)))
    assert result.returncode == EXIT_INTERNAL
    assert "Traceback" not in result.stderr
    line, = result.stderr.splitlines()
    assert line.startswith("pycdr: internal error: KeyError") and "report saved to" in line
    path = line.rsplit("report saved to ", 1)[1]
    assert path.startswith(str(tmp_path))
    with open(path) as f:
        report = f.read()
    assert "Traceback" in report and "the bug" in report and "decode" in report


def test_call_json_of_a_nan_result_is_json(ends):
    result = run(ends, ["call", "{url}", "echo_double", '"NaN"', "--idl", "{idl}", "--json"])
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"result": "NaN"}
