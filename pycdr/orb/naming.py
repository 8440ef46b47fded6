"""CosNaming, for corbaname: the types and operations the client needs."""

from __future__ import annotations

from ..codec import tc, values
from ..idl.model import Operation, Param

NAMING_CONTEXT_ID = "IDL:omg.org/CosNaming/NamingContext:1.0"
NAME_COMPONENT = tc.struct("IDL:omg.org/CosNaming/NameComponent:1.0", "NameComponent",
                           [("id", tc.string), ("kind", tc.string)])
NAME = tc.alias("IDL:omg.org/CosNaming/Name:1.0", "Name", tc.sequence(NAME_COMPONENT))
NameComponent = values.make_struct_class(NAME_COMPONENT, "NameComponent", "CosNaming")
_NOT_FOUND_REASON = tc.enum("IDL:omg.org/CosNaming/NamingContext/NotFoundReason:1.0",
                            "NotFoundReason", ["missing_node", "not_context", "not_object"])
NOT_FOUND = tc.exception("IDL:omg.org/CosNaming/NamingContext/NotFound:1.0", "NotFound",
                         [("why", _NOT_FOUND_REASON), ("rest_of_name", NAME)])
CANNOT_PROCEED = tc.exception("IDL:omg.org/CosNaming/NamingContext/CannotProceed:1.0",
                              "CannotProceed", [("cxt", tc.objref(NAMING_CONTEXT_ID,
                                                                  "NamingContext")),
                                                ("rest_of_name", NAME)])
INVALID_NAME = tc.exception("IDL:omg.org/CosNaming/NamingContext/InvalidName:1.0",
                            "InvalidName", [])
ALREADY_BOUND = tc.exception("IDL:omg.org/CosNaming/NamingContext/AlreadyBound:1.0",
                             "AlreadyBound", [])
_NAMING_RAISES = (NOT_FOUND, CANNOT_PROCEED, INVALID_NAME)
RESOLVE = Operation("resolve", (Param("n", "in", NAME),), tc.Object, _NAMING_RAISES)
BIND = Operation("bind", (Param("n", "in", NAME), Param("obj", "in", tc.Object)), tc.void,
                 _NAMING_RAISES + (ALREADY_BOUND,))
REBIND = Operation("rebind", (Param("n", "in", NAME), Param("obj", "in", tc.Object)), tc.void,
                   _NAMING_RAISES)


def make_name(components) -> list:
    """A CosNaming Name from [(id, kind), ...] (what Corbaname.name gives)."""
    return [NameComponent(id=i, kind=k) for i, k in components]
