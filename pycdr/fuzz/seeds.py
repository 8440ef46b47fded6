"""The seed corpus: GIOP message sequences that mutation starts from.

- the conformance catalog's cases (and the echo cases when the target serves
  the conformance Echo interface), rendered for the target;
- requests for every operation of an IDL interface with random valid
  arguments (``--idl FILE --interface NAME``);
- the client-side GIOP messages of pcap files (``--corpus DIR``).

A seed is a list of encoded messages sent on one connection, plus the
TypeCodes of the first message's body when they are known (the mutators then
reach inside the arguments)."""

from __future__ import annotations

import glob
import os
import random
import string
from dataclasses import dataclass, field
from decimal import Decimal

from ..errors import PycdrError
from ..conformance.cases import catalog, echo_catalog
from ..conformance.rendering import RenderContext, render_case
from ..conformance.echo import ECHO_INTERFACE, load_echo_module
from ..conformance.suite import serves_echo
from ..idl import load
from ..capture.read import read_tcp_segments
from ..giop.header import FLAG_MORE_FRAGMENTS, HEADER_SIZE, MsgType, parse_header
from ..giop.messages import KeyAddr, Request, decode_message, encode_message
from ..codec.marshal import write_value
from ..codec.typecode import DEFAULT, INTEGER_RANGES, TCKind, resolve
from ..codec.values import Any, LongDouble, class_for
from ..codec import tc

K = TCKind
# Seeds bigger than this are left out: the fuzzer wants many small cases.
MAX_SEED_BYTES = 16 << 10
# Catalog cases whose messages are past MAX_SEED_BYTES whatever the target:
# not rendered (the ZIOP bomb's 65 KB are 64 MiB of zeros through zlib at
# level 9, 0.2 s of CPU a version at each campaign's start, to be left out).
TOO_BIG = ("ziop_bomb",)
CLIENT_TYPES = (MsgType.Request, MsgType.CancelRequest, MsgType.LocateRequest,
                MsgType.CloseConnection, MsgType.MessageError, MsgType.Fragment)


@dataclass
class Seed:
    name: str
    messages: list                       # bytes, sent in order on one connection
    body_types: list | None = None       # TypeCodes of messages[0]'s body values
    source: str = ""                     # catalog | idl | pcap
    notes: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"name": self.name, "source": self.source,
                "messages": [m.hex() for m in self.messages]}


# --------------------------------------------------------------------------
def catalog_seeds(target, *, echo: bool | None = None) -> list[Seed]:
    """The conformance catalog's messages for ``target`` (a
    pycdr.conformance.target.Target); the echo cases too when the target serves
    the conformance Echo interface (asked with _is_a unless ``echo`` says)."""
    iface = None
    cases = catalog(target.version)
    if echo is None:
        echo = serves_echo(target)
    if echo:
        module = load_echo_module()
        iface = module.interfaces[ECHO_INTERFACE]
        cases += echo_catalog(module, iface)
    ctx = RenderContext(target, iface)
    seeds = []
    for case in cases:
        if case.special in TOO_BIG:
            ctx.next_id()       # (the request id its rendering takes: the later seeds keep theirs)
            continue
        try:
            messages = render_case(case, ctx)
        except (PycdrError, ValueError, AttributeError):
            continue
        if not messages or sum(map(len, messages)) > MAX_SEED_BYTES:
            continue
        body_types = None
        first = case.send[0] if case.send else None
        if first is not None and first.body and first.body[0] == "echo" and iface is not None \
                and not first.fragment:
            body_types = [p.type for p in iface.operation(first.body[1]).in_params]
        seeds.append(Seed(f"catalog:{case.id}", messages, body_types, "catalog"))
    return seeds


# --------------------------------------------------------------------------
def idl_seeds(idl_file: str, interface_name: str, object_key: bytes, *, rng: random.Random,
              per_operation: int = 4, include_dirs=()) -> list[Seed]:
    """Requests for every operation of the interface, random valid arguments,
    random GIOP version (1.0-1.2) and byte order."""
    module = load(idl_file, list(include_dirs))
    iface = module.interfaces.get(interface_name)
    if iface is None:
        raise PycdrError(f"no interface {interface_name!r} in {idl_file}; it has: "
                         f"{', '.join(sorted(module.interfaces)) or 'none'}")
    seeds = []
    rid = 0x200
    for name, op in sorted(iface.all_operations().items()):
        types = [p.type for p in op.in_params]
        for n in range(per_operation):
            version = rng.choice(((1, 0), (1, 1), (1, 2)))
            little = rng.random() < 0.5
            rid += 1
            try:
                values = [random_value(t, rng) for t in types]
                msg = Request(version=version, little=little, request_id=rid,
                              target=KeyAddr(object_key), operation=name,
                              response_flags=0 if op.oneway else 3)

                def write(w, values=values):
                    for t, v in zip(types, values):
                        write_value(w, t, v)
                data = encode_message(msg, write_body=write)
            except (PycdrError, TypeError, ValueError, OverflowError):
                continue        # a type the value generator cannot fill (valuetypes)
            if len(data) <= MAX_SEED_BYTES:
                seeds.append(Seed(f"idl:{name}#{n}", [data], types, "idl"))
    return seeds


def idl_probe_request(idl_file: str, interface_name: str, *, include_dirs=()):
    """For the liveness probe past the ORB core: a function of the target
    giving the shortest of idl_seeds' requests that expect a reply (None if
    there is none) -- a Request that reaches the servant."""
    def build(target):
        requests = []
        for seed in idl_seeds(idl_file, interface_name, target.object_key,
                              rng=random.Random("probe"), include_dirs=include_dirs):
            try:
                if decode_message(seed.messages[0], lenient=True)[0].response_expected:
                    requests.append(seed.messages[0])
            except PycdrError:
                continue
        return min(requests, key=len) if requests else None
    return build


_CHARS = string.ascii_letters + string.digits + " _-\xe9\xfc"


def random_value(t, rng: random.Random, depth: int = 0):
    """A random valid value of TypeCode ``t`` (pycdr's value mapping); small
    sizes, extremes of the ranges now and then."""
    t = resolve(t).unalias()
    k = t.kind()
    if k in INTEGER_RANGES:
        lo, hi = INTEGER_RANGES[k]
        return rng.choice((lo, hi, 0, 1)) if rng.random() < 0.3 else rng.randint(lo, hi)
    if k in (K.tk_float, K.tk_double):
        return rng.choice((0.0, -1.5, 1e30, rng.uniform(-1e6, 1e6)))
    if k == K.tk_longdouble:
        return LongDouble.from_float(rng.uniform(-1e6, 1e6))
    if k == K.tk_boolean:
        return rng.random() < 0.5
    if k == K.tk_char:
        return rng.choice(_CHARS)
    if k == K.tk_wchar:
        return rng.choice(_CHARS + "\u20ac")
    if k in (K.tk_string, K.tk_wstring):
        n = rng.randint(0, min(t.length() or 24, 24))
        return "".join(rng.choice(_CHARS) for _ in range(n))
    if k == K.tk_fixed:
        d, s = t.fixed_digits(), t.fixed_scale()
        return Decimal(f"{rng.randint(-(10 ** d - 1), 10 ** d - 1)}E-{s}")
    if k == K.tk_enum:
        return rng.choice(class_for(t)._items)
    if k in (K.tk_struct, K.tk_except):
        values = [random_value(t.member_type(i), rng, depth + 1) for i in range(t.member_count())]
        return class_for(t)(*values)
    if k == K.tk_union:
        cls = class_for(t)
        i = rng.randrange(t.member_count())
        label = t.member_label(i)
        d = cls._default_d if label is DEFAULT else label
        if d is None:
            label = t.member_label(0)
            i = 0
            d = label
        return cls(d, random_value(t.member_type(i), rng, depth + 1))
    if k in (K.tk_sequence, K.tk_array):
        content = resolve(t.content_type()).unalias()
        n = t.length() if k == K.tk_array else rng.randint(0, min(t.length() or 4, 4))
        if depth > 4 and k == K.tk_sequence:
            n = 0
        if content.kind() == K.tk_octet:
            return bytes(rng.randrange(256) for _ in range(n))
        if content.kind() == K.tk_char:
            return "".join(rng.choice(_CHARS) for _ in range(n))
        return [random_value(content, rng, depth + 1) for _ in range(n)]
    if k == K.tk_any:
        inner = rng.choice((tc.long, tc.string, tc.boolean, tc.sequence(tc.short), tc.double))
        return Any(inner, random_value(inner, rng, depth + 1))
    if k == K.tk_TypeCode:
        return rng.choice((tc.long, tc.sequence(tc.string), tc.struct(
            "IDL:pycdr/Fuzz:1.0", "Fuzz", [("a", tc.long), ("b", tc.string)])))
    if k in (K.tk_objref, K.tk_abstract_interface):
        return None
    raise TypeError(f"no random value for {k.name}")


# --------------------------------------------------------------------------
def pcap_seeds(corpus_dir: str) -> list[Seed]:
    """Client-side GIOP messages of every pcap/pcapng under ``corpus_dir``:
    one seed per message, a fragment chain kept together."""
    seeds = []
    paths = sorted(glob.glob(os.path.join(corpus_dir, "**", "*.pcap*"), recursive=True))
    for path in paths:
        streams: dict = {}
        for seg in read_tcp_segments(path):
            key = (seg.src, seg.sport, seg.dst, seg.dport)
            entry = streams.setdefault(key, [None, bytearray()])
            if not seg.payload:
                entry[0] = (seg.seq + 1) & 0xFFFFFFFF if seg.flags & 0x02 else seg.seq
                continue
            if entry[0] is not None and seg.seq != entry[0]:
                continue          # retransmission or gap
            entry[1] += seg.payload
            entry[0] = (seg.seq + len(seg.payload)) & 0xFFFFFFFF
        base = os.path.basename(path)
        for (src, sport, dst, dport), (_, data) in streams.items():
            chain: list = []
            for i, message in enumerate(_split(bytes(data))):
                if message[7] not in CLIENT_TYPES:
                    break           # a server's direction
                chain.append(message)
                if message[6] & FLAG_MORE_FRAGMENTS:
                    continue
                if sum(map(len, chain)) <= MAX_SEED_BYTES:
                    seeds.append(Seed(f"pcap:{base}:{sport}:{i}", chain, None, "pcap"))
                chain = []
    return seeds


def _split(data: bytes) -> list[bytes]:
    out = []
    pos = 0
    while pos + HEADER_SIZE <= len(data):
        try:
            header = parse_header(data, pos)
        except PycdrError:
            break
        end = pos + header.total_size
        if end > len(data):
            break
        out.append(data[pos:end])
        pos = end
    return out
