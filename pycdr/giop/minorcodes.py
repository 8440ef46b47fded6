"""What a system exception's minor code means, where the code's owner publishes it: the
OMG's standard minor codes (VMCID 0x4f4d0000, CORBA 3 part 1, "Standard Minor Exception
Codes"), omniORB's (VMCID 0x41540000, the table omniORB generates its minorCodes from), the
JDK-lineage ORBs' (VMCID 0x53550000, ORBUtilSystemException: the OpenJDK and GlassFish ORBs) and
JacORB's (VMCID 0x4a430000, org.jacorb.orb.MinorCodes: its security service's codes, the
same whatever the exception).  Described here in a few words each; a code not listed is
shown by number only.
"""

from __future__ import annotations

OMG = 0x4F4D0000
OMNIORB = 0x41540000
SUN = 0x53550000
JACORB = 0x4A430000

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
}


def meaning(name: str, minor: int) -> str | None:
    """What minor code ``minor`` of system exception ``name`` (e.g. "TRANSIENT") means,
    or None when its owner's table is not known here."""
    vmcid, code = minor & 0xFFFFF000, minor & 0xFFF
    return MEANINGS.get((name, vmcid, code)) or MEANINGS.get((None, vmcid, code))
