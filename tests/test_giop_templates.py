"""MessageTemplate (the ORB's per-call Request and Reply encoding) gives the bytes the
general encoder gives, in every GIOP version and both byte orders, and the connection
keeps its books for a templated message as for any other."""

import itertools

import pytest

from pycdr.errors import EncodeError, LocalProtocolError
from pycdr.giop.connection import GiopConnection, Role
from pycdr.giop.messages import (KeyAddr, MessageTemplate, Reply, ReplyStatus, Request,
                                 decode_message, encode_message)
from pycdr.giop.service_contexts import CodeSetsContext

VERSIONS = ((1, 0), (1, 1), (1, 2), (1, 3))


def write_arguments(w):
    # an octet, then a double: the double's padding depends on where the body starts
    w.write_octet(7)
    w.write_double(2.5)
    w.write_string("abc")


def no_arguments(w):
    pass


def requests():
    for version, little, key, operation, flags, contexts in itertools.product(
            VERSIONS, (False, True), (b"", b"k", b"key", b"TTCP_key"),
            ("x", "abc", "test_short"), (0, 3),
            ((), (CodeSetsContext(char_data=0x05010001, wchar_data=0x00010109),))):
        yield Request(version=version, little=little, response_flags=flags,
                      target=KeyAddr(key), operation=operation,
                      service_contexts=list(contexts))


def replies():
    for version, little, contexts in itertools.product(
            VERSIONS, (False, True),
            ((), (CodeSetsContext(char_data=0x05010001, wchar_data=0x00010109),))):
        yield Reply(version=version, little=little, reply_status=ReplyStatus.NO_EXCEPTION,
                    service_contexts=list(contexts))


@pytest.mark.parametrize("body", [write_arguments, no_arguments])
@pytest.mark.parametrize("request_id", [0, 1, 0x01020304, 0xFFFFFFFF])
def test_a_template_encodes_what_the_general_encoder_does(body, request_id):
    for msg in itertools.chain(requests(), replies()):
        template = MessageTemplate(msg)
        msg.request_id = request_id
        expected = encode_message(msg, write_body=body)
        got = template.encode(request_id, body)
        assert bytes(got) == expected, msg
        decoded, _ = decode_message(bytes(got))
        assert decoded.request_id == request_id


def test_a_template_refuses_a_request_id_out_of_range():
    template = MessageTemplate(Request(version=(1, 2), target=KeyAddr(b"k"), operation="x"))
    with pytest.raises(EncodeError):
        template.encode(1 << 32, no_arguments)
    with pytest.raises(EncodeError):
        MessageTemplate(Request(version=(1, 2), target=KeyAddr(b"k"), operation="x",
                                more_fragments=True))


def test_the_books_keep_templated_requests_and_replies():
    client = GiopConnection(Role.CLIENT)
    server = GiopConnection(Role.SERVER)
    request = client.template(Request(version=(1, 2), response_flags=3,
                                      target=KeyAddr(b"k"), operation="op"))
    data = client.send_templated(request, 5, write_arguments)
    assert client.outstanding == {5}
    with pytest.raises(LocalProtocolError):
        client.send_templated(request, 5, write_arguments)      # already outstanding
    server.receive_data(bytes(data))
    assert server.next_event().message.request_id == 5
    reply = server.template(Reply(version=(1, 2), reply_status=ReplyStatus.NO_EXCEPTION))
    with pytest.raises(LocalProtocolError):
        server.send_templated(reply, 6, no_arguments)            # no request 6
    answer = server.send_templated(reply, 5, write_arguments)
    assert server.outstanding == set()
    client.receive_data(bytes(answer))
    assert client.next_event().message.request_id == 5
    assert client.outstanding == set()
    with pytest.raises(LocalProtocolError):
        server.template(Request(version=(1, 2), target=KeyAddr(b"k"), operation="op"))


def test_a_templated_message_over_the_fragment_size_is_sent_in_fragments():
    client = GiopConnection(Role.CLIENT)
    request = client.template(Request(version=(1, 2), response_flags=3,
                                      target=KeyAddr(b"k"), operation="op"))

    def big(w):
        w.write_octet_sequence(bytes(range(256)) * 8)
    data = client.send_templated(request, 1, big, fragment_size=512)
    general = GiopConnection(Role.CLIENT).send(
        Request(version=(1, 2), request_id=1, response_flags=3, target=KeyAddr(b"k"),
                operation="op"), write_body=big, fragment_size=512)
    assert data == general and len(data) > 2048
