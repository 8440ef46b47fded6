"""`pycdr call TARGET OP [ARGS...] --idl FILE`: one invocation with the reference ORB."""

from __future__ import annotations

import json
import sys

import click

from pycdr import encode
from pycdr.errors import PycdrError
from pycdr.giop.sysexc import COMM_FAILURE, TIMEOUT, TRANSIENT, SystemException
from pycdr.idl import IdlError, load
from pycdr.orb import ORB
from pycdr.orb.aio import run as run_loop
from pycdr.orb.invocation import UnknownUserException
from pycdr.orb.jsonvalues import from_json, to_json, type_name
from pycdr.orb.naming import NamingError
from pycdr.codec.values import UserException

from pycdr.orb.tls import TLSConfigError

from .main import EXIT_BAD_INPUT, EXIT_UNREACHABLE, EXIT_USAGE
from .names import naming_exit
from .tls import failure_text, tls_options


def _version(text):
    try:
        major, minor = (int(x) for x in text.split("."))
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a GIOP version like 1.2",
                                 param_hint="--giop") from None
    if major != 1 or not 0 <= minor <= 3:
        raise click.BadParameter(f"GIOP {text} does not exist (1.0 to 1.3)",
                                 param_hint="--giop")
    return (major, minor)


class _CallCommand(click.Command):
    """Negative numbers are arguments (JSON values), not options: with Click's
    ``ignore_unknown_options`` "-5" reaches ARGS; any other unknown option is
    still refused as one."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("context_settings", {})["ignore_unknown_options"] = True
        super().__init__(*args, **kwargs)

    def parse_args(self, ctx, args):
        rest = super().parse_args(ctx, args)
        for arg in ctx.params.get("args", ()):
            if arg.startswith("-") and not _is_json_number(arg):
                raise click.NoSuchOption(arg, ctx=ctx)
        return rest


def _is_json_number(text: str) -> bool:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _argument(param, text: str, version, little: bool):
    """The value of one in/inout parameter from its JSON text; click.BadParameter
    (exit code 2) naming the parameter and its type if it is not one."""
    shown = text if len(text) <= 40 else f"{text[:30]}... ({len(text)} characters)"
    try:
        obj = json.loads(text)
    except RecursionError:
        raise click.BadParameter(f"{shown} is nested too deeply", param_hint=param.name) from None
    except ValueError as e:     # not JSON, or an integer of more digits than Python reads
        raise click.BadParameter(f"{shown} is not JSON pycdr reads ({e})",
                                 param_hint=param.name) from None
    try:
        value = from_json(param.type, obj)
    except RecursionError:
        raise click.BadParameter("nested too deeply", param_hint=param.name) from None
    except (ValueError, TypeError, PycdrError) as e:    # from_json names the type
        raise click.BadParameter(str(e), param_hint=param.name) from None
    try:
        # What from_json leaves to the marshaller (bounds, sizes, characters the
        # code set cannot carry) is refused here, before any connection.
        encode(param.type, value, little=little, version=version)
    except RecursionError:
        raise click.BadParameter("nested too deeply", param_hint=param.name) from None
    except PycdrError as e:
        raise click.BadParameter(f"{e} ({type_name(param.type)})",
                                 param_hint=param.name) from None
    return value


@click.command("call", cls=_CallCommand)
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
    operations = interface.all_operations()
    if operation not in operations:
        raise click.BadParameter(f"{interface.scoped_name} has no operation {operation!r}",
                                 param_hint="OPERATION")
    op = operations[operation]
    if len(args) != len(op.in_params):
        click.echo(f"{operation} takes {len(op.in_params)} in/inout arguments "
                   f"({', '.join(p.name for p in op.in_params)}), not {len(args)}", err=True)
        sys.exit(EXIT_USAGE)
    version = _version(giop)
    values = [_argument(p, a, version, little) for p, a in zip(op.in_params, args)]
    try:
        outcome = run_loop(_call(target, interface, op, values, version, little,
                                    timeout, tls, module))
    except NamingError as e:        # corbaname: the naming service refused the name
        naming_exit(e)
    except TLSConfigError as e:
        click.echo(str(e), err=True)
        sys.exit(EXIT_USAGE)
    except (TRANSIENT, COMM_FAILURE, TIMEOUT, OSError) as e:
        click.echo(f"unreachable: {failure_text(e)}", err=True)
        sys.exit(EXIT_UNREACHABLE)
    except (PycdrError, SystemException) as e:   # INV_OBJREF: a reference with no IIOP profile
        click.echo(f"error: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    kind, value, explanation = outcome
    if as_json:
        click.echo(json.dumps({kind: value} if explanation is None else
                              {kind: value, "explain": explanation.to_json()}))
    elif kind == "local_exception":
        click.echo(f"{value['name']} raised locally, nothing sent: {value['reason']}")
    else:
        click.echo(f"{kind}: {json.dumps(value)}" if kind != "result" else json.dumps(value))
        if explanation is not None:
            click.echo("".join(f"  explain: {line}\n" for line in explanation.lines()), nl=False)
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


async def _call(target, interface, op, values, version, little, timeout, tls, module):
    """(kind, value, the explanation of the request when a system exception answered it)."""
    sent: list = []          # the bytes of the requests sent (a forward sends it again)
    async with ORB(version=version, little=little, timeout=timeout,
                   connect_timeout=timeout, tls=tls,
                   on_request=lambda _rid, data: sent.append(data)) as orb:
        ref = await orb.string_to_object(target, interface)
        try:
            result = await ref.invoke(op, *values)
        except SystemException as e:
            if isinstance(e, (TRANSIENT, COMM_FAILURE, TIMEOUT)):
                raise
            if e.raised_locally:
                # Nothing went on the wire: say why, and that the server never saw it.
                return "local_exception", {**e.to_json(), "raised_locally": True,
                                           "reason": str(e.__cause__ or e)}, None
            return "system_exception", e.to_json(), _explain(sent, e, module, target, ref)
        except UserException as e:
            return "user_exception", {"id": type(e)._tc.id(), "members": to_json(e)}, None
        except UnknownUserException as e:
            return "user_exception", {"id": e.exception_id}, None
        return "result", to_json(result), None


def _explain(sent, exc, module, target, ref):
    """pycdr explain of the last request sent, answered by ``exc``; None if none went."""
    from pycdr.explain import explain          # (only when an exception came)
    if not sent:
        return None
    # The reference's code sets only when it came as an IOR (a corbaloc has none to offer).
    ior = ref.ior if target.strip().upper().startswith("IOR:") else None
    return explain(sent[-1], exc, modules=[module], ior=ior)
