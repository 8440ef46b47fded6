"""Running cases against an endpoint: send, observe (bounded), classify the
outcome, judge it against the spec, and check the endpoint is still alive
after every case that could hurt it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from pycdr.errors import PycdrError
from pycdr.giop.messages import (LocateReply, LocateStatus, MessageError, Reply, ReplyStatus,
                                 CloseConnection)
from pycdr.giop.sysexc import CompletionStatus
from pycdr.codec.marshal import read_value
from pycdr.codec import tc

from .cases import Case
from .rendering import RenderContext, render_case
from .target import Target, locate
from .wire import Observation

PASS = "pass"
FAIL = "fail"
TOLERATED = "tolerated"
NOT_RUN = "not run"


@dataclass
class Outcome:
    """What the endpoint did, classified: kind is reply, user_exception,
    system_exception, location_forward, needs_addressing_mode, locate_reply,
    message_error, close_connection, closed, silent, flood, garbage or
    unexpected; details hold what matters about it."""
    kind: str
    details: dict = field(default_factory=dict)

    def __str__(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self.details.items()
                          if k not in ("version_le_target",))
        return f"{self.kind}({inner})" if inner else self.kind


@dataclass
class Result:
    case: Case
    verdict: str
    outcome: Outcome | None
    reason: str = ""
    reason_code: str = ""                          # a TOLERANCE_CODES key when tolerated
    sent: list = field(default_factory=list)       # the byte strings sent
    received: bytes = b""
    elapsed: float = 0.0
    alive: bool | None = None                      # liveness after a risky case

    def conversations(self) -> list:
        """Each TCP connection as (from_client, bytes) chunks in order (pcap export)."""
        return [[(True, b) for b in self.sent] + ([(False, self.received)] if self.received
                                                   else [])]

    def to_json(self) -> dict:
        c = self.case
        return {"id": c.id, "title": c.title, "spec": c.spec, "group": c.group,
                "version": f"{c.version[0]}.{c.version[1]}", "little_endian": c.little,
                "verdict": self.verdict, "outcome": str(self.outcome) if self.outcome else None,
                "outcome_kind": self.outcome.kind if self.outcome else None,
                "reason": self.reason, "reason_code": self.reason_code or None,
                "alive_after": self.alive,
                "expected": [str(e) for e in c.expect],
                "tolerated": [{"outcome": str(t.expect), "reason_code": t.code,
                               "reason": t.reason} for t in c.tolerate],
                "rationale": c.rationale or None,
                "sent": [b.hex() for b in self.sent], "received": self.received.hex(),
                "elapsed": round(self.elapsed, 4)}


# --------------------------------------------------------------------------
def classify(obs: Observation, case: Case, target: Target) -> Outcome:
    if obs.connect_error:
        return Outcome("unreachable", {"error": obs.connect_error})
    if obs.flooded:
        return Outcome("flood", {"bytes": obs.total_received, "messages": len(obs.messages)})
    if not obs.messages:
        if obs.violations or (obs.total_received and not obs.closed):
            return Outcome("garbage", {"bytes": obs.received[:64].hex(),
                                       "error": str(obs.violations[0]) if obs.violations else ""})
        if obs.closed:
            return Outcome("closed", {"reset": obs.reset})
        return Outcome("silent")
    event = obs.messages[0]
    msg = event.message
    details = {"then_closed": obs.closed,
               "version": f"{msg.version[0]}.{msg.version[1]}",
               "fragments": event.fragments,
               "version_le_target": msg.version <= max(target.version, (1, 2)),
               "little_endian": msg.little}
    if isinstance(msg, Reply):
        status = msg.reply_status
        if status == ReplyStatus.NO_EXCEPTION:
            return Outcome("reply", details)
        if status == ReplyStatus.SYSTEM_EXCEPTION and msg.system_exception is not None:
            e = msg.system_exception
            details.update(name=e.name, minor=e.minor, completed=_completion(e))
            return Outcome("system_exception", details)
        if status == ReplyStatus.USER_EXCEPTION:
            details["id"] = msg.exception_id
            return Outcome("user_exception", details)
        if status in (ReplyStatus.LOCATION_FORWARD, ReplyStatus.LOCATION_FORWARD_PERM):
            return Outcome("location_forward", details)
        if status == ReplyStatus.NEEDS_ADDRESSING_MODE:
            return Outcome("needs_addressing_mode", details)
        details["status"] = status
        return Outcome("unexpected", details)
    if isinstance(msg, LocateReply):
        status = msg.locate_status
        details["status"] = LocateStatus(status).name \
            if status in LocateStatus._value2member_map_ else f"invalid({status})"
        details["body_padding"] = msg.body_padding
        return Outcome("locate_reply", details)
    if isinstance(msg, MessageError):
        return Outcome("message_error", details)
    if isinstance(msg, CloseConnection):
        return Outcome("close_connection", details)
    details["type"] = msg.type_name
    return Outcome("unexpected", details)


def _completion(e) -> str:
    c = e.completed
    return c.name if isinstance(c, CompletionStatus) else f"invalid({c})"


# --------------------------------------------------------------------------
# Result checks: properties of an answer beyond its kind.
def _reply_value(event, result_tc):
    msg = event.message
    return read_value(msg.body_reader(), result_tc)


def apply_check(case: Case, obs: Observation, outcome: Outcome, ctx: RenderContext) -> None:
    """Add details the case's check computes (``boolean``, ``echo_ok``, ...)."""
    check = case.check
    if not check or outcome.kind not in ("reply", "locate_reply"):
        return
    try:
        if check in ("boolean_true", "boolean_false"):
            want = check == "boolean_true"
            values = [_reply_value(e, tc.boolean) for e in obs.messages
                      if isinstance(e.message, Reply)]
            outcome.details["boolean"] = values[0] if len(values) == 1 else values
            if any(v is not want for v in values):
                outcome.kind = "wrong_result"
                outcome.details["expected"] = want
        elif check == "locate_reply_unpadded":
            msg = obs.messages[0].message
            outcome.details["message_size"] = msg.message_size
            if msg.version >= (1, 2) and msg.body_padding:
                outcome.kind = "wrong_layout"
        elif check == "echo":
            body = case.send[0].body
            op = ctx.echo.operation(body[1])
            expected = body[2][0]
            got = _reply_value(obs.messages[0], op.result)
            ok = got == expected
            outcome.details["echo_ok"] = ok
            if not ok:
                outcome.details["got"] = repr(got)[:200]
    except PycdrError as e:
        outcome.kind = "undecodable_reply"
        outcome.details["error"] = str(e)


# --------------------------------------------------------------------------
def judge(case: Case, outcome: Outcome) -> tuple[str, str, str]:
    """(verdict, reason, tolerance code: "" unless tolerated)."""
    if outcome.details.get("version_le_target") is False and outcome.kind != "message_error":
        return FAIL, f"answered in GIOP {outcome.details.get('version')}, above the request's", ""
    return judge_expectations(case, outcome)


def judge_expectations(case, outcome: Outcome) -> tuple[str, str, str]:
    """The verdict from a case's allowed and tolerated outcomes alone (server and client
    cases alike)."""
    for e in case.expect:
        if e.matches(outcome):
            return PASS, "", ""
    for t in case.tolerate:
        if t.expect.matches(outcome):
            return TOLERATED, t.reason, t.code
    return FAIL, f"expected {' or '.join(str(e) for e in case.expect)}", ""


def verdict_counts(results) -> dict:
    """{verdict: number of results}."""
    out: dict = {}
    for r in results:
        out[r.verdict] = out.get(r.verdict, 0) + 1
    return out


def _chunks(delivery: str, data: bytes, split: int):
    if delivery == "bytewise":
        return [1] * len(data)
    if delivery == "split-every-offset":
        return [split, len(data) - split]
    return None


class Runner:
    """Runs cases against one target, one fresh connection each."""

    def __init__(self, target: Target, *, echo_module=None, echo_interface=None,
                 wide_chars: bool = True, liveness: bool = True, progress=None):
        self.target = target
        self.ctx = RenderContext(target, echo_interface)
        self.echo_module = echo_module
        self.wide_chars = wide_chars
        self.liveness = liveness
        self.progress = progress
        self.dead = False

    def applicable(self, case: Case) -> str:
        """"" if the case can run here, else why not."""
        if case.needs.startswith("echo") and self.ctx.echo is None:
            return "the endpoint does not serve the conformance Echo interface"
        if case.needs == "echo-wide" and not self.wide_chars:
            return "wide characters are not sent to this endpoint (it is known to abort)"
        if case.version > self.target.version and case.group != "version":
            v = self.target.version
            return f"the endpoint advertises GIOP {v[0]}.{v[1]} (version cases cover what " \
                   "it does above that)"
        return ""

    def run(self, case: Case) -> Result:
        why = self.applicable(case)
        if why:
            return Result(case, NOT_RUN, None, why)
        if self.dead:
            return Result(case, NOT_RUN, None, "the endpoint died in an earlier case")
        try:
            messages = render_case(case, self.ctx)
        except PycdrError as e:  # pragma: no cover - a catalog bug
            return Result(case, FAIL, None, f"could not render the case: {e}")
        if case.delivery == "split-every-offset":
            result = self._run_split(case, messages)
        else:
            result = self._run_once(case, messages)
        if case.risky and self.liveness:
            result.alive = self.is_alive()
            if not result.alive:
                self.dead = True
                result.verdict = FAIL
                result.reason = "THE ENDPOINT DIED: no answer to a LocateRequest on a fresh " \
                                "connection after this case" + \
                                (f" ({result.reason})" if result.reason else "")
        if self.progress:
            self.progress(result)
        return result

    def _run_once(self, case: Case, messages: list[bytes], split: int = 0) -> Result:
        start = time.monotonic()
        obs = Observation()
        try:
            with self.target.wire() as wire:
                for data in messages:
                    chunks = _chunks(case.delivery, data, split)
                    delay = 0.002 if case.delivery == "bytewise" else 0.0
                    if case.delivery == "split-every-offset":
                        delay = 0.001
                    if not wire.send(data, chunks, delay):
                        break
                wire.observe(obs, want=case.want, timeout=case.timeout, linger=case.linger,
                             sent=sum(len(m) for m in messages))
        except OSError as e:
            obs.connect_error = str(e)
        outcome = classify(obs, case, self.target)
        apply_check(case, obs, outcome, self.ctx)
        verdict, reason, code = judge(case, outcome)
        return Result(case, verdict, outcome, reason, reason_code=code, sent=messages,
                      received=obs.received[:4096], elapsed=time.monotonic() - start)

    def _run_split(self, case: Case, messages: list[bytes]) -> Result:
        """The message split into two TCP segments at every offset, one fresh
        connection and request id per offset; the first offset that does not
        pass is the result."""
        start = time.monotonic()
        total = sum(len(m) for m in messages)
        worst = None
        for split in range(1, total):
            copies = render_case(case, self.ctx)
            data = b"".join(copies)
            result = self._run_once(case, [data], split)
            if result.verdict != PASS:
                result.reason = f"split at offset {split}: {result.reason or result.outcome}"
                worst = result
                break
        if worst is None:
            worst = result
        worst.elapsed = time.monotonic() - start
        return worst

    def is_alive(self) -> bool:
        return locate(self.target.host, self.target.port, self.target.object_key,
                      timeout=3.0, tls=self.target.tls) is not None


def run_suite(target: Target, cases, **kw) -> list[Result]:
    runner = Runner(target, **kw)
    return [runner.run(c) for c in cases]
