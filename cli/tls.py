"""The TLS options every connecting command shares (--tls, --cacert, --cert/--key,
--insecure), and how their failures are told."""

from __future__ import annotations

import functools

import click

from pycdr.orb.tls import TLSOptions, transport_error_of

from .warn import warn

INSECURE_WARNING = "--insecure: the server's certificate and host name are NOT verified"


def tls_options(command=None, *, key_flag: str = "--key"):
    """Add the shared TLS options; the command receives one ``tls`` argument (TLSOptions).
    ``key_flag``: the private key's option, for a command whose --key means something
    else (``pycdr replay``'s object keys: ``@tls_options(key_flag="--tls-key")``)."""
    if command is None:
        return functools.partial(tls_options, key_flag=key_flag)

    @click.option("--tls", "tls_force", is_flag=True,
                  help="Speak TLS to a corbaloc:iiop URL or host:port (an IOR with "
                       "TAG_SSL_SEC_TRANS or TAG_TLS_SEC_TRANS, and corbaloc:ssliop:, "
                       "select TLS by themselves).")
    @click.option("--cacert", type=click.Path(exists=True, dir_okay=False),
                  help="CA certificates (PEM) to verify the server with (default: the "
                       "system's).")
    @click.option("--cert", "tls_cert", type=click.Path(exists=True, dir_okay=False),
                  help="Client certificate (PEM) for servers that require one.")
    @click.option(key_flag, "tls_key", type=click.Path(exists=True, dir_okay=False),
                  help="The client certificate's private key (PEM; default: in --cert).")
    @click.option("--insecure", is_flag=True,
                  help="Do not verify the server's certificate or host name.")
    @functools.wraps(command)
    def wrapper(*args, tls_force, cacert, tls_cert, tls_key, insecure, **kwargs):
        if tls_key and not tls_cert:
            raise click.UsageError(f"{key_flag} needs --cert")
        if insecure:
            warn(INSECURE_WARNING)
        tls = TLSOptions(force=tls_force, cacert=cacert, cert=tls_cert, key=tls_key,
                         insecure=insecure)
        return command(*args, tls=tls, **kwargs)
    return wrapper


def failure_text(e: BaseException) -> str:
    """What failed: the step and why when a TransportError is behind ``e``."""
    error = transport_error_of(e)
    return str(error) if error is not None else str(e)
