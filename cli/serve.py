"""`pycdr serve FILE.idl --interface NAME`: the reference ORB serving an echo servant."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

import click

from pycdr.errors import PycdrError
from pycdr.idl import IdlError, load
from pycdr.orb import EchoServant, Server, ServerLimits
from pycdr.orb.tls import server_context

from .main import EXIT_BAD_INPUT


@click.command("serve")
@click.argument("idl_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--interface", "interface_name", required=True,
              help="Scoped name of the interface to serve, e.g. Demo::Echo.")
@click.option("-I", "--include", "include_dirs", multiple=True, help="IDL include folder.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=0, show_default=True, help="Port (0: any free port).")
@click.option("--name", "object_name", default="Echo", show_default=True,
              help="Persistent object key (for corbaloc URLs).")
@click.option("--fragment-size", type=int, default=None,
              help="Fragment GIOP 1.2 replies longer than this many bytes.")
@click.option("--idle-timeout", type=float, default=300.0, show_default=True)
@click.option("--ready-file", type=click.Path(dir_okay=False), default=None,
              help="Write the IOR to this file once listening.")
@click.option("--tls", "tls_files", nargs=2, type=click.Path(exists=True, dir_okay=False),
              default=None, metavar="CERT KEY",
              help="Serve IIOP over TLS only (IIOP port 0 in the IOR; the TLS port in "
                   "TAG_SSL_SEC_TRANS and CSIv2 TAG_TLS_SEC_TRANS).")
@click.option("--tls-port", type=int, default=0, show_default=True,
              help="TLS port (0: any free port).")
@click.option("--require-client-cert", "client_ca", type=click.Path(exists=True,
              dir_okay=False), default=None, metavar="CA",
              help="With --tls: clients must present a certificate signed by CA.")
@click.option("--also-plain", is_flag=True,
              help="With --tls: keep the plain IIOP port too (--port).")
@click.option("-v", "--verbose", is_flag=True, help="Log every connection problem.")
def cmd(idl_file, interface_name, include_dirs, host, port, object_name, fragment_size,
        idle_timeout, ready_file, tls_files, tls_port, client_ca, also_plain, verbose):
    """Serve an echo object: every operation returns its in/inout values as its result and
    out values where the types allow. Prints the IOR and corbaloc URL; Ctrl-C shuts down
    (CloseConnection on every connection)."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
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
    if (client_ca or also_plain) and not tls_files:
        raise click.UsageError("--require-client-cert and --also-plain need --tls CERT KEY")
    limits = ServerLimits(fragment_size=fragment_size, idle_timeout=idle_timeout)
    try:
        tls = server_context(tls_files[0], tls_files[1], client_ca) if tls_files else None
        server = Server(host=host, port=port, limits=limits, tls=tls, tls_port=tls_port,
                        plain=tls is None or also_plain)
        asyncio.run(_serve(server, interface, object_name, ready_file))
    except (OSError, PycdrError) as e:
        click.echo(f"cannot serve: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)


async def _serve(server, interface, object_name, ready_file):
    key = server.activate(EchoServant(interface), object_name)
    await server.start()
    ior = server.ior_string(key)
    click.echo(ior)
    click.echo(server.corbaloc(key))
    if server.tls is not None and server.plain:
        click.echo(server.corbaloc(key, tls=True))
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
