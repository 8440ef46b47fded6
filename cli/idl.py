"""`pycdr idl show FILE` and `pycdr idl padding FILE`."""

from __future__ import annotations

import json
import sys

import click

from pycdr import idl as idl_frontend
from pycdr.idl.padding import analyze_module
from pycdr.codec.typecode import describe

from .main import EXIT_BAD_INPUT
from .options import shared, write_json


def constant_text(value) -> str:
    """An IDL constant as IDL writes it: strings and characters quoted, booleans
    TRUE/FALSE, enumerators by name, numbers as they are."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return json.dumps(value)
    if hasattr(value, "name") and isinstance(value, int):
        return value.name
    return str(value)


def _load(path, include_dirs, defines):
    macros = {}
    for d in defines:
        name, _, value = d.partition("=")
        macros[name] = value or None
    try:
        return idl_frontend.load(path, include_dirs, macros, register=False)
    except idl_frontend.IdlError as exc:
        click.echo(str(exc), err=True)
        click.echo(f"{exc.count} error(s)", err=True)
        sys.exit(EXIT_BAD_INPUT)


_common = [
    click.argument("file", type=click.Path(exists=True, dir_okay=False)),
    shared("--include", "include_dirs"),
    click.option("-D", "defines", multiple=True, metavar="NAME[=VALUE]",
                 help="Preprocessor macro (repeatable)."),
    shared("--json", "json_out"),
]


def _with_common(f):
    for decorator in reversed(_common):
        f = decorator(f)
    return f


@click.group("idl")
def cmd() -> None:
    """Compile OMG IDL: types, repository ids, operations, padding."""


def _operation_json(op):
    return {
        "name": op.name, "oneway": op.oneway, "result": describe(op.result),
        "params": [{"name": p.name, "mode": p.mode, "type": describe(p.type)}
                   for p in op.params],
        "raises": [r.id() for r in op.raises], "contexts": list(op.contexts),
    }


@cmd.command("show")
@_with_common
def show(file, include_dirs, defines, json_out):
    """Types, repository ids and operations of an IDL file."""
    module = _load(file, include_dirs, defines)
    if json_out is not None:
        out = {
            "declarations": [{"name": d.scoped_name, "kind": d.kind, "repository_id": d.repo_id,
                              "file": d.file, "line": d.line} for d in module.declarations],
            "types": {name: describe(t) for name, t in module.types.items()},
            "constants": {name: constant_text(v) for name, v in module.constants.items()},
            "interfaces": {name: {"repository_id": i.repo_id, "kind": i.kind,
                                  "bases": list(i.bases),
                                  "operations": [_operation_json(op) for op in i.operations]}
                           for name, i in module.interfaces.items()},
        }
        write_json(json_out, out, indent=2)
        return
    for d in module.declarations:
        line = f"{d.kind:<16} {d.scoped_name:<40} {d.repo_id}"
        if d.scoped_name in module.types:
            line += f"  [{describe(module.types[d.scoped_name])}]"
        if d.scoped_name in module.constants:
            line += f"  = {constant_text(module.constants[d.scoped_name])}"
        click.echo(line)
        if d.scoped_name in module.interfaces:
            for op in module.interfaces[d.scoped_name].operations:
                params = ", ".join(f"{p.mode} {describe(p.type)} {p.name}" for p in op.params)
                raises = f" raises ({', '.join(r.name() for r in op.raises)})" if op.raises else ""
                oneway = "oneway " if op.oneway else ""
                click.echo(f"    {oneway}{describe(op.result)} {op.name}({params}){raises}")


@cmd.command("padding")
@_with_common
def padding(file, include_dirs, defines, json_out):
    """CDR padding of every struct and exception (and sequences of them)."""
    module = _load(file, include_dirs, defines)
    reports = analyze_module(module)
    if json_out is not None:
        write_json(json_out, [r.to_json() for r in reports], indent=2)
        return
    for r in reports:
        note = " (variable size: minimum shown)" if r.variable else ""
        click.echo(f"{r.kind} {r.name}{note}")
        if r.kind == "sequence":
            click.echo(f"  per element: {r.data_bytes} data bytes, "
                       f"{r.padding_by_alignment[4]:g} padding bytes")
        else:
            click.echo(f"  data bytes: {r.data_bytes}")
            cells = ", ".join(f"{start}:{r.size_by_alignment[start]}/{r.padding_by_alignment[start]}"
                              for start in range(8))
            click.echo(f"  size/padding by start offset mod 8: {cells}")
        click.echo(f"  padding overhead: {r.overhead_percent:.1f}%")
        how = "best" if r.best_order_exhaustive else "sorted by alignment"
        click.echo(f"  {how} member order: {', '.join(r.best_order)} "
                   f"(padding {r.best_padding:g}, saves {r.saved_bytes:g} bytes)")


@cmd.command("lua")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@shared("--include", "include_dirs")
@click.option("-D", "defines", multiple=True, metavar="NAME[=VALUE]",
              help="Preprocessor macro (repeatable).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here (default: stdout).")
def lua(file, include_dirs, defines, output):
    """A type table for the Wireshark dissector (dissector/pycdr_giop.lua)."""
    from pycdr.lua_types import type_table
    text = type_table([_load(file, include_dirs, defines)])
    if output:
        with open(output, "w") as f:
            f.write(text)
    else:
        click.echo(text, nl=False)
