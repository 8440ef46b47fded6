"""The layout rule: no Python module of the library (pycdr/), the CLI (cli/) or the
conformance suite (conformance/) is longer than MAX_LINES lines.  A module that
grows past it is split by job into modules of its package, each named for what
it does."""

import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("pycdr", "cli", "conformance")
MAX_LINES = 1000


def line_count(path: pathlib.Path) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def modules_over(root: pathlib.Path, packages, limit: int) -> list:
    """"path: N lines" for each .py file under root/package longer than ``limit``."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            n = line_count(path)
            if n > limit:
                found.append(f"{path.relative_to(root)}: {n} lines")
    return found


def test_no_module_is_longer_than_the_limit():
    assert all((ROOT / package).is_dir() for package in PACKAGES)
    too_long = modules_over(ROOT, PACKAGES, MAX_LINES)
    assert not too_long, (f"modules over {MAX_LINES} lines (split each by job): "
                          + "; ".join(too_long))


def test_a_module_over_the_limit_is_named(tmp_path):
    package = tmp_path / "pkg" / "sub"
    package.mkdir(parents=True)
    (package / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (package / "short.py").write_text("x = 1\n" * MAX_LINES)
    (package / "notes.txt").write_text("x\n" * (MAX_LINES + 1))
    assert modules_over(tmp_path, ("pkg",), MAX_LINES) == \
        [f"pkg/sub/long.py: {MAX_LINES + 1} lines"]
