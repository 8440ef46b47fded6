"""IIOP over TLS (SSLIOP / CSIv2 transport): contexts, endpoint choice, failures by step.

Where a reference's TLS endpoint is:
  - TAG_SSL_SEC_TRANS (SSLIOP::SSL, omniORB, TAO, JacORB): the TLS port on the profile's host;
  - CSIv2 TAG_CSI_SEC_MECH_LIST whose transport mechanism is TAG_TLS_SEC_TRANS (WebLogic,
    WebSphere, WildFly, GlassFish, JacORB): host/port pairs of their own;
  - a bare TAG_TLS_SEC_TRANS component (as some ORBs put it beside the list).
A profile whose port is 0 has no plain endpoint at all.

Connecting goes in named steps (TCP connect, TLS handshake, GIOP) so a failure says which
one failed: :class:`TransportError` carries the step and a sentence on the cause
(certificate not trusted and why, server requires a client certificate, not TLS at all).
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import ipaddress
import os
import socket
import ssl
from dataclasses import dataclass, replace

try:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa
except ImportError:           # the tls extra; without it probe reports fingerprints only
    x509 = None

from ..errors import PycdrError
from ..addressing.csiv2 import CONFIDENTIALITY, ESTABLISH_TRUST_IN_CLIENT, ESTABLISH_TRUST_IN_TARGET, INTEGRITY, CompoundSecMech, CSISecMechList, TLSSecTrans, association_options, tls_transports
from ..addressing.iiop import IIOPProfile, SSLSecTrans
from .tlstransport import TLSSocketTransport, handshake

# The steps of reaching an endpoint, in order.
STEP_TCP = "TCP connect"
STEP_HANDSHAKE = "TLS handshake"
STEP_CERTIFICATE = "server certificate"
STEP_CLIENT_CERTIFICATE = "client certificate"
STEP_GIOP = "GIOP"

# OpenSSL's reason for the alert a TLS 1.3 server sends when it wants a client certificate
# it did not get (after the client's Finished, so the client sees it on its first read).
_CLIENT_CERT_REQUIRED = ("TLSV13_ALERT_CERTIFICATE_REQUIRED",)
_CLIENT_CERT_REJECTED = ("TLSV1_ALERT_UNKNOWN_CA", "SSLV3_ALERT_CERTIFICATE_UNKNOWN",
                         "SSLV3_ALERT_BAD_CERTIFICATE", "SSLV3_ALERT_CERTIFICATE_EXPIRED",
                         "TLSV1_ALERT_DECRYPT_ERROR")
# handshake_failure says no more than that: no protocol version or cipher suite in common
# (JSSE sends it when its key store has no usable key), or a TLS 1.2 server's missing
# client certificate.
_HANDSHAKE_FAILURE = "SSLV3_ALERT_HANDSHAKE_FAILURE"
# A reply in clear text where a ServerHello was expected: the port speaks plain IIOP.
_NOT_TLS = ("WRONG_VERSION_NUMBER", "UNKNOWN_PROTOCOL", "RECORD_LAYER_FAILURE",
            "PACKET_LENGTH_TOO_LONG", "HTTP_REQUEST")


class TLSConfigError(PycdrError):
    """A certificate, key or CA file that cannot be used (named in the message)."""


class TransportError(OSError, PycdrError):
    """Reaching an endpoint failed at ``step`` (one of the STEP_ names); the message says
    why.  An OSError, so code that treats an unreachable endpoint as OSError keeps doing so."""

    def __init__(self, step: str, detail: str, host: str = "", port: int = 0):
        super().__init__(f"{step} to {host}:{port} failed: {detail}" if host else
                         f"{step} failed: {detail}")
        self.step = step
        self.detail = detail
        self.host = host
        self.port = port


# ----------------------------------------------------------------------------
# Options and contexts
@dataclass(frozen=True)
class TLSOptions:
    """The client side's TLS choices, shared by every connecting command.

    ``force``: use TLS where the reference itself does not say so (a corbaloc:iiop URL or
    host:port given with --tls).  ``insecure``: no certificate or host-name verification."""
    force: bool = False
    cacert: str | None = None
    cert: str | None = None
    key: str | None = None
    insecure: bool = False

    def client_context(self) -> ssl.SSLContext:
        """The SSLContext: verification against ``cacert`` (else the system's CAs) with
        host-name checking, the client certificate if given.  A key log is written when
        SSLKEYLOGFILE is set (ssl.create_default_context reads it)."""
        try:
            ctx = ssl.create_default_context(cafile=self.cacert)
            if self.insecure:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            if self.cert:
                ctx.load_cert_chain(self.cert, self.key)
        except (OSError, ssl.SSLError, ValueError) as e:
            raise TLSConfigError(f"cannot use the TLS files: {_reason(e)}") from e
        return ctx


DEFAULT_TLS = TLSOptions()


def server_context(cert: str, key: str | None = None,
                   client_ca: str | None = None) -> ssl.SSLContext:
    """A server SSLContext; with ``client_ca``, clients must present a certificate that
    CA signed."""
    try:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        if client_ca:
            ctx.load_verify_locations(cafile=client_ca)
            ctx.verify_mode = ssl.CERT_REQUIRED
    except (OSError, ssl.SSLError, ValueError) as e:
        raise TLSConfigError(f"cannot use the server's TLS files: {_reason(e)}") from e
    return ctx


# ----------------------------------------------------------------------------
# Where to connect
@dataclass(frozen=True)
class Endpoint:
    """One address to reach a profile at, and whether TLS is spoken there."""
    host: str
    port: int
    tls: bool = False
    source: str = "IIOP profile"      # the component (or option) the address came from
    target_supports: int = 0
    target_requires: int = 0

    @property
    def key(self) -> tuple:
        return (self.host, self.port, self.tls)

    def describe(self) -> str:
        return f"{self.host}:{self.port} ({'TLS' if self.tls else 'plain TCP'}, {self.source})"

    @property
    def client_auth_required(self) -> bool:
        return bool(self.target_requires & ESTABLISH_TRUST_IN_CLIENT)

    def to_json(self) -> dict:
        return {"host": self.host, "port": self.port, "tls": self.tls, "source": self.source,
                "target_supports": association_options(self.target_supports),
                "target_requires": association_options(self.target_requires)}


def tls_endpoints(profile: IIOPProfile) -> list:
    """The TLS endpoints a profile advertises: SSLIOP's, then CSIv2's (in component order)."""
    found = [Endpoint(profile.host, c.port, True, "TAG_SSL_SEC_TRANS", c.target_supports,
                      c.target_requires) for c in profile.components
             if isinstance(c, SSLSecTrans)]
    found += [Endpoint(host, port, True, source, trans.target_supports, trans.target_requires)
              for source, trans in tls_transports(profile.components)
              for host, port in trans.addresses]
    return [e for e in found if e.port != 0]


def plain_endpoint(profile: IIOPProfile) -> Endpoint | None:
    """The profile's own address, unless its port is 0 (TLS only)."""
    return Endpoint(profile.host, profile.port) if profile.port else None


def choose_endpoint(profile: IIOPProfile, options: TLSOptions = DEFAULT_TLS) -> Endpoint:
    """Where a client connects for ``profile``: a TLS endpoint when the profile offers one
    (a client that can speak TLS uses it), else the profile's address, over TLS when
    ``options.force``."""
    offered = tls_endpoints(profile)
    if offered:
        return offered[0]
    if options.force:
        return Endpoint(profile.host, profile.port, True, "--tls")
    return Endpoint(profile.host, profile.port)


# ----------------------------------------------------------------------------
# Failures by step
def _reason(e: BaseException) -> str:
    if isinstance(e, ssl.SSLCertVerificationError):
        return e.verify_message or str(e)
    if isinstance(e, ssl.SSLError):
        return e.reason or str(e)
    if isinstance(e, OSError) and e.errno:
        return os.strerror(e.errno)        # (asyncio's own text omits the cause)
    return str(e) or type(e).__name__


def classify(e: BaseException, step: str, host: str = "", port: int = 0) -> TransportError:
    """The TransportError for ``e`` raised during ``step``; ssl's own exceptions name the
    step they belong to more precisely (certificate, client certificate)."""
    if isinstance(e, TransportError):
        return e
    if isinstance(e, ssl.SSLCertVerificationError):
        return TransportError(STEP_CERTIFICATE, f"not trusted: {_reason(e)}", host, port)
    if isinstance(e, ssl.SSLError):
        reason = e.reason or ""
        if reason in _CLIENT_CERT_REQUIRED:
            return TransportError(STEP_CLIENT_CERTIFICATE,
                                  f"the server requires a client certificate ({reason}); "
                                  "give one with --tls-cert/--tls-key", host, port)
        if reason in _CLIENT_CERT_REJECTED:
            return TransportError(STEP_CLIENT_CERTIFICATE,
                                  f"the server rejected the client certificate ({reason})",
                                  host, port)
        if reason == _HANDSHAKE_FAILURE:
            return TransportError(STEP_HANDSHAKE, "the server refused the handshake "
                                  f"({reason}): no protocol version or cipher suite in "
                                  "common, or (TLS 1.2) it requires a client certificate",
                                  host, port)
        if reason in _NOT_TLS:
            return TransportError(STEP_HANDSHAKE, f"the endpoint does not speak TLS ({reason});"
                                  " it may be a plain IIOP port", host, port)
        return TransportError(STEP_HANDSHAKE, _reason(e), host, port)
    if isinstance(e, (asyncio.TimeoutError, socket.timeout, TimeoutError)):
        return TransportError(step, "timed out", host, port)
    if step == STEP_HANDSHAKE and isinstance(e, (ConnectionError, EOFError, OSError)):
        return TransportError(step, f"the endpoint closed the connection during the handshake"
                              f" ({_reason(e)}); it may not speak TLS", host, port)
    return TransportError(step, _reason(e), host, port)


def transport_error_of(e: BaseException) -> TransportError | None:
    """The TransportError in ``e``'s chain of causes, if any."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, TransportError):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


# ----------------------------------------------------------------------------
# Connecting, in steps
def connect(endpoint: Endpoint, options: TLSOptions = DEFAULT_TLS, *,
            timeout: float = 3.0) -> socket.socket:
    """A connected (blocking, ``timeout``) socket, wrapped in TLS when the endpoint speaks
    it; TransportError naming the step that failed."""
    try:
        sock = socket.create_connection((endpoint.host, endpoint.port), timeout=timeout)
    except OSError as e:
        raise classify(e, STEP_TCP, endpoint.host, endpoint.port) from e
    if not endpoint.tls:
        return sock
    ctx = options.client_context()
    try:
        return ctx.wrap_socket(sock, server_hostname=endpoint.host)
    except OSError as e:
        sock.close()
        raise classify(e, STEP_HANDSHAKE, endpoint.host, endpoint.port) from e


def open_socket(host: str, port: int, tls: TLSOptions | None, *,
                timeout: float = 3.0) -> socket.socket:
    """:func:`connect` to host:port, in TLS with ``tls`` unless it is None."""
    return connect(Endpoint(host, port, tls is not None), tls or DEFAULT_TLS, timeout=timeout)


async def open_connection(loop: asyncio.AbstractEventLoop, protocol_factory,
                          endpoint: Endpoint, options: TLSOptions = DEFAULT_TLS, *,
                          timeout: float = 5.0):
    """``loop.create_connection`` in steps: TCP connect, then (for a TLS endpoint) the
    handshake with SNI and host-name checking from the endpoint's host.  Returns
    (transport, protocol); TransportError naming the step that failed."""
    if not endpoint.tls:
        try:
            return await asyncio.wait_for(
                loop.create_connection(protocol_factory, endpoint.host, endpoint.port), timeout)
        except (OSError, asyncio.TimeoutError) as e:
            raise classify(e, STEP_TCP, endpoint.host, endpoint.port) from e
    ctx = options.client_context()
    sock = await _tcp_connect(loop, endpoint, timeout)
    protocol = protocol_factory()
    if not isinstance(protocol, asyncio.BufferedProtocol):
        try:
            return await loop.create_connection(lambda: protocol, sock=sock, ssl=ctx,
                                                server_hostname=endpoint.host,
                                                ssl_handshake_timeout=timeout)
        except (OSError, asyncio.TimeoutError) as e:
            sock.close()
            raise classify(e, STEP_HANDSHAKE, endpoint.host, endpoint.port) from e
    # The ORB's connections: OpenSSL on the socket itself (tlstransport: why).
    try:
        tls_sock = ctx.wrap_socket(sock, server_hostname=endpoint.host,
                                   do_handshake_on_connect=False)
    except (OSError, ValueError) as e:
        sock.close()
        raise classify(e, STEP_HANDSHAKE, endpoint.host, endpoint.port) from e
    try:
        await asyncio.wait_for(handshake(loop, tls_sock), timeout)
    except (OSError, asyncio.TimeoutError) as e:
        tls_sock.close()
        raise classify(e, STEP_HANDSHAKE, endpoint.host, endpoint.port) from e
    return TLSSocketTransport(loop, tls_sock, protocol), protocol


async def _tcp_connect(loop, endpoint: Endpoint, timeout: float) -> socket.socket:
    error: BaseException = OSError("no address")
    try:
        infos = await asyncio.wait_for(loop.getaddrinfo(endpoint.host, endpoint.port,
                                                        type=socket.SOCK_STREAM), timeout)
    except (OSError, asyncio.TimeoutError) as e:
        raise classify(e, STEP_TCP, endpoint.host, endpoint.port) from e
    for family, kind, proto, _, address in infos:
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        try:
            await asyncio.wait_for(loop.sock_connect(sock, address), timeout)
            return sock
        except (OSError, asyncio.TimeoutError) as e:
            sock.close()
            error = e
    raise classify(error, STEP_TCP, endpoint.host, endpoint.port) from error


# ----------------------------------------------------------------------------
# What a TLS server publishes
def server_components(host: str, port: int, *, client_auth: bool) -> tuple:
    """TAG_SSL_SEC_TRANS and a CSIv2 mechanism list with TAG_TLS_SEC_TRANS for a TLS
    endpoint at host:port, as omniORB (SSLIOP) and JacORB (both) publish them: integrity,
    confidentiality and trust in the target supported and integrity and confidentiality
    required; trust in the client supported, and required when client certificates are."""
    supports = INTEGRITY | CONFIDENTIALITY | ESTABLISH_TRUST_IN_TARGET | \
        ESTABLISH_TRUST_IN_CLIENT
    requires = INTEGRITY | CONFIDENTIALITY | (ESTABLISH_TRUST_IN_CLIENT if client_auth else 0)
    transport = TLSSecTrans(supports, requires, ((host, port),))
    mechanism = CompoundSecMech(requires, transport)
    return (SSLSecTrans(supports, requires, port), CSISecMechList(False, (mechanism,)))


# ----------------------------------------------------------------------------
# What a TLS endpoint shows (pycdr probe)
def _hostname_matches(host: str, dns_names, ip_addresses) -> bool:
    """RFC 6125 matching of ``host`` against a certificate's subjectAltNames (a wildcard
    only as the whole left-most label)."""
    try:
        return ipaddress.ip_address(host) in ip_addresses
    except ValueError:
        pass
    host = host.lower().rstrip(".")
    for name in dns_names:
        name = name.lower().rstrip(".")
        if name == host:
            return True
        if name.startswith("*.") and "." in host and host.split(".", 1)[1] == name[2:]:
            return True
    return False


def certificate_facts(der: bytes, host: str) -> dict:
    """Subject, issuer, validity, key type and size, subjectAltNames and whether they name
    ``host``, from a DER certificate (the ``cryptography`` package; without it, the
    SHA-256 fingerprint only)."""
    facts = {"sha256": hashlib.sha256(der).hexdigest()}
    if x509 is None:
        facts["note"] = "install pycdr[tls] (the cryptography package) for the details"
        return facts
    try:
        cert = x509.load_der_x509_certificate(der)
    except ValueError as e:
        facts["error"] = f"cannot parse the certificate: {e}"
        return facts
    key = cert.public_key()
    key_type = {rsa.RSAPublicKey: "RSA", ec.EllipticCurvePublicKey: "EC",
                dsa.DSAPublicKey: "DSA", ed25519.Ed25519PublicKey: "Ed25519",
                ed448.Ed448PublicKey: "Ed448"}
    kind = next((name for cls, name in key_type.items() if isinstance(key, cls)),
                type(key).__name__)
    size = getattr(key, "key_size", None)
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        dns_names = san.get_values_for_type(x509.DNSName)
        ip_addresses = san.get_values_for_type(x509.IPAddress)
    except x509.ExtensionNotFound:
        dns_names, ip_addresses = [], []
    not_before = getattr(cert, "not_valid_before_utc", None) or cert.not_valid_before
    not_after = getattr(cert, "not_valid_after_utc", None) or cert.not_valid_after
    now = datetime.datetime.now(datetime.timezone.utc)
    if not_after.tzinfo is None:
        not_before = not_before.replace(tzinfo=datetime.timezone.utc)
        not_after = not_after.replace(tzinfo=datetime.timezone.utc)
    facts.update({
        "subject": cert.subject.rfc4514_string(), "issuer": cert.issuer.rfc4514_string(),
        "not_before": not_before.isoformat(), "not_after": not_after.isoformat(),
        "valid_now": not_before <= now <= not_after,
        "key_type": kind, "key_size": size,
        "curve": key.curve.name if isinstance(key, ec.EllipticCurvePublicKey) else None,
        "subject_alt_names": dns_names + [str(a) for a in ip_addresses],
        "host_name_matches": _hostname_matches(host, dns_names, ip_addresses)})
    return facts


def session_facts(endpoint: Endpoint, options: TLSOptions = DEFAULT_TLS, *,
                  timeout: float = 3.0) -> dict:
    """A handshake at ``endpoint`` that verifies nothing (so an untrusted server still shows
    its certificate): protocol, cipher, the server's certificates and whether it asked for a
    client certificate; then whether ``options`` verify it (the step and reason if not).
    TransportError when even the unverified handshake fails."""
    ctx = replace(options, insecure=True).client_context()
    asked = []

    def watch(conn, direction, version, content_type, msg_type, data):
        if direction == "read" and content_type == ssl._TLSContentType.HANDSHAKE and \
                msg_type == ssl._TLSMessageType.CERTIFICATE_REQUEST:
            asked.append(True)
    # CPython's (private) message callback: the only way ssl shows a CertificateRequest.
    can_watch = hasattr(ctx, "_msg_callback")
    if can_watch:
        ctx._msg_callback = watch
    sock = connect(Endpoint(endpoint.host, endpoint.port), timeout=timeout)
    try:
        tls_sock = ctx.wrap_socket(sock, server_hostname=endpoint.host)
    except OSError as e:
        sock.close()
        raise classify(e, STEP_HANDSHAKE, endpoint.host, endpoint.port) from e
    with tls_sock:
        cipher = tls_sock.cipher()
        chain = [tls_sock.getpeercert(binary_form=True)]
        # The whole chain the server sent: public in Python 3.13, in _ssl since 3.10.
        unverified_chain = getattr(tls_sock._sslobj, "get_unverified_chain", None)
        if unverified_chain is not None:
            chain = [c if isinstance(c, bytes) else c.public_bytes(ssl._ssl.ENCODING_DER)
                     for c in unverified_chain() or ()] or chain
        facts = {"protocol": tls_sock.version(), "cipher": cipher[0] if cipher else None,
                 "cipher_bits": cipher[2] if cipher else None,
                 "client_certificate_requested": bool(asked) if can_watch else None,
                 "certificates": [certificate_facts(der, endpoint.host)
                                  for der in chain if der]}
    if options.insecure:
        facts["verified"] = None
        facts["verification"] = "not checked (--insecure)"
        return facts
    try:
        connect(endpoint, options, timeout=timeout).close()
        facts["verified"] = True
    except TransportError as e:
        facts["verified"] = e.step not in (STEP_CERTIFICATE,)
        facts["verification"] = str(e)
    return facts
