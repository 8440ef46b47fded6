"""Lua tables for the Wireshark dissector (dissector/pycdr_giop.lua).

* :func:`type_table` -- ``pycdr idl lua FILE.idl -o types.lua``: the
  operations of an IDL file's interfaces and the TypeCodes of their
  parameters, results and exceptions, as a Lua table the dissector decodes
  arguments with.
* :func:`names_table` -- ``dissector/pycdr_names.lua``: pycdr's name tables
  (service contexts, code sets, VMCIDs, IOR profiles and components), so the
  dissector names things as pycdr does without a second copy of the facts,
  and the type table of the operations every object has (``_is_a``, ...).

Type table layout::

    return {
      types = { [1] = {kind="struct", name="Point", id="IDL:...", members={{"x", 2}, ...}},
                [2] = {kind="long"}, ... },          -- TypeCodes, referenced by index
      operations = { add = {params={{name="a", mode="in", type=2}, ...}, result=2}, ... },
      exceptions = { ["IDL:Demo/Failure:1.0"] = 5 },
    }

A recursive TypeCode is simply an index that refers back.  Kinds are TCKind
names without "tk_" (the same names the dissector gives TypeCodes it reads
from the wire, in anys); every kind pycdr's value decoder reads is described.
"""

from __future__ import annotations

from . import codesets
from .addressing import components, iiop
from .giop import service_contexts, sysexc
from .idl.model import OBJECT_OPERATIONS
from .codec.typecode import NAMED_KINDS, PRIMITIVE_KINDS, TCKind, TypeCode, resolve


def kind_name(kind) -> str:
    return TCKind(kind).name[3:]


def lua_string(s: str) -> str:
    """A Lua string literal (bytes escaped as decimal, so any text is safe)."""
    out = []
    for b in s.encode("utf-8"):
        ch = chr(b)
        if ch in "\\\"" or b < 32 or b > 126:
            out.append(f"\\{b:03d}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _min_size(tc: TypeCode) -> int:
    """The fewest octets an element of this type takes (for sequence counts)."""
    sizes = {TCKind.tk_short: 2, TCKind.tk_ushort: 2, TCKind.tk_long: 4, TCKind.tk_ulong: 4,
             TCKind.tk_float: 4, TCKind.tk_double: 8, TCKind.tk_longlong: 8,
             TCKind.tk_ulonglong: 8, TCKind.tk_enum: 4, TCKind.tk_string: 4,
             TCKind.tk_objref: 8}
    while tc.kind() == TCKind.tk_alias:
        tc = tc.content_type()
    return sizes.get(tc.kind(), 1)


class _TypeTable:
    def __init__(self):
        self.index: dict[int, int] = {}    # id(TypeCode) -> table index
        self.entries: list[str] = []

    def ref(self, tc: TypeCode) -> int:
        tc = resolve(tc)
        key = id(tc)
        if key in self.index:
            return self.index[key]
        i = len(self.entries) + 1
        self.index[key] = i
        self.entries.append("")            # reserve the slot: recursion refers back to it
        self.entries[i - 1] = self._describe(tc)
        return i

    def _describe(self, tc: TypeCode) -> str:
        kind = tc.kind()
        parts = [f"kind={lua_string(kind_name(kind))}"]
        if kind in NAMED_KINDS:
            parts.append(f"name={lua_string(tc.name())}, id={lua_string(tc.id())}")
        if kind in (TCKind.tk_struct, TCKind.tk_except):
            members = ", ".join(f"{{{lua_string(tc.member_name(i))}, {self.ref(tc.member_type(i))}}}"
                                for i in range(tc.member_count()))
            parts.append(f"members={{{members}}}")
        elif kind == TCKind.tk_enum:
            members = ", ".join(lua_string(tc.member_name(i)) for i in range(tc.member_count()))
            parts.append(f"members={{{members}}}")
        elif kind == TCKind.tk_union:
            parts.append(f"disc={self.ref(tc.discriminator_type())}, default={tc.default_index()}")
            members = []
            for i in range(tc.member_count()):
                if tc.default_index() == i:
                    label = "nil"
                else:
                    label = tc.member_label(i)
                    label = ord(label) if isinstance(label, str) else int(label)
                members.append(f"{{{lua_string(tc.member_name(i))}, {self.ref(tc.member_type(i))}, "
                               f"{label}}}")
            parts.append(f"members={{{', '.join(members)}}}")
        elif kind in (TCKind.tk_sequence, TCKind.tk_array):
            parts.append(f"type={self.ref(tc.content_type())}, min_size={_min_size(tc.content_type())}")
            parts.append(f"{'bound' if kind == TCKind.tk_sequence else 'length'}={tc.length()}")
        elif kind in (TCKind.tk_alias, TCKind.tk_value_box):
            parts.append(f"type={self.ref(tc.content_type())}")
        elif kind in (TCKind.tk_string, TCKind.tk_wstring):
            parts.append(f"bound={tc.length()}")
        elif kind == TCKind.tk_fixed:
            parts.append(f"digits={tc.fixed_digits()}, scale={tc.fixed_scale()}")
        elif kind in (TCKind.tk_value, TCKind.tk_event):
            base = tc.concrete_base_type()
            parts.append(f"modifier={tc.type_modifier()}")
            if base is not None and resolve(base).kind() != TCKind.tk_null:
                parts.append(f"base={self.ref(base)}")
            members = ", ".join(f"{{{lua_string(tc.member_name(i))}, {self.ref(tc.member_type(i))}}}"
                                for i in range(tc.member_count()))
            parts.append(f"members={{{members}}}")
        return "{" + ", ".join(parts) + "}"


def type_table(modules) -> str:
    """The Lua type table of the interfaces of IDL modules (``pycdr.idl.load``)."""
    ops = (item for m in modules for iface in m.interfaces.values()
           for item in sorted(iface.all_operations().items()))
    lines = ["-- Generated by `pycdr idl lua` from pycdr's IDL front end; do not edit.", "return {"]
    lines += _operations_table(ops, "  ")
    lines += ["}", ""]
    return "\n".join(lines)


def _operations_table(operations, indent: str) -> list:
    """The lines of a type table's ``types``, ``operations`` and ``exceptions``
    (``operations``: (GIOP name, Operation) pairs, the first of a name kept)."""
    table = _TypeTable()
    ops: dict = {}
    exceptions: dict = {}
    for name, op in operations:
        if name in ops:
            continue
        params = ", ".join(
            f"{{name={lua_string(p.name)}, mode={lua_string(p.mode)}, type={table.ref(p.type)}}}"
            for p in op.params)
        result = "" if op.result.kind() == TCKind.tk_void else f", result={table.ref(op.result)}"
        ops[name] = f"[{lua_string(name)}] = {{params={{{params}}}{result}, " \
                    f"oneway={'true' if op.oneway else 'false'}}}"
        for exc in op.raises:
            exceptions.setdefault(exc.id(), table.ref(exc))
    lines = [f"{indent}types = {{"]
    lines += [f"{indent}  [{i}] = {entry}," for i, entry in enumerate(table.entries, 1)]
    lines += [f"{indent}}},", f"{indent}operations = {{"]
    lines += [f"{indent}  {text}," for _, text in sorted(ops.items())]
    lines += [f"{indent}}},", f"{indent}exceptions = {{"]
    lines += [f"{indent}  [{lua_string(k)}] = {v}," for k, v in sorted(exceptions.items())]
    lines += [f"{indent}}},"]
    return lines


def names_table() -> str:
    """dissector/pycdr_names.lua: pycdr's name tables as Lua."""

    def table(name, mapping):
        items = ", ".join(f"[{k}] = {lua_string(v)}" for k, v in sorted(mapping.items()))
        return f"  {name} = {{{items}}},"
    return "\n".join([
        "-- Generated by pycdr.lua_types.names_table() from pycdr's tables; do not edit.",
        "return {",
        table("context", service_contexts.CONTEXT_NAMES),
        table("codeset", codesets.NAMES),
        table("vmcid", sysexc.VENDOR_VMCIDS),
        table("profile", iiop.PROFILE_NAMES),
        table("component", components.COMPONENT_NAMES),
        table("orb_vendor", components.ORB_VENDORS),
        table("tckind", {int(k): kind_name(k) for k in TCKind}),
        "  tc_primitive = {" + ", ".join(f"[{int(k)}] = true" for k in sorted(PRIMITIVE_KINDS))
        + "},",
        # The operations every object has (_is_a, _non_existent, ...): a type
        # table the dissector decodes their bodies with, IDL or not.
        "  object_operations = {",
        *_operations_table(sorted(OBJECT_OPERATIONS.items()), "    "),
        "  },",
        "}", ""])
