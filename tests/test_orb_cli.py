"""`pycdr serve`, `pycdr call` and `pycdr probe`, as processes (serve) and through Click."""

import json
import signal
import subprocess

import pytest
from click.testing import CliRunner

from orb_echo_values import ECHO_ALL_IDL
from pycdr.cli.main import EXIT_NOT_GIOP, EXIT_UNREACHABLE, main
from pycdr_serve import PYCDR, serving_echo


@pytest.fixture(params=[(), ("--threads",)], ids=["asyncio", "threads"])
def served(request):
    with serving_echo(*request.param) as (process, ior, url):
        yield process, ior, url


def invoke(*args):
    return CliRunner().invoke(main, list(args))


def test_serve_call_probe_and_shutdown(served):
    process, ior, url = served
    result = invoke("call", url, "echo_mixed", json.dumps(
        {"s": 1, "us": 2, "l": 3, "ul": 4, "ll": 5, "ull": 6, "f": 1.5, "d": 2.5, "b": True,
         "c": "x", "o": 7, "str": "h\u00e9", "hue": "blue"}), "--idl", ECHO_ALL_IDL)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["hue"] == "blue"
    result = invoke("call", ior, "echo_multi", "5", "2.5", "--idl", ECHO_ALL_IDL, "--giop", "1.0",
                    "--little", "--json")
    assert result.exit_code == 0 and json.loads(result.output) == {"result": [5, 2.5]}
    result = invoke("call", url, "echo_long", '"five"', "--idl", ECHO_ALL_IDL)
    assert result.exit_code == 2
    # (a generous per-step timeout: a loaded CI machine must not turn answers into timeouts)
    result = invoke("probe", url, "--is-a", "IDL:EchoAll/Echo:1.0", "--json",
                    "--timeout", "10")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["giop"] and report["highest_version_accepted"] == "1.2"
    refused = report["versions"]["1.3 big-endian"]
    assert refused["outcome"] == "MessageError"
    # Each entry describes the request sent; the answer's own header is reply_*.
    assert (refused["version"], refused["reply_version"]) == ("1.3", "1.2")
    little = report["versions"]["1.0 little-endian"]
    assert little["outcome"] == "LocateReply" and little["little_endian"] is True
    assert "reply_little_endian" in little
    assert report["versions"]["1.0 big-endian"]["little_endian"] is False
    assert report["locate"] == [{"object_key": b"Echo".hex(), "object_key_text": "Echo",
                                 **{k: v for k, v in report["locate"][0].items()
                                    if k not in ("object_key", "object_key_text")}}]
    assert report["locate"][0]["locate_status"] == "OBJECT_HERE"
    assert report["object"]["object_key"] == b"Echo".hex()
    assert report["object"]["is_a"] is True and report["object"]["non_existent"] is False
    port = url.rsplit(":", 1)[1].split("/")[0]
    result = invoke("probe", f"127.0.0.1:{port}", "--json", "--timeout", "10")
    assert result.exit_code == 0
    located = {e["object_key_text"]: e for e in json.loads(result.output)["locate"]}
    assert located["NameService"]["locate_status"] == "UNKNOWN_OBJECT"
    result = invoke("probe", f"127.0.0.1:{port}", "--timeout", "10")
    assert 'LocateRequest 4e616d6553657276696365 "NameService": UNKNOWN_OBJECT' in result.output
    process.send_signal(signal.SIGINT)
    assert process.wait(10) == 0


def test_probe_reports_unreachable_and_not_giop():
    import socket
    import threading
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
    result = invoke("probe", f"127.0.0.1:{port}", "--timeout", "1")
    assert result.exit_code == EXIT_UNREACHABLE
    with socket.socket() as listener:      # an HTTP-ish server
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        def answer():
            conn, _ = listener.accept()
            conn.recv(100)
            conn.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
            conn.close()
        threading.Thread(target=answer, daemon=True).start()
        result = invoke("probe", f"127.0.0.1:{port}", "--json", "--timeout", "1")
    assert result.exit_code == EXIT_NOT_GIOP
    report = json.loads(result.stdout)
    assert report["first_answer"]["outcome"] == "not GIOP"
    assert report["first_answer"]["looks_like"].startswith("an HTTP server")
    assert "answered like an HTTP server" in result.stderr


def test_probe_names_the_vendor_of_a_forward_and_shows_keys_in_hex():
    """A server that forwards every LocateRequest to a real OpenJDK ORB IOR (which has no
    TAG_ORB_TYPE): the probe names the ORB from the object key, and shows keys as hex+text."""
    import socket
    import threading
    from pycdr.errors import PycdrError
    from pycdr.giop.header import parse_header
    from pycdr.giop.messages import LocateReply, LocateStatus, decode_message, encode_message
    from pycdr.codec.ior import ior_from_string
    jdk = next(line.split()[2] for line in open("tests/data/objectkeys/iors.txt")
               if line.startswith("openjdk-orb-10.1.3 persistent "))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    stop = threading.Event()

    def serve():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    data = conn.recv(12)
                    while len(data) < 12 + parse_header(data).size:
                        data += conn.recv(4096)
                    request, _ = decode_message(data)
                    conn.sendall(encode_message(LocateReply(
                        version=request.version, request_id=request.request_id,
                        locate_status=LocateStatus.OBJECT_FORWARD,
                        forward=ior_from_string(jdk))))
                except (OSError, PycdrError):
                    pass
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        key = b"\xaf\xabDemo"
        url = f"corbaloc::127.0.0.1:{port}/%af%abDemo"
        result = invoke("probe", url, "--json", "--timeout", "5")
        report = json.loads(result.output)
        entry = report["locate"][0]
        assert (entry["object_key"], entry["object_key_text"]) == (key.hex(), "..Demo")
        forwarded = entry["forward"]["profiles"][0]
        assert forwarded["vendor"] == "JDK ORB (Sun/OpenJDK/GlassFish)"
        assert forwarded["object_key_info"]["poa_path"] == ["child"]
        assert "\\x" not in result.output
        text = invoke("probe", url, "--timeout", "5").output
        assert 'LocateRequest afab44656d6f "..Demo": OBJECT_FORWARD' in text
        assert "vendor JDK ORB (Sun/OpenJDK/GlassFish)" in text
        assert "key layout: JDK ORB (Sun/OpenJDK/GlassFish) (POA key), POA /child" in text
        assert "\\x" not in text and "vendor None" not in text
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def test_call_reports_a_local_bad_param_as_raised_locally(served):
    """What cannot be marshalled is never reported like a server's exception. An argument
    its IDL type cannot hold (a bound exceeded) is refused before any connection, naming the
    type; a wstring to a GIOP 1.0 address (the version is known only once the reference is
    resolved) gets BAD_PARAM raised here, and the report says nothing was sent."""
    process, ior, url = served
    result = invoke("call", url, "echo_short8", '"far longer than eight"', "--idl", ECHO_ALL_IDL)
    assert result.exit_code == 2, result.output
    assert "exceeds bound 8" in result.output and "string<8>" in result.output
    giop10_url = url.replace("iiop:1.2@", "iiop:1.0@")
    result = invoke("call", giop10_url, "echo_wstring", '"w"', "--idl", ECHO_ALL_IDL)
    assert result.exit_code == 1, result.output
    assert result.output.startswith("BAD_PARAM raised locally, nothing sent: ")
    result = invoke("call", giop10_url, "echo_wstring", '"w"', "--idl", ECHO_ALL_IDL, "--json")
    assert result.exit_code == 1, result.output
    local = json.loads(result.output)["local_exception"]
    assert local["name"] == "BAD_PARAM" and local["raised_locally"] is True
    assert local["reason"]
    # An exception from the server stays a system_exception.
    result = invoke("call", url[:url.rindex("/")] + "/NoSuchKey", "echo_long", "1",
                    "--idl", ECHO_ALL_IDL, "--json")
    assert json.loads(result.output)["system_exception"]["name"] == "OBJECT_NOT_EXIST"


def test_serve_forwards_its_corbaloc_key_to_the_full_ior():
    """--forward-corbaloc: the corbaloc key answers LocateRequest with OBJECT_FORWARD (and
    requests with LOCATION_FORWARD) to the object's IOR, code sets included; omniORBpy and
    JacORB clients resolving the corbaloc reach the object through it."""
    from peers.jacorb import call_from_jacorb
    from peers.omni import run_omni_client
    from pycdr.conformance.echo import ECHO_INTERFACE, load_echo_module
    with serving_echo("--forward-corbaloc") as (process, ior, url):
        assert url.endswith("/Echo")
        report = json.loads(invoke("probe", url, "--json", "--timeout", "10").output)
        located = report["locate"][0]
        assert located["locate_status"] == "OBJECT_FORWARD"
        assert located["forward"]["ior"] == ior
        assert located["forward"]["profiles"][0]["vendor"] == "pycdr"   # its own ORB type
        omni = run_omni_client(url, [("echo_long", 42), ("echo_string", "via forward")],
                               idl=ECHO_ALL_IDL, interface=ECHO_INTERFACE)
        assert [c.get("result") for c in omni] == [42, "via forward"], omni
        echo = load_echo_module().interfaces[ECHO_INTERFACE]
        jacorb = call_from_jacorb(url, echo, [("echo_long", (7,)),
                                              ("echo_wstring", ("w\u00e9\u20ac",))])
        assert [c.get("result") for c in jacorb] == [7, "w\u00e9\u20ac"], jacorb
        process.send_signal(signal.SIGINT)
        assert process.wait(10) == 0


def test_serve_limits_options_reach_the_server():
    # Two stalled connections fill --max-connections 2; a call still gets in (one of
    # them, the one that waited longest, is closed with MessageError).
    import socket
    from pycdr.giop.header import MsgType, encode_header, parse_header
    process = subprocess.Popen(PYCDR + ["serve", ECHO_ALL_IDL, "--interface", "EchoAll::Echo",
                                        "--max-connections", "2", "--max-message-size",
                                        "100000", "--max-incomplete-bytes", "200000",
                                        "--incomplete-timeout", "60"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stalled = []
    try:
        process.stdout.readline()
        url = process.stdout.readline().strip()
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        for _ in range(2):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(encode_header((1, 2), False, MsgType.Request, 50_000) + bytes(100))
            stalled.append(sock)
        result = invoke("call", url, "echo_long", "5", "--idl", ECHO_ALL_IDL)
        assert result.exit_code == 0 and result.output.strip() == "5", result.output
        answers = []
        for sock in stalled:
            sock.settimeout(0.5)
            try:
                answers.append(parse_header(sock.recv(100)).msg_type)
            except socket.timeout:
                answers.append(None)
        assert sorted(answers, key=str) == [MsgType.MessageError, None]
    finally:
        for sock in stalled:
            sock.close()
        process.kill()
        process.wait(10)


def test_serve_threads_refuses_tls():
    result = invoke("serve", ECHO_ALL_IDL, "--interface", "EchoAll::Echo", "--threads",
                    "--tls", ECHO_ALL_IDL, ECHO_ALL_IDL)
    assert result.exit_code == 2 and "--threads serves plain IIOP" in result.output


def test_serve_refuses_a_budget_below_the_message_size():
    result = invoke("serve", ECHO_ALL_IDL, "--interface", "EchoAll::Echo",
                    "--max-message-size", "1000", "--max-incomplete-bytes", "999")
    assert result.exit_code == 2 and "max_incomplete_bytes" in result.output
