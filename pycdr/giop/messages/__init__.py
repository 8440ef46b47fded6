"""The eight GIOP messages in their 1.0, 1.1 and 1.2 layouts (1.3 = 1.2).

``decode_message(data)`` turns the bytes of one complete message into a
message object and a list of warnings; ``encode_message(msg)`` does the
reverse.  Everything is read with :class:`pycdr.codec.cdr.CDRReader` with the
alignment origin at the first header byte.  Operation arguments and reply
results stay raw (``body``, starting at ``body_offset`` in the message) for
``pycdr.codec.marshal.read_value`` to decode: ``msg.body_reader()`` gives a reader
positioned and aligned correctly.

Layout rules that real ORBs disagree about, and what is done here:

* GIOP 1.2 Request and Reply bodies start 8-aligned, but only when there is a
  body: the encoder never pads an empty body; the decoder aligns only if bytes
  remain after the header (omniORB, JacORB, TAO and Wireshark behave so).
* The GIOP 1.2 LocateReply body is not aligned (OMG urgent-issue resolution
  followed by TAO and omniORB); Wireshark pads it.  The encoder writes it
  unpadded, the decoder accepts both and in lenient mode notes which it saw.

Decoded messages remember where each header field was (``offsets``), the
alignment gaps (``padding``) and the decoder's ``warnings``; ``to_json()``
includes them (``pycdr decode --json`` and the dissector's expected decodings).

The modules, by job: :mod:`.model` (the message types and their JSON form),
:mod:`.decoding` (the detailed and lean decoders), :mod:`.fast12` (the hot
path of the common GIOP 1.2/1.3 Request and Reply, in Python and C),
:mod:`.encoding` (encoding and fragmenting).
"""

from .decoding import (decode_cancel_request, decode_fragment, decode_locate_reply,
                       decode_locate_request, decode_message, decode_no_body,
                       decode_reply_header, decode_request_header, split_messages)
from .encoding import (encode_cancel_request, encode_fragment, encode_fragments,
                       encode_locate_reply, encode_locate_request, encode_message,
                       encode_no_body, encode_reply, encode_request, fragment_message,
                       MessageTemplate)
from .model import (MESSAGE_CLASSES, RESPONSE_FLAG_NAMES, AddressingDisposition,
                    CancelRequest, CloseConnection, Fragment, KeyAddr, LocateReply,
                    LocateRequest, LocateStatus, Message, MessageError, ProfileAddr,
                    ReferenceAddr, Reply, ReplyStatus, Request)

__all__ = [
    "AddressingDisposition", "CancelRequest", "CloseConnection", "Fragment", "KeyAddr",
    "LocateReply", "LocateRequest", "LocateStatus", "MESSAGE_CLASSES", "Message",
    "MessageError", "ProfileAddr", "RESPONSE_FLAG_NAMES", "ReferenceAddr", "Reply",
    "ReplyStatus", "Request",
    "decode_message", "split_messages", "decode_request_header", "decode_reply_header",
    "decode_cancel_request", "decode_locate_request", "decode_locate_reply",
    "decode_no_body", "decode_fragment",
    "encode_message", "encode_fragments", "fragment_message", "encode_request",
    "encode_reply", "encode_cancel_request", "encode_locate_request", "encode_locate_reply",
    "encode_no_body", "encode_fragment",
]
