"""What a system exception's minor code means, where the code's owner publishes it: the
OMG's standard minor codes (VMCID 0x4f4d0000, CORBA 3 part 1, "Standard Minor Exception
Codes"), omniORB's (VMCID 0x41540000, the table omniORB generates its minorCodes from) and
JacORB's (VMCID 0x4a430000, org.jacorb.orb.MinorCodes: its security service's codes, the
same whatever the exception).  Described here in a few words each; a code not listed is
shown by number only.
"""

from __future__ import annotations

OMG = 0x4F4D0000
OMNIORB = 0x41540000
JACORB = 0x4A430000

# (exception name, VMCID, code) -> meaning.
MEANINGS = {
    # OMG standard codes
    ("UNKNOWN", OMG, 1): "a user exception not in the operation's raises clause",
    ("UNKNOWN", OMG, 2): "a system exception the ORB does not know",
    ("BAD_PARAM", OMG, 7): "bad scheme name in an object URL",
    ("BAD_PARAM", OMG, 8): "bad address in an object URL",
    ("BAD_PARAM", OMG, 9): "bad scheme-specific part of an object URL",
    ("BAD_PARAM", OMG, 10): "other problem in an object URL",
    ("BAD_PARAM", OMG, 14): "invalid ObjectId",
    ("BAD_PARAM", OMG, 15): "invalid name",
    ("BAD_PARAM", OMG, 16): "invalid repository id",
    ("BAD_PARAM", OMG, 23): "wchar code set not known (no code set negotiated)",
    ("BAD_PARAM", OMG, 25): "enum value out of range",
    ("IMP_LIMIT", OMG, 1): "no usable profile in the IOR",
    ("INV_OBJREF", OMG, 1): "wchar sent but the IOR offers no wchar code set",
    ("INV_OBJREF", OMG, 2): "the IOR lacks the code sets component it needs",
    ("MARSHAL", OMG, 1): "no value factory for a valuetype",
    ("MARSHAL", OMG, 4): "a local object cannot be marshalled",
    ("MARSHAL", OMG, 5): "wchar or wstring sent by a GIOP 1.0 client",
    ("MARSHAL", OMG, 6): "wchar or wstring sent by a GIOP 1.0 server",
    ("NO_IMPLEMENT", OMG, 1): "no implementation of a valuetype",
    ("NO_IMPLEMENT", OMG, 2): "incompatible version",
    ("NO_IMPLEMENT", OMG, 3): "no usable profile in the IOR",
    ("BAD_INV_ORDER", OMG, 4): "the ORB has shut down",
    ("TRANSIENT", OMG, 1): "the POA has no resources for the request",
    ("TRANSIENT", OMG, 2): "no usable profile in the IOR",
    ("TRANSIENT", OMG, 3): "request cancelled",
    ("TRANSIENT", OMG, 4): "the POA was destroyed",
    ("OBJ_ADAPTER", OMG, 1): "unknown object adapter (POA)",
    ("OBJ_ADAPTER", OMG, 2): "no servant",
    ("OBJ_ADAPTER", OMG, 3): "no default servant",
    ("OBJ_ADAPTER", OMG, 4): "no servant manager",
    ("DATA_CONVERSION", OMG, 1): "a character the code set cannot carry",
    ("OBJECT_NOT_EXIST", OMG, 1): "no object with this key (nothing activated under it)",
    ("OBJECT_NOT_EXIST", OMG, 2): "the servant manager could not incarnate the object",
    ("TIMEOUT", OMG, 1): "no reply to the poller in time",
    # omniORB's own codes
    ("TRANSIENT", OMNIORB, 1): "failed on a forwarded reference",
    ("TRANSIENT", OMNIORB, 2): "connect failed",
    ("TRANSIENT", OMNIORB, 8): "call timed out",
    ("TRANSIENT", OMNIORB, 17): "connection closed",
    ("TRANSIENT", OMNIORB, 62): "object deactivated while the request was held",
    ("COMM_FAILURE", OMNIORB, 3): "marshalling the arguments failed",
    ("COMM_FAILURE", OMNIORB, 4): "unmarshalling the arguments failed",
    ("COMM_FAILURE", OMNIORB, 5): "marshalling the results failed",
    ("COMM_FAILURE", OMNIORB, 6): "unmarshalling the results failed",
    ("COMM_FAILURE", OMNIORB, 7): "connection lost while waiting for the reply",
    ("MARSHAL", OMNIORB, 10): "read past the end of the message",
    ("MARSHAL", OMNIORB, 11): "message larger than the client's limit",
    ("MARSHAL", OMNIORB, 12): "message larger than the server's limit",
    ("MARSHAL", OMNIORB, 18): "sequence too long",
    ("MARSHAL", OMNIORB, 19): "string too long",
    ("MARSHAL", OMNIORB, 22): "string not terminated by a nul",
    ("MARSHAL", OMNIORB, 26): "invalid enum value",
    ("MARSHAL", OMNIORB, 52): "invalid IOR",
    ("MARSHAL", OMNIORB, 69): "message larger than the limit",
    ("MARSHAL", OMNIORB, 93): "message too long",
    ("INV_OBJREF", OMNIORB, 48): "invocation on a nil reference",
    ("INV_OBJREF", OMNIORB, 55): "interface mismatch",
    ("BAD_OPERATION", OMNIORB, 38): "operation name not recognised",
    ("BAD_INV_ORDER", OMNIORB, 24): "code set not known yet",
    ("OBJECT_NOT_EXIST", OMNIORB, 58): "the POA is not initialised",
    ("TIMEOUT", OMNIORB, 8): "call timed out on the client",
    ("TIMEOUT", OMNIORB, 124): "call timed out on the server",
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
