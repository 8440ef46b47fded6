"""`pycdr names`: browse and edit a CosNaming naming service (omniNames, JacORB's,
the JDK's orbd/tnameserv, TAO's ...), and the one-line naming errors every
command that takes a corbaname: target prints."""

from __future__ import annotations

import functools
import os
import sys

import click

from pycdr.addressing.corbaloc import Corbaloc, Corbaname, parse_object_url
from pycdr.codec.ior import IOR, ior_to_string
from pycdr.errors import PycdrError
from pycdr.giop.sysexc import SystemException
from pycdr.orb import ORB
from pycdr.orb import naming
from pycdr.orb.aio import run as run_loop
from pycdr.orb.client import first_iiop_profile, resolve_object_url
from pycdr.orb.naming import NamingError, NamingServiceUnreachable
from pycdr.orb.tls import TLSConfigError

from .main import EXIT_BAD_INPUT, EXIT_UNREACHABLE, EXIT_USAGE
from .options import shared, write_json
from .tls import tls_options

DEFAULT_NAMING_SERVICE = "corbaloc::localhost:2809/NameService"
NAMING_SERVICE_ENV = "PYCDR_NAMING_SERVICE"
# The deepest `tree` goes unless --depth says otherwise.
DEFAULT_DEPTH = 16


def naming_exit(e: NamingError):
    """Print a naming error as its one line and exit: 3 when the naming service
    could not be reached, 1 for a refused or malformed name."""
    click.echo(str(e), err=True)
    sys.exit(EXIT_UNREACHABLE if isinstance(e, NamingServiceUnreachable) else EXIT_BAD_INPUT)


def resolve_reference(text: str, *, timeout: float, tls) -> tuple:
    """(IOR, the naming service URL it was resolved through or None) for a
    stringified reference (pycdr.orb.client.resolve_object_url).  Errors:
    PycdrError (the text), NamingError."""
    ior = resolve_object_url(text, timeout=timeout, connect_timeout=timeout, tls=tls)
    parsed = parse_object_url(text)
    return ior, parsed.corbaloc.to_url() if isinstance(parsed, Corbaname) else None


def resolved_target(text: str, *, timeout: float, tls) -> tuple:
    """(TARGET, None), or for a corbaname: (the named object's IOR as text, {"name",
    "naming_service"}: what it was resolved through)."""
    if text.split(":", 1)[0].strip().lower() != "corbaname":
        return text, None
    ior, through = resolve_reference(text, timeout=timeout, tls=tls)
    name = parse_object_url(text).string_name
    return ior_to_string(ior), {"name": name or "(the naming context itself)",
                                "naming_service": through}


# ----------------------------------------------------------------------------
# pycdr names
def _common(command):
    """The options every `names` subcommand takes: the naming service, timeout,
    JSON, TLS."""
    @shared("--ns", "naming_service", default=DEFAULT_NAMING_SERVICE,
            envvar=NAMING_SERVICE_ENV, show_default=True, show_envvar=True)
    @shared("--timeout", default=10.0, show_default=True, more="Per request.")
    @shared("--json", "json_out")
    @tls_options
    @functools.wraps(command)
    def wrapper(*args, naming_service, timeout, json_out, tls, **kwargs):
        async def main():
            async with ORB(timeout=timeout, connect_timeout=timeout, tls=tls) as orb:
                ctx = await naming.naming_context(orb, naming_service)
                return await command(orb, ctx, *args, **kwargs)
        try:
            out = run_loop(main())
        except NamingError as e:
            naming_exit(e)
        except TLSConfigError as e:
            click.echo(str(e), err=True)
            sys.exit(EXIT_USAGE)
        except (PycdrError, SystemException) as e:   # the --ns text, a reference's profile
            click.echo(f"error: bad naming service {naming_service[:80]}: {e}", err=True)
            sys.exit(EXIT_BAD_INPUT)
        if json_out is not None:
            write_json(json_out, out["json"], indent=2)
        else:
            for line in out["lines"]:
                click.echo(line)
    return wrapper


@click.group("names")
def cmd():
    """Browse and edit a CosNaming naming service (--ns; default
    corbaloc::localhost:2809/NameService).

    NAME is a stringified name as nameclt, Java's orbd tools and
    NamingContextExt::to_name write it: components separated by '/', each
    "id" or "id.kind"; a backslash escapes '/', '.' and '\\'.  Exit status 1
    when the naming service refuses a name (not found, bound already, not
    empty, invalid), 3 when it cannot be reached."""


def _name(text: str | None) -> list:
    return naming.parse_name(text) if text else []


def _binding_json(b: naming.Binding, ior: IOR | None, parent: list, error=None) -> dict:
    (ident, kind), = b.name
    out = {"name": naming.show_name(parent + list(b.name)), "id": ident, "kind": kind,
           "type": "context" if b.is_context else "object"}
    if ior is not None:
        out["type_id"] = ior.type_id
        out["ior"] = ior_to_string(ior)
    if error is not None:
        out["error"] = error
    return out


async def _listing(orb, ctx, name: list, batch: int, types: bool) -> list:
    """The bindings of ``ctx`` as JSON objects (objects' IORs resolved with ``types``)."""
    out = []
    for b in sorted(await naming.list_bindings(orb, ctx, name, batch),
                    key=lambda b: (not b.is_context, b.name)):
        ior, error = None, None
        if types or b.is_context:
            try:
                ior = await naming.resolve(ctx, list(b.name), under=name)
            except NamingServiceUnreachable:
                raise
            except NamingError as e:     # unbound meanwhile, or bound to nil
                error = str(e)
        out.append(_binding_json(b, ior, name, error))
    return out


def _line(entry: dict, indent: str = "") -> str:
    """One binding: its last component ('/' after a context's), what it is, and an
    object's repository id."""
    shown = naming.format_string_name([(entry["id"], entry["kind"])])
    if entry["type"] == "context":
        return f"{indent}{shown + '/':<32} context"
    detail = entry.get("error") or entry.get("type_id", "") or \
        ("(no repository id)" if "type_id" in entry else "")
    return f"{indent}{shown:<32} object  {detail}".rstrip()


async def _context_at(orb, ctx, name: list):
    """The naming context bound to ``name`` under ``ctx`` (ctx itself for [])."""
    if not name:
        return ctx
    ior = await naming.resolve(ctx, name)
    if ior.type_id and not naming.is_naming_context_id(ior.type_id):
        raise NamingError(f'"{naming.show_name(name)}" is bound to an object ({ior.type_id}), '
                          "not a naming context", reason="not_context")
    return orb.object(ior, naming.interface(naming.NAMING_CONTEXT))


_batch_option = shared("--batch", default=naming.DEFAULT_BATCH, show_default=True,
                       type=click.IntRange(1, 1 << 20), more="(list, then next_n).")
_types_option = shared("--type-ids/--no-type-ids", "types", show_default=True,
                       more="One request a binding.")


@cmd.command("ls")
@click.argument("name", required=False)
@_batch_option
@_types_option
@_common
async def ls(orb, ctx, name, batch, types):
    """List the bindings of the context NAME (default: the naming service's own
    context): contexts end in '/', objects show their repository id."""
    path = _name(name)
    entries = await _listing(orb, await _context_at(orb, ctx, path), path, batch, types)
    return {"json": {"context": naming.show_name(path), "bindings": entries},
            "lines": [_line(e) for e in entries]}


@cmd.command("tree")
@click.argument("name", required=False)
@click.option("--depth", default=DEFAULT_DEPTH, show_default=True,
              type=click.IntRange(0, 1000),
              help="Contexts deeper than this are not listed (0: NAME's bindings only).")
@_batch_option
@_types_option
@_common
async def tree(orb, ctx, name, depth, batch, types):
    """Every binding under the context NAME, recursively, down to --depth.  A context
    met a second time (a cycle, or one bound under two names) is shown once; later
    places say where it was listed."""
    path = _name(name)
    seen: dict = {}
    lines: list = []

    async def walk(context, at: list, level: int) -> list:
        key = _context_key(context.ior)
        seen[key] = naming.show_name(at) if at else "/"
        entries = await _listing(orb, context, at, batch, types)
        for e in entries:
            lines.append(_line(e, "  " * (level + 1)))
            if e["type"] != "context" or "ior" not in e:
                continue
            child_ior = parse_object_url(e["ior"])
            child_key = _context_key(child_ior)
            if child_key in seen:
                e["seen_at"] = seen[child_key]
                lines[-1] += f"  (listed at {seen[child_key]})"
            elif level + 1 > depth:
                e["truncated"] = True
                lines[-1] += "  ..."
            else:
                child = orb.object(child_ior, naming.interface(naming.NAMING_CONTEXT))
                e["bindings"] = await walk(child, at + [(e["id"], e["kind"])], level + 1)
        return entries

    root = await _context_at(orb, ctx, path)
    lines.append(f"{naming.show_name(path)}/" if path else "/")
    entries = await walk(root, path, 0)
    return {"json": {"context": naming.show_name(path), "depth": depth, "bindings": entries},
            "lines": lines}


def _context_key(ior: IOR) -> tuple:
    """What identifies a naming context: where it is and its object key (not its
    IOR's text: a context's IORs differ in type id and components)."""
    try:
        profile = first_iiop_profile(ior)
    except (PycdrError, SystemException):
        return tuple((p.tag, bytes(p.data)) for p in ior.profiles)
    return (profile.host.lower(), profile.port, bytes(profile.object_key))


@cmd.command("resolve")
@click.argument("name")
@_common
async def resolve(orb, ctx, name):
    """Print the IOR bound to NAME."""
    path = _name(name)
    ior = await naming.resolve(ctx, path)
    text = ior_to_string(ior)
    return {"json": {"name": naming.show_name(path), "type_id": ior.type_id, "ior": text},
            "lines": [text]}


def _read_reference(text: str) -> str:
    """REFERENCE as given: a stringified reference, '-' (stdin) or a file holding one."""
    if text == "-":
        return sys.stdin.read().strip()
    if text.split(":", 1)[0].lower() in ("ior", "corbaloc", "corbaname"):
        return text
    if os.path.isfile(text):
        try:
            with open(text, encoding="ascii", errors="strict") as f:
                return f.read(1 << 20).strip()
        except (OSError, UnicodeDecodeError) as e:
            raise click.BadParameter(f"cannot read {text!r}: {e}",
                                     param_hint="REFERENCE") from None
    shown = text if len(text) <= 200 else f"{text[:60]}... ({len(text)} characters)"
    raise click.BadParameter(f"{shown!r} is no file, nor an IOR:, corbaloc: or corbaname: "
                             "reference ('-': read one from stdin)", param_hint="REFERENCE")


def _checked_reference(text: str) -> str:
    """``text`` if it parses as a reference the ORB can use, else click.BadParameter."""
    try:
        parsed = parse_object_url(text)
    except PycdrError as e:
        raise click.BadParameter(f"not a usable reference: {e}", param_hint="REFERENCE") \
            from None
    if isinstance(parsed, Corbaloc) and parsed.is_rir:
        raise click.BadParameter("corbaloc:rir: names no object here: give its address",
                                 param_hint="REFERENCE")
    return text


async def _reference_ior(orb, text: str) -> IOR:
    return (await orb.string_to_object(text)).ior


def _binder(rebind: bool):
    verb = "rebind" if rebind else "bind"

    @click.argument("name")
    @click.argument("reference")
    @shared("--context", "as_context", more=f"REFERENCE is a naming context: {verb}_context "
            "(it is then listed and resolved through as a context).")
    @_common
    async def command(orb, ctx, name, reference, as_context):
        path = _name(name)
        if not path:
            raise NamingError(f"{verb}: give a name (the context itself cannot be bound)",
                              reason="InvalidName")
        ior = await _reference_ior(orb, reference)
        await naming.bind(ctx, path, ior, rebind=rebind, context=as_context)
        shown = naming.show_name(path)
        return {"json": {"name": shown, "type_id": ior.type_id, "ior": ior_to_string(ior),
                         "context": as_context, "rebound" if rebind else "bound": True},
                "lines": [f"{'rebound' if rebind else 'bound'} {shown} "
                          f"({ior.type_id or 'no repository id'})"]}

    def read_first(**kwargs):
        kwargs["reference"] = _checked_reference(_read_reference(kwargs["reference"]))
        return command(**kwargs)

    read_first = functools.wraps(command)(read_first)
    read_first.__doc__ = (f"{'Bind or re-bind' if rebind else 'Bind'} NAME to REFERENCE (an "
                          "IOR:, corbaloc: or corbaname: reference, a file holding one, or '-' "
                          "for stdin)." + ("" if rebind else
                                           "  Refused (AlreadyBound) if NAME is bound."))
    return cmd.command(verb)(read_first)


bind = _binder(False)
rebind = _binder(True)


@cmd.command("unbind")
@click.argument("name")
@click.option("--destroy", is_flag=True,
              help="NAME is a context: destroy it too (refused, NotEmpty, while it has "
                   "bindings).")
@_common
async def unbind(orb, ctx, name, destroy):
    """Remove the binding NAME (a context unbound without --destroy lives on, unnamed)."""
    path = _name(name)
    if not path:
        raise NamingError("unbind: give a name (the context itself cannot be unbound)",
                          reason="InvalidName")
    if destroy:
        context = await naming.resolve(ctx, path)
        await naming.destroy(orb, context, path, naming.describe_ref(ctx))
    await naming.unbind(ctx, path)
    shown = naming.show_name(path)
    return {"json": {"name": shown, "unbound": True, "destroyed": destroy},
            "lines": [f"unbound {shown}" + (" (context destroyed)" if destroy else "")]}


@cmd.command("mkctx")
@click.argument("name")
@_common
async def mkctx(orb, ctx, name):
    """Create a naming context bound to NAME (bind_new_context)."""
    path = _name(name)
    if not path:
        raise NamingError("mkctx: give a name for the new context", reason="InvalidName")
    ior = await naming.bind_new_context(ctx, path)
    shown = naming.show_name(path)
    return {"json": {"name": shown, "ior": ior_to_string(ior) if ior else None},
            "lines": [f"created context {shown}"]}
