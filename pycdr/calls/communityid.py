"""The Community ID v1 flow hash (corelight/community-id-spec), for TCP and UDP flows.

The same string for both directions of a flow, whichever sensor saw it: rows of
different captures and tools (Zeek's ``community_id``, ECS ``network.community_id``)
join on it.  SHA-1 over: the seed (2 bytes, network order), the two addresses
and the protocol number, one zero byte of padding, the two ports (2 bytes each),
the endpoint with the smaller (address, port) first; ``1:`` then the digest in
base64.
"""

from __future__ import annotations

import base64
import hashlib
import struct

TCP = 6
UDP = 17
_PORTS = struct.Struct(">HH")
_SEED = struct.Struct(">H")


def community_id(src: bytes, sport: int, dst: bytes, dport: int, proto: int = TCP,
                 seed: int = 0) -> str:
    """The ID of a flow; addresses as packed bytes (4 for IPv4, 16 for IPv6)."""
    if len(src) != len(dst) or len(src) not in (4, 16):
        raise ValueError("addresses must both be IPv4 (4 bytes) or both IPv6 (16 bytes)")
    if (dst, dport) < (src, sport):
        src, sport, dst, dport = dst, dport, src, sport
    digest = hashlib.sha1(_SEED.pack(seed) + src + dst + bytes((proto, 0))
                          + _PORTS.pack(sport, dport)).digest()
    return "1:" + base64.b64encode(digest).decode("ascii")
