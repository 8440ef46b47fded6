#!/usr/bin/env bash
# Installs the real peer ORBs and tools the tests use, as root on Debian (CI=true or by hand):
#   - from Debian: a JDK and Maven (if `java`/`javac`/`mvn` are missing), omniORB's utilities
#     (`catior`), omniORB's IDL files, tshark, Combat (tcl-combat), omniORB's C++ headers
#     and IDL compiler with g++ and OpenSSL's headers (the omniORB SSL peer);
#   - from Maven Central: JacORB 3.9, the OpenJDK ORB 10.1.3 and the GlassFish ORB 5.0.0 with the
#     jars they need, into .peers/{jacorb,openjdk-orb,glassfish-orb}/lib (gitignored), and the
#     JaCoCo agent 0.8.15 (runtime jar) into .peers/jacoco/lib;
#   - compiles the Java test programs (tests/peers/jacorb/src) into .peers/jacorb/classes; they
#     run on any of the three ORBs' jars.
# omniORBpy and omniNames come from the Python test extra (salome-omniorb), not from here.
# Idempotent: every step is skipped when its result is already there and up to date.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
peer_sources="$repo_root/tests/peers/jacorb"
jacorb_home="$repo_root/.peers/jacorb"

# --- Debian packages -------------------------------------------------------------------------
missing_packages=()
{ command -v java && command -v javac; } >/dev/null || missing_packages+=(default-jdk-headless)
command -v mvn >/dev/null || missing_packages+=(maven)
command -v catior >/dev/null || missing_packages+=(omniorb)
[ -d /usr/share/idl/omniORB ] || missing_packages+=(omniorb-idl)
command -v tshark >/dev/null || missing_packages+=(tshark)
# pycdr pcap -i calls libpcap in-process (ctypes): its shared library, libpcap.so.0.8.
ls /usr/lib/*/libpcap.so.0.8 >/dev/null 2>&1 || missing_packages+=(libpcap0.8)
command -v cpp >/dev/null || missing_packages+=(cpp)      # the IDL oracle preprocesses with it
command -v gcc >/dev/null || missing_packages+=(gcc)      # builds pycdr.codec._speedups
# The omniORB C++ SSL peer of the TLS tests (tests/peers/omni_ssl): compiler, headers, the C++
# IDL back end; libomniorb4-2 (a dependency) ships the SSL transport libomnisslTP4.
command -v g++ >/dev/null || missing_packages+=(g++)
[ -f /usr/include/omniORB4/sslContext.h ] || missing_packages+=(libomniorb4-dev)
[ -x /usr/bin/omniidl ] || missing_packages+=(omniidl)
[ -f /usr/include/openssl/ssl.h ] || missing_packages+=(libssl-dev)
command -v openssl >/dev/null || missing_packages+=(openssl)
# A real Prometheus server scrapes `pycdr monitor --prometheus` (tests/test_monitor_metrics.py).
command -v prometheus >/dev/null || missing_packages+=(prometheus)
# The fuzzer's coverage feedback tests build a C target with clang's sanitizer coverage and
# AddressSanitizer (its runtime libraries are in libclang-rt-dev).
command -v clang >/dev/null || missing_packages+=(clang)
ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.asan-x86_64.a >/dev/null 2>&1 \
    || missing_packages+=(libclang-rt-dev)
# Combat 0.8.1, the Tcl ORB (tests/peers/combat.py); tclsh comes with it.
dpkg-query -W -f '${Status}' tcl-combat 2>/dev/null | grep -q "ok installed" \
    || missing_packages+=(tcl-combat)

if [ ${#missing_packages[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "install-peers: need root to install: ${missing_packages[*]}" >&2
        exit 1
    fi
    echo "install-peers: apt-get install ${missing_packages[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # tshark's wireshark-common otherwise asks whether non-root users may capture.
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing_packages[@]}" >/dev/null
fi

# --- Java ORB jars ----------------------------------------------------------------------------
# One Maven pom a Java ORB (tests/peers/<orb>/pom.xml), its jars into .peers/<orb>/lib. The stamp
# holds the hash of the pom the jars were copied for; a changed pom fetches them anew.
fetch_jars() {   # fetch_jars ORB_NAME
    local pom="$repo_root/tests/peers/$1/pom.xml" home="$repo_root/.peers/$1"
    local hash
    hash="$(sha256sum "$pom" | cut -d' ' -f1)"
    if [ "$(cat "$home/lib.stamp" 2>/dev/null)" != "$hash" ]; then
        echo "install-peers: fetching $1 jars with Maven"
        rm -rf "$home/lib" "$home/lib.stamp"
        mkdir -p "$home"
        local maven_log
        maven_log="$(mktemp)"
        if ! mvn -B -f "$pom" \
                org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
                -DoutputDirectory="$home/lib" >"$maven_log" 2>&1; then
            cat "$maven_log" >&2
            rm -f "$maven_log"
            exit 1
        fi
        rm -f "$maven_log"
        echo "$hash" > "$home/lib.stamp"
    fi
}
# JacORB, and the two JDK-lineage ORBs the same test programs also run on; the JaCoCo agent
# (its runtime jar) the JVM coverage feedback of `pycdr fuzz --coverage jacoco:...` is tested with;
# JacORB 3.4, an old release (a defect fixed since is rediscovered against it).
for java_orb in jacorb openjdk-orb glassfish-orb jacoco jacorb-3.4; do
    fetch_jars "$java_orb"
done
pom_hash="$(cat "$jacorb_home/lib.stamp")"

# --- JacORB test programs ---------------------------------------------------------------------
# Plain javac (no Maven build): quick, and the pom only lists jars.
sources_hash="$(cd "$peer_sources" && find src -name '*.java' | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)"
build_hash="$pom_hash $sources_hash"
if [ "$(cat "$jacorb_home/classes.stamp" 2>/dev/null)" != "$build_hash" ]; then
    echo "install-peers: compiling JacORB test programs"
    rm -rf "$jacorb_home/classes" "$jacorb_home/classes.stamp"
    mkdir -p "$jacorb_home/classes"
    find "$peer_sources/src" -name '*.java' -print0 \
        | xargs -0 javac -encoding UTF-8 -nowarn -d "$jacorb_home/classes" -cp "$jacorb_home/lib/*"
    echo "$build_hash" > "$jacorb_home/classes.stamp"
else
    # Up to date by content; renew the time too, as tests/peers/jacorb.py compares mtimes.
    touch "$jacorb_home/classes.stamp"
fi

echo "install-peers: ready (Java ORBs in .peers/, Combat from tcl-combat)"
