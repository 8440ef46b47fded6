"""`pycdr call TARGET OP [ARGS...] --idl FILE`: one invocation with the reference ORB."""

from __future__ import annotations

import json
import sys

import click

from pycdr import encode
from pycdr.errors import PycdrError
from pycdr.giop.sysexc import COMM_FAILURE, TIMEOUT, TRANSIENT, SystemException
from pycdr.idl import IdlError, load
from pycdr.idl.model import OBJECT_OPERATIONS
from pycdr.orb import ORB
from pycdr.orb.aio import run as run_loop
from pycdr.orb.invocation import UnknownUserException
from pycdr.orb.jsonvalues import JSONTextError, dumps, from_json, loads, to_json, type_name
from pycdr.orb.naming import NamingError
from pycdr.codec.values import UserException

from pycdr.orb.tls import TLSConfigError

from .failures import explain, stop, target_endpoint
from .main import EXIT_BAD_INPUT, EXIT_USAGE
from .names import naming_exit
from .options import shared, write_json
from .reference import read_reference
from .tls import tls_options


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
        value = loads(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _quoting_hint(text: str) -> str:
    """For a bare word where JSON wants a string: how to write it for the shell."""
    if text and not text.lstrip().startswith(("{", "[", '"')):
        quoted = json.dumps(text)
        return f": a string is written in double quotes, for the shell '{quoted}'"
    return ""


def _argument(param, text: str, version, little: bool):
    """The value of one in/inout parameter from its JSON text; click.BadParameter
    (exit code 2) naming the parameter and its type if it is not one."""
    shown = text if len(text) <= 40 else f"{text[:30]}... ({len(text)} characters)"
    try:
        obj = loads(text)
    except RecursionError:
        raise click.BadParameter(f"{shown} is nested too deeply", param_hint=param.name) from None
    except JSONTextError as e:  # NaN, Infinity, a number beyond a double
        raise click.BadParameter(f"{e} ({type_name(param.type)})",
                                 param_hint=param.name) from None
    except ValueError as e:     # not JSON, or an integer of more digits than Python reads
        raise click.BadParameter(f"{shown} is not JSON pycdr reads ({e}){_quoting_hint(text)}",
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
@shared("--idl", "idl_file", more="Not needed for the operations of every object: "
        "_is_a, _non_existent, _interface, _repository_id.")
@shared("--interface", "interface_name", more="Default: the one with OPERATION.")
@shared("--include", "include_dirs")
@shared("--giop", default="1.2", show_default=True, more="The highest used.")
@click.option("--little", is_flag=True, help="Send little-endian requests.")
@shared("--timeout", default=10.0, show_default=True)
@shared("--json", "json_out", more="One object: result, out values or exception.")
@tls_options
def cmd(target, operation, args, idl_file, interface_name, include_dirs, giop, little,
        timeout, json_out, tls):
    """Invoke OPERATION on TARGET with ARGS as JSON values (the in and inout parameters in
    order) and print the result (and out values).

    TARGET is an IOR, corbaloc or corbaname URL, a file holding one (a path or file://
    URL) or '-' for stdin.  Strings are JSON strings: quote them for the shell, '"hello"'.
    NaN and infinities are the strings "NaN", "Infinity", "-Infinity"."""
    target = read_reference(target)
    known_interfaces, module = (), None
    if operation in OBJECT_OPERATIONS and interface_name is None:
        interface, op = None, OBJECT_OPERATIONS[operation]
    else:
        if idl_file is None:
            raise click.UsageError(f"--idl FILE is needed: the IDL that declares {operation} "
                                   f"(only the operations of every object, "
                                   f"{_names(OBJECT_OPERATIONS)}, go without)")
        try:
            module = load(idl_file, include_dirs)
        except IdlError as e:
            click.echo(str(e), err=True)
            sys.exit(EXIT_BAD_INPUT)
        interface = _find_interface(module, interface_name, operation, idl_file)
        op = _find_operation(interface, operation)
        known_interfaces = tuple(module.interfaces.values())
    if len(args) != len(op.in_params):
        names = ", ".join(f"{p.name} ({type_name(p.type)})" for p in op.in_params)
        raise click.UsageError(f"{operation} takes {len(op.in_params)} in/inout arguments"
                               f"{': ' + names if names else ''}, not {len(args)}")
    version = _version(giop)
    values = [_argument(p, a, version, little) for p, a in zip(op.in_params, args)]
    try:
        outcome = run_loop(_call(target, interface, op, values, version, little,
                                 timeout, tls, known_interfaces, module))
    except NamingError as e:        # corbaname: the naming service refused the name
        naming_exit(e)
    except TLSConfigError as e:
        click.echo(str(e), err=True)
        sys.exit(EXIT_USAGE)
    except (TRANSIENT, COMM_FAILURE, TIMEOUT, OSError) as e:
        stop(explain(e, target_endpoint(target, tls), tls, timeout))
    except (PycdrError, SystemException) as e:   # INV_OBJREF: a reference with no IIOP profile
        click.echo(f"error: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    kind, value, explanation = outcome
    if json_out is not None:
        write_json(json_out, {kind: value} if explanation is None else
                   {kind: value, "explain": explanation.to_json()})
    elif kind == "local_exception":
        click.echo(f"{value['name']} raised locally, nothing sent: {value['reason']}")
        if "GIOP 1.0" in value["reason"] and _corbaloc_version(target) == (1, 0):
            click.echo("hint: a corbaloc address without a version is GIOP 1.0 (the "
                       "corbaloc default), which has no wchar or wstring: give the version, "
                       "e.g. corbaloc::1.2@host:port/key", err=True)
    else:
        click.echo(f"{kind}: {dumps(value)}" if kind != "result" else dumps(value))
        if explanation is not None:
            click.echo("".join(f"  explain: {line}\n" for line in explanation.lines()), nl=False)
    sys.exit(0 if kind == "result" else EXIT_BAD_INPUT)


def _warn_if_other_type(ref, interface, known_interfaces) -> None:
    """One line when the reference says it is of another type than the interface used:
    the call may then be refused (BAD_OPERATION) or its reply misread."""
    type_id = ref.ior.type_id
    if interface is None or not type_id or type_id == interface.repo_id:
        return
    for derived in known_interfaces:
        if derived.repo_id == type_id and interface in derived.lineage():
            return          # a reference to a derived interface: its base's call is right
    click.echo(f"pycdr: warning: the reference's type is {type_id}, not "
               f"{interface.scoped_name} ({interface.repo_id}); the call is made with "
               f"{interface.scoped_name}'s signature", err=True)


def _corbaloc_version(target: str):
    """The GIOP version of a corbaloc URL's first IIOP address (None for other references)."""
    from pycdr.addressing.corbaloc import Corbaloc, IIOPAddress, parse_object_url
    try:
        parsed = parse_object_url(target)
    except PycdrError:
        return None
    if not isinstance(parsed, Corbaloc):
        return None
    return next((a.version for a in parsed.addresses if isinstance(a, IIOPAddress)), None)


def _names(items) -> str:
    items = sorted(items)
    return ", ".join(items[:12]) + (f" and {len(items) - 12} more" if len(items) > 12 else "")


def _find_interface(module, name, operation, idl_file):
    interfaces = module.interfaces
    if name is not None:
        if name in interfaces:
            return interfaces[name]
        close = [n for n in interfaces if n.rsplit("::", 1)[-1] == name.rsplit("::", 1)[-1]]
        hint = f"; did you mean {_names(close)}?" if close else ""
        raise click.BadParameter(f"no interface {name} in {idl_file}; its interfaces: "
                                 f"{_names(interfaces) or 'none'}{hint}",
                                 param_hint="--interface")
    if not interfaces:
        raise click.UsageError(f"{idl_file} declares no interface")
    having = [n for n, i in interfaces.items() if operation in i.all_operations()]
    if len(having) == 1:
        return interfaces[having[0]]
    if having:
        raise click.UsageError(f"{len(having)} interfaces of {idl_file} have {operation}: "
                               f"{_names(having)}; name one with --interface")
    raise click.UsageError(f"no interface of {idl_file} has an operation {operation}; its "
                           f"interfaces: {_names(interfaces)}")


def _find_operation(interface, operation):
    operations = interface.all_operations()
    if operation in operations:
        return operations[operation]
    if operation in OBJECT_OPERATIONS:
        return OBJECT_OPERATIONS[operation]
    raise click.BadParameter(f"{interface.scoped_name} has no operation {operation}; its "
                             f"operations: {_names(operations) or 'none'}",
                             param_hint="OPERATION")


async def _call(target, interface, op, values, version, little, timeout, tls,
                known_interfaces=(), module=None):
    """(kind, value, the explanation of the request when a system exception answered it)."""
    sent: list = []          # the bytes of the requests sent (a forward sends it again)
    async with ORB(version=version, little=little, timeout=timeout,
                   connect_timeout=timeout, tls=tls,
                   on_request=lambda _rid, data: sent.append(data)) as orb:
        ref = await orb.string_to_object(target, interface)
        _warn_if_other_type(ref, interface, known_interfaces)
        try:
            result = await ref.invoke(op, *values)
        except SystemException as e:
            if isinstance(e, (TRANSIENT, COMM_FAILURE, TIMEOUT)) and not e.from_reply:
                raise           # no answer: why not is told from the connection
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
    from pycdr.explain import explain as explain_request    # (only when an exception came)
    if not sent:
        return None
    # The reference's code sets only when it came as an IOR (a corbaloc has none to offer).
    ior = ref.ior if target.strip().upper().startswith("IOR:") else None
    return explain_request(sent[-1], exc, modules=[module] if module else [], ior=ior)
