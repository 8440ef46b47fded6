"""Only the C extensions; everything else is in pyproject.toml.

pycdr._speedups (the codec), pycdr.capture._pcapwalk (the capture reader's record
walk) and pycdr._replaylane (a replay connection's steady state) are optional:
without a C compiler the build goes on and pycdr runs their pure-Python twins
(PYCDR_PURE=1 forces those anyway).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("pycdr._speedups", ["pycdr/_speedups.c"], optional=True),
                   Extension("pycdr.capture._pcapwalk", ["pycdr/capture/_pcapwalk.c"], optional=True),
                   # (-ffp-contract=off: latencies bucketed with LatencyHistogram's
                   # arithmetic, no fused multiply-add)
                   Extension("pycdr._replaylane", ["pycdr/_replaylane.c"], optional=True,
                             extra_compile_args=["-ffp-contract=off"])])
