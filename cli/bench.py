"""`pycdr bench marshal|ttcp|param`: the benchmarks of benchmarks/ (issue 7), with tables,
JSON and PNG plots.

The benchmark programs live in the repository's benchmarks/ folder, next to their peer
scripts and IDL; they are not part of the installed package, so this command needs a
checkout (pycdr installed from it, e.g. ``pip install -e '.[test,bench]'``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

import click

from .main import EXIT_BAD_INPUT, EXIT_USAGE
from .options import shared, write_json

BENCHMARKS = ("marshal", "ttcp", "param")


def benchmarks_dir() -> str | None:
    """The checkout's benchmarks/ folder (beside the pycdr package), or None."""
    import pycdr
    folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(pycdr.__file__))),
                          "benchmarks")
    return folder if os.path.isfile(os.path.join(folder, "bench_ttcp.py")) else None


def load_benchmark(name: str):
    folder = benchmarks_dir()
    if folder is None:
        raise click.ClickException(
            "the benchmarks need a checkout of pycdr (benchmarks/ beside the pycdr package); "
            "this pycdr is installed without it: clone the repository and "
            "pip install -e '.[test,bench]'")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(f"bench_{name}")


def _progress(text: str) -> None:
    click.echo(f"  {text}", err=True)


def _run_marshal(module, args, quick: bool) -> dict:
    sizes = args.sizes or ([1] if quick else list(module.SIZES_KB))
    return module.run(sizes=sizes, types=args.types, orders=args.orders, quick=quick,
                      progress=lambda text: _progress(f"measuring {text}"))


def _marshal_arguments(module, parser) -> None:
    parser.add_argument("--types", type=module._comma_list, default=list(module.TYPES))
    parser.add_argument("--sizes", type=module._sizes, default=None)
    parser.add_argument("--orders", type=module._comma_list, default=["BE", "LE"])


@click.command("bench", context_settings={"ignore_unknown_options": True,
                                          "help_option_names": ["-h", "--help"]})
@click.argument("benchmark", type=click.Choice(BENCHMARKS))
@click.option("--quick", is_flag=True, help="A smoke run in seconds (numbers not meaningful).")
@shared("--json", "json_file", more="The results, besides the tables.")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), default=None,
              help="Also write PNG plots (matplotlib) into this folder.")
@click.argument("options", nargs=-1, type=click.UNPROCESSED)
def cmd(benchmark, quick, json_file, plot_dir, options):
    """Run a benchmark and print its tables with ratios against the peers measured in the
    same run: marshal (encode/decode MB/s against omniORBpy, pycdr2 and a bytes copy), ttcp
    (Mbit/s through the reference ORB, omniORBpy and a raw socket stream) or param
    (Param_Test twoway calls/s, static and DII, against omniORBpy).

    OPTIONS after the benchmark name go to it, e.g. `pycdr bench ttcp --types double
    --sizes 64,128 --mb 16 --arrays`; `pycdr bench ttcp -- --help` lists them.
    """
    module = load_benchmark(benchmark)
    parser = argparse.ArgumentParser(prog=f"pycdr bench {benchmark}", add_help=True)
    if benchmark == "marshal":
        _marshal_arguments(module, parser)
    else:
        module.add_arguments(parser)
    try:
        args = parser.parse_args([o for o in options if o != "--"])
    except SystemExit as e:
        sys.exit(EXIT_USAGE if e.code else 0)
    if benchmark != "marshal":
        args.quick = args.quick or quick
    try:
        if benchmark == "marshal":
            results = _run_marshal(module, args, quick)
        else:
            results = module.run_from_arguments(args, progress=_progress)
    except (ValueError, module.BenchmarkError) as e:
        click.echo(f"bench {benchmark}: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except Exception as e:    # a peer process that failed (benchprocs.PeerError)
        if type(e).__name__ != "PeerError":
            raise
        click.echo(f"bench {benchmark}: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    click.echo(module.format_tables(results))
    if json_file:
        write_json(json_file, results, indent=1)
    if plot_dir:
        try:
            if benchmark == "marshal":
                from benchplot import plot_marshal
                paths = plot_marshal(results, plot_dir)
            else:
                paths = module.plot(results, plot_dir)
        except ImportError as e:
            raise click.ClickException(str(e)) from None
        for path in paths:
            click.echo(f"wrote {path}", err=True)
