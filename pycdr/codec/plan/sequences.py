"""Plan nodes of sequences and arrays: the general element loop, and the
specialised nodes of octets, chars, numbers and booleans (one bulk copy or
unpack instead of a loop).  A sequence of fixed-size structs takes one of the
generated paths of :mod:`pycdr.codec.plan.columns` (the thresholds are here)."""

from __future__ import annotations

import array
import gc
import struct
from itertools import starmap

from ... import codesets
from ..cdr import BE, LE
from ...errors import (BoundExceededError, CDRError, EncodeError, InvalidValueError,
                       RecursionLimitError)
from ..scalars import Node, NumberNode, StringNode
from ..typecode import TypeCode
# The thresholds and _scatter are read through the module: tests set them there.
from . import columns as _columns
from .columns import (_column_functions, _column_getter, _copy_plan, _element_packer,
                      _elements_builder)
from .common import _ATOMIC_OPS, _NATIVE_LITTLE, GC_PAUSE_MIN, MAX_DEPTH, _FallBack
from .constructed import StructNode

class SequenceNode(Node):
    """sequence<T> (``bound`` 0 = unbounded) or T[length] (``is_array``)."""
    op = "sequence"

    def __init__(self, tc: TypeCode, is_array: bool):
        self.tc = tc
        self.is_array = is_array
        self.bound = tc._length
        self.align = 4
        self.min_wire = 4

    def _check_count(self, n: int, element: str | None = None, unit: str = "elements"):
        """Raises EncodeError when n values do not fit: an array takes exactly its
        length, a bounded sequence at most its bound.  ``element`` names the element
        type in the message (sequence<octet>, char[4]); None says array/sequence."""
        if self.is_array:
            if n != self.bound:
                what = "array" if element is None else f"{element}[{self.bound}]"
                raise EncodeError(f"{what} needs exactly {self.bound} {unit}, not {n}")
        elif self.bound and n > self.bound:
            what = "sequence" if element is None else f"sequence<{element}>"
            raise EncodeError(f"{what} of {n} exceeds bound {self.bound}")

    def _write_count(self, w, n: int, element: str | None = None, unit: str = "elements"):
        """_check_count, then a sequence's length (an array has none on the wire)."""
        self._check_count(n, element, unit)
        if not self.is_array:
            w.write_ulong(n)

    def finish(self, elem: Node):
        self.elem = elem
        self.strings = type(elem) is StringNode
        # Never below 1: a count of zero-size elements must not allocate 4 billion.
        self.min_size = max(elem.fixed_size or elem.min_wire, 1)
        if isinstance(elem, StructNode) and elem.flat is not None:
            self.flat = elem.flat
        else:
            self.flat = None
        # (packer, member node) per member when every member has a column
        # packer (one flat slot each), else None: see _write_columns.
        # Likewise (reader, member node) per member, and the builder of the
        # values: see _read_columns.
        self.column_packers = self.column_readers = None
        if self.flat is not None and len(elem.members) == len(self.flat.slots):
            functions = [(_column_functions(node), node) for _py, _idl, node in elem.members]
            if all(pair is not None for pair, _node in functions):
                self.column_packers = tuple((pair[0], node) for pair, node in functions)
                self.get_columns = _column_getter(elem.names)
                self.column_layouts = {}     # first element's phase -> see _column_layout
                self.column_readers = tuple((pair[1], node) for pair, node in functions)
                self.build_elements = _elements_builder(elem)
        # See _element_packer; needs one flat slot per member, as the columns do.
        self.pack_elements = None
        if self.flat is not None and len(elem.members) == len(self.flat.slots):
            self.pack_elements = _element_packer(elem)
            self.element_structs = {}    # (little, first element's phase) -> see _write_packed
        if self.is_array:
            self.align = elem.align
            self.min_wire = self.min_size * self.bound
            if elem.fixed_size is not None and not isinstance(elem, StructNode):
                self.fixed_size = elem.fixed_size * self.bound

    def _count(self, r):
        if self.is_array:
            return self.bound
        start = r.pos
        n = r.read_count(self.min_size, "sequence")
        if self.bound and n > self.bound:
            r.violation(BoundExceededError, "bound-exceeded",
                        f"sequence length {n} exceeds bound {self.bound}", start)
        return n

    def read(self, r):
        n = self._count(r)
        if n == 0:
            return []
        if n >= GC_PAUSE_MIN and self.elem.op not in _ATOMIC_OPS and gc.isenabled():
            return self._read_elements_gc_paused(r, n)
        return self._read_elements(r, n)

    def _read_elements_gc_paused(self, r, n):
        """Many new containers, all alive until the sequence is: the cyclic GC
        would run several times meanwhile and promote them to older generations,
        whose full collections scan the whole heap.  Decoding makes no cycles, so
        the GC is paused while the elements are built (as by the C path)."""
        gc.disable()
        try:
            return self._read_elements(r, n)
        finally:
            gc.enable()

    def _read_elements(self, r, n):
        if self.strings and not r.lenient and r.tcs_c == codesets.ISO_8859_1:
            out = self._read_strings(r, n)
            if out is not None:
                return out
        flat = self.flat
        if flat is not None and not r.lenient and (not flat.needs_latin1 or
                                                   r.tcs_c == codesets.ISO_8859_1):
            out = self._read_flat(r, n, flat)
            if out is not None:
                return out
        return self._read_each(r, n)

    def _read_each(self, r, n):
        read = self.elem.read
        out = []
        append = out.append
        if r.depth > MAX_DEPTH:
            raise RecursionLimitError("values nested too deeply", r.pos)
        r.depth += 1
        i = 0
        try:
            for i in range(n):
                append(read(r))
        except CDRError as e:
            e.add_path(f"[{i}]")
            raise
        finally:
            r.depth -= 1
        return out

    def _read_strings(self, r, n):
        """sequence<string> in one loop, without a call per field. Anything odd
        returns None and the general path decodes (and reports) from the start."""
        buf, pos, end, origin = r.buf, r.pos, r.end, r.origin
        unpack = (LE if r.little else BE).ulong.unpack_from
        bound = self.elem.bound
        out = []
        append = out.append
        for _ in range(n):
            pos += (origin - pos) & 3
            if pos + 4 > end:
                return None
            length = unpack(buf, pos)[0]
            pos += 4
            stop = pos + length
            if length == 0 or stop > end or buf[stop - 1] != 0 or (bound and length - 1 > bound):
                return None
            append(str(buf[pos:stop - 1], "latin-1"))
            pos = stop
        r.pos = pos
        return out

    def _read_flat(self, r, n, flat):
        """Decode n fixed-size structs in (at most) two passes: the first element
        at the phase it starts at, the rest with iter_unpack once their phase is
        steady (element size a multiple of the struct's alignment)."""
        pos = r.pos
        buf = r.buf
        st0 = flat.struct_at(r.little, (pos - r.origin) & 7)
        st = flat.struct_at(r.little, (pos + st0.size - r.origin) & 7)
        if n > 1 and st.size % flat.max_align:
            return None     # the layout keeps changing: member-by-member path
        end = pos + st0.size + st.size * (n - 1)
        if end > r.end:
            return None     # the member-by-member path reports where it ends
        convert = flat.convert
        try:
            out = [convert(st0.unpack_from(buf, pos))]
            if n > 1:
                start = pos + st0.size
                rest = None
                if n - 1 >= _columns._COLUMNS_READ_MIN and self.column_readers is not None and \
                        len(self.column_readers) <= _columns._COLUMNS_READ_MAX_MEMBERS:
                    rest = self._read_columns(r, start, n - 1, st.size, flat)
                if rest is None:
                    rest = flat.convert_all(st.iter_unpack(buf[start:end]))
                out += rest
        except _FallBack:
            return None
        r.pos = end
        return out

    def _read_columns(self, r, start, count, stride, flat):
        """The ``count`` elements at ``start``, ``stride`` octets apart, read a
        member (column) at a time; None when a member's offsets differ between
        elements.  Raises _FallBack as the row converter would."""
        offsets, size = flat.offsets_at((start - r.origin) & 7)
        if size != stride:
            return None
        little = r.little
        with memoryview(r.buf) as view:
            columns = [reader(view, start, count, stride, offset, node, little)
                       for (reader, node), offset in zip(self.column_readers, offsets)]
        return self.build_elements(columns)

    def write(self, w, v):
        if not isinstance(v, (list, tuple)):
            raise EncodeError(f"sequence: expected a list, not {type(v).__name__}")
        n = len(v)
        self._write_count(w, n)
        flat = self.flat
        if w.fragmenting:
            flat = None                  # primitive by primitive: the stream may be cut
        if flat is not None and n and (not flat.needs_latin1 or w.tcs_c == codesets.ISO_8859_1):
            if n >= _columns._COLUMNS_MIN and self.column_packers is not None and \
                    len(self.column_packers) <= _columns._COLUMNS_MAX_MEMBERS and \
                    self._write_columns(w, v, flat):
                return
            if self.pack_elements is not None and _columns._PACK_ELEMENTS and \
                    self._write_packed(w, v, flat):
                return
            pos = len(w.buf) - w.origin
            st0 = flat.struct_at(w.little, pos & 7)
            st = flat.struct_at(w.little, (pos + st0.size) & 7)
            if n == 1 or st.size % flat.max_align == 0:
                try:
                    flatten = flat.flatten
                    first = st0.pack(*flatten(v[0]))
                    rest = b"".join(starmap(st.pack, map(flatten, v[1:]))) if n > 1 else b""
                except (_FallBack, AttributeError, TypeError, IndexError, struct.error):
                    pass
                else:
                    w.buf += first
                    w.buf += rest
                    return
        if self.strings and w.tcs_c == codesets.ISO_8859_1 and not w.fragmenting \
                and self._write_strings(w, v):
            return
        write = self.elem.write
        i = 0
        try:
            for i, x in enumerate(v):
                write(w, x)
        except CDRError as e:
            e.add_path(f"[{i}]")
            raise

    def _write_packed(self, w, v, flat) -> bool:
        """Fixed-size structs one Struct call each (see _element_packer); False,
        with nothing written, when the elements after the first do not all start
        at the same phase or a value is one the general path must judge."""
        key = (w.little, (len(w.buf) - w.origin) & 7)
        structs = self.element_structs.get(key)
        if structs is None:
            first = flat.struct_at(*key)
            rest = flat.struct_at(key[0], (key[1] + first.size) & 7)
            steady = rest.size % flat.max_align == 0
            structs = self.element_structs[key] = (first.pack, rest.pack, steady)
        pack, next_pack, steady = structs
        if not steady and len(v) > 1:
            return False
        try:
            packed = self.pack_elements(v, pack, next_pack)
        except Exception:
            # Nothing is written yet: whatever it was (a value to convert,
            # refuse or report), the general path judges it.
            return False
        w.buf += b"".join(packed)
        return True

    def _column_layout(self, flat, first_phase):
        """(stride, copy plan) of the elements after a first one starting at
        ``first_phase``, or None when their layout is not the same for all."""
        key = first_phase
        if key not in self.column_layouts:
            phase = (first_phase + flat.offsets_at(first_phase)[1]) & 7
            offsets, stride = flat.offsets_at(phase)
            if stride % flat.max_align:
                layout = None        # each element starts at another phase
            else:
                layout = stride, _copy_plan(offsets, [slot[1] for slot in flat.slots], stride)
            self.column_layouts[key] = layout
        return self.column_layouts[key]

    def _write_columns(self, w, v, flat) -> bool:
        """Fixed-size structs a column at a time (see _scatter): the first element
        as a struct on its own (its phase may differ), the rest as one block.
        False, with nothing written, when the layout is not the same for every
        element or a value after the first is one the element path must write or
        reject."""
        first_phase = (len(w.buf) - w.origin) & 7
        layout = self._column_layout(flat, first_phase)
        if layout is None:
            return False
        stride, copy_plan = layout
        little = w.little
        rest = v[1:]
        try:
            columns = [packer(col, little, node) for (packer, node), col
                       in zip(self.column_packers, self.get_columns(rest))]
        except (_FallBack, AttributeError, TypeError, IndexError, ValueError,
                OverflowError, struct.error):
            return False
        buf = w.buf
        try:
            buf += flat.struct_at(little, first_phase).pack(*flat.flatten(v[0]))
        except (_FallBack, AttributeError, TypeError, IndexError, struct.error):
            # as the element path's loop writes (or rejects) it
            try:
                self.elem.write(w, v[0])
            except CDRError as e:
                e.add_path("[0]")
                raise
        start = len(buf)
        length = stride * len(rest)
        buf += bytes(length)           # padding stays zero
        _columns._scatter(buf, start, length, columns, copy_plan)
        return True

    def _write_strings(self, w, v) -> bool:
        """sequence<string> of plain ASCII text in one loop; False (nothing
        written) for anything the general path must judge."""
        pack = (LE if w.little else BE).ulong.pack
        bound = self.elem.bound
        parts = []
        pos = len(w.buf) - w.origin
        for x in v:
            if type(x) is not str or not x.isascii() or "\0" in x or (bound and len(x) > bound):
                return False
            pad = (-pos) & 3
            if pad:
                parts.append(_ZERO_PADS[pad])
            raw = x.encode("ascii")
            parts.append(pack(len(raw) + 1))
            parts.append(raw)
            parts.append(b"\0")
            pos += pad + 5 + len(raw)
        w.buf += b"".join(parts)
        return True


_ZERO_PADS = [bytes(n) for n in range(8)]


class OctetSeqNode(SequenceNode):
    """sequence<octet> and octet[N]: bytes, no per-element work."""
    op = "octet_seq"

    def read(self, r):
        n = self._count(r)
        return r.read_raw(n, "octet sequence")

    def write(self, w, v):
        if not isinstance(v, (bytes, bytearray, memoryview)):
            if isinstance(v, (list, tuple)):
                try:
                    v = bytes(v)
                except (ValueError, TypeError):
                    raise EncodeError("octet sequence: elements must be integers 0..255") from None
            else:
                raise EncodeError(f"octet sequence: expected bytes, not {type(v).__name__}")
        n = len(v)
        self._write_count(w, n, "octet", "octets")
        w.write_raw(v)


class CharSeqNode(SequenceNode):
    """sequence<char> and char[N]: str (omniORBpy's mapping)."""
    op = "char_seq"

    def read(self, r):
        n = self._count(r)
        pos = r.pos
        raw = r.read_raw(n, "char sequence")
        if r.tcs_c == codesets.ISO_8859_1:
            return raw.decode("latin-1")
        return r.decode_chars(raw, pos)

    def write(self, w, v):
        if not isinstance(v, str):
            raise EncodeError(f"char sequence: expected str, not {type(v).__name__}")
        raw = w.encode_chars(v)
        if len(raw) != len(v):
            raise EncodeError("char sequence: every char must be one octet in the char code set")
        n = len(raw)
        self._write_count(w, n, "char", "chars")
        w.write_raw(raw)


class NumberSeqNode(SequenceNode):
    """Sequences/arrays of short..double: one bulk copy plus a byte swap."""
    op = "number_seq"

    def finish(self, elem: NumberNode):
        super().finish(elem)
        self.size = elem.size
        self.code = elem.code
        self.acode = elem.acode
        self.what = elem.what
        self.range = elem.range
        self.is_float = elem.is_float

    def read(self, r):
        n = self._count(r)
        if n == 0:
            return []
        size = self.size
        r.align(size)
        pos = r.pos
        end = pos + n * size
        if end > r.end:
            if r.remaining >= n * size:
                # A GIOP 1.1 fragment ends inside the array (SegmentedReader):
                # its elements continue, realigned, in the next fragment.
                out = self._read_each(r, n)
                if r.context is not None and r.context.get("numeric_arrays"):
                    return array.array(self.acode, out)
                return out
            r.truncated(n * size, pos, f"sequence<{self.what}>")
        a = array.array(self.acode)
        a.frombytes(r.buf[pos:end])
        if r.little != _NATIVE_LITTLE:
            a.byteswap()
        r.pos = end
        if r.context is not None and r.context.get("numeric_arrays"):
            return a
        return a.tolist()

    def write(self, w, v):
        n = len(v) if isinstance(v, (list, tuple, array.array)) else -1
        if n < 0:
            raise EncodeError(f"sequence<{self.what}>: expected a list, not {type(v).__name__}")
        if w.fragmenting:
            # Element by element: a fragment may end between any two of them.
            return SequenceNode.write(self, w, v.tolist() if isinstance(v, array.array) else v)
        self._check_count(n)
        if n == 0:
            if not self.is_array:
                w.write_ulong(0)
            return
        if isinstance(v, array.array) and v.typecode == self.acode:
            if w.little != _NATIVE_LITTLE:
                v = array.array(self.acode, v)
                v.byteswap()
            data = v.tobytes()
        else:
            try:
                # One pack for the whole sequence: range checks and byte order in C.
                data = struct.pack(f"{'<' if w.little else '>'}{n}{self.code}", *v)
            except (struct.error, TypeError):
                return SequenceNode.write(self, w, v)   # finds the element and reports it
        if not self.is_array:
            w.write_ulong(n)
        w.align(self.size)
        w.buf += data


class BooleanSeqNode(SequenceNode):
    op = "boolean_seq"

    def read(self, r):
        n = self._count(r)
        pos = r.pos
        raw = r.read_raw(n, "boolean sequence")
        if raw and max(raw) > 1:
            for i, b in enumerate(raw):
                if b > 1:
                    r.violation(InvalidValueError, "bad-boolean",
                                f"boolean octet is {b}, not 0 or 1", pos + i)
        return [b != 0 for b in raw]

    def write(self, w, v):
        if not isinstance(v, (list, tuple)):
            raise EncodeError(f"sequence<boolean>: expected a list, not {type(v).__name__}")
        out = bytearray(len(v))
        for i, b in enumerate(v):
            if b is True or (type(b) is int and b == 1):
                out[i] = 1
            elif not (b is False or (type(b) is int and b == 0)):
                e = EncodeError(f"boolean: {b!r} is not True or False")
                e.add_path(f"[{i}]")
                raise e
        n = len(out)
        self._write_count(w, n)
        w.write_raw(out)
