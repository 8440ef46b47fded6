"""`pycdr dissector install|uninstall` and `pycdr capture` (the old name of `pycdr pcap -i
IFACE -w FILE`)."""

from __future__ import annotations

import glob
import importlib
import os
import shutil
import subprocess
import sys

import click

from .main import EXIT_BAD_INPUT
from .options import deprecated, shared

# The plugin ships inside the package (pycdr.dissector, from the repository's
# dissector/ folder), so it is found the same way from a wheel and a checkout.
DISSECTOR_DIR = os.path.dirname(os.path.abspath(importlib.import_module("pycdr.dissector").__file__))
PLUGIN_FILES = ("pycdr_giop.lua", "pycdr_names.lua")
# The line of `tshark -G folders` that names the folder Wireshark loads a user's Lua from.
LUA_FOLDER_LINE = "Personal Lua Plugins:"


def tshark_lua_folder(tshark: str = "tshark") -> str | None:
    """The personal Lua plugin folder the installed tshark reports, or None (no tshark,
    or one that does not say)."""
    try:
        out = subprocess.run([tshark, "-G", "folders"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if line.startswith(LUA_FOLDER_LINE):
            return line[len(LUA_FOLDER_LINE):].strip() or None
    return None


def default_plugin_dir() -> str:
    """Wireshark's personal Lua plugin folder: as tshark reports it, else the folder of the
    Wireshark >= 2.6 layout."""
    reported = tshark_lua_folder()
    if reported:
        return reported
    if sys.platform == "win32":
        return os.path.join(os.environ.get("APPDATA", ""), "Wireshark", "plugins")
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return os.path.join(config, "wireshark", "plugins")


def _plan(dest: str, type_tables) -> list:
    """[(source, destination)] of every file an install copies."""
    types_dest = os.path.join(dest, "types")
    plan = [(os.path.join(DISSECTOR_DIR, name), os.path.join(dest, name))
            for name in PLUGIN_FILES]
    for table in [*sorted(glob.glob(os.path.join(DISSECTOR_DIR, "types", "*.lua"))),
                  *type_tables]:
        plan.append((table, os.path.join(types_dest, os.path.basename(table))))
    return plan


@click.group("dissector")
def cmd() -> None:
    """The Wireshark Lua dissector (protocol giopx)."""


_dest_option = shared("--dest", "dest",
                      more="The Wireshark Lua plugin folder (default: the 'Personal Lua "
                           "Plugins' folder `tshark -G folders` reports, else "
                           "~/.config/wireshark/plugins).")
_dry_run_option = shared("--dry-run", "dry_run")


@cmd.command("install")
@_dest_option
@click.option("--types", "type_tables", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="A type table from `pycdr idl lua` to install too (repeatable).")
@_dry_run_option
def install(dest, type_tables, dry_run):
    """Copy the plugin, its name tables and type tables into the plugin folder."""
    dest = dest or default_plugin_dir()
    if not os.path.exists(os.path.join(DISSECTOR_DIR, PLUGIN_FILES[0])):
        click.echo(f"error: the plugin is not in {DISSECTOR_DIR}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    plan = _plan(dest, type_tables)
    if dry_run:
        for source, target in plan:
            click.echo(f"would copy {source} to {target}")
        return
    try:
        for source, target in plan:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy(source, target)
    except OSError as e:
        click.echo(f"error: cannot install into {dest}: {e.strerror or e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    click.echo(f"installed {PLUGIN_FILES[0]} in {dest} (type tables in "
               f"{os.path.join(dest, 'types')})")


@cmd.command("uninstall")
@_dest_option
@_dry_run_option
def uninstall(dest, dry_run):
    """Remove what `pycdr dissector install` put into the plugin folder (the plugin, its
    name table, and the type tables the package ships)."""
    dest = dest or default_plugin_dir()
    present = [target for _, target in _plan(dest, ()) if os.path.exists(target)]
    if not present:
        click.echo(f"nothing of pycdr's dissector in {dest}")
        return
    try:
        for target in present:
            if dry_run:
                click.echo(f"would remove {target}")
            else:
                os.remove(target)
    except OSError as e:
        click.echo(f"error: cannot remove from {dest}: {e.strerror or e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if not dry_run:
        click.echo(f"removed {len(present)} files from {dest}")


@click.command("capture", hidden=True)
@click.option("-i", "--interface", "iface", default="lo", show_default=True,
              help="Network interface to capture on.")
@click.option("-p", "--port", "ports", multiple=True, type=click.IntRange(1, 65535),
              help="TCP port (default 683, 2809).")
@click.option("-c", "--count", type=click.IntRange(min=0), default=0,
              help="Stop after this many packets (0: Ctrl-C).")
@click.option("-t", "--timeout", type=float, default=None, help="Stop after this many seconds.")
@click.argument("output", type=click.Path(dir_okay=False))
@click.pass_context
def capture(ctx, iface, ports, count, timeout, output):
    """Record GIOP traffic to a pcap: the old name of `pycdr pcap -i IFACE -w FILE -q`."""
    deprecated("pycdr capture", "pycdr pcap -i IFACE -w FILE")
    from .pcap import cmd as pcap
    bpf = " or ".join(f"tcp port {p}" for p in ports or (683, 2809))
    ctx.invoke(pcap, iface=iface, bpf=bpf, save=output, count=count or None,
               duration=timeout, quiet=True)
