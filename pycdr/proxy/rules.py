"""Fault rules: which calls a rule hits (``match``) and what it does (``action``).

A rules file is a JSON list of ``{"match": {...}, "action": {...}}``.  A rule is
tried on each message that passes the proxy in its ``direction`` (``request``:
Requests and LocateRequests from the client; ``reply``: Replies and LocateReplies
from the server; the default is ``reply`` for the actions that act on an answer
alone, ``stall`` and ``duplicate``, else ``request``).  Its counters count the
messages its other keys match: ``nth`` (only the n-th), ``first`` (the first n),
``every`` (every n-th), then ``probability`` (with the proxy's seed).

Actions are small pieces a message goes through in rule order: the shaping ones
(``set``, ``corrupt``, ``fragment``, ``duplicate``, ``delay``, ``trickle``) compose; the
first answering one (``system_exception``, ``user_exception``, ``forward``,
``close``, ``reset``, ``message_error``, ``drop``, ``stall``) decides what becomes
of the message and later answering ones are not applied.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from ..codec.ior import IOR, ior_from_string
from ..errors import PycdrError
from ..giop.sysexc import CompletionStatus, REPO_PREFIX, REPO_SUFFIX, system_exception

MATCH_KEYS = ("operation", "interface", "object_key", "direction", "nth", "first", "every",
              "probability")
SHAPING = ("set", "corrupt", "fragment", "duplicate", "delay", "trickle")
ANSWERING = ("system_exception", "user_exception", "forward", "close", "reset",
             "message_error", "drop", "stall")
ACTIONS = SHAPING + ANSWERING
_REPLY_ONLY = ("stall", "duplicate")
# Each action's parameters: name -> (type, required)
_PARAMS = {
    "delay": {"ms": (float, True), "jitter_ms": (float, False)},
    "system_exception": {"id": (str, True), "minor": (int, False), "completed": (str, False)},
    "user_exception": {"id": (str, True), "members": (dict, False)},
    "forward": {"to": (str, True), "permanent": (bool, False)},
    "close": {"when": (str, False)},
    "reset": {},
    "message_error": {},
    "fragment": {"size": (int, True)},
    "trickle": {"bytes": (int, True), "interval_ms": (float, True)},
    "stall": {"ms": (float, False)},
    "drop": {},
    "duplicate": {},
    "corrupt": {"path": (str, True), "value": ((int, str), True)},
    "set": {"path": (str, True), "value": (object, True)},
}
_COMPLETED = {"yes": CompletionStatus.COMPLETED_YES, "no": CompletionStatus.COMPLETED_NO,
              "maybe": CompletionStatus.COMPLETED_MAYBE}


class RuleError(PycdrError):
    """A rules file that cannot be used (what and where)."""


@dataclass
class Action:
    type: str
    params: dict                # the parameters, made ready (an IOR, an exception, bytes)
    spec: dict                  # the action as the rules file gives it

    def to_json(self) -> dict:
        return dict(self.spec)

    @property
    def answering(self) -> bool:
        return self.type in ANSWERING


@dataclass
class Rule:
    index: int
    direction: str
    match: dict
    action: Action
    seen: int = 0                       # messages its keys matched so far
    hits: int = 0                       # times it was applied

    def keys_match(self, operation, interface, object_key_hex) -> bool:
        m = self.match
        op = m.get("operation")
        if op is not None and op != operation:
            return False
        iface = m.get("interface")
        if iface is not None and iface != interface:
            return False
        key = m.get("object_key")
        return key is None or key == object_key_hex


@dataclass
class Rules:
    rules: list = field(default_factory=list)
    seed: int | None = None

    def __post_init__(self):
        self.random = random.Random(self.seed)

    def applying(self, direction: str, operation, interface, object_key_hex) -> list:
        """The rules that hit a message of ``direction`` (counting it): [(index, Action)]."""
        out = []
        for rule in self.rules:
            if rule.direction != direction or \
                    not rule.keys_match(operation, interface, object_key_hex):
                continue
            rule.seen += 1
            n, m = rule.seen, rule.match
            if "nth" in m and n != m["nth"]:
                continue
            if "first" in m and n > m["first"]:
                continue
            if "every" in m and n % m["every"]:
                continue
            if "probability" in m and self.random.random() >= m["probability"]:
                continue
            rule.hits += 1
            out.append((rule.index, rule.action))
        return out


def bind_exceptions(rules: Rules, exceptions: dict) -> None:
    """Make the ``user_exception`` actions ready: their exception's TypeCode from
    ``exceptions`` (repository id -> TypeCode, the IDL's) and their members as values.
    RuleError when the IDL has no such exception or the members do not fit it."""
    from ..orb.jsonvalues import from_json
    for rule in rules.rules:
        action = rule.action
        if action.type != "user_exception":
            continue
        where = f"rule {rule.index + 1}: user_exception {action.params['id'][:80]}"
        tc = exceptions.get(action.params["id"])
        if tc is None:
            raise RuleError(f"{where}: no operation of the --idl files raises it")
        try:
            action.params["exception"] = from_json(tc, action.params.get("members", {}))
        except (ValueError, TypeError, KeyError) as e:
            raise RuleError(f"{where}: members: {e}") from None
        action.params["tc"] = tc


def load_rules(path: str, seed: int | None = None) -> Rules:
    """The rules of a JSON file; RuleError names the rule and key that are wrong."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise RuleError(f"{path}: cannot read ({e.strerror})") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise RuleError(f"{path}: not JSON ({e})") from None
    return parse_rules(data, seed, where=path)


def parse_rules(data, seed: int | None = None, where: str = "rules") -> Rules:
    if not isinstance(data, list):
        raise RuleError(f"{where}: a JSON list of {{\"match\": ..., \"action\": ...}} "
                        "objects is expected")
    return Rules([_rule(i, item, f"{where}: rule {i + 1}") for i, item in enumerate(data)],
                 seed)


def _rule(index: int, item, where: str) -> Rule:
    if not isinstance(item, dict) or set(item) - {"match", "action"} or "action" not in item:
        raise RuleError(f"{where}: an object with \"action\" (and \"match\") is expected")
    match = item.get("match") or {}
    if not isinstance(match, dict):
        raise RuleError(f"{where}: \"match\" is not an object")
    unknown = set(match) - set(MATCH_KEYS)
    if unknown:
        raise RuleError(f"{where}: unknown match key {sorted(unknown)[0]} (known: "
                        f"{', '.join(MATCH_KEYS)})")
    for key in ("operation", "interface", "object_key"):
        if key in match and not isinstance(match[key], str):
            raise RuleError(f"{where}: match {key} is not a string")
    if "object_key" in match:
        try:
            match["object_key"] = bytes.fromhex(match["object_key"]).hex()
        except ValueError:
            raise RuleError(f"{where}: match object_key is not hex") from None
    for key in ("nth", "first", "every"):
        if key in match and (not isinstance(match[key], int) or isinstance(match[key], bool)
                             or match[key] < 1):
            raise RuleError(f"{where}: match {key} must be a whole number of at least 1")
    if "probability" in match:
        p = match["probability"]
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0 <= p <= 1:
            raise RuleError(f"{where}: match probability must be a number from 0 to 1")
    action = _action(item["action"], where)
    direction = match.get("direction",
                          "reply" if action.type in _REPLY_ONLY else "request")
    if direction not in ("request", "reply"):
        raise RuleError(f"{where}: match direction must be request or reply")
    if direction == "request" and action.type in _REPLY_ONLY:
        raise RuleError(f"{where}: {action.type} acts on replies (direction reply)")
    return Rule(index, direction, match, action)


def _action(spec, where: str) -> Action:
    if not isinstance(spec, dict) or not isinstance(spec.get("type"), str):
        raise RuleError(f"{where}: \"action\" must be an object with a \"type\"")
    kind = spec["type"]
    if kind not in _PARAMS:
        raise RuleError(f"{where}: unknown action type {kind[:40]} (known: "
                        f"{', '.join(ACTIONS)})")
    params = {k: v for k, v in spec.items() if k != "type"}
    known = _PARAMS[kind]
    for name in params:
        if name not in known:
            raise RuleError(f"{where}: {kind} has no parameter {name[:40]}"
                            + (f" (it takes {', '.join(known)})" if known else ""))
    for name, (types, required) in known.items():
        if name not in params:
            if required:
                raise RuleError(f"{where}: {kind} needs {name}")
            continue
        value = params[name]
        if types is float and isinstance(value, int) and not isinstance(value, bool):
            value = params[name] = float(value)
        if not isinstance(value, types) or \
                isinstance(value, bool) and types not in (bool, object):
            raise RuleError(f"{where}: {kind} {name} has the wrong type")
    for name in ("ms", "jitter_ms", "interval_ms"):
        if params.get(name, 0) < 0:
            raise RuleError(f"{where}: {kind} {name} is negative")
    if kind == "system_exception":
        name = params["id"]
        repo_id = name if name.startswith("IDL:") else REPO_PREFIX + name + REPO_SUFFIX
        completed = params.get("completed", "no").lower().removeprefix("completed_")
        if completed not in _COMPLETED:
            raise RuleError(f"{where}: completed must be yes, no or maybe")
        params["exception"] = system_exception(repo_id, params.get("minor", 0) & 0xFFFFFFFF,
                                               _COMPLETED[completed])
    elif kind == "forward":
        try:
            params["ior"] = _reference(params["to"])
        except PycdrError as e:
            raise RuleError(f"{where}: forward to: {e}") from None
    elif kind == "close":
        if params.setdefault("when", "before") not in ("before", "after"):
            raise RuleError(f"{where}: close when must be before or after")
    elif kind in ("fragment", "trickle"):
        key = "size" if kind == "fragment" else "bytes"
        if params[key] < 1:
            raise RuleError(f"{where}: {kind} {key} must be at least 1")
    elif kind == "corrupt":
        value = params["value"]
        if isinstance(value, str):
            try:
                params["value"] = bytes.fromhex(value)
            except ValueError:
                raise RuleError(f"{where}: corrupt value must be an integer or hex "
                                "digits") from None
    return Action(kind, params, dict(spec))


def _reference(text: str) -> IOR:
    from ..addressing.corbaloc import Corbaloc, parse_object_url
    if text.lower().startswith("ior:"):
        return ior_from_string(text)
    parsed = parse_object_url(text)
    if not isinstance(parsed, Corbaloc) or parsed.is_rir:
        raise RuleError("an IOR or a corbaloc:iiop: URL is expected")
    return parsed.to_ior()
