"""The TLS options every connecting command shares (--tls, --tls-ca, --tls-cert/--tls-key,
--insecure: cli/options.py), and how their failures are told."""

from __future__ import annotations

import functools

import click

from pycdr.orb.tls import TLSOptions, transport_error_of

from .options import old_spelling, shared
from .warn import warn

INSECURE_WARNING = "--insecure: the server's certificate and host name are NOT verified"


def tls_options(command=None, *, old_key: bool = True):
    """Add the shared TLS options; the command receives one ``tls`` argument (TLSOptions).
    ``old_key``: accept the old spelling --key of --tls-key (not where --key means
    something else)."""
    if command is None:
        return functools.partial(tls_options, old_key=old_key)

    @shared("--tls", "tls_force")
    @click.option("--tls-ca", "cacert", help=shared_help("--tls-ca") + " Default: the "
                  "system's.", **_attrs("--tls-ca"))
    @old_spelling("--cacert", "cacert", new="--tls-ca", type=_attrs("--tls-ca")["type"])
    @click.option("--tls-cert", "tls_cert", help=shared_help("--tls-cert") + " For servers "
                  "that require a client certificate.", **_attrs("--tls-cert"))
    @old_spelling("--cert", "tls_cert", new="--tls-cert", type=_attrs("--tls-cert")["type"])
    @click.option("--tls-key", "tls_key", help=shared_help("--tls-key") + " Default: in "
                  "--tls-cert.", **_attrs("--tls-key"))
    @shared("--insecure")
    @functools.wraps(command)
    def wrapper(*args, tls_force, cacert, tls_cert, tls_key, insecure, **kwargs):
        if tls_key and not tls_cert:
            raise click.UsageError("--tls-key needs --tls-cert")
        if insecure:
            warn(INSECURE_WARNING)
        tls = TLSOptions(force=tls_force, cacert=cacert, cert=tls_cert, key=tls_key,
                         insecure=insecure)
        return command(*args, tls=tls, **kwargs)
    if old_key:
        wrapper = old_spelling("--key", "tls_key", new="--tls-key",
                               type=_attrs("--tls-key")["type"])(wrapper)
    return wrapper


def shared_help(name: str) -> str:
    from .options import SHARED
    return SHARED[name].meaning


def _attrs(name: str) -> dict:
    from .options import SHARED
    return dict(SHARED[name].attrs)


def failure_text(e: BaseException) -> str:
    """What failed: the step and why when a TransportError is behind ``e``."""
    error = transport_error_of(e)
    return str(error) if error is not None else str(e)
