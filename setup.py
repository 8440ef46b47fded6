"""Only the C extension; everything else is in pyproject.toml.

pycdr._speedups is optional: without a C compiler the build goes on and pycdr
runs its pure-Python marshal path (PYCDR_PURE=1 forces that path anyway).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("pycdr._speedups", ["pycdr/_speedups.c"], optional=True)])
