"""Short names for building TypeCodes in code::

    from pycdr import tc
    BinStruct = tc.struct("IDL:BinStruct:1.0", "BinStruct", [
        ("s", tc.short), ("c", tc.char), ("l", tc.long), ("o", tc.octet),
        ("d", tc.double), ("pad", tc.array(tc.octet, 8)),
    ])
    Node = tc.struct("IDL:Node:1.0", "Node", [
        ("value", tc.long),
        ("children", tc.sequence(tc.recursive("IDL:Node:1.0"))),
    ])
"""

from .typecode import (DEFAULT, PRIVATE_MEMBER, PUBLIC_MEMBER, VM_ABSTRACT, VM_CUSTOM, VM_NONE,
                       VM_TRUNCATABLE, TCKind, TypeCode, alias_tc, array_tc, enum_tc,
                       exception_tc, fixed_tc, native_tc, objref_tc, primitive, recursive_tc,
                       sequence_tc, string_tc, struct_tc, union_tc, value_box_tc, value_tc,
                       wstring_tc)

_K = TCKind

null = primitive(_K.tk_null)
void = primitive(_K.tk_void)
short = primitive(_K.tk_short)
long = primitive(_K.tk_long)
ushort = primitive(_K.tk_ushort)
ulong = primitive(_K.tk_ulong)
longlong = primitive(_K.tk_longlong)
ulonglong = primitive(_K.tk_ulonglong)
double = primitive(_K.tk_double)
longdouble = primitive(_K.tk_longdouble)
boolean = primitive(_K.tk_boolean)
char = primitive(_K.tk_char)
wchar = primitive(_K.tk_wchar)
octet = primitive(_K.tk_octet)
any = primitive(_K.tk_any)
TypeCode_ = primitive(_K.tk_TypeCode)
Principal = primitive(_K.tk_Principal)
string = string_tc(0)
wstring = wstring_tc(0)
Object = objref_tc("IDL:omg.org/CORBA/Object:1.0", "Object")
ValueBase = value_tc("IDL:omg.org/CORBA/ValueBase:1.0", "ValueBase", VM_NONE)
AbstractBase = objref_tc("IDL:omg.org/CORBA/AbstractBase:1.0", "AbstractBase",
                         _K.tk_abstract_interface)
globals()["float"] = primitive(_K.tk_float)   # `float` without shadowing it above
globals()["TypeCode"] = TypeCode_             # tc.TypeCode is the TypeCode *type code*

bounded_string = string_tc
bounded_wstring = wstring_tc
sequence = sequence_tc
array = array_tc
fixed = fixed_tc
alias = alias_tc
struct = struct_tc
exception = exception_tc
enum = enum_tc
union = union_tc
objref = objref_tc
native = native_tc
value = value_tc
value_box = value_box_tc
recursive = recursive_tc


def abstract_interface(repo_id: str, name: str):
    return objref_tc(repo_id, name, _K.tk_abstract_interface)


def local_interface(repo_id: str, name: str):
    return objref_tc(repo_id, name, _K.tk_local_interface)


def event(repo_id, name, modifier=VM_NONE, concrete_base=None, members=()):
    return value_tc(repo_id, name, modifier, concrete_base, members, kind=_K.tk_event)


def component(repo_id: str, name: str):
    return objref_tc(repo_id, name, _K.tk_component)


def home(repo_id: str, name: str):
    return objref_tc(repo_id, name, _K.tk_home)
