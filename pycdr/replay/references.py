"""Recorded object references in a request's arguments, sent to the replay's targets.

A recorded call may pass a reference to an object of a recorded server: an echo of
a reference, a callback or listener registered with another object, a ``bind`` in a
naming service.  Sent as recorded, it names a host and port that no longer serve
it, and a comparison that maps the recorded key to the target's would judge an
echo of it different.  With the IDL, each reference inside the arguments (found by
their TypeCodes, inside ``any`` values by the TypeCodes they carry) that points at
a recorded server with a target is moved there (:mod:`pycdr.addressing.rewrite`)
with the replay's key mapping; references to other hosts are kept as recorded.
"""

from __future__ import annotations

from ..addressing.rewrite import ReferenceRewriter
from ..codec.marshal import read_value
from ..codec.references import map_references, may_hold_reference
from ..errors import PycdrError
from .compare import KeyMap
from .targets import parse_host_port


class ArgumentReferences:
    """``arguments``: operation -> (name, TypeCode, ...) of its in and inout parameters
    (:class:`pycdr.capture.giop.IdlBodyDecoder`'s); ``keys``: the replay's key map.
    :meth:`route` adds a recorded server once its target is known."""

    def __init__(self, arguments: dict, keys: KeyMap):
        self.arguments = arguments
        self.keys = keys
        # routes (recorded host, port) -> (target host, port), added by route()
        self._rewriter = ReferenceRewriter({}, key_for=keys.target_key)
        self._holds: dict = {}              # operation -> whether its arguments may hold one

    def route(self, server: str, host: str, port: int) -> None:
        """References to ``server`` (a recorded server's ``host:port``) go to host:port."""
        old_host, old_port = parse_host_port(server, "recorded server")
        self._rewriter.routes[(old_host.lower(), old_port)] = (host, port)

    def holds(self, operation: str) -> bool:
        """Whether a request of ``operation`` may carry a reference in its arguments."""
        known = self._holds.get(operation)
        if known is None:
            items = self.arguments.get(operation) or ()
            known = self._holds[operation] = any(may_hold_reference(tc) for _, tc, *_ in items)
        return known

    def rewrite(self, msg) -> tuple:
        """(the arguments of Request ``msg`` with the references moved, [{"path", "from",
        "to", "from_key", "to_key"}, ...]); (None, []) when nothing moved or the body does
        not read by the IDL (it is then sent as recorded, and the comparison says so)."""
        if not self._rewriter.routes or not self.holds(msg.operation):
            return None, []
        items = self.arguments[msg.operation]
        try:
            r = msg.body_reader()
            values = [read_value(r, tc) for _, tc, *_ in items]
        except PycdrError:
            return None, []
        changes: list = []

        def move(reference, path):
            moved, rewritten = self._rewriter.rewrite(reference)
            changes.extend({"path": path, **c.to_json()} for c in rewritten)
            return moved
        values = [map_references(tc, value, move, f"args.{name}")
                  for (name, tc, *_), value in zip(items, values)]
        return (values, changes) if changes else (None, [])
