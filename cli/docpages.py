"""Pages made from the Click commands themselves, so that they cannot drift from the code:
docs/options.md (the options every command shares, cli/options.py's SHARED) and the
`pycdr` manual page (every command, its usage, options and help).

    python -m pycdr.cli.docpages options > docs/options.md
    python -m pycdr.cli.docpages man > pycdr.1
"""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version

import click

from .main import exit_statuses, main as group
from .options import SHARED


def markdown() -> str:
    """docs/options.md."""
    lines = ["# Options every command shares", "",
             "<!-- Made by `python -m pycdr.cli.docpages options > docs/options.md` from "
             "cli/options.py; tests/test_cli_vocabulary.py checks that they agree. -->", "",
             "An option name means the same thing in every `pycdr` command that takes it; a "
             "command adds what is particular to it after the shared meaning (`pycdr "
             "COMMAND --help`). An old spelling is still accepted, and says once on stderr "
             "what to write instead.", "",
             "| Option | Meaning | Old spelling |", "|---|---|---|"]
    for spec in SHARED.values():
        names = ", ".join(f"`{d}`" for d in spec.decls)
        old = ", ".join(f"`{o}`" for o in spec.old)
        lines.append(f"| {names} | {spec.meaning.replace('|', '/')} | {old} |")
    lines += ["", "Commands renamed: `pycdr capture IFACE...` is `pycdr pcap -i IFACE -w FILE "
              "-q`; `pycdr serve FILE.idl` is `pycdr serve --idl FILE.idl`.", "",
              "## References", "",
              "Where a command takes a TARGET (`call`, `probe`, `conformance`, `fuzz`) or a "
              "REFERENCE (`ior`), it may be an `IOR:`, `corbaloc:` or `corbaname:` string, "
              "`host:port` where the command says so, a file holding the reference (a path, "
              "or a `file://` URL), or `-` for stdin; an IOR wrapped over several lines is "
              "joined.", "",
              "## JSON", "",
              "Where `--json` goes: `--json` alone, or `--json -`, writes to stdout; "
              "`--json=FILE` writes to FILE, whatever its name. `--json FILE` (a space, not "
              "`=`) takes FILE only when it ends in `.json` or `.jsonl`: any other word after "
              "`--json ` is the command's next argument, not the output file (so `pycdr pcap "
              "--json capture.pcap` reads capture.pcap and writes JSON to stdout). "
              "`--json out.txt` is refused with one line saying to write `--json=out.txt` "
              "(exit status 2).", "",
              "Every `--json` output is RFC 8259 JSON. IDL values are written as `pycdr call "
              "--json` writes them; the floating-point values JSON has no number for are the "
              'strings `"NaN"`, `"Infinity"` and `"-Infinity"`, and are read back in the same '
              "form. A value its IDL type cannot hold (`1e400` for a double, `2**40` for a "
              "long) is refused, naming the parameter and its type.", "",
              "## Exit statuses", "", "| Status | Meaning |", "|---|---|"]
    lines += [f"| {status} | {meaning} |" for status, meaning in exit_statuses()]
    lines += ["", "## Shell completion", "",
              "`pycdr` completes commands, options and file names in bash, zsh and fish. "
              "Add one line to the shell's start-up file:", "",
              "```sh",
              "# bash, in ~/.bashrc",
              'eval "$(_PYCDR_COMPLETE=bash_source pycdr)"',
              "# zsh, in ~/.zshrc",
              'eval "$(_PYCDR_COMPLETE=zsh_source pycdr)"',
              "# fish, in ~/.config/fish/completions/pycdr.fish",
              "_PYCDR_COMPLETE=fish_source pycdr | source",
              "```", "",
              "## Manual page", "",
              "`python -m pycdr.cli.docpages man > pycdr.1` writes the manual page of every "
              "command from the same definitions; `man ./pycdr.1` shows it.", ""]
    return "\n".join(lines)


def _roff(text: str) -> str:
    """``text`` safe in roff: backslashes and hyphens escaped, no line starting a request."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join("\\&" + line if line.startswith((".", "'")) else line
                     for line in text.splitlines())


def _commands(command, ctx, path):
    """(path, command, context) of ``command`` and every visible subcommand, depth first."""
    yield path, command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            yield from _commands(sub, click.Context(sub, info_name=name, parent=ctx),
                                 f"{path} {name}")


def manpage() -> str:
    """The `pycdr` manual page (roff, man macros)."""
    try:
        release = version("pycdr")
    except PackageNotFoundError:
        release = ""
    root = click.Context(group, info_name="pycdr")
    out = [f'.TH PYCDR 1 "" "pycdr {release}" "User Commands"', ".SH NAME",
           "pycdr \\- " + _roff(group.help.split("\n", 1)[0].split(": ", 1)[-1]),
           ".SH SYNOPSIS", ".B pycdr", "\\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGUMENTS\\fR]",
           ".SH DESCRIPTION",
           _roff("Every command and its options follow; `pycdr COMMAND --help` shows the same. "
                 "The options several commands share mean the same in each (docs/options.md)."),
           ".SH COMMANDS"]
    for path, command, ctx in _commands(group, root, "pycdr"):
        if command is group:
            continue
        usage = " ".join(command.collect_usage_pieces(ctx))
        out += [f'.SS "{_roff(path)} {_roff(usage)}"']
        if command.help:
            paragraphs = [" ".join(p.split()) for p in command.help.split("\n\n") if p.strip()]
            for i, paragraph in enumerate(paragraphs):
                out += ([".PP"] if i else []) + [_roff(paragraph)]
        for param in command.get_params(ctx):
            if not isinstance(param, click.Option):
                continue            # (arguments are in the usage line)
            record = param.get_help_record(ctx)
            if record is None:
                continue
            names, text = record
            out += [".TP", f"\\fB{_roff(names)}\\fR", _roff(" ".join(text.split()))]
    out += [".SH EXIT STATUS"]
    for status, meaning in exit_statuses():
        out += [".TP", f"\\fB{status}\\fR", _roff(meaning)]
    out += [".SH ENVIRONMENT", ".TP", "\\fBXDG_CACHE_HOME\\fR",
            _roff("Internal-error reports go to $XDG_CACHE_HOME/pycdr/reports (default "
                  "~/.cache/pycdr/reports)."),
            ".TP", "\\fBSSLKEYLOGFILE\\fR",
            _roff("TLS session keys are written there, for Wireshark to decrypt captures."),
            ".SH SEE ALSO", "\\fBcatior\\fR(1), \\fBnameclt\\fR(1), \\fBtshark\\fR(1),"
            " \\fBwireshark\\fR(1)", ""]
    return "\n".join(out)


if __name__ == "__main__":
    pages = {"options": markdown, "man": manpage}
    if len(sys.argv) != 2 or sys.argv[1] not in pages:
        sys.exit("usage: python -m pycdr.cli.docpages options|man")
    sys.stdout.write(pages[sys.argv[1]]())
