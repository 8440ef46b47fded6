"""`pycdr serve` of conformance/echo.idl's EchoAll::Echo as a process, for tests of real clients
against it."""

import contextlib
import os
import subprocess
import sys
import tempfile

from orb_echo_values import ECHO_ALL_IDL, ECHO_INTERFACE

# The console script installed beside the interpreter (pip install -e .).
PYCDR = [os.path.join(os.path.dirname(sys.executable), "pycdr")]


def start_server(argv, **popen):
    """Popen ``argv`` with stdout a pipe (the test reads its IOR lines) and stderr a temporary
    file: a server logs a line for each bad message it gets, and an unread stderr pipe fills
    (64 KiB) under a fuzz run and stops the server mid-write. ``said(process)`` reads it."""
    log = tempfile.TemporaryFile(mode="w+")
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True, **popen)
    process.log = log
    return process


def said(process) -> str:
    """What a process started by `start_server` wrote to stderr so far."""
    process.log.flush()
    process.log.seek(0)
    return process.log.read()


def stop_server(process):
    if process.poll() is None:
        process.kill()
    process.wait(10)
    process.log.close()


@contextlib.contextmanager
def serving_echo(*options):
    """Run `pycdr serve` of EchoAll::Echo with more `options`; yield (process, IOR, corbaloc URL)
    once it prints them. Killed at the end if still running."""
    process = start_server(PYCDR + ["serve", ECHO_ALL_IDL, "--interface", ECHO_INTERFACE,
                                    *options])
    try:
        ior = process.stdout.readline().strip()
        url = process.stdout.readline().strip()
        assert ior.startswith("IOR:") and url.startswith("corbaloc:iiop:1.2@127.0.0.1:"), \
            said(process) if process.poll() is not None else ior
        yield process, ior, url
    finally:
        stop_server(process)


@contextlib.contextmanager
def serving_tls(idl, interface, cert, key, *options):
    """Run `pycdr serve IDL --interface INTERFACE --tls CERT KEY` with more `options` (TLS only
    unless --also-plain); yield (process, IOR) once it prints the IOR. Killed at the end."""
    process = start_server(PYCDR + ["serve", str(idl), "--interface", interface,
                                    "--tls", str(cert), str(key), *map(str, options)])
    try:
        ior = process.stdout.readline().strip()
        assert ior.startswith("IOR:"), said(process) if process.poll() is not None else ior
        yield process, ior
    finally:
        stop_server(process)
