"""`pycdr call TARGET OP [ARGS...] --idl FILE`: one invocation with the reference ORB."""

from __future__ import annotations

import asyncio
import json
import sys

import click

from pycdr.errors import PycdrError
from pycdr.giop.sysexc import COMM_FAILURE, TIMEOUT, TRANSIENT, SystemException
from pycdr.idl import IdlError, load
from pycdr.orb import ORB
from pycdr.orb.invocation import UnknownUserException
from pycdr.orb.jsonvalues import from_json, to_json
from pycdr.values import UserException

from pycdr.orb.tls import TLSConfigError

from .main import EXIT_BAD_INPUT, EXIT_UNREACHABLE, EXIT_USAGE
from .tls import failure_text, tls_options


def _version(text):
    try:
        major, minor = (int(x) for x in text.split("."))
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a GIOP version like 1.2") from None
    return (major, minor)


@click.command("call")
@click.argument("target")
@click.argument("operation")
@click.argument("args", nargs=-1)
@click.option("--idl", "idl_file", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--interface", "interface_name", default=None,
              help="Scoped interface name (default: the one with OPERATION).")
@click.option("-I", "--include", "include_dirs", multiple=True)
@click.option("--giop", default="1.2", show_default=True, help="Highest GIOP version to use.")
@click.option("--little", is_flag=True, help="Send little-endian requests.")
@click.option("--timeout", default=10.0, show_default=True, help="Seconds.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@tls_options
def cmd(target, operation, args, idl_file, interface_name, include_dirs, giop, little,
        timeout, as_json, tls):
    """Invoke OPERATION on TARGET (IOR, corbaloc or corbaname) with ARGS as JSON values (the
    in and inout parameters in order) and print the result (and out values)."""
    try:
        module = load(idl_file, include_dirs)
    except IdlError as e:
        click.echo(str(e), err=True)
        sys.exit(EXIT_BAD_INPUT)
    interface = _find_interface(module, interface_name, operation)
    op = interface.all_operations()[operation]
    if len(args) != len(op.in_params):
        click.echo(f"{operation} takes {len(op.in_params)} in/inout arguments "
                   f"({', '.join(p.name for p in op.in_params)}), not {len(args)}", err=True)
        sys.exit(EXIT_USAGE)
    try:
        values = [from_json(p.type, json.loads(a)) for p, a in zip(op.in_params, args)]
    except (ValueError, TypeError) as e:
        click.echo(f"bad argument: {e}", err=True)
        sys.exit(EXIT_USAGE)
    try:
        outcome = asyncio.run(_call(target, interface, op, values, _version(giop), little,
                                    timeout, tls))
    except TLSConfigError as e:
        click.echo(str(e), err=True)
        sys.exit(EXIT_USAGE)
    except (TRANSIENT, COMM_FAILURE, TIMEOUT, OSError) as e:
        click.echo(f"unreachable: {failure_text(e)}", err=True)
        sys.exit(EXIT_UNREACHABLE)
    except PycdrError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    kind, value = outcome
    if as_json:
        click.echo(json.dumps({kind: value}))
    elif kind == "local_exception":
        click.echo(f"{value['name']} raised locally, nothing sent: {value['reason']}")
    else:
        click.echo(f"{kind}: {json.dumps(value)}" if kind != "result" else json.dumps(value))
    sys.exit(0 if kind == "result" else EXIT_BAD_INPUT)


def _find_interface(module, name, operation):
    if name is not None:
        if name not in module.interfaces:
            raise click.BadParameter(f"no interface {name!r}", param_hint="--interface")
        return module.interfaces[name]
    having = [i for i in module.interfaces.values() if operation in i.all_operations()]
    if len(having) != 1:
        raise click.BadParameter(f"{len(having)} interfaces have {operation!r}: "
                                 "name one with --interface", param_hint="--interface")
    return having[0]


async def _call(target, interface, op, values, version, little, timeout, tls):
    async with ORB(version=version, little=little, timeout=timeout,
                   connect_timeout=timeout, tls=tls) as orb:
        ref = await orb.string_to_object(target, interface)
        try:
            result = await ref.invoke(op, *values)
        except SystemException as e:
            if isinstance(e, (TRANSIENT, COMM_FAILURE, TIMEOUT)):
                raise
            if e.raised_locally:
                # Nothing went on the wire: say why, and that the server never saw it.
                return "local_exception", {**e.to_json(), "raised_locally": True,
                                           "reason": str(e.__cause__ or e)}
            return "system_exception", e.to_json()
        except UserException as e:
            return "user_exception", {"id": type(e)._tc.id(), "members": to_json(e)}
        except UnknownUserException as e:
            return "user_exception", {"id": e.exception_id}
        return "result", to_json(result)
