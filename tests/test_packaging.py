"""The package as users install it: run by .ci/wheel.sh against a wheel built from the
sdist and installed into a clean venv (PYCDR_WHEEL_VENV); skipped in the ordinary runs,
which test the editable checkout."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

import pytest

import pycdr

VENV = os.environ.get("PYCDR_WHEEL_VENV")
SDIST = os.environ.get("PYCDR_SDIST")
REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not VENV, reason="run by .ci/wheel.sh against an installed wheel")


def wheel_python(code: str) -> str:
    proc = subprocess.run([f"{VENV}/bin/python", "-c", code], capture_output=True, text=True,
                          cwd="/", timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def source_modules() -> set[str]:
    """Every module of the checkout, by the name it imports as once installed."""
    names = set()
    for folder, package in (("pycdr", "pycdr"), ("cli", "pycdr.cli"),
                            ("conformance", "pycdr.conformance"),
                            ("dissector", "pycdr.dissector")):
        for path in (REPO / folder).rglob("*.py"):
            parts = list(path.relative_to(REPO / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            names.add(".".join([package, *parts]))
    return names


def test_every_module_of_the_checkout_is_in_the_wheel():
    installed = set(wheel_python(
        "import pkgutil, pycdr\n"
        "print('pycdr')\n"
        "for m in pkgutil.walk_packages(pycdr.__path__, 'pycdr.'):\n"
        "    print(m.name)\n").split())
    # _speedups, _pcapwalk, _replaylane and _edgemap are extensions: in the wheel, not in the list
    missing = source_modules() - installed
    assert not missing, f"left out of the wheel: {sorted(missing)}"


def test_the_c_extensions_are_built_and_used():
    out = wheel_python(
        "import pycdr.codec.marshal as m, pycdr.capture.read as r, pycdr.replay.runner as rr\n"
        "import pycdr.fuzz.feedback as f\n"
        "print(m.IMPLEMENTATION, r.IMPLEMENTATION, rr._Lane is not None, f.IMPLEMENTATION)")
    assert out.split() == ["c", "c", "True", "c"]


def test_package_data_is_installed():
    out = wheel_python(
        "import importlib.resources as r\n"
        "for package, name in (('pycdr.dissector', 'pycdr_giop.lua'),\n"
        "                      ('pycdr.dissector', 'pycdr_names.lua'),\n"
        "                      ('pycdr.conformance', 'echo.idl'),\n"
        "                      ('pycdr.idl', 'standard/CosNaming.idl'),\n"
        "                      ('pycdr.fuzz', 'coverage_shim.c')):\n"
        "    print(name, r.files(package).joinpath(name).is_file())\n")
    assert "False" not in out, out


def test_version_is_the_package_version():
    proc = subprocess.run([f"{VENV}/bin/pycdr", "--version"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0
    metadata = wheel_python("import importlib.metadata as m; print(m.version('pycdr'))").strip()
    assert metadata == pycdr.__version__
    assert proc.stdout.split()[-1] == pycdr.__version__


def test_commands_that_need_package_data_run_from_the_wheel(tmp_path):
    exe = f"{VENV}/bin/pycdr"
    for args in (["replay", "--help"], ["pcap", "--help"], ["fuzz", "--help"],
                 ["conformance", "--help"]):
        proc = subprocess.run([exe, *args], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (args, proc.stderr)
    proc = subprocess.run([exe, "dissector", "install", "--dest", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "pycdr_giop.lua").is_file() and (tmp_path / "pycdr_names.lua").is_file()


def test_the_manual_page_is_installed():
    page = os.path.join(VENV, "share", "man", "man1", "pycdr.1")
    assert os.path.isfile(page), "the wheel installs no share/man/man1/pycdr.1"
    with open(page) as f:
        assert f.read().startswith(".TH PYCDR 1")


def test_sdist_carries_the_sources_and_data():
    assert SDIST, "PYCDR_SDIST names the sdist"
    with tarfile.open(SDIST) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    for needed in ("pycdr/codec/_speedups.c", "pycdr/capture/_pcapwalk.c", "pycdr/_replaylane.c",
                   "pycdr/fuzz/_edgemap.c",
                   "dissector/pycdr_giop.lua", "conformance/echo.idl", "docs/pycdr.1", "setup.py",
                   "pyproject.toml", "README.md"):
        assert needed in names, f"{needed} is not in the sdist"
