#!/usr/bin/env bash
# omniORB 4.2.5 (Debian's omniorb-dfsg source package) built with clang's
# -fsanitize-coverage=trace-pc-guard and AddressSanitizer, for
# `pycdr fuzz --coverage sancov --spawn`: the ORB's own edges are what the
# fuzzer learns from, and ASan turns a memory error into a report the fuzzer
# reads as a finding.
#
# Builds, in $PYCDR_OMNIORB_COV (default ~/.cache/pycdr/omniorb-4.2.5-cov):
#   src/      the Debian source package, unpacked with its patches
#   build/    the out-of-tree build: omniidl plain, libomnithread and the
#             libomniORB4 family instrumented
#   echo/echo_server   a C++ echo servant for conformance/echo.idl linked with
#             the coverage shim and ASan (prints its IOR on stdout)
#   srccov/   a second build, for measuring coverage (not feedback): the
#             libraries and echo/echo_server with clang's source-based
#             coverage and ASan, read with llvm-profdata and llvm-cov
#   omnipy/   a venv with PyPI's salome-omniorb 4.2.5 (omniORBpy) whose
#             bundled omniORB 4.2.5 libraries are links to the instrumented
#             ones, and bin/python-asan: a python3 that carries the ASan
#             runtime and the coverage shim, for Python servants on that ORB
# Each step leaves a stamp and is skipped when its stamp is there: running the
# script again only redoes what is missing.  `build.sh clean` removes it all.
#
# Needs: clang, python3-dev, curl, dpkg-source (dpkg-dev), make, and either a
# deb-src line for Debian bookworm (then `apt-get source` is used) or
# network access to deb.debian.org's pool (the .dsc is fetched directly).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUT="${PYCDR_OMNIORB_COV:-$HOME/.cache/pycdr/omniorb-4.2.5-cov}"
JOBS="${JOBS:-2}"
PYTHON="${PYTHON:-/usr/bin/python3}"
DSC_VERSION="4.2.5+ds1-1.1"
POOL="https://deb.debian.org/debian/pool/main/o/omniorb-dfsg"
SRC="$OUT/src/omniorb-dfsg-4.2.5+ds1"
BUILD="$OUT/build"
INSTR="-O1 -g -fno-omit-frame-pointer -fsanitize=address -fsanitize-coverage=trace-pc-guard"

if [ "${1:-}" = clean ]; then rm -rf "$OUT"; exit 0; fi
for tool in clang clang++ curl dpkg-source make; do
    command -v "$tool" >/dev/null || { echo "build.sh: $tool is not on PATH" >&2; exit 2; }
done
mkdir -p "$OUT/stamps"
stamp() { [ -e "$OUT/stamps/$1" ]; }
done_() { touch "$OUT/stamps/$1"; }
log() { echo "== $(date -u +%H:%M:%S) $*"; }

# 1. The source package.  apt-get source needs a deb-src entry; without one the
#    .dsc and its files come from the pool (dpkg-source checks their sums).
if ! stamp source; then
    log "source: omniorb-dfsg $DSC_VERSION"
    rm -rf "$OUT/src"; mkdir -p "$OUT/src"
    if ! (cd "$OUT/src" && apt-get source -q "omniorb-dfsg=$DSC_VERSION" >/dev/null 2>&1); then
        log "source: apt-get source failed (no deb-src?); fetching the .dsc from $POOL"
        (cd "$OUT/src" &&
         for f in "omniorb-dfsg_$DSC_VERSION.dsc" omniorb-dfsg_4.2.5+ds1.orig.tar.xz \
                  "omniorb-dfsg_$DSC_VERSION.debian.tar.xz"; do
             curl -fsSLO "$POOL/$f"
         done &&
         dpkg-source -x "omniorb-dfsg_$DSC_VERSION.dsc" >/dev/null)
    fi
    [ -f "$SRC/THIS_IS_OMNIORB_4_2_5" ] || { echo "build.sh: no omniORB 4.2.5 source in $SRC" >&2; exit 1; }
    # Debian's "pkgconfig" patch renames omnithread3.pc.in in configure.ac and
    # the package regenerates configure at build time (dh_autoreconf); the same
    # rename in the shipped configure spares needing autoconf here.
    sed -i 's/omnithread3\.pc/omnithread4.pc/g' "$SRC/configure"
    done_ source
fi

# 2. Configure out of tree with clang, no static libraries (one compile per file).
if ! stamp configure; then
    log "configure"
    rm -rf "$BUILD"; mkdir -p "$BUILD"
    (cd "$BUILD" && CC=clang CXX=clang++ CFLAGS="-O1 -g" CXXFLAGS="-O1 -g" PYTHON="$PYTHON" \
        "$SRC/configure" --prefix="$OUT/install" --disable-static >configure.log 2>&1) ||
        { tail -20 "$BUILD/configure.log" >&2; exit 1; }
    done_ configure
fi

# 3. omniidl without instrumentation: it runs inside the plain python3 during
#    the build (an ASan extension module could not load there).
if ! stamp omniidl; then
    log "omniidl (plain)"
    nice -n 10 make -C "$BUILD/src/tool" -j"$JOBS" export >"$BUILD/omniidl.log" 2>&1 ||
        { tail -30 "$BUILD/omniidl.log" >&2; exit 1; }
    done_ omniidl
fi

# 4. libomnithread and libomniORB4 (with its dynamic, codesets, connections,
#    ZIOP parts) instrumented.  Shared libraries leave the ASan runtime to the
#    executable that loads them.  The flags go into the build's
#    mk/beforeauto.mk: omniORB's makefiles reset MAKEFLAGS for each
#    subdirectory, so a variable given to make on its command line is lost.
if ! stamp libs; then
    log "libraries (trace-pc-guard + ASan), make -j$JOBS"
    start=$(date +%s)
    sed -i -e "s|^CDEBUGFLAGS     = .*|CDEBUGFLAGS     = $INSTR|" \
           -e "s|^CXXDEBUGFLAGS   = .*|CXXDEBUGFLAGS   = $INSTR|" "$BUILD/mk/beforeauto.mk"
    grep -q -- "-fsanitize-coverage" "$BUILD/mk/beforeauto.mk" ||
        { echo "build.sh: could not set the flags in $BUILD/mk/beforeauto.mk" >&2; exit 1; }
    # (Objects of an earlier build without the flags would be taken as up to date.)
    find "$BUILD/src/lib" -name shared -type d -prune -exec rm -rf {} +
    rm -f "$BUILD"/lib/libomni*
    nice -n 10 make -C "$BUILD/src/lib" -j"$JOBS" export >"$BUILD/libs.log" 2>&1 ||
        { tail -30 "$BUILD/libs.log" >&2; exit 1; }
    guards=$(nm -D "$BUILD/lib/libomniORB4.so" | grep -c __sanitizer_cov_trace_pc_guard || true)
    [ "$guards" -gt 0 ] ||
        { echo "build.sh: libomniORB4 was built without trace-pc-guard" >&2; exit 1; }
    echo "$(( $(date +%s) - start ))" >"$OUT/libs-build-seconds"
    done_ libs
fi

# 5. The coverage shim (built without instrumentation, as it must be).
SHIM="$OUT/pycdr_coverage_shim.o"
if [ ! -f "$SHIM" ] || [ "$REPO/pycdr/fuzz/coverage_shim.c" -nt "$SHIM" ]; then
    log "coverage shim"
    clang -c -O2 -fPIC "$REPO/pycdr/fuzz/coverage_shim.c" -o "$SHIM"
    rm -f "$OUT/stamps/echo" "$OUT/stamps/python-asan"
fi

# 6. The C++ echo servant for conformance/echo.idl: stubs from the omniidl
#    built above, everything instrumented, the shim linked in (its definitions
#    in the executable take the guards of the libraries too).
ECHO="$OUT/echo"
if ! stamp echo || [ "$HERE/echo_server.cc" -nt "$ECHO/echo_server" ] ||
        [ "$REPO/conformance/echo.idl" -nt "$ECHO/echo_server" ]; then
    log "echo servant"
    mkdir -p "$ECHO"
    (cd "$ECHO" && "$BUILD/bin/omniidl" -bcxx "$REPO/conformance/echo.idl" 2>/dev/null)
    for source in "$ECHO/echoSK.cc" "$HERE/echo_server.cc"; do
        clang++ $INSTR -Wno-switch-bool -I"$ECHO" -I"$BUILD/include" -I"$SRC/include" \
            -D__OMNIORB4__ -D_REENTRANT -c "$source" -o "$ECHO/$(basename "${source%.cc}").o"
    done
    clang++ -fsanitize=address -fsanitize-coverage=trace-pc-guard "$ECHO/echoSK.o" \
        "$ECHO/echo_server.o" "$SHIM" -L"$BUILD/lib" -Wl,-rpath,"$BUILD/lib" \
        -lomniDynamic4 -lomniORB4 -lomnithread -pthread -o "$ECHO/echo_server"
    done_ echo
fi

# 7. omniORBpy on the instrumented library.  omniORBpy's sources are not in
#    Debian bookworm nor on PyPI as an sdist; PyPI's salome-omniorb 4.2.5 wheel
#    bundles omniORB 4.2.5's libraries (under auditwheel's hashed names), the
#    same version as this build: in a venv of its own, those libraries are
#    replaced by links to the instrumented ones.  bin/python-asan is a python
#    that carries the ASan runtime and the coverage shim (an ASan library
#    cannot be loaded into a plain python); next to the venv's pyvenv.cfg it
#    runs in that venv.  It is linked with libstdc++ so that ASan finds the
#    C++ runtime at its start (its __cxa_throw interceptor fails a CHECK at
#    omniORB's first exception when libstdc++ only comes later, with the
#    extension module).
OMNIPY="$OUT/omnipy"
BASE_PYTHON="${BASE_PYTHON:-$(command -v python3)}"
if ! stamp omnipy; then
    log "omniORBpy venv (salome-omniorb 4.2.5 on the instrumented libraries)"
    rm -rf "$OMNIPY"
    "$BASE_PYTHON" -m venv "$OMNIPY"
    "$OMNIPY/bin/python" -m pip install -q salome-omniorb==4.2.5
    libs=$("$OMNIPY/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/salome_omniorb.libs
    for bundled in "$libs"/*.so.*; do
        name=$(basename "$bundled")
        stem=${name%%-*}                       # libomniORB4-4725824d.so.2.5 -> libomniORB4
        mine=$(ls "$BUILD/lib/$stem".so.*.* 2>/dev/null | head -1)
        [ -n "$mine" ] || { echo "build.sh: no instrumented $stem for $name" >&2; exit 1; }
        mv "$bundled" "$bundled.bundled"
        ln -s "$mine" "$bundled"
    done
    done_ omnipy
fi
if ! stamp python-asan; then
    log "python-asan"
    read -r libdir ldlib include < <("$BASE_PYTHON" -c "import sysconfig as s; \
        print(s.get_config_var('LIBDIR'), s.get_config_var('LDLIBRARY'), s.get_paths()['include'])")
    printf '#include <Python.h>\nint main(int argc, char **argv) { return Py_BytesMain(argc, argv); }\n' \
        >"$OMNIPY/python_asan.c"
    clang -O1 -fsanitize=address -I"$include" "$OMNIPY/python_asan.c" "$SHIM" \
        -L"$libdir" -Wl,-rpath,"$libdir" -l"$(basename "${ldlib%.so*}" | sed 's/^lib//')" \
        -rdynamic -pthread -ldl -lm -Wl,--no-as-needed -lstdc++ -o "$OMNIPY/bin/python-asan"
    done_ python-asan
fi

# 8. A second build for measuring, not for feedback: the same source, the
#    same echo servant, with clang's source-based coverage
#    (-fprofile-instr-generate -fcoverage-mapping) instead of trace-pc-guard,
#    for benchmarks/bench_fuzz_baselines.py --target omniorb, which replays
#    recorded campaigns into it and reads branch coverage with llvm-cov.
#    AddressSanitizer stays: a case then stops the measured process where it
#    stopped the fuzzed one (an overflow read past a buffer would otherwise
#    go on with garbage, down paths the campaign's target never took, and
#    leave a corrupted heap to the cases after it).  The counters are
#    relocated at run time (-runtime-counter-relocation) so that continuous
#    mode (%c in LLVM_PROFILE_FILE) can keep them in the profile file itself:
#    a process ASan or a signal kills has written no profile at exit, and
#    some cases kill omniORB 4.2.5.  Shared libraries link the profile
#    runtime of their own (it is not in omniORB's link line for them).
COV="$OUT/srccov"
COVBUILD="$COV/build"
COVFLAGS="-O1 -g -fno-omit-frame-pointer -fsanitize=address -fprofile-instr-generate -fcoverage-mapping -mllvm -runtime-counter-relocation"
if ! stamp srccov-configure; then
    log "source coverage build: configure"
    rm -rf "$COVBUILD"; mkdir -p "$COVBUILD"
    (cd "$COVBUILD" && CC=clang CXX=clang++ CFLAGS="-O1 -g" CXXFLAGS="-O1 -g" PYTHON="$PYTHON" \
        "$SRC/configure" --prefix="$COV/install" --disable-static >configure.log 2>&1) ||
        { tail -20 "$COVBUILD/configure.log" >&2; exit 1; }
    done_ srccov-configure
fi
if ! stamp srccov-omniidl; then
    log "source coverage build: omniidl (plain)"
    nice -n 10 make -C "$COVBUILD/src/tool" -j"$JOBS" export >"$COVBUILD/omniidl.log" 2>&1 ||
        { tail -30 "$COVBUILD/omniidl.log" >&2; exit 1; }
    done_ srccov-omniidl
fi
if ! stamp srccov-libs; then
    log "source coverage build: libraries (profile + coverage mapping + ASan), make -j$JOBS"
    start=$(date +%s)
    sed -i -e "s|^CDEBUGFLAGS     = .*|CDEBUGFLAGS     = $COVFLAGS|" \
           -e "s|^CXXDEBUGFLAGS   = .*|CXXDEBUGFLAGS   = $COVFLAGS|" \
           -e "s|^SharedLibraryPlatformLinkFlagsTemplate = -shared |&-fprofile-instr-generate |" \
        "$COVBUILD/mk/beforeauto.mk"
    grep -q -- "-shared -fprofile-instr-generate" "$COVBUILD/mk/beforeauto.mk" &&
        grep -q -- "-fcoverage-mapping" "$COVBUILD/mk/beforeauto.mk" ||
        { echo "build.sh: could not set the flags in $COVBUILD/mk/beforeauto.mk" >&2; exit 1; }
    find "$COVBUILD/src/lib" -name shared -type d -prune -exec rm -rf {} +
    rm -f "$COVBUILD"/lib/libomni*
    nice -n 10 make -C "$COVBUILD/src/lib" -j"$JOBS" export >"$COVBUILD/libs.log" 2>&1 ||
        { tail -30 "$COVBUILD/libs.log" >&2; exit 1; }
    relocated=$(nm "$COVBUILD/lib/libomniORB4.so" | grep -c __llvm_profile_counter_bias || true)
    [ "$relocated" -gt 0 ] ||
        { echo "build.sh: libomniORB4 was built without relocated profile counters" >&2; exit 1; }
    echo "$(( $(date +%s) - start ))" >"$COV/libs-build-seconds"
    done_ srccov-libs
fi
if ! stamp srccov-echo || [ "$HERE/echo_server.cc" -nt "$COV/echo/echo_server" ] ||
        [ "$REPO/conformance/echo.idl" -nt "$COV/echo/echo_server" ]; then
    log "source coverage build: echo servant"
    mkdir -p "$COV/echo"
    (cd "$COV/echo" && "$COVBUILD/bin/omniidl" -bcxx "$REPO/conformance/echo.idl" 2>/dev/null)
    for source in "$COV/echo/echoSK.cc" "$HERE/echo_server.cc"; do
        clang++ $COVFLAGS -Wno-switch-bool -I"$COV/echo" -I"$COVBUILD/include" -I"$SRC/include" \
            -D__OMNIORB4__ -D_REENTRANT -c "$source" -o "$COV/echo/$(basename "${source%.cc}").o"
    done
    clang++ -fsanitize=address -fprofile-instr-generate "$COV/echo/echoSK.o" "$COV/echo/echo_server.o" \
        -L"$COVBUILD/lib" -Wl,-rpath,"$COVBUILD/lib" \
        -lomniDynamic4 -lomniORB4 -lomnithread -pthread -o "$COV/echo/echo_server"
    done_ srccov-echo
fi

log "done: $ECHO/echo_server and $OMNIPY/bin/python-asan (libraries: $(cat "$OUT/libs-build-seconds") s), $COV/echo/echo_server (source coverage)"
