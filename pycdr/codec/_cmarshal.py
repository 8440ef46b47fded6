"""The C fast path of :mod:`pycdr.codec.marshal`: the same plans, run by ``pycdr.codec._speedups``.

``wrap(...)`` takes marshal's six pure-Python entry points and returns C-backed
versions with the same signatures.  ``encode``, ``decode`` and the two
encapsulation forms are C callables (``_speedups.entry``): a call they take
runs without any Python frame; they pass any other call, unchanged, to the
pure-Python function (its ``__wrapped__``), and so they do when the C run hands
the call back (the internal ``Fallback``, or a ``CDRError`` from a node handed
to Python) or leaves trailing bytes.  Errors are the cold path, and re-running
them in Python gives exactly the Python path's error: type, message, offset and
path.  Calls the C code never takes: lenient decoding, char code sets other
than ISO-8859-1, data other than bytes/bytearray, keywords the function does not
know, readers/writers of subclasses (tracing readers), and stream
reads/writes of plans holding ``any`` or value types (their state lives in the
stream's context, which a re-run could not undo).

Importing this module fails with ImportError when the extension is not built;
marshal then stays pure Python.
"""

from __future__ import annotations

import functools

from .. import codesets
from ._speedups import (Fallback, configure as _c_configure, entry as _c_entry,
                        read as _c_read, touches_context, write as _c_write)
from .cdr import DEFAULT_VERSION, CDRReader, CDRWriter
from ..errors import CDRError
from .plan import plan_for
from .typecode import TypeCode

_ISO_8859_1 = codesets.ISO_8859_1
_DEFAULT_TCS_C = codesets.DEFAULT_TCS_C
_DEFAULT_TCS_W = codesets.DEFAULT_TCS_W
_HAND_BACK = (Fallback, CDRError)

#: Tests switch this off to run the pure-Python path in the same process
#: (tests/conftest.py's ``impl`` fixture); nothing else should.  The C entry
#: points read it from this module's namespace on every call.
enabled = True


def _reader_for(data, start, origin, little, version, tcs_w, numeric_arrays):
    """The CDRReader the C decode entry points make (once, and only if they hand
    a node back to Python)."""
    r = CDRReader(data, start=start, origin=origin, little=little, version=version,
                  tcs_w=tcs_w)
    r.context = {"numeric_arrays": numeric_arrays}
    return r


def _writer_for(buf, little, version, offset, tcs_c, tcs_w, wstring_bom):
    """The CDRWriter over ``buf`` the C encode entry points make (once, and only
    if they hand a node back to Python)."""
    w = CDRWriter(little=little, version=version, offset=offset, tcs_c=tcs_c, tcs_w=tcs_w,
                  wstring_bom=wstring_bom)
    w.buf = buf
    w.context = {}
    return w


def wrap(py_read_value, py_write_value, py_encode, py_decode, py_encode_encapsulation,
         py_decode_encapsulation):
    """C-backed versions of marshal's entry points (same order, same signatures)."""
    _c_configure(globals(), plan_for, TypeCode, CDRError, _reader_for, _writer_for,
                 _ISO_8859_1, DEFAULT_VERSION, _DEFAULT_TCS_C, _DEFAULT_TCS_W)

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

    for c_fn, py_fn in ((read_value, py_read_value), (write_value, py_write_value)):
        c_fn.__doc__ = py_fn.__doc__
        c_fn.__wrapped__ = py_fn      # the pure-Python function

    def c_entry(py_fn):
        # name, doc, __wrapped__ (so inspect.signature shows py_fn's) from py_fn
        return functools.update_wrapper(_c_entry(py_fn.__name__, py_fn), py_fn)

    return (read_value, write_value, c_entry(py_encode), c_entry(py_decode),
            c_entry(py_encode_encapsulation), c_entry(py_decode_encapsulation))
