"""One command-line vocabulary (issue 42, item 1): every option has a help text; an option
name more than one command takes means the same in each (cli/options.py's SHARED: the same
help opening, type, nargs, flag-ness); docs/options.md and the manual page are made from
the same definitions; old spellings still work and say what to write instead."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from bounded import PYCDR
from pycdr.cli import docpages
from pycdr.cli.main import HIDDEN, main
from pycdr.cli.options import SHARED, json_arguments

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAPTURES = os.path.join(ROOT, "captures")


def every_command():
    """(path, command) of every command, hidden ones (old names) included."""
    root = click.Context(main, info_name="pycdr")
    out = []

    def walk(command, ctx, path):
        out.append((path, command))
        if isinstance(command, click.Group):
            names = command.list_commands(ctx)
            if command is main:
                names += sorted(HIDDEN)
            for name in names:
                sub = command.get_command(ctx, name)
                walk(sub, click.Context(sub, info_name=name, parent=ctx), f"{path} {name}")
    walk(main, root, "pycdr")
    return out


def visible_options():
    """(command path, option) of every option a user sees in --help."""
    return [(path, p) for path, command in every_command() if not command.hidden
            for p in command.params
            if isinstance(p, click.Option) and not p.hidden and p.name != "help"]


def long_names(option) -> list:
    return [o for o in option.opts + option.secondary_opts if o.startswith("--")]


def test_every_option_and_command_has_help():
    missing = [f"{path} {'/'.join(p.opts)}" for path, p in visible_options()
               if not (p.help or "").strip()]
    assert not missing, missing
    assert all((c.help or "").strip() for _, c in every_command()), \
        [path for path, c in every_command() if not (c.help or "").strip()]


def _shared_spec(option):
    for name in long_names(option):
        for spec in SHARED.values():
            if name in [d for decl in spec.decls for d in decl.split("/")]:
                return spec
    return None


def test_one_name_one_meaning():
    by_name: dict = {}
    for path, option in visible_options():
        for name in long_names(option):
            by_name.setdefault(name, []).append((path, option))
    problems = []
    for name, uses in sorted(by_name.items()):
        commands = {path for path, _ in uses}
        spec = _shared_spec(uses[0][1])
        if len(commands) > 1 and spec is None:
            problems.append(f"{name} is taken by {sorted(commands)} but is not in SHARED")
            continue
        if spec is None:
            continue
        shapes = set()
        for path, option in uses:
            if not (option.help or "").startswith(spec.meaning):
                problems.append(f"{path} {name}: its help does not open with the shared "
                                f"meaning ({spec.meaning!r})")
            shapes.add((type(option.type).__name__, option.nargs, option.is_flag))
        if len(shapes) > 1:
            problems.append(f"{name}: type, nargs or flag differ between commands: {shapes}")
    assert not problems, "\n".join(problems)


def test_each_short_option_has_one_long_name():
    short: dict = {}
    for path, option in visible_options():
        for name in option.opts:
            if not name.startswith("--") and name.startswith("-"):
                short.setdefault(name, set()).add(tuple(long_names(option)))
    # -f is decode's --file; pcap's old -f (--filter) is hidden.
    assert {k: v for k, v in short.items() if len(v) > 1} == {}


def test_the_options_page_is_made_from_the_definitions():
    with open(os.path.join(ROOT, "docs", "options.md")) as f:
        page = f.read()
    assert page == docpages.markdown(), \
        "docs/options.md is stale: python -m pycdr.cli.docpages options > docs/options.md"
    for spec in SHARED.values():
        assert f"`{spec.name}`" in page
        for old in spec.old:
            assert f"`{old}`" in page


def test_the_manual_page_has_every_command_and_renders(tmp_path):
    page = docpages.manpage()
    for path, command in every_command():
        if command.hidden or command is main:
            continue
        assert f'.SS "{docpages._roff(path)} ' in page, path
    assert "\\-\\-tls\\-cert" in page and ".SH EXIT STATUS" in page
    from pycdr.cli.main import EXIT_STATUSES
    assert [status for status, _ in docpages.exit_statuses()] == list(EXIT_STATUSES)
    groff = shutil.which("groff")
    if groff is None:
        pytest.skip("groff is not installed")
    path = tmp_path / "pycdr.1"
    path.write_text(page)
    result = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z", str(path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_json_takes_an_optional_file():
    assert json_arguments(["pcap", "--json", "x.pcap"]) == ["pcap", "--json=-", "x.pcap"]
    assert json_arguments(["pcap", "x.pcap", "--json"]) == ["pcap", "x.pcap", "--json=-"]
    assert json_arguments(["replay", "--json", "out.jsonl"]) == ["replay", "--json",
                                                                 "out.jsonl"]
    assert json_arguments(["x", "--json", "-"]) == ["x", "--json", "-"]
    assert json_arguments(["call", "--", "--json"]) == ["call", "--", "--json"]


def test_json_to_stdout_and_to_a_file(tmp_path):
    url = "corbaloc::1.2@example.com:2809/NameService"
    shown = CliRunner().invoke(main, ["ior", "--json", url])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["kind"] == "corbaloc"
    out = tmp_path / "ior.json"
    written = CliRunner().invoke(main, ["ior", url, "--json", str(out)])
    assert written.exit_code == 0 and written.stdout == ""
    assert json.loads(out.read_text())["kind"] == "corbaloc"


def test_json_with_a_space_and_another_file_name_says_to_write_json_equals(tmp_path):
    # `--json out.txt`: out.txt is not taken as the output file (it stays the next argument);
    # the usage error says, in one line, to write --json=out.txt, and writes nothing.
    pcap = os.path.join(CAPTURES, "messages.pcap")
    out = tmp_path / "out.txt"
    runner = CliRunner()
    for args in (["pcap", pcap, "--json", str(out)], ["pcap", "--json", str(out), pcap],
                 ["decode", "--json", str(out), "47494f50"],
                 ["replay", pcap, "--target", "127.0.0.1:1", "--json", str(out)]):
        result = runner.invoke(main, args)
        assert result.exit_code == 2 and result.stdout == "", (args, result.stdout)
        (line,) = result.stderr.splitlines()
        assert f"--json {out}: a FILE after a space must be '-' or end in .json or .jsonl; " \
               f"write --json={out}" in line, line
        assert not out.exists()
    # what it says works, and a bare --json before the capture still goes to stdout
    done = runner.invoke(main, ["pcap", pcap, f"--json={out}"])
    assert done.exit_code in (0, 1) and done.stdout == ""
    assert json.loads(out.read_text().splitlines()[0])["frame"] >= 1
    shown = runner.invoke(main, ["pcap", "--json", pcap])
    assert shown.stdout.splitlines() == out.read_text().splitlines()
    # another usage error is left as it is
    other = runner.invoke(main, ["pcap", pcap, "--json", str(out), "--bogus"])
    assert other.exit_code == 2 and "--bogus" in other.stderr


def test_old_spellings_work_and_say_what_to_write(tmp_path):
    pcap = os.path.join(CAPTURES, "messages.pcap")
    result = subprocess.run([PYCDR, "replay", pcap, "--target", "127.0.0.1:1", "--dry-run",
                             "--only-op", "add", "--only-op", "add"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("pycdr: warning: --only-op is deprecated: use --only") == 1
    new = subprocess.run([PYCDR, "replay", pcap, "--target", "127.0.0.1:1", "--dry-run",
                          "--only", "add"], capture_output=True, text=True, timeout=120)
    assert new.returncode == 0 and "deprecated" not in new.stderr
    assert new.stdout == result.stdout
    sent = [line for line in new.stdout.splitlines() if ": send " in line]
    assert sent and all(" add " in line or "(CancelRequest)" in line for line in sent)


def test_pcap_selects_operations_streams_and_frames():
    pcap = os.path.join(CAPTURES, "messages.pcap")
    everything = CliRunner().invoke(main, ["pcap", pcap]).stdout.splitlines()
    only = CliRunner().invoke(main, ["pcap", pcap, "--only", "_is_a"]).stdout
    headers = [line for line in only.splitlines() if line.startswith("frame ")]
    assert headers and all("_is_a" in line or " Reply " in line for line in headers)
    # Each reply kept is the answer to an _is_a request kept.
    assert sum(" Request " in line for line in headers) == \
        sum(" Reply " in line for line in headers)
    skipped = CliRunner().invoke(main, ["pcap", pcap, "--skip", "_is_a"]).stdout
    assert "_is_a" not in skipped and "add" in skipped
    stream = CliRunner().invoke(main, ["pcap", pcap, "--json", "--stream", "1"]).stdout
    assert {json.loads(line)["stream"] for line in stream.splitlines()} == {1}
    first = next(line for line in everything if line.startswith("frame "))
    frame = first.split()[1]
    detail = CliRunner().invoke(main, ["pcap", pcap, "--frame", frame, "-v"]).stdout
    assert detail.startswith(f"frame {frame} ") and "  offsets:" in detail
    assert "[[" not in detail and "{'" not in detail


def test_shell_completion_as_documented():
    env = dict(os.environ, COMP_WORDS="pycdr pcap --on", COMP_CWORD="2",
               _PYCDR_COMPLETE="bash_complete")
    result = subprocess.run([PYCDR], capture_output=True, text=True, env=env, timeout=60)
    assert "plain,--only" in result.stdout.splitlines(), result.stdout
    with open(os.path.join(ROOT, "docs", "options.md")) as f:
        assert "_PYCDR_COMPLETE=bash_source pycdr" in f.read()


def test_the_shipped_manual_page_is_made_from_the_commands():
    # In a process of its own: Click keeps each command's help option once a context made
    # it, and commands invoked alone (by other tests) make it without the group's -h.
    made = subprocess.run([sys.executable, "-m", "pycdr.cli.docpages", "man"],
                          capture_output=True, text=True, check=True, timeout=60).stdout
    with open(os.path.join(os.path.dirname(__file__), os.pardir, "docs", "pycdr.1")) as f:
        shipped = f.read()
    assert shipped == made, "docs/pycdr.1 is stale: python -m pycdr.cli.docpages man " \
                            "> docs/pycdr.1"
