"""Service contexts: ``sequence<IOP::ServiceContext>`` in Request and Reply headers.

``struct ServiceContext { ulong context_id; sequence<octet> context_data; }``;
the data of the standard contexts is an encapsulation.  Contexts listed in
``TYPED`` decode to their own class (re-encoded from their fields, in the byte
order they came in); every other one stays a :class:`RawServiceContext` and
re-encodes byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import codesets
from ..codec.cdr import CDRReader, CDRWriter
from ..addressing.components import decode_encapsulated
from ..addressing.iiop import read_policy_values, write_policy_values
from ..codec.ior import IOR, read_ior, write_ior

# IOP::ServiceId values (CORBA 3.x Part 2, 7.7.1) and JacORB's padding context.
CONTEXT_NAMES = {
    0: "TransactionService", 1: "CodeSets", 2: "ChainBypassCheck", 3: "ChainBypassInfo",
    4: "LogicalThreadId", 5: "BI_DIR_IIOP", 6: "SendingContextRunTime",
    7: "INVOCATION_POLICIES", 8: "FORWARDED_IDENTITY", 9: "UnknownExceptionInfo",
    10: "RTCorbaPriority", 11: "RTCorbaPriorityRange", 12: "FT_GROUP_VERSION",
    13: "FT_REQUEST", 14: "ExceptionDetailMessage", 15: "SecurityAttributeService",
    16: "ActivityService", 17: "RMICustomMaxStreamFormat", 18: "ACCESS_SESSION_ID",
    19: "SERVICE_SESSION_ID", 20: "FIREWALL_PATH", 21: "FIREWALL_PATH_RESP",
    0x4A414301: "JacORB padding", 0x4A414302: "JacORB proxy",
    # The JDK-lineage ORBs' ORB version ("NEO\0", TAG_ORB_VERSION in their ORBConstants);
    # TAO's alignment filler (tao/corbafwd.h, TAO_SVC_CONTEXT_ALIGN).
    0x4E454F00: "Sun ORB version (NEO)", 0x54414F00: "TAO alignment",
}


def context_name(context_id: int) -> str:
    return CONTEXT_NAMES.get(context_id, f"0x{context_id:08x}")


@dataclass
class ServiceContext:
    """Base: the id is a class constant for typed contexts."""
    context_id = -1
    # Byte order of the encapsulation (kept so a decoded context re-encodes alike).
    little: bool = field(default=False, compare=False, repr=False, kw_only=True)

    def encode_data(self, version=(1, 2)) -> bytes:
        # wstrings inside follow the message's GIOP version (1.0 has none: use 1.2's).
        w = CDRWriter(little=self.little, version=max(version, (1, 1))).encapsulation_writer()
        self.write_fields(w)
        return w.getvalue()

    def write_fields(self, w: CDRWriter) -> None:
        raise NotImplementedError   # every typed subclass defines it

    def fields_json(self) -> dict:
        return {}

    def to_json(self) -> dict:
        out = {"context_id": self.context_id, "name": context_name(self.context_id)}
        out.update(self.fields_json())
        return out


@dataclass
class RawServiceContext(ServiceContext):
    id: int = 0
    data: bytes = b""

    @property
    def context_id(self) -> int:    # type: ignore[override]
        return self.id

    def encode_data(self, version=(1, 2)) -> bytes:
        return self.data

    def fields_json(self) -> dict:
        return {"data": self.data.hex()}


@dataclass
class CodeSetsContext(ServiceContext):
    """CONV_FRAME::CodeSetContext: the transmission code sets the client chose."""
    context_id = 1
    char_data: int = codesets.DEFAULT_TCS_C
    wchar_data: int = codesets.DEFAULT_TCS_W

    @classmethod
    def read_fields(cls, r: CDRReader) -> dict:
        return {"char_data": r.read_ulong(), "wchar_data": r.read_ulong()}

    def write_fields(self, w):
        w.write_ulong(self.char_data)
        w.write_ulong(self.wchar_data)

    def fields_json(self):
        return {"char_data": codesets.name(self.char_data),
                "wchar_data": codesets.name(self.wchar_data)}


@dataclass
class BiDirIIOPContext(ServiceContext):
    """IIOP::BiDirIIOPServiceContext: the listen points a client offers."""
    context_id = 5
    listen_points: list = field(default_factory=list)     # [(host, port)]

    @classmethod
    def read_fields(cls, r):
        n = r.read_count(6, "listen point list")
        return {"listen_points": [(r.read_string(), r.read_ushort()) for _ in range(n)]}

    def write_fields(self, w):
        w.write_ulong(len(self.listen_points))
        for host, port in self.listen_points:
            w.write_string(host)
            w.write_ushort(port)

    def fields_json(self):
        return {"listen_points": [{"host": h, "port": p} for h, p in self.listen_points]}


@dataclass
class SendingContextRunTime(ServiceContext):
    """The IOR of the sender's SendingContext::CodeBase (RMI-IIOP)."""
    context_id = 6
    ior: IOR = None

    @classmethod
    def read_fields(cls, r):
        return {"ior": read_ior(r)}

    def write_fields(self, w):
        write_ior(w, self.ior)

    def fields_json(self):
        return {"ior_type_id": self.ior.type_id, "profiles": len(self.ior.profiles)}


@dataclass
class InvocationPolicies(ServiceContext):
    """Messaging::PolicyValueSeq: ``sequence<struct {ulong ptype; sequence<octet> pvalue;}>``."""
    context_id = 7
    policies: list = field(default_factory=list)          # [(ptype, pvalue bytes)]

    @classmethod
    def read_fields(cls, r):
        return {"policies": list(read_policy_values(r))}

    def write_fields(self, w):
        write_policy_values(w, self.policies)

    def fields_json(self):
        return {"policies": [{"ptype": t, "pvalue": v.hex()} for t, v in self.policies]}


@dataclass
class UnknownExceptionInfo(ServiceContext):
    """RMI-IIOP: the Java Throwable behind an UNKNOWN exception, marshaled as a
    valuetype.  The value stays raw (decoding it needs the Java class); its
    repository id is read from the value header when one is there."""
    context_id = 9
    value: bytes = b""
    repository_id: str | None = None

    @classmethod
    def read_fields(cls, r):
        start = r.pos
        repo_id = None
        tag = r.read_ulong()
        # value_tag: 0x7fffff00 | 1 (codebase URL) | 2 (one repository id) or 6 (list).
        if 0x7FFFFF00 <= tag <= 0x7FFFFFFF:
            if tag & 1:
                r.read_string()                      # codebase URL
            if tag & 6 == 2:
                repo_id = r.read_string()
        return {"value": bytes(r.buf[start:r.end]), "repository_id": repo_id,
                "_consumed": r.end}

    def write_fields(self, w):
        w.write_raw(self.value)

    def fields_json(self):
        return {"repository_id": self.repository_id, "value": self.value.hex()}


@dataclass
class RTCorbaPriority(ServiceContext):
    context_id = 10
    priority: int = 0

    @classmethod
    def read_fields(cls, r):
        return {"priority": r.read_short()}

    def write_fields(self, w):
        w.write_short(self.priority)

    def fields_json(self):
        return {"priority": self.priority}


@dataclass
class FTGroupVersion(ServiceContext):
    """FT::FTGroupVersionServiceContext."""
    context_id = 12
    object_group_ref_version: int = 0

    @classmethod
    def read_fields(cls, r):
        return {"object_group_ref_version": r.read_ulong()}

    def write_fields(self, w):
        w.write_ulong(self.object_group_ref_version)

    def fields_json(self):
        return {"object_group_ref_version": self.object_group_ref_version}


@dataclass
class FTRequest(ServiceContext):
    """FT::FTRequestServiceContext { string client_id; long retention_id;
    TimeBase::TimeT expiration_time; }"""
    context_id = 13
    client_id: str = ""
    retention_id: int = 0
    expiration_time: int = 0

    @classmethod
    def read_fields(cls, r):
        return {"client_id": r.read_string(), "retention_id": r.read_long(),
                "expiration_time": r.read_ulonglong()}

    def write_fields(self, w):
        w.write_string(self.client_id)
        w.write_long(self.retention_id)
        w.write_ulonglong(self.expiration_time)

    def fields_json(self):
        return {"client_id": self.client_id, "retention_id": self.retention_id,
                "expiration_time": self.expiration_time}


@dataclass
class ExceptionDetailMessage(ServiceContext):
    """A human-readable description of an exception: an encapsulated wstring."""
    context_id = 14
    message: str = ""

    @classmethod
    def read_fields(cls, r):
        return {"message": r.read_wstring()}

    def write_fields(self, w):
        w.write_wstring(self.message)

    def fields_json(self):
        return {"message": self.message}


@dataclass
class RMICustomMaxStreamFormatContext(ServiceContext):
    """Java to IDL: the RMI custom value stream format the client uses (one octet)."""
    context_id = 17
    max_stream_format_version: int = 1

    @classmethod
    def read_fields(cls, r):
        return {"max_stream_format_version": r.read_octet()}

    def write_fields(self, w):
        w.write_octet(self.max_stream_format_version)

    def fields_json(self):
        return {"max_stream_format_version": self.max_stream_format_version}


@dataclass
class SunORBVersionContext(ServiceContext):
    """The JDK-lineage ORBs' own context: their ORB version, one octet in an encapsulation
    (ORBVersionServiceContext and ORBVersionImpl in their source); the same octet ends their
    POA object keys (see pycdr.addressing.objectkey)."""
    context_id = 0x4E454F00
    orb_version: int = 0

    @classmethod
    def read_fields(cls, r):
        return {"orb_version": r.read_octet()}

    def write_fields(self, w):
        w.write_octet(self.orb_version)

    def fields_json(self):
        return {"orb_version": self.orb_version}


TYPED = {cls.context_id: cls for cls in (
    CodeSetsContext, BiDirIIOPContext, SendingContextRunTime, InvocationPolicies,
    UnknownExceptionInfo, RTCorbaPriority, FTGroupVersion, FTRequest, ExceptionDetailMessage,
    RMICustomMaxStreamFormatContext, SunORBVersionContext)}


def decode_context(context_id: int, data: bytes, offset: int, parent: CDRReader) -> ServiceContext:
    """A typed context if its id is known and its data decodes; otherwise (and,
    in lenient mode, when the data is malformed, with a warning) raw."""
    cls = TYPED.get(context_id)
    if cls is None:
        return RawServiceContext(id=context_id, data=data)
    # A wstring (ExceptionDetailMessage) needs a 1.1+ layout; 1.0 ORBs send 1.2's.
    version = (1, 2) if parent.version == (1, 0) else None

    def read(r):
        values = cls.read_fields(r)
        r.pos = values.pop("_consumed", r.pos)
        return cls(**values, little=r.little)
    context = decode_encapsulated(read, data, offset, parent,
                                  f"{context_name(context_id)} context", version)
    return RawServiceContext(id=context_id, data=data) if context is None else context


def read_service_contexts(r: CDRReader) -> list:
    n = r.read_count(8, "service context list")
    contexts = []
    for _ in range(n):
        context_id = r.read_ulong()
        start = r.pos
        data = r.read_octet_sequence()
        contexts.append(decode_context(context_id, data, start + 4, r))
    return contexts


def write_service_contexts(w: CDRWriter, contexts) -> None:
    w.write_ulong(len(contexts))
    for c in contexts:
        w.write_ulong(c.context_id)
        w.write_octet_sequence(c.encode_data(w.version))
