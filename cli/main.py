"""The `pycdr` command line.

Exit codes (all subcommands):
  0  success
  1  the input was understood but is bad (undecodable bytes, a protocol violation
     in strict mode, an endpoint that failed a check)
  2  usage error (bad option or argument; Click's own code)
  3  an endpoint could not be reached or timed out
"""

from __future__ import annotations

import importlib

import click

from .warn import start_run

EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3


# (module under pycdr.cli, attribute) of every subcommand, in --help order.  The
# command's name is the module's for ``cmd`` and ``<module>_cmd``, else the attribute's.
SUBCOMMANDS = (
    ("decode", "cmd"), ("ior", "cmd"), ("idl", "cmd"), ("pcap", "cmd"),
    ("dissector", "cmd"), ("dissector", "capture"), ("serve", "cmd"), ("call", "cmd"),
    ("probe", "cmd"), ("conformance", "conformance_cmd"), ("bench", "cmd"), ("fuzz", "cmd"),
    ("replay", "cmd"), ("names", "cmd"), ("explain", "cmd"), ("monitor", "cmd"),
    ("proxy", "cmd"),
)


def _command_name(module: str, attribute: str) -> str:
    return module if attribute in ("cmd", f"{module}_cmd") else attribute


class _LazyGroup(click.Group):
    """Imports a subcommand's module when that command runs: `pycdr pcap` does
    not pay for the ORB, asyncio and the IDL front end (a third of a second)."""

    def list_commands(self, ctx) -> list:
        return sorted(_command_name(m, a) for m, a in SUBCOMMANDS)

    def get_command(self, ctx, name):
        for module, attribute in SUBCOMMANDS:
            if _command_name(module, attribute) == name:
                return getattr(importlib.import_module(f"pycdr.cli.{module}"), attribute)
        return None


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pycdr")
def main() -> None:
    """pycdr: CORBA CDR/GIOP/IIOP analyzer, conformance suite and reference ORB."""
    start_run()

if __name__ == "__main__":
    main()
