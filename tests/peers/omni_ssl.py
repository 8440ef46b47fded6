"""omniORB C++ on its SSL transport (Debian's libomnisslTP4): tests/peers/omni_ssl/echo_server.cc,
built once per test session from tests/peers/echo.idl with Debian's omniidl C++ back end."""

import os
import shutil
import subprocess
import tempfile

from .process import (LOOPBACK, PeerError, PeerNotInstalled, PeerProcess, RunningPeer,
                      start_server_with_retries)

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "omni_ssl", "echo_server.cc")
CLIENT_SOURCE = os.path.join(os.path.dirname(SOURCE), "echo_client.cc")
ECHO_IDL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "echo.idl")
# Debian's omniidl has the C++ back end; the one in the venv (omniORBpy's) has not.
OMNIIDL = "/usr/bin/omniidl"
HEADER = "/usr/include/omniORB4/sslContext.h"


def build_echo_server(folder):
    """Compile the server into ``folder``; its path.  PeerNotInstalled without the compiler,
    omniORB's headers or the C++ IDL compiler (.ci/install-peers.sh installs them)."""
    return _build(folder, SOURCE, "echo_server")


def build_echo_client(folder):
    """Compile the client (echo_client.cc) into ``folder``; its path (as build_echo_server)."""
    return _build(folder, CLIENT_SOURCE, "echo_client")


def _build(folder, source, program):
    needs = (("g++", shutil.which("g++")), ("omniidl", os.path.exists(OMNIIDL)),
             ("libomniorb4-dev", os.path.exists(HEADER)))
    missing = [name for name, there in needs if not there]
    if missing:
        raise PeerNotInstalled(f"omniORB C++ SSL peer needs {', '.join(missing)}: "
                               "run .ci/install-peers.sh")
    shutil.copy(ECHO_IDL, folder)
    for argv in ([OMNIIDL, "-bcxx", "echo.idl"],
                 ["g++", "-O1", "-o", program, source, "echoSK.cc", "-I.",
                  f"-I{os.path.dirname(SOURCE)}", "-lomniORB4",
                  "-lomnithread", "-lomnisslTP4", "-lssl", "-lcrypto", "-lpthread"]):
        done = subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise PeerError(f"building the omniORB SSL peer failed: {' '.join(argv)}\n"
                            f"{done.stderr}")
    return os.path.join(folder, program)


def run_omni_ssl_client(binary, ior, *, ca, cert, key, timeout=60):
    """Run the omniORB SSL echo client against ``ior`` (TLS only) with its certificate
    ``cert``/``key`` (omniORB 4.2's SSL transport does not start without one; it is sent when
    the server asks).  Returns {operation: (status, text)} of its calls."""
    with tempfile.TemporaryDirectory(prefix="pycdr-omni-ssl-client-") as workdir:
        key_file = os.path.join(workdir, "client-with-key.pem")
        with open(key_file, "w") as out:     # omniORB wants certificate and key in one file
            for part in (cert, key):
                with open(part) as f:
                    out.write(f.read())
        done = subprocess.run([binary, str(ca), key_file, ior], capture_output=True, text=True,
                              timeout=timeout)
    calls = {}
    for line in done.stdout.splitlines():
        op, _, rest = line.partition(" ")
        status, _, text = rest.partition(" ")
        calls[op] = (status, text)
    if done.returncode not in (0, 1):
        raise PeerError(f"omniORB SSL client exited {done.returncode}: {done.stderr[-2000:]}")
    return calls


def start_omni_ssl_server(binary, *, ca, cert, key, require_client_cert=False, port=None,
                          timeout=30):
    """The omniORB SSL echo server, TLS only (giop:ssl endpoint) on 127.0.0.1."""
    workdir = tempfile.mkdtemp(prefix="pycdr-omni-ssl-")
    key_file = os.path.join(workdir, "server-with-key.pem")
    with open(key_file, "w") as out:        # omniORB wants certificate and key in one file
        for part in (cert, key):
            with open(part) as f:
                out.write(f.read())

    def start_once(chosen_port):
        process = PeerProcess("omniORB-ssl", [
            binary, str(ca), key_file, "1" if require_client_cert else "0",
            "-ORBendPoint", f"giop:ssl:{LOOPBACK}:{chosen_port}"])
        try:
            process.wait_for_line(lambda line: line == "READY", timeout)
        except PeerError:
            process.stop()
            raise
        ior = next(line for line in process.stdout_text().splitlines() if line.startswith("IOR:"))
        return RunningPeer(process, ior=ior, host=LOOPBACK, port=chosen_port, object_key=b"",
                           extra_dirs=[workdir])
    return start_server_with_retries(start_once, port)
