"""The C fast path of :mod:`pycdr.marshal`: the same plans, run by ``pycdr._speedups``.

``wrap(...)`` takes marshal's six pure-Python entry points and returns C-backed
versions with the same signatures.  Each tries the C plan runner first and
re-runs the pure-Python function from the start when the C code hands the call
back (the internal ``Fallback``) or a node handed to Python raised a
``CDRError``.  Errors are the cold path, and re-running them in Python gives
exactly the Python path's error: type, message, offset and path.  Calls the C
code never takes: lenient decoding, char code sets other than ISO-8859-1,
readers/writers of subclasses (tracing readers), and stream reads/writes of
plans holding ``any`` or value types (their state lives in the stream's
context, which a re-run could not undo).

Importing this module fails with ImportError when the extension is not built;
marshal then stays pure Python.
"""

from __future__ import annotations

from . import codesets
from ._speedups import Fallback, encode as _c_encode, read as _c_read, touches_context, \
    write as _c_write
from .cdr import DEFAULT_VERSION, CDRReader, CDRWriter
from .errors import CDRError
from .plan import plan_for
from .typecode import TypeCode

_ISO_8859_1 = codesets.ISO_8859_1
_DEFAULT_TCS_C = codesets.DEFAULT_TCS_C
_DEFAULT_TCS_W = codesets.DEFAULT_TCS_W
_HAND_BACK = (Fallback, CDRError)

#: Tests switch this off to run the pure-Python path in the same process
#: (tests/conftest.py's ``impl`` fixture); nothing else should.
enabled = True


def _reader_for(data, start, origin, little, version, tcs_w, numeric_arrays):
    """The CDRReader the C code asks for (once, and only if it hands a node back
    to Python).  Passed as a tuple (_reader_for, *args): no closure per call."""
    r = CDRReader(data, start=start, origin=origin, little=little, version=version,
                  tcs_w=tcs_w)
    r.context = {"numeric_arrays": numeric_arrays}
    return r


def _writer_for(buf, little, version, offset, tcs_c, tcs_w, wstring_bom):
    """The CDRWriter over ``buf`` the C encoder asks for (once, and only if it
    hands a node back to Python); passed as a tuple (_writer_for, *args)."""
    w = CDRWriter(little=little, version=version, offset=offset, tcs_c=tcs_c, tcs_w=tcs_w,
                  wstring_bom=wstring_bom)
    w.buf = buf
    w.context = {}
    return w


def wrap(py_read_value, py_write_value, py_encode, py_decode, py_encode_encapsulation,
         py_decode_encapsulation):
    """C-backed versions of marshal's entry points (same order, same signatures)."""

    def read_value(r, tc):
        if (enabled and type(r) is CDRReader and not r.lenient and r.tcs_c == _ISO_8859_1
                and not r.check_padding):
            node = plan_for(tc)
            if not touches_context(node):
                if r.context is None:
                    r.context = {}
                pos, depth = r.pos, r.depth
                try:
                    value, end = _c_read(node, r.buf, pos, r.end, r.origin, r.little,
                                         bool(r.context.get("numeric_arrays")), r)
                except _HAND_BACK:
                    r.pos, r.depth = pos, depth
                else:
                    r.pos, r.depth = end, depth
                    return value
        return py_read_value(r, tc)

    def write_value(w, tc, value):
        if enabled and type(w) is CDRWriter and w.tcs_c == _ISO_8859_1:
            node = plan_for(tc)
            if not touches_context(node):
                if w.context is None:
                    w.context = {}
                try:
                    _c_write(node, w, value)   # cuts w.buf back itself on failure
                    return
                except _HAND_BACK:
                    pass
        py_write_value(w, tc, value)

    def encode(tc, value, *, little=False, version=DEFAULT_VERSION, offset=0,
               tcs_c=_DEFAULT_TCS_C, tcs_w=_DEFAULT_TCS_W, wstring_bom=False):
        if enabled and tcs_c == _ISO_8859_1:
            node = tc._plans if type(tc) is TypeCode else None
            try:
                return _c_encode(node or plan_for(tc), value, -offset, little,
                                 (_writer_for, little, version, offset, tcs_c, tcs_w,
                                  wstring_bom))
            except _HAND_BACK:
                pass
        return py_encode(tc, value, little=little, version=version, offset=offset,
                         tcs_c=tcs_c, tcs_w=tcs_w, wstring_bom=wstring_bom)

    def decode(tc, data, *, little=False, version=DEFAULT_VERSION, offset=0,
               tcs_c=_DEFAULT_TCS_C, tcs_w=_DEFAULT_TCS_W, lenient=False, warnings=None,
               numeric_arrays=False, allow_trailing=False):
        if enabled and not lenient and tcs_c == _ISO_8859_1 and \
                type(data) in (bytes, bytearray):
            node = tc._plans if type(tc) is TypeCode else None
            try:
                value, pos = _c_read(node or plan_for(tc), data, 0, len(data), -offset, little,
                                     numeric_arrays, (_reader_for, data, 0, -offset, little,
                                                      version, tcs_w, numeric_arrays))
            except _HAND_BACK:
                pass
            else:
                if pos == len(data) or allow_trailing:
                    return value
                # trailing bytes: the Python path reports them
        return py_decode(tc, data, little=little, version=version, offset=offset,
                         tcs_c=tcs_c, tcs_w=tcs_w, lenient=lenient, warnings=warnings,
                         numeric_arrays=numeric_arrays, allow_trailing=allow_trailing)

    def encode_encapsulation(tc, value, *, little=False, version=DEFAULT_VERSION,
                             tcs_c=_DEFAULT_TCS_C, tcs_w=_DEFAULT_TCS_W):
        if enabled and tcs_c == _ISO_8859_1:
            w = CDRWriter(little=little, version=version, tcs_c=tcs_c, tcs_w=tcs_w)
            w.buf.append(1 if little else 0)
            w.context = {}
            try:
                _c_write(plan_for(tc), w, value)
                return w.getvalue()
            except _HAND_BACK:
                pass
        return py_encode_encapsulation(tc, value, little=little, version=version,
                                       tcs_c=tcs_c, tcs_w=tcs_w)

    def _decode_at(tc, data, start, origin, little, version, tcs_w, numeric_arrays,
                   allow_trailing):
        """C decode of data[start:] as (value,), or None: hand back to Python."""
        try:
            value, pos = _c_read(plan_for(tc), data, start, len(data), origin, little,
                                 numeric_arrays, (_reader_for, data, start, origin, little,
                                                  version, tcs_w, numeric_arrays))
        except _HAND_BACK:
            return None
        if pos != len(data) and not allow_trailing:
            return None     # the Python path reports the trailing bytes
        return (value,)

    def decode_encapsulation(tc, data, *, version=DEFAULT_VERSION, tcs_c=_DEFAULT_TCS_C,
                             tcs_w=_DEFAULT_TCS_W, lenient=False, warnings=None,
                             numeric_arrays=False, allow_trailing=False):
        if enabled and not lenient and tcs_c == _ISO_8859_1 and \
                type(data) in (bytes, bytearray) and data and data[0] < 2:
            got = _decode_at(tc, data, 1, 0, data[0] == 1, version, tcs_w, numeric_arrays,
                             allow_trailing)
            if got is not None:
                return got[0]
        return py_decode_encapsulation(tc, data, version=version, tcs_c=tcs_c, tcs_w=tcs_w,
                                       lenient=lenient, warnings=warnings,
                                       numeric_arrays=numeric_arrays,
                                       allow_trailing=allow_trailing)

    for c_fn, py_fn in ((read_value, py_read_value), (write_value, py_write_value),
                        (encode, py_encode), (decode, py_decode),
                        (encode_encapsulation, py_encode_encapsulation),
                        (decode_encapsulation, py_decode_encapsulation)):
        c_fn.__doc__ = py_fn.__doc__
        c_fn.__wrapped__ = py_fn      # the pure-Python function
    return (read_value, write_value, encode, decode, encode_encapsulation,
            decode_encapsulation)
