"""The options several commands share: each defined once here, with the one meaning its
name has in every command.  docs/options.md is made from SHARED (``python -m
pycdr.cli.docpages options``); tests/test_cli_vocabulary.py checks every command keeps
to it.

A command adds a shared option with ``shared("--timeout", default=2.0, more="Per step.")``:
the help text starts with the shared meaning, ``more`` says what is particular to the
command.  Old spellings stay accepted as hidden options (``old_spelling``) that say once
on stderr what to write instead.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import click

def deprecated(old: str, new: str) -> None:
    """One line on stderr, once a command, for an old spelling still accepted."""
    ctx = click.get_current_context(silent=True)
    warned = ctx.find_root().meta.setdefault("pycdr.deprecated", set()) if ctx else set()
    if old in warned:
        return
    warned.add(old)
    click.echo(f"pycdr: warning: {old} is deprecated: use {new}", err=True)


@dataclass(frozen=True)
class Shared:
    decls: tuple                     # the option's spellings, e.g. ("-i", "--iface")
    meaning: str                     # the first words of its help in every command
    attrs: dict = field(default_factory=dict)   # click.option arguments every command uses
    old: tuple = ()                  # old spellings, hidden and deprecated

    @property
    def name(self) -> str:
        return next(d for d in self.decls if d.startswith("--"))


def _existing_file(**extra):
    return click.Path(exists=True, dir_okay=False, **extra)


# One entry an option name that more than one command takes.
SHARED = {s.name: s for s in (
    Shared(("--json",), "JSON output, to FILE ('-' or no FILE: stdout; --json=FILE, or "
           "--json FILE with FILE '-' or ending in .json or .jsonl).",
           {"metavar": "[FILE]", "type": click.Path(dir_okay=False, allow_dash=True)}),
    Shared(("--idl",), "IDL file declaring the operations and types used.",
           {"type": _existing_file(), "metavar": "FILE"}),
    Shared(("-I", "--include"), "Folder searched for #include files of the IDL (repeatable).",
           {"multiple": True, "metavar": "DIR", "type": click.Path(file_okay=False)}),
    Shared(("--interface",), "Scoped name of an IDL interface, e.g. EchoAll::Echo.",
           {"metavar": "NAME"}),
    Shared(("-i", "--iface"), "Network interface to capture on (libpcap; needs capture "
           "rights: root or CAP_NET_RAW).", {"metavar": "IFACE"}, old=("--interface",)),
    Shared(("--filter",), "Capture filter (BPF), e.g. 'tcp port 2809'.",
           {"metavar": "BPF"}, old=("-f",)),
    Shared(("-w", "--write"), "Save the captured packets to this pcap file.",
           {"type": click.Path(dir_okay=False), "metavar": "FILE"}),
    Shared(("-c", "--count"), "Stop after this many packets.",
           {"type": click.IntRange(min=0)}),
    Shared(("--duration",), "Stop after this many seconds.",
           {"type": click.FloatRange(min=0, min_open=True)}),
    Shared(("--only",), "Only this operation (repeatable; LocateRequests are "
           "'(LocateRequest)').", {"multiple": True, "metavar": "OPERATION"}),
    Shared(("--skip",), "Not this operation (repeatable; LocateRequests are "
           "'(LocateRequest)').", {"multiple": True, "metavar": "OPERATION"}),
    Shared(("-p", "--port"), "TCP port number.", {"type": click.IntRange(0, 65535)}),
    Shared(("--timeout",), "Seconds to wait for an answer.",
           {"type": click.FloatRange(min=0, min_open=True)}),
    Shared(("--giop",), "GIOP version.",
           {"type": click.Choice(["1.0", "1.1", "1.2", "1.3"])}),
    Shared(("--tls",), "Speak TLS to a corbaloc:iiop URL or host:port (an IOR with "
           "TAG_SSL_SEC_TRANS or TAG_TLS_SEC_TRANS, and corbaloc:ssliop:, select TLS by "
           "themselves).", {"is_flag": True}),
    Shared(("--tls-ca",), "CA certificates (PEM) the other side's certificate is verified "
           "with.", {"type": _existing_file(), "metavar": "FILE"}, old=("--cacert",)),
    Shared(("--tls-cert",), "Certificate (PEM) this side presents.",
           {"type": _existing_file(), "metavar": "FILE"}, old=("--cert",)),
    Shared(("--tls-key",), "Private key (PEM) of --tls-cert.",
           {"type": _existing_file(), "metavar": "FILE"}, old=("--key",)),
    Shared(("--insecure",), "Do not verify the server's certificate or host name.",
           {"is_flag": True}),
    Shared(("--junit",), "Write a JUnit XML report to this file.",
           {"type": click.Path(dir_okay=False), "metavar": "FILE"}),
    Shared(("--rate",), "At most this many a second.",
           {"type": click.FloatRange(min=0, min_open=True)}),
    Shared(("-j", "--jobs"), "Worker processes.", {"type": click.IntRange(1, 64),
                                                  "default": 1, "show_default": True}),
    Shared(("--progress/--no-progress",), "A progress bar on stderr (default: when stderr "
           "is a terminal).", {"default": None}),
    Shared(("--max-message-size",), "Largest GIOP message_size taken, in bytes.",
           {"type": click.IntRange(min=0)}),
    Shared(("--dry-run",), "Say what would be done; do nothing.", {"is_flag": True}),
    Shared(("-v", "--verbose"), "More detail.", {"is_flag": True}),
    Shared(("--dest",), "Folder to install into.", {"type": click.Path(file_okay=False)}),
    Shared(("--stream",), "Only this TCP connection (its `stream` number in `pycdr pcap`).",
           {"type": click.IntRange(min=0)}),
    Shared(("--ior",), "Object references known from the start: IOR text, or a file of IOR: "
           "strings, one a line (repeatable).", {"multiple": True, "metavar": "IOR|FILE"}),
    Shared(("--parquet",), "Parquet output (needs pyarrow: pip install 'pycdr[parquet]').",
           {"type": click.Path()}),
    Shared(("--ns",), "The naming service: an IOR, corbaloc: or corbaname: URL (a corbaname "
           "starts at the context its name is bound to).", {"metavar": "REFERENCE"}),
    Shared(("--batch",), "Bindings asked for at a time (the BindingIterator's how_many).",
           {"type": click.IntRange(1)}),
    Shared(("--context",), "Bind a naming context (bind_context/rebind_context), not an "
           "object.", {"is_flag": True}),
    Shared(("--explain",), "Explain each request a system exception answered, as `pycdr "
           "explain` does: the field, offset and rule it breaks, or that it is clean.",
           {"is_flag": True}),
    Shared(("--seed",), "Seed of the random choices, so that a run can be made again.",
           {"type": int, "default": None}),
    Shared(("--target",), "Where to send: IOR:..., corbaloc:..., corbaname:... or host:port "
           "(a reference's file, a file:// URL or '-' too).", {"metavar": "TARGET"}),
    Shared(("-q", "--quiet"), "Print no line a message or call.", {"is_flag": True}),
    Shared(("--type-ids/--no-type-ids",), "Ask each object bound for its repository id "
           "(the IOR's type id).", {"default": True}),
)}


def read_iors(values) -> list:
    """The IORs of ``--ior`` values: IOR text, or files of IOR: strings (one a line; blank
    lines and lines starting with # skipped).  PycdrError names a bad one and where."""
    from pycdr.codec.ior import ior_from_string
    from pycdr.errors import PycdrError
    out = []
    for value in values:
        if value.strip().upper().startswith("IOR:"):
            lines = [(None, value)]
        else:
            try:
                with open(value, encoding="ascii", errors="replace") as f:
                    lines = list(enumerate(f.read().splitlines(), 1))
            except OSError as e:
                raise PycdrError(f"--ior {value}: cannot read ({e.strerror or e})") from None
        for n, line in lines:
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            try:
                out.append(ior_from_string(text, lenient=True))
            except PycdrError as e:
                where = "" if n is None else f"{value}, line {n}: "
                raise PycdrError(f"{where}not an IOR ({e})") from None
    return out


def shared(name: str, *dest, more: str = "", **attrs):
    """The shared option ``name`` (a key of SHARED) for one command: ``dest`` names its
    parameter; ``more`` is added to its help; ``attrs`` add to (or narrow) its click
    arguments.  Its old spellings come along, hidden."""
    spec = SHARED[name]
    options = {**spec.attrs, **attrs}
    help_text = spec.meaning + (" " + more if more else "")
    decls = spec.decls + dest
    option = click.option(*decls, help=help_text, **options)
    if not spec.old:
        return option
    param_name = dest[0] if dest else spec.name.lstrip("-").replace("-", "_").split("/")[0]

    def decorate(f):
        f = option(f)
        for old in spec.old:
            f = old_spelling(old, param_name, new=spec.name, **{
                k: v for k, v in options.items() if k in ("multiple", "type", "is_flag")})(f)
        return f
    return decorate


_ALIASES = "pycdr.old_spellings"


def old_spelling(decl: str, dest: str, *, new: str, **attrs):
    """A hidden option ``decl``, the old spelling of ``new``: its value goes to the
    command's parameter ``dest`` (when ``new`` is not given), with one deprecation line."""
    def callback(ctx, param, value):
        if value in (None, (), False):
            return
        deprecated(decl, new)
        ctx.meta.setdefault(_ALIASES, {})[dest] = value

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            given = click.get_current_context().meta.get(_ALIASES, {})
            if dest in given and kwargs.get(dest) in (None, (), False):
                kwargs[dest] = given[dest]
            return f(*args, **kwargs)
        return click.option(decl, f"old_{dest}_{decl.strip('-').replace('-', '_')}",
                            hidden=True, expose_value=False, callback=callback,
                            **attrs)(wrapper)
    return decorate


def json_arguments(args: list) -> list:
    """``--json`` takes an optional FILE: a bare ``--json`` (followed by an option, an
    argument that is not a JSON file name, or nothing) becomes ``--json=-`` (stdout)."""
    out = []
    for i, arg in enumerate(args):
        if arg == "--":
            return out + args[i:]
        if arg == "--json":
            following = args[i + 1] if i + 1 < len(args) else None
            if following is None or not (following == "-" or
                                         following.endswith((".json", ".jsonl"))):
                arg = "--json=-"
        out.append(arg)
    return out


def detached_json_file(args: list, message: str) -> str | None:
    """The one line for a usage error a ``--json FILE`` caused: a FILE after a space that
    is not '-' and does not end in .json or .jsonl is not taken as ``--json``'s (the next
    argument it stays), so ``--json out.txt`` meets an error about ``out.txt`` or about an
    argument too many; None when the error is not that."""
    for i, arg in enumerate(args[:-1]):
        if arg == "--":
            return None
        following = args[i + 1]
        if arg != "--json" or following.startswith("-") or \
                following.endswith((".json", ".jsonl")):
            continue
        if f"({following})" in message or f"'{following}'" in message or \
                "unexpected extra argument" in message:
            return f"--json {following}: a FILE after a space must be '-' or end in .json " \
                   f"or .jsonl; write --json={following}"
    return None


def open_output(path: str):
    """The stream ``--json``/``--junit``-style output goes to: stdout for '-', else the file
    (one line and exit status 1 when it cannot be written)."""
    import sys
    if path == "-":
        return sys.stdout
    try:
        return open(path, "w")
    except OSError as e:
        click.echo(f"error: cannot write {path}: {e.strerror}", err=True)
        sys.exit(1)


def write_json(path: str, obj, **options) -> None:
    """``obj`` as RFC 8259 JSON to ``path`` ('-': stdout), a newline after it."""
    import json
    import sys
    text = json.dumps(obj, allow_nan=False, **options)
    out = open_output(path)
    try:
        out.write(text + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
