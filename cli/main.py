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


def _register() -> None:
    # Each subcommand lives in its own module and is added here, one line each.
    from pycdr.cli.decode import cmd as decode_cmd; main.add_command(decode_cmd)  # noqa: E702
    from pycdr.cli.ior import cmd as ior_cmd; main.add_command(ior_cmd)  # noqa: E702
    from pycdr.cli.idl import cmd as idl_cmd; main.add_command(idl_cmd)  # noqa: E702
    pass


_register()

if __name__ == "__main__":
    main()
