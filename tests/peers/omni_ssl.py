"""omniORB C++ on its SSL transport (Debian's libomnisslTP4): tests/peers/omni_ssl/echo_server.cc,
built once per test session from tests/peers/echo.idl with Debian's omniidl C++ back end."""

import os
import shutil
import subprocess
import tempfile

from .process import (LOOPBACK, PeerError, PeerNotInstalled, PeerProcess, RunningPeer,
                      start_server_with_retries)

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "omni_ssl", "echo_server.cc")
ECHO_IDL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "echo.idl")
# Debian's omniidl has the C++ back end; the one in the venv (omniORBpy's) has not.
OMNIIDL = "/usr/bin/omniidl"
HEADER = "/usr/include/omniORB4/sslContext.h"


def build_echo_server(folder):
    """Compile the server into ``folder``; its path.  PeerNotInstalled without the compiler,
    omniORB's headers or the C++ IDL compiler (.ci/install-peers.sh installs them)."""
    needs = (("g++", shutil.which("g++")), ("omniidl", os.path.exists(OMNIIDL)),
             ("libomniorb4-dev", os.path.exists(HEADER)))
    missing = [name for name, there in needs if not there]
    if missing:
        raise PeerNotInstalled(f"omniORB C++ SSL peer needs {', '.join(missing)}: "
                               "run .ci/install-peers.sh")
    shutil.copy(ECHO_IDL, folder)
    for argv in ([OMNIIDL, "-bcxx", "echo.idl"],
                 ["g++", "-O1", "-o", "echo_server", SOURCE, "echoSK.cc", "-I.",
                  f"-I{os.path.dirname(SOURCE)}", "-lomniORB4",
                  "-lomnithread", "-lomnisslTP4", "-lssl", "-lcrypto", "-lpthread"]):
        done = subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise PeerError(f"building the omniORB SSL peer failed: {' '.join(argv)}\n"
                            f"{done.stderr}")
    return os.path.join(folder, "echo_server")


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
