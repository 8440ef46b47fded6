#!/usr/bin/env bash
# Build pycdr.codec._speedups (and pycdr.capture._pcapwalk, pycdr._replaylane, pycdr.fuzz._edgemap) once more with AddressSanitizer + UndefinedBehaviorSanitizer
# in a throw-away copy of the package, then run under the sanitizers:
#   1. the differential and malformed-input tests (tests/test_speedups.py,
#      tests/test_cdr_errors.py, tests/test_giop_fast_decode.py, the ORB's one-call
#      paths' tests/test_orb_direct.py, and the capture
#      reader's tests/test_pcapwalk.py, the fuzzer's edge-map scan
#      tests/test_fuzz_edgemap.py), C path against Python path; and
#      tests/test_replay_hostile.py (a target's bad replies decoded by the C path) and
#      tests/test_replay_lane.py (pycdr._replaylane against the replay's Python code);
#   2. the fuzz harness .ci/fuzz_speedups.py for FUZZ_SECONDS (default 60):
#      atheris when it imports, else the harness's own random-input loop.
# Any sanitizer report aborts the run (halt_on_error) and fails this script.
#
#   .ci/sanitize.sh                  # from the repository root; uses .venv/bin/python
#   PYTHON=python3 FUZZ_SECONDS=20 .ci/sanitize.sh
#
# Needs gcc (or $CC) with libasan/libubsan: Debian's gcc package has both.
# Leak detection is off: CPython does not free its own objects at exit, so
# LeakSanitizer would report the interpreter; reference leaks of the extension
# are checked by tests/test_speedups.py::test_no_reference_leak instead.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
CC="${CC:-gcc}"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/pycdr-sanitize.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# The package and what the tests import, copied so the instrumented build
# never touches the working tree's own extension.
cp -r "$ROOT/pycdr" "$ROOT/tests" "$ROOT/captures" "$ROOT/setup.py" "$ROOT/pyproject.toml" "$WORK/"
mkdir -p "$WORK/.ci"
cp "$ROOT/.ci/fuzz_speedups.py" "$WORK/.ci/"
find "$WORK" -name '*.so' -delete
find "$WORK" -name __pycache__ -prune -exec rm -rf {} +

SAN_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -g -O1"
(cd "$WORK" && CC="$CC" CFLAGS="$SAN_FLAGS" LDFLAGS="-fsanitize=address,undefined" \
    "$PYTHON" setup.py -q build_ext --inplace) >"$WORK/build.log" 2>&1 || {
    cat "$WORK/build.log"; echo "sanitize: build failed" >&2; exit 1; }

# The interpreter is not instrumented: the ASan runtime must be loaded first.
LIBASAN="$("$CC" -print-file-name=libasan.so)"
LIBUBSAN="$("$CC" -print-file-name=libubsan.so)"
[ -f "$LIBASAN" ] || { echo "sanitize: $LIBASAN not found" >&2; exit 1; }

run_sanitized() {
    (cd "$WORK" && \
     LD_PRELOAD="$LIBASAN:$LIBUBSAN" \
     ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=1:allocator_may_return_null=1" \
     UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
     PYTHONMALLOC=malloc \
     PYTHONPATH="$WORK" \
     PYCDR_PURE=0 \
     "$@")
}

# Make sure the instrumented copy is the one imported.
run_sanitized "$PYTHON" -c '
import pycdr, pycdr.codec._speedups as s, pycdr.codec.marshal as m
assert m.IMPLEMENTATION == "c", m.IMPLEMENTATION
assert s.__file__.startswith("'"$WORK"'"), s.__file__
print("sanitize: instrumented", s.__file__)'

echo "sanitize: differential and malformed-input tests"
run_sanitized "$PYTHON" -m pytest -q -p no:cacheprovider \
    -W ignore::hypothesis.errors.HypothesisWarning \
    tests/test_speedups.py tests/test_cdr_errors.py tests/test_giop_fast_decode.py \
    tests/test_pcapwalk.py tests/test_orb_direct.py tests/test_orb_blocking_lane.py \
    tests/test_orb_threads_lane.py tests/test_orb_polling.py tests/test_replay_hostile.py \
    tests/test_replay_lane.py tests/test_fuzz_edgemap.py

echo "sanitize: fuzzing the C decoder for ${FUZZ_SECONDS}s"
if run_sanitized "$PYTHON" -c 'import atheris' 2>/dev/null; then
    mkdir -p "$WORK/corpus"
    if ! run_sanitized "$PYTHON" .ci/fuzz_speedups.py -max_total_time="$FUZZ_SECONDS" \
            -rss_limit_mb=4096 -print_final_stats=1 "$WORK/corpus" >"$WORK/fuzz.log" 2>&1; then
        tail -60 "$WORK/fuzz.log"
        echo "sanitize: the fuzzer found a problem (log above)" >&2
        exit 1
    fi
    grep -E '^(Done|stat::number_of_executed_units)' "$WORK/fuzz.log" || tail -5 "$WORK/fuzz.log"
else
    run_sanitized "$PYTHON" .ci/fuzz_speedups.py --plain "$FUZZ_SECONDS"
fi
echo "sanitize: OK"
