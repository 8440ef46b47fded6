"""IIOP over TLS with the reference ORB on both sides: the endpoint chosen from the IOR's
TAG_SSL_SEC_TRANS / CSIv2 TAG_TLS_SEC_TRANS (port 0 in the profile), --tls for a plain
reference, corbaloc:ssliop:, and every failure named by its step (TCP connect, TLS
handshake, server certificate not trusted and why, client certificate required)."""

import asyncio
import shutil

import pytest

pytest.importorskip("cryptography")

from orb_echo_values import ECHO_INTERFACE, load_echo_module  # noqa: E402
from pycdr.addressing.corbaloc import parse_corbaloc  # noqa: E402
from pycdr.giop.sysexc import COMM_FAILURE, TRANSIENT  # noqa: E402
from pycdr.addressing.iiop import CSISecMechList, SSLSecTrans, TLSSecTrans, decode_profile
from pycdr.codec.ior import ior_from_string  # noqa: E402
from pycdr.orb import ORB, EchoServant, Server  # noqa: E402
from pycdr.orb.client import first_iiop_profile  # noqa: E402
from pycdr.orb.tls import (STEP_CERTIFICATE, STEP_CLIENT_CERTIFICATE,  # noqa: E402
                           STEP_HANDSHAKE, STEP_TCP, TLSOptions, TransportError,
                           choose_endpoint, server_context, transport_error_of)
from peers.process import PeerProcess, free_port  # noqa: E402
from tls_certs import make_certificates  # noqa: E402

MODULE = load_echo_module()
ECHO = MODULE.interfaces[ECHO_INTERFACE]


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("certs"))


def run(coroutine, timeout=30):
    return asyncio.run(asyncio.wait_for(coroutine, timeout))


async def start(certs, *, plain=False, client_ca=None, issued=None):
    issued = issued or certs.server
    server = Server(tls=server_context(str(issued.cert), str(issued.key), client_ca),
                    plain=plain)
    key = server.activate(EchoServant(ECHO), "Echo")
    await server.start()
    return server, key


def test_tls_only_ior_has_port_0_and_both_components(certs):
    async def main():
        server, key = await start(certs, client_ca=str(certs.ca))
        try:
            ior = ior_from_string(server.ior_string(key))
            profile = decode_profile(ior.profiles[0])
            assert profile.port == 0
            ssl_component = profile.component(SSLSecTrans)
            assert ssl_component.port == server.tls_port
            assert ssl_component.target_requires & 0x40      # EstablishTrustInClient
            mech = profile.component(CSISecMechList).mechanisms[0]
            assert isinstance(mech.transport_mech, TLSSecTrans)
            assert mech.transport_mech.addresses == (("127.0.0.1", server.tls_port),)
            endpoint = choose_endpoint(profile)
            assert (endpoint.port, endpoint.tls, endpoint.source) == \
                (server.tls_port, True, "TAG_SSL_SEC_TRANS")
            assert server.corbaloc(key).startswith("corbaloc:ssliop:1.2@127.0.0.1:")
        finally:
            await server.stop()
    run(main())


def test_csiv2_only_reference_is_reached_over_tls(certs):
    """A reference whose only TLS address is in the CSIv2 mechanism list (WebLogic,
    WebSphere): the client takes host and port from TAG_TLS_SEC_TRANS."""
    async def main():
        server, key = await start(certs)
        try:
            ior = server.ior(key)
            profile = first_iiop_profile(ior)
            csi_only = profile.__class__(profile.version, "192.0.2.1", 0, profile.object_key,
                                         tuple(c for c in profile.components
                                               if not isinstance(c, SSLSecTrans)))
            endpoint = choose_endpoint(csi_only)
            assert (endpoint.host, endpoint.port, endpoint.source) == \
                ("127.0.0.1", server.tls_port, "CSIv2 TAG_TLS_SEC_TRANS")
            from pycdr.addressing.iiop import make_ior
            async with ORB(tls=TLSOptions(cacert=str(certs.ca))) as orb:
                ref = orb.object(make_ior(ior.type_id, [csi_only]), ECHO)
                assert await ref.echo_long(7) == 7
        finally:
            await server.stop()
    run(main())


def test_echo_over_tls_from_the_ior_and_from_ssliop_and_tls_option(certs):
    async def main():
        server, key = await start(certs, plain=True)
        try:
            opts = TLSOptions(cacert=str(certs.ca))
            async with ORB(tls=opts) as orb:
                ref = await orb.string_to_object(server.ior_string(key), ECHO)
                assert ref.endpoint.tls and ref.endpoint.port == server.tls_port
                assert await ref.echo_string("über TLS") == "über TLS"
                ssliop = f"corbaloc:ssliop:1.2@127.0.0.1:{server.tls_port}/Echo"
                ref = await orb.string_to_object(ssliop, ECHO)
                assert ref.endpoint.tls
                assert await ref.echo_long(-5) == -5
            # corbaloc:iiop: at the TLS port, with --tls
            async with ORB(tls=TLSOptions(force=True, cacert=str(certs.ca))) as orb:
                ref = await orb.string_to_object(
                    f"corbaloc:iiop:1.2@127.0.0.1:{server.tls_port}/Echo", ECHO)
                assert await ref.echo_double(2.5) == 2.5
            # and the same server's plain port still answers without TLS
            async with ORB() as orb:
                ref = await orb.string_to_object(server.corbaloc(key), ECHO)
                assert not ref.endpoint.tls
                assert await ref.echo_long(3) == 3
        finally:
            await server.stop()
    run(main())


def failure(coroutine_factory):
    """The TransportError behind the system exception an invocation raised."""
    async def main():
        try:
            await coroutine_factory()
        except (TRANSIENT, COMM_FAILURE) as e:
            error = transport_error_of(e)
            assert error is not None, f"no TransportError behind {e!r}"
            return error
        raise AssertionError("the invocation succeeded")
    return run(main())


def invoke(url_of, options):
    async def call():
        async with ORB(tls=options, connect_timeout=3, timeout=5) as orb:
            ref = await orb.string_to_object(url_of(), ECHO)
            await ref.echo_long(1)
    return call


@pytest.mark.parametrize("case,step,words", [
    ("untrusted", STEP_CERTIFICATE, "unable to get local issuer certificate"),
    ("expired", STEP_CERTIFICATE, "expired"),
    ("wrong_host", STEP_CERTIFICATE, "mismatch"),
    # (the server's alert reaches the client when it reads: OpenSSL on the server's socket
    # sends certificate_required / unknown_ca, as omniORB does)
    ("no_client_cert", STEP_CLIENT_CERTIFICATE, "requires a client certificate"),
    ("client_cert_other_ca", STEP_CLIENT_CERTIFICATE, "client certificate"),
    ("plain_port", STEP_HANDSHAKE, "does not speak TLS"),
    ("closed_port", STEP_TCP, "refused"),
])
def test_failures_name_their_step(certs, case, step, words):
    issued = {"untrusted": certs.untrusted_server, "expired": certs.expired,
              "wrong_host": certs.wrong_host}.get(case, certs.server)
    client_ca = str(certs.ca) if case in ("no_client_cert", "client_cert_other_ca") else None
    options = TLSOptions(force=True, cacert=str(certs.ca))
    if case == "client_cert_other_ca":
        options = TLSOptions(force=True, cacert=str(certs.ca),
                             cert=str(certs.untrusted_client.cert),
                             key=str(certs.untrusted_client.key))

    async def scenario():
        server, key = await start(certs, plain=True, client_ca=client_ca, issued=issued)
        port = {"plain_port": server.port}.get(case, server.tls_port)
        await_stop = server.stop
        if case == "closed_port":
            await server.stop()
            await_stop = None
        try:
            await invoke(lambda: f"corbaloc:iiop:1.2@127.0.0.1:{port}/Echo", options)()
        finally:
            if await_stop:
                await await_stop()
    error = failure(scenario)
    assert isinstance(error, TransportError)
    assert error.step == step, str(error)
    assert words in str(error), str(error)


def test_client_certificate_accepted_and_insecure(certs):
    async def main():
        server, key = await start(certs, client_ca=str(certs.ca))
        try:
            with_cert = TLSOptions(cacert=str(certs.ca), cert=str(certs.client.cert),
                                   key=str(certs.client.key))
            async with ORB(tls=with_cert) as orb:
                ref = await orb.string_to_object(server.ior_string(key), ECHO)
                assert await ref.echo_long(11) == 11
        finally:
            await server.stop()
        server, key = await start(certs, issued=certs.untrusted_server)
        try:
            async with ORB(tls=TLSOptions(insecure=True)) as orb:
                ref = await orb.string_to_object(server.ior_string(key), ECHO)
                assert await ref.echo_long(12) == 12
        finally:
            await server.stop()
    run(main())


def test_ssliop_corbaloc_builds_a_tls_only_profile():
    loc = parse_corbaloc("corbaloc:ssliop:h.example:4433/K")
    profile = first_iiop_profile(loc.to_ior())
    assert (profile.port, profile.version) == (0, (1, 1))
    endpoint = choose_endpoint(profile)
    assert (endpoint.host, endpoint.port, endpoint.tls) == ("h.example", 4433, True)
    assert loc.to_url() == "corbaloc:ssliop:1.0@h.example:4433/K"


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
@pytest.mark.parametrize("client,words", [
    (None, "TLSV13_ALERT_CERTIFICATE_REQUIRED"),
    ("untrusted_client", "the server rejected the client certificate (TLSV1_ALERT_UNKNOWN_CA)"),
])
def test_client_certificate_alerts_from_openssl_s_server(certs, client, words):
    """A TLS server that shares no code with pycdr (OpenSSL's s_server) sends TLS 1.3's
    certificate_required alert, or unknown_ca for a client certificate it does not trust,
    after the handshake: the client names that step."""
    options = TLSOptions(cacert=str(certs.ca))
    if client:
        issued = getattr(certs, client)
        options = TLSOptions(cacert=str(certs.ca), cert=str(issued.cert), key=str(issued.key))
    port = free_port()
    server = PeerProcess("openssl-s_server", [
        "openssl", "s_server", "-accept", f"127.0.0.1:{port}", "-cert", str(certs.server.cert),
        "-key", str(certs.server.key), "-Verify", "1", "-verify_return_error",
        "-CAfile", str(certs.ca)])
    try:
        server.wait_for_line(lambda line: "ACCEPT" in line, 10)
        error = failure(invoke(lambda: f"corbaloc:ssliop:1.2@127.0.0.1:{port}/Echo",
                               options))
    finally:
        server.stop()
    assert error.step == STEP_CLIENT_CERTIFICATE, str(error)
    assert words in str(error)


def test_sni_and_host_name_check_use_the_profiles_host(certs):
    """The host of the reference (here "localhost") goes out as SNI and is the name the
    certificate must carry."""
    async def main():
        context = server_context(str(certs.server.cert), str(certs.server.key))
        names = []
        context.sni_callback = lambda ssl_object, name, ctx: names.append(name)
        server = Server(tls=context, plain=False)
        server.activate(EchoServant(ECHO), "Echo")
        await server.start()
        try:
            async with ORB(tls=TLSOptions(cacert=str(certs.ca))) as orb:
                ref = await orb.string_to_object(
                    f"corbaloc:ssliop:1.2@localhost:{server.tls_port}/Echo", ECHO)
                assert await ref.echo_long(4) == 4
        finally:
            await server.stop()
        return names
    assert run(main()) == ["localhost"]


def test_large_and_concurrent_calls_over_tls(certs):
    """What the client's TLS transport (pycdr.orb.tlstransport) must carry beyond a small
    call: messages larger than the socket buffers (writes that wait for the socket, held
    whole and sent in order), many calls in flight on one connection, and a connection
    closed and opened again."""
    async def main():
        server, key = await start(certs)
        try:
            async with ORB(tls=TLSOptions(cacert=str(certs.ca))) as orb:
                ref = await orb.string_to_object(server.ior_string(key), ECHO)
                # (larger than the socket buffers; 3 MiB stalls the server even on plain
                # TCP, not a TLS matter: "message incomplete after 10.0 s")
                big = bytes(range(256)) * (6 << 10)               # 1.5 MiB
                assert await ref.echo_octets(big) == big
                texts = [f"call {i} " * (i % 50) for i in range(200)]
                assert await asyncio.gather(*(ref.echo_string(t) for t in texts)) == texts
                sent = [bytes([i]) * (300_000 + i) for i in range(6)]
                assert await asyncio.gather(*(ref.echo_octets(b) for b in sent)) == sent
            async with ORB(tls=TLSOptions(cacert=str(certs.ca))) as orb:
                ref = await orb.string_to_object(server.ior_string(key), ECHO)
                assert await ref.echo_long(9) == 9
        finally:
            await server.stop()
    run(main(), timeout=120)


class _Recorder(asyncio.BufferedProtocol):
    """A protocol that keeps what it receives and counts flow-control calls."""

    def __init__(self):
        self.buffer = bytearray(1 << 16)
        self.received = bytearray()
        self.paused = self.resumed = 0
        self.lost = asyncio.get_running_loop().create_future()

    def get_buffer(self, sizehint):
        return self.buffer

    def buffer_updated(self, nbytes):
        self.received += self.buffer[:nbytes]

    def pause_writing(self):
        self.paused += 1

    def resume_writing(self):
        self.resumed += 1

    def connection_lost(self, exc):
        self.lost.set_result(exc)


def test_tls_transport_holds_what_the_socket_cannot_take(certs):
    """pycdr.orb.tlstransport over a socket pair whose other end (ssl, blocking, in a thread)
    does not read at first: the writes wait whole in order, the protocol is paused above the
    high-water mark and resumed when the peer has read, every byte arrives; the peer's bytes
    reach the protocol; close sends close_notify and connection_lost comes once."""
    import os
    import socket

    from pycdr.orb.tlstransport import TLSSocketTransport, handshake

    async def main():
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair()
        ours.setblocking(False)
        client = TLSOptions(cacert=str(certs.ca)).client_context().wrap_socket(
            ours, server_hostname="127.0.0.1", do_handshake_on_connect=False)
        server = server_context(str(certs.server.cert), str(certs.server.key)).wrap_socket(
            theirs, server_side=True, do_handshake_on_connect=False)
        await asyncio.gather(handshake(loop, client), asyncio.to_thread(server.do_handshake))
        protocol = _Recorder()
        transport = TLSSocketTransport(loop, client, protocol)
        chunks = [os.urandom(1 << 20) for _ in range(6)]
        for chunk in chunks:
            transport.write(chunk)
        assert protocol.paused == 1 and transport.get_write_buffer_size() > 0

        def read_all(n):
            got = bytearray()
            while len(got) < n:
                got += server.recv(n - len(got))
            return bytes(got)
        sent = b"".join(chunks)
        assert await asyncio.to_thread(read_all, len(sent)) == sent
        while transport.get_write_buffer_size():
            await asyncio.sleep(0.01)
        assert protocol.resumed == 1
        answer = os.urandom(300_000)
        await asyncio.to_thread(server.sendall, answer)
        while len(protocol.received) < len(answer):
            await asyncio.sleep(0.01)
        assert protocol.received == answer
        transport.close()
        assert await protocol.lost is None and transport.is_closing()
        assert await asyncio.to_thread(server.recv, 10) == b""       # close_notify
        server.close()
    run(main())
