"""Which vendor a system exception's minor code belongs to, and what it means where the
code's owner publishes it: the one table of vendor minor codeset ids (VMCIDs) and codes.

The minor code's high 20 bits are the VMCID, the low 12 bits the vendor's code.  Known here:
the OMG's standard minor codes (VMCID 0x4f4d0000, CORBA 3 part 1, "Standard Minor Exception
Codes"); omniORB's (0x41540000, the table omniORB generates its minorCodes from); the
JDK-lineage ORBs' (0x53550000, ORBUtilSystemException: the OpenJDK and GlassFish ORBs);
JacORB's (0x4a430000, org.jacorb.orb.MinorCodes: its security service's codes, the same
whatever the exception); TAO's (0x54410000, tao/ORB_Constants.h: a code is a location in
5 bits and an errno in 7, named as TAO's own exception text names them); Orbix's (IONA's
0x49540000: the subsystem in the code's high 4 bits, as IONA's table of subsystem bases);
IBM's (0x4942x000, the sixteen VMCIDs under IBM's 0x4942 prefix: the few codes and the
ranges of its components IBM's WebSphere documentation gives); VisiBroker's (Borland's
0x56420000: the VMCID alone, no table of its codes is published).  Described here in a few
words each; a code of a known VMCID that is not listed is named by vendor and number.
"""

from __future__ import annotations

OMG = 0x4F4D0000
OMNIORB = 0x41540000
SUN = 0x53550000
JACORB = 0x4A430000
TAO = 0x54410000            # "TA": TAO::VMCID
ORBIX = 0x49540000          # "IT": IONA Technologies
VISIBROKER = 0x56420000     # "VB": Borland
IBM = 0x49420000            # "IB": IBM's prefix; its ORBs use the sixteen VMCIDs 0x4942x000
VMCID_MASK = 0xFFFFF000

# VMCID -> vendor, as minor codes are shown ("omniORB 2").
VENDORS = {
    OMG: "OMG",
    OMNIORB: "omniORB",
    TAO: "TAO",
    SUN: "Sun",
    JACORB: "JacORB",
    ORBIX: "Orbix",
    VISIBROKER: "VisiBroker",
    **{IBM | (n << 12): "IBM" for n in range(16)},
}

# (exception name, VMCID, code) -> meaning: the vendor's name for the code where it has one
# (omniORB's minorCodes, the OMG's names, the JDK ORBs' ORBUtilSystemException), and what
# it says in a few words.  (None, VMCID, code): a vendor-wide code, whatever the exception.
MEANINGS = {
    # OMG standard codes
    ("BAD_INV_ORDER", OMG, 4): "the ORB has shut down",
    ("BAD_PARAM", OMG, 7): "bad scheme name in an object URL",
    ("BAD_PARAM", OMG, 8): "bad address in an object URL",
    ("BAD_PARAM", OMG, 9): "bad scheme-specific part of an object URL",
    ("BAD_PARAM", OMG, 10): "other problem in an object URL",
    ("BAD_PARAM", OMG, 14): "invalid ObjectId",
    ("BAD_PARAM", OMG, 15): "invalid name",
    ("BAD_PARAM", OMG, 16): "invalid repository id",
    ("BAD_PARAM", OMG, 23): "WCharTCSNotKnown: wchar data but no wchar transmission code set "
                            "was negotiated",
    ("BAD_PARAM", OMG, 25): "EnumValueOutOfRange",
    ("BAD_PARAM", OMG, 26): "InvalidServiceContextId",
    ("DATA_CONVERSION", OMG, 1): "CannotMapChar: a character does not map to the negotiated "
                                 "transmission code set",
    ("IMP_LIMIT", OMG, 1): "NoUsableProfile: no profile of the reference is usable",
    ("INV_OBJREF", OMG, 1): "WCharNotSupported: the reference names no wchar code set",
    ("INV_OBJREF", OMG, 2): "CodesetComponentRequired: wchar data needs a code sets component "
                            "in the reference",
    ("MARSHAL", OMG, 1): "NoValueFactory: no value factory for a valuetype",
    ("MARSHAL", OMG, 3): "ServerRequestNVList: the DSI argument list does not describe the "
                         "parameters the client sent",
    ("MARSHAL", OMG, 4): "LocalObject: a local object cannot be marshalled",
    ("MARSHAL", OMG, 5): "WCharSentByGIOP10Client: wchar or wstring data sent by a client "
                         "over GIOP 1.0",
    ("MARSHAL", OMG, 6): "WCharSentByGIOP10Server: wchar or wstring data returned by a server "
                         "over GIOP 1.0",
    ("MARSHAL", OMG, 7): "unsupported RMI/IDL custom value type stream format",
    ("NO_IMPLEMENT", OMG, 1): "NoValueImpl: no local implementation of a valuetype",
    ("NO_IMPLEMENT", OMG, 2): "IncompatibleVersion: incompatible valuetype version",
    ("NO_IMPLEMENT", OMG, 3): "NoUsableProfile: no profile of the reference is usable",
    ("NO_IMPLEMENT", OMG, 4): "DIIOnLocalObject: DII on a local object",
    ("OBJECT_NOT_EXIST", OMG, 1): "NoMatch: no object of that key",
    ("OBJECT_NOT_EXIST", OMG, 2): "the servant manager could not incarnate the object",
    ("OBJ_ADAPTER", OMG, 1): "POAUnknownAdapter",
    ("OBJ_ADAPTER", OMG, 2): "NoServant",
    ("OBJ_ADAPTER", OMG, 3): "no default servant",
    ("OBJ_ADAPTER", OMG, 4): "no servant manager",
    ("TIMEOUT", OMG, 1): "no reply to the poller in time",
    ("TRANSIENT", OMG, 1): "POANoResource",
    ("TRANSIENT", OMG, 2): "NoUsableProfile",
    ("TRANSIENT", OMG, 3): "request cancelled",
    ("TRANSIENT", OMG, 4): "the POA was destroyed",
    ("UNKNOWN", OMG, 1): "UserException: an exception the operation does not declare",
    ("UNKNOWN", OMG, 2): "SystemException: a non-standard system exception",
    # omniORB's minorCodes
    ("BAD_INV_ORDER", OMNIORB, 24): "CodeSetNotKnownYet",
    ("BAD_OPERATION", OMNIORB, 38): "UnRecognisedOperationName",
    ("BAD_PARAM", OMNIORB, 27): "InvalidUnionDiscValue",
    ("BAD_PARAM", OMNIORB, 46): "WCharOutOfRange",
    ("BAD_PARAM", OMNIORB, 88): "WrongPythonType",
    ("BAD_PARAM", OMNIORB, 95): "PythonValueOutOfRange",
    ("COMM_FAILURE", OMNIORB, 3): "MarshalArguments",
    ("COMM_FAILURE", OMNIORB, 4): "UnMarshalArguments",
    ("COMM_FAILURE", OMNIORB, 5): "MarshalResults",
    ("COMM_FAILURE", OMNIORB, 6): "UnMarshalResults",
    ("COMM_FAILURE", OMNIORB, 7): "connection lost while waiting for the reply",
    ("DATA_CONVERSION", OMNIORB, 40): "RangeError",
    ("DATA_CONVERSION", OMNIORB, 41): "BadInput",
    ("INV_OBJREF", OMNIORB, 48): "invocation on a nil reference",
    ("INV_OBJREF", OMNIORB, 55): "interface mismatch",
    ("INV_OBJREF", OMNIORB, 130): "UnsuitableGIOPVersion",
    ("MARSHAL", OMNIORB, 9): "InvalidVariableLenComponentSize",
    ("MARSHAL", OMNIORB, 10): "PassEndOfMessage: read past the end of the message",
    ("MARSHAL", OMNIORB, 11): "message larger than the client's limit",
    ("MARSHAL", OMNIORB, 12): "message larger than the server's limit",
    ("MARSHAL", OMNIORB, 18): "SequenceIsTooLong",
    ("MARSHAL", OMNIORB, 19): "StringIsTooLong",
    ("MARSHAL", OMNIORB, 20): "WStringIsTooLong",
    ("MARSHAL", OMNIORB, 22): "StringNotEndWithNull: a string without its NUL",
    ("MARSHAL", OMNIORB, 26): "InvalidEnumValue",
    ("MARSHAL", OMNIORB, 42): "InvalidFixedValue",
    ("MARSHAL", OMNIORB, 47): "InvalidWCharSize",
    ("MARSHAL", OMNIORB, 52): "InvalidIOR",
    ("MARSHAL", OMNIORB, 69): "message larger than the limit",
    ("MARSHAL", OMNIORB, 90): "InvalidIndirection",
    ("MARSHAL", OMNIORB, 91): "InvalidTypeCodeKind",
    ("MARSHAL", OMNIORB, 93): "MessageTooLong",
    ("MARSHAL", OMNIORB, 111): "InvalidChunkedEncoding",
    ("MARSHAL", OMNIORB, 112): "InvalidValueTag",
    ("NO_IMPLEMENT", OMNIORB, 36): "Unsupported",
    ("OBJECT_NOT_EXIST", OMNIORB, 58): "the POA is not initialised",
    ("TIMEOUT", OMNIORB, 8): "call timed out on the client",
    ("TIMEOUT", OMNIORB, 124): "call timed out on the server",
    ("TRANSIENT", OMNIORB, 1): "failed on a forwarded reference",
    ("TRANSIENT", OMNIORB, 2): "connect failed",
    ("TRANSIENT", OMNIORB, 8): "call timed out",
    ("TRANSIENT", OMNIORB, 17): "connection closed",
    ("TRANSIENT", OMNIORB, 62): "object deactivated while the request was held",
    ("UNKNOWN", OMNIORB, 98): "PythonException: the servant raised a Python exception",
    # the JDK-lineage ORBs' (Sun's) codes
    ("BAD_OPERATION", SUN, 213): "fixedNotMatch",
    ("BAD_OPERATION", SUN, 214): "fixedBadTypecode",
    ("DATA_CONVERSION", SUN, 204): "codesetIncompatible",
    ("DATA_CONVERSION", SUN, 206): "badUnicodePair",
    ("DATA_CONVERSION", SUN, 208): "badCodesetsFromClient",
    ("DATA_CONVERSION", SUN, 209): "invalidSingleCharCtb",
    ("DATA_CONVERSION", SUN, 210): "badGiop11Ctb",
    ("MARSHAL", SUN, 201): "chunkOverflow",
    ("MARSHAL", SUN, 202): "unexpectedEof",
    ("MARSHAL", SUN, 204): "characterOutofrange",
    ("MARSHAL", SUN, 207): "endOfStream",
    ("MARSHAL", SUN, 208): "invalidObjectKey",
    ("MARSHAL", SUN, 212): "badKind",
    ("MARSHAL", SUN, 217): "wcharDataInGiop10",
    ("MARSHAL", SUN, 233): "badDigitInFixed",
    ("MARSHAL", SUN, 235): "badReservedLength",
    ("MARSHAL", SUN, 238): "unionDiscriminatorError",
    ("MARSHAL", SUN, 246): "invalidTypecodeKindMarshal",
    ("MARSHAL", SUN, 248): "illegalUnionDiscriminatorType",
    ("MARSHAL", SUN, 258): "badArgumentsNvlist: the arguments did not read into the DSI "
                           "argument list",
    ("NO_IMPLEMENT", SUN, 205): "longDoubleNotImplemented",
    # JacORB's own codes, whatever the exception (None)
    (None, JACORB, 1): "security service failure on the client side (CSS)",
    (None, JACORB, 2): "security service failure in the ATLAS authorization token",
    (None, JACORB, 3): "security service failure on the server side (TSS)",
    # IBM's C++ ORB (WebSphere Enterprise / Component Broker), whatever the exception
    (None, IBM, 0x32): "SOMDERROR_CouldNotLoadLibrary",
    (None, IBM, 0x33): "SOMDERROR_NoMemory",
    (None, IBM, 0x34): "SOMDERROR_NotImplemented",
    (None, IBM, 0x47): "SOMDERROR_CtxNoPropFound: no such context property",
}


# TAO: code = location << 7 | errno (ORB_Constants.h, "Minor Code Encoding"); whatever
# the exception.  Location (5 bits) -> where TAO raised it.
TAO_LOCATIONS = {
    0x01: "location forward failed",
    0x02: "sending the request failed",
    0x03: "POA discarding requests",
    0x04: "POA holding requests",
    0x05: "C++ exception not handled in the server",
    0x06: "receiving the reply failed",
    0x07: "no protocol could read the IOR",
    0x08: "building the profile list failed",
    0x09: "connect timed out",
    0x0A: "send timed out",
    0x0B: "receive timed out",
    0x0C: "implementation repository",
    0x0D: "opening an endpoint failed",
    0x0E: "ORB core initialisation failed",
    0x0F: "narrowing a policy failed",
    0x10: "acquiring a guard failed",
    0x11: "POA destroyed or being destroyed",
    0x12: "POA inactive",
    0x13: "connector registry initialisation failed",
    0x14: "sending an AMH reply failed",
    0x15: "RT-CORBA thread creation failed",
}
# errno (7 bits): TAO's own numbering (tao/SystemException.cpp), not the host's errno.
TAO_ERRNOS = {
    0x01: "ETIMEDOUT", 0x02: "ENFILE", 0x03: "EMFILE", 0x04: "EPIPE", 0x05: "ECONNREFUSED",
    0x06: "ENOENT", 0x07: "EBADF", 0x08: "ENOSYS", 0x09: "EPERM", 0x0A: "EAFNOSUPPORT",
    0x0B: "EAGAIN", 0x0C: "ENOMEM", 0x0D: "EACCES", 0x0E: "EFAULT", 0x0F: "EBUSY",
    0x10: "EEXIST", 0x11: "EINVAL", 0x12: "ECOMM", 0x13: "ECONNRESET", 0x14: "ENOTSUP",
}

# Orbix: the subsystem that raised it, in the code's high 4 bits (IONA's subsystem bases
# 0x49540100, 0x49540200, ...).
ORBIX_SUBSYSTEMS = {
    0x1: "core", 0x2: "GIOP", 0x3: "IIOP", 0x4: "IIOP profile", 0x5: "POA",
    0x6: "PSS/DB", 0x8: "PSS", 0x9: "OTS", 0xA: "OTS Lite",
}

# IBM: whole minor codes -> the component of IBM's products that owns the range (WebSphere's
# "CORBA minor codes" table), where no code of the range is named on its own.
IBM_RANGES = (
    (0x49421050, 0x4942105F, "ORB services"),
    (0x49421070, 0x4942107F, "ORB services"),
    (0x49421080, 0x4942108F, "naming service or workload management"),
    (0x49424300, 0x494243FF, "security"),
)


def meaning(name: str, minor: int) -> str | None:
    """What minor code ``minor`` of system exception ``name`` (e.g. "TRANSIENT") means,
    or None when its owner's table does not say."""
    vmcid, code = minor & VMCID_MASK, minor & 0xFFF
    known = MEANINGS.get((name, vmcid, code)) or MEANINGS.get((None, vmcid, code))
    if known is not None:
        return known
    if vmcid == TAO:
        return _tao_meaning(code)
    if vmcid == ORBIX and code >> 8 in ORBIX_SUBSYSTEMS:
        return f"{ORBIX_SUBSYSTEMS[code >> 8]} subsystem, its code {code & 0xFF}"
    for low, high, component in IBM_RANGES:
        if low <= minor <= high:
            return f"{component} (0x{low:08x}-0x{high:08x})"
    return None


def _tao_meaning(code: int) -> str:
    location, errno = code >> 7, code & 0x7F
    where = TAO_LOCATIONS.get(location) or f"location {location}"
    if errno == 0:
        return f"{where}, errno unspecified"
    return f"{where}, {TAO_ERRNOS.get(errno) or f'errno low bits {errno}'}"


def vendor(minor: int) -> str | None:
    """Whose VMCID the minor code carries, None when not one known here."""
    return VENDORS.get(minor & VMCID_MASK)


def minor_code_name(name: str | None, minor: int) -> str | None:
    """The minor code as its vendor's: ``OMG 2: NoMatch``, ``TAO 0x113: sending the request
    failed, ECONNRESET`` (TAO's and Orbix's codes are bit fields, shown in hex), or ``VisiBroker minor 5``
    for a code of a known VMCID that its vendor's table does not name; None for a VMCID not
    known here."""
    owner = vendor(minor)
    if owner is None:
        return None
    code = minor & 0xFFF
    number = f"0x{code:03x}" if owner in ("TAO", "Orbix") else str(code)
    said = meaning(name, minor) if name else None
    return f"{owner} {number}: {said}" if said else f"{owner} minor {number}"
