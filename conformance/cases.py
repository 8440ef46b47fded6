"""The case catalog.  Every case is data: which messages to send (a template
with version, byte order, addressing, service contexts, body, and byte-level
mutations), how to deliver them (whole, split at every offset, byte by
byte), the outcomes the specification allows, the deviations real ORBs show
that are tolerated (with the reason), and the section of CORBA 3.x Part 2
(chapter 9, "General Inter-ORB Protocol") the case rests on.  The bytes are
rendered from the template and the target (:mod:`.rendering`), so a case can
be replayed, printed and exported as a pcap.
"""

from __future__ import annotations

from dataclasses import dataclass

from pycdr.giop.header import FLAG_MORE_FRAGMENTS, MsgType, encode_header
from pycdr.codec.values import Any

from .echo import WIDE_OPERATIONS, echo_values

VERSIONS = ((1, 0), (1, 1), (1, 2), (1, 3))
ORDERS = (False, True)     # big-endian, little-endian
UNKNOWN_KEY = b"pycdr-no-such-object-\xff"
NOT_A_TYPE = "IDL:pycdr/NoSuchInterface:1.0"
OBJECT_ID = "IDL:omg.org/CORBA/Object:1.0"


# --------------------------------------------------------------------------
# What may come back
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class Expect:
    """An outcome: its kind and details that must match (a detail given as a
    tuple matches any of its values)."""
    kind: str
    details: tuple = ()           # ((name, value), ...)

    def matches(self, outcome) -> bool:
        if outcome.kind != self.kind:
            return False
        for name, value in self.details:
            got = outcome.details.get(name)
            if isinstance(value, tuple):
                if got not in value:
                    return False
            elif got != value:
                return False
        return True

    def __str__(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self.details)
        return f"{self.kind}({inner})" if inner else self.kind


def E(kind: str, **details) -> Expect:
    return Expect(kind, tuple(sorted(details.items())))


# Why a deviation is tolerated rather than failed: every tolerance carries one of these codes,
# shown in every report and usable as a filter (`pycdr conformance --tolerated-reason`).
TOLERANCE_CODES = {
    "spec-silent": "the specification does not decide this; the endpoint's reading is one "
                   "its text leaves open",
    "lenient": "accepts (or ignores) input the specification calls invalid, where it names "
               "no reaction the receiver must show",
    "other-refusal": "refuses, as it should, but not in the form the specification asks "
                     "(another exception or completion status, a close without MessageError)",
    "impl-limit": "an implementation limit of the endpoint (a configured size, a feature or "
                  "code set it does not offer), not a protocol rule",
    "allowed-alternative": "an answer the specification allows besides the one expected",
}


@dataclass(frozen=True)
class Tolerance:
    """A deviation real ORBs show that does not fail a case: the outcome, why (``code``, one
    of TOLERANCE_CODES) and what the endpoint did (``reason``)."""
    expect: Expect
    code: str
    reason: str

    def __post_init__(self):
        if self.code not in TOLERANCE_CODES:
            raise ValueError(f"unknown tolerance code {self.code!r}")


def T(expect: Expect, code: str, reason: str) -> Tolerance:
    return Tolerance(expect, code, reason)


REFUSED = (E("message_error"), E("closed"))          # the two ways to reject bad framing
MARSHAL_OR_REFUSED = (E("system_exception", name=("MARSHAL", "BAD_PARAM")),) + REFUSED


# --------------------------------------------------------------------------
# What is sent
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class Msg:
    """A message template. ``kind``: request, locate, cancel, close,
    message_error, or raw (``raw`` holds the bytes)."""
    kind: str
    operation: str = "_non_existent"
    key: str = "target"                 # target | unknown | empty
    address: str = "key"                # key | profile | reference | reference-bad-index
    response_flags: int = 3
    contexts: tuple = ()                # names, see _contexts()
    body: tuple = ()                    # ("is_a", repo_id) | ("echo", op, value) | ("raw", bytes)
    request_id: int = 0                 # 0: the next id; else fixed
    mutate: tuple = ()                  # ((name, arg), ...), see _mutate()
    raw: bytes = b""
    fragment: int = 0                   # split into Fragments of this size (1.1+: see _fragments)
    version: tuple | None = None        # override the case's version for this message
    little: bool | None = None


@dataclass(frozen=True)
class Case:
    id: str
    title: str
    spec: str
    version: tuple
    little: bool
    send: tuple                          # Msg templates, sent in order
    expect: tuple                        # Expect: outcomes that pass
    tolerate: tuple = ()                 # Tolerance: deviations real ORBs show
    want: int = 1                        # messages to wait for (0: expect silence)
    delivery: str = "whole"              # whole | split-every-offset | bytewise
    timeout: float = 2.0
    linger: float = 0.0                  # keep reading after the answer (to see a close)
    risky: bool = False                  # check the endpoint is alive afterwards
    needs: str = ""                      # "" | "echo" (the conformance Echo interface)
    group: str = ""
    check: str = ""                      # a result check by name (see runner.CHECKS)
    special: str = ""                    # bytes made by a named renderer (SPECIAL), not `send`
    rationale: str = ""                  # why the verdicts are what they are, from the spec

    @property
    def variant(self) -> str:
        return f"{self.version[0]}.{self.version[1]}-{'LE' if self.little else 'BE'}"


# --------------------------------------------------------------------------
# The catalog
# --------------------------------------------------------------------------
S_HEADER = "9.4.1 GIOP Message Header"
S_REQUEST = "9.4.2 Request Message"
S_REPLY = "9.4.3 Reply Message"
S_CANCEL = "9.4.4 CancelRequest Message"
S_LOCATE = "9.4.5 LocateRequest Message"
S_LOCATE_REPLY = "9.4.6 LocateReply Message"
S_MESSAGE_ERROR = "9.4.8 MessageError Message"
S_FRAGMENT = "9.4.9 Fragment Message"
S_VERSION = "9.4.1 GIOP Message Header (version negotiation)"
S_CDR = "9.3 CDR Transfer Syntax"
S_ALIGN = "9.3.1.1 Alignment; 9.4.2.3 Request Body (GIOP 1.2 8-octet alignment)"
S_CODESETS = "13.10.2.5 Code Set Negotiation (CodeSets service context)"
S_CONTEXTS = "13.7 Service Context"
S_ENCAPS = "9.3.3 Encapsulation"
S_CLOSE = "9.4.7 CloseConnection Message; 9.5.1 connection management"
S_ZIOP = ("ZIOP 1.0 CompressionData; CORBA 3.x Part 1 system exceptions (IMP_LIMIT: "
          "\"the size of a parameter may have exceeded the allowed maximum\")")
ZIOP_BOMB_SIZE = 64 << 20        # what the case's 65 KB message inflates to

LOCATE_HERE = E("locate_reply", status="OBJECT_HERE")
REPLY = E("reply")
LAX_BOOLEAN = "lax boolean decoding: any non-zero octet is TRUE (omniORB does this by design)"

# Three verdicts the spec does not hand down directly; each case carries its reasoning.
RATIONALE_ODD_FRAGMENTS = (
    "9.4.9: in GIOP 1.2 and 1.3 every fragment but the last must be a multiple of 8 octets "
    "long. The rule binds the sender; no text names what a receiver does with a fragment that "
    "breaks it (MessageError is for headers that are not properly formed or unknown "
    "versions/types, 9.4.8). Refusing (MessageError, a close, MARSHAL) passes; accepting it "
    "is lenient; dropping the request without an answer is left open by the text, so it is "
    "tolerated as spec-silent, though the client is left waiting and a MessageError would be "
    "kinder.")
RATIONALE_UCS2 = (
    "13.10.2.5 and 9.3.1.6: in GIOP 1.2/1.3 a wstring is octets in the negotiated TCS-W. For "
    "UTF-16 the Unicode rule applies: no byte-order mark means big-endian. For UCS-2 the spec "
    "says nothing about the byte order (OMG issue 4008 was never resolved), and this case sends "
    "UCS-2 big-endian without a BOM. In a big-endian message both readings agree, so a wrong "
    "echo fails; in a little-endian message an endpoint that reads UCS-2 in the stream's order "
    "(as the OpenJDK and GlassFish ORBs do; JacORB reads big-endian) follows a reading the spec "
    "leaves open: tolerated as spec-silent.")
RATIONALE_BIG_MESSAGE = (
    "The spec sets no largest message; an endpoint may have a limit of its own (GlassFish "
    "reads at most 256,000 octets a message unless configured otherwise). Reporting it as "
    "IMP_LIMIT or NO_RESOURCES (the system exceptions for limits) or closing the connection "
    "(9.5.1 lets either side close; a client sees COMM_FAILURE) is tolerated as impl-limit; "
    "the close would better follow a MessageError or a CloseConnection.")
# A payload at least this big (octets) may meet an endpoint's configured read limit.
BIG_MESSAGE = 256_000
BIG_MESSAGE_LIMITS = (
    T(E("closed"), "impl-limit", "closes the connection: a message above its read limit"),
    T(E("system_exception", name=("IMP_LIMIT", "NO_RESOURCES")), "impl-limit",
      "refuses a message above its size limit with the limit's system exception"))


def _ucs2_stream_order() -> tuple:
    return (T(E("reply", echo_ok=False), "spec-silent",
              "reads UCS-2 without a BOM in the little-endian stream's byte order"),
            T(E("system_exception", name=("DATA_CONVERSION", "MARSHAL")), "spec-silent",
              "reads UCS-2 without a BOM in the stream's byte order and cannot convert it"))


UCS2_STREAM_ORDER = _ucs2_stream_order()


def _variants(versions=VERSIONS, orders=ORDERS):
    for v in versions:
        for little in orders:
            yield v, little


def _case(cid, title, spec, v, little, send, expect, **kw):
    if "tolerate" in kw:
        kw["tolerate"] = tuple(kw["tolerate"])
    return Case(id=f"{cid}[{v[0]}.{v[1]}-{'LE' if little else 'BE'}]", title=title, spec=spec,
                version=v, little=little, send=tuple(send), expect=tuple(expect),
                group=cid.split(".")[0], **kw)


def catalog(target_version=(1, 2)) -> list[Case]:
    cases: list[Case] = []
    add = cases.append
    # ---- Locate -----------------------------------------------------------
    for v, le in _variants():
        add(_case("locate.existing-key", "LocateRequest for the target's key", S_LOCATE, v, le,
                  [Msg("locate")], [LOCATE_HERE]))
        add(_case("locate.unknown-key", "LocateRequest for a key nobody serves", S_LOCATE, v, le,
                  [Msg("locate", key="unknown")], [E("locate_reply", status="UNKNOWN_OBJECT")],
                  tolerate=[T(E("locate_reply", status="LOC_SYSTEM_EXCEPTION"), "other-refusal",
                             "answers with an OBJECT_NOT_EXIST system exception instead")]))
    for v, le in _variants(((1, 2), (1, 3))):
        add(_case("locate.profile-addr", "LocateRequest addressed by an IIOP profile (ProfileAddr)",
                  S_LOCATE + "; 9.4.2.1 TargetAddress", v, le,
                  [Msg("locate", address="profile")], [LOCATE_HERE],
                  tolerate=[T(E("locate_reply", status="LOC_NEEDS_ADDRESSING_MODE"),
                              "allowed-alternative",
                              
                             "asks for KeyAddr instead (allowed by NEEDS_ADDRESSING_MODE)")],
                  risky=True))
        add(_case("locate.profile-addr-other-order",
                  "ProfileAddr whose profile encapsulation has the other byte order",
                  S_ENCAPS, v, le, [Msg("locate", address="profile-other-order")], [LOCATE_HERE],
                  tolerate=[T(E("locate_reply", status="LOC_NEEDS_ADDRESSING_MODE"),
                              "allowed-alternative",
                              
                             "asks for KeyAddr instead")], risky=True))
        add(_case("locate.reference-addr", "LocateRequest addressed by an IOR (ReferenceAddr)",
                  S_LOCATE + "; 9.4.2.1 TargetAddress", v, le,
                  [Msg("locate", address="reference")], [LOCATE_HERE],
                  tolerate=[T(E("locate_reply", status="LOC_NEEDS_ADDRESSING_MODE"),
                              "allowed-alternative",
                              
                             "asks for KeyAddr instead")], risky=True))
        add(_case("locate.reference-bad-index",
                  "ReferenceAddr whose selected_profile_index points past the profiles",
                  S_LOCATE + "; 9.4.2.1 TargetAddress", v, le,
                  [Msg("locate", address="reference-bad-index")],
                  [E("locate_reply", status=("UNKNOWN_OBJECT", "LOC_SYSTEM_EXCEPTION")),
                   *REFUSED], risky=True))
        add(_case("locate.reply-alignment", "LocateReply 1.2 body (OBJECT_HERE has none; "
                  "the status and request id sit unpadded after the header)",
                  S_LOCATE_REPLY, v, le, [Msg("locate")], [LOCATE_HERE],
                  check="locate_reply_unpadded"))

    # ---- Requests on any endpoint -------------------------------------------
    for v, le in _variants():
        add(_case("request.non-existent", "_non_existent on the target", S_REQUEST, v, le,
                  [Msg("request", operation="_non_existent")], [REPLY], check="boolean_false"))
        add(_case("request.is-a-true", "_is_a for CORBA::Object (every object is one)",
                  S_REQUEST, v, le, [Msg("request", operation="_is_a",
                                         body=("is_a", OBJECT_ID))], [REPLY],
                  check="boolean_true"))
        add(_case("request.is-a-false", "_is_a for an interface nobody implements", S_REQUEST,
                  v, le, [Msg("request", operation="_is_a", body=("is_a", NOT_A_TYPE))], [REPLY],
                  check="boolean_false"))
        add(_case("request.unknown-operation", "an operation the object does not have",
                  S_REQUEST, v, le, [Msg("request", operation="pycdr_no_such_operation")],
                  [E("system_exception", name="BAD_OPERATION", completed="COMPLETED_NO")],
                  tolerate=[T(E("system_exception", name="BAD_OPERATION"), "other-refusal",
                             "BAD_OPERATION with another completion status")]))
        add(_case("request.unknown-key", "a request to a key nobody serves", S_REQUEST, v, le,
                  [Msg("request", key="unknown")],
                  [E("system_exception", name="OBJECT_NOT_EXIST", completed="COMPLETED_NO")],
                  tolerate=[T(E("system_exception", name="OBJECT_NOT_EXIST"), "other-refusal",
                             "OBJECT_NOT_EXIST with another completion status"),
                            T(E("system_exception", name="OBJ_ADAPTER"), "other-refusal",
                             "OBJ_ADAPTER: no adapter for the key")]))
        add(_case("request.oneway", "a oneway request (no response expected) gets no reply",
                  S_REQUEST, v, le, [Msg("request", response_flags=0)], [E("silent")], want=0,
                  timeout=0.5))
        add(_case("request.unknown-context", "an unknown service context is ignored",
                  S_CONTEXTS, v, le, [Msg("request", contexts=("unknown",))], [REPLY]))
        add(_case("request.repeated-context", "the same unknown service context twice",
                  S_CONTEXTS, v, le, [Msg("request", contexts=("unknown", "unknown"))], [REPLY]))
        if v != (1, 0):
            add(_case("request.codesets-first", "a CodeSets context on the first request",
                      S_CODESETS, v, le, [Msg("request", contexts=("codesets",))], [REPLY]))
            add(_case("request.codesets-later", "a CodeSets context only on a later request",
                      S_CODESETS, v, le, [Msg("request"), Msg("request", contexts=("codesets",))],
                      [REPLY], want=2))
            add(_case("request.codesets-conflicting",
                      "a second, different CodeSets context on the same connection",
                      S_CODESETS, v, le,
                      [Msg("request", contexts=("codesets",)),
                       Msg("request", contexts=("codesets-utf8",))], [REPLY], want=2,
                      tolerate=[T(E("system_exception", name=("BAD_PARAM", "CODESET_INCOMPATIBLE",
                                                             "MARSHAL")), "spec-silent",
                                 "rejects the change of code sets")]))
            add(_case("request.codesets-other-order",
                      "a CodeSets context encapsulated in the other byte order",
                      S_ENCAPS, v, le, [Msg("request", contexts=("codesets-other-order",))],
                      [REPLY]))
        add(_case("request.byte-by-byte", "a LocateRequest sent one byte at a time",
                  S_HEADER, v, le, [Msg("locate")], [LOCATE_HERE], delivery="bytewise",
                  timeout=5.0))
        add(_case("request.split-every-offset",
                  "a _non_existent request split into two TCP segments at every byte offset",
                  S_HEADER, v, le, [Msg("request")], [REPLY], delivery="split-every-offset",
                  timeout=5.0))
    for v, le in _variants(((1, 2), (1, 3))):
        add(_case("request.response-flags-1", "response_flags 1 (SYNC_WITH_SERVER)",
                  S_REQUEST, v, le, [Msg("request", response_flags=1)], [REPLY],
                  tolerate=[T(E("silent"), "lenient",
                              "treats SYNC_WITH_SERVER as no response expected")],
                  timeout=1.0))
        add(_case("request.response-flags-3", "response_flags 3 (SYNC_WITH_TARGET)",
                  S_REQUEST, v, le, [Msg("request", response_flags=3)], [REPLY]))
        add(_case("request.response-flags-2", "response_flags 2 (reserved combination)",
                  S_REQUEST, v, le, [Msg("request", response_flags=2)],
                  [E("system_exception", name=("BAD_PARAM", "MARSHAL", "INV_FLAG")), *REFUSED],
                  tolerate=[T(REPLY, "lenient",
                              "treats the invalid value 2 as a response-expected flag"),
                            T(E("silent"), "lenient",
                              "treats the invalid value 2 as no response expected")],
                  timeout=1.0, risky=True))
        for address in ("profile", "reference"):
            add(_case(f"request.{address}-addr", f"_non_existent addressed by "
                      f"{'an IIOP profile (ProfileAddr)' if address == 'profile' else 'an IOR (ReferenceAddr)'}",
                      S_REQUEST + "; 9.4.2.1 TargetAddress", v, le,
                      [Msg("request", address=address)], [REPLY],
                      tolerate=[T(E("needs_addressing_mode"), "allowed-alternative",
                                 "asks for KeyAddr instead (allowed by NEEDS_ADDRESSING_MODE)")],
                      check="boolean_false", risky=True))
        add(_case("request.empty-body-unpadded",
                  "a 1.2 request with no arguments ends right after its header (no padding)",
                  S_ALIGN, v, le, [Msg("request")], [REPLY]))
        add(_case("request.empty-body-padded",
                  "a 1.2 request with no arguments but padding to 8 after the header",
                  S_ALIGN, v, le, [Msg("request", mutate=(("pad_empty_body", None),))],
                  [REPLY, E("system_exception", name="MARSHAL")], risky=True))

    # ---- Version negotiation ------------------------------------------------
    above = (target_version[0], target_version[1] + 1)
    for le in ORDERS:
        add(_case("version.above-advertised", f"a request in GIOP {above[0]}.{above[1]}, one "
                  "minor version above the endpoint's IOR", S_VERSION, above, le,
                  [Msg("request")], [E("message_error", version_le_target=True,
                                       then_closed=True)],
                  tolerate=[T(REPLY, "lenient", "answers a version its IOR does not advertise"),
                            T(E("message_error"), "other-refusal",
                              "a MessageError, but the connection stays "
                             "open or carries another version"),
                            T(E("closed"), "other-refusal",
                              "closes without the MessageError the spec asks for")],
                  linger=0.5, risky=True))
    for le in ORDERS:
        for bad in ((1, 9), (2, 0)):
            add(_case(f"version.minor-{bad[0]}-{bad[1]}",
                      f"a GIOP {bad[0]}.{bad[1]} LocateRequest", S_VERSION, (1, 2), le,
                      [Msg("locate", mutate=(("version", bad),))],
                      [E("message_error", version_le_target=True, then_closed=True)],
                      tolerate=[T(E("message_error"), "other-refusal",
                                  "a MessageError, but the connection stays "
                                 "open or carries another version"),
                                T(E("closed"), "other-refusal",
                                  "closes without the MessageError the spec asks "
                                 "for")], linger=0.5, risky=True))

    # ---- Fragmentation ------------------------------------------------------
    big_is_a = ("is_a", NOT_A_TYPE)
    for v, le in _variants(((1, 2), (1, 3))):
        add(_case("fragment.request-8", "a Request in Fragments of 8-multiple size", S_FRAGMENT,
                  v, le, [Msg("request", operation="_is_a", body=big_is_a, fragment=16)],
                  [REPLY], check="boolean_false"))
        add(_case("fragment.request-odd", "a Request in Fragments whose size is not a multiple "
                  "of 8 (1.2 wants multiples of 8)", S_FRAGMENT, v, le,
                  [Msg("request", operation="_is_a", body=big_is_a, fragment=13)],
                  [E("message_error"), E("closed"), E("system_exception", name="MARSHAL")],
                  tolerate=[T(REPLY, "lenient", "accepts fragments that are not a multiple of 8"),
                            T(E("silent"), "spec-silent",
                              "drops the request without a word (the client waits)")],
                  rationale=RATIONALE_ODD_FRAGMENTS, risky=True))
        add(_case("fragment.interleaved", "Fragments of two requests interleaved", S_FRAGMENT,
                  v, le, [], [REPLY], want=2, special="interleaved", check="boolean_false"))
        add(_case("fragment.cancel", "CancelRequest before the last Fragment of a request",
                  S_FRAGMENT + "; " + S_CANCEL, v, le, [], [E("silent")],
                  want=0, timeout=0.7, special="cancel_fragmented",
                  tolerate=[T(REPLY, "allowed-alternative",
                              "answers the cancelled request anyway (allowed: a reply "
                             "may cross the CancelRequest)")]))
        add(_case("fragment.more-on-cancel", "the more-fragments bit on a CancelRequest",
                  S_FRAGMENT, v, le, [Msg("cancel", mutate=(("flags_or", FLAG_MORE_FRAGMENTS),))],
                  [E("message_error")], tolerate=[T(E("silent"), "lenient", "ignores the flag"),
                                                  T(E("closed"), "other-refusal",
                                                    "closes without MessageError")],
                  timeout=0.7, risky=True))
        add(_case("fragment.split-every-offset",
                  "a fragmented request split at every byte offset (inside both headers)",
                  S_FRAGMENT, v, le, [Msg("request", operation="_is_a", body=big_is_a,
                                          fragment=16)], [REPLY],
                  delivery="split-every-offset", timeout=8.0))
    for le in ORDERS:
        v = (1, 1)
        add(_case("fragment.request-11", "a GIOP 1.1 Request in Fragments (no request_id)",
                  S_FRAGMENT, v, le, [Msg("request", operation="_is_a", body=big_is_a,
                                          fragment=24)], [REPLY], check="boolean_false"))
        add(_case("fragment.more-on-locate-11",
                  "the more-fragments bit on a GIOP 1.1 LocateRequest (1.1 may not fragment it)",
                  S_FRAGMENT, v, le, [Msg("locate", mutate=(("flags_or", FLAG_MORE_FRAGMENTS),))],
                  [E("message_error"), E("closed")],
                  tolerate=[T(LOCATE_HERE, "lenient", "ignores the flag and answers"),
                            T(E("silent"), "lenient", "waits for a Fragment that may not come")],
                  timeout=0.7, risky=True))
        add(_case("fragment.giop-1-0", "a Fragment message in GIOP 1.0 (which has none)",
                  S_FRAGMENT, (1, 0), le,
                  [Msg("raw", raw=encode_header((1, 0), le, MsgType.Fragment, 4) + b"\0\0\0\1")],
                  [E("message_error")],
                  tolerate=[T(E("closed"), "other-refusal", "closes without MessageError"),
                            T(E("silent"), "lenient", "ignores it")], timeout=0.7, risky=True))

    # ---- Malformed input ----------------------------------------------------
    for le in ORDERS:
        v = (1, 2)
        add(_case("malformed.bad-magic", "a header whose magic is GIOX", S_HEADER, v, le,
                  [Msg("locate", mutate=(("magic", b"GIOX"),))], REFUSED, linger=0.3,
                  tolerate=[T(E("silent"), "lenient",
                              "ignores the bytes (the spec asks for MessageError)")],
                  timeout=1.0, risky=True))
        add(_case("malformed.message-type", "message type 8 (only 0-7 exist)", S_HEADER, v, le,
                  [Msg("locate", mutate=(("msg_type", 8),))], REFUSED, linger=0.3,
                  tolerate=[T(E("silent"), "lenient",
                              "ignores the message")], timeout=1.0, risky=True))
        add(_case("malformed.size-larger", "message_size claims 64 more bytes than are sent",
                  S_HEADER, v, le, [Msg("locate", mutate=(("size_delta", 64),))],
                  [E("silent"), E("closed"), E("message_error")], timeout=1.0, want=0,
                  risky=True))
        add(_case("malformed.size-smaller", "message_size 4 bytes short: the tail of the body "
                  "reads as the next header", S_HEADER, v, le,
                  [Msg("locate", mutate=(("size_delta", -4),))],
                  [*REFUSED, E("locate_reply"), E("silent")], timeout=1.0, linger=0.3,
                  risky=True))
        add(_case("malformed.trailing-garbage", "a valid LocateRequest followed by garbage",
                  S_HEADER, v, le, [Msg("locate", mutate=(("append", b"\xde\xad\xbe\xef" * 4),))],
                  [LOCATE_HERE, *REFUSED], linger=0.3, risky=True))
        add(_case("malformed.truncated-header", "six bytes of a header, then nothing", S_HEADER,
                  v, le, [Msg("locate", mutate=(("truncate", 6),))],
                  [E("silent"), E("closed")], want=0, timeout=0.7, risky=True))
        add(_case("malformed.size-4gib", "message_size 0xfffffff0 (4 GiB)", S_HEADER, v, le,
                  [Msg("locate", mutate=(("size", 0xFFFFFFF0),))],
                  [E("message_error"), E("closed")],
                  tolerate=[T(E("silent"), "spec-silent",
                              "waits for 4 GiB (whether it allocates them cannot be "
                             "seen from here)")], timeout=1.0, linger=0.3, risky=True))
        add(_case("malformed.operation-length", "an operation name whose length is 0x7fffffff",
                  S_CDR, v, le, [], [*MARSHAL_OR_REFUSED],
                  tolerate=[T(E("silent"), "spec-silent", "waits for the 2 GiB the length claims")],
                  timeout=1.0, linger=0.3, risky=True, special="operation_length"))
        add(_case("malformed.operation-no-nul", "an operation name without its NUL", S_CDR,
                  v, le, [], [*MARSHAL_OR_REFUSED, E("system_exception", name="BAD_OPERATION")],
                  tolerate=[T(REPLY, "lenient",
                              "reads the name by its length and ignores the missing NUL")],
                  linger=0.3, risky=True, special="operation_no_nul"))
        add(_case("malformed.key-length", "an object key whose length runs past the message",
                  S_CDR, v, le, [], [*MARSHAL_OR_REFUSED],
                  tolerate=[T(E("silent"), "spec-silent", "waits for the bytes the length claims")],
                  timeout=1.0, linger=0.3, risky=True, special="key_length"))
        add(_case("malformed.operation-length-cut",
                  "the message ends 1 byte into the operation's length, after the object "
                  "key's padding", S_CDR, v, le, [],
                  [E("system_exception", name=("MARSHAL", "BAD_PARAM")), E("message_error")],
                  tolerate=[T(E("closed"), "other-refusal", "closes without MessageError"),
                            T(E("silent"), "lenient", "ignores the request")],
                  timeout=1.0, linger=0.3, risky=True, special="operation_length_cut"))
    for le in ORDERS:
        # One budget for a message, compressed or not: a receiver that takes ZIOP
        # checks what it inflates to against its message limit, while inflating.
        # The reference ORB answers IMP_LIMIT (minor 0 in the OMG's set: no standard
        # minor code names a size limit), COMPLETED_NO, and serves on.
        add(_case("malformed.ziop-bomb", f"a 65 KB ZIOP _non_existent that inflates to "
                  f"{ZIOP_BOMB_SIZE >> 20} MiB", S_ZIOP, (1, 2), le, [],
                  [E("system_exception", name="IMP_LIMIT", completed="COMPLETED_NO"),
                   E("system_exception", name="MARSHAL"), *REFUSED],
                  tolerate=[T(REPLY, "impl-limit",
                              "inflates and serves it: its message limit is higher")],
                  timeout=5.0, linger=0.3, risky=True, special="ziop_bomb"))
    for le in ORDERS:
        for value in (2, 255):
            add(_case(f"malformed.boolean-{value}", f"GIOP 1.0 response_expected = {value}",
                      S_CDR + " (boolean)", (1, 0), le, [], [*MARSHAL_OR_REFUSED],
                      tolerate=[T(REPLY, "lenient", LAX_BOOLEAN)], linger=0.3, risky=True,
                      special=f"boolean:{value}"))
    return cases


def echo_catalog(module, interface) -> list[Case]:
    """Cases for the conformance Echo interface (every IDL type, padding, wide
    characters, big payloads). ``module``/``interface``: its pycdr.idl objects."""
    operations = interface.all_operations()
    cases = []
    for v, le in _variants():
        for op_name, args, note in echo_values(module):
            if op_name not in operations:
                continue
            wide = op_name in WIDE_OPERATIONS
            if wide and v == (1, 0):
                if note:
                    continue        # one refusal case per operation is enough
                cases.append(_case(f"echo.{op_name}", f"{op_name} in GIOP 1.0 (which has "
                                   "no wchar): MARSHAL", S_CODESETS, v, le, [],
                                   [E("system_exception", name="MARSHAL")],
                                   tolerate=[T(E("system_exception", name=("BAD_PARAM",
                                                                          "DATA_CONVERSION",
                                                                          "INV_OBJREF")),
                                              "other-refusal", "refuses wide characters "
                                              "with another exception")],
                                   needs="echo-wide", risky=True,
                                   special=f"wide_1_0:{op_name}"))
                continue
            big = sum(len(a) for a in args if isinstance(a, (bytes, str))) >= BIG_MESSAGE
            cases.append(_case(f"echo.{op_name}{note}", f"{op_name} round trip", S_CDR, v, le,
                               [Msg("request", operation=op_name, body=("echo", op_name, args),
                                    contexts=("codesets",) if wide and v > (1, 0) else ())],
                               [E("reply", echo_ok=True)],
                               tolerate=BIG_MESSAGE_LIMITS if big else (),
                               rationale=RATIONALE_BIG_MESSAGE if big else "",
                               needs="echo-wide" if wide else "echo",
                               check="echo", timeout=5.0))
    Mixed = module["EchoAll::Mixed"]
    records = [Mixed(s=-i, us=i, l=i * 1000, ul=i, ll=-2**40 - i, ull=2**50 + i, f=0.5 * i,
                     d=-1.25 * i, b=bool(i % 2), c="r", o=i, str="r" * i, hue=module["EchoAll::Color"].red)
               for i in range(12)]
    for le in ORDERS:
        cases.append(_case("echo.records-fragmented-11",
                           "echo_records in GIOP 1.1 Fragments of 36 data bytes: each fragment's "
                           "data realigned from its own start, padding left at a fragment's end",
                           S_FRAGMENT, (1, 1), le,
                           [Msg("request", operation="echo_records",
                                body=("echo", "echo_records", (records,)), fragment=36)],
                           [E("reply", echo_ok=True)],
                           tolerate=[T(E("system_exception", name="NO_IMPLEMENT"), "impl-limit",
                                      "does not take GIOP 1.1 fragments (JacORB)")],
                           needs="echo", check="echo", timeout=5.0))
    color = module["EchoAll::Color"]
    node_tc = module.types["EchoAll::Node"]
    Node = module["EchoAll::Node"]
    node = Node(1, [Node(2, []), Node(3, [])])
    for v, le in _variants():
        cases.append(_case("echo.enum-out-of-range", "echo_color with ordinal 7 (Color has 3)",
                           S_CDR + " (enum)", v, le,
                           [Msg("request", operation="echo_color",
                                body=("echo", "echo_color", (color.blue,)))],
                           [E("system_exception", name=("MARSHAL", "BAD_PARAM"))],
                           tolerate=[T(E("reply"), "lenient",
                                       "accepts an enum value out of range")],
                           needs="echo", risky=True, special="enum_range"))
        cases.append(_case("echo.typecode-other-order",
                           "an any whose TypeCode encapsulations have the other byte order",
                           S_ENCAPS + "; 9.3.5.1 TypeCode", v, le,
                           [Msg("request", operation="echo_any",
                                body=("echo", "echo_any", (Any(node_tc, node),)))],
                           [E("reply", echo_ok=True)], needs="echo", check="echo",
                           special="typecode_other_order"))
    for v, le in _variants(((1, 2), (1, 3))):
        for bom in ("feff", "fffe"):
            text = "bom \u20ac"
            cases.append(_case(f"echo.wstring-bom-{bom}", f"a GIOP 1.2 wstring starting with "
                               f"the byte-order mark {bom.upper()}", S_CODESETS + " (UTF-16 BOM)",
                               v, le, [Msg("request", operation="echo_wstring",
                                           body=("echo", "echo_wstring", (text,)),
                                           contexts=("codesets",))],
                               [E("reply", echo_ok=True)], needs="echo-wide", check="echo",
                               special=f"wstring_bom:{bom}"))
    for v, le in _variants(((1, 1), (1, 2), (1, 3))):
        cases.append(_case("echo.wstring-ucs2", "wstring with UCS-2 negotiated as TCS-W",
                           S_CODESETS, v, le,
                           [Msg("request", operation="echo_wstring",
                                body=("echo", "echo_wstring", ("ucs-2 \u00e9\u20ac",)),
                                contexts=("codesets-ucs2",))],
                           [E("reply", echo_ok=True)], needs="echo-wide", check="echo",
                           tolerate=[T(E("system_exception", name="CODESET_INCOMPATIBLE"),
                                       "impl-limit", "does not accept UCS-2 as the wchar code "
                                       "set"),
                                     *(UCS2_STREAM_ORDER if le and v >= (1, 2) else ())],
                           rationale=RATIONALE_UCS2))
    for v, le in _variants(((1, 2), (1, 3))):
        # Service contexts of 0..7 data bytes make the header end at every
        # offset mod 8, so 0..7 padding bytes precede the 8-aligned body.
        for n in range(8):
            cases.append(_case(f"align.body-after-{n}-context-bytes",
                               "echo_longlong after a header that needs padding before the body",
                               S_ALIGN, v, le,
                               [Msg("request", operation="echo_longlong",
                                    body=("echo", "echo_longlong", (-2**62 - 3,)),
                                    contexts=(f"pad:{n}",))],
                               [E("reply", echo_ok=True)], needs="echo",
                               check="echo"))
        cases.append(_case("align.nonzero-padding", "padding bytes that are not zero "
                           "(their value is undefined)", S_ALIGN, v, le,
                           [Msg("request", operation="echo_longlong",
                                body=("echo", "echo_longlong", (7,)), contexts=("pad:3",),
                                mutate=(("nonzero_padding", None),))],
                           [E("reply", echo_ok=True)], needs="echo",
                           check="echo"))
    return cases
    return cases
