"""The C extensions and the package list; everything else is in pyproject.toml.

pycdr.codec._speedups (the codec), pycdr.capture._pcapwalk (the capture
reader's record walk), pycdr._replaylane (a replay connection's steady
state) and pycdr.fuzz._edgemap (the fuzzer's scan of a sancov edge map) are
optional: without a C compiler the build goes on and pycdr runs
their pure-Python twins (PYCDR_PURE=1 forces those anyway).

cli/ and conformance/ live at the top of the repository but install as
pycdr.cli and pycdr.conformance (pyproject's package-dir): the packages are
found in the three folders, never listed by hand, so a new package cannot be
left out of the wheel.
"""

from setuptools import Extension, find_packages, setup


def packages() -> list[str]:
    found = find_packages(include=["pycdr", "pycdr.*"])
    found += ["pycdr.dissector", "pycdr.dissector.types"]   # the Lua plugin: data only
    for folder in ("cli", "conformance"):
        found.append(f"pycdr.{folder}")
        found += [f"pycdr.{folder}.{name}" for name in find_packages(where=folder)]
    return found


setup(packages=packages(),
      # the manual page, made from the commands (python -m pycdr.cli.docpages man;
      # tests/test_cli_vocabulary.py checks it is current)
      data_files=[("share/man/man1", ["docs/pycdr.1"])],
      ext_modules=[Extension("pycdr.codec._speedups", ["pycdr/codec/_speedups.c"], optional=True),
                   Extension("pycdr.capture._pcapwalk", ["pycdr/capture/_pcapwalk.c"],
                             optional=True),
                   Extension("pycdr.fuzz._edgemap", ["pycdr/fuzz/_edgemap.c"], optional=True),
                   # (-ffp-contract=off: latencies bucketed with LatencyHistogram's
                   # arithmetic, no fused multiply-add)
                   Extension("pycdr._replaylane", ["pycdr/_replaylane.c"], optional=True,
                             extra_compile_args=["-ffp-contract=off"])])
