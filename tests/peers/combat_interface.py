"""What the Combat peer (Tcl) knows of an IDL interface, written by pycdr: Combat's IDL compiler
(idl2tcl) needs MICO, TAO or ORBacus, none of which is here, so pycdr writes what idl2tcl would:
the interface in Combat's interface-repository form (`combat::ir add {...}`), from pycdr's IDL
front end, and an echo servant class for it ([incr Tcl], one method an operation).

The IR form (Combat's str.tcl, SimpleTypeRepository::addItem): one item a definition,
{kind {repository-id name version} ...}; a type is a primitive's IDL name, {string N},
{sequence T N}, {array T N}, {fixed D S}, or the repository id of a named type defined in an
earlier item (a struct may name itself: Combat registers it before reading its members).
"""

from pycdr.codec.typecode import DEFAULT, TCKind

_PRIMITIVES = {
    TCKind.tk_void: "void", TCKind.tk_short: "short", TCKind.tk_long: "long",
    TCKind.tk_ushort: "{unsigned short}", TCKind.tk_ulong: "{unsigned long}",
    TCKind.tk_float: "float", TCKind.tk_double: "double", TCKind.tk_boolean: "boolean",
    TCKind.tk_char: "char", TCKind.tk_octet: "octet", TCKind.tk_any: "any",
    TCKind.tk_TypeCode: "TypeCode", TCKind.tk_longlong: "{long long}",
    TCKind.tk_ulonglong: "{unsigned long long}", TCKind.tk_longdouble: "{long double}",
    TCKind.tk_wchar: "wchar",
}
_NAMED = {TCKind.tk_struct, TCKind.tk_union, TCKind.tk_enum, TCKind.tk_alias, TCKind.tk_except,
          TCKind.tk_objref}


def _tcl_list(*items):
    return "{" + " ".join(str(item) for item in items) + "}"


def _header(repository_id, name):
    return _tcl_list(repository_id, name, "1.0")


class _Writer:
    def __init__(self):
        self.items = []
        self.defined = set()

    def type_name(self, type_code):
        """The IR form of a type, defining the named types it uses first."""
        kind = type_code.kind()
        if kind in _PRIMITIVES:
            return _PRIMITIVES[kind]
        if kind in (TCKind.tk_string, TCKind.tk_wstring):
            word = "string" if kind == TCKind.tk_string else "wstring"
            return word if type_code.length() == 0 else _tcl_list(word, type_code.length())
        if kind == TCKind.tk_fixed:
            return _tcl_list("fixed", type_code.fixed_digits(), type_code.fixed_scale())
        if kind == TCKind.tk_sequence:
            element = self.type_name(type_code.content_type())
            if type_code.length() == 0:
                return _tcl_list("sequence", element)
            return _tcl_list("sequence", element, type_code.length())
        if kind == TCKind.tk_array:
            return _tcl_list("array", self.type_name(type_code.content_type()), type_code.length())
        if kind in _NAMED:
            if type_code.id() not in self.defined:
                self.defined.add(type_code.id())
                self.define(type_code)
            return type_code.id()
        raise ValueError(f"Combat's IR form has no {kind.name}")

    def _members(self, type_code):
        return _tcl_list(*(_tcl_list(type_code.member_name(i),
                                     self.type_name(type_code.member_type(i)))
                           for i in range(type_code.member_count())))

    def define(self, type_code):
        kind = type_code.kind()
        header = _header(type_code.id(), type_code.name())
        if kind == TCKind.tk_objref:
            # An interface used as a type before its own item: named now, described later.
            self.items.append(_tcl_list("interface", header))
        elif kind in (TCKind.tk_struct, TCKind.tk_except):
            word = "struct" if kind == TCKind.tk_struct else "exception"
            self.items.append(_tcl_list(word, header, self._members(type_code), "{}"))
        elif kind == TCKind.tk_union:
            discriminator = type_code.discriminator_type()
            members = []
            for i in range(type_code.member_count()):
                label = type_code.member_label(i)
                if label is DEFAULT:
                    label = "(default)"
                elif discriminator.kind() == TCKind.tk_enum:
                    label = discriminator.member_name(int(label))
                elif isinstance(label, bool):
                    label = int(label)
                members.append(_tcl_list(label, type_code.member_name(i),
                                         self.type_name(type_code.member_type(i))))
            self.items.append(_tcl_list("union", header, self.type_name(discriminator),
                                        _tcl_list(*members), "{}"))
        elif kind == TCKind.tk_enum:
            names = [type_code.member_name(i) for i in range(type_code.member_count())]
            self.items.append(_tcl_list("enum", header, _tcl_list(*names)))
        else:   # alias
            original = self.type_name(type_code.content_type())
            self.items.append(_tcl_list("typedef", header, original))


def _scoped_id(interface, name):
    """A repository id for a member of the interface (Combat files them by id)."""
    return interface.repo_id.rsplit(":", 1)[0] + "/" + name + ":1.0"


def combat_ir(interface):
    """Tcl that loads `interface` (a pycdr.idl Interface; bases are not supported) into Combat's
    interface repository."""
    if interface.bases:
        raise ValueError("the Combat description does not follow base interfaces")
    writer = _Writer()
    writer.defined.add(interface.repo_id)
    contents = []
    for attribute in interface.attributes:
        contents.append(_tcl_list("attribute", _header(_scoped_id(interface, attribute.name),
                                                       attribute.name),
                                  writer.type_name(attribute.type),
                                  *(["readonly"] if attribute.readonly else [])))
    for operation in interface.operations:
        if operation.attribute is not None:
            continue
        params = _tcl_list(*(_tcl_list(p.mode, p.name, writer.type_name(p.type))
                             for p in operation.params))
        raises = _tcl_list(*(writer.type_name(e) for e in operation.raises))
        contents.append(_tcl_list("operation", _header(_scoped_id(interface, operation.name),
                                                       operation.name),
                                  writer.type_name(operation.result), params, raises,
                                  *(["oneway"] if operation.oneway else [])))
    item = _tcl_list("interface", _header(interface.repo_id, interface.name), "{}",
                     _tcl_list(*contents))
    return "combat::ir add " + _tcl_list(*writer.items, item) + "\n"


def _method(operation):
    """An [incr Tcl] method echoing the in/inout values, by position, as the result (unless void)
    and the out/inout values: inout values stay as they came (Combat passes them as variable
    names), the result is the first value sent. An operation whose reply types differ from its
    argument types raises NO_IMPLEMENT, as the Java echo server does."""
    names = [f"p{i}" for i in range(len(operation.params))]
    sent = [p.type for p in operation.in_params]
    if operation.result_types and list(operation.result_types) != sent:
        body = ("error [list IDL:omg.org/CORBA/NO_IMPLEMENT:1.0"
                " {minor 0 completion_status COMPLETED_NO}]")
    elif operation.oneway or operation.result.kind() == TCKind.tk_void:
        body = ""
    elif operation.params[0].mode == "inout":
        body = "upvar 1 $p0 value; return $value"
    else:
        body = "return $p0"
    return f"    public method {operation.name} {_tcl_list(*names)} {{{body}}}\n"


def combat_echo_servant(interface, class_name="EchoServant"):
    """Tcl defining an [incr Tcl] echo servant class for `interface` (after combat_ir)."""
    lines = [f"itcl::class {class_name} {{\n",
             "    inherit PortableServer::ServantBase\n",
             f"    public method _Interface {{}} {{return {interface.repo_id}}}\n"]
    for attribute in interface.attributes:
        lines.append(f"    public variable {attribute.name} 0\n")
    for operation in interface.operations:
        if operation.attribute is None:
            lines.append(_method(operation))
    lines.append("}\n")
    return "".join(lines)
