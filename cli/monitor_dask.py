"""`pycdr monitor --engine dask FILES --parquet DIR`: the files as tasks on Dask's
distributed scheduler (pycdr.capture.dask_monitor), on a LocalCluster of this machine
unless --scheduler names one."""

from __future__ import annotations

import logging
import os
import sys

import click

from pycdr.errors import PycdrError

from .main import EXIT_BAD_INPUT, EXIT_UNREACHABLE

# How long --scheduler's scheduler has to answer.
CONNECT_SECONDS = 10.0


def run_dask(files, parquet, *, scheduler, workers, shard_size, ior_files, idl_files,
             options, read_iors) -> None:
    """Runs the files on the cluster, prints the summary; exits with the documented
    statuses.  ``read_iors``: cli.monitor's reader of --ior files."""
    if len(set(map(os.path.realpath, files))) != len(files):
        raise click.UsageError("--engine dask: a FILE is given twice")
    try:
        from pycdr.capture.dask_monitor import SHARD_SIZE, monitor_files
        from distributed import Client, LocalCluster
    except ImportError as e:
        _fail(f"--engine dask needs {e.name or 'dask.distributed'}: "
              "pip install 'pycdr[dask]'", EXIT_BAD_INPUT)
    try:
        if ior_files:
            options["interfaces"] = read_iors(ior_files)
        if idl_files:
            from pycdr import idl
            for path in idl_files:        # (here, so that a bad one is one line, once)
                idl.load(path, register=False)
            options["idl"] = list(idl_files)
    except PycdrError as e:
        _fail(str(e), EXIT_BAD_INPUT)
    cluster = client = None
    try:
        if scheduler is not None:
            try:
                client = Client(scheduler, timeout=CONNECT_SECONDS)
            except ValueError as e:
                raise click.UsageError(f"--scheduler {scheduler}: {e}") from None
            except (OSError, TimeoutError) as e:
                _fail(f"cannot reach the Dask scheduler at {scheduler} ({e})",
                      EXIT_UNREACHABLE)
            where = f"the scheduler at {scheduler}"
        else:
            workers = workers or os.cpu_count() or 1
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   host="127.0.0.1", scheduler_port=0,
                                   dashboard_address=None, silence_logs=logging.ERROR)
            client = Client(cluster)
            where = f"{workers} local worker{'s' if workers != 1 else ''}"
        try:
            run = monitor_files(client, list(files), parquet, options=options,
                                shard_size=shard_size or SHARD_SIZE)
        except OSError as e:
            _fail(f"{parquet}: cannot write ({e.strerror or e})", EXIT_BAD_INPUT)
        except KeyboardInterrupt:
            _fail("interrupted", EXIT_BAD_INPUT)
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    click.echo(run.counts().summary(), err=True)
    shards = f", {run.shards} of them in connection shards" if run.shards else ""
    reruns = f"; {run.reruns} run again as one process would" if run.reruns else ""
    click.echo(f"{len(files)} file{'s' if len(files) != 1 else ''}{shards}, {run.tasks} "
               f"task{'s' if run.tasks != 1 else ''}{reruns}: {run.rows} calls in "
               f"{run.parts} Parquet files written under {parquet} in {run.seconds:.1f} s "
               f"on {where}", err=True)
    if run.failures:
        for line in run.failures:
            click.echo(f"error: {line}", err=True)
        sys.exit(EXIT_BAD_INPUT)


def _fail(message: str, status: int) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(status)
