"""`pycdr fuzz TARGET`: a protocol-aware GIOP fuzzer (pycdr.fuzz)."""

from __future__ import annotations

import json
import os
import random
import sys
import time

import click

from pycdr.errors import PycdrError
from pycdr.orb.tls import TLSConfigError

from .failures import check_target, explain, stop
from .main import EXIT_BAD_INPUT, EXIT_OK, EXIT_USAGE
from .options import shared, write_json
from .reference import read_reference
from .tls import tls_options
from .warn import warn


class CoverageKind(click.ParamType):
    """--coverage: state, sancov, none, or jacoco:HOST:PORT (a JaCoCo agent's tcpserver)."""
    name = "coverage"

    def get_metavar(self, *args, **kwargs):
        return "[state|sancov|none|jacoco:HOST:PORT]"

    def convert(self, value, param, ctx):
        if value in ("state", "sancov", "none"):
            return value
        if value.startswith("jacoco:"):
            from pycdr.fuzz.jacoco import JacocoError, parse_address
            try:
                parse_address(value[len("jacoco:"):])
            except JacocoError as e:
                self.fail(str(e), param, ctx)
            return value
        self.fail(f"{value!r} is not one of state, sancov, none, jacoco:HOST:PORT", param, ctx)


def _seed_sources(idl_file, interface, corpus, seed, no_catalog):
    from pycdr.fuzz import seeds as S

    def build(target):
        out = [] if no_catalog else S.catalog_seeds(target)
        if idl_file:
            out += S.idl_seeds(idl_file, interface, target.object_key,
                               rng=random.Random(f"{seed}:idl"))
        if corpus:
            out += S.pcap_seeds(corpus)
        return out
    return build


# The GIOP versions the coverage table has a column each for; a mutated version
# (havoc flips its bytes: dozens of them) counts under "other".
TABLE_VERSIONS = ("1.0", "1.1", "1.2", "1.3", "?")


def _version_column(version: str) -> str:
    return version if version in TABLE_VERSIONS else "other"


def _coverage_table(stats):
    from rich.table import Table
    columns = {_version_column(v) for (_, v, _) in stats.coverage}
    versions = [v for v in TABLE_VERSIONS + ("other",) if v in columns]
    mutators = sorted({m for (_, _, m) in stats.coverage})
    types = sorted({t for (t, _, _) in stats.coverage})
    table = Table(title="coverage: cases per mutator x GIOP version", show_lines=False)
    table.add_column("mutator")
    for v in versions:
        table.add_column(v, justify="right")
    for m in mutators:
        table.add_row(m, *[str(sum(n for (t, vv, mm), n in stats.coverage.items()
                                   if mm == m and _version_column(vv) == v))
                           for v in versions])
    table.caption = "message types: " + ", ".join(
        f"{t} {sum(n for (tt, _, _), n in stats.coverage.items() if tt == t)}" for t in types)
    return table


def _status(campaign):
    from rich.console import Group
    from rich.text import Text
    s = campaign.stats
    head = Text(f"target {campaign.target.describe()}  seed {campaign.seed}  cases {s.cases}  "
                f"{s.rate:.0f} cases/s  pipelined {s.pipelined}  isolated {s.isolated}  "
                f"probes {s.probes}  restarts {s.restarts}\n"
                f"breakages seen: " + (", ".join(f"{k} {n}" for k, n in sorted(s.findings.items()))
                                       or "none") +
                f"  (findings {len(campaign.findings)}, unconfirmed {len(campaign.unconfirmed)})\n"
                f"outcomes: " + (", ".join(f"{k} {n}" for k, n in sorted(s.outcomes.items()))
                                 or "none") +
                f"  wait {1000 * campaign.answer_timeout():.0f} ms")
    return Group(head, _coverage_table(s))


def _echo_sanitizer(finding) -> None:
    """Under a finding's line: the sanitizer's report, when the target left one
    (its kind and top three frames)."""
    report = finding.details.get("sanitizer")
    if report:
        click.echo(f"       {report['sanitizer']}: {report['kind']}"
                   + "".join(f"\n         {frame}" for frame in report["frames"][:3]))


def _coverage_shim(build_dir) -> None:
    """`pycdr fuzz coverage-shim`: the shim's source path, or (--build DIR) the
    object compiled from it."""
    import shutil
    import subprocess
    from importlib.resources import files
    source = str(files("pycdr.fuzz") / "coverage_shim.c")
    if not build_dir:
        click.echo(source)
        sys.exit(EXIT_OK)
    clang = shutil.which("clang")
    if clang is None:
        click.echo("cannot build the coverage shim: clang is not on PATH", err=True)
        sys.exit(EXIT_USAGE)
    try:
        os.makedirs(build_dir, exist_ok=True)
    except OSError as e:
        click.echo(f"cannot build the coverage shim: {build_dir}: {e.strerror}", err=True)
        sys.exit(EXIT_USAGE)
    out = os.path.join(os.path.abspath(build_dir), "pycdr_coverage_shim.o")
    done = subprocess.run([clang, "-c", "-O2", "-fPIC", source, "-o", out],
                          capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        click.echo(f"cannot build the coverage shim: clang failed: {last}", err=True)
        sys.exit(EXIT_USAGE)
    click.echo(out)
    sys.exit(EXIT_OK)


@click.command("fuzz")
@click.argument("target", required=False)
@click.option("--max-cases", type=int, default=None, help="Stop after this many cases.")
@shared("--duration", "duration")
@shared("--rate", "rate", more="Cases.")
@shared("--seed", more="Of the campaign (default: random, printed).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="fuzz-findings",
              show_default=True, help="Folder for the findings.")
@shared("--json", "json_out", more="A summary instead of the display.")
@click.option("--spawn", default=None,
              help="Start the target with this command (its IOR or corbaloc URL is read "
                   "from its output); restart it after a crash or hang.")
@click.option("--no-standby", is_flag=True,
              help="Under --spawn, do not start the next target process while the current "
                   "one runs (a restart then waits for the target to start).")
@shared("--idl", "idl_file", more="Seeds with requests for its operations (with --interface).")
@shared("--interface", "interface", more="Of --idl.")
@click.option("--corpus", type=click.Path(exists=True, file_okay=False),
              help="Seed with the client messages of the pcaps in this folder.")
@click.option("--no-catalog", is_flag=True, help="Do not seed with the conformance catalog.")
@shared("--timeout", "timeout", default=1.0, show_default=True,
        more="The longest wait for an answer or a probe; shorter waits are learned from the "
             "target's answer times.")
@click.option("--connections", type=click.IntRange(1, 64), default=32, show_default=True,
              help="Connections open at once for cases that need one each.")
@click.option("--probe-interval", type=float, default=2.0, show_default=True,
              help="Seconds between liveness probes.")
@click.option("--rss-limit", type=float, default=256.0, show_default=True,
              help="MB of RSS growth of a --spawn target that make a memory finding.")
@click.option("--no-minimize", is_flag=True, help="Save findings without minimizing them.")
@click.option("--replay", "replay_dir", type=click.Path(exists=True, file_okay=False),
              help="Send a saved finding's messages again and say whether it reproduces.")
@click.option("--coverage", type=CoverageKind(), default="state",
              show_default=True,
              help="Feedback that steers the mutations: what the target answered (state), "
                   "the edges of a --spawn target built with the coverage shim (sancov), "
                   "the probes of a JVM target's JaCoCo agent in tcpserver mode at HOST:PORT "
                   "(jacoco:HOST:PORT), or none (cases from the seeds alone).")
@click.option("--corpus-dir", type=click.Path(file_okay=False), default=None,
              help="Keep the inputs that showed something new in this folder; a campaign "
                   "given it again starts from them.")
@click.option("--stop-on-finding", is_flag=True,
              help="End the campaign at its first (confirmed) finding.")
@click.option("--callback", is_flag=True,
              help="Listen on 127.0.0.1 and plant that address where an ORB may call out (a "
                   "valuetype's codebase, the SendingContext CodeBase, references and "
                   "corbaloc/corbaname/http URLs in the arguments): a connection to it is a "
                   "callback finding.")
@click.option("--build", "build_dir", type=click.Path(file_okay=False), default=None,
              help="With `pycdr fuzz coverage-shim`: compile the shim with clang into this "
                   "folder and print the object's path.")
@tls_options
def cmd(target, max_cases, duration, rate, seed, out_dir, json_out, spawn, no_standby, idl_file,
        interface, corpus, no_catalog, timeout, connections, probe_interval, rss_limit, no_minimize,
        replay_dir, coverage, corpus_dir, stop_on_finding, callback, build_dir, tls):
    """Fuzz the GIOP endpoint TARGET (IOR, corbaloc or corbaname URL, or host:port; or
    --spawn CMD).  `pycdr fuzz coverage-shim [--build DIR]` prints the path of the
    coverage shim's C source (or compiles it and prints the object's).

    A finding is reported when its case, alone, did it again against a fresh
    target (restarted, under --spawn) three times; breakages no case did
    alone are listed as unconfirmed, with the cases that were in flight.
    Exit code 1 when a (confirmed) finding was made (or a replay reproduced it)."""
    from pycdr.fuzz.cost import saved_median
    from pycdr.fuzz.engine import Campaign
    from pycdr.fuzz.findings import FindingError, load_messages, save, save_unconfirmed
    from pycdr.fuzz.seeds import idl_probe_request
    from pycdr.orb.naming import NamingError
    from .names import naming_exit
    as_json = json_out is not None
    if target == "coverage-shim":
        _coverage_shim(build_dir)
    if build_dir:
        raise click.UsageError("--build goes with `pycdr fuzz coverage-shim`")
    if not target and not spawn:
        raise click.UsageError("give a TARGET or --spawn CMD")
    if target:
        target = read_reference(target)
    if coverage == "sancov" and not spawn and not replay_dir:
        raise click.UsageError("--coverage sancov needs --spawn CMD: the fuzzer starts the "
                               "target with its edge map")
    if corpus_dir and not replay_dir:
        from pycdr.fuzz.feedback import load_folder
        try:
            load_folder(corpus_dir)
        except PycdrError as e:
            click.echo(f"cannot fuzz: {e}", err=True)
            sys.exit(EXIT_BAD_INPUT)
    if idl_file and not interface:
        raise click.UsageError("--idl needs --interface")
    if seed is None:
        seed = random.SystemRandom().randrange(1 << 31)
    if max_cases is None and duration is None and not replay_dir:
        max_cases = 10000
    if replay_dir:
        try:
            kind, messages = load_messages(replay_dir)
        except FindingError as e:
            click.echo(f"cannot replay: {e}", err=True)
            sys.exit(EXIT_BAD_INPUT)
        # A case's CPU cost is judged against the median its campaign measured.
        median = saved_median(replay_dir) if kind == "cpu" else None
        if kind == "cpu" and median is None:
            click.echo(f"cannot replay: {os.path.join(replay_dir, 'finding.json')}: no "
                       f"\"median_cpu_seconds\" number in its details", err=True)
            sys.exit(EXIT_BAD_INPUT)
    if target and not spawn:
        # A target that gives no GIOP answer (refused, silent, another protocol, TLS not
        # trusted) would look like a dead one: say why instead, at once.
        check_target(target, tls, max(timeout, 2.0))
    try:
        if replay_dir:
            from pycdr.fuzz.callback import planted_port, retarget
            from pycdr.fuzz.seeds import Seed
            # A call-out's listener takes the port its messages name again, or another
            # (the messages then name that one).
            port = planted_port(messages) if kind == "callback" else None
            campaign = Campaign(target, spawn=spawn, timeout=timeout,
                                rss_limit=int(rss_limit * (1 << 20)),
                                seeds=[Seed("replay", messages)], standby=False, tls=tls,
                                callback=kind == "callback", callback_port=port or 0)
            if port is not None:
                messages = retarget(messages, port, campaign.listener.port)
            campaign.cost_reference = median
            try:
                same = campaign.reproduces(kind, messages)
                verdict = campaign.last_verdict
            finally:
                campaign.close()
            # (The sanitizer's whole report is in the finding's sanitizer.txt.)
            details = {k: v for k, v in verdict.details.items() if k != "sanitizer_report"}
            result = {"finding": replay_dir, "expected": kind, "observed": verdict.kind,
                      "details": details, "reproduced": same}
            if as_json:
                write_json(json_out, result)
            else:
                click.echo(f"{'REPRODUCED' if same else 'not reproduced'}: expected {kind}, "
                           f"observed {verdict.kind or 'nothing'} "
                           f"{json.dumps(details) if details else ''}")
            sys.exit(EXIT_BAD_INPUT if same else EXIT_OK)
        saved, saved_unconfirmed = [], []

        def on_finding(finding):
            os.makedirs(out_dir, exist_ok=True)
            saved.append(save(finding, out_dir, len(saved) + 1, target_text=target, spawn=spawn,
                              answers=finding.answers))

        def on_unconfirmed(finding):
            saved_unconfirmed.append(save_unconfirmed(finding, out_dir,
                                                      len(saved_unconfirmed) + 1))

        # (Given at once: the seeds' first runs, as the campaign starts, may find.)
        campaign = Campaign(target, seed=seed, spawn=spawn, standby=not no_standby,
                            on_finding=on_finding, on_unconfirmed=on_unconfirmed,
                            timeout=timeout, probe_interval=probe_interval, rate=rate,
                            connections=connections,
                            rss_limit=int(rss_limit * (1 << 20)), minimize=not no_minimize,
                            seed_sources=_seed_sources(idl_file, interface, corpus, seed,
                                                       no_catalog),
                            probe_request=idl_probe_request(idl_file, interface)
                            if idl_file else None, tls=tls,
                            coverage=coverage, corpus_dir=corpus_dir,
                            stop_on_finding=stop_on_finding, callback=callback)
        if campaign.target.tls is not None:
            # (a certificate that is not trusted would look like a dead target)
            try:
                campaign.target.wire().close()
            except OSError:
                campaign.close()
                raise
    except TLSConfigError as e:
        click.echo(str(e), err=True)
        sys.exit(EXIT_USAGE)
    except NamingError as e:            # a corbaname: TARGET the naming service refused
        naming_exit(e)
    except OSError as e:
        stop(explain(e, None, tls, timeout))
    except PycdrError as e:                 # the target's text
        click.echo(f"error: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)

    if not as_json:
        click.echo(f"pycdr fuzz: seed {seed}, {len(campaign.seeds)} seeds, target "
                   f"{campaign.target.describe()}")
    try:
        if as_json:
            campaign.run(max_cases=max_cases, duration=duration)
        elif not sys.stdout.isatty():
            # Piped or redirected: no live refresh (its redraws would land in the file as
            # repeated, 80-column wrapped copies); the final status once, as wide as its table.
            from rich.console import Console
            campaign.run(max_cases=max_cases, duration=duration)
            Console(width=200).print(_status(campaign))
        else:
            from rich.live import Live
            last = [0.0]
            with Live(_status(campaign), refresh_per_second=4, transient=False) as live:
                def progress(c):
                    now = time.monotonic()
                    if now - last[0] > 0.25:
                        last[0] = now
                        live.update(_status(c))
                campaign.run(max_cases=max_cases, duration=duration, progress=progress)
                live.update(_status(campaign))
    finally:
        campaign.close()
    s = campaign.stats
    summary = {"seed": seed, "target": campaign.target.describe(), "cases": s.cases,
               "elapsed": round(s.elapsed, 2), "cases_per_second": round(s.rate, 1),
               "pipelined": s.pipelined, "isolated": s.isolated, "probes": s.probes,
               "restarts": s.restarts, "target_dead": campaign.dead,
               "answer_timeout": round(campaign.answer_timeout(), 4),
               "outcomes": dict(s.outcomes), "notes": campaign.notes,
               "feedback": campaign.feedback_summary(),
               "findings": [f.to_json() for f in campaign.findings.values()],
               "unconfirmed": [f.to_json() for f in campaign.unconfirmed]}
    if as_json:
        write_json(json_out, summary, indent=1)
    else:
        for f in campaign.findings.values():
            click.echo(f"{f.kind:6} {f.path}  ({f.case.seed_name}, case {f.case.index}, "
                       f"reproduced {f.reproductions} times alone)  {f.folder}")
            _echo_sanitizer(f)
        for f in campaign.unconfirmed:
            click.echo(f"{f.kind:6} unconfirmed: {f.details.get('unconfirmed')}; in flight: "
                       f"{len(f.in_flight)} case(s)  {f.folder}")
            _echo_sanitizer(f)
        for note in campaign.notes:
            warn(note, label="note")
        fb = campaign.feedback_summary()
        if fb["kind"] != "none":
            click.echo(f"feedback {fb['kind']}: {fb['features']} features "
                       f"({fb['initial_features']} from the corpus at the start), "
                       f"{fb['kept']} inputs kept, corpus {fb['corpus']}"
                       + (f", {fb['edges']} edges ({fb['initial_edges']} at the start), "
                          f"{fb['masked_edges']} masked"
                          if "edges" in fb else "")
                       + (f", {fb['probes']} JaCoCo probes in {fb['classes']} classes "
                          f"({fb['initial_probes']} at the start), {fb['masked_probes']} "
                          f"masked, {fb['bisections']} groups bisected in "
                          f"{fb['bisection_runs']} runs" if "probes" in fb else ""))
        click.echo(f"{s.cases} cases in {s.elapsed:.1f} s, {len(campaign.findings)} findings "
                   f"({len(campaign.unconfirmed)} unconfirmed); seed {seed}")
    sys.exit(EXIT_BAD_INPUT if campaign.findings else EXIT_OK)
