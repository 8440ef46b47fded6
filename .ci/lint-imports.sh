#!/usr/bin/env bash
# The layer contract of pyproject.toml ([tool.importlinter]), checked by
# lint-imports: a module importing a higher layer, or modules of one package
# importing each other in a circle, fail.  cli/ and conformance/ install as
# pycdr.cli and pycdr.conformance (pyproject's package-dir) but live beside
# pycdr/, where lint-imports (which reads a package from its directory) does
# not see them; so the check runs on a copy of the sources laid out as
# installed.  Usage: bash .ci/lint-imports.sh  (needs the test extra's
# import-linter in .venv, or lint-imports on PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
lint="$repo/.venv/bin/lint-imports"
[ -x "$lint" ] || lint="$(command -v lint-imports)"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
copy_sources() {   # copy_sources FROM TO: the .py files of FROM under TO
    (cd "$1" && find . -name '*.py' -exec install -D -m 644 {} "$2/{}" \;)
}
copy_sources pycdr "$stage/pycdr"
copy_sources cli "$stage/pycdr/cli"
copy_sources conformance "$stage/pycdr/conformance"
cd "$stage"
PYTHONPATH="$stage" "$lint" --no-cache "$repo/pyproject.toml"
