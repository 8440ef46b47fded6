"""The object adapter: object keys to servants, and keys forwarded elsewhere.

Persistent keys are names the caller chooses (``b"Echo"``, so that
``corbaloc::host:port/Echo`` works across restarts); transient keys are
generated and unique to this adapter's lifetime.  Demultiplexing is one dict
lookup per request.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass

from ..codec.ior import IOR
from ..addressing.objectkey import PYCDR_TRANSIENT_MARKER as TRANSIENT_MARKER
from .servant import Servant


@dataclass(frozen=True)
class Forward:
    ior: IOR
    permanent: bool = False


class ObjectAdapter:
    def __init__(self):
        self._servants: dict[bytes, Servant] = {}
        self._forwards: dict[bytes, Forward] = {}
        self._adapter_id = os.urandom(8)
        self._counter = itertools.count(1)
        # The servers' fast path (dispatch.RequestDispatch._learn_direct): {key:
        # {operation: entry}} for the operations a server has found it may serve
        # in one C call; a key's entries go when its servant does.
        self.direct: dict[bytes, dict] = {}

    def activate(self, servant: Servant, name: str | bytes | None = None) -> bytes:
        """Register ``servant``; returns its object key (``name`` encoded as
        ASCII/bytes for a persistent key, else a new transient key)."""
        if name is None:
            # pycdr.addressing.objectkey describes this layout to readers of the key.
            key = TRANSIENT_MARKER + self._adapter_id + next(self._counter).to_bytes(4, "big")
        else:
            key = name.encode("ascii") if isinstance(name, str) else bytes(name)
            if not key:
                raise ValueError("an object key may not be empty")
        if key in self._servants or key in self._forwards:
            raise ValueError(f"object key {key!r} is already in use")
        self._servants[key] = servant
        return key

    def deactivate(self, key: bytes) -> None:
        self._servants.pop(key, None)
        self.direct.pop(key, None)

    def forward(self, key: str | bytes, ior: IOR, permanent: bool = False) -> bytes:
        """Answer requests for ``key`` with LOCATION_FORWARD(_PERM) to ``ior``."""
        key = key.encode("ascii") if isinstance(key, str) else bytes(key)
        self._servants.pop(key, None)
        self.direct.pop(key, None)
        self._forwards[key] = Forward(ior, permanent)
        return key

    def servant(self, key: bytes) -> Servant | None:
        return self._servants.get(key)

    def forwarded(self, key: bytes) -> Forward | None:
        return self._forwards.get(key)

    def keys(self) -> list:
        return list(self._servants)
