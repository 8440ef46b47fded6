"""Arguments and results of calls as typed JSON (:func:`pycdr.orb.jsonvalues.to_json`'s
forms), decoded with IDL operation descriptions.

An operation is looked up by the target's interface when the tracker knows it (so two
interfaces with an operation of the same name and different signatures decode each
their own way), else by its name: the operations every object has (``_is_a``,
``_non_existent``, ...) and those of the IDL given, when one interface alone defines
the name.  Object references found in the values are handed to ``learn`` (the tracker
learns the interface of their objects).
"""

from __future__ import annotations

from ..codec.ior import IOR
from ..codec.marshal import read_value
from ..codec.values import Any, Struct, Union, UserException
from ..errors import PycdrError
from ..idl.model import OBJECT_OPERATIONS
from ..orb.jsonvalues import to_json
from .tracker import _violations

_AMBIGUOUS = object()


class CallBodies:
    def __init__(self, modules=()):
        self.by_interface: dict = {}      # repository id -> {operation name: Operation}
        by_name: dict = {}
        self.exceptions: dict = {}        # repository id -> exception TypeCode
        for m in modules:
            for iface in m.interfaces.values():
                ops = iface.all_operations()
                self.by_interface[iface.repo_id] = ops
                for name, op in ops.items():
                    for exc in op.raises:
                        self.exceptions.setdefault(exc.id(), exc)
                    known = by_name.get(name)
                    by_name[name] = op if known is None or known is op else _AMBIGUOUS
        by_name.update(OBJECT_OPERATIONS)
        self.by_name = {name: op for name, op in by_name.items() if op is not _AMBIGUOUS}

    def operation(self, interface: str | None, name: str | None):
        """The operation ``name`` of ``interface`` (when known), or None."""
        if interface is not None:
            ops = self.by_interface.get(interface)
            if ops is not None:
                op = ops.get(name)
                if op is not None:
                    return op
        return self.by_name.get(name)

    def arguments(self, op, msg, violations, learn) -> tuple:
        """(the in/inout arguments by name, violations): a Request's body."""
        return self._read(msg, [(p.name, p.type) for p in op.in_params], "request",
                          violations, learn)

    def result(self, op, msg, status: str, exception_id, violations, learn) -> tuple:
        """(the return value and out/inout values by name, or the user exception's
        members; violations): a Reply's body.  Other statuses decode nothing."""
        if status == "NO_EXCEPTION":
            items = [] if op.result.kind().name == "tk_void" else [("return", op.result)]
            items += [(p.name, p.type) for p in op.out_params]
        elif status == "USER_EXCEPTION":
            exc = self.exceptions.get(exception_id)
            if exc is None:
                return None, violations
            values, violations = self._read(msg, [("exception", exc)], "reply", violations,
                                            learn)
            return (None if values is None else values.get("exception")), violations
        else:
            return None, violations
        return self._read(msg, items, "reply", violations, learn)

    @staticmethod
    def _read(msg, items, where, violations, learn) -> tuple:
        out: dict = {}
        try:
            r = msg.body_reader(lenient=True)
        except (PycdrError, ValueError):
            return None, violations
        try:
            for name, tc in items:
                value = read_value(r, tc)
                _find_iors(value, learn)
                out[name] = to_json(value)
        except PycdrError as e:
            violations = _violations(where, [{"code": "undecodable-body",
                                              "offset": getattr(e, "offset", None)}],
                                     violations)
        if r.warnings:
            violations = _violations(where, [w.to_json() for w in r.warnings], violations)
        return out, violations


def _find_iors(value, learn, depth: int = 0) -> None:
    """Hand every non-nil object reference in ``value`` to ``learn``."""
    if depth > 64:
        return
    if isinstance(value, IOR):
        learn(value)
    elif isinstance(value, (list, tuple)):
        if value and not isinstance(value[0], (IOR, list, tuple, Struct, Union, Any,
                                               UserException)):
            return              # a sequence of plain values: nothing to find
        for item in value:
            _find_iors(item, learn, depth + 1)
    elif isinstance(value, (Struct, UserException)):
        for name in value._fields:
            _find_iors(getattr(value, name), learn, depth + 1)
    elif isinstance(value, Union):
        _find_iors(value._v, learn, depth + 1)
    elif isinstance(value, Any):
        _find_iors(value.value, learn, depth + 1)
