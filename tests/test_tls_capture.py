"""GIOP inside TLS reaches the analyzers: the ORB client writes SSLKEYLOGFILE, tshark captures
the loopback traffic, and with the key log Wireshark's TLS dissector hands the decrypted IIOP
to the project's Lua dissector (its "tls" heuristic); without the key log nothing is GIOP.
`pycdr decode` gets the decrypted bytes of each direction from tshark's "follow,tls,raw"
(the route docs/tls.md documents for captures of IIOP over TLS)."""

import asyncio
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

pytest.importorskip("cryptography")

from orb_echo_values import ECHO_INTERFACE, load_echo_module  # noqa: E402
from peers.process import REPO_ROOT, PeerProcess, free_port  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from pycdr.cli.main import main as pycdr_main  # noqa: E402
from pycdr.orb import ORB, EchoServant, Server  # noqa: E402
from pycdr.orb.tls import TLSOptions, server_context  # noqa: E402
from tls_certs import make_certificates  # noqa: E402

TSHARK = shutil.which("tshark")
LUA = os.path.join(REPO_ROOT, "dissector", "pycdr_giop.lua")
pytestmark = pytest.mark.skipif(TSHARK is None or os.geteuid() != 0,
                                reason="needs tshark and root (a capture on lo)")
ECHO = load_echo_module().interfaces[ECHO_INTERFACE]


def test_key_log_lets_the_lua_dissector_decode_giop_in_tls(tmp_path, monkeypatch):
    certs = make_certificates(tmp_path / "certs")
    keylog = tmp_path / "keys.log"
    capture = tmp_path / "tls.pcapng"
    port = free_port()
    tshark = PeerProcess("tshark", [TSHARK, "-i", "lo", "-f", f"tcp port {port}", "-w",
                                    str(capture)])
    try:
        tshark.wait_for_line(lambda line: "Capturing on" in line, 30, stream="stderr")
        time.sleep(2.0)            # (dumpcap says so a little before it captures)
        monkeypatch.setenv("SSLKEYLOGFILE", str(keylog))

        async def main():
            server = Server(tls=server_context(str(certs.server.cert), str(certs.server.key)),
                            tls_port=port, plain=False)
            key = server.activate(EchoServant(ECHO), "Echo")
            await server.start()
            try:
                async with ORB(tls=TLSOptions(cacert=str(certs.ca))) as orb:
                    ref = await orb.string_to_object(server.ior_string(key), ECHO)
                    assert await ref.echo_string("secret over TLS") == "secret over TLS"
            finally:
                await server.stop()
        asyncio.run(asyncio.wait_for(main(), 30))
        time.sleep(1.0)            # let the capture take the last packets
    finally:
        if tshark.process.poll() is None:
            tshark.process.send_signal(signal.SIGINT)
            tshark.process.wait(20)
        tshark.stop()
    assert "CLIENT_HANDSHAKE_TRAFFIC_SECRET" in keylog.read_text()

    def giopx_fields(*options):
        done = subprocess.run([TSHARK, "-r", str(capture), "-X", f"lua_script:{LUA}", *options,
                               "-Y", "giopx", "-T", "fields", "-e", "giopx.operation",
                               "-e", "giopx.type"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return [line.split("\t") for line in done.stdout.splitlines() if line.strip()]
    decoded = giopx_fields("-o", f"tls.keylog_file:{keylog}")
    assert ["echo_string", "0"] in decoded          # the Request
    assert any(fields[1] == "1" for fields in decoded)   # its Reply
    assert giopx_fields() == []                     # without the key log: TLS only
    raw = capture.read_bytes()
    assert b"secret over TLS" not in raw            # (it was encrypted on the wire)

    # The route for pycdr: tshark decrypts and follows the stream, pycdr decodes each direction.
    done = subprocess.run([TSHARK, "-r", str(capture), "-o", f"tls.keylog_file:{keylog}", "-q",
                           "-z", "follow,tls,raw,0"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    directions = {True: "", False: ""}        # (tshark indents the second node's bytes)
    for line in done.stdout.splitlines():
        chunk = line.strip()
        if chunk and all(c in "0123456789abcdef" for c in chunk):
            directions[line.startswith("\t")] += chunk
    messages = []
    for hex_bytes in directions.values():
        result = CliRunner().invoke(pycdr_main, ["decode", "--json", hex_bytes])
        assert result.exit_code == 0, result.output
        # JSON Lines: one object a message.
        messages += [json.loads(line) for line in result.stdout.splitlines()]
    # (and the CloseConnection the server sends as it stops)
    assert sorted((m["type"], m.get("operation")) for m in messages) == \
        [("CloseConnection", None), ("Reply", None), ("Request", "echo_string")]
