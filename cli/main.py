"""The `pycdr` command line.

Exit codes (all subcommands):
  0  success
  1  the input was understood but is bad (undecodable bytes, a protocol violation
     in strict mode, an endpoint that failed a check)
  2  usage error (bad option or argument; Click's own code)
  3  an endpoint could not be reached or timed out
"""

from __future__ import annotations

import click

EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pycdr")
def main() -> None:
    """pycdr: CORBA CDR/GIOP/IIOP analyzer, conformance suite and reference ORB."""


# (module under pycdr.cli, attribute) of every subcommand, in --help order.
SUBCOMMANDS = (
    ("decode", "cmd"), ("ior", "cmd"), ("idl", "cmd"), ("pcap", "cmd"),
    ("dissector", "cmd"), ("dissector", "capture"), ("serve", "cmd"), ("call", "cmd"),
    ("probe", "cmd"), ("conformance", "conformance_cmd"), ("bench", "cmd"), ("fuzz", "cmd"),
)


def _register() -> None:
    import importlib
    for module, attribute in SUBCOMMANDS:
        main.add_command(getattr(importlib.import_module(f"pycdr.cli.{module}"), attribute))


_register()

if __name__ == "__main__":
    main()
