"""The `pycdr` command line.

Exit statuses (all subcommands; the one list, used by every command):
  0  success
  1  the input was understood but is bad (a file that is empty or not what the command
     reads, a reference that does not parse, undecodable bytes, a protocol violation in
     strict mode, an endpoint that failed a check)
  2  usage error (a bad option or argument, a file named that does not exist, a value
     its IDL type cannot hold; Click's own code)
  3  the endpoint could not be reached: the connection was refused, the host is unknown
     or unreachable
  4  the endpoint accepted the connection but did not answer within the timeout
  5  the endpoint answered, but not in GIOP (an HTTP server, an SSH banner, ...)
  6  TLS was expected and the endpoint speaks plain TCP, or the other way round, or the
     TLS session could not be set up (certificate not trusted, client certificate needed)
 70  internal error: a bug in pycdr; one line names it and the path of a saved report
     with the details (please send that report)
"""

from __future__ import annotations

import datetime
import importlib
import logging
import os
import sys
import tempfile
import traceback

import click

from .warn import start_run

EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_TIMEOUT = 4
EXIT_NOT_GIOP = 5
EXIT_TLS = 6
EXIT_INTERNAL = 70

EXIT_STATUSES = (EXIT_OK, EXIT_BAD_INPUT, EXIT_USAGE, EXIT_UNREACHABLE, EXIT_TIMEOUT,
                 EXIT_NOT_GIOP, EXIT_TLS, EXIT_INTERNAL)


# (module under pycdr.cli, attribute) of every subcommand, in --help order.  The
# command's name is the module's for ``cmd`` and ``<module>_cmd``, else the attribute's.
SUBCOMMANDS = (
    ("decode", "cmd"), ("ior", "cmd"), ("idl", "cmd"), ("pcap", "cmd"),
    ("dissector", "cmd"), ("dissector", "capture"), ("serve", "cmd"), ("call", "cmd"),
    ("probe", "cmd"), ("conformance", "conformance_cmd"), ("bench", "cmd"), ("fuzz", "cmd"),
    ("replay", "cmd"), ("names", "cmd"), ("explain", "cmd"), ("monitor", "cmd"),
    ("proxy", "cmd"),
)
# Commands kept under an old name only, left out of --help.
HIDDEN = {"capture"}


def exit_statuses() -> list:
    """[(status, meaning)] from this module's docstring (the one list)."""
    doc = __doc__.split("Exit statuses", 1)[1].split(":", 1)[1]
    out: list = []
    for line in doc.strip("\n").splitlines():
        head = line[:4].strip()
        if head.isdigit():
            out.append([int(head), line[4:].strip()])
        elif out and line.strip():
            out[-1][1] += " " + line.strip()
    return [tuple(x) for x in out]


def _command_name(module: str, attribute: str) -> str:
    return module if attribute in ("cmd", f"{module}_cmd") else attribute


def report_folder() -> str:
    """Where internal-error reports go: the user's cache folder, else the temp folder."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "pycdr", "reports")


def save_report(error: BaseException) -> str:
    """Write the traceback of ``error`` with the command line to a new file; its path."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    text = (f"pycdr internal error\ncommand: {' '.join(sys.argv)}\npython: {sys.version}\n\n"
            + "".join(traceback.format_exception(type(error), error, error.__traceback__)))
    for folder in (report_folder(), os.path.join(tempfile.gettempdir(), "pycdr-reports")):
        try:
            os.makedirs(folder, exist_ok=True)
            fd, path = tempfile.mkstemp(prefix=f"pycdr-{stamp}-", suffix=".txt", dir=folder)
        except OSError:
            continue
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return path
    return "(nowhere: no writable cache or temp folder)"


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


class _LazyGroup(click.Group):
    """Imports a subcommand's module when that command runs: `pycdr pcap` does
    not pay for the ORB, asyncio and the IDL front end (a third of a second).

    Whatever a command lets escape ends in one line, never a traceback: an
    exception that is not one of the command's own answers is a bug, told with the
    path of a saved report (EXIT_INTERNAL)."""

    def list_commands(self, ctx) -> list:
        return sorted(_command_name(m, a) for m, a in SUBCOMMANDS
                      if _command_name(m, a) not in HIDDEN)

    def get_command(self, ctx, name):
        for module, attribute in SUBCOMMANDS:
            if _command_name(module, attribute) == name:
                return getattr(importlib.import_module(f"pycdr.cli.{module}"), attribute)
        return None

    def main(self, args=None, *rest, standalone_mode: bool = True, **kwargs):
        """Click's errors as one line: ``pycdr decode: error: ... (pycdr decode --help)``.
        A bare ``--json`` is ``--json=-`` (cli/options.py: its FILE is optional)."""
        from .options import detached_json_file, json_arguments
        given = list(sys.argv[1:] if args is None else args)
        args = json_arguments(given)
        if not standalone_mode:
            return super().main(args, *rest, standalone_mode=False, **kwargs)
        try:
            status = super().main(args, *rest, standalone_mode=False, **kwargs)
        except click.exceptions.UsageError as e:
            if type(e).__name__ == "NoArgsIsHelpError" and e.ctx is not None:
                # (a group given no command: its help, as Click shows it)
                click.echo(e.ctx.get_help())
                sys.exit(e.exit_code)
            where = e.ctx.command_path if e.ctx is not None else "pycdr"
            message = e.format_message()
            message = detached_json_file(given, message) or message
            click.echo(f"{where}: error: {one_line(message)} (see {where} --help)", err=True)
            sys.exit(e.exit_code)
        except click.exceptions.ClickException as e:
            click.echo(f"pycdr: error: {one_line(e.format_message())}", err=True)
            sys.exit(e.exit_code)
        except click.Abort:
            click.echo("pycdr: aborted", err=True)
            sys.exit(EXIT_BAD_INPUT)
        sys.exit(status if isinstance(status, int) else EXIT_OK)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort,
                SystemExit):
            raise
        except KeyboardInterrupt:
            click.echo("pycdr: interrupted", err=True)
            sys.exit(130)
        except BrokenPipeError:
            # `pycdr ... | head`: the reader left; nothing more to say to it.
            try:
                sys.stdout = open(os.devnull, "w")
            except OSError:
                pass
            sys.exit(EXIT_OK)
        except MemoryError:
            click.echo("pycdr: out of memory", err=True)
            sys.exit(EXIT_BAD_INPUT)
        except Exception as e:  # noqa: BLE001 - the one place every other exception ends
            path = save_report(e)
            click.echo(f"pycdr: internal error: {one_line(f'{type(e).__name__}: {e}')}; "
                       f"report saved to {path}", err=True)
            sys.exit(EXIT_INTERNAL)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pycdr")
def main() -> None:
    """pycdr: CORBA CDR/GIOP/IIOP analyzer, conformance suite and reference ORB."""
    # A library's log records reach the user only where a command asks for them (serve
    # -v): not through logging's last-resort handler, as lines of a server's log.
    logging.getLogger("pycdr").addHandler(logging.NullHandler())

    start_run()

# --help lists the exit statuses of the module's docstring (\b: Click keeps the lines).
main.help += "\n\nExit statuses:\n\n\b\n" + "\n".join(
    f"{status:>3}  {meaning.split(' (')[0].split(': ')[0]}" for status, meaning in exit_statuses())


if __name__ == "__main__":
    main()
