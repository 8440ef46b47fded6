"""`pycdr monitor FILE... | -i IFACE`: every GIOP call as a row (pycdr.calls.schema)."""

from __future__ import annotations

import socket
import sys

import click

from pycdr.errors import PycdrError

from .main import EXIT_BAD_INPUT, EXIT_UNREACHABLE
from .options import read_iors, shared


@click.command("monitor")
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@shared("--json", "json_out", more="JSON Lines: one call a line.")
@shared("--parquet", "parquet", type=click.Path(file_okay=False),
        more="Into this folder, partitioned by date and hour, each part renamed into place "
             "whole.")
@shared("--idl", "idl_files", multiple=True,
        more="Decodes arguments and results into the arguments/result columns (repeatable).")
@shared("--ior", "ior_values", more="Their objects' interfaces are known from the start.")
@shared("--port", "ports", multiple=True, type=click.IntRange(1, 65535),
        more="Carrying GIOP (default 683 and 2809; GIOP magic is found anywhere).")
@shared("--iface", "iface", more="Capture live instead of reading FILEs; Ctrl-C ends it.")
@shared("--filter", "bpf", more="With -i.")
@shared("--write", "save", more="With -i.")
@shared("--count", "count", more="With -i.")
@shared("--duration", "duration", more="With -i.")
@shared("--explain", "explain", more="Into the explain column (the requests waiting for a "
        "reply are kept for it).")
@click.option("--sensor", default=None,
              help="The sensor column of every row (default: live, this host's name).")
@click.option("--max-pending", type=click.IntRange(1), default=100_000, show_default=True,
              help="Requests waiting for their reply held at most (the oldest beyond "
                   "become no_reply rows).")
@click.option("--max-age", type=click.FloatRange(0, min_open=True), default=600.0,
              show_default=True,
              help="Seconds a request waits for its reply before it becomes a no_reply row.")
@click.option("--prometheus", "prometheus", metavar="HOST:PORT",
              help="Serve metrics of the calls at http://HOST:PORT/metrics for Prometheus "
                   "(needs pip install 'pycdr[monitor]').")
@click.option("--label-limit", type=click.IntRange(1), default=100, show_default=True,
              help="With --prometheus: distinct values a label takes at most; past it "
                   "new values count as 'other'.")
@click.option("--linger", type=click.FloatRange(0), default=0.0, show_default=True,
              help="With --prometheus: keep serving the metrics this many seconds after "
                   "the traffic ends (files read, capture stopped), so that scrapes see "
                   "the final values ('inf': until Ctrl-C).")
@click.option("--otlp", "otlp", metavar="URL",
              help="Send one OpenTelemetry span a call to this OTLP/HTTP receiver, e.g. "
                   "http://127.0.0.1:4318 (needs pip install 'pycdr[monitor]').")
@click.option("--engine", type=click.Choice(["local", "dask"]), default="local",
              show_default=True,
              help="dask: the FILEs as tasks on Dask's distributed scheduler, each writing "
                   "its own Parquet parts (--parquet only; pip install 'pycdr[dask]').")
@click.option("--scheduler", metavar="ADDR",
              help="With --engine dask: the scheduler to use (tcp://host:port); default a "
                   "local cluster of --workers processes.")
@click.option("--workers", type=click.IntRange(1),
              help="With --engine dask: worker processes of the local cluster (default: "
                   "the CPU count).")
@click.option("--shard-size", type=click.IntRange(1), metavar="BYTES",
              help="With --engine dask: files larger than this are split into connection "
                   "shards, one task a BYTES (default 256 MiB).")
def cmd(files, json_out, parquet, idl_files, ior_values, ports, iface, bpf, save, count,
        duration, explain, sensor, max_pending, max_age, prometheus, label_limit, linger, otlp,
        engine, scheduler, workers, shard_size):
    """Every GIOP call of capture files or a live interface as a row: a request with
    its reply (duration, status, exception), oneway, locate, cancel, unanswered and
    unmatched, gaps.  One line a call on stdout, or JSON Lines (--json), or Parquet
    (--parquet); the fields are in docs/monitor.md.

    Rows are written as calls end; memory stays flat whatever the size of the capture."""
    from collections import OrderedDict

    from pycdr.calls.output import PART_SECONDS_LIVE, JsonLines, ParquetDirectory, TextLines
    from pycdr.capture.live import LiveCapture
    from pycdr.capture.monitor import iter_calls
    from pycdr.capture.read import CaptureReader
    interface = iface
    if bool(files) == (interface is not None):
        raise click.UsageError("give capture FILEs or -i INTERFACE (one of them)")
    if interface is None and (bpf or save or count or duration):
        raise click.UsageError("--filter, -w, -c and --duration go with -i")
    if linger and not prometheus:
        raise click.UsageError("--linger goes with --prometheus")
    from pycdr.calls.tracker import CallCounts
    counts = CallCounts()
    metrics = spans = None
    if engine == "dask":
        if interface is not None or json_out or not parquet or prometheus or otlp or explain:
            raise click.UsageError("--engine dask reads FILEs and writes Parquet only: "
                                   "give --parquet DIR (no -i, --json, --prometheus, --otlp "
                                   "or --explain)")
        if scheduler is not None and workers is not None:
            raise click.UsageError("--scheduler and --workers: one of them")
        from .monitor_dask import run_dask
        return run_dask(files, parquet, scheduler=scheduler, workers=workers,
                        shard_size=shard_size, ior_files=ior_values, idl_files=idl_files,
                        options=dict(ports=ports or None, sensor=sensor,
                                     max_pending=max_pending,
                                     max_age_ns=int(max_age * 1e9)),
                        read_iors=_read_iors)
    if scheduler is not None or workers is not None or shard_size is not None:
        raise click.UsageError("--scheduler, --workers and --shard-size go with "
                               "--engine dask")
    sinks = []
    live = None
    json_file = None
    try:
        interfaces = OrderedDict()
        if ior_values:
            interfaces = _read_iors(ior_values)
        bodies = None
        if idl_files:
            from pycdr import idl
            from pycdr.calls.bodies import CallBodies
            bodies = CallBodies([idl.load(p, register=False) for p in idl_files])
        if interface is not None:
            live = LiveCapture(interface, bpf, count=count, duration=duration, save=save)
        flush = live is not None
        if parquet:
            try:
                sinks.append(ParquetDirectory(
                    parquet, part_seconds=PART_SECONDS_LIVE if live is not None else None))
            except ImportError:
                raise PycdrError("--parquet needs pyarrow: pip install 'pycdr[parquet]'") \
                    from None
            except OSError as e:
                raise PycdrError(f"{parquet}: cannot write ({e.strerror})") from None
        if json_out == "-":
            sinks.append(JsonLines(sys.stdout, flush=flush))
        elif json_out:
            try:
                json_file = open(json_out, "w")
            except OSError as e:
                raise PycdrError(f"{json_out}: cannot write ({e.strerror})") from None
            sinks.append(JsonLines(json_file, flush=flush))
        if prometheus:
            from pycdr.calls.metrics import CallMetrics, parse_address
            host, port = parse_address(prometheus)
            metrics = CallMetrics(counts, label_limit=label_limit, dropped=None if live is None
                                  else lambda: live.dropped)
            host, port = metrics.serve(host, port)
            shown = f"[{host}]" if ":" in host else host
            click.echo(f"metrics at http://{shown}:{port}/metrics", err=True)
        if otlp:
            import logging

            from pycdr.calls.traces import CallSpans
            # The SDK logs each retry with the HTTP library's exception text: the lost
            # spans are said once here instead.
            logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)
            spans = CallSpans(otlp, sensor=sensor if sensor is not None or live is None
                              else socket.gethostname(), on_failure=lambda: click.echo(
                f"warning: --otlp {otlp}: the receiver did not take a batch of spans "
                "(is it listening?); the next batches are tried", err=True))
        if not sinks and metrics is None and spans is None:
            sinks.append(TextLines(sys.stdout, flush=flush))
        sinks += [s for s in (metrics, spans) if s is not None]
    except PycdrError as e:
        for s in (live, metrics):
            if s is not None:
                s.close()
        click.echo(f"error: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    adds = [s.add for s in sinks]
    options = dict(ports=ports or None, bodies=bodies, interfaces=interfaces, counts=counts,
                   sensor=sensor if sensor is not None or live is None else
                   socket.gethostname(),
                   max_pending=max_pending, max_age_ns=int(max_age * 1e9),
                   on_request=None if spans is None else spans.request)
    if explain:
        from .explain import explain_column
        options["explain"] = explain_column(idl_files)
    failure = None
    try:
        if live is not None:
            # Ctrl-C (or SIGTERM) ends the capture as -c/--duration do: the packets read
            # are decoded and the calls still waiting end as no_reply rows.
            import signal

            def stop(signum, _frame):
                live.stop()
                signal.signal(signum, signal.default_int_handler)   # a second one: now
            for signum in (signal.SIGINT, signal.SIGTERM):
                signal.signal(signum, stop)
            click.echo(f"capturing on {interface}", err=True)
            sources = [(None, CaptureReader(live.stream))]
        else:
            sources = ((path, None) for path in files)
        for path, reader in sources:
            if reader is None:
                reader = CaptureReader(path)
            for row in iter_calls(reader=reader, capture_file=path, **options):
                for add in adds:
                    add(row)
        if linger and (live is None or live.failure() is None):
            _linger(linger)
    except PycdrError as e:
        failure = e
    except BrokenPipeError:
        sys.stderr.close()      # `pycdr monitor F | head`: the reader left; nothing to say
        sys.exit(0)
    except (OSError, ValueError) as e:      # an output that cannot be written (disk full)
        failure = _write_error(e)
    except KeyboardInterrupt:
        failure = PycdrError("interrupted")
    finally:
        if live is not None:
            live.close()
        for s in sinks:                       # (the rows read so far, whatever happened)
            try:
                s.close()
            except BrokenPipeError:
                sys.stderr.close()
                sys.exit(0)
            except (OSError, ValueError) as e:
                failure = failure or _write_error(e)
        if json_file is not None:
            try:
                json_file.close()
            except OSError as e:
                failure = failure or _write_error(e)
    if live is not None and failure is None:
        failure = live.failure()
    lost = None
    if spans is not None and spans.failed:
        lost = PycdrError(f"--otlp {otlp}: {spans.failed} of {spans.spans} spans could "
                          "not be sent")
    if failure is None or counts.rows:
        click.echo(counts.summary(), err=True)
    if live is not None:
        # Without it a capture that lost packets would look whole: its calls end as gaps,
        # orphan replies or no_reply rows with nothing to say why.
        click.echo(f"{live.packets} packets captured on {interface}, {live.dropped} "
                   "dropped (libpcap's count)", err=True)
    if failure is not None:
        sys.stdout.flush()
        click.echo(f"error: {failure}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if lost is not None:
        click.echo(f"error: {lost}", err=True)
        sys.exit(EXIT_UNREACHABLE)
    if parquet:
        p = sinks[0]
        click.echo(f"{p.rows_written} calls in {p.files_written} Parquet files written under "
                   f"{parquet}", err=True)


def _linger(seconds: float) -> None:
    """Keep serving the metrics ``seconds`` more (Ctrl-C ends it at once)."""
    import signal
    import time
    signal.signal(signal.SIGINT, signal.default_int_handler)
    click.echo(f"serving the final metrics for {seconds:g} s more (Ctrl-C ends)", err=True)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            time.sleep(min(1.0, deadline - time.monotonic()))
    except KeyboardInterrupt:
        pass


def _write_error(e: Exception) -> PycdrError:
    return PycdrError(f"cannot write the output ({getattr(e, 'strerror', None) or e})")


def _read_iors(values) -> "OrderedDict":
    """object key (hex) -> repository id of the IORs ``--ior`` gives."""
    from collections import OrderedDict

    from pycdr.calls.tracker import CallTracker
    learner = CallTracker(lambda row: None, interfaces=OrderedDict())
    for ior in read_iors(values):
        learner.learn_ior(ior)
    return learner.interfaces
