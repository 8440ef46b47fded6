"""Builds an :class:`IdlModule` from checked IDL: TypeCodes, interfaces,
constants, and Python classes for structs, unions, enums, exceptions and
value types, registered by repository id so decoded values use them (the
spirit of omniORBpy's importIDL; nothing is generated on disk)."""

from __future__ import annotations

from ..codec import tc, values
from .checker import Checker
from .model import Attribute, Declaration, Interface, IdlModule, Operation, Param
from .scope import Symbol
from .typecodes import TypeCodeBuilder

_TYPE_KINDS = ("typedef", "struct", "union", "enum", "exception", "interface", "native",
               "value", "valuebox")


def build_module(path: str, checker: Checker, register: bool = True) -> IdlModule:
    module = IdlModule(path=path)
    builder = TypeCodeBuilder()
    for sym in checker.declared:
        scoped = sym.scoped_name()
        if sym.kind in ("member", "param", "factory", "attribute", "operation", "enumerator"):
            continue
        module.repo_ids[scoped] = sym.repo_id
        module.declarations.append(Declaration(scoped, _kind_name(sym), sym.repo_id,
                                               sym.pos.file if sym.pos else "",
                                               sym.pos.line if sym.pos else 0))
        if sym.kind in _TYPE_KINDS and not (sym.forward and sym.kind in ("struct", "union")):
            module.types[scoped] = builder.of_symbol(sym)
    for sym in checker.declared:
        if sym.kind == "interface" and not sym.forward:
            module.interfaces[sym.scoped_name()] = _interface(sym, builder, module)
    _make_classes(module, checker, register)
    for sym in checker.declared:
        if sym.kind == "const" and sym.value is not None:
            module.constants[sym.scoped_name()] = _const_value(sym, module)
    return module


def _kind_name(sym: Symbol) -> str:
    sub = sym.info.get("subkind", "")
    if sym.kind == "value":
        word = "eventtype" if sym.info.get("event") else "valuetype"
        return f"{'abstract ' if sym.info.get('abstract') else ''}{word}"
    if sym.kind == "interface" and sub:
        return f"{sub} interface"
    return {"valuebox": "valuetype box"}.get(sym.kind, sym.kind) + \
        (" (forward)" if sym.forward else "")


def _interface(sym: Symbol, builder: TypeCodeBuilder, module: IdlModule) -> Interface:
    iface = Interface(name=sym.name, scoped_name=sym.scoped_name(), repo_id=sym.repo_id,
                      kind=sym.info.get("subkind", ""),
                      bases=tuple(b.scoped_name() for b in sym.bases),
                      type=builder.of_symbol(sym), _module=module)
    for member in sym.order:
        if member.kind == "operation":
            info = member.info
            iface.operations.append(Operation(
                name=member.name,
                params=tuple(Param(n, mode, builder.of_ref(r)) for n, mode, r in info["params"]),
                result=builder.of_ref(info["result"]),
                raises=tuple(builder.of_symbol(e) for e in info["raises"]),
                oneway=info["oneway"], contexts=tuple(info["contexts"])))
        elif member.kind == "attribute":
            atype = builder.of_ref(member.type)
            getraises = tuple(builder.of_symbol(e) for e in member.info["getraises"])
            setraises = tuple(builder.of_symbol(e) for e in member.info["setraises"])
            readonly = member.info["readonly"]
            iface.attributes.append(Attribute(member.name, atype, readonly, getraises, setraises))
            iface.operations.append(Operation(
                name="_get_" + member.name, params=(), result=atype, raises=getraises,
                attribute=member.name))
            if not readonly:
                iface.operations.append(Operation(
                    name="_set_" + member.name, params=(Param("value", "in", atype),),
                    result=tc.void, raises=setraises, attribute=member.name))
    return iface


def _make_classes(module: IdlModule, checker: Checker, register: bool) -> None:
    python_module = "idl:" + module.path
    for scoped, tcode in module.types.items():
        kind = tcode.kind().name
        if kind in ("tk_struct", "tk_except"):
            cls = values.make_struct_class(tcode, scoped.rsplit("::", 1)[-1], python_module)
        elif kind == "tk_union":
            cls = values.make_union_class(tcode, scoped.rsplit("::", 1)[-1], python_module)
        elif kind == "tk_enum":
            cls = values.make_enum_class(tcode, scoped.rsplit("::", 1)[-1], python_module)
        elif kind in ("tk_value", "tk_event"):
            cls = values.make_value_class(tcode, scoped.rsplit("::", 1)[-1], python_module)
        else:
            continue
        module.classes[scoped] = cls
        if register:
            values.register(tcode.id(), cls)


def _const_value(sym: Symbol, module: IdlModule):
    value = sym.value
    if isinstance(value, Symbol):   # an enumerator: the item of its enum class
        enum_sym = value.info["enum"]
        cls = module.classes.get(enum_sym.scoped_name())
        return cls._items[value.value] if cls is not None else value.name
    return value
