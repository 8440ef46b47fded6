"""`pycdr conformance [TARGET]`: the conformance suite against an endpoint, or
against the reference ORB started in-process when no target is given."""

from __future__ import annotations

import json
import sys

import click

from pycdr.conformance.cases import TOLERANCE_CODES

from .failures import check_target, explain, stop
from .main import EXIT_BAD_INPUT, EXIT_OK, EXIT_USAGE
from .options import old_spelling, open_output, shared
from .reference import read_reference
from .tls import tls_options


@click.command("conformance")
@click.argument("target", required=False)
@shared("--json", "json_file", more="Every verdict with the bytes sent and received.")
@shared("--junit", "junit_file")
@click.option("--group", "groups", multiple=True,
              help="Only these groups (locate, request, version, fragment, malformed, echo, "
                   "align); repeatable.")
@click.option("--no-wide", is_flag=True,
              help="Do not send wchar/wstring (some ORBs abort the process on them).")
@click.option("--pcap-dir", "pcap_dir", type=click.Path(file_okay=False),
              help="Write one pcap a case (bytes sent and received) into this folder.")
@old_spelling("--pcap", "pcap_dir", new="--pcap-dir", type=click.Path(file_okay=False))
@click.option("--list", "list_only", is_flag=True,
              help="List the cases (with the bytes each sends) and exit.")
@click.option("--client", "client_command", metavar="CMD",
              help="Test an ORB's client instead: serve crafted objects and run CMD against each "
                   "({ior} or {corbaloc} replaced by the reference; {operation} and {args} by the "
                   "echo.idl operation to call and its JSON arguments; the optional {count} by "
                   "the number of calls to make at once). CMD prints what it got as one JSON "
                   "line a call (see README, 'Testing an ORB's client'). A CMD with {batch} "
                   "instead is started once and given each case as a JSON line on its "
                   "standard input; it ends each case's output with {\"exit\": STATUS}.")
@click.option("--tolerated-reason", "tolerated_reasons", multiple=True,
              type=click.Choice(sorted(TOLERANCE_CODES)),
              help="List only the tolerated deviations with this reason code (repeatable): "
                   + "; ".join(f"{k}: {v}" for k, v in TOLERANCE_CODES.items()) + ".")
@tls_options
def conformance_cmd(target, json_file, junit_file, groups, no_wide, pcap_dir, list_only,
                    client_command, tolerated_reasons, tls):
    """Run the GIOP conformance suite against TARGET (an IOR, a corbaloc or corbaname URL,
    or host:port). Without TARGET, against the built-in reference ORB.

    With --client CMD, test an ORB's client against crafted servers instead.

    TARGET may also be a file holding the reference (a path or file:// URL) or '-'.

    Exit status: 0 when no case failed, 1 when some did, 2 for a usage error
    (an unusable client command); when the target gives no GIOP answer, the status
    of the cause (pycdr --help)."""
    if client_command is not None:
        if target:
            click.echo("error: give a TARGET or --client, not both", err=True)
            sys.exit(EXIT_USAGE)
        run = _client_run(client_command, groups, no_wide, list_only)
        _write_reports(run, tolerated_reasons, json_file, junit_file, pcap_dir)
        return
    from pycdr.conformance.suite import Suite, target_or_reference
    from pycdr.conformance.target import TargetError
    from pycdr.errors import PycdrError
    from pycdr.orb.naming import NamingError
    from pycdr.orb.tls import TLSConfigError
    from .names import naming_exit
    if target:
        target = read_reference(target)
        if not list_only:
            check_target(target, tls)       # answers in GIOP?  If not, why not, at once.
    try:
        from rich.progress import Progress
    except ImportError:  # pragma: no cover - rich is a dependency
        Progress = None
    with target_or_reference(target) as endpoint:
        try:
            suite = Suite(endpoint, wide_chars=not no_wide, groups=set(groups) or None,
                          tls=tls)
        except TLSConfigError as e:
            click.echo(str(e), err=True)
            sys.exit(EXIT_USAGE)
        except NamingError as e:        # a corbaname: TARGET the naming service refused
            naming_exit(e)
        except OSError as e:
            stop(explain(e, None, tls, 3.0))
        except (TargetError, PycdrError) as e:      # the reference's text
            click.echo(f"error: {e}", err=True)
            sys.exit(EXIT_BAD_INPUT)
        if list_only:
            from pycdr.conformance.rendering import render_case
            for case in suite.cases:
                click.echo(f"{case.id}  {case.title}  [{case.spec}]")
                for t in case.tolerate:
                    click.echo(f"    tolerated [{t.code}]: {t.expect} - {t.reason}")
                if case.rationale:
                    click.echo(f"    why: {case.rationale}")
                if not suite.runner.applicable(case):
                    for data in render_case(case, suite.runner.ctx):
                        click.echo(f"    {data.hex()}")
            sys.exit(EXIT_OK)
        if suite.target.tls is not None:
            click.echo(f"over TLS to {suite.target.host}:{suite.target.port}")
        if Progress is not None and sys.stderr.isatty():
            with Progress(transient=True) as progress:
                task = progress.add_task("conformance", total=len(suite.cases))
                for case in suite.cases:
                    suite.run_case(case)
                    progress.advance(task)
                    progress.update(task, description=case.id[:48])
            suite.run.elapsed = sum(r.elapsed for r in suite.run.results)
        else:
            suite.run_all()
    _write_reports(suite.run, tolerated_reasons, json_file, junit_file, pcap_dir)


def _client_run(command, groups, no_wide, list_only):
    from pycdr.conformance.client_cases import client_catalog
    from pycdr.conformance.client_runner import ClientCommandError, check_command, \
        run_client_suite
    cases = [c for c in client_catalog() if not groups or c.group in groups]
    try:
        check_command(command)
    except ClientCommandError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(EXIT_USAGE)
    if list_only:
        for case in cases:
            click.echo(f"{case.id}  {case.title}  [{case.spec}]  ({case.operation}, "
                       f"script {case.script})")
            for t in case.tolerate:
                click.echo(f"    tolerated [{t.code}]: {t.expect} - {t.reason}")
            if case.rationale:
                click.echo(f"    why: {case.rationale}")
        sys.exit(EXIT_OK)

    def progress(result):
        if sys.stderr.isatty():
            click.echo(f"{result.verdict:>9}  {result.case.id}", err=True)
    try:
        return run_client_suite(command, cases, wide_chars=not no_wide, progress=progress)
    except ClientCommandError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(EXIT_USAGE)


def _write_reports(run, tolerated_reasons, json_file, junit_file, pcap_dir):
    from pycdr.conformance import report
    from pycdr.conformance.runner import FAIL
    # (JSON on stdout: the summary goes to stderr, so that stdout is JSON alone)
    to_stderr = json_file == "-"
    for line in report.summary_lines(run, set(tolerated_reasons) or None):
        click.echo(line, err=to_stderr)
    click.echo(f"{len(run.results)} cases in {run.elapsed:.1f} s", err=to_stderr)
    if json_file:
        f = open_output(json_file)
        json.dump(report.client_run_json(run) if hasattr(run, "command")
                  else report.to_json(run), f, indent=1, allow_nan=False)
        f.write("\n")
        if f is not sys.stdout:
            f.close()
    if junit_file:
        with open(junit_file, "w") as f:
            f.write(report.to_junit(run))
    if pcap_dir:
        paths = report.export_pcaps(run, pcap_dir)
        click.echo(f"{len(paths)} pcaps written to {pcap_dir}", err=to_stderr)
    sys.exit(EXIT_BAD_INPUT if run.counts.get(FAIL) else EXIT_OK)
