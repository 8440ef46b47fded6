"""Why a peer answered a request with an exception: the request checked
strictly against the specification (and the IDL, when given), sans I/O.

    explanation = explain(request_messages, reply=reply_bytes, modules=[idl], ior=ior)
    for finding in explanation.findings: ...      # field path, offset, rule, text
    explanation.verdict()                         # or: the request is clean

``request_messages`` are the GIOP messages that carried the request: one, or the
first and its fragments in stream order.  They go through the sans-I/O
connection (fragment rules, reassembly) and the lenient decoder (header and
message rules); the body is read with the operation's parameters from the IDL
(:class:`pycdr.capture.giop.IdlBodyDecoder`) in the transmission code sets the
request uses; each violation is named by its field in
:mod:`pycdr.giop.layout`.  With the target's IOR, the code sets the request
chose are checked against those the server offered, and char data against a
GIOP 1.0 profile.  A reply (bytes, or the SystemException already decoded)
names the peer's answer, with the minor code from its vendor's table; a
USER_EXCEPTION reply's body is checked against the exception's members.

Offsets are those of the message each finding is in (``message``: 0 for the
first message, i for the i-th fragment after it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import codesets as cs
from .addressing.iiop import CodeSetsComponent, IIOPProfile, decode_profile
from .capture.giop import IdlBodyDecoder
from .codec.cdr import DecodeWarning
from .codec.ior import IOR
from .codec.typecode import TCKind, resolve
from .errors import PycdrError
from .giop import service_contexts as sc
from .giop.connection import GiopConnection, Role
from .giop.events import NEED_DATA, MessageReceived, ProtocolViolation
from .giop.header import HEADER_SIZE, MsgType, parse_header
from .giop.layout import Field, message_fields
from .giop.messages import Reply, ReplyStatus, Request, decode_message, split_messages
from .giop.minorcodes import minor_code_name
from .giop.sysexc import SystemException

PART2 = "CORBA 3.x Part 2, "
# The rule each decoder violation code breaks (the section of the specification).
RULES = {
    "message-truncated": "9.4.1 GIOP Message Header (message_size)",
    "bytes-after-message": "9.4.1 GIOP Message Header (message_size)",
    "bad-byte-order": "9.4.1 GIOP Message Header (flags)",
    "reserved-flags": "9.4.1 GIOP Message Header (flags)",
    "may-not-fragment": "9.4.1 GIOP Message Header (flags); 9.4.9 Fragment Message",
    "fragment-in-1.0": "9.4.9 Fragment Message",
    "fragment-misuse": "9.4.9 Fragment Message",
    "fragment-not-multiple-of-8": "9.4.9 Fragment Message",
    "fragment-byte-order": "9.4.9 Fragment Message",
    "fragment-split-primitive": "9.4.9 Fragment Message",
    "bad-profile-index": "9.4.2.1 TargetAddress",
    "short-body-padding": "9.4.2.3 Request Body (GIOP 1.2 8-octet alignment)",
    "trailing-bytes": "9.4.2 Request Message",
    "nonzero-reserved": "9.4.2 Request Message (reserved octets)",
    "bad-status": "9.4.3 Reply Message",
    "bad-boolean": "9.3.1.5 Boolean",
    "bad-char": "9.3.1.6 Character Types",
    "bad-wchar": "9.3.1.6 Character Types",
    "bad-wchar-length": "9.3.1.6 Character Types",
    "odd-wstring-length": "9.3.2.7 Strings and Wide Strings",
    "string-zero-length": "9.3.2.7 Strings and Wide Strings",
    "string-no-nul": "9.3.2.7 Strings and Wide Strings",
    "bound-exceeded": "9.3.2.7 Strings and Wide Strings; 9.3.2.5 Sequence",
    "bad-fixed": "9.3.2.8 Fixed-Point Decimal Type",
    "bad-fixed-sign": "9.3.2.8 Fixed-Point Decimal Type",
    "enum-range": "9.3.2.6 Enum",
    "union-discriminator": "9.3.2.3 Union",
    "empty-encapsulation": "9.3.3 Encapsulation",
    "bad-encapsulation": "9.3.3 Encapsulation",
    "encapsulation-trailing-bytes": "9.3.3 Encapsulation",
    "bad-typecode": "9.3.5.1 TypeCode",
    "typecode-trailing": "9.3.5.1 TypeCode",
    "nonzero-padding": "9.3.1.1 Alignment",
    "wchar-in-1.0": "9.3.1.6 Character Types (no wchar in GIOP 1.0)",
    "utf8-as-latin1": "7.10.2.6 Code Set Negotiation (char data without negotiation is "
                      "ISO 8859-1)",
    "code-set-not-offered": "7.10.2.6 Code Set Negotiation",
    "code-sets-in-1.0": "7.10.2.6 Code Set Negotiation (GIOP 1.1 and later)",
    "wchar-without-tcs": "7.10.2.6 Code Set Negotiation (wchar data needs a negotiated "
                         "TCS-W)",
    "body-truncated": "9.4.2.3 Request Body (the in and inout parameters, in order)",
    "body-trailing-bytes": "9.4.2.3 Request Body (the in and inout parameters, in order)",
    "body-undecodable": "9.3 CDR Transfer Syntax",
    "exception-truncated": "9.4.3.2 Reply Body (the exception's members)",
    "exception-trailing-bytes": "9.4.3.2 Reply Body (the exception's members)",
    "exception-undecodable": "9.4.3.2 Reply Body (the exception's members)",
    "not-giop": "9.4.1 GIOP Message Header",
    "giop-above-profile": "9.7.2 IIOP IOR Profiles (the highest GIOP version the server "
                          "speaks)",
    "operation-not-in-idl": "9.4.2 Request Message (operation)",
    "undecodable": "9.4.2 Request Message",
}


@dataclass(frozen=True)
class Finding:
    """One rule the request (or reply) breaks: ``severity`` "violation", or
    "note" for something legal but worth knowing (it leaves the request clean)."""
    message: int
    offset: int | None
    path: str
    code: str
    text: str
    severity: str = "violation"
    side: str = "request"

    @property
    def rule(self) -> str:
        return PART2 + RULES.get(self.code, "9 General Inter-ORB Protocol")

    def where(self) -> str:
        at = "?" if self.offset is None else str(self.offset)
        return f"@{at}" if self.message == 0 else f"msg[{self.message}]@{at}"

    def to_json(self) -> dict:
        return {"side": self.side, "message": self.message, "offset": self.offset,
                "path": self.path, "code": self.code, "rule": self.rule, "text": self.text,
                "severity": self.severity}


@dataclass
class Explanation:
    findings: list = field(default_factory=list)
    operation: str | None = None
    request_id: int | None = None
    answer: SystemException | None = None         # the peer's system exception
    reply_status: str | None = None               # the reply's status, when there was one
    user_exception: str | None = None             # a USER_EXCEPTION reply's repository id

    @property
    def violations(self) -> list:
        return [f for f in self.findings if f.severity == "violation"]

    @property
    def clean(self) -> bool:
        """No violation in the request (its reply's own faults aside)."""
        return not any(f.side == "request" for f in self.violations)

    def answer_text(self) -> str | None:
        exc = self.answer
        if exc is None:
            return self.reply_status and f"the peer answered {self.reply_status}" + (
                f" {self.user_exception}" if self.user_exception else "")
        prefix = "the peer answered "
        vendor = exc.vendor or f"VMCID 0x{exc.vmcid:08x}"
        if exc.minor_name:      # as its vendor's table names it (pycdr.giop.minorcodes)
            minor = f"minor 0x{exc.minor:08x} ({minor_code_name(exc.name, exc.minor)})"
        else:
            minor = f"minor 0x{exc.minor:08x} ({vendor} {exc.minor_code}" + \
                (")" if exc.minor_code == 0 else ", not in pycdr's table of its codes)")
        completed = exc.completed.name if hasattr(exc.completed, "name") \
            else f"invalid({exc.completed})"
        return f"{prefix}CORBA::{exc.name} {minor}, {completed}"

    def verdict(self) -> str:
        answer = self.answer_text()
        replied = sum(1 for f in self.violations if f.side == "reply")
        reply_faults = f"; the reply breaks {_rules(replied)}" if replied else ""
        if self.clean:
            if self.answer is not None:
                return f"the request is clean: the fault is the peer's ({answer})"
            return "the request is clean: no rule of the specification is broken" + \
                (f" ({answer})" if answer else "") + reply_faults
        n = sum(1 for f in self.violations if f.side == "request")
        return f"the request breaks {_rules(n)}" + (f"; {answer}" if answer else "") + \
            reply_faults

    def lines(self) -> list[str]:
        """The text form: one finding a line, then the verdict."""
        out = []
        for f in self.findings:
            side = "" if f.side == "request" else f"{f.side} "
            mark = "note: " if f.severity == "note" else ""
            out.append(f"{side}{f.where()} {f.path}: {mark}{f.text} [{f.rule}]")
        out.append(self.verdict())
        return out

    def to_json(self) -> dict:
        return {"operation": self.operation, "request_id": self.request_id,
                "findings": [f.to_json() for f in self.findings], "clean": self.clean,
                "answer": None if self.answer is None else
                dict(self.answer.to_json(), minor_name=self.answer.minor_name),
                "reply_status": self.reply_status, "user_exception": self.user_exception,
                "verdict": self.verdict()}


def _rules(n: int) -> str:
    return f"{n} rule{'s' if n != 1 else ''}"


class ExplainError(PycdrError):
    """What was given cannot be explained (no GIOP request in it)."""


# ----------------------------------------------------------------------------
def explain(request_messages, reply=None, *, modules=(), ior: IOR | None = None,
            code_sets: tuple | None = None, decoder: IdlBodyDecoder | None = None
            ) -> Explanation:
    """Check the request carried by ``request_messages`` (bytes of GIOP messages:
    the first and its fragments; or bytes of them one after another).
    ``reply``: the Reply's bytes or the SystemException it carried.  ``modules``:
    loaded IDL (``pycdr.idl.load``), or ``decoder``: an IdlBodyDecoder of it
    made already.  ``ior``: the target's reference.  ``code_sets``: (TCS-C,
    TCS-W) a CodeSets context sent earlier on the connection chose, if this
    request has none."""
    if isinstance(request_messages, (bytes, bytearray, memoryview)):
        request_messages = _split(bytes(request_messages))
    messages = [bytes(m) for m in request_messages]
    if not messages:
        raise ExplainError("no request message given")
    out: list = []
    whole, msg, segments, starts = _reassemble(messages, out)
    ex = Explanation(findings=out)
    if msg is None:
        _answer(ex, reply, None, None)
        return ex
    if not isinstance(msg, Request):
        raise ExplainError(f"the message is a {msg.msg_type.name}, not a Request")
    ex.operation, ex.request_id = msg.operation, msg.request_id
    with_idl = bool(modules) or decoder is not None
    decoder = decoder or IdlBodyDecoder(modules)
    names = [name for name, _t, _leaf in decoder.arguments.get(msg.operation, ())]
    types = [t for _name, t, _leaf in decoder.arguments.get(msg.operation, ())]
    fields = message_fields(whole, types or None, values=True, arg_names=names or None,
                            segments=segments)

    def place(code, text, offset, severity="violation", path=None):
        index, local = _locate(offset, starts)
        out.append(Finding(index, local, path or _path_at(fields, offset), code, text,
                           severity))

    for w in msg.warnings:
        if w.code.startswith("fragment-"):
            continue                      # (reported by _reassemble, in stream offsets)
        place(w.code, w.message, w.offset, _severity(w))
    _profile_version(msg, ior, place)
    tcs, known = _code_sets(msg, ior, code_sets, place, fields)
    if tcs[1] == 0:
        tcs = (tcs[0], cs.UTF_16)       # (no TCS-W chosen: _wide_without_tcs says so)
    if msg.operation in decoder.operations:
        _wide_without_tcs(msg, ior, code_sets, names, types, fields, place)
        _check_body(decoder, msg, tcs, place, "arguments")
    elif with_idl:
        place("operation-not-in-idl", f"the IDL given has no operation {msg.operation!a}: the "
              "body is not checked (a server without it answers BAD_OPERATION)",
              _field(fields, "request.operation.name").offset
              if _field(fields, "request.operation.name") else None, "note",
              "request.operation.name")
    if known and tcs[0] == cs.ISO_8859_1:
        _utf8_strings(whole, fields, place)
    _answer(ex, reply, msg, decoder, tcs)
    return ex


def _split(data: bytes) -> list:
    """The GIOP messages of ``data``, one after another (a last one cut short, or
    bytes that are not GIOP, stay one piece: explain names what is wrong)."""
    out = []
    try:
        for at, header in split_messages(data):
            out.append(data[at:at + header.total_size])
        return out
    except PycdrError:
        return out + [data[sum(len(m) for m in out):]]


def _severity(w: DecodeWarning) -> str:
    return "note" if w.severity == "note" else "violation"


def _reassemble(messages, out):
    """(the whole message, decoded, its GIOP 1.1 segments, the offset in the whole
    message where each wire message's data starts) after the fragment rules."""
    conn = GiopConnection(Role.SERVER, version=(1, 3), lenient=True, bidirectional=True,
                          check_request_ids=False)
    stream_starts, pos = [], 0
    for m in messages:
        stream_starts.append(pos)
        pos += len(m)

    def stream_finding(offset, code, text):
        index = max(i for i, s in enumerate(stream_starts) if s <= max(offset, 0))
        local = offset - stream_starts[index]
        if code == "fragment-not-multiple-of-8" and local == 0:
            local = 8                     # (the size that is not a multiple of 8)
        elif code == "fragment-misuse" and local == 0 and "without a fragmented" in text:
            local = 7
            text = (f"a GIOP 1.1 Fragment, but msg[{index - 1}] has no more-fragments flag: "
                    "the Fragment continues no message") if index else text
        out.append(Finding(index, local, _header_path(local), code, text))

    headers = []
    for i, m in enumerate(messages):
        try:
            headers.append(parse_header(m))
        except PycdrError as e:
            out.append(Finding(i, e.offset, _header_path(e.offset or 0), "not-giop",
                               getattr(e, "message", str(e))))
            return None, None, None, None
    if len(messages) == 1 and not headers[0].more_fragments:
        # One whole message (or one cut short): the lenient decoder alone.
        try:
            msg, _ = decode_message(messages[0], lenient=True, header=headers[0])
        except PycdrError as e:
            if len(messages[0]) < headers[0].total_size:
                out.append(Finding(0, 8, "header.message_size", "message-truncated",
                                   f"message_size says {headers[0].size} bytes after the "
                                   f"header, {len(messages[0]) - HEADER_SIZE} are there"))
            out.append(Finding(0, e.offset, _header_path(e.offset or 0)
                               if (e.offset or 0) < HEADER_SIZE else "message",
                               "undecodable", getattr(e, "message", str(e))))
            return None, None, None, None
        return messages[0], msg, None, [(0, 0, 0)]
    for i, (m, header) in enumerate(zip(messages, headers)):
        if len(m) != header.total_size:
            out.append(Finding(i, 8, "header.message_size", "message-truncated" if
                               len(m) < header.total_size else "bytes-after-message",
                               f"message_size says {header.size} bytes after the header, "
                               f"{len(m) - HEADER_SIZE} are there"))
            return None, None, None, None
    received = None
    for m in messages:
        conn.receive_data(m)
        while (event := conn.next_event()) is not NEED_DATA:
            if isinstance(event, MessageReceived):
                if received is None:
                    received = event
            elif isinstance(event, ProtocolViolation):
                error = event.error
                offset = error.offset if error.offset is not None else event.offset
                stream_finding(offset, _fragment_code(error), getattr(error, "message",
                                                                      str(error)))
            else:
                break
    if received is None:
        if not any(f.code == "fragment-misuse" for f in out):
            out.append(Finding(len(messages) - 1, 6, "header.flags", "fragment-misuse",
                               "the last message still has the more-fragments flag: "
                               "the request never ends"))
        return None, None, None, None
    msg = received.message
    for w in msg.warnings:
        if w.code.startswith("fragment-"):
            stream_finding(w.offset, w.code, w.message)
    whole = bytes(received.raw)
    if received.fragments == 1:
        return whole, msg, None, [(0, 0, 0)]
    # Where each message's data sits in the whole message: (whole offset, message, its offset).
    starts, at = [], 0
    header = parse_header(messages[0])
    for i, m in enumerate(messages[:received.fragments]):
        skip = 0 if i == 0 else HEADER_SIZE + (4 if header.version >= (1, 2) else 0)
        starts.append((at, i, skip))
        at += len(m) - skip
    return whole, msg, msg.segments, starts


def _fragment_code(error) -> str:
    text = getattr(error, "message", str(error))
    if "GIOP 1.0 has no Fragment" in text:
        return "fragment-in-1.0"
    if "may not be fragmented" in text:
        return "may-not-fragment"
    if "not a multiple of 8" in text:
        return "fragment-not-multiple-of-8"
    return "fragment-misuse"


_HEADER_FIELDS = message_fields(b"GIOP" + bytes(8))[:5]     # (the header's five, at least)


def _header_path(offset: int) -> str:
    for f in _HEADER_FIELDS:
        if f.offset <= offset < f.offset + f.size:
            return f.path
    return "fragment.data" if offset >= HEADER_SIZE else "header"


def _locate(offset, starts):
    """(message index, offset in it) of an offset in the whole message."""
    if offset is None or starts is None:
        return 0, offset
    for whole_at, index, skip in reversed(starts):
        if offset >= whole_at:
            return index, offset - whole_at + skip
    return 0, offset


def _path_at(fields: list, offset) -> str:
    """The innermost field holding ``offset``; else the last field before it."""
    if offset is None:
        return "message"
    holding = [f for f in fields if f.offset <= offset < f.offset + f.size]
    if holding:
        path = min(holding, key=lambda f: (f.size, -len(f.path))).path
        # (a boolean's or enum's field is the value itself: b, not b.boolean)
        for suffix in (".boolean", ".enum"):
            if path.endswith(suffix):
                return path[:-len(suffix)]
        return path
    before = [f for f in fields if f.offset <= offset]
    return max(before, key=lambda f: (f.offset + f.size, -f.size)).path if before else "message"


def _field(fields: list, path: str) -> Field | None:
    return next((f for f in fields if f.path == path), None)


# ----------------------------------------------------------------------------
# Code sets
def _profile_version(msg: Request, ior, place) -> None:
    profile = _profile(ior)
    if profile is not None and msg.version > profile.version:
        v, p = msg.version, profile.version
        place("giop-above-profile", f"a GIOP {v[0]}.{v[1]} request to a reference whose IIOP "
              f"profile is {p[0]}.{p[1]}: the server speaks GIOP {p[0]}.{p[1]} at most",
              4, path="header.version")


def _code_sets(msg: Request, ior, earlier, place, fields) -> tuple:
    """((TCS-C, TCS-W) the server reads the request with, whether they are known
    rather than assumed); findings for a choice the server did not offer."""
    context = next((c for c in msg.service_contexts if isinstance(c, sc.CodeSetsContext)),
                   None)
    index = next((i for i, c in enumerate(msg.service_contexts)
                  if isinstance(c, sc.CodeSetsContext)), None)
    path = f"request.service_context[{index}]"
    at = _field(fields, f"{path}.byte_order")
    data_at = at.offset + 4 if at is not None else None     # (after the octet and its pad)
    if context is not None and msg.version == (1, 0):
        place("code-sets-in-1.0", "a CodeSets context in a GIOP 1.0 request: GIOP 1.0 has "
              "no code set negotiation, the server reads char data as ISO-8859-1",
              data_at, "note", f"{path}.char_data")
        context = None
    chosen = (context.char_data, context.wchar_data) if context is not None else earlier
    offered = _offered(ior)
    if chosen is not None and context is not None and ior is not None:
        names = ("char_data", "wchar_data")
        if offered is None:
            if context.char_data != cs.ISO_8859_1:
                place("code-set-not-offered",
                      f"TCS-C {cs.name(context.char_data)}, but the reference offers no code "
                      "sets: the server's char code set is ISO-8859-1", data_at,
                      path=f"{path}.char_data")
        else:
            for i, (tcs, native, conversion, fallback) in enumerate((
                    (context.char_data, offered.char_native, offered.char_conversion,
                     cs.UTF_8),
                    (context.wchar_data, offered.wchar_native, offered.wchar_conversion,
                     cs.UTF_16))):
                if tcs == 0 and i == 1:
                    continue                       # no TCS-W chosen: fine until wchar data
                allowed = (native,) + tuple(conversion)
                where = None if data_at is None else data_at + 4 * i
                if tcs in allowed:
                    continue
                listed = ", ".join(cs.name(c) for c in allowed)
                if tcs == fallback:
                    place("code-set-not-offered",
                          f"{'TCS-C' if i == 0 else 'TCS-W'} {cs.name(tcs)} is the fallback "
                          f"but the server offers only {listed}: it may answer "
                          "CODESET_INCOMPATIBLE", where, "note", f"{path}.{names[i]}")
                else:
                    place("code-set-not-offered",
                          f"{'TCS-C' if i == 0 else 'TCS-W'} {cs.name(tcs)} is not a code set "
                          f"the server offered ({listed}) nor the fallback {cs.name(fallback)}",
                          where, path=f"{path}.{names[i]}")
    if msg.version == (1, 0) or (ior is not None and offered is None and context is None):
        return (cs.ISO_8859_1, cs.UTF_16), True
    if chosen is not None:
        return chosen, True
    # A GIOP 1.1+ request without a context (it went with an earlier request):
    # the defaults, but not known to be what the connection chose.
    return (cs.DEFAULT_TCS_C, cs.DEFAULT_TCS_W), False


def _wide_without_tcs(msg: Request, ior, earlier, names, types, fields, place) -> None:
    """wchar data where no wchar transmission code set was negotiated: a CodeSets
    context with TCS-W 0, or (GIOP 1.1+) a reference that offers no code sets."""
    if msg.version == (1, 0):
        return                             # (wchar in GIOP 1.0: the body check says it)
    context = next((c for c in msg.service_contexts if isinstance(c, sc.CodeSetsContext)),
                   None)
    chosen = (context.char_data, context.wchar_data) if context is not None else earlier
    if chosen is not None and chosen[1] == 0:
        why = "the CodeSets context chose no wchar code set (TCS-W 0)"
    elif ior is not None and _offered(ior) is None:
        why = "the reference offers no code sets, so none was negotiated"
    else:
        return
    for name, t in zip(names, types):
        if _has_wide(t, 0):
            value = _field(fields, f"request.body.{name}")
            place("wchar-without-tcs", f"wchar data, but {why}",
                  value.offset if value is not None else None,
                  path=f"request.body.{name}")


def _has_wide(t, depth: int) -> bool:
    """Whether values of type ``t`` may hold wchar data."""
    t = resolve(t).unalias()
    k = t.kind()
    if k in (TCKind.tk_wchar, TCKind.tk_wstring):
        return True
    if depth > 12:
        return False
    if k in (TCKind.tk_sequence, TCKind.tk_array):
        return _has_wide(t.content_type(), depth + 1)
    if k in (TCKind.tk_struct, TCKind.tk_except, TCKind.tk_union):
        return any(_has_wide(t.member_type(i), depth + 1) for i in range(t.member_count()))
    return False


def _profile(ior) -> IIOPProfile | None:
    """The first IIOP profile of ``ior``."""
    if ior is None:
        return None
    for tagged in ior.profiles:
        try:
            profile = decode_profile(tagged, lenient=True)
        except PycdrError:
            continue
        if isinstance(profile, IIOPProfile):
            return profile
    return None


def _offered(ior) -> CodeSetsComponent | None:
    """The code sets the first IIOP profile of ``ior`` offers (None: none, as in
    an IIOP 1.0 profile, which has no components)."""
    profile = _profile(ior)
    return None if profile is None else profile.component(CodeSetsComponent)


def _utf8_strings(whole: bytes, fields: list, place) -> None:
    """Strings whose bytes are UTF-8 multi-octet sequences where the char code set
    is ISO-8859-1: legal octets, but a UTF-8 sender's text the server misreads."""
    for f in fields:
        if f.kind != "value" or f.size < 5:
            continue
        length = _field_at(fields, f.offset, "length")
        if length is None or not length.path.startswith(f.path):
            continue
        text = whole[f.offset + 4:f.offset + f.size - 1]
        if max(text, default=0) < 0x80:
            continue
        try:
            decoded = text.decode("utf-8")
        except UnicodeDecodeError:
            continue
        first = next(i for i, b in enumerate(text) if b >= 0x80)
        sample = next(c for c in decoded if ord(c) >= 0x80)
        place("utf8-as-latin1",
              f"char data is ISO-8859-1 here (no code set negotiated) but these octets are "
              f"the UTF-8 encoding of {sample!a}: the server reads "
              f"{text[first:first + len(sample.encode())].decode('latin-1')!a}",
              f.offset + 4 + first, path=f.path)


def _field_at(fields, offset, kind):
    return next((f for f in fields if f.offset == offset and f.kind == kind), None)


# ----------------------------------------------------------------------------
# Bodies
def _check_body(decoder: IdlBodyDecoder, msg, tcs, place, kind, request=None) -> None:
    result, reader = decoder.decode(msg, request, tcs_c=tcs[0], tcs_w=tcs[1])
    if result is None:
        return
    base = msg.body_offset
    what = "argument" if kind == "arguments" else "exception member"
    prefix = "body" if kind == "arguments" else "exception"
    for w in result.get("warnings", []):
        place(w["code"], w["message"], base + w["offset"],
              "note" if w.get("severity") == "note" else "violation")
    error = result.get("error")
    if error is not None:
        offset = error["offset"]
        offset = base + offset if offset is not None else base + reader.pos
        text = error["message"]
        if "crosses the GIOP 1.1 fragment boundary" in text:
            what = text.split(" crosses ")[0]
            place("fragment-split-primitive", f"{what} split between two fragments: GIOP 1.1 "
                  "fragments are cut only between primitives", offset)
        elif "not allowed in GIOP 1.0" in text:
            place("wchar-in-1.0", f"{text}: char is ISO-8859-1 and wchar/wstring may not be "
                  "sent (the server answers MARSHAL, OMG minor 5)", offset)
        elif error["kind"] == "truncated":
            place(f"{prefix}-truncated", f"the {what}s read past the end of the message: "
                  f"{text}", offset)
        else:
            place(f"{prefix}-undecodable", text, offset)
    elif reader.remaining:
        place(f"{prefix}-trailing-bytes", f"{reader.remaining} bytes after the last {what}",
              base + reader.pos, path=f"{'request' if kind == 'arguments' else 'reply'}.body")


def _answer(ex: Explanation, reply, msg, decoder, tcs=None) -> None:
    if reply is None:
        return
    if isinstance(reply, SystemException):
        ex.answer = reply
        ex.reply_status = "SYSTEM_EXCEPTION"
        return
    try:
        answer, _ = decode_message(bytes(reply), lenient=True)
    except PycdrError as e:
        ex.findings.append(Finding(0, e.offset, "reply", "not-giop",
                                   f"the reply does not decode: {e}", side="reply"))
        return
    if not isinstance(answer, Reply):
        ex.reply_status = answer.msg_type.name
        return
    status = answer.reply_status
    ex.reply_status = ReplyStatus(status).name if status in ReplyStatus._value2member_map_ \
        else str(status)
    if status == ReplyStatus.SYSTEM_EXCEPTION:
        ex.answer = getattr(answer, "system_exception", None)
    elif status == ReplyStatus.USER_EXCEPTION:
        ex.user_exception = getattr(answer, "exception_id", None)
        if msg is not None and decoder is not None and \
                ex.user_exception in decoder.exceptions:
            exc = decoder.exceptions[ex.user_exception]
            fields = message_fields(bytes(reply), [exc], values=True,
                                    arg_names=[_exception_name(exc)])
            findings: list = []

            def place(code, text, offset, severity="violation", path=None):
                findings.append(Finding(0, offset, path or _path_at(fields, offset), code,
                                        text, severity, side="reply"))
            _check_body(decoder, answer, tcs or (cs.DEFAULT_TCS_C, cs.DEFAULT_TCS_W), place,
                        "exception", {"operation": msg.operation})
            ex.findings.extend(findings)


def _exception_name(exc) -> str:
    t = resolve(exc)
    return t.name() if t.kind() == TCKind.tk_except else "exception"


# ----------------------------------------------------------------------------
# Requests and their replies in the messages of captured connections
@dataclass
class Exchange:
    """One request as it crossed a connection: its messages (the first and its
    fragments), the reply (bytes; None when none came), the code sets a CodeSets
    context chose earlier on the connection, the target's IOR when the capture
    showed it before (a forward to the object key the request names)."""
    stream: int
    request_id: int
    messages: list
    reply: bytes | None = None
    code_sets: tuple | None = None
    ior: IOR | None = None

    def explain(self, **options) -> Explanation:
        """:func:`explain` of it; ``options``: modules, and ior to use another IOR."""
        options.setdefault("ior", self.ior)
        return explain(self.messages, self.reply, code_sets=self.code_sets, **options)


class Exchanges:
    """Pairs requests with their replies in the GIOP messages of connections,
    fed in stream order (``feed(stream, sender, raw)``, sender: anything naming
    the direction); ``done`` gets each :class:`Exchange` whose reply came and
    ``wanted(reply)`` accepts (default: a SYSTEM_EXCEPTION reply), ``finish()``
    the requests that got none when ``unanswered``.  A GIOP 1.1 Fragment goes
    with the request before it from the same sender, flagged or not (explain
    names the misuse).  At most ``max_pending`` requests wait for their reply, and
    as many IORs of forwards and GIOP 1.1 requests a Fragment may follow are kept."""

    def __init__(self, done, wanted=None, *, request_id: int | None = None,
                 unanswered: bool = False, max_pending: int = 4096):
        self.done = done
        self.wanted = wanted or _system_exception_reply
        self.request_id = request_id
        self.unanswered = unanswered
        self.max_pending = max_pending
        self._pending: dict = {}        # (stream, request id) -> Exchange
        self._last: dict = {}           # (stream, sender) -> the Exchange a 1.1 Fragment joins
        self._code_sets: dict = {}      # stream -> (TCS-C, TCS-W) of its first CodeSets context
        self._iors: dict = {}           # object key -> the IOR of a forward to it

    def feed(self, stream: int, sender, raw: bytes) -> None:
        try:
            header = parse_header(raw)
        except PycdrError:
            return
        t = header.msg_type
        if t == MsgType.Request:
            try:
                msg, _ = decode_message(raw, lenient=True)
            except PycdrError:
                return
            if self.request_id is not None and msg.request_id != self.request_id:
                self._last.pop((stream, sender), None)
                return
            key = getattr(msg.target, "object_key", None)
            exchange = Exchange(stream, msg.request_id, [raw], None,
                                self._code_sets.get(stream), self._iors.get(key))
            context = next((c for c in msg.service_contexts
                            if isinstance(c, sc.CodeSetsContext)), None)
            if context is not None and header.version >= (1, 1):
                self._code_sets.setdefault(stream, (context.char_data, context.wchar_data))
            if msg.response_expected or self.request_id is not None:
                if len(self._pending) >= self.max_pending:
                    self._pending.pop(next(iter(self._pending)))
                self._pending[(stream, msg.request_id)] = exchange
            if header.version == (1, 1):      # (only a 1.1 Fragment goes by its sender)
                if len(self._last) >= self.max_pending:
                    self._last.pop(next(iter(self._last)))
                self._last[(stream, sender)] = exchange
            else:
                self._last.pop((stream, sender), None)
        elif t == MsgType.Fragment:
            if header.version >= (1, 2) and len(raw) >= HEADER_SIZE + 4:
                rid = int.from_bytes(raw[12:16], "little" if header.little else "big")
                exchange = self._pending.get((stream, rid))
            else:
                exchange = self._last.get((stream, sender))
            if exchange is not None:
                exchange.messages.append(raw)
        elif t in (MsgType.Reply, MsgType.LocateReply):
            try:
                msg, _ = decode_message(raw, lenient=True)
            except PycdrError:
                return
            profile = _profile(msg.forward) if msg.forward is not None else None
            if profile is not None:
                if len(self._iors) >= self.max_pending:
                    self._iors.pop(next(iter(self._iors)))
                self._iors[profile.object_key] = msg.forward
            if t == MsgType.LocateReply:
                return
            exchange = self._pending.pop((stream, msg.request_id), None)
            if exchange is not None and self.wanted(msg):
                exchange.reply = raw
                self.done(exchange)

    def finish(self) -> None:
        if self.unanswered:
            for exchange in self._pending.values():
                self.done(exchange)
        self._pending.clear()


def _system_exception_reply(reply) -> bool:
    return reply.reply_status == ReplyStatus.SYSTEM_EXCEPTION
