"""What the Java peers (JacORB, the OpenJDK and GlassFish ORBs) know of an IDL interface, and how
values cross to them: pycdr computes everything, the ORB only reads it. One fact, one place: the
IDL goes through pycdr's IDL front end; its TypeCodes are written with pycdr.codec.tcmarshal as CDR
encapsulations; the Java programs (jacorb/src/pycdrpeers/InterfaceDescription.java) read them with
the ORB's own CDR streams (JacORB) or the standard IOP Codec (the others).

The description file (UTF-8 text, one record a line, fields separated by one space; TypeCodes as
the hex of their little-endian CDR encapsulation, see TYPECODE_LITTLE_ENDIAN):

    interface <repository id>
    is_a <repository id>                      every id _is_a answers true for (bases included)
    operation <name> <call> <result TypeCode>  call: twoway, oneway, get or set (attribute accessors)
    param <name> <in|out|inout> <TypeCode>    the parameters of the operation above, in order
    raises <TypeCode>                          the user exceptions of the operation above

Values cross the process boundary as CDR too: the in/inout arguments of a call, and the result
followed by the out/inout values of a reply, each as one big-endian GIOP 1.2 CDR encapsulation
(ISO-8859-1 char data, UTF-16 wchar data), written and read with pycdr.orb.invocation here and
with org.omg.CORBA.Any.read_value/write_value on the ORB's CDR streams there.
"""

from pycdr.codec.cdr import CDRReader, CDRWriter
from pycdr.codec.marshal import read_value
from pycdr.orb.invocation import read_results, write_arguments
from pycdr.codec.tcmarshal import encode_typecode_encapsulation

# The CDR of the values exchanged with the JacORB programs (they set the same on their streams).
VALUE_VERSION = (1, 2)


# JacORB 3.9 reads the label of a union's default member as one octet (the "zero octet" of the
# TypeCode API's member_label) and refuses the TypeCode unless that octet is 0; the rest of the
# label then passes for alignment padding. pycdr (as omniORB) writes a label of the discriminator
# type, the lowest value no other label uses: -2**31 for EchoAll::Choice, big-endian 80 00 00 00,
# which JacORB refuses ("Label type does not match discriminator type"), little-endian
# 00 00 00 80, which it takes. So the descriptions are little-endian. (Default labels whose low
# byte is not 0, e.g. 0xFFFFFFFF of an unsigned discriminator, or longer than 4 bytes, fail
# either way.)
TYPECODE_LITTLE_ENDIAN = True


def _typecode_hex(type_code):
    return encode_typecode_encapsulation(type_code, little=TYPECODE_LITTLE_ENDIAN).hex()


def _call_kind(operation):
    if operation.attribute is not None:
        return "set" if operation.name.startswith("_set_") else "get"
    return "oneway" if operation.oneway else "twoway"


def describe_interface(interface):
    """The description text (see the module docstring) of a pycdr.idl Interface."""
    module = interface._module
    repository_ids = [interface.repo_id]
    pending = list(interface.bases)
    while pending:
        base = module.interfaces[pending.pop(0)]
        if base.repo_id not in repository_ids:
            repository_ids.append(base.repo_id)
            pending.extend(base.bases)
    lines = [f"interface {interface.repo_id}"]
    lines += [f"is_a {repository_id}" for repository_id in repository_ids]
    for name, operation in sorted(interface.all_operations().items()):
        lines.append(f"operation {name} {_call_kind(operation)} {_typecode_hex(operation.result)}")
        lines += [f"param {p.name} {p.mode} {_typecode_hex(p.type)}" for p in operation.params]
        lines += [f"raises {_typecode_hex(exception)}" for exception in operation.raises]
    return "\n".join(lines) + "\n"


def write_description(interface, path):
    with open(path, "w", encoding="utf-8") as f:
        f.write(describe_interface(interface))


def encode_arguments(operation, args):
    """The in/inout values of a call to `operation`, as the hex of a CDR encapsulation."""
    writer = CDRWriter(little=False, version=VALUE_VERSION)
    writer.buf.append(0)                     # the encapsulation's byte-order octet: big-endian
    write_arguments(writer, operation, args)
    return writer.getvalue().hex()


def _reader(encapsulation_hex):
    reader = CDRReader(bytes.fromhex(encapsulation_hex), version=VALUE_VERSION)
    reader.read_encapsulation_byte_order()
    return reader


def _read_to_end(reader, read):
    values = read(reader)
    if reader.pos != reader.end:
        raise ValueError(f"{reader.end - reader.pos} bytes left after the values")
    return values


def decode_results(operation, encapsulation_hex):
    """The list of values (result first unless void, then out/inout values) in an encapsulation."""
    return _read_to_end(_reader(encapsulation_hex), lambda r: read_results(r, operation))


def decode_exception(exception_type, encapsulation_hex):
    """A user exception of TypeCode `exception_type` from an encapsulation of JacORB's Any value
    of it (the repository id, then the members: CORBA 3.x Part 2, 9.3.2.7; pycdr's decoder
    checks the id)."""
    return _read_to_end(_reader(encapsulation_hex), lambda r: read_value(r, exception_type))
