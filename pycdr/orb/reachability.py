"""Why an endpoint gave no GIOP answer: the connection was refused, the endpoint stayed
silent, it answered in another protocol (and which one it looks like), or it speaks TLS
where plain TCP was used or the other way round.  One diagnosis, so that every command
tells the same cause in the same words.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..giop.messages import KeyAddr, LocateRequest, encode_message
from .client import RawConnection
from .tls import (DEFAULT_TLS, STEP_CERTIFICATE, STEP_CLIENT_CERTIFICATE, STEP_TCP, Endpoint,
                  TLSOptions, TransportError)

# Kinds of diagnosis.
GIOP = "giop"                    # a GIOP answer: the endpoint is fine
REFUSED = "refused"              # no TCP connection: refused, unknown host, unreachable
SILENT = "silent"                # connected, no answer within the timeout
CLOSED = "closed"                # connected, closed without a byte
NOT_GIOP = "not GIOP"            # answered in another protocol
TLS_EXPECTED = "TLS expected"    # plain TCP was used; the endpoint speaks TLS
PLAIN_EXPECTED = "plain expected"  # TLS was used; the endpoint speaks plain TCP
TLS_FAILED = "TLS failed"        # a TLS session could not be set up (certificates)

# Bytes read at most from an endpoint that is being diagnosed.
MAX_READ = 4096


@dataclass(frozen=True)
class Diagnosis:
    kind: str
    message: str                 # one line, naming the endpoint and what to do

    @property
    def ok(self) -> bool:
        return self.kind == GIOP


def _looks_like_tls(data: bytes) -> bool:
    # A TLS record: content type (alert 21, handshake 22), then version 3.x.
    return len(data) >= 3 and data[0] in (0x15, 0x16) and data[1] == 3 and data[2] <= 4


def describe_bytes(data: bytes) -> str:
    """What an answer that is not GIOP looks like, in words (never a bytes repr)."""
    if not data:
        return "nothing"
    if data.startswith(b"HTTP/"):
        line = data.split(b"\r\n", 1)[0].split(b"\n", 1)[0][:60]
        return f"an HTTP server ({line.decode('ascii', 'replace')})"
    if _looks_like_tls(data):
        return "TLS (a TLS record)"
    if data.startswith(b"SSH-"):
        line = data.split(b"\n", 1)[0].strip()[:60]
        return f"an SSH server ({line.decode('ascii', 'replace')})"
    head = data[:16]
    if all(32 <= b < 127 or b in (9, 10, 13) for b in head):
        text = " ".join(data[:60].decode("ascii", "replace").split())
        return f"text beginning {text}"
    return "bytes " + " ".join(f"{b:02x}" for b in head) + (" ..." if len(data) > 16 else "")


def _where(endpoint: Endpoint) -> str:
    return f"{endpoint.host}:{endpoint.port}"


def from_transport_error(endpoint: Endpoint, error: TransportError) -> Diagnosis:
    """The diagnosis of a connection that failed at one of its steps."""
    where = _where(endpoint)
    if error.step == STEP_TCP:
        if error.detail == "timed out":
            return Diagnosis(SILENT, f"{where}: the TCP connection was not accepted within "
                             "the timeout (a firewall dropping packets, or a host that is "
                             "down)")
        return Diagnosis(REFUSED, f"{where}: TCP connect failed: {error.detail} (is a server "
                         "running on this host and port?)")
    if error.step in (STEP_CERTIFICATE, STEP_CLIENT_CERTIFICATE):
        return Diagnosis(TLS_FAILED, str(error))
    if "does not speak TLS" in error.detail or "closed the connection during" in error.detail:
        return Diagnosis(PLAIN_EXPECTED, f"{where}: {error.detail}: connect without --tls")
    if error.detail == "timed out":
        return Diagnosis(SILENT, f"{where}: no answer to the TLS handshake within the "
                         "timeout; it may be a plain IIOP port: connect without --tls")
    return Diagnosis(TLS_FAILED, str(error))


def from_answer(endpoint: Endpoint, data: bytes, closed: bool) -> Diagnosis:
    """The diagnosis of what came back to a GIOP request that could not be framed."""
    where = _where(endpoint)
    if not data:
        if closed:
            return Diagnosis(CLOSED, f"{where} closed the connection without answering (a "
                             "server that is not GIOP, or one that refused the request)")
        return Diagnosis(SILENT, f"{where} accepted the connection but did not answer "
                         "within the timeout (a busy or hung server, or not a GIOP port)")
    if _looks_like_tls(data) and not endpoint.tls:
        return Diagnosis(TLS_EXPECTED, f"{where} speaks TLS: connect with --tls")
    return Diagnosis(NOT_GIOP, f"{where} does not speak GIOP: it answered like "
                     f"{describe_bytes(data)}")


async def diagnose(endpoint: Endpoint, tls: TLSOptions = DEFAULT_TLS,
                   timeout: float = 2.0) -> Diagnosis:
    """Connect to ``endpoint``, send a GIOP 1.0 LocateRequest and say what came back.
    The read is bounded in bytes and time."""
    raw = RawConnection(None, endpoint.host, endpoint.port, tls=endpoint.tls,
                        tls_options=tls)
    try:
        await raw.open(timeout)
    except TransportError as e:
        return from_transport_error(endpoint, e)
    try:
        request = encode_message(LocateRequest(version=(1, 0), little=False, request_id=1,
                                               target=KeyAddr(b"")))
        await raw.send(request)
        read = await raw.read_messages(1, timeout=timeout, max_bytes=MAX_READ)
    finally:
        await raw.close()
    if read.messages or read.data[:4] in (b"GIOP", b"ZIOP"):
        # (a GIOP header, even of a message that breaks the protocol: it speaks GIOP)
        return Diagnosis(GIOP, f"{_where(endpoint)} answers in GIOP")
    diagnosis = from_answer(endpoint, read.data, read.closed)
    if diagnosis.kind == CLOSED and not endpoint.tls and await speaks_tls(endpoint, timeout):
        # Some TLS servers close on bytes that are no ClientHello without an alert.
        return Diagnosis(TLS_EXPECTED, f"{_where(endpoint)} speaks TLS: connect with --tls")
    return diagnosis


async def speaks_tls(endpoint: Endpoint, timeout: float) -> bool:
    """Whether ``endpoint`` completes (or gets as far as the certificates of) a TLS
    handshake; nothing is verified, nothing is sent after it."""
    raw = RawConnection(None, endpoint.host, endpoint.port, tls=True,
                        tls_options=TLSOptions(insecure=True))
    try:
        await raw.open(timeout)
    except TransportError as e:
        return e.step in (STEP_CERTIFICATE, STEP_CLIENT_CERTIFICATE)
    finally:
        await raw.close()
    return True
