"""`pycdr monitor FILE... | -i IFACE`: every GIOP call as a row (pycdr.calls.schema)."""

from __future__ import annotations

import socket
import sys

import click

from pycdr.errors import PycdrError

from .main import EXIT_BAD_INPUT


@click.command("monitor")
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "json_out", type=click.Path(dir_okay=False, allow_dash=True),
              help="Write the calls as JSON Lines to this file ('-': stdout).")
@click.option("--parquet", "parquet", type=click.Path(file_okay=False),
              help="Write the calls as Parquet under this directory, partitioned by date "
                   "and hour (needs pyarrow: pip install 'pycdr[parquet]').")
@click.option("--idl", "idl_files", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="IDL file whose operations decode arguments and results into the "
                   "arguments/result columns (repeatable).")
@click.option("--ior", "ior_files", multiple=True,
              type=click.Path(exists=True, dir_okay=False),
              help="File of object references (IOR: strings, one a line) whose objects' "
                   "interfaces are known from the start (repeatable).")
@click.option("-p", "--port", "ports", multiple=True, type=click.IntRange(1, 65535),
              help="TCP port carrying GIOP (default 683 and 2809; GIOP magic is found anywhere).")
@click.option("-i", "--interface",
              help="Capture live from this interface instead of reading FILEs (libpcap; needs "
                   "capture rights).  Ctrl-C ends it.")
@click.option("-f", "--filter", "bpf",
              help="With -i: a capture filter (BPF), e.g. 'tcp port 2809'.")
@click.option("-w", "--write", "save", type=click.Path(dir_okay=False),
              help="With -i: also save the packets to this pcap file.")
@click.option("-c", "--count", type=int, help="With -i: stop after this many packets.")
@click.option("--duration", type=float, help="With -i: stop after this many seconds.")
@click.option("--sensor", default=None,
              help="The sensor column of every row (default: live, this host's name).")
@click.option("--max-pending", type=click.IntRange(1), default=100_000, show_default=True,
              help="Requests waiting for their reply held at most (the oldest beyond "
                   "become no_reply rows).")
@click.option("--max-age", type=click.FloatRange(0, min_open=True), default=600.0,
              show_default=True,
              help="Seconds a request waits for its reply before it becomes a no_reply row.")
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
def cmd(files, json_out, parquet, idl_files, ior_files, ports, interface, bpf, save, count,
        duration, sensor, max_pending, max_age, engine, scheduler, workers, shard_size):
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
    if bool(files) == (interface is not None):
        raise click.UsageError("give capture FILEs or -i INTERFACE (one of them)")
    if interface is None and (bpf or save or count or duration):
        raise click.UsageError("-f, -w, -c and --duration go with -i")
    if engine == "dask":
        if interface is not None or json_out or not parquet:
            raise click.UsageError("--engine dask reads FILEs and writes Parquet only: "
                                   "give --parquet DIR (no -i, no --json)")
        if scheduler is not None and workers is not None:
            raise click.UsageError("--scheduler and --workers: one of them")
        from .monitor_dask import run_dask
        return run_dask(files, parquet, scheduler=scheduler, workers=workers,
                        shard_size=shard_size, ior_files=ior_files, idl_files=idl_files,
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
        if ior_files:
            interfaces = _read_iors(ior_files)
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
        if not sinks:
            sinks.append(TextLines(sys.stdout, flush=flush))
    except PycdrError as e:
        if live is not None:
            live.close()
        click.echo(f"error: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    from pycdr.calls.tracker import CallCounts
    adds = [s.add for s in sinks]
    counts = CallCounts()
    options = dict(ports=ports or None, bodies=bodies, interfaces=interfaces, counts=counts,
                   sensor=sensor if sensor is not None or live is None else
                   socket.gethostname(),
                   max_pending=max_pending, max_age_ns=int(max_age * 1e9))
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
    if failure is None or counts.rows:
        click.echo(counts.summary(), err=True)
    if failure is not None:
        sys.stdout.flush()
        click.echo(f"error: {failure}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if parquet:
        p = sinks[0]
        click.echo(f"{p.rows_written} calls in {p.files_written} Parquet files written under "
                   f"{parquet}", err=True)


def _write_error(e: Exception) -> PycdrError:
    return PycdrError(f"cannot write the output ({getattr(e, 'strerror', None) or e})")


def _read_iors(paths) -> "OrderedDict":
    """object key (hex) -> repository id of the IORs in ``paths`` (one a line)."""
    from collections import OrderedDict

    from pycdr.calls.tracker import CallTracker
    from pycdr.codec.ior import ior_from_string
    learner = CallTracker(lambda row: None, interfaces=OrderedDict())
    for path in paths:
        try:
            with open(path, encoding="ascii", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    text = line.strip()
                    if not text or text.startswith("#"):
                        continue
                    try:
                        learner.learn_ior(ior_from_string(text, lenient=True))
                    except PycdrError as e:
                        raise PycdrError(f"{path}, line {n}: not an IOR ({e})") from None
        except OSError as e:
            raise PycdrError(f"{path}: cannot read ({e.strerror})") from None
    return learner.interfaces
