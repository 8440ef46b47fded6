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

from .main import EXIT_BAD_INPUT


@click.command("serve")
@click.argument("idl_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--interface", "interface_name", required=True,
              help="Scoped name of the interface to serve, e.g. Demo::Echo.")
@click.option("-I", "--include", "include_dirs", multiple=True, help="IDL include folder.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port (0: any free port).")
@click.option("--name", "object_name", default="Echo", show_default=True,
              help="Persistent object key (for corbaloc URLs).")
@click.option("--fragment-size", type=int, default=None,
              help="Fragment GIOP 1.2 replies longer than this many bytes.")
@click.option("--idle-timeout", type=float, default=300.0, show_default=True)
@click.option("--ready-file", type=click.Path(dir_okay=False), default=None,
              help="Write the IOR to this file once listening.")
@click.option("-v", "--verbose", is_flag=True, help="Log every connection problem.")
def cmd(idl_file, interface_name, include_dirs, host, port, object_name, fragment_size,
        idle_timeout, ready_file, verbose):
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
    limits = ServerLimits(fragment_size=fragment_size, idle_timeout=idle_timeout)
    try:
        asyncio.run(_serve(interface, host, port, object_name, limits, ready_file))
    except (OSError, PycdrError) as e:
        click.echo(f"cannot serve: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)


async def _serve(interface, host, port, object_name, limits, ready_file):
    server = Server(host=host, port=port, limits=limits)
    key = server.activate(EchoServant(interface), object_name)
    await server.start()
    ior = server.ior_string(key)
    click.echo(ior)
    click.echo(server.corbaloc(key))
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
