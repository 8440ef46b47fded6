"""Which ORB made an object key, and what it says (POA path, object id).

An object key is opaque to everyone but the server that made it, so nothing here is a rule of
the spec: each layout is one ORB's own, and each decoder states where it was verified.  A key
is named only where its bytes (or, for layouts that have no mark of their own, the IOR's
TAG_ORB_TYPE) make the vendor certain; anything else is left unnamed.

- JDK lineage (the Sun ORB in the JDK up to 10, the OpenJDK ORB used by WildFly, the
  GlassFish/Eclipse ORB): a magic long 0xAFABCAFE (JDK 1.2-1.3), 0xAFABCAFF (JDK 1.3.1) or
  0xAFABCB00 (JDK 1.4 on), then a subcontract id that says POA (32-63) or not (0-31), all in
  big-endian CDR with no byte-order octet.  POA keys since 0xAFABCB00: server id long, ORB id
  string, POA names as sequence<string> (RootPOA first), object id as sequence<octet>, then an
  ORB version octet; before it: server id, ORB id and POA id as longs, then the object id.
  Verified: the 0xAFABCB00 POA form against the OpenJDK ORB 10.1.3 and the GlassFish ORB
  5.0.0 (tests/data/objectkeys), which write the same layout;
  the other forms from the JDK ORB's source (ObjectKeyFactoryImpl and the *ObjectKeyTemplate
  classes).
- omniORB: each POA name below the root preceded by 0xFF, a transient POA's 0xFE and 8 bytes
  that identify its incarnation, then 0x00 and the object id (4 octets when the POA assigned
  it).  Verified against omniORBpy 4.2.5 and omniORB's source (poa.cc, catior's
  get_poa_info).  Keys without 0xFF/0xFE (omniINSPOA, e.g. "NameService") are plain text.
- TAO: the prefix 0x14 0x01 0x0F 0x00, then 'R'/'N' (root POA or not), 'S'/'U' (system or
  user ids), 'P'/'T' (persistent or transient); a persistent user-id POA follows with the
  length of its folded name (ulong, big-endian) and the name (each POA name ending in 0x00),
  then the object id.  The other kinds hold a creation time and ids whose sizes depend on how
  the server was built, so only the flags are shown.  From TAO's source (Root_POA.cpp:
  objectkey_prefix, parse_key, set_id; Root_POA.inl for the characters).
- JacORB: "<implname or server id>/<POA path, '/' separated>/<object id>", with '/' inside a
  part written "&%" and '&' written "&&".  Text keys of other ORBs look the same, so this
  layout is applied only when the IOR's ORB type is JacORB.  From JacORB's source (POAUtil,
  POAConstants) and checked against JacORB 3.9 (tests/data/objectkeys).
- ORBit2: 28 bytes: adaptor index (4, in the server's byte order), a 16-byte random cookie,
  object index and 4 random bytes (orbit-adaptor.h).  Random bytes carry no mark, so this is
  applied only when the IOR's ORB type is ORBit.
- pycdr's own reference ORB: transient keys are 0x00 "pycdr" 0x00, the adapter's 8 random
  bytes and a 4-byte counter (pycdr.orb.adapter); persistent keys are the names given.
Orbacus and the others do not publish their key layout; their keys stay unnamed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..codec.cdr import CDRReader
from ..errors import DecodeError

JDK_MAGICS = {0xAFABCAFE: "JDK 1.2-1.3", 0xAFABCAFF: "JDK 1.3.1", 0xAFABCB00: "JDK 1.4 or later"}
JDK_MAGIC_NEWER = 0xAFABCB00
JDK_FIRST_POA_SCID, JDK_MAX_POA_SCID = 32, 63
JDK_VENDOR = "JDK ORB (Sun/OpenJDK/GlassFish)"

OMNI_POA_NAME_SEP = 0xFF
OMNI_TRANSIENT_SEP = 0xFE
OMNI_TRANSIENT_SUFFIX_SIZE = 8

TAO_PREFIX = b"\x14\x01\x0f\x00"

PYCDR_TRANSIENT_MARKER = b"\x00pycdr\x00"
PYCDR_TRANSIENT_KEY_SIZE = len(PYCDR_TRANSIENT_MARKER) + 8 + 4

JACORB_SEP = ord("/")
ORBIT_KEY_SIZE = 28

# ORB types (TAG_ORB_TYPE, upper 24 bits) of the vendors whose keys carry no mark.
ORB_TYPE_JACORB = 0x4A414300
ORB_TYPE_ORBIT = 0x4F425400


@dataclass(frozen=True)
class ObjectKeyInfo:
    """What a key tells.  ``poa_path`` lists POA names below the root (empty: the root POA),
    None where the layout has no POA path; ``object_id`` is None where it cannot be cut out;
    ``fields`` holds the layout's other parts by name."""
    vendor: str
    layout: str
    poa_path: tuple | None = None
    object_id: bytes | None = None
    fields: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        out = {"vendor": self.vendor, "layout": self.layout}
        if self.poa_path is not None:
            out["poa_path"] = list(self.poa_path)
        if self.object_id is not None:
            out["object_id"] = self.object_id.hex()
            out["object_id_text"] = printable(self.object_id)
        out.update(self.fields)
        return out

    def summary(self) -> str:
        """One line: vendor, layout, POA path and object id."""
        parts = [f"{self.vendor} ({self.layout})"]
        if self.poa_path is not None:
            parts.append("POA /" + "/".join(self.poa_path))
        if self.object_id is not None:
            parts.append(f"object id {hex_and_text(self.object_id)}")
        parts += [f"{k} {v}" if v != "" else f'{k} ""' for k, v in self.fields.items()]
        return ", ".join(parts)


def printable(data: bytes) -> str:
    """Printable ASCII as is, every other octet as '.' (the text beside a hex dump)."""
    return "".join(chr(b) if 32 <= b <= 126 else "." for b in data)


def hex_and_text(data: bytes) -> str:
    """``hex "text"``: how keys and ids are shown to a person."""
    return f'{data.hex()} "{printable(data)}"' if data else "(empty)"


def identify(key: bytes, orb_type: int | None = None) -> ObjectKeyInfo | None:
    """The vendor and layout of ``key``, or None when nothing makes them certain.
    ``orb_type`` is the IOR's TAG_ORB_TYPE value, where it has one."""
    key = bytes(key)
    vendor_bits = None if orb_type is None else orb_type & 0xFFFFFF00
    if len(key) >= 8 and int.from_bytes(key[:4], "big") in JDK_MAGICS:
        return _jdk(key)
    if key.startswith(TAO_PREFIX):
        return _tao(key)
    if key.startswith(PYCDR_TRANSIENT_MARKER) and len(key) == PYCDR_TRANSIENT_KEY_SIZE:
        n = len(PYCDR_TRANSIENT_MARKER)
        return ObjectKeyInfo("pycdr", "transient key", None, key[n + 8:], {
            "adapter_id": key[n:n + 8].hex()})
    if vendor_bits == ORB_TYPE_JACORB:
        return _jacorb(key)
    if vendor_bits == ORB_TYPE_ORBIT and len(key) == ORBIT_KEY_SIZE:
        return ObjectKeyInfo("ORBit2", "adaptor key", None, key[20:], {
            "adaptor_index": key[:4].hex(), "cookie": key[4:20].hex()})
    if key[:1] in (bytes([OMNI_POA_NAME_SEP]), bytes([OMNI_TRANSIENT_SEP])):
        return _omniorb(key)
    return None


def _jdk(key: bytes) -> ObjectKeyInfo:
    magic = int.from_bytes(key[:4], "big")
    scid = int.from_bytes(key[4:8], "big", signed=True)
    r = CDRReader(key)
    r.pos = 8
    info = {"magic": f"0x{magic:08x} ({JDK_MAGICS[magic]})", "scid": scid}
    try:
        if JDK_FIRST_POA_SCID <= scid <= JDK_MAX_POA_SCID:
            info["server_id"] = r.read_long()
            if magic >= JDK_MAGIC_NEWER:
                info["orb_id"] = r.read_string()
                n = r.read_count(4, "POA name list")
                names = tuple(r.read_string() for _ in range(n))
                object_id = r.read_octet_sequence()
                info["orb_version"] = r.read_octet()
                layout = "POA key"
            else:
                info["orb_id"] = r.read_long()
                info["poa_id"] = r.read_long()
                names = None
                object_id = r.read_octet_sequence()
                layout = "old POA key"
        elif 0 <= scid < JDK_FIRST_POA_SCID:
            info["server_id"] = r.read_long()
            names = None
            object_id = r.read_octet_sequence()
            if magic >= JDK_MAGIC_NEWER:
                info["orb_version"] = r.read_octet()
            layout = "JIDL key (ORB.connect)"
        else:
            return ObjectKeyInfo(JDK_VENDOR, "unknown subcontract", fields=info)
    except DecodeError as e:
        info["malformed"] = e.message
        return ObjectKeyInfo(JDK_VENDOR, "malformed", fields=info)
    if r.pos != len(key):
        # The JDK 1.3.1_01 patch wrote one more octet after a JIDL key; others end here.
        info["trailing"] = key[r.pos:].hex()
    return ObjectKeyInfo(JDK_VENDOR, layout, _below_root(names), object_id, info)


def _below_root(names):
    """The JDK ORB (observed) and TAO (its folded names) start the path with the root POA's
    own name; the path shown starts below it, as omniORB's and JacORB's keys do."""
    return names[1:] if names is not None and names[:1] == ("RootPOA",) else names


def _omniorb(key: bytes) -> ObjectKeyInfo | None:
    end = len(key)
    i = 0
    names = []
    while i < end and key[i] == OMNI_POA_NAME_SEP:
        i += 1
        start = i
        while i < end and key[i] not in (0, OMNI_POA_NAME_SEP, OMNI_TRANSIENT_SEP):
            i += 1
        names.append(key[start:i].decode("latin-1"))
    fields = {"lifespan": "persistent"}
    if i < end and key[i] == OMNI_TRANSIENT_SEP:
        fields = {"lifespan": "transient",
                  "incarnation": key[i + 1:i + 1 + OMNI_TRANSIENT_SUFFIX_SIZE].hex()}
        i += 1 + OMNI_TRANSIENT_SUFFIX_SIZE
    if i >= end or key[i] != 0:
        return None         # not the structure omniORB's POA writes
    return ObjectKeyInfo("omniORB", "POA key", tuple(names), key[i + 1:], fields)


def _tao(key: bytes) -> ObjectKeyInfo:
    flags = key[4:7]
    known = {0: {ord("R"): "root", ord("N"): "child"},
             1: {ord("S"): "system", ord("U"): "user"},
             2: {ord("P"): "persistent", ord("T"): "transient"}}
    if len(flags) < 3 or any(flags[n] not in known[n] for n in range(3)):
        return ObjectKeyInfo("TAO", "unrecognised POA key", fields={"rest": key[4:].hex()})
    poa, ids, lifespan = (known[n][flags[n]] for n in range(3))
    fields = {"poa": poa, "ids": ids, "lifespan": lifespan}
    if lifespan == "persistent" and ids == "user":
        if poa == "root":
            return ObjectKeyInfo("TAO", "POA key", (), key[7:], fields)
        if len(key) >= 11:
            size = int.from_bytes(key[7:11], "big")
            if 11 + size <= len(key):
                folded = key[11:11 + size]
                names = tuple(n.decode("latin-1") for n in folded.split(b"\x00")[:-1])
                return ObjectKeyInfo("TAO", "POA key", _below_root(names), key[11 + size:],
                                     fields)
    fields["rest"] = key[7:].hex()
    return ObjectKeyInfo("TAO", "POA key", fields=fields)


def _jacorb_unmask(part: bytes) -> bytes | None:
    out = bytearray()
    i = 0
    while i < len(part):
        if part[i] == ord("&"):
            nxt = part[i + 1:i + 2]
            if nxt == b"&":
                out.append(ord("&"))
            elif nxt == b"%":
                out.append(JACORB_SEP)
            else:
                return None
            i += 2
        else:
            out.append(part[i])
            i += 1
    return bytes(out)


def _jacorb(key: bytes) -> ObjectKeyInfo:
    parts = key.split(b"/")
    if len(parts) < 2:
        return ObjectKeyInfo("JacORB", "not a POA key", fields={"text": printable(key)})
    impl = _jacorb_unmask(parts[0])
    object_id = _jacorb_unmask(parts[-1])
    names = [_jacorb_unmask(p) for p in parts[1:-1]]
    if impl is None or object_id is None or None in names:
        return ObjectKeyInfo("JacORB", "bad escape", fields={"text": printable(key)})
    return ObjectKeyInfo("JacORB", "POA key", tuple(n.decode("latin-1") for n in names),
                         object_id, {"implname_or_server_id": impl.decode("latin-1")})
