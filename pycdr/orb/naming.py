"""A CosNaming client: the naming types of the shipped CosNaming.idl, and the
operations ``pycdr names`` and corbaname: resolution use, over any ORB's
naming service.

    ctx = await naming_context(orb, "corbaloc::127.0.0.1:2809/NameService")
    ior = await resolve(ctx, parse_name("test/Echo.obj"))
    for binding in await list_bindings(ctx, []):
        binding.name, binding.is_context

Names are lists of (id, kind) pairs; parse_name and show_name convert them from
and to the INS stringified form ("a/b.kind", backslash escapes).  A naming
service's refusal (NotFound, CannotProceed, InvalidName, AlreadyBound,
NotEmpty, a system exception) becomes a NamingError whose text is one line
naming the failing part of the name; a naming service that cannot be reached
becomes NamingServiceUnreachable.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..addressing.iiop import IIOPProfile, decode_profile
from ..addressing.corbaloc import Corbaname, format_string_name, parse_string_name
from ..codec.ior import IOR
from ..codec.values import UserException
from ..errors import ObjectURLError, PycdrError
from ..giop.sysexc import COMM_FAILURE, TIMEOUT, TRANSIENT, SystemException
from ..idl import IdlModule, load, standard_idl
from ..idl.model import Interface, Operation
from .invocation import UnknownUserException
from .tls import TLSConfigError, transport_error_of

COSNAMING_IDL = standard_idl("CosNaming.idl")
NAMING_CONTEXT = "CosNaming::NamingContext"
NAMING_CONTEXT_EXT = "CosNaming::NamingContextExt"
BINDING_ITERATOR = "CosNaming::BindingIterator"
# Bindings asked for by list() and each next_n(): what omniORB's nameclt and
# most tools use; a longer list arrives through the BindingIterator.
DEFAULT_BATCH = 100
# A naming service that never says "done" to next_n is stopped after this many
# bindings of one context (a hostile or broken iterator cannot loop forever).
MAX_BINDINGS = 1_000_000


@functools.lru_cache(maxsize=None)
def cosnaming() -> IdlModule:
    """CosNaming.idl, compiled once (its classes registered: decoded NotFound etc.
    are its exceptions)."""
    return load(COSNAMING_IDL)


def interface(scoped_name: str) -> Interface:
    return cosnaming().interfaces[scoped_name]


def operation(scoped_name: str, name: str) -> Operation:
    return interface(scoped_name).all_operations()[name]


def naming_context_id() -> str:
    return interface(NAMING_CONTEXT).repo_id


def is_naming_context_id(type_id: str) -> bool:
    """Whether ``type_id`` is NamingContext's or NamingContextExt's repository id."""
    return type_id in (interface(NAMING_CONTEXT).repo_id, interface(NAMING_CONTEXT_EXT).repo_id)


def make_name(components) -> list:
    """A CosNaming::Name from [(id, kind), ...]."""
    NameComponent = cosnaming().classes["CosNaming::NameComponent"]
    return [NameComponent(id=i, kind=k) for i, k in components]


def name_pairs(name) -> list:
    """[(id, kind), ...] of a CosNaming::Name value."""
    return [(c.id, c.kind) for c in name]


def parse_name(text: str) -> list:
    """A stringified name ("a/b.kind") as [(id, kind), ...]; NamingError if it is
    not one (an empty component, a second unescaped '.', a lone backslash)."""
    try:
        return parse_string_name(text)
    except ObjectURLError as e:
        raise NamingError(f"bad name {text!r}: {e.message} (at character {e.offset})",
                          reason="InvalidName") from None


def show_name(components) -> str:
    """The stringified form of [(id, kind), ...]; "(the context itself)" for []."""
    return format_string_name(components) if components else "(the context itself)"


# ----------------------------------------------------------------------------
# Errors
class NamingError(PycdrError):
    """A naming service refused a name, or a name is malformed. ``reason`` is the
    CosNaming exception's name (NotFound, ...), or the system exception's."""

    def __init__(self, message: str, *, reason: str, rest_of_name=None):
        super().__init__(message)
        self.reason = reason
        self.rest_of_name = rest_of_name


class NamingServiceUnreachable(NamingError):
    """The naming service could not be reached (or did not answer in time)."""


def _quoted(components) -> str:
    return f'"{format_string_name(components)}"' if components else "the context itself"


def refusal(exc: BaseException, name: list, where: str) -> NamingError:
    """The NamingError for ``exc``, raised by the naming service at ``where``
    (a description of it) for ``name`` ([(id, kind), ...])."""
    full = _quoted(name)
    at = f"(naming service {where})"
    transport = transport_error_of(exc)
    if transport is not None or isinstance(exc, (OSError, TIMEOUT)):
        return NamingServiceUnreachable(f"naming service {where} unreachable: "
                                        f"{transport or exc}", reason=type(exc).__name__)
    if isinstance(exc, (TRANSIENT, COMM_FAILURE)):
        # Lost on the way, or answered by the naming service when a context the name
        # goes through (bound there, served elsewhere) could not be reached.
        return NamingServiceUnreachable(
            f"{full}: {exc}: the naming service, or a context the name goes through, "
            f"could not be reached {at}", reason=exc.name)
    if isinstance(exc, SystemException):
        return NamingError(f"{full}: the naming service raised {exc} {at}", reason=exc.name)
    if not isinstance(exc, UserException):
        return NamingError(f"{full}: {exc} {at}", reason=type(exc).__name__)
    kind = type(exc).__name__
    rest = name_pairs(getattr(exc, "rest_of_name", None) or [])
    # The part before rest_of_name was resolved; rest_of_name starts at the component
    # that failed.  A server whose rest_of_name is not a tail of the name is quoted as is.
    done = name[:len(name) - len(rest)] if rest and name[len(name) - len(rest):] == rest \
        else None
    failing = rest[:1] or name[-1:]
    upto = (done or []) + failing
    if kind == "NotFound":
        why = exc.why.name if hasattr(exc.why, "name") else str(exc.why)
        if why == "missing_node":
            text = f"not found: {full}: nothing is bound to {_quoted(failing)}" + \
                (f" in context {_quoted(done)}" if done else "")
        elif why == "not_context":
            text = (f"not found: {full}: {_quoted(upto)} is bound to an object, not a naming "
                    "context")
        elif why == "not_object":
            text = (f"not found: {full}: {_quoted(upto)} is bound to a naming context, not "
                    "an object")
        else:
            text = f"not found: {full} (reason {why}, rest of name {_quoted(rest)})"
        if len(rest) > 1:
            text += f" (rest of name {_quoted(rest)})"
        return NamingError(f"{text} {at}", reason=kind, rest_of_name=rest)
    if kind == "CannotProceed":
        return NamingError(f"cannot proceed: {full}: the naming service could not go on "
                           f"at {_quoted(rest) if rest else 'the name'} {at}",
                           reason=kind, rest_of_name=rest)
    if kind == "InvalidName":
        return NamingError(f"invalid name: {full} (the naming service refuses it: an empty "
                           f"name or a component it does not take) {at}", reason=kind)
    if kind == "AlreadyBound":
        return NamingError(f"already bound: {full} (rebind replaces a binding) {at}",
                           reason=kind)
    if kind == "NotEmpty":
        return NamingError(f"not empty: the context {full} still has bindings (unbind them "
                           f"first) {at}", reason=kind)
    return NamingError(f"{full}: {kind} {at}", reason=kind)


# What an invocation on a naming service raises for a refusal or a failure.
_FAILURES = (UserException, UnknownUserException, SystemException, OSError, PycdrError)


# ----------------------------------------------------------------------------
# Operations on a naming context (an ObjectRef of the ORB in pycdr.orb.client)
def describe_ref(ref) -> str:
    """Where a naming service is, for messages: host:port of its reference (not of a
    LOCATION_FORWARD it answered with), and its object key when that is short text."""
    for profile in ref.ior.profiles:
        try:
            decoded = decode_profile(profile, lenient=True)
        except PycdrError:
            continue
        if isinstance(decoded, IIOPProfile):
            key = decoded.object_key
            shown = f" ({key.decode('ascii')})" if key.isascii() and key.decode().isprintable() \
                and 0 < len(key) <= 40 else ""
            return f"{decoded.host}:{decoded.port}{shown}"
    return "(no IIOP address)"


async def _invoke(ctx, op_name: str, name: list, *args, scoped=NAMING_CONTEXT):
    """ctx.invoke(op, *args) with every failure a NamingError about ``name`` (what the
    user asked for: the message's name)."""
    try:
        return await ctx.invoke(operation(scoped, op_name), *args)
    except TLSConfigError:
        raise
    except _FAILURES as e:
        raise refusal(e, name, describe_ref(ctx)) from e


async def resolve(ctx, name: list, *, under: list = ()) -> IOR:
    """The reference bound to ``name`` ([(id, kind), ...]; [] is ctx itself); ``under``:
    the name ctx has where the user started (messages show the whole name)."""
    if not name:
        return ctx.ior
    shown = [*under, *name]
    ior = await _invoke(ctx, "resolve", shown, make_name(name))
    if ior is None:
        raise NamingError(f"{_quoted(shown)} is bound to a nil reference "
                          f"(naming service {describe_ref(ctx)})", reason="nil")
    return ior


async def bind(ctx, name: list, ior: IOR, *, rebind: bool = False,
               context: bool = False) -> None:
    """bind/rebind ``name`` to ``ior`` (bind_context/rebind_context with ``context``)."""
    op = ("rebind" if rebind else "bind") + ("_context" if context else "")
    await _invoke(ctx, op, name, make_name(name), ior)


async def unbind(ctx, name: list) -> None:
    await _invoke(ctx, "unbind", name, make_name(name))


async def bind_new_context(ctx, name: list) -> IOR:
    """A new context bound to ``name``; its reference."""
    return await _invoke(ctx, "bind_new_context", name, make_name(name))


async def destroy(orb, ior: IOR, name: list, where: str) -> None:
    """NamingContext::destroy on the context ``ior`` (bound to ``name``)."""
    ctx = orb.object(ior, interface(NAMING_CONTEXT))
    try:
        await ctx.invoke(operation(NAMING_CONTEXT, "destroy"))
    except TLSConfigError:
        raise
    except _FAILURES as e:
        raise refusal(e, name, where) from e


@dataclass(frozen=True)
class Binding:
    name: tuple             # ((id, kind),): one component, relative to the listed context
    is_context: bool

    @property
    def text(self) -> str:
        return format_string_name(self.name)


async def list_bindings(orb, ctx, name: list, batch: int = DEFAULT_BATCH) -> list:
    """Every binding of the context ``ctx`` (reached by ``name``, for messages):
    list(batch), then the BindingIterator's next_n(batch) until it says done, then
    its destroy()."""
    bindings, iterator = await _invoke(ctx, "list", name, batch)
    out = [_binding(b) for b in bindings]
    if iterator is None:
        return out
    it = orb.object(iterator, interface(BINDING_ITERATOR))
    where = describe_ref(ctx)
    while True:
        try:
            more, chunk = await it.invoke(operation(BINDING_ITERATOR, "next_n"), batch)
        except TLSConfigError:
            raise
        except _FAILURES as e:
            error = refusal(e, name, where)
            if not isinstance(error, NamingServiceUnreachable):
                await _destroy_iterator(it)
            raise error from e
        out.extend(_binding(b) for b in chunk)
        if not more or not chunk:
            break
        if len(out) >= MAX_BINDINGS:
            await _destroy_iterator(it)
            raise NamingError(f"{_quoted(name)}: the naming service's BindingIterator gave "
                              f"more than {MAX_BINDINGS} bindings (naming service {where})",
                              reason="too many bindings")
    await _destroy_iterator(it)
    return out


async def _destroy_iterator(it) -> None:
    try:
        await it.invoke(operation(BINDING_ITERATOR, "destroy"))
    except _FAILURES:
        pass    # the iterator may be gone already (some services destroy it when done)


def _binding(b) -> Binding:
    return Binding(tuple(name_pairs(b.binding_name)), b.binding_type.name == "ncontext")


# ----------------------------------------------------------------------------
# From a stringified reference
async def naming_context(orb, text: str, **options):
    """The naming context a TARGET names: an IOR or corbaloc: (the context itself),
    or a corbaname: whose name (if any) is resolved there. Errors: ObjectURLError
    (the text), NamingError."""
    return await orb.string_to_object(text, interface(NAMING_CONTEXT), **options)


async def resolve_corbaname(orb, url: Corbaname, **options) -> IOR:
    """The IOR a corbaname: URL names: its name resolved by the naming service at
    its corbaloc (the naming context itself when the URL has no name)."""
    ior = url.corbaloc.to_ior(naming_context_id())
    ctx = orb.object(ior, interface(NAMING_CONTEXT), **options)
    name = []
    if url.string_name:
        try:
            name = url.name
        except ObjectURLError as e:
            raise NamingError(f"bad name {url.string_name!r} in the corbaname URL: "
                              f"{e.message}", reason="InvalidName") from None
    return await resolve(ctx, name)
