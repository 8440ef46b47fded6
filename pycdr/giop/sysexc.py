"""CORBA system exceptions: repository ids, minor codes, completion status.

On the wire (a Reply or LocateReply with status SYSTEM_EXCEPTION) a system
exception is ``struct { string exception_id; ulong minor_code_value;
ulong completion_status; }``.  The minor code's high 20 bits are the vendor
minor codeset id (VMCID); the low 12 bits are the vendor's own code.  The OMG's
VMCID is 0x4f4d0000 ("OM").
"""

from __future__ import annotations

import enum

from ..codec.cdr import CDRReader, CDRWriter
from ..errors import InvalidValueError
from .minorcodes import OMG as OMG_VMCID, OMNIORB as OMNIORB_VMCID, SUN as SUN_VMCID
from .minorcodes import VENDORS as VENDOR_VMCIDS, VMCID_MASK
from .minorcodes import meaning as minor_meaning


REPO_PREFIX = "IDL:omg.org/CORBA/"
REPO_SUFFIX = ":1.0"


class CompletionStatus(enum.IntEnum):
    COMPLETED_YES = 0
    COMPLETED_NO = 1
    COMPLETED_MAYBE = 2


class SystemException(Exception):
    """Base of the CORBA system exceptions.  An exception id that is not one of
    the standard ones decodes to this class with ``repo_id`` set."""

    repo_id = ""
    # True when this side raised it before sending anything (e.g. an argument that cannot
    # be marshalled); False for one that came in a reply.  Not part of equality.
    raised_locally = False
    # True for one a peer sent in a Reply (a TRANSIENT answered is the server's word, not a
    # connection that failed).  Not part of equality.
    from_reply = False

    def __init__(self, minor: int = 0, completed: int = CompletionStatus.COMPLETED_NO,
                 repo_id: str | None = None):
        super().__init__(minor, completed)
        self.minor = minor
        self.completed = completed if completed not in CompletionStatus._value2member_map_ \
            else CompletionStatus(completed)
        if repo_id is not None:
            self.repo_id = repo_id

    @property
    def name(self) -> str:
        rid = self.repo_id
        if rid.startswith(REPO_PREFIX) and rid.endswith(REPO_SUFFIX):
            return rid[len(REPO_PREFIX):-len(REPO_SUFFIX)]
        return rid

    @property
    def vmcid(self) -> int:
        return self.minor & VMCID_MASK

    @property
    def minor_code(self) -> int:
        """The vendor's code: the low 12 bits of the minor code."""
        return self.minor & ~VMCID_MASK & 0xFFFFFFFF

    @property
    def vendor(self) -> str | None:
        return VENDOR_VMCIDS.get(self.vmcid)

    @property
    def minor_name(self) -> str | None:
        """The vendor's name for the minor code (pycdr.giop.minorcodes), None when not
        known."""
        return minor_meaning(self.name, self.minor)

    def __eq__(self, other):
        if not isinstance(other, SystemException):
            return NotImplemented
        return (self.repo_id, self.minor, int(self.completed)) == \
            (other.repo_id, other.minor, int(other.completed))

    __hash__ = Exception.__hash__

    def __repr__(self):
        return f"{self.name}(minor=0x{self.minor:08x}, completed={_status_name(self.completed)})"

    def __str__(self):
        vendor = self.vendor or f"VMCID 0x{self.vmcid:08x}"
        meaning = self.minor_meaning
        return f"CORBA::{self.name} minor {vendor}:{self.minor_code} " \
               f"(0x{self.minor:08x}{': ' + meaning if meaning else ''}), " \
               f"{_status_name(self.completed)}"

    @property
    def minor_meaning(self) -> str | None:
        """What the minor code means, where its vendor's table is known (minorcodes)."""
        return minor_meaning(self.name, self.minor)

    def to_json(self) -> dict:
        return {"exception_id": self.repo_id, "name": self.name, "minor": self.minor,
                "vmcid": self.vmcid, "vendor": self.vendor, "minor_code": self.minor_code,
                "minor_meaning": self.minor_meaning,
                "completed": _status_name(self.completed)}


def _status_name(c) -> str:
    return c.name if isinstance(c, CompletionStatus) else f"invalid({c})"


# The standard system exceptions (CORBA 3.x Part 1, 10.12 / Part 2 8.x).
class UNKNOWN(SystemException): pass                   # noqa: E701
class BAD_PARAM(SystemException): pass                 # noqa: E701
class NO_MEMORY(SystemException): pass                 # noqa: E701
class IMP_LIMIT(SystemException): pass                 # noqa: E701
class COMM_FAILURE(SystemException): pass              # noqa: E701
class INV_OBJREF(SystemException): pass                # noqa: E701
class NO_PERMISSION(SystemException): pass             # noqa: E701
class INTERNAL(SystemException): pass                  # noqa: E701
class MARSHAL(SystemException): pass                   # noqa: E701
class INITIALIZE(SystemException): pass                # noqa: E701
class NO_IMPLEMENT(SystemException): pass              # noqa: E701
class BAD_TYPECODE(SystemException): pass              # noqa: E701
class BAD_OPERATION(SystemException): pass             # noqa: E701
class NO_RESOURCES(SystemException): pass              # noqa: E701
class NO_RESPONSE(SystemException): pass               # noqa: E701
class PERSIST_STORE(SystemException): pass             # noqa: E701
class BAD_INV_ORDER(SystemException): pass             # noqa: E701
class TRANSIENT(SystemException): pass                 # noqa: E701
class FREE_MEM(SystemException): pass                  # noqa: E701
class INV_IDENT(SystemException): pass                 # noqa: E701
class INV_FLAG(SystemException): pass                  # noqa: E701
class INTF_REPOS(SystemException): pass                # noqa: E701
class BAD_CONTEXT(SystemException): pass               # noqa: E701
class OBJ_ADAPTER(SystemException): pass               # noqa: E701
class DATA_CONVERSION(SystemException): pass           # noqa: E701
class OBJECT_NOT_EXIST(SystemException): pass          # noqa: E701
class TRANSACTION_REQUIRED(SystemException): pass      # noqa: E701
class TRANSACTION_ROLLEDBACK(SystemException): pass    # noqa: E701
class INVALID_TRANSACTION(SystemException): pass       # noqa: E701
class INV_POLICY(SystemException): pass                # noqa: E701
class CODESET_INCOMPATIBLE(SystemException): pass      # noqa: E701
class REBIND(SystemException): pass                    # noqa: E701
class TIMEOUT(SystemException): pass                   # noqa: E701
class TRANSACTION_UNAVAILABLE(SystemException): pass   # noqa: E701
class TRANSACTION_MODE(SystemException): pass          # noqa: E701
class BAD_QOS(SystemException): pass                   # noqa: E701
class INVALID_ACTIVITY(SystemException): pass          # noqa: E701
class ACTIVITY_COMPLETED(SystemException): pass        # noqa: E701
class ACTIVITY_REQUIRED(SystemException): pass         # noqa: E701


STANDARD_EXCEPTIONS: dict[str, type] = {}
for _cls in SystemException.__subclasses__():
    _cls.repo_id = f"{REPO_PREFIX}{_cls.__name__}{REPO_SUFFIX}"
    STANDARD_EXCEPTIONS[_cls.repo_id] = _cls
del _cls


def system_exception(repo_id: str, minor: int, completed: int) -> SystemException:
    """The exception object for a wire triple (a base-class instance keeps an
    unknown repository id)."""
    cls = STANDARD_EXCEPTIONS.get(repo_id)
    if cls is None:
        return SystemException(minor, completed, repo_id=repo_id)
    return cls(minor, completed)


def read_system_exception(r: CDRReader) -> SystemException:
    repo_id = r.read_string()
    minor = r.read_ulong()
    pos = r.pos
    completed = r.read_ulong()
    if completed > 2:
        r.violation(InvalidValueError, "bad-completion-status",
                    f"completion_status {completed} is not 0, 1 or 2", pos)
    return system_exception(repo_id, minor, completed)


def write_system_exception(w: CDRWriter, exc: SystemException) -> None:
    w.write_string(exc.repo_id)
    w.write_ulong(exc.minor)
    w.write_ulong(int(exc.completed))
