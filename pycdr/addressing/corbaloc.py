"""corbaloc and corbaname URLs (CORBA 3.x Part 2, 7.6.10 / Naming Service 2.5).

    corbaloc:<obj_addr>[,<obj_addr>]*["/"<key_string>]
    obj_addr   = "rir:" | [ "iiop" | "ssliop" ] ":" [ <major>.<minor> "@" ] <host> [ ":" <port> ]
                 | <other protocol> ":" <anything up to "," or "/">
    host       = DNS name | IPv4 address | "[" IPv6 address "]"
    corbaname:<obj_addr>[,<obj_addr>]*[/<key_string>]["#"<string_name>]

The port defaults to 2809 and the IIOP version to 1.0.  The key string is
%-escaped octets; without it (``corbaloc::host``, the form ORBs take as a
default initial-reference prefix) the object key is empty.  ``rir:`` names an
initial reference (``NameService`` when the key is absent or empty) and cannot
be mixed with other addresses.  corbaname's key
defaults to ``NameService``; resolving the name is the ORB's job.

``ssliop:`` (the form TAO and JacORB print) is an IIOP address whose port speaks TLS; its
IOR is what a TLS-only server publishes: port 0 in the profile and the TLS port in a
TAG_SSL_SEC_TRANS component (so the profile is IIOP 1.1 at least, the first to carry
components).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ObjectURLError
from ..codec.ior import IOR, ior_from_string
from .csiv2 import CONFIDENTIALITY, ESTABLISH_TRUST_IN_TARGET, INTEGRITY
from .iiop import IIOPProfile, SSLSecTrans, make_ior

DEFAULT_PORT = 2809
DEFAULT_IIOP_VERSION = (1, 0)
# Characters a key string may hold unescaped (RFC 2396 "unreserved" and
# "reserved" except "/", which ends the address list, and "%").
_KEY_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                 ";/:?@&=+$,-_.!~*'()")


@dataclass(frozen=True)
class IIOPAddress:
    host: str
    port: int = DEFAULT_PORT
    version: tuple = DEFAULT_IIOP_VERSION
    tls: bool = False              # an ssliop: address

    def to_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        protocol = "ssliop" if self.tls else "iiop"
        return f"{protocol}:{self.version[0]}.{self.version[1]}@{host}:{self.port}"

    def to_profile(self, key: bytes) -> IIOPProfile:
        if not self.tls:
            return IIOPProfile(self.version, self.host, self.port, key)
        ssl = SSLSecTrans(INTEGRITY | CONFIDENTIALITY | ESTABLISH_TRUST_IN_TARGET,
                          INTEGRITY | CONFIDENTIALITY, self.port)
        return IIOPProfile(max(self.version, (1, 1)), self.host, 0, key, (ssl,))


@dataclass(frozen=True)
class RIRAddress:
    def to_url(self) -> str:
        return "rir:"


@dataclass(frozen=True)
class OtherAddress:
    """A protocol this parser does not know (ssliop, uiop, ...), kept as text."""
    protocol: str
    address: str

    def to_url(self) -> str:
        return f"{self.protocol}:{self.address}"


@dataclass(frozen=True)
class Corbaloc:
    addresses: tuple
    key: bytes

    @property
    def is_rir(self) -> bool:
        return isinstance(self.addresses[0], RIRAddress)

    def to_url(self) -> str:
        return "corbaloc:" + ",".join(a.to_url() for a in self.addresses) + "/" + \
            escape_key(self.key)

    def to_ior(self, type_id: str = "") -> IOR:
        """An IOR with one IIOP profile per IIOP address (what an ORB builds
        before it asks the server)."""
        profiles = [a.to_profile(self.key) for a in self.addresses if isinstance(a, IIOPAddress)]
        if not profiles:
            raise ObjectURLError("no IIOP address to build an IOR from", 0)
        return make_ior(type_id, profiles)


@dataclass(frozen=True)
class Corbaname:
    corbaloc: Corbaloc
    string_name: str             # the unescaped stringified name ("" = the context itself)

    @property
    def name(self) -> list:
        """The CosNaming name: [(id, kind), ...]."""
        return parse_string_name(self.string_name)


def escape_key(key: bytes) -> str:
    return "".join(chr(b) if chr(b) in _KEY_CHARS else f"%{b:02x}" for b in key)


def unescape(text: str, base: int) -> bytes:
    """%-unescape ``text`` (which starts at index ``base`` of the URL)."""
    out = bytearray()
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "%":
            pair = text[i + 1:i + 3]
            if len(pair) != 2 or any(c not in "0123456789abcdefABCDEF" for c in pair):
                raise ObjectURLError(f"bad %-escape {text[i:i + 3]!r}", base + i)
            out.append(int(pair, 16))
            i += 3
            continue
        if ord(ch) > 127:
            raise ObjectURLError(f"{ch!r} must be %-escaped", base + i)
        out.append(ord(ch))
        i += 1
    return bytes(out)


def parse_object_url(text: str):
    """An IOR, Corbaloc or Corbaname for a stringified object reference."""
    text = text.strip()
    scheme = text.split(":", 1)[0].lower()
    if scheme == "ior":
        return ior_from_string(text)
    if scheme == "corbaloc":
        return parse_corbaloc(text)
    if scheme == "corbaname":
        return parse_corbaname(text)
    raise ObjectURLError(f"unknown scheme {scheme!r} (expected IOR:, corbaloc: or corbaname:)", 0)


def parse_corbaloc(text: str) -> Corbaloc:
    if text[:9].lower() != "corbaloc:":
        raise ObjectURLError("a corbaloc URL starts with 'corbaloc:'", 0)
    slash = _find_key_slash(text, 9)
    addr_end = len(text) if slash < 0 else slash
    addresses = _parse_addresses(text, 9, addr_end)
    key = unescape(text[slash + 1:], slash + 1) if slash >= 0 else b""
    if isinstance(addresses[0], RIRAddress) and not key:
        key = b"NameService"
    return Corbaloc(addresses, key)


def parse_corbaname(text: str) -> Corbaname:
    if text[:10].lower() != "corbaname:":
        raise ObjectURLError("a corbaname URL starts with 'corbaname:'", 0)
    hash_at = text.find("#")
    loc_end = len(text) if hash_at < 0 else hash_at
    slash = _find_key_slash(text[:loc_end], 10)
    addr_end = loc_end if slash < 0 else slash
    addresses = _parse_addresses(text, 10, addr_end)
    key = unescape(text[slash + 1:loc_end], slash + 1) if slash >= 0 else b""
    if not key:
        key = b"NameService"
    name = ""
    if hash_at >= 0:
        name = unescape(text[hash_at + 1:], hash_at + 1).decode("utf-8", "replace")
    return Corbaname(Corbaloc(addresses, key), name)


def _find_key_slash(text: str, start: int) -> int:
    """The '/' that ends the address list ('/' cannot occur in an address;
    IPv6 literals are bracketed)."""
    return text.find("/", start)


def _parse_addresses(text: str, start: int, end: int) -> tuple:
    if start == end:
        raise ObjectURLError("no address", start)
    addresses = []
    pos = start
    for part in text[start:end].split(","):
        addresses.append(_parse_address(part, pos))
        pos += len(part) + 1
    if any(isinstance(a, RIRAddress) for a in addresses) and len(addresses) > 1:
        raise ObjectURLError("'rir:' cannot be combined with other addresses", start)
    return tuple(addresses)


def _parse_address(part: str, base: int):
    colon = part.find(":")
    if colon < 0:
        raise ObjectURLError(f"address {part!r} has no protocol (use ':' or 'iiop:')", base)
    protocol = part[:colon].lower()
    rest = part[colon + 1:]
    if protocol == "rir":
        if rest:
            raise ObjectURLError("'rir:' takes no address", base + colon + 1)
        return RIRAddress()
    if protocol not in ("", "iiop", "ssliop"):
        return OtherAddress(protocol, rest)
    rest_base = base + colon + 1
    version = DEFAULT_IIOP_VERSION
    at = rest.find("@")
    if at >= 0:
        v = rest[:at]
        major, dot, minor = v.partition(".")
        if not (dot and major.isdigit() and minor.isdigit()):
            raise ObjectURLError(f"bad IIOP version {v!r} (expected <major>.<minor>)", rest_base)
        version = (int(major), int(minor))
        if version[0] != 1 or version[1] > 255:
            raise ObjectURLError(f"IIOP version {v} does not exist", rest_base)
        rest = rest[at + 1:]
        rest_base += at + 1
    if rest.startswith("["):
        close = rest.find("]")
        if close < 0:
            raise ObjectURLError("IPv6 address without its closing ']'", rest_base)
        host = rest[1:close]
        if not host or any(c not in "0123456789abcdefABCDEF:." for c in host):
            raise ObjectURLError(f"bad IPv6 address {host!r}", rest_base + 1)
        tail = rest[close + 1:]
        tail_base = rest_base + close + 1
    else:
        host, sep, port_text = rest.partition(":")
        tail = sep + port_text
        tail_base = rest_base + len(host)
        for i, ch in enumerate(host):
            if not (ch.isascii() and (ch.isalnum() or ch in "-._")):
                raise ObjectURLError(f"{ch!r} is not allowed in a host name", rest_base + i)
    if not host:
        raise ObjectURLError("empty host", rest_base)
    port = DEFAULT_PORT
    if tail:
        if not tail.startswith(":"):
            raise ObjectURLError(f"unexpected {tail[0]!r} after the host", tail_base)
        port_text = tail[1:]
        if port_text:
            if not port_text.isdigit() or not port_text.isascii():
                raise ObjectURLError(f"bad port {port_text!r}", tail_base + 1)
            port = int(port_text)
            if port > 65535:
                raise ObjectURLError(f"port {port} is above 65535", tail_base + 1)
    return IIOPAddress(host, port, version, protocol == "ssliop")


def parse_string_name(text: str) -> list:
    """A CosNaming stringified name ("a.kind/b") as [(id, kind), ...];
    backslash escapes '/', '.' and '\\\\'."""
    if not text:
        return []
    components = []
    current = [[], []]      # id chars, kind chars
    part = 0
    seen_dot = False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            if i + 1 >= len(text):
                raise ObjectURLError("name ends with a lone backslash", i)
            current[part].append(text[i + 1])
            i += 2
            continue
        if ch == "/":
            components.append(_name_component(current, seen_dot, i))
            current, part, seen_dot = [[], []], 0, False
        elif ch == "." and part == 0:
            part, seen_dot = 1, True
        elif ch == ".":
            raise ObjectURLError("a second unescaped '.' in one name component", i)
        else:
            current[part].append(ch)
        i += 1
    components.append(_name_component(current, seen_dot, len(text)))
    return components


def _name_component(current, seen_dot, pos):
    ident, kind = "".join(current[0]), "".join(current[1])
    if not ident and not kind and not seen_dot:
        raise ObjectURLError("empty name component", pos)
    return ident, kind


def format_string_name(components) -> str:
    """The stringified form of a CosNaming name [(id, kind), ...] (what
    NamingContextExt::to_string gives; parse_string_name reads it back):
    '/', '.' and '\\\\' escaped with a backslash, "id.kind", "id" when the kind
    is empty, "." for the component whose id and kind are both empty."""
    def escaped(text):
        return "".join("\\" + ch if ch in "/.\\" else ch for ch in text)

    parts = []
    for ident, kind in components:
        if not ident and not kind:
            parts.append(".")
        else:
            parts.append(escaped(ident) + ("." + escaped(kind) if kind else ""))
    return "/".join(parts)
