"""`pycdr dissector install` and `pycdr capture`."""

from __future__ import annotations

import glob
import importlib
import os
import shutil
import sys

import click

from .main import EXIT_BAD_INPUT

# The plugin ships inside the package (pycdr.dissector, from the repository's
# dissector/ folder), so it is found the same way from a wheel and a checkout.
DISSECTOR_DIR = os.path.dirname(os.path.abspath(importlib.import_module("pycdr.dissector").__file__))


def personal_plugin_dir() -> str:
    """Wireshark's personal Lua plugin folder (Wireshark >= 2.6 layout)."""
    if sys.platform == "win32":
        return os.path.join(os.environ.get("APPDATA", ""), "Wireshark", "plugins")
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return os.path.join(config, "wireshark", "plugins")


@click.group("dissector")
def cmd() -> None:
    """The Wireshark Lua dissector (protocol giopx)."""


@cmd.command("install")
@click.option("--dest", type=click.Path(file_okay=False), help="Plugin folder (default: Wireshark's personal one).")
@click.option("--types", "type_tables", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="A type table from `pycdr idl lua` to install too (repeatable).")
def install(dest, type_tables):
    """Copy the plugin, its name tables and type tables into the plugin folder."""
    dest = dest or personal_plugin_dir()
    if not os.path.exists(os.path.join(DISSECTOR_DIR, "pycdr_giop.lua")):
        click.echo(f"error: the plugin is not in {DISSECTOR_DIR}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    types_dest = os.path.join(dest, "types")
    os.makedirs(types_dest, exist_ok=True)
    for name in ("pycdr_giop.lua", "pycdr_names.lua"):
        shutil.copy(os.path.join(DISSECTOR_DIR, name), dest)
    for table in [*glob.glob(os.path.join(DISSECTOR_DIR, "types", "*.lua")), *type_tables]:
        shutil.copy(table, types_dest)
    click.echo(f"installed pycdr_giop.lua in {dest} (type tables in {types_dest})")


@click.command("capture")
@click.option("-i", "--interface", default="lo", show_default=True)
@click.option("-p", "--port", "ports", multiple=True, type=click.IntRange(1, 65535),
              help="TCP port (default 683, 2809).")
@click.option("-c", "--count", type=click.IntRange(min=0), default=0,
              help="Stop after this many packets (0: Ctrl-C).")
@click.option("-t", "--timeout", type=float, default=None, help="Stop after this many seconds.")
@click.argument("output", type=click.Path(dir_okay=False))
def capture(interface, ports, count, timeout, output):
    """Record GIOP traffic on an interface and ports to a pcap (libpcap via
    scapy; needs capture rights: root or CAP_NET_RAW)."""
    from scapy.sendrecv import sniff
    from scapy.utils import wrpcap
    ports = ports or (683, 2809)
    bpf = " or ".join(f"tcp port {p}" for p in ports)
    from scapy.error import Scapy_Exception
    try:
        packets = sniff(iface=interface, filter=bpf, count=count, timeout=timeout)
    except (OSError, ValueError, Scapy_Exception) as e:   # ValueError: no such interface
        click.echo(f"error: cannot capture on {interface}: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    try:
        wrpcap(output, packets)
    except OSError as e:
        click.echo(f"error: cannot write {output}: {e.strerror}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    click.echo(f"{len(packets)} packets written to {output}")
