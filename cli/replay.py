"""`pycdr replay CAPTURE --target ...`: a capture's calls sent again, every reply compared."""

from __future__ import annotations

import json
import sys

import click

from pycdr.errors import PycdrError
from pycdr.orb.naming import NamingError
from pycdr.orb.tls import TLSConfigError, TransportError
from pycdr.replay.compare import Comparison
from pycdr.replay.jobs import run_jobs
from pycdr.replay.recorded import QUEUE_MESSAGES
from pycdr.replay.runner import ReplayOptions, Replay
from pycdr.replay.session import DIFFERENT, FAILED, OperationFilter, Reencoding
from pycdr.replay.summary import ReplaySummary, difference_lines
from pycdr.replay.targets import ReplayError, parse_key, parse_targets

from .failures import check_answered, explain, stop
from .main import EXIT_BAD_INPUT, EXIT_OK
from .names import naming_exit
from .options import old_spelling, open_output, shared
from .reference import HOST_PORT, read_reference
from .tls import tls_options

# Differences printed on the terminal before the summary (all go to --json).
MAX_SHOWN = 20


@click.command("replay")
@click.argument("capture", type=click.Path(exists=True, dir_okay=False))
@shared("--target", "targets", multiple=True, required=True,
        more="A corbaname: is the object its naming service has under the name; with several "
             "recorded servers, OLDHOST:PORT=NEW for each (servers without one are skipped).")
@click.option("--object-key", "keys", multiple=True, metavar="OLD=NEW",
              help="Requests to recorded object key OLD go to NEW (text with %-escapes, or "
                   "0x<hex>; repeatable).")
@old_spelling("--key", "keys", new="--object-key", multiple=True)
@shared("--idl", "idl_files", multiple=True,
        more="Decodes the replies: results and out values compared one by one (repeatable).")
@shared("--port", "ports", multiple=True, type=click.IntRange(1, 65535),
        more="Carrying GIOP in the capture (default 683 and 2809; GIOP magic is found "
             "anywhere).")
@shared("--only", "only_ops")
@old_spelling("--only-op", "only_ops", new="--only", multiple=True)
@shared("--skip", "skip_ops")
@old_spelling("--skip-op", "skip_ops", new="--skip", multiple=True)
@shared("--rate", "rate", more="Messages (all connections together).")
@click.option("--window", type=click.IntRange(1, QUEUE_MESSAGES // 2), default=1,
              show_default=True,
              help="Calls of one connection that may wait for their reply at once.  1: as "
                   "recorded (a call whose reply the client waited for is waited for).  N > 1 "
                   "sends on without waiting (faster), except after a reply that may teach a "
                   "key; replies are still matched and compared one by one.  Risk: a target "
                   "that runs one connection's requests concurrently may then reorder calls "
                   "whose order matters (stateful servants).")
@shared("--timeout", "timeout", default=10.0, show_default=True, more="One reply.")
@click.option("--float-tolerance", type=click.FloatRange(min=0), default=0.0,
              help="With --idl: floats and doubles within this relative difference (absolute "
                   "below 1) are the same.")
@click.option("--ignore", "ignore", multiple=True,
              help="A path not compared, e.g. result.stamp or result.items[*].time "
                   "(repeatable; covers what lies under it).")
@shared("--giop", "giop", type=click.Choice(["1.0", "1.1", "1.2", "1.3"]),
        more="Sent instead of the recorded one (needs --idl: the arguments are encoded "
             "again; a fragmented request is joined, encoded again and cut as recorded, or "
             "sent whole in GIOP 1.0).")
@click.option("--byte-order", type=click.Choice(["big", "little"]),
              help="Send the requests in this byte order instead of the recorded one (needs "
                   "--idl, as --giop).")
@shared("--dry-run", "dry_run", more="Lists what would be sent.")
@shared("--json", "json_file", more="JSON Lines: one object a call.")
@shared("--junit", "junit_file")
@click.option("--pcap", "pcap_file", type=click.Path(dir_okay=False),
              help="Write the replay's traffic to this pcap file.")
@shared("--jobs", "jobs",
        more="Replaying the capture's connections (connections that "
                   "share a key a reply may teach stay in one; the capture is read once more "
                   "first to plan this).  With --dry-run: 1.")
@shared("--progress/--no-progress", "progress")
@tls_options(old_key=False)
def cmd(capture, targets, keys, idl_files, ports, only_ops, skip_ops, rate, window, timeout,
        float_tolerance, ignore, giop, byte_order, dry_run, json_file, junit_file, pcap_file,
        jobs, progress, tls):
    """Send the client messages of a CAPTURE again to a live endpoint and compare
    every reply with the recorded one.

    Request ids are renumbered, object keys mapped (the target reference's key,
    --object-key, and keys learned from replies), each recorded connection replayed on
    its own connection in order, the connections concurrently (with --jobs N, in
    N processes; the JSON lines of different connections may then come in
    another order than with one).  Exit status 0
    when every reply is the same, 1 when any differs or fails (or the capture is
    damaged), 3 when a target cannot be reached."""
    from pycdr.capture.giop import IdlBodyDecoder
    from pycdr.capture.read import CaptureReader
    if (giop or byte_order) and not idl_files:
        raise click.UsageError("--giop and --byte-order need --idl (the arguments are "
                               "encoded again)")
    try:
        default, mapped = parse_targets([_target_text(t) for t in targets], tls)
        key_map = dict(parse_key(k) for k in keys)
        idl = None
        if idl_files:
            from pycdr import idl as idl_frontend
            idl = IdlBodyDecoder([idl_frontend.load(p, register=False) for p in idl_files])
        reader = CaptureReader(capture)
    except ReplayError as e:
        raise click.UsageError(str(e)) from None
    except NamingError as e:            # a corbaname: --target the naming service refused
        naming_exit(e)
    except PycdrError as e:
        _fail(e)
    options = ReplayOptions(
        default_target=default, targets=mapped, keys=key_map,
        comparison=Comparison(idl, float_tolerance, ignore),
        selected=OperationFilter(only_ops, skip_ops), rate=rate, window=window,
        timeout=timeout, tls=tls,
        ports=ports or None, pcap=pcap_file, dry_run=dry_run,
        reencoding=Reencoding(idl.arguments, giop and tuple(int(p) for p in giop.split(".")),
                              None if byte_order is None else byte_order == "little")
        if giop or byte_order else None)
    summary = ReplaySummary()
    shown = [0]
    out_json = _open_json(json_file)

    def report(call) -> None:
        summary.add(call)
        explanation = _explained(call, idl) if call.outcome in (DIFFERENT, FAILED) else None
        if out_json is not None:
            entry = call.to_json()
            if explanation is not None:
                entry["explain"] = explanation.to_json()
            out_json.write(json.dumps(entry) + "\n")
        if call.outcome in (DIFFERENT, FAILED) and shown[0] < MAX_SHOWN and \
                out_json is not sys.stdout:
            shown[0] += 1
            click.echo("\n".join(difference_lines(call)))
            if explanation is not None:
                click.echo("".join(f"  explain: {line}\n" for line in explanation.lines()),
                           nl=False)

    def listing(call, data, rec) -> None:
        if call is None:
            click.echo(f"connection {rec.session.connection} -> {rec.target.describe()}: "
                       f"fragment, {len(data)} bytes")
            return
        state = call.outcome or "send"
        click.echo(f"connection {call.connection} -> {rec.target.describe()}: {state} "
                   f"{call.kind} {call.operation} request {call.recorded_id} -> "
                   f"{call.replay_id}" + (f", {len(data)} bytes" if data else "") +
                   (f" ({call.reason})" if call.reason else ""))

    # (with --json every call is written: none is only counted)
    replay = Replay(options, report, listing,
                    tally=summary.add_counted if out_json is None else None)
    if not dry_run:
        try:
            replay.check_targets(min(timeout, 5.0))
        except TransportError as e:
            stop(explain(e, None, tls, timeout))
        except TLSConfigError as e:
            _fail(e)

    if progress is None:
        progress = sys.stderr.isatty()
    skipped, capture_errors = replay.skipped, replay.capture_errors
    try:
        if jobs > 1 and not dry_run:
            # (a dry run lists the messages in capture order: one process)
            reader.close()
            if reader.size is None:
                raise click.UsageError("--jobs needs a capture that can be read more than "
                                       "once (a regular file, not a pipe)")
            plan = _run_jobs(capture, options, jobs, report, out_json is not None, summary,
                             progress, reader.size)
            skipped, capture_errors = plan.skipped, plan.capture_errors
            capture_error_count = plan.capture_error_count
        else:
            if progress and not dry_run:
                _run_with_progress(replay, reader, summary)
            else:
                replay.run(reader)
            capture_error_count = replay.capture_error_count
    except PycdrError as e:
        _fail(e)
    finally:
        if out_json is not None and out_json is not sys.stdout:
            out_json.close()
    if junit_file:
        with open(junit_file, "w") as f:
            f.write(summary.to_junit())
    if dry_run:
        _print_skipped(skipped)
        sys.exit(EXIT_OK)
    if out_json is not sys.stdout:
        _print_summary(summary)
    _print_skipped(skipped)
    totals = summary.totals()
    if totals["failed"]:
        # Calls failed: ask each target (now the replay is over) whether it speaks GIOP at
        # all, and say why not when it does not.
        for target in [*options.targets.values(), options.default_target]:
            if target is not None:
                check_answered(target.endpoint.host, target.endpoint.port,
                               tls if target.endpoint.tls else None, min(timeout, 5.0))
    if capture_error_count:
        click.echo(f"the capture is damaged: {capture_error_count} errors", err=True)
        for line in capture_errors:
            click.echo(f"  {line}", err=True)
    sys.exit(EXIT_OK if summary.ok and not capture_error_count else EXIT_BAD_INPUT)


def _target_text(text: str) -> str:
    """A --target value with its reference read as `pycdr call` reads one (a file, file://,
    '-', wrapped lines): NEW, or the NEW of OLDHOST:PORT=NEW."""
    old, sep, new = text.partition("=")
    if sep and HOST_PORT.fullmatch(old.strip()):
        return f"{old}={read_reference(new)}"
    return read_reference(text)


def _fail(e: BaseException):
    click.echo(f"error: {e}", err=True)
    sys.exit(EXIT_BAD_INPUT)


def _explained(call, idl):
    """`pycdr explain` of the request a call sent when a system exception answered it."""
    raw = bytes(call.replayed_raw)
    if call.kind != "request" or not call.sent_bytes or len(raw) < 12 or raw[7] != 1:
        return None
    from pycdr.explain import explain
    from pycdr.giop.messages import ReplyStatus, decode_message
    try:
        reply, _ = decode_message(raw, lenient=True)
    except PycdrError:
        return None
    if reply.reply_status != ReplyStatus.SYSTEM_EXCEPTION:
        return None
    return explain(bytes(call.sent_bytes), raw, decoder=idl)


def _open_json(path):
    return None if path is None else open_output(path)


def _run_with_progress(replay: Replay, reader, summary: ReplaySummary) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn
    with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                  "{task.fields[calls]}", TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(reader.name, total=reader.size, calls="")

        def update():
            t = summary.totals()
            bar.update(task, completed=reader.bytes_read,
                       calls=f"{t['calls']} calls, {t['same']} same, {t['different']} "
                             f"different, {t['failed']} failed")
        replay.run(reader, update)


def _run_jobs(capture, options, jobs: int, report, with_json: bool, summary, bar_wanted,
              size):
    """The replay by ``jobs`` workers (its plan returned), with the progress bar of one
    process's replay when ``bar_wanted`` (over the slowest worker's reading)."""
    if not bar_wanted:
        return run_jobs(capture, options, jobs, report, with_json)
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn
    with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                  "{task.fields[calls]}", TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(capture, total=size, calls="")

        def update(read: int):
            t = summary.totals()
            bar.update(task, completed=read,
                       calls=f"{t['calls']} calls, {t['same']} same, {t['different']} "
                             f"different, {t['failed']} failed")
        return run_jobs(capture, options, jobs, report, with_json, update)


def _print_summary(summary: ReplaySummary) -> None:
    from rich.console import Console
    from rich.table import Table
    table = Table(title="pycdr replay")
    for name in ("operation", "calls", "same", "different", "failed", "skipped",
                 "recorded p50 ms", "recorded p99 ms", "replayed p50 ms", "replayed p99 ms"):
        table.add_column(name, justify="left" if name == "operation" else "right")
    for op, stats in sorted(summary.operations.items()):
        j = stats.to_json()
        table.add_row(op, *(str(j[k]) for k in ("calls", "same", "different", "failed",
                                                "skipped")),
                      *("-" if j[k] is None else f"{j[k]:.3f}" for k in (
                          "recorded_p50_ms", "recorded_p99_ms", "replayed_p50_ms",
                          "replayed_p99_ms")))
    t = summary.totals()
    table.add_row("all", *(str(t[k]) for k in ("calls", "same", "different", "failed",
                                               "skipped")), "", "", "", "")
    Console(width=140).print(table)


def _print_skipped(skipped) -> None:
    for server, n in sorted(skipped.connections.items()):
        click.echo(f"skipped: recorded server {server} has no --target ({n} connections, "
                   f"{skipped.requests.get(server, 0)} client messages)", err=True)
