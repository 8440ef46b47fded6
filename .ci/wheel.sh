#!/usr/bin/env bash
# The package as users install it: builds the sdist, then the wheel from that sdist
# (so a file the sdist leaves out fails here too), installs the wheel -- not an editable
# checkout -- into a clean venv, and runs tests/test_packaging.py and the README's quick
# start (tests/test_readme_quickstart.py) against that install's `pycdr`.
# Usage: bash .ci/wheel.sh  (needs the test extra in .venv: `build` and pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
work="$(mktemp -d "${TMPDIR:-/tmp}/pycdr-wheel.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "wheel: building the sdist and, from it, the wheel"
.venv/bin/python -m build --outdir "$work/dist" >"$work/build.log" 2>&1 || {
    cat "$work/build.log"; echo "wheel: build failed" >&2; exit 1; }
ls "$work/dist"

python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --upgrade pip
"$work/venv/bin/python" -m pip install -q "$work"/dist/*.whl

tests=(tests/test_packaging.py)
[ -f tests/test_readme_quickstart.py ] && tests+=(tests/test_readme_quickstart.py)
# pytest runs from the main venv (the installed package has no test extra); the tests
# run the wheel's own interpreter and `pycdr` for everything they check.
PYCDR_WHEEL_VENV="$work/venv" PYCDR_SDIST="$(ls "$work"/dist/*.tar.gz)" \
PYCDR_EXE="$work/venv/bin/pycdr" \
    .venv/bin/python -m pytest -q -p no:cacheprovider "${tests[@]}"
