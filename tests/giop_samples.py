"""GIOP messages and helpers shared by the GIOP tests and the C fuzz harness
(.ci/fuzz_speedups.py, which imports this module and must not pull in pytest,
hypothesis or scapy: atheris instruments every module loaded)."""

from pycdr.errors import PycdrError
from pycdr.giop import sysexc
from pycdr.giop.messages import (CancelRequest, Fragment, KeyAddr, LocateReply, LocateRequest,
                                 LocateStatus, Reply, ReplyStatus, Request, encode_message)
from pycdr.giop.service_contexts import CodeSetsContext


def sample_messages():
    contexts = [CodeSetsContext(char_data=0x05010001, wchar_data=0x00010109)]
    for version in ((1, 0), (1, 1), (1, 2)):
        for little in (False, True):
            yield encode_message(Request(version=version, little=little, request_id=7,
                                         operation="echo_long", target=KeyAddr(b"Echo"),
                                         service_contexts=contexts, body=b"\0\0\0\5"))
            yield encode_message(Reply(version=version, little=little, request_id=7,
                                       reply_status=ReplyStatus.NO_EXCEPTION,
                                       body=b"\0\0\0\5"))
            yield encode_message(Reply(version=version, little=little, request_id=8,
                                       reply_status=ReplyStatus.SYSTEM_EXCEPTION,
                                       system_exception=sysexc.MARSHAL(
                                           sysexc.OMG_VMCID | 1,
                                           sysexc.CompletionStatus.COMPLETED_NO)))
            yield encode_message(LocateRequest(version=version, little=little, request_id=9,
                                               target=KeyAddr(b"Echo")))
            yield encode_message(LocateReply(version=version, little=little, request_id=9,
                                             locate_status=LocateStatus.OBJECT_HERE))
            yield encode_message(CancelRequest(version=version, little=little, request_id=9))
            if version != (1, 0):
                yield encode_message(Fragment(version=version, little=little, data=b"abcd",
                                              request_id=9 if version == (1, 2) else None))
    for version in ((1, 2), (1, 3)):
        for little in (False, True):
            # The ORB's fast path (GIOP 1.2/1.3 Request with a KeyAddr, NO_EXCEPTION
            # Reply): no contexts, no body, odd key and operation lengths.
            yield encode_message(Request(version=version, little=little, request_id=3,
                                         response_flags=0, operation="x",
                                         target=KeyAddr(b"k")))
            yield encode_message(Request(version=version, little=little, request_id=4,
                                         operation="sendOctetSeq", target=KeyAddr(b"TTCP3"),
                                         body=b"\0\0\0\3abc"))
            yield encode_message(Reply(version=version, little=little, request_id=4,
                                       service_contexts=contexts, body=b"\1"))
            yield encode_message(Reply(version=version, little=little, request_id=5))


def with_size(data: bytes, size: int) -> bytes:
    """``data`` with its header's message_size set to ``size`` (in its byte order)."""
    return data[:8] + size.to_bytes(4, "little" if data[6] & 1 else "big") + data[12:]


def message_fields(msg) -> list:
    """Everything a message holds, with each value's type (an int is not an enum
    member, a list not a tuple), and its target's fields."""
    out = []
    for name, value in vars(msg).items():
        out.append((name, type(value), value))
        if isinstance(value, KeyAddr):
            out.append(("target.vars", dict, vars(value)))
    return [type(msg)] + sorted(out, key=lambda item: item[0])


def decode_outcome(fn, data, header=None) -> tuple:
    """What fn(data, header) gives (a _decode_common_12): ("none",),
    ("message", message_fields) or ("error", type, text, offset)."""
    try:
        msg = fn(data, header)
    except PycdrError as e:
        return ("error", type(e), str(e), e.offset)
    if msg is None:
        return ("none",)
    return ("message", message_fields(msg))
