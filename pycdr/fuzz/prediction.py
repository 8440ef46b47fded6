"""Prediction: what a conforming server does with a case's bytes (how many
answers, whether it waits for more), and what an observation beyond that says
(``suspicion``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..giop.connection import GiopConnection, Role
from ..giop.events import NEED_DATA, Answer, ConnectionClosed, MessageReceived, ProtocolViolation
from ..giop.header import HEADER_SIZE, MsgType
from ..giop.messages import CloseConnection, LocateRequest, MessageError, Request
from ..conformance.wire import Observation

CLOSING_TYPES = (MsgType.CloseConnection, MsgType.MessageError)


# --------------------------------------------------------------------------
# Prediction: what a conforming server does with a case's bytes.
@dataclass
class Prediction:
    answers: int = 0           # messages the server sends back
    closes: bool = False       # it closes the connection
    partial: bool = False      # a message or fragment chain is left incomplete
    uncertain: bool = False    # a CancelRequest may or may not suppress a reply
    message_error: bool = False  # it answers a violation with MessageError
    # The bytes end inside a message, by the headers' own sizes: a server
    # may rightly wait for the rest instead of answering (a message cut
    # short, a size claiming more than was sent).
    may_wait: bool = False
    # The request ids of the answers due (Requests expecting a reply, LocateRequests),
    # in order: a pipelined batch's answers go back to their cases by them.
    request_ids: tuple = ()

    @property
    def wanted(self) -> int:
        """The answers to wait for: none where the server may rightly wait."""
        return 0 if self.may_wait else self.answers


def predict(messages) -> Prediction:
    p = Prediction()
    conn = GiopConnection(Role.SERVER, version=(1, 2))
    for data in messages:
        if p.closes:
            break
        conn.receive_data(data)
        while True:
            event = conn.next_event()
            if event is NEED_DATA:
                break
            if isinstance(event, MessageReceived):
                msg = event.message
                if isinstance(msg, Request):
                    if msg.response_flags != 0:
                        p.answers += 1
                        p.request_ids += (msg.request_id,)
                elif isinstance(msg, LocateRequest):
                    p.answers += 1
                    p.request_ids += (msg.request_id,)
                elif msg.msg_type == MsgType.CancelRequest:
                    p.uncertain = True
                elif isinstance(msg, CloseConnection):
                    p.closes = True
                    break
            elif isinstance(event, ProtocolViolation):
                p.answers += bool(event.reply)
                p.message_error = p.message_error or bool(event.reply)
                if event.answer in (Answer.SEND_MESSAGE_ERROR_AND_CLOSE, Answer.CLOSE):
                    p.closes = True
                    break
            elif isinstance(event, ConnectionClosed):
                p.closes = True
                break
    if not p.closes:
        p.partial = conn.has_partial_message
    p.may_wait = leaves_waiting(messages)
    return p


def leaves_waiting(messages) -> bool:
    """Whether the bytes end inside a message, by the GIOP headers' own
    message sizes (the server cannot tell the sizes lie before the rest
    comes)."""
    data = b"".join(messages)
    pos = 0
    while pos + HEADER_SIZE <= len(data):
        if data[pos:pos + 4] != b"GIOP":
            return False
        size = int.from_bytes(data[pos + 8:pos + 12], "little" if data[pos + 6] & 1 else "big")
        pos += HEADER_SIZE + size
    return pos != len(data)


def suspicion(obs: Observation, p: Prediction, messages, *,
              more_answers: bool = True) -> str | None:
    """What one connection's observation shows beyond what a conforming
    server does with ``messages``: None, or unreachable, flood,
    more_answers (when ``more_answers``), reset, closed or no_answer."""
    if obs.connect_error:
        return "unreachable"
    if obs.flooded:
        return "flood"
    if more_answers and len(obs.messages) > p.answers:
        return "more_answers"
    got_error = any(isinstance(e.message, (MessageError, CloseConnection))
                    for e in obs.messages)
    if obs.closed and not got_error and not p.closes and not sends_closing_message(messages):
        return "reset" if obs.reset else "closed"
    if obs.timed_out:
        return "no_answer"
    return None


def framing(p: Prediction, messages) -> tuple[bool, bool]:
    """Whether a case (its ``messages``, predicted ``p``) can go in a
    pipelined batch (every message whole, no fragment chain left open, no
    close expected), and whether it can end one (a *tail*: it leaves the
    connection waiting for bytes; one that closes it cannot, the server may
    drop the replies to the batch's requests still in progress)."""
    closing = p.closes or p.uncertain or sends_closing_message(messages)
    return not (closing or p.partial), p.partial and not closing


def sends_closing_message(messages) -> bool:
    """Whether the case itself sends CloseConnection or MessageError (after
    which the server may close without further ado)."""
    return any(len(m) >= 8 and m[7] in CLOSING_TYPES for m in messages)
