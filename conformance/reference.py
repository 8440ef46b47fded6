"""The default endpoint: the reference ORB, in-process, serving the
conformance Echo interface."""

from __future__ import annotations

import logging
from contextlib import contextmanager

from pycdr.orb import EchoServant, ServerLimits
from pycdr.orb.sync import SyncORB

from .echo import ECHO_INTERFACE, load_echo_module


@contextmanager
def reference_endpoint(tls=None):
    """Start the reference ORB on 127.0.0.1 (a free port) with an Echo servant
    under the persistent key ``Echo``; yield its IOR; stop it after.  With ``tls``
    (a server ssl.SSLContext) it listens for TLS only."""
    # The suite provokes protocol violations on purpose; the ORB's log of each
    # one is noise here (the verdicts say what happened).
    logging.getLogger("pycdr.orb").setLevel(logging.ERROR)
    module = load_echo_module()
    with SyncORB() as orb:
        # Replies over 64 KiB are fragmented (GIOP 1.2), so the suite's large
        # payloads come back in Fragments.
        server = orb.serve(EchoServant(module.interfaces[ECHO_INTERFACE]), "Echo",
                           limits=ServerLimits(fragment_size=64 * 1024),
                           tls=tls, plain=tls is None)
        yield server.ior
