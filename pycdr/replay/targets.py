"""Where a replay's connections go: ``--target`` (IOR:..., corbaloc:..., host:port,
or OLDHOST:PORT=NEW for one recorded server's connections) and ``--key OLD=NEW``."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..addressing.corbaloc import Corbaloc, IIOPAddress, parse_object_url
from ..addressing.iiop import IIOPProfile, decode_profile
from ..codec.ior import ior_from_string
from ..errors import PycdrError
from ..orb.client import resolve_object_url
from ..orb.tls import DEFAULT_TLS, Endpoint, TLSOptions, choose_endpoint

_HOST_PORT = re.compile(r"\[?([^\]=/]+?)\]?:(\d{1,5})")


class ReplayError(PycdrError):
    """A replay that cannot start: a bad --target or --key, an unusable target."""


@dataclass(frozen=True)
class Target:
    """Where a recorded server's connections go, and the object key of the reference
    given (None for host:port: the recorded keys are sent unchanged)."""
    endpoint: Endpoint
    key: bytes | None = None
    text: str = ""

    def describe(self) -> str:
        return f"{self.endpoint.host}:{self.endpoint.port}" + \
            (" (TLS)" if self.endpoint.tls else "")


def parse_target(text: str, tls: TLSOptions = DEFAULT_TLS) -> Target:
    """IOR:..., corbaloc:..., corbaname:... (resolved through its naming service: a
    NamingError if it cannot be) or host:port (TLS as the reference says, or --tls)."""
    text = text.strip()
    if text.lower().startswith("corbaname:"):
        return _from_profiles(resolve_object_url(text, tls=tls).profiles, text, tls)
    try:
        if text[:4].upper() == "IOR:":
            return _from_profiles(ior_from_string(text).profiles, text, tls)
        if text.lower().startswith("corbaloc:"):
            url = parse_object_url(text)
            if not isinstance(url, Corbaloc) or url.is_rir:
                raise ReplayError(f"{text!r}: a corbaloc URL with an iiop address is needed")
            iiop = [a for a in url.addresses if isinstance(a, IIOPAddress)]
            if not iiop:
                raise ReplayError(f"{text!r}: no iiop address")
            return _from_profiles(Corbaloc(tuple(iiop), url.key).to_ior().profiles, text, tls)
    except ReplayError:
        raise
    except PycdrError as e:
        raise ReplayError(f"bad target {text[:60]!r}: {e}") from e
    host, port = parse_host_port(text, "target")
    return Target(Endpoint(host, port, tls.force, "--tls" if tls.force else "host:port"),
                  None, text)


def _from_profiles(profiles, text: str, tls: TLSOptions) -> Target:
    for p in profiles:
        prof = decode_profile(p, lenient=True)
        if isinstance(prof, IIOPProfile):
            return Target(choose_endpoint(prof, tls), prof.object_key, text)
    raise ReplayError(f"{text[:60]!r}: the reference has no IIOP profile")


def parse_host_port(text: str, what: str) -> tuple:
    m = _HOST_PORT.fullmatch(text.strip())
    if not m or int(m.group(2)) > 65535:
        raise ReplayError(f"bad {what} {text!r}: expected IOR:..., corbaloc:... or host:port"
                          if what == "target" else f"bad {what} {text!r}: expected host:port")
    return m.group(1), int(m.group(2))


def parse_targets(texts, tls: TLSOptions = DEFAULT_TLS) -> tuple:
    """(default target or None, {recorded server "host:port": target}) from --target
    values: ``NEW`` or ``OLDHOST:PORT=NEW``."""
    default, mapped = None, {}
    for text in texts:
        old, sep, new = text.partition("=")
        if sep and _HOST_PORT.fullmatch(old.strip()):
            host, port = parse_host_port(old, "recorded server")
            mapped[_endpoint_text(host, port)] = parse_target(new, tls)
        elif default is not None:
            raise ReplayError("several --target without OLDHOST:PORT=: name the recorded "
                              "server of each (OLDHOST:PORT=NEW)")
        else:
            default = parse_target(text, tls)
    return default, mapped


def parse_key(text: str) -> tuple:
    """--key OLD=NEW: each side text (corbaloc %-escapes allowed) or hex: 0x..."""
    old, sep, new = text.partition("=")
    if not sep or not old or not new:
        raise ReplayError(f"bad --key {text!r}: expected OLD=NEW")
    return _key_bytes(old), _key_bytes(new)


def _key_bytes(text: str) -> bytes:
    if text.startswith("0x"):
        try:
            return bytes.fromhex(text[2:])
        except ValueError:
            raise ReplayError(f"bad key {text!r}: not hex after 0x") from None
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "%":
            try:
                out.append(int(text[i + 1:i + 3], 16))
            except ValueError:
                raise ReplayError(f"bad key {text!r}: % must be followed by two hex digits") \
                    from None
            i += 3
        else:
            out += text[i].encode("utf-8")
            i += 1
    return bytes(out)


def _endpoint_text(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
