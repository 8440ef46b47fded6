"""GIOP in packet captures: pcap/pcapng in, pycdr's decodings out.

    for entry in decode_capture("session.pcap"):
        print(entry["frame"], entry.get("type"), entry.get("operation"))

Reads the capture with scapy (the ``pcap`` extra), reassembles each TCP
direction by sequence number, frames the byte stream into GIOP messages and
decodes every one with :func:`pycdr.giop.messages.decode_message` in lenient
mode.  Fragmented messages are joined by :class:`pycdr.giop.connection.
GiopConnection` (GIOP 1.1 by stream order, 1.2+ by request_id) and reported
once more, whole, at the frame of their last fragment.  Replies are matched to
their requests by request_id per TCP connection, with the response time.

Each entry is ``pycdr decode --json``'s message object plus where it was seen:
``frame`` (1-based, the frame holding the message's last byte, as Wireshark
shows a reassembled PDU), ``time``, ``stream`` (TCP connection index in order
of appearance), ``src``/``dst`` and ``stream_offset``.  A message that cannot
be decoded at all gives an entry with ``error`` (its ``offset`` in the direction's
byte stream, as ``stream_offset``), the ``header`` fields and its ``bytes`` (hex),
as ``pycdr decode --json`` gives it; one whose header
claims more than MAX_MESSAGE_SIZE, or a ZIOP one that inflates past it, cannot be.

The capture is assumed to be in order per direction (as loopback captures
are); a gap in the sequence numbers drops what was buffered and is reported as
an ``error`` entry, retransmitted bytes are skipped.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field

from .errors import MessageTooLargeError, PycdrError, error_json
from .giop.connection import GiopConnection, Role
from .giop.events import NEED_DATA, MessageReceived, ProtocolViolation
from .giop.header import HEADER_SIZE, MAX_MESSAGE_SIZE, MsgType, parse_header
from .giop.messages import decode_message

GIOP_PORTS = (683, 2809)
# Messages that expect an answer, and the answer's type.
_ANSWER_OF = {MsgType.Request: MsgType.Reply, MsgType.LocateRequest: MsgType.LocateReply}


@dataclass
class TcpSegment:
    frame: int
    time: float
    src: str
    sport: int
    dst: str
    dport: int
    seq: int
    flags: int
    payload: bytes


def read_tcp_segments(path) -> list[TcpSegment]:
    """Every TCP segment of a pcap or pcapng file (IPv4 and IPv6), with its
    1-based frame number; other frames are counted but not returned."""
    try:
        from scapy.layers.inet import IP, TCP
        from scapy.layers.inet6 import IPv6
        from scapy.utils import PcapReader
    except ImportError as e:    # pragma: no cover - depends on the install
        raise PycdrError("reading captures needs scapy: pip install 'pycdr[pcap]'") from e
    segments = []
    try:
        reader = PcapReader(_SizeCheckedFile(os.fspath(path)))
    except Exception as e:      # scapy raises Scapy_Exception for a file that is no capture
        raise PycdrError(f"{path}: not a pcap or pcapng file ({e})") from None
    frame = 0
    with reader:
        try:
            for frame, pkt in enumerate(reader, 1):
                ip = pkt.getlayer(IP) or pkt.getlayer(IPv6)
                tcp = pkt.getlayer(TCP)
                if ip is None or tcp is None:
                    continue
                payload = bytes(tcp.payload)
                if ip.haslayer(IP):
                    # Ethernet minimum-frame padding sits after the IP datagram.
                    end = ip.len - ip.ihl * 4 - tcp.dataofs * 4
                    payload = payload[:max(end, 0)]
                segments.append(TcpSegment(frame, float(pkt.time), ip.src, tcp.sport, ip.dst,
                                           tcp.dport, tcp.seq, int(tcp.flags), payload))
        except Exception as e:  # scapy raises anything (struct.error, ...) on a damaged capture
            raise CaptureError(f"{path}: frame {frame + 1}: damaged capture "
                               f"({type(e).__name__}: {e})") from None
    return segments


class CaptureError(PycdrError):
    """A capture file that cannot be read on (a damaged record or block)."""


class _SizeCheckedFile(io.BufferedReader):
    """A capture file whose reads never ask for more than what is left of it:
    scapy reads a record or block in one read() of the length the file claims,
    which allocates that length first (4 GiB for a damaged pcapng block).  A
    short read is what scapy gets from a truncated capture anyway: it ends
    there, as for one cut while being written."""

    def __init__(self, path: str):
        super().__init__(io.FileIO(path))
        self.size = os.fstat(self.fileno()).st_size

    def read(self, size=-1):
        if size is not None and size > 0:
            size = min(size, max(self.size - self.tell(), 0))
        return super().read(size)


@dataclass
class _Direction:
    """One direction of a TCP connection: its byte stream and who sent it."""
    stream: int
    src: str
    dst: str
    next_seq: int | None = None
    buf: bytearray = field(default_factory=bytearray)
    buf_offset: int = 0                       # stream offset of buf[0]
    frame_ends: list = field(default_factory=list)   # (stream end offset, frame, time)
    connection: GiopConnection | None = None
    # Bytes given to the connection so far, and the frame of each message it
    # was given by offset (to name the first frame of a reassembled message).
    fed: int = 0
    message_frames: dict = field(default_factory=dict)

    def frame_of(self, end_offset: int) -> tuple[int, float]:
        """The frame that delivered the byte before ``end_offset``."""
        for end, frame, time in self.frame_ends:
            if end >= end_offset:
                return frame, time
        return self.frame_ends[-1][1:]


class CaptureDecoder:
    """Turns TCP segments into decoded GIOP entries, keeping per-connection
    state (streams, fragment reassembly, outstanding requests)."""

    def __init__(self, ports=None, heuristic: bool = True, user_exceptions=None,
                 decode_body=None):
        self.ports = set(GIOP_PORTS if ports is None else ports)
        self.heuristic = heuristic
        self.user_exceptions = user_exceptions
        # decode_body(msg, request) -> dict of decoded arguments/results, or None
        self.decode_body = decode_body
        self.directions: dict = {}
        self.connections: dict = {}
        self.requests: dict = {}      # (stream, MsgType of answer, request_id) -> request entry
        self.entries: list = []

    def _direction(self, seg: TcpSegment) -> _Direction:
        key = (seg.src, seg.sport, seg.dst, seg.dport)
        d = self.directions.get(key)
        if d is None:
            conn_key = frozenset(((seg.src, seg.sport), (seg.dst, seg.dport)))
            stream = self.connections.setdefault(conn_key, len(self.connections))
            d = _Direction(stream, f"{seg.src}:{seg.sport}", f"{seg.dst}:{seg.dport}")
            self.directions[key] = d
        return d

    def _is_giop(self, seg: TcpSegment, d: _Direction) -> bool:
        if d.connection is not None or d.buf:
            return True
        if seg.sport in self.ports or seg.dport in self.ports:
            return True
        return self.heuristic and seg.payload[:4] in (b"GIOP", b"ZIOP")

    def feed(self, seg: TcpSegment) -> None:
        d = self._direction(seg)
        if seg.flags & 0x02:                         # SYN
            d.next_seq = (seg.seq + 1) & 0xFFFFFFFF
            return
        payload = seg.payload
        if not payload:
            return
        if d.next_seq is None:
            d.next_seq = seg.seq
        delta = (seg.seq - d.next_seq) & 0xFFFFFFFF
        if delta >= 0x80000000:                      # retransmitted/overlapping bytes
            overlap = (d.next_seq - seg.seq) & 0xFFFFFFFF
            payload = payload[overlap:]
            if not payload:
                return
        elif delta:                                  # bytes missing from the capture
            self._entry(d, seg.frame, seg.time, d.buf_offset + len(d.buf), error={
                "type": "CaptureGap", "message": f"{delta} bytes missing before this "
                "segment; buffered bytes dropped", "offset": None})
            d.buf_offset += len(d.buf) + delta
            d.buf.clear()
        d.next_seq = (seg.seq + len(seg.payload)) & 0xFFFFFFFF
        if not self._is_giop(seg, d):
            d.buf_offset += len(payload)
            return
        d.buf += payload
        d.frame_ends.append((d.buf_offset + len(d.buf), seg.frame, seg.time))
        self._frame_messages(d)

    def _frame_messages(self, d: _Direction) -> None:
        while len(d.buf) >= HEADER_SIZE:
            offset = d.buf_offset
            try:
                header = parse_header(d.buf)
            except PycdrError as e:
                # No framing without a header: the rest of the stream is not GIOP.
                frame, time = d.frame_of(offset + len(d.buf))
                self._entry(d, frame, time, offset, error=error_json(e))
                d.buf_offset += len(d.buf)
                d.buf.clear()
                return
            if header.size > MAX_MESSAGE_SIZE:
                # GiopConnection's limit: not buffered; the stream cannot be framed on.
                frame, time = d.frame_of(offset + len(d.buf))
                self._entry(d, frame, time, offset, error=error_json(MessageTooLargeError(
                    f"message of {header.size} bytes exceeds the limit of {MAX_MESSAGE_SIZE}",
                    offset + 8)), header=header.to_json())
                d.buf_offset += len(d.buf)
                d.buf.clear()
                return
            if len(d.buf) < header.total_size:
                return
            raw = bytes(d.buf[:header.total_size])
            del d.buf[:header.total_size]
            d.buf_offset += header.total_size
            frame, time = d.frame_of(offset + header.total_size)
            self._message(d, raw, header, offset, frame, time)
        del d.frame_ends[:-1]

    def _message(self, d, raw, header, offset, frame, time) -> None:
        try:
            # (the budget of a message holds for what a ZIOP one inflates to as well)
            msg, _ = decode_message(raw, lenient=True, user_exceptions=self.user_exceptions,
                                    max_message_size=MAX_MESSAGE_SIZE)
        except PycdrError as e:
            if getattr(e, "offset", None) is not None:
                e.offset += offset                   # in the stream, as stream_offset
            entry = self._entry(d, frame, time, offset, error=error_json(e),
                                header=header.to_json(), bytes=raw.hex())
            decoded = False
        else:
            entry = self._entry(d, frame, time, offset, msg=msg)
            decoded = True
        self._reassemble(d, raw, header, frame, time, entry, decoded)

    def _reassemble(self, d, raw, header, frame, time, entry, decoded) -> None:
        """Let a GiopConnection join fragments; report the joined message."""
        involved = header.msg_type == MsgType.Fragment or header.more_fragments or \
            (d.connection is not None and d.connection._fragmented_11 is not None)
        if not involved or header.is_ziop:
            return
        if d.connection is None:
            # A passive observer: no role or request-id books, every version.
            d.connection = GiopConnection(Role.SERVER, version=(1, 3), lenient=True,
                                          bidirectional=True, check_request_ids=False)
            d.fed = 0
            d.message_frames.clear()
        conn = d.connection
        d.message_frames[d.fed] = frame
        d.fed += len(raw)
        conn.receive_data(raw)
        while True:
            event = conn.next_event()
            if event is NEED_DATA:
                return
            if isinstance(event, MessageReceived):
                if event.fragments > 1:
                    e = self._entry(d, frame, time, entry["stream_offset"], msg=event.message)
                    e["reassembled"] = {"fragments": event.fragments,
                                        "first_frame": d.message_frames.get(event.offset)}
            elif isinstance(event, ProtocolViolation):
                # Fragment misuse, or a joined message that does not decode.
                own = {w["code"] for w in entry.get("warnings", [])}
                if decoded and not own & {"may-not-fragment", "fragment-in-1.0"}:
                    entry["warnings"].append({"code": "fragment-misuse",
                                              "message": str(event.error),
                                              "offset": 0, "severity": "warning"})
            else:
                # ConnectionClosed after a fatal violation: start afresh for what follows.
                d.connection = None
                return

    def _entry(self, d, frame, time, offset, msg=None, **extra) -> dict:
        entry = {"frame": frame, "time": round(time, 6), "stream": d.stream, "src": d.src,
                 "dst": d.dst, "stream_offset": offset}
        if msg is not None:
            entry.update(msg.to_json())
            if self.decode_body is not None and not msg.more_fragments:
                # A reply is decoded with its request's operation (before matching pops it).
                request = self.requests.get((d.stream, MsgType.Reply,
                                             getattr(msg, "request_id", None)))
                decoded = self.decode_body(msg, request)
                if decoded is not None:
                    entry["decoded"] = decoded
            self._match(d, entry, msg)
        entry.update(extra)
        self.entries.append(entry)
        return entry

    def _match(self, d, entry, msg) -> None:
        if msg.more_fragments:
            return          # matched when whole
        t = msg.msg_type
        rid = getattr(msg, "request_id", None)
        if t in _ANSWER_OF:
            self.requests[(d.stream, _ANSWER_OF[t], rid)] = entry
        elif t in (MsgType.Reply, MsgType.LocateReply):
            request = self.requests.pop((d.stream, t, rid), None)
            if request is not None:
                entry["request_frame"] = request["frame"]
                entry["response_time"] = round(entry["time"] - request["time"], 6)
                request["reply_frame"] = entry["frame"]


def decode_capture(path, *, ports=None, heuristic: bool = True, user_exceptions=None,
                   decode_body=None) -> list[dict]:
    """Every GIOP message of a capture as a JSON-ready dict (see the module doc)."""
    decoder = CaptureDecoder(ports, heuristic, user_exceptions, decode_body)
    for seg in read_tcp_segments(path):
        decoder.feed(seg)
    return decoder.entries


# ----------------------------------------------------------------------------
# Arguments and results, decoded with IDL operation descriptions.
#
# Decoded values are reported flat, as (path, text) pairs, the form the Lua
# dissector's argument fields take too: the two are compared pair for pair.
#   integers: decimal; float/double: C's %.17g; boolean: true/false;
#   char/string: the text; octet sequences/arrays: hex; enum: the item's name;
#   struct/exception: "path.member"; sequence/array: "path[i]";
#   union: "path._d" then "path.<branch>"; object reference: its type_id
#   ("nil" for nil) and, for an IIOP first profile, "path.host"/"path.port";
#   fixed: plain decimal with its scale ("-1.50"); long double: exact hex
#   (long_double_text); TypeCode: typecode_text; any: its TypeCode's text,
#   then its value under "path.value"; valuetype: "null", its repository id
#   then its members as "path.member", or "-> <path>" for a value already
#   shown (an indirection: shared or cyclic); value box: "null" or the boxed
#   value at "path".  ``seen`` (value -> path) spans one message's values.
def flatten_value(tc, value, path: str, out: list, seen: dict | None = None) -> list:
    from .iiop import IIOPProfile, decode_profile
    from .typecode import TCKind, resolve, value_members
    from .values import field_names
    if seen is None:
        seen = {}
    tc = resolve(tc)
    kind = tc.kind()
    while kind == TCKind.tk_alias:
        tc = resolve(tc.content_type())
        kind = tc.kind()
    if kind in (TCKind.tk_struct, TCKind.tk_except):
        for i in range(tc.member_count()):
            name = tc.member_name(i)
            member = value[i] if isinstance(value, (tuple, list)) else \
                getattr(value, _py_attr(value, i, name))
            flatten_value(tc.member_type(i), member, f"{path}.{name}", out, seen)
    elif kind == TCKind.tk_union:
        flatten_value(tc.discriminator_type(), value._d, f"{path}._d", out, seen)
        branch = _union_branch(tc, value._d)
        if branch is not None:
            flatten_value(tc.member_type(branch), value._v,
                          f"{path}.{tc.member_name(branch)}", out, seen)
    elif kind in (TCKind.tk_sequence, TCKind.tk_array) and not isinstance(value, (bytes, str)):
        for i, item in enumerate(value):
            flatten_value(tc.content_type(), item, f"{path}[{i}]", out, seen)
    elif kind == TCKind.tk_any:
        out.append([path, typecode_text(value.tc)])
        if resolve(value.tc).unalias().kind() not in (TCKind.tk_null, TCKind.tk_void):
            flatten_value(value.tc, value.value, f"{path}.value", out, seen)
    elif kind == TCKind.tk_TypeCode:
        out.append([path, typecode_text(value)])
    elif kind == TCKind.tk_fixed:
        out.append([path, format(value, "f")])
    elif kind == TCKind.tk_longdouble:
        out.append([path, long_double_text(value)])
    elif kind == TCKind.tk_value_box:
        if value is None:
            out.append([path, "null"])
        else:
            flatten_value(tc.content_type(), value, path, out, seen)
    elif kind in (TCKind.tk_value, TCKind.tk_event):
        if value is None:
            out.append([path, "null"])
        elif id(value) in seen:
            out.append([path, "-> " + seen[id(value)]])
        else:
            seen[id(value)] = path
            actual = resolve(value._tc)          # the type decoded (truncated to a known base)
            out.append([path, actual.id()])
            members = value_members(actual)
            for attr, (name, mtype) in zip(field_names([m[0] for m in members]), members):
                flatten_value(mtype, getattr(value, attr), f"{path}.{name}", out, seen)
    elif kind == TCKind.tk_objref:
        if value is None or value.is_nil:
            out.append([path, "nil"])
        else:
            out.append([path, value.type_id])
            first = decode_profile(value.profiles[0], lenient=True) if value.profiles else None
            if isinstance(first, IIOPProfile):
                out.append([f"{path}.host", first.host])
                out.append([f"{path}.port", str(first.port)])
    else:
        out.append([path, _leaf_text(value)])
    return out


def typecode_text(tc) -> str:
    """A TypeCode in one line: its kind without "tk_", the repository id of
    named kinds, bounds and parameters of the others ("sequence<long,10>",
    "fixed<5,2>", "struct IDL:Demo/Point:1.0")."""
    from .typecode import NAMED_KINDS, TCKind, resolve
    tc = resolve(tc)
    kind = tc.kind()
    name = kind.name[3:]
    if kind in NAMED_KINDS:
        return f"{name} {tc.id()}"
    if kind in (TCKind.tk_string, TCKind.tk_wstring):
        return f"{name}<{tc.length()}>" if tc.length() else name
    if kind == TCKind.tk_fixed:
        return f"fixed<{tc.fixed_digits()},{tc.fixed_scale()}>"
    if kind == TCKind.tk_sequence:
        inner = typecode_text(tc.content_type())
        return f"sequence<{inner},{tc.length()}>" if tc.length() else f"sequence<{inner}>"
    if kind == TCKind.tk_array:
        return f"array<{typecode_text(tc.content_type())},{tc.length()}>"
    return name


def long_double_text(value) -> str:
    """An IEEE binary128 exactly, as C's %a writes a double: "-0x1.<28 hex
    digits>p+3"; subnormals "0x0.<...>p-16382"; "inf", "-inf", "nan"."""
    bits = value.bits
    sign = "-" if bits >> 127 else ""
    exponent = (bits >> 112) & 0x7FFF
    mantissa = bits & ((1 << 112) - 1)
    if exponent == 0x7FFF:
        return "nan" if mantissa else sign + "inf"
    if exponent == 0:
        return f"{sign}0x0.{mantissa:028x}p{-16382 if mantissa else 0:+d}"
    return f"{sign}0x1.{mantissa:028x}p{exponent - 16383:+d}"


def _py_attr(value, index: int, idl_name: str) -> str:
    fields = getattr(type(value), "_fields", None)
    return fields[index] if fields else idl_name


def _union_branch(tc, discriminator):
    default = None
    for i in range(tc.member_count()):
        label = tc.member_label(i)
        if tc.default_index() == i:
            default = i
        elif label == discriminator:
            return i
    return default


def _leaf_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "name") and isinstance(value, int):     # an enum item
        return value.name
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "%.17g" % value
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


class IdlBodyDecoder:
    """``decode_body`` for :class:`CaptureDecoder`: decodes request arguments,
    reply results/out values and user exceptions of the operations of IDL
    modules (``pycdr.idl.load`` results), looked up by operation name."""

    def __init__(self, modules):
        self.operations: dict = {}
        self.exceptions: dict = {}
        for m in modules:
            for iface in m.interfaces.values():
                for name, op in iface.all_operations().items():
                    self.operations.setdefault(name, op)
                    for exc in op.raises:
                        self.exceptions.setdefault(exc.id(), exc)

    def __call__(self, msg, request):
        from .marshal import read_value
        from .giop.messages import Reply, ReplyStatus, Request
        from .typecode import TCKind
        if isinstance(msg, Request):
            op = self.operations.get(msg.operation)
            if op is None:
                return None
            items = [(p.name, p.type) for p in op.in_params]
            kind = "arguments"
        elif isinstance(msg, Reply) and request is not None:
            op = self.operations.get(request.get("operation"))
            if op is None:
                return None
            if msg.reply_status == ReplyStatus.NO_EXCEPTION:
                items = [] if op.result.kind() == TCKind.tk_void else [("return", op.result)]
                items += [(p.name, p.type) for p in op.out_params]
                kind = "results"
            elif msg.reply_status == ReplyStatus.USER_EXCEPTION:
                exc = self.exceptions.get(msg.exception_id)
                if exc is None:
                    return None
                items = [(exc.name(), exc)]
                kind = "exception"
            else:
                return None
        else:
            return None
        out: list = []
        result = {"operation": op.name, "kind": kind, "values": out}
        r = msg.body_reader(lenient=True)
        seen: dict = {}                              # valuetypes shared between items
        try:
            for name, tc in items:                   # (an exception starts with its id)
                flatten_value(tc, read_value(r, tc), name, out, seen)
        except PycdrError as e:
            result["error"] = error_json(e)
        if r.warnings:          # violations inside the values (bad boolean, padding, ...)
            result["warnings"] = [w.to_json() for w in r.warnings]
        return result
