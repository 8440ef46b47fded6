"""The codec: CDR values of every IDL type, in both byte orders.

From the bottom up: :mod:`~pycdr.codec.cdr` reads and writes aligned
primitives; :mod:`~pycdr.codec.typecode` and :mod:`~pycdr.codec.tc` describe
types, :mod:`~pycdr.codec.values` the Python values they take, and
:mod:`~pycdr.codec.ior` object references; :mod:`~pycdr.codec.scalars`,
:mod:`~pycdr.codec.tcmarshal` and :mod:`~pycdr.codec.valuetype` encode the
harder kinds; :mod:`~pycdr.codec.plan` compiles a TypeCode once into a plan
that encodes and decodes; :mod:`~pycdr.codec.marshal` is the entry point, run
in C by :mod:`pycdr.codec._speedups` when it is built.
"""
