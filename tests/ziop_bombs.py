"""ZIOP messages that inflate far beyond their size, made without ever holding
what they inflate to (the tests' hostile inputs for issue 25's budget)."""

import functools

from pycdr.conformance.rendering import ziop_bomb as _ziop_bomb
from pycdr.giop.messages import KeyAddr, Reply, Request, encode_message

# (cached: several tests send the same bomb)
ziop_bomb = functools.lru_cache(maxsize=None)(_ziop_bomb)


def echo_octets_prefix(request_id=1, n=0, version=(1, 2), little=False, response_flags=3,
                       key=b"Echo") -> bytes:
    """An echo_octets Request up to its octet sequence's length ``n``: ``n`` zero
    bytes after it make the request whole."""
    def body(w):
        w.write_ulong(n)
    return encode_message(Request(version=version, little=little, request_id=request_id,
                                  response_flags=response_flags, target=KeyAddr(key),
                                  operation="echo_octets"), write_body=body)


def echo_octets_bomb(n, request_id=1, **kw) -> bytes:
    """A ZIOP echo_octets Request of ``n`` octets (the issue's amplifier)."""
    return ziop_bomb(echo_octets_prefix(request_id, n, **kw), n)


def reply_bomb(request_id, zeros, version=(1, 2), little=False) -> bytes:
    return ziop_bomb(encode_message(Reply(version=version, little=little,
                                          request_id=request_id)), zeros)
