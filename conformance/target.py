"""The endpoint under test: where it listens, an object key that exists there,
and the highest GIOP version it advertises."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pycdr.addressing.corbaloc import Corbaloc, IIOPAddress, parse_object_url
from pycdr.errors import PycdrError
from pycdr.giop.messages import KeyAddr, LocateReply, LocateRequest, LocateStatus, encode_message
from pycdr.addressing.iiop import IIOPProfile, decode_profile
from pycdr.codec.ior import IOR, ior_from_string
from pycdr.orb.client import resolve_object_url
from pycdr.orb.tls import DEFAULT_TLS, TLSOptions, choose_endpoint

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
    tls: TLSOptions | None = None    # the connections speak TLS with these options

    def wire(self, **options) -> Wire:
        """A new connection to the endpoint (TLS when the target speaks it)."""
        return Wire(self.host, self.port, tls=self.tls, **options)

    def describe(self) -> str:
        return self.label or f"{self.host}:{self.port}/{self.object_key!r}"


def _from_ior(ior: IOR, label: str, tls: TLSOptions, type_id: str = "") -> Target:
    for p in ior.profiles:
        prof = decode_profile(p)
        if isinstance(prof, IIOPProfile):
            endpoint = choose_endpoint(prof, tls)
            return Target(endpoint.host, endpoint.port, prof.object_key, prof.version, ior=ior,
                          label=label, type_id=type_id, tls=tls if endpoint.tls else None)
    raise TargetError("the IOR has no IIOP profile to test")


def resolve_target(text: str, *, timeout: float = 3.0, tls: TLSOptions = DEFAULT_TLS) -> Target:
    """IOR:..., corbaloc:..., corbaname:... (resolved through its naming service), or
    host:port (then the well-known keys are tried
    with the LocateRequest every IIOP scanner sends).  TLS when the reference says so
    (TAG_SSL_SEC_TRANS, TAG_TLS_SEC_TRANS, corbaloc:ssliop:) or ``tls.force``."""
    text = text.strip()
    if text[:4].upper() == "IOR:":
        ior = ior_from_string(text)
        return _from_ior(ior, text[:40] + "...", tls, ior.type_id)
    if text.lower().startswith("corbaname:"):
        # the object the naming service has under the name (NamingError if none)
        ior = resolve_object_url(text, timeout=timeout, connect_timeout=timeout, tls=tls)
        return _from_ior(ior, text, tls, ior.type_id)
    if text.lower().startswith("corbaloc:"):
        loc = parse_object_url(text)
        for addr in loc.addresses:
            if isinstance(addr, IIOPAddress):
                return _from_ior(Corbaloc((addr,), loc.key).to_ior(), text, tls)
        raise TargetError(f"{text}: no iiop address to test")
    m = re.fullmatch(r"\[?([^\]]+?)\]?:(\d+)", text)
    if not m:
        raise TargetError(f"{text!r} is not an IOR, a corbaloc URL or host:port")
    host, port = m.group(1), int(m.group(2))
    if port > 65535:
        raise TargetError(f"{text!r}: port {port} is above 65535")
    speaks = tls if tls.force else None
    for key in WELL_KNOWN_KEYS:
        if locate(host, port, key, timeout=timeout, tls=speaks) == LocateStatus.OBJECT_HERE:
            return Target(host, port, key, label=text, tls=speaks)
    # Nothing known there: cases that need an existing object will say so.
    return Target(host, port, WELL_KNOWN_KEYS[0], label=text, tls=speaks)


def locate(host: str, port: int, key: bytes, *, version=(1, 2), timeout: float = 3.0,
           tls: TLSOptions | None = None):
    """The LocateReply status for ``key``, or None if no LocateReply came."""
    try:
        with Wire(host, port, connect_timeout=timeout, tls=tls) as wire:
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
