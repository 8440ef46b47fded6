"""The endpoint under test: where it listens, an object key that exists there,
and the highest GIOP version it advertises."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pycdr.corbaloc import Corbaloc, IIOPAddress, parse_object_url
from pycdr.errors import PycdrError
from pycdr.giop.messages import KeyAddr, LocateReply, LocateRequest, LocateStatus, encode_message
from pycdr.iiop import IIOPProfile, decode_profile
from pycdr.ior import IOR, ior_from_string

from .wire import Observation, Wire

# Keys an IIOP scanner asks for when all it has is host:port.
WELL_KNOWN_KEYS = (b"NameService", b"NamingService", b"INIT", b"RootPOA",
                   b"InterfaceRepository", b"TradingService")


class TargetError(PycdrError):
    pass


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    object_key: bytes
    version: tuple = (1, 2)          # the highest GIOP version the endpoint advertises
    ior: IOR | None = None           # the reference, when one was given (ProfileAddr cases)
    label: str = ""
    echo: bool = False               # serves the conformance Echo interface
    type_id: str = ""

    def describe(self) -> str:
        return self.label or f"{self.host}:{self.port}/{self.object_key!r}"


def _from_ior(ior: IOR, label: str) -> Target:
    for p in ior.profiles:
        prof = decode_profile(p)
        if isinstance(prof, IIOPProfile):
            return Target(prof.host, prof.port, prof.object_key, prof.version, ior=ior,
                          label=label, type_id=ior.type_id)
    raise TargetError("the IOR has no IIOP profile to test")


def resolve_target(text: str, *, timeout: float = 3.0) -> Target:
    """IOR:..., corbaloc:..., or host:port (then the well-known keys are tried
    with the LocateRequest every IIOP scanner sends)."""
    text = text.strip()
    if text[:4].upper() == "IOR:":
        return _from_ior(ior_from_string(text), text[:40] + "...")
    if text.lower().startswith(("corbaloc:", "corbaname:")):
        url = parse_object_url(text)
        loc = url if isinstance(url, Corbaloc) else url.corbaloc
        for addr in loc.addresses:
            if isinstance(addr, IIOPAddress):
                return Target(addr.host, addr.port, loc.key, addr.version, ior=loc.to_ior(),
                              label=text)
        raise TargetError(f"{text}: no iiop address to test")
    m = re.fullmatch(r"\[?([^\]]+?)\]?:(\d+)", text)
    if not m:
        raise TargetError(f"{text!r} is not an IOR, a corbaloc URL or host:port")
    host, port = m.group(1), int(m.group(2))
    if port > 65535:
        raise TargetError(f"{text!r}: port {port} is above 65535")
    for key in WELL_KNOWN_KEYS:
        if locate(host, port, key, timeout=timeout) == LocateStatus.OBJECT_HERE:
            return Target(host, port, key, label=text)
    # Nothing known there: cases that need an existing object will say so.
    return Target(host, port, WELL_KNOWN_KEYS[0], label=text)


def locate(host: str, port: int, key: bytes, *, version=(1, 2), timeout: float = 3.0):
    """The LocateReply status for ``key``, or None if no LocateReply came."""
    try:
        with Wire(host, port, connect_timeout=timeout) as wire:
            wire.send(encode_message(LocateRequest(version=version, request_id=1,
                                                   target=KeyAddr(key))))
            obs = wire.observe(Observation(), want=1, timeout=timeout)
    except OSError:
        return None
    for event in obs.messages:
        if isinstance(event.message, LocateReply):
            return LocateStatus(event.message.locate_status) \
                if event.message.locate_status in LocateStatus._value2member_map_ else None
    return None
