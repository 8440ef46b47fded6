"""The object references inside a value, found by its TypeCode.

A replay that sends a recorded reference to its new target, and a proxy that
keeps its client behind it, both change the references a message carries
wherever they sit: an argument or a result of an object type, a member of a
struct, a branch of a union, an element of a sequence, the value of an ``any``
(found by the TypeCode the any carries) or a valuetype's state.
:func:`map_references` walks a decoded value by its type and hands each
reference to a function that may give another in its place.
"""

from __future__ import annotations

from typing import Callable

from .ior import IOR
from .typecode import TCKind, TypeCode, resolve, value_members
from .values import Any, field_names

K = TCKind

# Kinds a reference may sit in, at any depth: a walk skips every other kind whole.
_REFERENCE_KINDS = frozenset((K.tk_objref, K.tk_abstract_interface, K.tk_any, K.tk_value,
                              K.tk_value_box, K.tk_event, K.tk_local_interface,
                              K.tk_component, K.tk_home))
_OBJECT_KINDS = frozenset((K.tk_objref, K.tk_local_interface, K.tk_component, K.tk_home))

# fn(reference, path) -> the reference to put in its place (the same one to keep it)
ReferenceMap = Callable[[IOR, str], IOR]


def may_hold_reference(tc: TypeCode, _seen: set | None = None) -> bool:
    """Whether a value of ``tc`` may hold an object reference anywhere inside it."""
    seen = set() if _seen is None else _seen
    tc = resolve(tc)
    kind = tc.kind()
    if kind in _REFERENCE_KINDS:
        return True
    if id(tc) in seen:
        return False
    seen.add(id(tc))
    if kind in (K.tk_struct, K.tk_except, K.tk_union):
        return any(may_hold_reference(tc.member_type(i), seen) for i in range(tc.member_count()))
    if kind in (K.tk_sequence, K.tk_array, K.tk_alias):
        return may_hold_reference(tc.content_type(), seen)
    return False


def map_references(tc: TypeCode, value, fn: ReferenceMap, path: str = "value"):
    """``value`` (of type ``tc``) with each object reference ``r`` inside it replaced by
    ``fn(r, path_of_r)``.  Containers are changed in place where they are mutable
    (structs, exceptions, unions, lists, anys, valuetypes) and the value is returned, so
    the caller also takes a replaced top-level reference.  Nil references (``None``) are
    not handed to ``fn``; a valuetype shared or cyclic in the value is walked once."""
    return _Walk(fn).value(tc, value, path)


class _Walk:
    def __init__(self, fn: ReferenceMap):
        self.fn = fn
        self.seen_values: set = set()       # id() of valuetypes walked (sharing, cycles)
        self.reference_types: dict = {}     # id(tc) -> may_hold_reference(tc)

    def _may_hold(self, tc) -> bool:
        known = self.reference_types.get(id(tc))
        if known is None:
            known = self.reference_types[id(tc)] = may_hold_reference(tc)
        return known

    def value(self, tc, value, path: str):
        if value is None or not self._may_hold(tc):
            return value
        tc = resolve(tc)
        kind = tc.kind()
        while kind == K.tk_alias:
            tc = resolve(tc.content_type())
            kind = tc.kind()
        if kind in _OBJECT_KINDS:
            return self.fn(value, path) if isinstance(value, IOR) and not value.is_nil \
                else value
        if kind == K.tk_abstract_interface:
            # An abstract interface holds a reference or a valuetype (CORBA 3.x Part 2, 9.3.6).
            if isinstance(value, IOR):
                return self.fn(value, path) if not value.is_nil else value
            return self._valuetype(value, path)
        if kind in (K.tk_struct, K.tk_except):
            self._members(tc, value, path, [(tc.member_name(i), tc.member_type(i))
                                            for i in range(tc.member_count())])
            return value
        if kind == K.tk_union:
            branch = _union_branch(tc, value._d)
            if branch is not None:
                value._v = self.value(tc.member_type(branch), value._v,
                                      f"{path}.{tc.member_name(branch)}")
            return value
        if kind in (K.tk_sequence, K.tk_array):
            if isinstance(value, (bytes, bytearray, str)):
                return value
            content = tc.content_type()
            items = value if isinstance(value, list) else list(value)
            for i, item in enumerate(items):
                items[i] = self.value(content, item, f"{path}[{i}]")
            return items
        if kind == K.tk_any:
            if isinstance(value, Any):
                value.value = self.value(value.tc, value.value, path)
            return value
        if kind in (K.tk_value, K.tk_event):
            return self._valuetype(value, path)
        if kind == K.tk_value_box:
            return self.value(tc.content_type(), value, path)
        return value

    def _valuetype(self, value, path: str):
        tc = getattr(value, "_tc", None)
        if tc is None or id(value) in self.seen_values:
            return value
        self.seen_values.add(id(value))
        self._members(tc, value, path, value_members(tc))
        return value

    def _members(self, tc, value, path: str, members) -> None:
        fields = getattr(type(value), "_fields", None) or \
            field_names([name for name, _ in members])
        for (name, member_tc), field in zip(members, fields):
            old = getattr(value, field, None)
            new = self.value(member_tc, old, f"{path}.{name}")
            if new is not old:
                setattr(value, field, new)


def _union_branch(tc, discriminator):
    """The index of the member ``discriminator`` selects, the default's, or None."""
    default = tc.default_index()
    for i in range(tc.member_count()):
        if i != default and tc.member_label(i) == discriminator:
            return i
    return default if default >= 0 else None
