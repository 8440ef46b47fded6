"""`pycdr proxy` as a command: what it prints at start, the call lines, --json rows,
the -w capture read back by `pycdr pcap` and replayed by `pycdr replay`, and bad input
as one line."""

import asyncio
import json
import signal
import subprocess

from proxy_support import ECHO
from pycdr_serve import PYCDR, serving_echo
from pycdr.orb import ORB
from pycdr.codec.ior import ior_from_string
from pycdr.orb.client import first_iiop_profile


def start_proxy(*args):
    process = subprocess.Popen(PYCDR + ["proxy", "--listen", "127.0.0.1:0", *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return process


def test_prints_its_reference_relays_and_records(tmp_path):
    rows_file, capture = tmp_path / "calls.jsonl", tmp_path / "proxy.pcap"
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"match": {"operation": "echo_long", "nth": 2},
                                  "action": {"type": "system_exception", "id": "TRANSIENT"}}]))
    with serving_echo() as (server, ior, url):
        proxy = start_proxy("--target", ior, "--json", str(rows_file), "-w", str(capture),
                            "--rules", str(rules), "--route", "127.0.0.1:9")
        try:
            proxied_ior = proxy.stdout.readline().strip()
            proxied_url = proxy.stdout.readline().strip()
            assert proxied_ior.startswith("IOR:"), proxy.stderr.read()
            profile = first_iiop_profile(ior_from_string(proxied_ior))
            assert proxied_url == f"corbaloc:iiop:1.2@127.0.0.1:{profile.port}/Echo"
            assert profile.port != first_iiop_profile(ior_from_string(ior)).port

            async def client():
                async with ORB() as orb:
                    ref = await orb.string_to_object(proxied_url, ECHO)
                    assert await ref.echo_long(1) == 1
                    try:
                        await ref.echo_long(2)
                    except Exception as e:
                        return type(e).__name__
            assert asyncio.run(asyncio.wait_for(client(), 30)) == "TRANSIENT"
            line1 = proxy.stdout.readline()
            line2 = proxy.stdout.readline()
        finally:
            proxy.send_signal(signal.SIGTERM)
            out, err = proxy.communicate(timeout=20)
        # the capture replayed to the server directly: the rule's TRANSIENT was the proxy's
        replayed = subprocess.run(PYCDR + ["replay", str(capture), "--target", ior, "-p",
                                           str(profile.port), "--json", "-"],
                                  capture_output=True, text=True, timeout=60)
    assert proxy.returncode == 0, err
    outcomes = [json.loads(line) for line in replayed.stdout.splitlines()]
    assert replayed.returncode == 1, replayed.stderr
    assert [(c["operation"], c["outcome"]) for c in outcomes] == \
        [("echo_long", "same"), ("echo_long", "different")]
    assert outcomes[1]["differences"] == [{"path": "status", "recorded": "SYSTEM_EXCEPTION",
                                           "replayed": "NO_EXCEPTION"}]
    assert "echo_long NO_EXCEPTION" in line1 and " ms" in line1
    assert "SYSTEM_EXCEPTION IDL:omg.org/CORBA/TRANSIENT:1.0" in line2
    assert line2.rstrip().endswith("{rule 1: system_exception}")
    assert "2 calls" in err
    listening = [line for line in err.splitlines() if line.startswith("proxy: ")]
    assert len(listening) == 2 and listening[1].endswith(" -> 127.0.0.1:9")
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()]
    assert [r["reply_status"] for r in rows] == ["NO_EXCEPTION", "SYSTEM_EXCEPTION"]
    assert rows[1]["faults"][0]["rule"] == 1
    decoded = subprocess.run(PYCDR + ["pcap", str(capture), "--json"], capture_output=True,
                             text=True, timeout=60)
    assert decoded.returncode == 0, decoded.stderr
    messages = [json.loads(line) for line in decoded.stdout.splitlines()]
    kinds = [(m.get("type"), m.get("operation"), m.get("reply_status")) for m in messages]
    assert kinds == [("Request", "echo_long", None), ("Reply", None, "NO_EXCEPTION"),
                     ("Request", "echo_long", None), ("Reply", None, "SYSTEM_EXCEPTION")]


def test_bad_input_is_one_line(tmp_path):
    rules = tmp_path / "rules.json"
    rules.write_text('[{"action": {"type": "explode"}}]')
    run = subprocess.run(PYCDR + ["proxy", "--listen", "127.0.0.1:0", "--target",
                                  "127.0.0.1:1", "--rules", str(rules)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    assert run.stderr.count("\n") == 1 and "unknown action type explode" in run.stderr
    run = subprocess.run(PYCDR + ["proxy", "--listen", "nowhere", "--target", "127.0.0.1:1"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "bad --listen" in run.stderr
    run = subprocess.run(PYCDR + ["proxy", "--listen", "127.0.0.1:0", "--target", "IOR:zz"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and run.stderr.count("\n") == 1
    assert "Traceback" not in run.stderr


def test_a_port_in_use_is_one_line():
    import socket
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        run = subprocess.run(PYCDR + ["proxy", "--listen", f"127.0.0.1:{port}", "--target",
                                      "127.0.0.1:1"], capture_output=True, text=True,
                             timeout=60)
    assert run.returncode == 2
    assert run.stderr.startswith("error: cannot listen") and run.stderr.count("\n") == 1


def test_bytes_it_cannot_frame_go_on_and_it_says_so_in_one_line():
    import socket
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(20)
    proxy = start_proxy("--target", f"127.0.0.1:{listener.getsockname()[1]}")
    try:
        # no reference to print for a HOST:PORT target: "proxy: LISTEN -> TARGET" names the port
        started = proxy.stderr.readline().split()
        assert started[0] == "proxy:" and started[2] == "->", started
        port = int(started[1].rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as client:
            upstream, _ = listener.accept()
            client.sendall(b"GET / HTTP/1.0\r\n\r\n")
            got = b""
            upstream.settimeout(20)
            while len(got) < 18:
                got += upstream.recv(64)
            assert got == b"GET / HTTP/1.0\r\n\r\n"         # the server's to answer
            upstream.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
            client.settimeout(20)
            assert client.recv(64) == b"HTTP/1.0 400 Bad Request\r\n\r\n"
            notice = proxy.stderr.readline()
            upstream.close()
    finally:
        proxy.send_signal(signal.SIGTERM)
        proxy.communicate(timeout=20)
        listener.close()
    assert notice.startswith("proxy: client 127.0.0.1:") and notice.count("\n") == 1
    assert "relayed byte for byte from here on" in notice and "Traceback" not in notice

