"""Object references moved from one server to another.

A replay sends a recorded reference to the server that now stands where the
recorded one stood; a proxy hands its client references to itself in place of
the server's.  Both change the same places of an IOR: the host and port of
every IIOP profile, its TAG_ALTERNATE_IIOP_ADDRESS components, the TLS port of
TAG_SSL_SEC_TRANS and the addresses of TAG_TLS_SEC_TRANS (bare, or a CSIv2
mechanism's transport), and the object key where the new server knows the
object by another.  :class:`ReferenceRewriter` does it from a table of
addresses; everything else in the IOR (type id, other profiles, other
components, their byte orders) is kept as it was.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from ..codec.cdr import CDRReader, CDRWriter
from ..codec.ior import IOR, read_ior, write_ior
from .csiv2 import CSISecMechList, TLSSecTrans
from .iiop import AlternateIIOPAddress, IIOPProfile, SSLSecTrans, decode_profile, encode_profile

Address = tuple          # (host, port)
_MAX_REWRITTEN = 1024    # IORs whose rewriting a ReferenceRewriter remembers


@dataclass(frozen=True)
class Rewritten:
    """One reference changed: where it pointed and where it points now (``host:port``
    texts and object keys), for reports."""
    old_address: str
    new_address: str
    old_key: bytes
    new_key: bytes

    def to_json(self) -> dict:
        return {"from": self.old_address, "to": self.new_address,
                "from_key": self.old_key.hex(), "to_key": self.new_key.hex()}


def address_text(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class ReferenceRewriter:
    """``routes``: (host, port) -> (host, port), the addresses to move (host names
    compared without case); ``key_for``: (old key, old ``host:port``) -> the key the new
    server has for the object (the old one when it has the same), or None to keep keys.
    A profile whose own address is not routed is left whole, its components too: an
    object on another server keeps pointing there."""

    def __init__(self, routes: dict, key_for: Callable[[bytes, str], bytes] | None = None):
        self.routes = {(host.lower(), port): new for (host, port), new in routes.items()}
        self.key_for = key_for
        # What rewrite() gave for the IORs seen last (IOR -> (new IOR, changes), or None
        # when it left one whole), while the routes stay as they were then: a proxy or
        # a replay sees the same references again and again.  Without key_for only
        # (the keys it gives may change as it learns).
        self._rewritten: dict = {}
        self._rewritten_routes: dict = {}
        # What rewrite_encoded() gave for the encoded IORs seen last, in each byte order
        # (bytes -> (new bytes, new IOR, changes), or None), on the same terms.
        self._encoded = ({}, {})
        self._encoded_routes: dict = {}

    def route(self, host: str, port: int) -> Address | None:
        return self.routes.get((host.lower(), port))

    def rewrite(self, ior: IOR) -> tuple:
        """(the IOR with its routed profiles moved, [Rewritten, ...]); the same IOR object
        and an empty list when nothing in it is routed."""
        if ior is None or ior.is_nil:
            return ior, []
        known = self._rewritten
        if self.key_for is None:
            if self.routes != self._rewritten_routes:
                known.clear()
                self._rewritten_routes = dict(self.routes)
            try:
                seen = known.get(ior, False)
            except TypeError:               # (a profile's data that is not bytes)
                seen = known = None
            if seen is None:
                return ior, []
            if seen is not False:
                return seen[0], list(seen[1])
        else:
            known = None
        moved, changes = self._rewrite(ior)
        if known is not None:
            if len(known) >= _MAX_REWRITTEN:
                known.clear()
            known[ior] = None if moved is ior else (moved, tuple(changes))
        return moved, changes

    def rewrite_encoded(self, data: bytes, little: bool, ior: IOR | None = None):
        """``data``: the CDR of an IOR as it sits in a stream in that byte order (from its
        type id's length, 4-aligned; an IOR's CDR aligns to 4 at most, so its bytes are
        the same wherever it sits), ``ior`` the IOR they read as when the caller has it:
        (the CDR of the IOR with its routed profiles moved, that IOR, (Rewritten, ...)),
        or None when nothing in it is routed.  A repeated reference costs one look-up
        while the routes stay (without key_for)."""
        if self.key_for is not None:
            return self._encode(data, little, ior)
        if self.routes != self._encoded_routes:
            for known in self._encoded:
                known.clear()
            self._encoded_routes = dict(self.routes)
        known = self._encoded[little]
        seen = known.get(data, False)
        if seen is not False:
            return seen
        moved = self._encode(data, little, ior)
        if len(known) >= _MAX_REWRITTEN:
            known.clear()
        known[bytes(data)] = moved
        return moved

    def _encode(self, data, little: bool, ior: IOR | None):
        if ior is None:
            ior = read_ior(CDRReader(data, little=little))
        moved, changes = self.rewrite(ior)
        if not changes:
            return None
        w = CDRWriter(little=little)
        write_ior(w, moved)
        return w.getvalue(), moved, tuple(changes)

    def _rewrite(self, ior: IOR) -> tuple:
        changes, profiles, changed = [], [], False
        for tagged in ior.profiles:
            profile = decode_profile(tagged, lenient=True)
            moved = self._profile(profile, changes) if isinstance(profile, IIOPProfile) else None
            if moved is None:
                profiles.append(tagged)
            else:
                profiles.append(encode_profile(moved))
                changed = True
        if not changed:
            return ior, []
        return IOR(ior.type_id, tuple(profiles)), changes

    def _profile(self, p: IIOPProfile, changes: list) -> IIOPProfile | None:
        new = self.route(p.host, p.port)
        if new is None:
            return None
        old_text = address_text(p.host, p.port)
        key = p.object_key
        if self.key_for is not None:
            key = self.key_for(p.object_key, old_text)
        components = tuple(self._component(c, p.host) for c in p.components)
        changes.append(Rewritten(old_text, address_text(*new), p.object_key, key))
        return dataclasses.replace(p, host=new[0], port=new[1], object_key=key,
                                   components=components)

    def _component(self, c, profile_host: str):
        if isinstance(c, AlternateIIOPAddress):
            new = self.route(c.host, c.port)
            return c if new is None else dataclasses.replace(c, host=new[0], port=new[1])
        if isinstance(c, SSLSecTrans):
            # The TLS port on the profile's host: moved with the host's TLS route if there is
            # one (a port the proxy or target serves TLS on), else kept.
            new = self.route(profile_host, c.port)
            return c if new is None else dataclasses.replace(c, port=new[1])
        if isinstance(c, TLSSecTrans):
            return self._tls(c)
        if isinstance(c, CSISecMechList):
            mechanisms = tuple(
                dataclasses.replace(m, transport_mech=self._tls(m.transport_mech))
                if isinstance(m.transport_mech, TLSSecTrans) else m for m in c.mechanisms)
            return c if mechanisms == c.mechanisms else dataclasses.replace(c, mechanisms=mechanisms)
        return c

    def _tls(self, c: TLSSecTrans) -> TLSSecTrans:
        addresses = tuple(self.route(h, p) or (h, p) for h, p in c.addresses)
        return c if addresses == c.addresses else dataclasses.replace(c, addresses=addresses)
