"""How the commands that connect tell why an endpoint gave no GIOP answer: one message
and one exit status for each cause (pycdr.orb.reachability), the same in every command."""

from __future__ import annotations

import sys

import click

from pycdr.orb.aio import run as run_loop
from pycdr.orb.reachability import (CLOSED, GIOP, NOT_GIOP, PLAIN_EXPECTED, REFUSED, SILENT,
                                    TLS_EXPECTED, TLS_FAILED, Diagnosis, diagnose,
                                    from_transport_error)
from pycdr.orb.tls import DEFAULT_TLS, Endpoint, TLSOptions, transport_error_of

from .main import (EXIT_BAD_INPUT, EXIT_NOT_GIOP, EXIT_TIMEOUT, EXIT_TLS, EXIT_UNREACHABLE)

EXIT_OF = {REFUSED: EXIT_UNREACHABLE, SILENT: EXIT_TIMEOUT, CLOSED: EXIT_NOT_GIOP,
           NOT_GIOP: EXIT_NOT_GIOP, TLS_EXPECTED: EXIT_TLS, PLAIN_EXPECTED: EXIT_TLS,
           TLS_FAILED: EXIT_TLS, GIOP: EXIT_BAD_INPUT}


def stop(diagnosis: Diagnosis):
    """Say what is wrong with the endpoint and exit with the status of that cause."""
    click.echo(f"error: {diagnosis.message}", err=True)
    sys.exit(EXIT_OF[diagnosis.kind])


def check_target(text: str, tls: TLSOptions, timeout: float = 3.0) -> None:
    """Exit with the cause unless the endpoint of the reference or host:port ``text``
    answers in GIOP (a reference that does not parse is left to the command)."""
    endpoint = target_endpoint(text, tls)
    if endpoint is not None:
        diagnosis = run_loop(diagnose(endpoint, tls, timeout))
        if not diagnosis.ok:
            stop(diagnosis)


def check_endpoint(host: str, port: int, tls: TLSOptions | None = None,
                   timeout: float = 3.0) -> None:
    """Exit with the cause unless ``host:port`` answers a LocateRequest in GIOP (over TLS
    when ``tls`` is given)."""
    endpoint = Endpoint(host, port, tls is not None)
    diagnosis = run_loop(diagnose(endpoint, tls or DEFAULT_TLS, timeout))
    if not diagnosis.ok:
        stop(diagnosis)


def check_answered(host: str, port: int, tls: TLSOptions | None = None,
                   timeout: float = 3.0) -> None:
    """After calls that all failed: exit with the cause when ``host:port`` clearly does not
    speak GIOP (another protocol, TLS or plain where the other was used, refused); a silent
    endpoint or one that closes is left to the failures the command has reported."""
    endpoint = Endpoint(host, port, tls is not None)
    diagnosis = run_loop(diagnose(endpoint, tls or DEFAULT_TLS, timeout))
    if diagnosis.kind in (NOT_GIOP, TLS_EXPECTED, PLAIN_EXPECTED, TLS_FAILED, REFUSED):
        stop(diagnosis)


def explain(error: BaseException, endpoint: Endpoint | None, tls: TLSOptions,
            timeout: float) -> Diagnosis:
    """Why a call to ``endpoint`` failed with ``error`` (a CORBA TRANSIENT, COMM_FAILURE or
    TIMEOUT, or an OSError): from the failed connection step when there was one, else by
    asking the endpoint again."""
    from pycdr.giop.sysexc import TIMEOUT
    transport = transport_error_of(error)
    if transport is not None:
        where = endpoint or Endpoint(transport.host, transport.port, False)
        return from_transport_error(where, transport)
    if endpoint is None:
        return Diagnosis(REFUSED, str(error))
    diagnosis = run_loop(diagnose(endpoint, tls, timeout))
    if diagnosis.ok:
        # It answers a LocateRequest now: the failure was the call's own.
        kind = SILENT if isinstance(error, TIMEOUT) else CLOSED
        what = ("did not answer the request within the timeout (try a longer --timeout)"
                if kind == SILENT else f"ended the call: {error}")
        return Diagnosis(kind, f"{endpoint.host}:{endpoint.port} {what}")
    return diagnosis


def target_endpoint(text: str, tls: TLSOptions) -> Endpoint | None:
    """The endpoint a reference's first IIOP profile (a corbaloc's first IIOP address, a
    corbaname's naming service) or a host:port sends to; None when it has none."""
    from .reference import HOST_PORT
    if HOST_PORT.fullmatch(text.strip()) and not text.lower().startswith(("ior:", "corba")):
        host, _, port = text.strip().rpartition(":")
        if int(port) > 65535:
            return None
        return Endpoint(host.strip("[]"), int(port), tls.force)
    from pycdr.addressing.corbaloc import Corbaloc, Corbaname, IIOPAddress, parse_object_url
    from pycdr.errors import PycdrError
    from pycdr.giop.sysexc import SystemException
    from pycdr.orb.client import first_iiop_profile
    from pycdr.orb.tls import choose_endpoint
    try:
        parsed = parse_object_url(text)
        if isinstance(parsed, Corbaname):
            parsed = parsed.corbaloc
        if isinstance(parsed, Corbaloc):
            if not any(isinstance(a, IIOPAddress) for a in parsed.addresses):
                return None
            parsed = parsed.to_ior()
        return choose_endpoint(first_iiop_profile(parsed), tls)
    except (PycdrError, SystemException, ValueError):
        return None
