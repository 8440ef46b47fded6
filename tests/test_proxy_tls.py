"""pycdr proxy over TLS: it terminates TLS from the client and originates it to a
TLS-only server; the references it hands out are TLS-only references to itself (port 0
in the profile, its TLS port in TAG_SSL_SEC_TRANS and CSIv2's TAG_TLS_SEC_TRANS)."""

import pytest

from proxy_support import ECHO, proxied, run
from pycdr.addressing.iiop import SSLSecTrans
from pycdr.codec.ior import ior_to_string
from pycdr.orb import ORB, EchoServant, Server
from pycdr.orb.client import first_iiop_profile
from pycdr.orb.tls import TLSOptions, server_context, tls_endpoints
from tls_certs import make_certificates


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("certs"))


def test_tls_on_both_sides_and_tls_references_rewritten(certs):
    async def main():
        context = server_context(str(certs.server.cert), str(certs.server.key))
        server = Server(tls=context, plain=False)
        key = server.activate(EchoServant(ECHO), "Echo")
        await server.start()
        client_tls = TLSOptions(cacert=str(certs.ca))
        upstream = ("127.0.0.1", server.tls_port)
        async with proxied([upstream], server_ssl=context, tls_upstream=True,
                           upstream_ssl=client_tls.client_context()) as (proxy, rows):
            moved, changes = proxy.core.rewriter.rewrite(server.ior(key))
            assert changes
            profile = first_iiop_profile(moved)
            assert profile.port == 0
            assert [e.port for e in tls_endpoints(profile)] == [proxy.listeners[0].port] * 2
            async with ORB(tls=client_tls) as orb:
                ref = await orb.string_to_object(ior_to_string(moved), ECHO)
                assert await ref.echo_long(5) == 5
                returned = await ref.echo_object(server.ior(key))
                ssl = [c for c in first_iiop_profile(returned).components
                       if isinstance(c, SSLSecTrans)]
                assert [c.port for c in ssl] == [proxy.listeners[0].port]
        await server.stop()
        return rows
    rows = run(main())
    assert [r["operation"] for r in rows] == ["echo_long", "echo_object"]
    assert all(r["outcome"] == "success" for r in rows)


def test_the_command_terminates_and_originates_tls(certs):
    import asyncio
    import signal
    import subprocess

    from orb_echo_values import ECHO_ALL_IDL, ECHO_INTERFACE
    from pycdr_serve import PYCDR, serving_tls
    with serving_tls(ECHO_ALL_IDL, ECHO_INTERFACE, certs.server.cert, certs.server.key) \
            as (server, ior):
        proxy = subprocess.Popen(PYCDR + [
            "proxy", "--listen", "127.0.0.1:0", "--target", ior, "-q",
            "--listen-tls-cert", str(certs.server.cert), "--listen-tls-key", str(certs.server.key),
            "--cacert", str(certs.ca)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        try:
            proxied = proxy.stdout.readline().strip()
            url = proxy.stdout.readline().strip()
            assert proxied.startswith("IOR:"), proxy.stderr.read()
            assert url.startswith("corbaloc:ssliop:1.2@127.0.0.1:")

            async def client():
                async with ORB(tls=TLSOptions(cacert=str(certs.ca))) as orb:
                    for text in (proxied, url):
                        ref = await orb.string_to_object(text, ECHO)
                        assert await ref.echo_long(3) == 3
            asyncio.run(asyncio.wait_for(client(), 30))
        finally:
            proxy.send_signal(signal.SIGTERM)
            _, err = proxy.communicate(timeout=20)
    assert proxy.returncode == 0, err
    assert "2 calls (2 success)" in err
