"""`pycdr serve` of conformance/echo.idl's EchoAll::Echo as a process, for tests of real clients
against it."""

import contextlib
import os
import subprocess
import sys

from orb_echo_values import ECHO_ALL_IDL, ECHO_INTERFACE

# The console script installed beside the interpreter (pip install -e .).
PYCDR = [os.path.join(os.path.dirname(sys.executable), "pycdr")]


@contextlib.contextmanager
def serving_echo(*options):
    """Run `pycdr serve` of EchoAll::Echo with more `options`; yield (process, IOR, corbaloc URL)
    once it prints them. Killed at the end if still running."""
    process = subprocess.Popen(PYCDR + ["serve", ECHO_ALL_IDL, "--interface", ECHO_INTERFACE,
                                        *options],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ior = process.stdout.readline().strip()
        url = process.stdout.readline().strip()
        assert ior.startswith("IOR:") and url.startswith("corbaloc:iiop:1.2@127.0.0.1:"), \
            process.stderr.read() if process.poll() is not None else ior
        yield process, ior, url
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)


@contextlib.contextmanager
def serving_tls(idl, interface, cert, key, *options):
    """Run `pycdr serve IDL --interface INTERFACE --tls CERT KEY` with more `options` (TLS only
    unless --also-plain); yield (process, IOR) once it prints the IOR. Killed at the end."""
    process = subprocess.Popen(PYCDR + ["serve", str(idl), "--interface", interface,
                                        "--tls", str(cert), str(key), *map(str, options)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ior = process.stdout.readline().strip()
        assert ior.startswith("IOR:"), process.stderr.read() if process.poll() is not None else ior
        yield process, ior
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)
