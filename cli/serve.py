"""`pycdr serve --idl FILE.idl --interface NAME`: the reference ORB serving an echo servant."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

import click

from pycdr.errors import PycdrError
from pycdr.idl import IdlError, load
from pycdr.orb import EchoServant, Server, ServerLimits
from pycdr.orb.aio import run as run_loop
from pycdr.orb.threads import ThreadedServer
from pycdr.orb.tls import server_context

from .main import EXIT_BAD_INPUT
from .options import deprecated, old_spelling, shared

_LIMITS = ServerLimits()       # the defaults the options show


@click.command("serve")
@click.argument("idl_argument", required=False, metavar="",
                type=click.Path(exists=True, dir_okay=False))
@shared("--idl", "idl_file", more="It declares --interface.")
@shared("--interface", "interface_name", required=True, more="The one served.")
@shared("--include", "include_dirs")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@shared("--port", "port", default=0, show_default=True,
        more="To listen on (0: any free port).")
@click.option("--name", "object_name", default="Echo", show_default=True,
              help="Persistent object key (for corbaloc URLs).")
@click.option("--fragment-size", type=int, default=None,
              help="Fragment GIOP 1.2 replies longer than this many bytes.")
@click.option("--idle-timeout", type=float, default=300.0, show_default=True,
              help="Seconds a connection may stay idle before it is closed.")
@click.option("--max-connections", type=click.IntRange(min=1), default=_LIMITS.max_connections,
              show_default=True,
              help="At the limit, the connection that waited longest (on an incomplete "
                   "message, or idle) is closed to make room.")
@shared("--max-message-size", "max_message_size", default=_LIMITS.max_message_size,
        show_default=True, more="A header claiming more is refused.")
@click.option("--max-incomplete-bytes", type=click.IntRange(min=0),
              default=_LIMITS.max_incomplete_bytes, show_default=True,
              help="Bytes all connections together may hold in incomplete messages; beyond "
                   "it the oldest is refused with MessageError. At least --max-message-size.")
@click.option("--incomplete-timeout", type=click.FloatRange(min=0, min_open=True),
              default=_LIMITS.incomplete_message_timeout, show_default=True,
              help="Seconds an incomplete message may go without progress.")
@click.option("--release-memory/--keep-memory", default=_LIMITS.release_memory,
              show_default=True,
              help="Give freed memory back to the system when the load drops (glibc).")
@click.option("--ready-file", type=click.Path(dir_okay=False), default=None,
              help="Write the IOR to this file once listening.")
@click.option("--forward-corbaloc", is_flag=True,
              help="Serve the object under a key of its own and answer the --name key (the "
                   "corbaloc one) with OBJECT_FORWARD / LOCATION_FORWARD to the object's full "
                   "IOR, as TAO's IOR table does: a client resolving the corbaloc gets the IOR "
                   "and its code sets.")
@shared("--tls-cert", "tls_cert", more="Serve IIOP over TLS only with it (IIOP port 0 in "
        "the IOR; the TLS port in TAG_SSL_SEC_TRANS and CSIv2 TAG_TLS_SEC_TRANS).")
@shared("--tls-key", "tls_key")
@click.option("--tls", "tls_files", nargs=2, type=click.Path(exists=True, dir_okay=False),
              default=None, hidden=True, help="Old spelling of --tls-cert CERT --tls-key KEY.")
@click.option("--tls-port", type=int, default=0, show_default=True,
              help="TLS port (0: any free port).")
@shared("--tls-ca", "client_ca", more="With --tls-cert: clients must present a certificate "
        "signed by one of them.")
@old_spelling("--require-client-cert", "client_ca", new="--tls-ca",
              type=click.Path(exists=True, dir_okay=False))
@click.option("--also-plain", is_flag=True,
              help="With --tls-cert: keep the plain IIOP port too (--port).")
@click.option("--threads", is_flag=True,
              help="A thread per connection, blocking sockets (pycdr.orb.threads: plain IIOP, "
                   "a connection's requests one at a time, no eviction at --max-connections "
                   "and no shared --max-incomplete-bytes budget) instead of the event loop.")
@shared("--verbose", "verbose", more="Log every connection problem.")
def cmd(idl_argument, idl_file, interface_name, include_dirs, host, port, object_name, fragment_size,
        idle_timeout, max_connections, max_message_size, max_incomplete_bytes,
        incomplete_timeout, release_memory, ready_file, forward_corbaloc, tls_cert, tls_key,
        tls_files, tls_port, client_ca, also_plain, threads, verbose):
    """Serve an echo object: every operation returns its in/inout values as its result and
    out values where the types allow. Prints the IOR and corbaloc URL; Ctrl-C shuts down
    (CloseConnection on every connection)."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    if idl_argument is not None:
        if idl_file is not None:
            raise click.UsageError("give the IDL once, with --idl FILE")
        deprecated("pycdr serve FILE.idl", "pycdr serve --idl FILE.idl")
        idl_file = idl_argument
    if idl_file is None:
        raise click.UsageError("--idl FILE is needed: the IDL that declares --interface")
    try:
        module = load(idl_file, include_dirs)
    except IdlError as e:
        click.echo(str(e), err=True)
        sys.exit(EXIT_BAD_INPUT)
    interface = module.interfaces.get(interface_name)
    if interface is None:
        click.echo(f"no interface {interface_name!r} in {idl_file}; it has: "
                   f"{', '.join(sorted(module.interfaces)) or 'none'}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if tls_files:
        deprecated("--tls CERT KEY", "--tls-cert CERT --tls-key KEY")
        tls_cert, tls_key = tls_cert or tls_files[0], tls_key or tls_files[1]
    if tls_cert and not tls_key or tls_key and not tls_cert:
        raise click.UsageError("--tls-cert and --tls-key go together")
    tls_files = (tls_cert, tls_key) if tls_cert else None
    if (client_ca or also_plain) and not tls_files:
        raise click.UsageError("--tls-ca and --also-plain need --tls-cert and --tls-key")
    if threads and tls_files:
        raise click.UsageError("--threads serves plain IIOP only: TLS needs the event loop")
    try:
        limits = ServerLimits(fragment_size=fragment_size, idle_timeout=idle_timeout,
                              max_connections=max_connections,
                              max_message_size=max_message_size,
                              max_incomplete_bytes=max_incomplete_bytes,
                              incomplete_message_timeout=incomplete_timeout,
                              release_memory=release_memory)
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    try:
        tls = server_context(tls_files[0], tls_files[1], client_ca) if tls_files else None
        if threads:
            server = ThreadedServer(host=host, port=port, limits=limits)
        else:
            server = Server(host=host, port=port, limits=limits, tls=tls, tls_port=tls_port,
                            plain=tls is None or also_plain)
        run_loop(_serve(server, interface, object_name, ready_file, forward_corbaloc))
    except (OSError, PycdrError) as e:
        reason = getattr(e, "strerror", None) or e
        click.echo(f"error: cannot serve on {host}:{port}: {reason}", err=True)
        sys.exit(EXIT_BAD_INPUT)


async def _serve(server, interface, object_name, ready_file, forward_corbaloc):
    servant = EchoServant(interface)
    # Forwarding: the object under a key of the adapter's own, the name forwarded to it (the
    # IOR is made once the port is known).
    key = server.activate(servant, None if forward_corbaloc else object_name)
    await server.start()
    corbaloc_key = key
    if forward_corbaloc:
        corbaloc_key = server.adapter.forward(object_name, server.ior(key))
    ior = server.ior_string(key)
    click.echo(ior)
    click.echo(server.corbaloc(corbaloc_key))
    if server.tls is not None and server.plain:
        click.echo(server.corbaloc(corbaloc_key, tls=True))
    sys.stdout.flush()
    if ready_file:
        with open(ready_file, "w") as f:
            f.write(ior + "\n")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop()
    click.echo("stopped", err=True)
