"""Plan nodes of structs, exceptions and unions, and the guard on recursive
references to them."""

from __future__ import annotations

import struct
from operator import attrgetter

from ... import codesets
from ...errors import CDRError, EncodeError, InvalidValueError, RecursionLimitError
from ..scalars import EnumNode, Node
from ..typecode import DEFAULT, TCKind, TypeCode
from .. import values as V
from .common import MAX_DEPTH, _FallBack
from .flat import FlatCodec

K = TCKind

# --------------------------------------------------------------------------
# Constructed types
# --------------------------------------------------------------------------
class StructNode(Node):
    op = "struct"

    def __init__(self, tc: TypeCode):
        self.tc = tc
        self.cls = None
        self.members = ()          # (python name, idl name, node)
        self.flat = None
        self.getter = None
        self.names = ()
        self.is_exception = tc._kind == K.tk_except

    def finish(self, members):
        self.members = tuple(members)
        self.names = tuple(m[0] for m in self.members)
        self.min_wire = max(sum(m[2].fixed_size or m[2].min_wire for m in self.members), 1) + \
            (5 if self.is_exception else 0)
        self.cls = V.class_for(self.tc)
        if self.names:
            self.getter = attrgetter(*self.names) if len(self.names) > 1 else \
                (lambda o, _g=attrgetter(self.names[0]): (_g(o),))
        if not self.is_exception:
            try:
                self.flat = FlatCodec(self.tc)
            except ValueError:
                self.flat = None
            if self.flat is not None:
                self.fixed_size = sum(s[1] for s in self.flat.slots)  # unpadded size

    def read(self, r):
        flat = self.flat
        if flat is not None and not r.lenient and (not flat.needs_latin1 or
                                                   r.tcs_c == codesets.ISO_8859_1):
            pos = r.pos
            st = flat.struct_at(r.little, (pos - r.origin) & 7)
            if pos + st.size <= r.end:
                try:
                    value = flat.convert(st.unpack_from(r.buf, pos))
                except _FallBack:
                    pass
                else:
                    r.pos = pos + st.size
                    return value
        return self.read_members(r)

    def read_members(self, r):
        cls = self.cls
        obj = cls.__new__(cls)
        if self.is_exception:
            # An exception is its repository id, then its members (CORBA 3.x
            # Part 2, 9.3.2.7), as in a USER_EXCEPTION reply body.
            Exception.__init__(obj)
            start = r.pos
            rid = r.read_string()
            if rid != self.tc._id and self.tc._id:
                r.violation(InvalidValueError, "exception-id",
                            f"exception id {rid!r} where {self.tc._id!r} was expected", start)
        for pyname, idlname, node in self.members:
            try:
                setattr(obj, pyname, node.read(r))
            except CDRError as e:
                e.add_path("." + idlname)
                raise
        return obj

    def write(self, w, v):
        flat = self.flat
        if flat is not None and not w.fragmenting and (not flat.needs_latin1 or
                                                       w.tcs_c == codesets.ISO_8859_1):
            try:
                args = flat.flatten(v)
            except (_FallBack, AttributeError, TypeError, IndexError):
                pass
            else:
                st = flat.struct_at(w.little, (len(w.buf) - w.origin) & 7)
                try:
                    w.buf += st.pack(*args)
                    return
                except struct.error:
                    pass
        self.write_members(w, v)

    def write_members(self, w, v):
        if self.is_exception:
            w.write_string(self.tc._id)
        if isinstance(v, dict):
            get = v.__getitem__
            missing = [m[1] for m in self.members if m[0] not in v and m[1] not in v]
            if missing:
                raise EncodeError(f"{self.tc._name}: missing members {missing}")
            # Keys are IDL names or attribute names (py_name), which differ for keywords
            # and folded names -- and one member's attribute may be another's IDL name
            # (x\u00b2 folds to x2): a dict with every IDL name is read by IDL name, one
            # with every attribute by attribute, a mix member by member, IDL name first.
            by_attr = not all(m[1] in v for m in self.members) and \
                all(m[0] in v for m in self.members)
            for pyname, idlname, node in self.members:
                try:
                    node.write(w, get(pyname) if by_attr or idlname not in v else get(idlname))
                except CDRError as e:
                    e.add_path("." + idlname)
                    raise
            return
        for pyname, idlname, node in self.members:
            try:
                value = getattr(v, pyname)
            except AttributeError:
                raise EncodeError(f"{self.tc._name or 'struct'} value {type(v).__name__} has "
                                  f"no member {idlname!r}") from None
            try:
                node.write(w, value)
            except CDRError as e:
                e.add_path("." + idlname)
                raise


class UnionNode(Node):
    op = "union"

    def __init__(self, tc: TypeCode):
        self.tc = tc

    def finish(self, disc_node, branches):
        """branches: list of (label, idl name, node) in TypeCode order."""
        self.disc = disc_node
        self.cls = V.class_for(self.tc)
        self.by_label = {}
        self.default = None
        for label, name, node in branches:
            if label is DEFAULT:
                self.default = (name, node)
            else:
                self.by_label[label] = (name, node)
        self.disc_is_enum = isinstance(disc_node, EnumNode)

    def read(self, r):
        start = r.pos
        try:
            d = self.disc.read(r)
        except CDRError as e:
            e.add_path("._d")
            raise
        branch = self.by_label.get(d, self.default)
        if self.disc_is_enum and not isinstance(d, V.EnumItem):
            branch = None  # lenient: an out-of-range discriminator selects nothing
            r.violation(InvalidValueError, "union-discriminator",
                        f"union {self.tc._name} discriminator {d} is not an enumerator", start)
        obj = self.cls.__new__(self.cls)
        obj._d = d
        if branch is None:
            obj._v = None
            return obj
        name, node = branch
        try:
            obj._v = node.read(r)
        except CDRError as e:
            e.add_path("." + name)
            raise
        return obj

    def write(self, w, v):
        if isinstance(v, V.Union):
            d, value = v._d, v._v
        elif isinstance(v, tuple) and len(v) == 2:
            d, value = v
        else:
            raise EncodeError(f"union {self.tc._name}: expected a union instance or a "
                              f"(discriminator, value) pair, not {type(v).__name__}")
        if self.disc_is_enum:
            d = self.disc.items[self.disc.ordinal(d)]
        try:
            self.disc.write(w, d)
        except CDRError as e:
            e.add_path("._d")
            raise
        try:
            branch = self.by_label.get(d, self.default)
        except TypeError:
            raise EncodeError(f"union {self.tc._name}: bad discriminator {d!r}") from None
        if branch is None:
            if value is not None:
                raise EncodeError(f"union {self.tc._name}: discriminator {d!r} selects no "
                                  "member, so the value must be None")
            return
        name, node = branch
        try:
            node.write(w, value)
        except CDRError as e:
            e.add_path("." + name)
            raise


class RecursionGuard(Node):
    """Wraps the node a recursive reference points at, bounding nesting depth."""
    op = "recursive"

    def __init__(self, target: Node):
        self.target = target

    def read(self, r):
        if r.depth > MAX_DEPTH:
            raise RecursionLimitError("recursive value nested too deeply", r.pos)
        r.depth += 1
        try:
            return self.target.read(r)
        finally:
            r.depth -= 1

    def write(self, w, v):
        self.target.write(w, v)
