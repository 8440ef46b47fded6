"""A replayed reply against the recorded one: the differences, each with its path.

Compared: the message type, the reply (or locate) status; for exceptions the
repository id, and for a system exception its minor code and completion
status; for a user exception its members (with IDL), else the bytes after the
id; for NO_EXCEPTION, with IDL, the result (``result``) and the out/inout
values (by parameter name) one by one, else the body's bytes; for forwards, the
reference.  Object references compare by type id and by the key mapping
(:class:`KeyMap`), never by host and port: a recorded reference whose key is
not mapped yet teaches the mapping (keys learned as the replay goes).

Not compared: the GIOP version, byte order and service contexts of the replies
(ORBs legitimately differ there), and with IDL the padding (values are
compared, not bytes).

A difference's ``recorded`` and ``replayed`` are JSON values: a value of the IDL as
``pycdr call --json`` gives it (pycdr.orb.jsonvalues: numbers as numbers, enums by name,
octets as hex...), a length or a minor code as a number, and the rest (statuses, bytes
without IDL, what could not be read) as text.
"""

from __future__ import annotations

import json
import math
import re

from ..codec import marshal
from ..errors import PycdrError
from ..giop.messages import LocateReply, LocateStatus, Reply, ReplyStatus
from ..addressing.iiop import IIOPProfile, decode_profile
from ..codec.marshal import read_value
from ..capture.giop import flatten_value, leaf_text, union_branch
from ..orb.jsonvalues import to_json
from ..codec.plan import plan_for
from ..codec.references import may_hold_reference
from ..codec.typecode import TCKind, resolve
from ..codec.values import Any

if marshal.IMPLEMENTATION == "c":
    from ..codec import _cmarshal

# Longest text of a value in a difference (the JSON output carries both replies whole).
MAX_VALUE_TEXT = 200
_FLOAT_KINDS = frozenset((TCKind.tk_float, TCKind.tk_double))
# Kinds whose values compare as they are, and show as their JSON value.
_LEAF_KINDS = frozenset((
    TCKind.tk_short, TCKind.tk_long, TCKind.tk_ushort, TCKind.tk_ulong, TCKind.tk_longlong,
    TCKind.tk_ulonglong, TCKind.tk_boolean, TCKind.tk_char, TCKind.tk_wchar, TCKind.tk_octet,
    TCKind.tk_string, TCKind.tk_wstring, TCKind.tk_enum, TCKind.tk_fixed,
    TCKind.tk_float, TCKind.tk_double, TCKind.tk_longdouble))
_FORWARDS = frozenset((ReplyStatus.LOCATION_FORWARD, ReplyStatus.LOCATION_FORWARD_PERM))
_LOCATE_FORWARDS = frozenset((LocateStatus.OBJECT_FORWARD, LocateStatus.OBJECT_FORWARD_PERM))


class KeyMap:
    """Recorded object key -> the key to send instead (shared by the connections).

    ``explicit``: --key OLD=NEW.  ``defaults``: per recorded server, the key of
    its target's reference (an IOR or corbaloc target): the first key of that
    server not mapped otherwise goes there, later ones unchanged.  ``learned``:
    from replies that returned a reference where the recording had one."""

    def __init__(self, explicit: dict | None = None, defaults: dict | None = None):
        self.explicit = dict(explicit or {})
        self.defaults = dict(defaults or {})     # server text -> key
        self.learned: dict = {}
        # Counts the changes of the mapping (pycdr._replaylane's shape tables hold the
        # bytes of requests rewritten for a key: rebuilt when it moves).
        self.version = 0

    def target_key(self, old: bytes, server: str = "") -> bytes:
        new = self.explicit.get(old)
        if new is None:
            new = self.learned.get(old)
        if new is None:
            new = self.defaults.pop(server, None)
            if new is None:
                return old          # not mapped (yet: a reply may still teach it)
            self.explicit[old] = new
            self.version += 1
        return new

    def expected(self, old: bytes) -> bytes | None:
        """The key a reply should hold where the recording held ``old``, if known."""
        new = self.explicit.get(old)
        return self.learned.get(old) if new is None else new

    def learn(self, old: bytes, new: bytes) -> None:
        if old not in self.explicit and old not in self.learned:
            self.learned[old] = new
            self.version += 1


class _KeysMet(KeyMap):
    """A key map that maps nothing and collects every key a comparison would learn."""

    def __init__(self):
        super().__init__()
        self.met: set = set()

    def expected(self, old: bytes) -> bytes | None:
        return None

    def learn(self, old: bytes, new: bytes) -> None:
        self.met.add(old)


class IgnoredPaths:
    """--ignore patterns: a path, ``*`` for any run of characters within a name,
    ``[*]`` for any index; a pattern covers what lies under the path it names."""

    def __init__(self, patterns=()):
        parts = []
        for p in patterns:
            text = re.escape(p).replace(r"\[\*\]", r"\[\d+\]").replace(r"\*", r"[^.\[]*")
            parts.append(text)
        self._re = re.compile(r"(?:%s)(?:$|[.\[])" % "|".join(parts)) if parts else None

    def __call__(self, path: str) -> bool:
        return self._re is not None and self._re.match(path) is not None


class Comparison:
    """How replies are compared: the IDL tables (an :class:`pycdr.capture.giop.IdlBodyDecoder`
    or None), the float tolerance (relative, and absolute below 1), ignored paths,
    the key map."""

    def __init__(self, idl=None, float_tolerance: float = 0.0, ignore=(),
                 keys: KeyMap | None = None):
        self.idl = idl
        self.float_tolerance = float_tolerance
        self.ignored = IgnoredPaths(ignore)
        self.keys = keys or KeyMap()
        self._references_in: dict = {}     # operation -> its results may hold references
        self._judged_by_bytes: dict = {}    # (operation, reply status) -> judged_by_bytes

    # -- replies -------------------------------------------------------------------
    def may_teach(self, operation: str, reply) -> bool:
        """Whether the replayed reply to a call whose recorded reply is ``reply`` (a
        Reply, a LocateReply, or one kept as bytes with its ``status``) may teach a key:
        the recorded one is a forward or may hold a reference."""
        if reply is None:
            return False
        if isinstance(reply, LocateReply):
            return reply.locate_status in _LOCATE_FORWARDS
        status = reply.reply_status if isinstance(reply, Reply) else reply.status
        return not self.judged_by_bytes(operation, status)

    def taught_keys(self, operation: str, reply) -> set:
        """The recorded object keys of the references a decoded recorded ``reply`` holds
        where a replayed reply would teach a key (``pycdr replay --jobs`` ties the
        connections that use or teach one): the reply compared with itself, every
        reference the comparison meets collected."""
        collector = _KeysMet()
        keys, self.keys = self.keys, collector
        try:
            self.replies(operation, reply, reply)
        finally:
            self.keys = keys
        return collector.met

    def judged_by_bytes(self, operation: str, status: int) -> bool:
        """Whether a reply of ``status`` that repeats the recorded one's bytes (but for
        the request id) is the same without reading it: not when it holds a reference
        to compare by the key mapping (and learn keys from): a forward, a result (by
        the IDL) that may hold one, a user exception read with the IDL."""
        judged = self._judged_by_bytes.get((operation, status))
        if judged is None:
            if status in (ReplyStatus.NO_EXCEPTION, ReplyStatus.SYSTEM_EXCEPTION,
                          ReplyStatus.NEEDS_ADDRESSING_MODE):
                items = self.idl.results.get(operation) if self.idl is not None and \
                    status == ReplyStatus.NO_EXCEPTION else None
                judged = items is None or not self._holds_references(operation, items)
            else:
                judged = status == ReplyStatus.USER_EXCEPTION and self.idl is None
            self._judged_by_bytes[(operation, status)] = judged
        return judged

    def value_nodes(self, operation: str):
        """How pycdr._replaylane judges a NO_EXCEPTION reply of ``operation`` whose bytes
        differ from the recorded one's as :meth:`_results` does: True, by the bodies'
        bytes (no IDL for it); the plan nodes of its results, read by the C decoder and
        compared value by value (a servant that answers the same values in other
        padding); None, by Python alone (a result that may hold a reference, a node
        that reads the stream's context, the pure-Python path)."""
        if not self.judged_by_bytes(operation, ReplyStatus.NO_EXCEPTION):
            return None
        items = self.idl.results.get(operation) if self.idl is not None else None
        if items is None:
            return True
        if marshal.IMPLEMENTATION != "c" or not _cmarshal.enabled:
            return None
        nodes = tuple(plan_for(tc) for _, tc, *_ in items)
        return None if any(_cmarshal.touches_context(n) for n in nodes) else nodes

    def replies(self, operation: str, recorded, replayed) -> list:
        """The differences between two replies (decoded messages, or None when
        the side has none): a list of {"path", "recorded", "replayed"}."""
        diffs: list = []
        if recorded is None and replayed is None:
            return diffs
        if recorded is None or replayed is None:
            self._add(diffs, "reply", _reply_text(recorded), _reply_text(replayed))
            return diffs
        if type(recorded) is not type(replayed):
            self._add(diffs, "type", recorded.type_name, replayed.type_name)
            return diffs
        if isinstance(recorded, LocateReply):
            self._locate_replies(recorded, replayed, diffs)
            return diffs
        status = recorded.reply_status
        if status != replayed.reply_status:
            self._add(diffs, "status", _status_name(ReplyStatus, status),
                      _status_name(ReplyStatus, replayed.reply_status))
            return diffs
        if status == ReplyStatus.NO_EXCEPTION:
            self._results(operation, recorded, replayed, diffs)
        elif status == ReplyStatus.USER_EXCEPTION:
            self._user_exceptions(recorded, replayed, diffs)
        elif status == ReplyStatus.SYSTEM_EXCEPTION:
            self._system_exceptions(recorded.system_exception, replayed.system_exception, diffs)
        elif status in _FORWARDS:
            self._references(recorded.forward, replayed.forward, "forward", diffs)
        elif status == ReplyStatus.NEEDS_ADDRESSING_MODE:
            if recorded.addressing_disposition != replayed.addressing_disposition:
                self._add(diffs, "addressing_disposition", recorded.addressing_disposition,
                          replayed.addressing_disposition)
        return diffs

    def _locate_replies(self, recorded: LocateReply, replayed: LocateReply, diffs) -> None:
        if recorded.locate_status != replayed.locate_status:
            self._add(diffs, "status", _status_name(LocateStatus, recorded.locate_status),
                      _status_name(LocateStatus, replayed.locate_status))
        elif recorded.locate_status in _LOCATE_FORWARDS:
            self._references(recorded.forward, replayed.forward, "forward", diffs)
        elif recorded.locate_status == LocateStatus.LOC_SYSTEM_EXCEPTION:
            self._system_exceptions(recorded.system_exception, replayed.system_exception, diffs)

    def _system_exceptions(self, old, new, diffs) -> None:
        if old is None or new is None:      # a body too short to hold one (lenient decoding)
            if (old is None) != (new is None):
                self._add(diffs, "exception", _sysexc_text(old), _sysexc_text(new))
            return
        if old.repo_id != new.repo_id:
            self._add(diffs, "exception.id", old.repo_id, new.repo_id)
            return
        if old.minor != new.minor:
            self._add(diffs, "exception.minor", old.minor, new.minor)
        if int(old.completed) != int(new.completed):
            self._add(diffs, "exception.completed", _completion(old.completed),
                      _completion(new.completed))

    def _user_exceptions(self, old: Reply, new: Reply, diffs) -> None:
        if old.exception_id != new.exception_id:
            self._add(diffs, "exception.id", old.exception_id, new.exception_id)
            return
        exc = self.idl.exceptions.get(old.exception_id) if self.idl is not None else None
        if exc is None:
            self._raw_bodies(old, new, "exception", diffs)
            return
        values = [self._read(msg, ((exc.name(), exc),)) for msg in (old, new)]
        self._compare_items(((exc.name(), exc),), values, diffs, names={exc.name(): "exception"})

    def _results(self, operation: str, old: Reply, new: Reply, diffs) -> None:
        items = self.idl.results.get(operation) if self.idl is not None else None
        if items is None:
            self._raw_bodies(old, new, "body", diffs)
            return
        if old.little == new.little and old.body == new.body and \
                (old.body_offset or 0) % 8 == (new.body_offset or 0) % 8 and \
                not self._holds_references(operation, items):
            return      # the same bytes, read alike: the same values (the common case)
        values = [self._read(msg, items) for msg in (old, new)]
        if values[0] == values[1] and values[0][1] is None and \
                not self._holds_references(operation, items):
            return      # the same values (bytes that differ in padding): nothing to name
        self._compare_items(items, values, diffs, names={"return": "result"})

    def _holds_references(self, operation: str, items) -> bool:
        """Whether the results may hold an object reference (compared by the key
        mapping: the same bytes may still differ) or a value only read can tell."""
        known = self._references_in.get(operation)
        if known is None:
            known = self._references_in[operation] = any(
                may_hold_reference(tc) for _, tc, *_ in items)
        return known

    def _read(self, msg, items) -> tuple:
        """(values, error text or None): the items read from ``msg``'s body -- strictly
        first (the C decoder's path), and only where that fails, leniently (the values
        read up to what cannot be; lenient reading differs only where strict raises)."""
        r = msg.body_reader()
        try:
            return [read_value(r, tc) for _, tc, *_ in items], None
        except PycdrError:
            pass
        values = []
        r = msg.body_reader(lenient=True)
        try:
            for _, tc, *_ in items:
                values.append(read_value(r, tc))
        except PycdrError as e:
            return values, str(e)
        return values, None

    def _compare_items(self, items, sides, diffs, names) -> None:
        (old_values, old_error), (new_values, new_error) = sides
        for i, (name, tc, *_) in enumerate(items):
            path = names.get(name, name)
            if i >= len(old_values) or i >= len(new_values):
                self._add(diffs, path, _undecodable(old_values, i, old_error),
                          _undecodable(new_values, i, new_error))
                return
            self.values(tc, old_values[i], new_values[i], path, diffs)

    def _raw_bodies(self, old, new, path: str, diffs) -> None:
        """Without the types: the bytes after the header (and padding) compared
        as they are, when both ORBs chose the same byte order."""
        a, b = bytes(old.body), bytes(new.body)
        if path == "exception":          # after the repository id both have
            a, b = _after_id(old), _after_id(new)
        if old.little != new.little:
            if a != b:
                self._add(diffs, path, f"{_endian(old)} {_hex(a)}",
                          f"{_endian(new)} {_hex(b)} (byte orders differ: give --idl to "
                          f"compare the values)")
            return
        if a != b:
            at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            self._add(diffs, path, f"{len(a)} bytes: {_hex(a)}",
                      f"{len(b)} bytes: {_hex(b)} (first difference at byte {at})")

    # -- values ----------------------------------------------------------------------
    def values(self, tc, old, new, path: str, diffs: list) -> None:
        """The differences between two values of type ``tc``, under ``path``."""
        if self.ignored(path):
            return
        tc = resolve(tc)
        kind = tc.kind()
        while kind == TCKind.tk_alias:
            tc = resolve(tc.content_type())
            kind = tc.kind()
        if kind in _FLOAT_KINDS:
            if not self._floats_match(old, new):
                self._add(diffs, path, old, new)
        elif kind in (TCKind.tk_struct, TCKind.tk_except):
            for i in range(tc.member_count()):
                name = tc.member_name(i)
                self.values(tc.member_type(i), _member(old, i, name), _member(new, i, name),
                            f"{path}.{name}", diffs)
        elif kind == TCKind.tk_union:
            if old._d != new._d:
                self._add(diffs, f"{path}._d", old._d, new._d)
                return
            branch = union_branch(tc, old._d)
            if branch is not None:
                self.values(tc.member_type(branch), old._v, new._v,
                            f"{path}.{tc.member_name(branch)}", diffs)
        elif kind in (TCKind.tk_sequence, TCKind.tk_array) and \
                not isinstance(old, (bytes, bytearray, str)):
            if len(old) != len(new):
                self._add(diffs, f"{path}.length", len(old), len(new))
            content = tc.content_type()
            for i, (a, b) in enumerate(zip(old, new)):
                self.values(content, a, b, f"{path}[{i}]", diffs)
        elif kind == TCKind.tk_objref:
            self._references(old, new, path, diffs)
        elif kind == TCKind.tk_any and isinstance(old, Any) and isinstance(new, Any) and \
                may_hold_reference(old.tc) and old.tc.equivalent(new.tc):
            # References inside an any compare by the key mapping too, as outside one.
            self.values(old.tc, old.value, new.value, f"{path}.value", diffs)
        elif kind in _LEAF_KINDS or isinstance(old, (bytes, bytearray, str)):
            # (octet and char sequences and arrays read as one bytes or str value)
            if old != new:
                self._add(diffs, path, old, new)
        else:
            # The kinds pycdr pcap shows as texts (any, TypeCode, valuetypes...):
            # compared in that form, pair by pair.
            a = flatten_value(tc, old, path, [])
            b = flatten_value(tc, new, path, [])
            if a != b:
                for (pa, ta), (pb, tb) in zip(a, b):
                    if pa != pb or ta != tb:
                        if pa == pb:
                            self._add(diffs, pa, ta, tb)
                        else:
                            self._add(diffs, f"{pa} | {pb}", ta, tb)
                        return
                self._add(diffs, f"{path}.length", len(a), len(b))

    def _floats_match(self, a: float, b: float) -> bool:
        if a == b or (math.isnan(a) and math.isnan(b)):
            return True
        tol = self.float_tolerance
        return tol > 0 and abs(a - b) <= tol * max(1.0, abs(a), abs(b))

    def _references(self, old, new, path: str, diffs) -> None:
        old_nil = old is None or old.is_nil
        new_nil = new is None or new.is_nil
        if old_nil or new_nil:
            if old_nil != new_nil:
                self._add(diffs, path, "nil" if old_nil else old.type_id,
                          "nil" if new_nil else new.type_id)
            return
        if old.type_id != new.type_id:
            self._add(diffs, f"{path}.type_id", old.type_id, new.type_id)
        old_key, new_key = _object_key(old), _object_key(new)
        if old_key is None or new_key is None:
            return
        expected = self.keys.expected(old_key)
        if expected is None:
            self.keys.learn(old_key, new_key)
        elif expected != new_key:
            self._add(diffs, f"{path}.object_key",
                      f"{_key_text(old_key)} (maps to {_key_text(expected)})", _key_text(new_key))

    def _add(self, diffs: list, path: str, old, new) -> None:
        if not self.ignored(path):
            diffs.append({"path": path, "recorded": _json_value(old),
                          "replayed": _json_value(new)})


def _member(value, index: int, name: str):
    if isinstance(value, (tuple, list)):
        return value[index]
    fields = getattr(type(value), "_fields", None)
    return getattr(value, fields[index] if fields else name)


def _object_key(ior) -> bytes | None:
    for profile in ior.profiles:
        p = decode_profile(profile, lenient=True)
        if isinstance(p, IIOPProfile):
            return p.object_key
    return None


def _after_id(msg) -> bytes:
    """A user exception's body after its repository id (lenient: all of it when
    the id cannot be read)."""
    r = msg.body_reader(lenient=True)
    try:
        r.read_string()
    except PycdrError:
        return bytes(msg.body)
    return bytes(msg.body[r.pos - (msg.body_offset or 0):]) if msg.body_offset is not None \
        else bytes(msg.body)


def _undecodable(values, i: int, error) -> str:
    return "(decoded)" if i < len(values) else f"undecodable: {error}"


def _reply_text(msg) -> str:
    if msg is None:
        return "no reply"
    if isinstance(msg, LocateReply):
        return f"LocateReply {_status_name(LocateStatus, msg.locate_status)}"
    return f"Reply {_status_name(ReplyStatus, msg.reply_status)}"


def _status_name(enum_cls, value) -> str:
    return enum_cls(value).name if value in enum_cls._value2member_map_ else f"invalid({value})"


def _sysexc_text(e) -> str:
    return "none" if e is None else f"{e.repo_id} minor {e.minor:#x}"


def _completion(value) -> str:
    return getattr(value, "name", str(value))


def _endian(msg) -> str:
    return "little-endian" if msg.little else "big-endian"


def _key_text(key: bytes) -> str:
    text = key.decode("latin-1")
    return text if text.isprintable() and text.isascii() else key.hex()


def _hex(data: bytes) -> str:
    return data[:48].hex() + ("..." if len(data) > 48 else "")


def _json_value(value):
    """A value of a difference as JSON (the one mapping of IDL values to JSON); a long
    text clipped."""
    value = to_json(value)
    return _clip(value) if isinstance(value, str) else value


def difference_text(path: str, value) -> str:
    """A difference's JSON value as the terminal and JUnit show it: as ``pycdr pcap``
    shows values (``%.17g`` floats, true/false), a minor code in hex."""
    if path == "exception.minor" and isinstance(value, int):
        return f"{value:#x}"
    if isinstance(value, (dict, list)):
        return json.dumps(value, allow_nan=False)
    return leaf_text(value)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_VALUE_TEXT else text[:MAX_VALUE_TEXT - 3] + "..."
