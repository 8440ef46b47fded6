"""The client case catalog: the suite as a crafted server.

Each case is data: the object served (the IIOP version of its IOR profile, its CODE_SETS
component), the operation of conformance/echo.idl the client is asked to call, how the server
answers it (a named script of client_runner.SCRIPTS, with parameters: a reply in a given byte
order, with service contexts, fragmented, forwarded, refused, cut short ...), the outcomes the
specification allows, the tolerated deviations (with a TOLERANCE_CODES reason), and the section of
CORBA 3.x Part 2 the verdict rests on.

The client command's contract (docs/conformance.md, "Testing an ORB's client"): it calls the
operation with the arguments of CONTRACT, prints what it got as one JSON line and exits:

    {"result": VALUE}
    {"system_exception": {"name": "TRANSIENT", "minor": 0, "completed": "COMPLETED_NO"}}
    {"user_exception": {"id": "IDL:EchoAll/Oops:1.0", "members": {"code": 7, "why": "crafted"}}}

(``name`` may be given as ``exception_id``, the repository id; ``completed`` as 0, 1 or 2.)
"""

from __future__ import annotations

from dataclasses import dataclass

from pycdr import codesets
from pycdr.orb.jsonvalues import from_json, to_json
from pycdr.codec.typecode import TCKind as K

from .cases import (BIG_MESSAGE, RATIONALE_BIG_MESSAGE, E, T, S_CLOSE, S_CODESETS, S_CONTEXTS,
                    S_FRAGMENT, S_MESSAGE_ERROR, S_REPLY, S_ALIGN, S_HEADER)
from .echo import ECHO_INTERFACE, ECHO_REPO_ID, WIDE_OPERATIONS, echo_values, load_echo_module

# The object key of the reference echo_object is answered with (the crafted server's own).
ANSWERED_KEY = "PycdrClientAnswered"
# The arguments the client passes and the value the crafted server answers with (different
# from the argument, so a client that prints its own argument is caught), in the JSON forms of
# pycdr.orb.jsonvalues.
CONTRACT = {
    "echo_long": {"args": [42], "reply": -123456789},
    "echo_longlong": {"args": [7], "reply": -4611686018427387907},
    "echo_string": {"args": ["hello"], "reply": "h\u00e9llo w\u00f6rld"},
    "echo_wstring": {"args": ["wide"], "reply": "h\u00e9 \u20ac"},
    "echo_raise": {"args": [7], "reply": None},
    # An object reference is answered as the server's own Echo under another key; the client
    # prints it as a stringified IOR, judged by its type id and object key (an ORB may
    # stringify it again with other components).
    "echo_object": {"args": [None], "reply": {"type_id": ECHO_REPO_ID,
                                              "object_key": ANSWERED_KEY}},
    # Operations with inout/out parameters: "result" is a list, the return value (if not void)
    # then the out/inout values in the order of the parameters.
    "echo_inout": {"args": [5, "in"], "reply": [-7, "inout out"]},
    "echo_multi": {"args": [3, 1.5], "reply": [-123456789, -2.25]},
    "note": {"args": ["hello"], "reply": None},
    "_get_counter": {"args": [], "reply": 31337},
    "_set_counter": {"args": [12], "reply": None},
}
OOPS_ID = "IDL:EchoAll/Oops:1.0"
OOPS_MEMBERS = {"code": 7, "why": "crafted"}
UNDECLARED_ID = "IDL:pycdr/NotDeclared:1.0"
# A long reply for the fragment and trickle cases: several fragments' worth.
LONG_STRING = "".join(f"fragment {i:03d}; " for i in range(60))
OTHER_LONG_STRING = "".join(f"second call, piece {i:03d}; " for i in range(40))

S_FORWARD = "9.4.3 Reply Message (LOCATION_FORWARD, LOCATION_FORWARD_PERM); 9.5 Object location"
S_ADDRESSING = "9.4.3 Reply Message (NEEDS_ADDRESSING_MODE); 9.4.2.1 TargetAddress"
S_SYSEXC = "9.4.3.2 Reply Body (SYSTEM_EXCEPTION); Part 1 4.12.3 completion status"
S_USEREXC = "9.4.3.2 Reply Body (USER_EXCEPTION); Part 1 4.12.2 (UNKNOWN for undeclared)"
S_REQUEST_ID = "9.4.3.1 Reply Header (request_id matches a Request)"
S_SIZE = "9.4.1 GIOP Message Header (message_size)"
S_PARAMS = "9.4.3.2 Reply Body (return value, then inout and out parameters in order); 9.3 CDR"
S_ONEWAY = ("9.4.2.1 Request Header (response_expected / response_flags: SyncScope NONE or "
            "WITH_TRANSPORT for a oneway); Part 1 7.4.4 oneway")
S_OBJREF = "9.3.4 Object References (an IOR in a reply body); 7.6 IOR"
S_ATTRIBUTE = "Part 1 7.4.5 Attribute Declaration (_get_/_set_ operations)"

ANY_FAILURE = E("system_exception")
# How ORBs report a call their own timeout ended (CORBA::TIMEOUT since CORBA 3.0; omniORB
# says TRANSIENT, older ORBs NO_RESPONSE or COMM_FAILURE), or a claim refused first.
OWN_TIMEOUT = E("system_exception", name=("TIMEOUT", "TRANSIENT", "NO_RESPONSE", "COMM_FAILURE",
                                          "IMP_LIMIT", "MARSHAL", "NO_MEMORY"))
CONNECTION_LOST = E("system_exception", name=("COMM_FAILURE", "TRANSIENT"))


@dataclass(frozen=True)
class ClientCase:
    id: str
    title: str
    spec: str
    operation: str                 # the operation of echo.idl the client is asked to call
    script: str                    # how the server answers (client_runner.SCRIPTS)
    expect: tuple                  # Expect: outcomes that pass
    tolerate: tuple = ()           # Tolerance
    version: tuple = (1, 2)        # the IIOP version of the served IOR's profile
    little: bool = False           # the byte order of the server's replies
    params: tuple = ()             # ((name, value), ...) for the script
    codesets: tuple | None = None  # CODE_SETS component: (char native, char conv, wchar native,
                                   #  wchar conv); None: no component
    reply_value: object = None     # the value answered (None: CONTRACT's)
    arguments: list | None = None  # the arguments the client passes (None: CONTRACT's)
    calls: int = 1                 # how many calls the client makes at once ({count})
    group: str = ""
    timeout: float = 15.0          # seconds the client may take; then it is killed ("hung")
    rationale: str = ""

    @property
    def wide(self) -> bool:
        return self.operation in WIDE_OPERATIONS

    @property
    def args(self) -> list:
        return CONTRACT[self.operation]["args"] if self.arguments is None else self.arguments

    @property
    def expected_value(self):
        return CONTRACT[self.operation]["reply"] if self.reply_value is None else self.reply_value

    @property
    def expected_values(self) -> list:
        """What each of the concurrent calls is answered (the second with the "second"
        parameter)."""
        return [self.expected_value, self.param("second")][:self.calls]

    def param(self, name, default=None):
        return dict(self.params).get(name, default)


def _case(cid, title, spec, operation, script, expect, *, version=(1, 2), little=False,
          tolerate=(), params=(), **kw) -> ClientCase:
    return ClientCase(id=f"{cid}[{version[0]}.{version[1]}-{'LE' if little else 'BE'}]",
                      title=title, spec=spec, operation=operation, script=script,
                      expect=tuple(expect), tolerate=tuple(tolerate), version=version,
                      little=little, params=tuple(params), group=cid.split(".")[0], **kw)


RESULT_OK = E("result", ok=True)
ISO_UTF16 = (codesets.ISO_8859_1, (codesets.UTF_8,), codesets.UTF_16, ())
UTF8_ONLY = (codesets.UTF_8, (), codesets.UTF_16, ())
# The type cases' CODE_SETS: no UTF-8 for char, so a non-ASCII char can be answered in one octet
# whichever code set the client picks (with UTF-8 as TCS-C, 'é' is no char at all).
ISO_ONLY_UTF16 = (codesets.ISO_8859_1, (), codesets.UTF_16, ())

RATIONALE_CLOSE = (
    "9.4.7/9.5.1: a server that sends CloseConnection has not processed the requests it did "
    "not answer, so the client may reissue them on a new connection (transparently) or report "
    "TRANSIENT (COMPLETED_NO). An orderly close with no CloseConnection is different: the "
    "client cannot know whether the request ran, so COMM_FAILURE with COMPLETED_MAYBE is the "
    "answer, and reissuing the request breaks at-most-once semantics.")
RATIONALE_UNKNOWN_ID = (
    "9.4.3.1: request_id associates a Reply with its Request. The text names no reaction to a "
    "Reply for an id never used; ignoring it and taking the right Reply that follows is the "
    "robust reading, a client that gives up on the connection (COMM_FAILURE, MARSHAL, INTERNAL) "
    "is tolerated as spec-silent; hanging or reporting the stray reply's value fails.")
RATIONALE_13 = (
    "An IOR with an IIOP 1.3 profile: 9.4 and 15.7.2 let a client send any GIOP version up "
    "to the profile's (1.0 .. 1.3; a request above it is judged a bad request); the crafted "
    "server answers in the request's version, as 9.4 asks.")
RATIONALE_INTERLEAVED = (
    "9.3.3.4 (GIOP 1.2 Fragment): fragments of different Requests or Replies may be "
    "interleaved on a connection, each Fragment naming its request_id. Only a client with two "
    "calls outstanding on one connection can meet it: the client command makes {count} "
    "calls at once. A client that opens a connection per outstanding call never sees "
    "interleaved replies (tolerated as impl-limit; each call's reply is still fragmented); one "
    "whose second call comes only after the first was answered (PAIR_WAIT) did not make them "
    "at once and fails; a command without {count} is not run.")
RATIONALE_OWN_TIMEOUT = (
    "No GIOP rule bounds how long a reply may take; a client's own call timeout (the Messaging "
    "RelativeRoundtripTimeoutPolicy, or the ORB's configuration) must end the call, and must "
    "not wait for the octets a header merely claims. The contract asks client commands to set a "
    "call timeout below the case's 15 s, so a client still waiting then is judged hung.")
RATIONALE_ONEWAY = (
    "A oneway operation has no reply: the client sends its Request with response_expected "
    "false (GIOP 1.0/1.1) or response_flags 0 (GIOP 1.2: SyncScope NONE or WITH_TRANSPORT, the "
    "default) and returns without waiting. The crafted server answers a request that asks for "
    "a reply anyway (an empty one), so a client that waits is told apart from one that hangs.")
RATIONALE_HUGE = (
    "A message_size the server never fills must not be allocated up front (the house rule for "
    "every decoder) and the connection's close must end the call: COMM_FAILURE (or MARSHAL / "
    "IMP_LIMIT / NO_MEMORY for a client that refuses the claim first). A client that hangs "
    "after the close, or crashes, fails.")


# The operations whose replies have padding inside or before a member (the server suite's
# padding cases): answered in every GIOP version and byte order, the others in GIOP 1.2 only.
PADDING_OPERATIONS = ("echo_longlong", "echo_padding", "echo_reverse", "echo_mixed",
                      "echo_bycolor", "echo_grid")
RATIONALE_TYPES = (
    "Generated from echo.idl and the server suite's values (conformance.echo.echo_values): the "
    "client passes the smallest value of the parameter's type (zero, empty, the first "
    "enumerator, the first branch) and is answered with the server suite's value, so a client "
    "that prints its own argument is caught. Values with no JSON form (an any holding a "
    "constructed TypeCode) are left out.")


# A client's own limit on a reply's size (the server suite's BIG_MESSAGE_LIMITS, seen from the
# client: the limit's system exception, or the connection it closed).
BIG_REPLY_LIMITS = (
    T(E("system_exception", name=("IMP_LIMIT", "NO_RESOURCES", "COMM_FAILURE")), "impl-limit",
      "refuses a reply above its own read limit (closing the connection: COMM_FAILURE)"),)


def minimal_json(t):
    """The JSON form of the smallest value of type ``t``: zeros (a fixed: one), empty strings
    and sequences, the first enumerator, a union's first labelled branch, a nil reference."""
    while t.kind() == K.tk_alias:
        t = t.content_type()
    k = t.kind()
    if k in (K.tk_float, K.tk_double):
        return 0.0
    if k == K.tk_boolean:
        return False
    if k in (K.tk_char, K.tk_wchar):
        return "a"
    if k in (K.tk_string, K.tk_wstring):
        return ""
    if k == K.tk_fixed:
        # Not zero: JacORB cannot pass a fixed zero through its Any (NumberFormatException
        # "Zero length BigInteger" before anything is sent), which would hide the reply case.
        return "1"
    if k == K.tk_enum:
        return t.member_name(0)
    if k in (K.tk_struct, K.tk_except):
        return {t.member_name(i): minimal_json(t.member_type(i)) for i in range(t.member_count())}
    if k == K.tk_union:
        i = next(i for i in range(t.member_count()) if i != t.default_index())
        label, d_type = t.member_label(i), t.discriminator_type()
        if d_type.kind() == K.tk_enum and isinstance(label, int):
            label = d_type.member_name(label)
        return {"d": to_json(label), "v": minimal_json(t.member_type(i))}
    if k == K.tk_sequence:
        return []
    if k == K.tk_array:
        return [minimal_json(t.content_type()) for _ in range(t.length())]
    if k == K.tk_any:
        return {"type": "long", "value": 0}
    if k == K.tk_objref:
        return None
    return 0                                         # the integer types


def json_round_trips(t, obj) -> bool:
    try:
        return to_json(from_json(t, obj)) == obj
    except ValueError:
        return False


def type_cases() -> list[ClientCase]:
    """A reply case for every operation of echo.idl with one parameter and a result, with the
    server suite's values (every type, the padding worst and best cases)."""
    module = load_echo_module()
    operations = module.interfaces[ECHO_INTERFACE].all_operations()
    cases = []
    for op_name, values, note in echo_values(module):
        op = operations[op_name]
        reply = to_json(values[0])
        if not json_round_trips(op.result, reply):
            continue
        # In its canonical JSON form (an empty octet sequence is "", not []).
        argument = to_json(from_json(op.in_params[0].type, minimal_json(op.in_params[0].type)))
        if argument == reply:
            # An empty reply: pass another of the suite's values for it.
            argument = next(to_json(v[0]) for o, v, _ in echo_values(module)
                            if o == op_name and to_json(v[0]) != reply)
        versions = ((1, 0), (1, 1), (1, 2)) if op_name in PADDING_OPERATIONS else ((1, 2),)
        big = sum(len(v) for v in values if isinstance(v, (bytes, str))) >= BIG_MESSAGE
        for v in versions:
            if op_name in WIDE_OPERATIONS and v < (1, 1):
                continue
            for le in (False, True):
                cases.append(_case(f"type.{op_name[5:]}{note}", f"{op_name} answered with the "
                                   "server suite's value", S_REPLY + "; 9.3 CDR", op_name, "reply",
                                   [RESULT_OK], version=v, little=le, codesets=ISO_ONLY_UTF16,
                                   reply_value=reply, arguments=[argument],
                                   tolerate=BIG_REPLY_LIMITS if big else (),
                                   rationale=RATIONALE_TYPES
                                   + (" " + RATIONALE_BIG_MESSAGE if big else "")))
    return cases


def client_catalog() -> list[ClientCase]:
    cases: list[ClientCase] = []
    add = cases.append
    # ---- Replies in each version and byte order ----------------------------------------
    for v in ((1, 0), (1, 1), (1, 2), (1, 3)):
        for le in (False, True):
            add(_case("reply.echo-long", "echo_long answered in the request's GIOP version "
                      "and the given byte order", S_REPLY, "echo_long", "reply", [RESULT_OK],
                      version=v, little=le))
            add(_case("reply.echo-string", "echo_string (ISO-8859-1 text) answered",
                      S_REPLY, "echo_string", "reply", [RESULT_OK], version=v, little=le,
                      rationale=RATIONALE_13 if v == (1, 3) else ""))
        add(_case("reply.echo-longlong", "echo_longlong: an 8-aligned value after the header",
                  S_REPLY, "echo_longlong", "reply", [RESULT_OK], version=v, little=v[1] % 2 == 1))
    cases.extend(type_cases())
    # ---- The other operations: an object reference, inout/out values, oneway, attribute --
    for le in (False, True):
        add(_case("ops.echo-object", "echo_object answered with another Echo reference: the "
                  "client reports it (its type id and object key)", S_OBJREF, "echo_object",
                  "reply", [RESULT_OK], little=le))
        add(_case("ops.echo-inout", "echo_inout: the reply carries both inout values (a long, "
                  "then a string)", S_PARAMS, "echo_inout", "reply", [RESULT_OK], little=le))
    for v in ((1, 0), (1, 1), (1, 2)):
        for le in (False, True):
            add(_case("ops.echo-multi", "echo_multi: a long result then the inout double, "
                      "4 octets of padding between them", S_PARAMS + "; " + S_ALIGN,
                      "echo_multi", "reply", [RESULT_OK], version=v, little=le))
    for v, le in (((1, 0), False), ((1, 2), True)):
        add(_case("ops.note-oneway", "the oneway note: sent with no response expected, the "
                  "call returns with no reply", S_ONEWAY, "note", "reply",
                  [E("result", ok=True, requests=1, response_flags=0)], version=v, little=le,
                  rationale=RATIONALE_ONEWAY))
    add(_case("ops.counter-get", "_get_counter: the attribute's value", S_ATTRIBUTE,
              "_get_counter", "reply", [RESULT_OK]))
    add(_case("ops.counter-set", "_set_counter: the attribute set (a void reply)",
              S_ATTRIBUTE, "_set_counter", "reply", [RESULT_OK], little=True))
    # ---- GIOP 1.2 reply-body alignment, unknown service contexts -----------------------
    for n in range(8):
        add(_case(f"align.reply-body-after-{n}-context-bytes",
                  "echo_longlong reply whose header ends n mod 8: the body starts 8-aligned "
                  "(an unknown service context pads the header)",
                  S_ALIGN, "echo_longlong", "reply", [RESULT_OK], little=n % 2 == 1,
                  params=(("contexts", (("pad", n),)),)))
    for le in (False, True):
        add(_case("align.reply-body-unpadded", "a GIOP 1.2 echo_longlong reply without the "
                  "padding before its body: read 8-aligned, the value runs past the end",
                  S_ALIGN, "echo_longlong", "unpadded", [E("system_exception", name="MARSHAL")],
                  tolerate=[T(E("system_exception", name=("COMM_FAILURE", "INTERNAL")),
                              "other-refusal", "refuses the short reply with another "
                              "exception")], little=le))
        add(_case("context.unknown-in-reply", "a reply with two unknown service contexts "
                  "(one with a vendor id, one empty) is read, the contexts ignored",
                  S_CONTEXTS, "echo_long", "reply", [RESULT_OK], little=le,
                  params=(("contexts", (("unknown", 0), ("empty", 0))),)))
    # ---- Exceptions ----------------------------------------------------------------------
    for status in ("COMPLETED_YES", "COMPLETED_NO", "COMPLETED_MAYBE"):
        for le in (False, True):
            add(_case(f"sysexc.{status.split('_')[1].lower()}",
                      f"NO_PERMISSION (minor 0x50590007) with {status} is reported as it came",
                      S_SYSEXC, "echo_long", "system_exception",
                      [E("system_exception", name="NO_PERMISSION", completed=status,
                         minor=0x50590007, requests=1)],
                      tolerate=[T(E("system_exception", name="NO_PERMISSION", requests=1),
                                  "other-refusal", "reports the exception with another "
                                  "completion status or minor code")],
                      little=le, params=(("name", "NO_PERMISSION"), ("completed", status))))
    for le in (False, True):
        add(_case("userexc.declared", "echo_raise answered with the declared Oops exception",
                  S_USEREXC, "echo_raise", "user_exception",
                  [E("user_exception", id=OOPS_ID, members_ok=True)], little=le))
        add(_case("userexc.undeclared", "a user exception the operation does not raise: the "
                  "client reports UNKNOWN", S_USEREXC, "echo_long", "user_exception",
                  [E("system_exception", name="UNKNOWN")],
                  tolerate=[T(E("system_exception", name="MARSHAL"), "other-refusal",
                              "MARSHAL: cannot read an exception it does not know")],
                  little=le, params=(("id", UNDECLARED_ID),)))
    # ---- Location forwarding, addressing ---------------------------------------------------
    for v in ((1, 0), (1, 2)):
        add(_case("forward.location-forward", "LOCATION_FORWARD to another object: the client "
                  "reissues the request there", S_FORWARD, "echo_long", "forward",
                  [E("result", ok=True, forwarded=True)], version=v))
    add(_case("forward.location-forward-perm", "LOCATION_FORWARD_PERM (GIOP 1.2)", S_FORWARD,
              "echo_long", "forward", [E("result", ok=True, forwarded=True)],
              params=(("perm", True),)))
    for v in ((1, 0), (1, 2)):
        add(_case("forward.loop", "every request forwarded to the other of two objects: the "
                  "client must give up, not spin", S_FORWARD, "echo_long", "forward",
                  [ANY_FAILURE], version=v, params=(("loop", True),), timeout=10.0))
    add(_case("addressing.needs-profile", "NEEDS_ADDRESSING_MODE asking for ProfileAddr: the "
              "client resends the request addressed by its profile", S_ADDRESSING, "echo_long",
              "needs_addressing", [E("result", ok=True, readdressed=True)],
              tolerate=[T(E("system_exception", readdressed=False), "impl-limit",
                          "does not resend with another addressing mode")]))
    # ---- Request ids, MessageError, closing --------------------------------------------------
    for le in (False, True):
        add(_case("request-id.unknown-reply-first", "a reply for a request id never used, then "
                  "the right reply", S_REQUEST_ID, "echo_long", "unknown_id_first",
                  [RESULT_OK],
                  tolerate=[T(E("system_exception", name=("COMM_FAILURE", "MARSHAL",
                                                          "INTERNAL")), "spec-silent",
                              "gives up on the connection after a reply it did not expect")],
                  little=le, rationale=RATIONALE_UNKNOWN_ID))
    add(_case("message-error.instead-of-reply", "the server answers the request with "
              "MessageError and closes", S_MESSAGE_ERROR, "echo_long", "message_error",
              [E("system_exception", name=("COMM_FAILURE", "MARSHAL", "TRANSIENT"))]))
    add(_case("close.close-connection-before-reply", "CloseConnection instead of the reply, "
              "then the next connection answers: a retry is allowed (nothing was done)",
              S_CLOSE, "echo_long", "close_connection",
              [E("result", ok=True, reconnected=True),
               E("system_exception", name=("TRANSIENT", "COMM_FAILURE"),
                 completed="COMPLETED_NO")],
              tolerate=[T(CONNECTION_LOST, "other-refusal",
                          "reports the lost connection with another completion status")],
              rationale=RATIONALE_CLOSE))
    add(_case("close.abrupt-before-reply", "the server closes (no CloseConnection) after "
              "reading the request: the call may have run, so no silent retry",
              S_CLOSE, "echo_long", "abrupt_close",
              [E("system_exception", name="COMM_FAILURE", completed="COMPLETED_MAYBE",
                 requests=1)],
              tolerate=[T(E("system_exception", name=("COMM_FAILURE", "TRANSIENT"), requests=1),
                          "other-refusal", "reports the lost connection with another "
                          "exception or completion status")],
              rationale=RATIONALE_CLOSE))
    # ---- Fragments, sizes, slow delivery -------------------------------------------------------
    for v in ((1, 1), (1, 2)):
        for le in (False, True):
            add(_case("fragment.reply", f"a {len(LONG_STRING)}-character string reply in "
                      "Fragments of 64 bytes", S_FRAGMENT, "echo_string", "fragmented",
                      [RESULT_OK], version=v, little=le, reply_value=LONG_STRING,
                      params=(("size", 64),)))
    for le in (False, True):
        add(_case("fragment.reply-interleaved", "GIOP 1.2 reply fragments interleaved with the "
                  "fragments of a reply for another request id", S_FRAGMENT + "; " + S_REQUEST_ID,
                  "echo_string", "fragmented", [RESULT_OK],
                  tolerate=[T(E("system_exception", name=("COMM_FAILURE", "MARSHAL",
                                                          "INTERNAL")), "spec-silent",
                              "gives up on the connection after a reply it did not expect")],
                  little=le, reply_value=LONG_STRING,
                  params=(("size", 64), ("interleave", True)), rationale=RATIONALE_UNKNOWN_ID))
    for le in (False, True):
        add(_case("fragment.two-calls-interleaved", "two concurrent echo_string calls: on one "
                  "connection, their GIOP 1.2 reply fragments go out taken in turn (each call "
                  "gets its own long string)", S_FRAGMENT + "; " + S_REQUEST_ID, "echo_string",
                  "interleaved_calls", [E("result", ok=True, interleaved=True)],
                  tolerate=[T(E("result", ok=True, concurrent=True, multiplexed=False),
                              "impl-limit",
                              "a connection per outstanding call (omniORB's default): replies "
                              "that share no connection cannot interleave, so this case does "
                              "not arise for it")],
                  little=le, reply_value=LONG_STRING, calls=2,
                  params=(("size", 64), ("second", OTHER_LONG_STRING)),
                  rationale=RATIONALE_INTERLEAVED))
    add(_case("size.huge-claim-then-close", "a Reply header claiming 2 GiB, 32 bytes of it, "
              "then a close", S_SIZE, "echo_long", "huge_claim", [ANY_FAILURE],
              rationale=RATIONALE_HUGE))
    add(_case("size.huge-claim-then-stall", "a Reply header claiming 2 GiB and 32 bytes of "
              "it, then nothing: the client's own call timeout ends the call", S_SIZE,
              "echo_long", "huge_claim", [OWN_TIMEOUT], params=(("stall", True),),
              rationale=RATIONALE_OWN_TIMEOUT))
    add(_case("timeout.no-reply", "the server reads the request and never answers: the "
              "client's own call timeout ends the call", S_REPLY, "echo_long", "no_reply",
              [OWN_TIMEOUT], rationale=RATIONALE_OWN_TIMEOUT))
    add(_case("size.trickled-reply", "the reply trickled one byte every 10 ms", S_HEADER,
              "echo_string", "trickle", [RESULT_OK], reply_value=LONG_STRING[:200]))
    # ---- Code sets -------------------------------------------------------------------------------
    for v in ((1, 1), (1, 2)):
        add(_case("codeset.iso-8859-1-native", "IOR with CODE_SETS (ISO-8859-1 native, UTF-8 "
                  "conversion): the client sends a CodeSets context with a TCS the IOR allows",
                  S_CODESETS, "echo_string", "reply",
                  [E("result", ok=True, codeset_context=True)], version=v, codesets=ISO_UTF16))
        add(_case("codeset.utf-8-only", "IOR whose only char code set is UTF-8: the client "
                  "must use UTF-8 for char data", S_CODESETS, "echo_string", "reply",
                  [E("result", ok=True, tcs_c="UTF-8")], version=v, codesets=UTF8_ONLY))
    add(_case("codeset.wstring", "echo_wstring with UTF-16 offered for wchar (GIOP 1.2)",
              S_CODESETS, "echo_wstring", "reply", [E("result", ok=True, tcs_w="UTF-16")],
              codesets=ISO_UTF16))
    return cases
