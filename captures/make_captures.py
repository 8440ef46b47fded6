"""Regenerate the capture corpus: synthetic pcaps written with scapy and the
expected decoding of each (pycdr's Python decoder, ``pycdr.capture.giop``).

    .venv/bin/python captures/make_captures.py            # synthetic + expected JSON
    .venv/bin/python captures/make_captures.py --real     # also record real sessions (real/)
    .venv/bin/python captures/make_captures.py --expected # only rewrite the JSON files

Synthetic sessions get TCP/IP headers made up here (a three-way handshake,
sequence numbers, 1 ms between packets); every session has its own client port
so that captures can be merged into one file without two sessions mixing.
Messages are encoded by pycdr (``pycdr.giop.messages``, arguments by
``pycdr.codec.marshal`` from ``capture_test.idl``); the malformed ones are written
byte by byte, each in a session of its own.
"""

from __future__ import annotations

import argparse
import glob
import itertools
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from scapy.utils import wrpcap                   # noqa: E402

from pycdr import idl                            # noqa: E402
from pycdr.codec.cdr import CDRWriter  # noqa: E402
from pycdr.giop import service_contexts as sc    # noqa: E402
from pycdr.giop import sysexc                    # noqa: E402
from pycdr.giop.header import MsgType, encode_header   # noqa: E402
from pycdr.giop.messages import (CancelRequest, CloseConnection, Fragment, KeyAddr,  # noqa: E402
                                 LocateReply, LocateRequest, MessageError, ProfileAddr,
                                 ReferenceAddr, Reply, Request, encode_fragments,
                                 encode_message, fragment_message)
from decimal import Decimal                      # noqa: E402
from fractions import Fraction                   # noqa: E402

from pycdr.codec import values as V  # noqa: E402
from pycdr.addressing.iiop import CodeSetsComponent, IIOPProfile, ORBTypeComponent, make_ior  # noqa: E402
from pycdr.codec.marshal import write_value  # noqa: E402
from pycdr.capture.giop import IdlBodyDecoder, decode_capture   # noqa: E402
from pycdr.capture.write import TcpSession           # noqa: E402
from pycdr.idl.model import OBJECT_OPERATIONS      # noqa: E402
from pycdr.lua_types import names_table, type_table   # noqa: E402
from pycdr.capture.scapy_layer import GIOP                # noqa: E402
from pycdr.codec.typecode import (VM_TRUNCATABLE, TCKind, TypeCode, primitive, value_tc)  # noqa: E402

IDL_FILES = [os.path.join(HERE, "capture_test.idl"), os.path.join(ROOT, "tests", "peers", "echo.idl")]
VERSIONS = [(1, 0), (1, 1), (1, 2), (1, 3)]


def load_modules():
    return [idl.load(path, register=False) for path in IDL_FILES]


def body_decoder():
    return IdlBodyDecoder(load_modules())


# ----------------------------------------------------------------------------
# One TCP connection's packets with made-up but consistent headers (every
# session its own client port, so captures can be merged without mixing).
Session = TcpSession


# ----------------------------------------------------------------------------
class Builder:
    """Messages of the capture interface, encoded by pycdr."""

    def __init__(self, modules):
        self.m = modules[0]
        self.demo = self.m.interfaces["CaptureTest::Demo"]

    def op(self, name):
        """An operation of the interface, or one every object has (_is_a, ...)."""
        return OBJECT_OPERATIONS.get(name) or self.demo.operation(name)

    def request_parts(self, v, little, rid, op, args, contexts=(), response=3, target=None):
        """The Request and the function that writes its arguments."""
        params = self.op(op).in_params \
            if op in self.demo.all_operations() or op in OBJECT_OPERATIONS else ()

        def write(w):
            for p, value in zip(params, args):
                write_value(w, p.type, value)
        msg = Request(version=v, little=little, request_id=rid, response_flags=response,
                      target=target or KeyAddr(b"DemoPOA\x00demo"), operation=op,
                      service_contexts=list(contexts))
        return msg, write if params else None

    def request(self, *args, **kwargs):
        msg, write = self.request_parts(*args, **kwargs)
        return encode_message(msg, write_body=write)

    def reply_parts(self, v, little, rid, op, values, contexts=(), wstring_bom=False):
        """The Reply and the function that writes its results."""
        o = self.op(op)
        types = ([] if o.result.kind() == 1 else [o.result]) + [p.type for p in o.out_params]

        def write(w):
            w.wstring_bom = wstring_bom
            for t, value in zip(types, values):
                write_value(w, t, value)
        msg = Reply(version=v, little=little, request_id=rid, service_contexts=list(contexts))
        return msg, write if types else None

    def reply(self, *args, **kwargs):
        msg, write = self.reply_parts(*args, **kwargs)
        return encode_message(msg, write_body=write)

    def fragmented(self, parts, limit):
        """A message as it is sent when none may exceed ``limit`` bytes (GIOP
        1.1: encoded again with each fragment's data aligned from its own
        fragment's start, pycdr.codec.cdr.FragmentingWriter)."""
        msg, write = parts
        return encode_fragments(msg, encode_message(msg, write_body=write), limit,
                                write_body=write)

    def value(self, name, **members):
        return self.m[f"CaptureTest::{name}"](**members)

    def user_exception(self, v, little, rid, reason, code):
        exc = self.m.types["CaptureTest::Failure"]

        def write(w):      # an exception's encoding: its repository id, then its members
            write_value(w, exc, self.m["CaptureTest::Failure"](reason, code))
        return encode_message(Reply(version=v, little=little, request_id=rid, reply_status=1),
                              write_body=write)

    def point(self, x, y, label):
        return self.m["CaptureTest::Point"](x, y, label)

    def color(self, name):
        return getattr(self.m["CaptureTest::Color"], name)

    def shape(self, **branch):
        return self.m["CaptureTest::Shape"](**branch)


def sample_ior(port=2809, host="demo.example", key=b"DemoPOA\x00other"):
    profile = IIOPProfile((1, 2), host, port, key,
                          (ORBTypeComponent(0x41545400), CodeSetsComponent(
                              0x00010001, (0x05010001,), 0x00010109, ())))
    return make_ior("IDL:CaptureTest/Demo:1.0", [profile])


def interface_def_ior():
    """An Interface Repository's InterfaceDef, as ``_interface`` answers."""
    return make_ior("IDL:omg.org/CORBA/InterfaceDef:1.0",
                    [IIOPProfile((1, 2), "ir.example", 2812, b"IR\x00Demo")])


CODESETS = sc.CodeSetsContext(char_data=0x05010001, wchar_data=0x00010109)
VENDOR_CONTEXT = sc.RawServiceContext(id=0x41545401, data=b"\x00\x01\x02\x03")   # omniORB "AT\x54" VSCID


def messages_session(packets, b: Builder, v, little, port):
    s = Session(packets, port)
    rid = itertools.count(1)
    is12 = v >= (1, 2)
    contexts = [CODESETS, VENDOR_CONTEXT] + ([sc.RTCorbaPriority(priority=7)] if is12 else [])
    r = next(rid)
    s.client_sends(b.request(v, little, r, "add", [2, 40], contexts))
    s.server_sends(b.reply(v, little, r, "add", [42]))
    r = next(rid)
    s.client_sends(b.request(v, little, r, "greet", ["world"]))
    s.server_sends(b.reply(v, little, r, "greet", ["hello world", 1]))
    r = next(rid)
    pts = [b.point(1, 2, "a"), b.point(-3, 4, "bb")]
    s.client_sends(b.request(v, little, r, "mirror", [pts, b.color("green")]))
    s.server_sends(b.reply(v, little, r, "mirror", [pts[::-1], b.color("blue")]))
    r = next(rid)
    s.client_sends(b.request(v, little, r, "reshape", [b.shape(corner=b.point(5, 6, "c"))]))
    s.server_sends(b.reply(v, little, r, "reshape", [b.shape(radius=9)]))
    r = next(rid)
    s.client_sends(b.request(v, little, r, "find", ["other"]))
    s.server_sends(b.reply(v, little, r, "find", [sample_ior()]))
    r = next(rid)
    s.client_sends(b.request(v, little, r, "fail", ["no reason"]))
    s.server_sends(b.user_exception(v, little, r, "no reason", -7))
    r = next(rid)
    s.client_sends(b.request(v, little, r, "big", [-2, 65535, -(2 ** 40), 1.5, True, "z", 255,
                                                     b"\x00\x01\xfe"]))
    s.server_sends(b.reply(v, little, r, "big", [2 ** 64 - 1]))
    r = next(rid)
    s.client_sends(b.request(v, little, r, "notify", [0.1, False], response=0))
    r = next(rid)
    s.client_sends(b.request(v, little, r, "_non_existent", []))
    detail = [sc.ExceptionDetailMessage(message="no such object")] if v != (1, 0) else []
    s.server_sends(encode_message(Reply(
        version=v, little=little, request_id=r, reply_status=2, service_contexts=detail,
        system_exception=sysexc.OBJECT_NOT_EXIST(0x4F4D0002, 1))))
    r = next(rid)
    s.client_sends(b.request(v, little, r, "add", [1, 1]))
    s.server_sends(encode_message(Reply(version=v, little=little, request_id=r, reply_status=3,
                                        forward=sample_ior(2810))))
    r = next(rid)
    s.client_sends(encode_message(LocateRequest(version=v, little=little, request_id=r,
                                                target=KeyAddr(b"NameService"))))
    s.server_sends(encode_message(LocateReply(version=v, little=little, request_id=r,
                                              locate_status=1)))
    r = next(rid)
    s.client_sends(encode_message(LocateRequest(version=v, little=little, request_id=r,
                                                target=KeyAddr(b"DemoPOA\x00demo"))))
    s.server_sends(encode_message(LocateReply(version=v, little=little, request_id=r,
                                              locate_status=2, forward=sample_ior(2811))))
    if is12:
        ior = sample_ior()
        r = next(rid)
        s.client_sends(b.request(v, little, r, "add", [3, 4], target=ProfileAddr(ior.profiles[0])))
        s.server_sends(encode_message(Reply(version=v, little=little, request_id=r,
                                            reply_status=5, addressing_disposition=2)))
        r = next(rid)
        s.client_sends(b.request(v, little, r, "add", [5, 6], target=ReferenceAddr(0, ior)))
        s.server_sends(b.reply(v, little, r, "add", [11]))
        r = next(rid)
        s.client_sends(encode_message(LocateRequest(version=v, little=little, request_id=r,
                                                    target=ProfileAddr(ior.profiles[0]))))
        s.server_sends(encode_message(LocateReply(
            version=v, little=little, request_id=r, locate_status=4,
            system_exception=sysexc.TRANSIENT(0x41540002, 2))))
        r = next(rid)
        s.client_sends(encode_message(LocateRequest(version=v, little=little, request_id=r,
                                                    target=KeyAddr(b"x"))))
        s.server_sends(encode_message(LocateReply(version=v, little=little, request_id=r,
                                                  locate_status=5, addressing_disposition=1)))
    # The operations every object has: decoded without IDL.
    for op, args, results in (("_is_a", ["IDL:CaptureTest/Demo:1.0"], [True]),
                              ("_is_a", ["IDL:omg.org/CORBA/Object:1.0"], [False]),
                              ("_non_existent", [], [False]),
                              ("_repository_id", [], ["IDL:CaptureTest/Demo:1.0"]),
                              ("_interface", [], [interface_def_ior()]),
                              ("_get_component", [], [None])):
        r = next(rid)
        s.client_sends(b.request(v, little, r, op, args))
        s.server_sends(b.reply(v, little, r, op, results))
    r = next(rid)
    s.client_sends(b.request(v, little, r, "add", [7, 8]))
    s.client_sends(encode_message(CancelRequest(version=v, little=little, request_id=r)))
    s.client_sends(encode_message(MessageError(version=v, little=little)))
    s.server_sends(encode_message(CloseConnection(version=v, little=little)))


def fragments_sessions(packets, b: Builder, little):
    s = Session(packets)
    pts = [b.point(i, -i, "p" * i) for i in range(12)]
    # GIOP 1.1: fragment limits that cut at offsets not a multiple of 8, so
    # each fragment's data is aligned differently from the whole message's.
    for part in b.fragmented(b.request_parts((1, 1), little, 1, "mirror", [pts, b.color("red")]), 70):
        s.client_sends(part)
    s.server_sends(*b.fragmented(b.reply_parts((1, 1), little, 1, "mirror", [pts, b.color("red")]), 101))
    # 8-byte values after a cut: where a whole-message alignment would read them wrongly.
    big = [-2, 65535, -(2 ** 40), 1.5, True, "z", 255, b"\x00\x01\xfe" * 9]
    for part in b.fragmented(b.request_parts((1, 1), little, 2, "big", big), 24):
        s.client_sends(part)
    s.server_sends(*b.fragmented(b.reply_parts((1, 1), little, 2, "big", [2 ** 63 + 5]), 24))
    # GIOP 1.2 and 1.3: two requests' fragments interleaved on one connection.
    for v in ((1, 2), (1, 3)):
        s = Session(packets)
        a = fragment_message(b.request(v, little, 10, "mirror", [pts, b.color("red")]), 64)
        c = fragment_message(b.request(v, little, 11, "greet", ["x" * 150]), 72)
        for part in itertools.chain.from_iterable(itertools.zip_longest(a, c)):
            if part is not None:
                s.client_sends(part)
        s.server_sends(*fragment_message(b.reply(v, little, 11, "greet", ["y" * 100, 3]), 48))
        s.server_sends(b.reply(v, little, 10, "mirror", [pts[:1], b.color("green")]))


def segments_sessions(packets, b: Builder, little):
    s = Session(packets)
    m1 = b.request((1, 2), little, 1, "greet", ["split across segments"])
    s.client_sends(m1, cuts=[5, 30])                  # cut inside the 12-byte header
    m2 = b.reply((1, 2), little, 1, "greet", ["r", 5])
    m3 = encode_message(LocateReply(version=(1, 2), little=little, request_id=9))
    s.server_sends(m2, m3, m2, cuts=[len(m2) + 3])     # 3 messages, the 2nd cut in two
    m4 = b.request((1, 0), little, 2, "add", [1, 2])
    s.client_sends(m4 + m4[:20], cuts=[len(m4) - 1])
    s.client_sends(m4[20:])


def malformed_sessions(packets, b: Builder):
    """One session per violation; bytes written by hand around pycdr's encoding."""
    def session(*messages, from_client=True, port=2809):
        s = Session(packets, port)
        for m in messages:
            s.send(from_client, m)

    def patched(data: bytes, offset: int, new: bytes) -> bytes:
        return data[:offset] + new + data[offset + len(new):]

    req10 = b.request((1, 0), False, 1, "add", [1, 2])
    # GIOP 1.0 Request: service contexts (4) + request_id (4) at 12, response_expected at 20.
    session(patched(req10, 20, b"\x02"))                                  # bad-boolean
    req12 = b.request((1, 2), False, 2, "greet", ["abc"])
    op_at = 12 + 4 + 4 + 2 + 2 + 4 + len(b"DemoPOA\x00demo")             # operation length
    op_at = (op_at + 3) & ~3
    session(patched(req12, op_at + 4 + 5, b"x"))                          # string-no-nul
    session(encode_message(Reply(version=(1, 2), request_id=3, reply_status=9)),
            from_client=False)                                            # bad-status
    lr = encode_message(LocateRequest(version=(1, 2), request_id=4, target=KeyAddr(b"k")))
    session(lr[:8] + struct.pack(">I", len(lr) - 12 + 4) + lr[12:] + b"\0\0\0\0")   # trailing-bytes
    cancel = encode_message(CancelRequest(version=(1, 2), request_id=5))
    session(patched(cancel, 6, b"\x02"))                                  # may-not-fragment
    session(encode_header((1, 0), False, MsgType.Fragment, 4) + b"\0\0\0\1")   # fragment-in-1.0
    session(patched(encode_message(CloseConnection()), 6, b"\x10"), from_client=False)  # reserved-flags
    session(encode_header((1, 2), False, 8, 4) + b"\0\0\0\1")             # unknown message type
    session(req12[:8] + struct.pack(">I", op_at - 12 + 6) + req12[12:op_at + 6])   # truncated
    lr_here = encode_message(LocateReply(version=(1, 2), request_id=6, locate_status=1))
    session(lr_here[:8] + struct.pack(">I", 12) + lr_here[12:] + b"\0\0\0\0",
            from_client=False)                                            # unexpected-body
    sysrep = encode_message(Reply(version=(1, 2), request_id=7, reply_status=2,
                                  system_exception=sysexc.MARSHAL(0, 1)))
    session(sysrep[:-4] + b"\0\0\0\7", from_client=False)                 # bad-completion-status
    w = Request(version=(1, 2), request_id=8, target=KeyAddr(b"k1"), operation="add")
    raw = encode_message(w, write_body=lambda wr: (wr.write_long(1), wr.write_long(2)))
    # The header ends at 44 (after the empty service context list): 4 pad bytes to 48.
    session(patched(raw, 44, b"\xaa"))                                    # nonzero-padding
    session(encode_message(Fragment(version=(1, 2), request_id=99, data=b"\0" * 8)))   # fragment-misuse
    session(encode_header((1, 1), False, MsgType.Fragment, 8) + b"\0" * 8)             # fragment-misuse
    session(patched(req10, 6, b"\x02"))                                   # bad-byte-order
    short = encode_message(Request(version=(1, 2), request_id=9, target=KeyAddr(b"k1"),
                                   operation="add"))
    session(short[:8] + struct.pack(">I", len(short) - 12 + 2) + short[12:] + b"\0\0")  # short-body-padding
    session(b"GIOX" + req12[4:], port=2809)                               # bad magic
    session(patched(req12, 4, b"\x01\x04"))                               # unsupported version
    ior = sample_ior()
    session(b.request((1, 2), False, 10, "add", [1, 2], target=ReferenceAddr(3, ior)))  # bad-profile-index
    huge = encode_header((1, 2), False, MsgType.Request, 0xFFFFFF00)
    session(huge + b"\0" * 8)                                             # size far over the data


def known_faults(b: Builder) -> dict:
    """Captures of the built-in GIOP dissector's known faults (issue 8)."""
    out = {}
    p: list = []
    s = Session(p)
    pts = [b.point(i, i, "q") for i in range(8)]
    # Two fragmented 1.1 requests in a row: 1.1 fragments carry no request_id.
    for rid in (21, 22):
        for part in b.fragmented(b.request_parts((1, 1), False, rid, "mirror",
                                                 [pts, b.color("red")]), 54):
            s.client_sends(part)
    for rid in (21, 22):
        s.server_sends(b.reply((1, 1), False, rid, "mirror", [pts[:2], b.color("blue")]))
    out["wsfault-giop11-fragments"] = p
    p = []
    s = Session(p)
    s.client_sends(b.request((1, 2), False, 1, "add", [1, 2], [
        VENDOR_CONTEXT, sc.RawServiceContext(id=0x4A414301, data=b"\0" * 4), CODESETS]))
    s.server_sends(b.reply((1, 2), False, 1, "add", [3]))
    out["wsfault-vendor-context-id"] = p
    p = []
    s = Session(p)
    for little in (False, True):
        s.client_sends(b.request((1, 3), little, 5 + little, "greet", ["thirteen"]))
        s.server_sends(b.reply((1, 3), little, 5 + little, "greet", ["ok", 13]))
    out["wsfault-giop13"] = p
    p = []
    s = Session(p)
    s.client_sends(encode_message(LocateRequest(version=(1, 2), request_id=2,
                                                target=KeyAddr(b"NameService"))))
    # request_id + status end at 20: the IOR starts there, unpadded (TAO, omniORB, WebLogic).
    s.server_sends(encode_message(LocateReply(version=(1, 2), request_id=2, locate_status=2,
                                              forward=sample_ior(900, "ns.example"))))
    out["wsfault-locatereply12-unpadded"] = p
    p = []
    s = Session(p)
    s.client_sends(b.request((1, 2), True, 3, "find", ["other"]))
    s.server_sends(b.reply((1, 2), True, 3, "find", [sample_ior(4242, "found.example")]))
    out["wsfault-ior-result"] = p
    p = []
    s = Session(p)
    s.client_sends(b.request((1, 2), False, 4, "fail", ["because"]))
    s.server_sends(b.user_exception((1, 2), False, 4, "because", 99))
    out["wsfault-user-exception"] = p
    return out


# A value type no IDL file knows, derived (truncatable) from CaptureTest::Base:
# the decoders truncate it to Base and skip the rest of its chunked state.
def extended_value(b: Builder, a: int):
    base = b.m.types["CaptureTest::Base"]
    node = b.m.types["CaptureTest::Node"]
    tc = value_tc("IDL:CaptureTest/Extended:1.0", "Extended", VM_TRUNCATABLE, base,
                  [("extra", TypeCode(TCKind.tk_string, length=0), 1), ("link", node, 1)])
    return V.class_for(tc)(a=a, extra="unknown to the receiver", link=b.value("Node", id=8, next=None))


def kinds_session(packets, b: Builder, v, little, port, fragment_limit=None):
    """The kinds decoded through TypeCodes and value state: any (recursive
    TypeCode, union TypeCode with a default label, nested any, fixed in an
    any), TypeCode, fixed, wchar/wstring (1.2+: a BOM in the reply), long
    double (normal, subnormal, infinity), valuetypes (cyclic and shared
    values, boxes, null, chunked truncatable values, truncation)."""
    s = Session(packets, port)
    m = b.m
    rid = itertools.count(1)

    def exchange(op, args, results, **reply_options):
        r = next(rid)
        for send, parts in ((s.client_sends, b.request_parts(v, little, r, op, args)),
                            (s.server_sends, b.reply_parts(v, little, r, op, results,
                                                           **reply_options))):
            if fragment_limit:
                send(*b.fragmented(parts, fragment_limit))
            else:
                msg, write = parts
                send(encode_message(msg, write_body=write))
    tree = m.types["CaptureTest::Tree"]
    tree_cls = m["CaptureTest::Tree"]
    forest = tree_cls(1, [tree_cls(2, []), tree_cls(3, [tree_cls(4, [])])])
    points = [b.point(1, 2, "a"), b.point(-3, 4, "bb")]
    exchange("pass_any", [V.Any(tree, forest), V.Any(m.types["CaptureTest::Points"], points),
                          V.Any(primitive(TCKind.tk_any), V.Any(primitive(TCKind.tk_double), 2.5)),
                          m.types["CaptureTest::Shape"]],
             [V.Any(m.types["CaptureTest::Money"], Decimal("-0.05"))])
    exchange("prices", [Decimal("-1234567.89"), Decimal("0.0012"), Decimal("0")], [Decimal("42.00")])
    exchange("wide", ["\u00e9", "h\u00e9llo \U0001d11e"], ["ok \u2713", "\u03a9"],
             wstring_bom=v >= (1, 2))
    exchange("precise", [V.LongDouble.from_float(1.5), V.LongDouble.from_fraction_or_special(Fraction(-1, 3)),
                         V.LongDouble(1)], [V.LongDouble.from_float(float("inf"))])
    first = b.value("Node", id=1, next=None)
    first.next = b.value("Node", id=2, next=first)          # a cycle
    exchange("link", [first, first, "boxed", None], [b.value("Node", id=7, next=None)])
    derived = b.value("Derived", a=1, child=b.value("Node", id=5, next=None), note="x")
    exchange("derive", [derived, derived, b.value("Derived", a=2, child=None, note="y")],
             [b.value("Base", a=9)])
    exchange("truncate", [extended_value(b, 3)], [b.value("Base", a=3)])


def synthetic_captures() -> dict:
    b = Builder(load_modules())
    captures = {}
    p: list = []
    ports = itertools.cycle([2809, 683, 9999])     # 9999: found by the heuristic only
    for v in VERSIONS:
        for little in (False, True):
            messages_session(p, b, v, little, next(ports))
    captures["messages"] = p
    p = []
    for little in (False, True):
        fragments_sessions(p, b, little)
    captures["fragments"] = p
    p = []
    for little in (False, True):
        segments_sessions(p, b, little)
    captures["segments"] = p
    p = []
    malformed_sessions(p, b)
    captures["malformed"] = p
    captures.update(known_faults(b))
    p = []
    for v in ((1, 1), (1, 2)):
        for little in (False, True):
            kinds_session(p, b, v, little, 2809)
    # The same over GIOP 1.1 fragments cut where the segment alignment matters.
    for little in (False, True):
        kinds_session(p, b, (1, 1), little, 2809, fragment_limit=45)
    captures["kinds"] = p
    return captures


def write_type_tables(modules) -> None:
    """dissector/types/*.lua: the type tables of the captures' IDL files (and
    dissector/pycdr_names.lua: pycdr's name tables, the object operations' types)."""
    with open(os.path.join(ROOT, "dissector", "pycdr_names.lua"), "w") as f:
        f.write(names_table())
    for path, module in zip(IDL_FILES, modules):
        name = os.path.splitext(os.path.basename(path))[0]
        with open(os.path.join(ROOT, "dissector", "types", name + ".lua"), "w") as f:
            f.write(type_table([module]))


def write_expected(pcap_path: str, decoder=None) -> None:
    entries = decode_capture(pcap_path, decode_body=decoder or body_decoder())
    with open(pcap_path[:-len(".pcap")] + ".json", "w") as f:
        json.dump(entries, f, indent=1)
        f.write("\n")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--real", action="store_true",
                    help="also record real sessions between ORBs (record_sessions.py)")
    ap.add_argument("--expected", action="store_true", help="only rewrite the JSON files")
    args = ap.parse_args(argv)
    if not args.expected:
        write_type_tables(load_modules())
        for name, packets in synthetic_captures().items():
            wrpcap(os.path.join(HERE, name + ".pcap"), packets)
        if args.real:
            from record_sessions import record_all
            record_all(HERE)
    decoder = body_decoder()
    for path in sorted(glob.glob(os.path.join(HERE, "*.pcap"))) + \
            sorted(glob.glob(os.path.join(HERE, "real", "*.pcap"))):
        write_expected(path, decoder)
        print("wrote", os.path.relpath(path[:-5] + ".json", ROOT))


if __name__ == "__main__":
    main()
