"""The least Interface Repository a dynamic client needs: an InterfaceDef per
served interface, answering ``describe_interface`` (and ``_get_id``,
``_get_name``) from the interface's pycdr.idl description.

``_interface`` (``Object::get_interface``) returns a reference to it.  Clients
that have no IDL compiled in -- Combat (Tcl), DII/DSI users -- ask an object
for its InterfaceDef and then for its ``FullInterfaceDescription`` (operations,
their parameters' TypeCodes and modes, exceptions, attributes) to learn how to
marshal a call.  What the full Interface Repository offers beyond that
(Contained navigation, lookup, writing definitions) is not answered: an
InterfaceDef here is a read-only description, found only through ``_interface``.

The TypeCodes are those of the Interface Repository IDL (CORBA 3.x Part 1,
14.5 "IR interfaces"), the subset a ``FullInterfaceDescription`` is made of.
"""

from __future__ import annotations

from ..codec import tc
from ..idl.model import Interface, Operation
from .servant import DynamicServant

_CORBA = "IDL:omg.org/CORBA/"


def _alias(name: str, content):
    return tc.alias(f"{_CORBA}{name}:1.0", name, content)


def _enum(name: str, items):
    return tc.enum(f"{_CORBA}{name}:1.0", name, items)


def _struct(name: str, members):
    return tc.struct(f"{_CORBA}{name}:1.0", name, members)


Identifier = _alias("Identifier", tc.string)
RepositoryId = _alias("RepositoryId", tc.string)
VersionSpec = _alias("VersionSpec", tc.string)
IDLType = tc.objref(f"{_CORBA}IDLType:1.0", "IDLType")
OperationMode = _enum("OperationMode", ["OP_NORMAL", "OP_ONEWAY"])
ParameterMode = _enum("ParameterMode", ["PARAM_IN", "PARAM_OUT", "PARAM_INOUT"])
AttributeMode = _enum("AttributeMode", ["ATTR_NORMAL", "ATTR_READONLY"])
ParameterDescription = _struct("ParameterDescription", [
    ("name", Identifier), ("type", tc.TypeCode_), ("type_def", IDLType), ("mode", ParameterMode)])
ExceptionDescription = _struct("ExceptionDescription", [
    ("name", Identifier), ("id", RepositoryId), ("defined_in", RepositoryId),
    ("version", VersionSpec), ("type", tc.TypeCode_)])
OperationDescription = _struct("OperationDescription", [
    ("name", Identifier), ("id", RepositoryId), ("defined_in", RepositoryId),
    ("version", VersionSpec), ("result", tc.TypeCode_), ("mode", OperationMode),
    ("contexts", _alias("ContextIdSeq", tc.sequence(_alias("ContextIdentifier", Identifier)))),
    ("parameters", _alias("ParDescriptionSeq", tc.sequence(ParameterDescription))),
    ("exceptions", _alias("ExcDescriptionSeq", tc.sequence(ExceptionDescription)))])
AttributeDescription = _struct("AttributeDescription", [
    ("name", Identifier), ("id", RepositoryId), ("defined_in", RepositoryId),
    ("version", VersionSpec), ("type", tc.TypeCode_), ("mode", AttributeMode)])
FullInterfaceDescription = tc.struct(
    f"{_CORBA}InterfaceDef/FullInterfaceDescription:1.0", "FullInterfaceDescription", [
        ("name", Identifier), ("id", RepositoryId), ("defined_in", RepositoryId),
        ("version", VersionSpec),
        ("operations", _alias("OpDescriptionSeq", tc.sequence(OperationDescription))),
        ("attributes", _alias("AttrDescriptionSeq", tc.sequence(AttributeDescription))),
        ("base_interfaces", _alias("RepositoryIdSeq", tc.sequence(RepositoryId))),
        ("type", tc.TypeCode_)])

INTERFACE_DEF_ID = f"{_CORBA}InterfaceDef:1.0"
# The part of InterfaceDef answered (attributes id and name as their accessors).
INTERFACE_DEF = Interface(
    name="InterfaceDef", scoped_name="CORBA::InterfaceDef", repo_id=INTERFACE_DEF_ID, kind="",
    bases=(), operations=[
        Operation("describe_interface", (), FullInterfaceDescription, ()),
        Operation("_get_id", (), RepositoryId, (), attribute="id"),
        Operation("_get_name", (), Identifier, (), attribute="name"),
    ])
# Object keys of the InterfaceDefs: this prefix, then the interface's repository id.
KEY_PREFIX = b"pycdr-InterfaceDef/"
_PARAMETER_MODES = {"in": 0, "out": 1, "inout": 2}


def _split_id(repo_id: str) -> tuple:
    """("IDL:Demo/Echo", "1.0") of "IDL:Demo/Echo:1.0"; other formats have no version."""
    head, colon, version = repo_id.rpartition(":")
    if repo_id.startswith("IDL:") and colon:
        return head, version
    return repo_id, ""


def _container_id(repo_id: str) -> str:
    """The repository id of the module or interface ``repo_id``'s definition is
    in ("IDL:Demo:1.0" for "IDL:Demo/Echo:1.0"; "" at the top level)."""
    head, version = _split_id(repo_id)
    container = head.rpartition("/")[0]
    return f"{container}:{version}" if container and version else ""


def _member_id(container: str, name: str) -> str:
    """The repository id IDL gives a member of ``container`` (an operation, an
    attribute): "IDL:Demo/Echo/echo_long:1.0"."""
    head, version = _split_id(container)
    return f"{head}/{name}:{version}" if version else ""


def _description(iface: Interface, op: Operation) -> dict:
    return {
        "name": op.name, "id": _member_id(iface.repo_id, op.name), "defined_in": iface.repo_id,
        "version": _split_id(iface.repo_id)[1], "result": op.result, "mode": int(op.oneway),
        "contexts": list(op.contexts),
        "parameters": [{"name": p.name, "type": p.type, "type_def": None,
                        "mode": _PARAMETER_MODES[p.mode]} for p in op.params],
        "exceptions": [{"name": exc.name(), "id": exc.id(), "defined_in": _container_id(exc.id()),
                        "version": _split_id(exc.id())[1], "type": exc} for exc in op.raises]}


def full_interface_description(interface: Interface) -> dict:
    """``InterfaceDef::describe_interface`` of a pycdr.idl Interface: its own and
    inherited operations (attribute accessors as attributes) and attributes."""
    operations, attributes = [], []
    for iface in interface.lineage():
        version = _split_id(iface.repo_id)[1]
        operations += [_description(iface, op) for op in iface.operations
                       if op.attribute is None]
        attributes += [{"name": a.name, "id": _member_id(iface.repo_id, a.name),
                        "defined_in": iface.repo_id, "version": version, "type": a.type,
                        "mode": int(a.readonly)} for a in iface.attributes]
    return {"name": interface.name, "id": interface.repo_id,
            "defined_in": _container_id(interface.repo_id),
            "version": _split_id(interface.repo_id)[1], "operations": operations, "attributes": attributes,
            "base_interfaces": [iface.repo_id for iface in interface.lineage()
                                if iface is not interface],
            "type": interface.type if interface.type is not None
            else tc.objref(interface.repo_id, interface.name)}


class InterfaceDefServant(DynamicServant):
    """The InterfaceDef of one served interface."""

    def __init__(self, described: Interface):
        self.described = described
        answers = {"describe_interface": full_interface_description(described),
                   "_get_id": described.repo_id, "_get_name": described.name}
        super().__init__(INTERFACE_DEF, lambda name, args: answers[name])


def interface_def_key(adapter, interface: Interface) -> bytes:
    """The object key of ``interface``'s InterfaceDef in ``adapter`` (activated
    on first use; the same key for every object of the interface)."""
    key = KEY_PREFIX + interface.repo_id.encode("utf-8")
    if adapter.servant(key) is None:
        adapter.activate(InterfaceDefServant(interface), key)
    return key
