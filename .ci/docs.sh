#!/usr/bin/env bash
# Builds the documentation site (mkdocs.yml, docs/) with `mkdocs build --strict`: a broken
# link or anchor, a page missing from the nav or a command reference mkdocs-click cannot
# generate fails the build. Installs the `docs` extra into the existing .venv (made by
# .ci/run) and builds into a temporary folder, removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."

.venv/bin/python -m pip install -q -e '.[docs]'
site="$(mktemp -d)"
trap 'rm -rf "$site"' EXIT
# (NO_MKDOCS_2_WARNING: no notice about MkDocs' future versions in the log)
NO_MKDOCS_2_WARNING=1 .venv/bin/python -m mkdocs build --strict --site-dir "$site"
