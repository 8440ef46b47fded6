"""Python hooks: what the rules cannot say (``pycdr proxy --hook FILE``).

A hook module defines ``request(call)``, ``reply(call)`` or both.  ``call`` holds the
call's ``operation``, ``interface``, ``object_key`` (hex), ``request_id``,
``arguments`` (decoded by the IDL, the call rows' JSON form, or None), and for
``reply`` its ``reply_status``, ``exception_id`` and ``result``.  A hook returns
None (the message goes on), an action of the rules' vocabulary
(``{"type": "delay", "ms": 50}``), or a list of them; they are applied as a rule's
are, after the rules, and the call's row lists them with ``"rule": "hook"``.
"""

from __future__ import annotations

import importlib.util
import logging
from types import SimpleNamespace

from .rules import RuleError, _action

log = logging.getLogger(__name__)


class Hooks:
    def __init__(self, request=None, reply=None):
        self.request = request
        self.reply = reply

    def actions(self, direction: str, call: SimpleNamespace) -> list:
        """[(\"hook\", Action), ...] of the hook for ``direction``, or [] (a hook that
        raises or returns something else is logged and changes nothing)."""
        fn = self.request if direction == "request" else self.reply
        if fn is None:
            return []
        try:
            returned = fn(call)
            if returned is None:
                return []
            specs = returned if isinstance(returned, list) else [returned]
            out = []
            for spec in specs:
                action = _action(spec, f"hook {direction}()")
                if direction == "request" and action.type in ("stall", "duplicate"):
                    raise RuleError(f"hook {direction}(): {action.type} acts on replies")
                out.append(("hook", action))
            return out
        except Exception as e:          # (the hook's own bug must not stop the relay)
            log.warning("hook %s() of %s failed: %s", direction, call.operation, e)
            return []


def load_hooks(path: str) -> Hooks:
    """The hooks of a Python file; RuleError when it does not load or has neither."""
    spec = importlib.util.spec_from_file_location("pycdr_proxy_hook", path)
    if spec is None or spec.loader is None:
        raise RuleError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except OSError as e:
        raise RuleError(f"{path}: cannot read ({e.strerror})") from None
    except Exception as e:
        raise RuleError(f"{path}: the hook module failed to load: "
                        f"{type(e).__name__}: {e}") from None
    request, reply = getattr(module, "request", None), getattr(module, "reply", None)
    if not callable(request) and not callable(reply):
        raise RuleError(f"{path}: defines neither request(call) nor reply(call)")
    return Hooks(request if callable(request) else None, reply if callable(reply) else None)
