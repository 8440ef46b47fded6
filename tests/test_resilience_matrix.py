"""The resilience matrix: each client ORB (the reference ORB, omniORBpy, JacORB, the OpenJDK
ORB, the GlassFish ORB, Combat) calls the reference ORB's echo server through `pycdr proxy`,
whose rules put one fault on each call, and what the client did is recorded: the exception it
raised (repository id, minor code, completion status), how many requests the proxy saw for the
call (more than one: it retried, or followed a forward), how long the call took, and whether it
hung (no answer in HANG_BOUND_S). The matrix is written to docs/RESILIENCE.md from the run.

Each client makes all its calls in one process, one after the other, one operation of
conformance/echo.idl a fault (a rule matches its operation, and hits its first request only,
so that a retry goes through). A call that hangs ends that process; a new one makes the calls
that were left. Every client runs at once, each behind a proxy of its own.

The same faults are put again (VARIANTS) on an operation's second call, its first having gone
through on the same connection, and on the first call over GIOP 1.1 and 1.0 (the clients are
given an IOR whose IIOP profile has that version); the proxy's rows show the version each
request had, and a client that did not send it fails the test."""

import asyncio
import dataclasses
import os
import tempfile
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass, field

import pytest

from pycdr.addressing.iiop import decode_profile, make_ior
from pycdr.addressing.rewrite import ReferenceRewriter
from pycdr.codec.ior import ior_to_string
from pycdr.conformance.echo import ECHO_INTERFACE, load_echo_module
from pycdr.conformance.report import replace_section
from pycdr.giop.minorcodes import meaning
from pycdr.orb import EchoServant, Server
from pycdr.proxy.core import ProxyCore
from pycdr.proxy.hooks import Hooks
from pycdr.proxy.rules import parse_rules
from pycdr.proxy.server import Listener, Proxy

from peers.process import PeerNotInstalled

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, os.pardir, "docs", "RESILIENCE.md")
HANG_BOUND_S = 8            # a call with no answer for this long is judged hung
STARTUP_BOUND_S = 60        # the first (fault-free) call of a process: a JVM on a loaded machine
TRANSIENT_MINOR = 0x4F4D0002
COMM_FAILURE_MINOR = 0x4F4D0003


@dataclass(frozen=True)
class Fault:
    name: str
    what: str               # for the matrix
    operation: str
    args: list
    action: dict
    direction: str = "request"


# In call order. The stall comes last: a reply held for good keeps the connection busy.
FAULTS = [
    Fault("transient", "`system_exception` TRANSIENT, minor 0x4f4d0002, COMPLETED_NO, "
          "instead of the request", "echo_short", [-3],
          {"type": "system_exception", "id": "TRANSIENT", "minor": TRANSIENT_MINOR,
           "completed": "no"}),
    Fault("comm-failure-maybe", "`system_exception` COMM_FAILURE, minor 0x4f4d0003, "
          "COMPLETED_MAYBE, instead of the request", "echo_ushort", [7],
          {"type": "system_exception", "id": "COMM_FAILURE", "minor": COMM_FAILURE_MINOR,
           "completed": "maybe"}),
    Fault("close-before", "`close` before: CloseConnection, the request not sent on",
          "echo_ulong", [11], {"type": "close", "when": "before"}),
    Fault("close-after", "`close` after: the request reaches the server, then "
          "CloseConnection instead of the reply", "echo_longlong", [-13],
          {"type": "close", "when": "after"}),
    Fault("reset", "`reset`: both connections reset (RST) when the request comes",
          "echo_ulonglong", [17], {"type": "reset"}),
    Fault("message-error", "`message_error`: a MessageError instead of the request",
          "echo_float", [1.5], {"type": "message_error"}),
    Fault("fragment-1", "`fragment` size 1: the reply in fragments of 8 body octets",
          "echo_string", ["a reply cut into many fragments"],
          {"type": "fragment", "size": 1}, "reply"),
    Fault("trickle", "`trickle`: the reply 4 octets every 20 ms", "echo_double", [2.25],
          {"type": "trickle", "bytes": 4, "interval_ms": 20}, "reply"),
    Fault("delay", "`delay`: the reply 500 ms late", "echo_longs", [[1, 2, 3]],
          {"type": "delay", "ms": 500}, "reply"),
    Fault("forward", "`forward`: LOCATION_FORWARD to an object of another server (through "
          "the proxy)", "echo_octet", [77], {"type": "forward"}),
    Fault("duplicate-reply", "`duplicate`: the reply sent twice", "echo_color", ["green"],
          {"type": "duplicate"}, "reply"),
    Fault("drop-reply", "`drop`: the reply never sent on", "echo_boolean", [True],
          {"type": "drop"}, "reply"),
    Fault("stall", "`stall`: the reply held for good (the client's timeout, if any, ends the "
          "call)", "echo_char", ["q"], {"type": "stall"}, "reply"),
]
BASELINE = ("echo_long", [42])      # first in each process: the time its start takes


@dataclass(frozen=True)
class Variant:
    """One run of the faults: the GIOP version of the IOR's IIOP profile (so of the
    requests), and which call of each operation the rules hit (the calls before it go
    through)."""
    name: str
    title: str
    giop: tuple
    nth: int = 1


# Every client sends the GIOP version of the target's IIOP profile (at most the 1.2 it
# speaks): an IOR with a 1.0 or 1.1 profile is what makes it speak that version.
VARIANTS = [
    Variant("first-call", "GIOP 1.2, each operation's first call", (1, 2)),
    Variant("second-call", "GIOP 1.2, each operation's second call (its first went through "
            "on the same connection)", (1, 2), nth=2),
    Variant("giop-1.1", "GIOP 1.1, each operation's first call", (1, 1)),
    Variant("giop-1.0", "GIOP 1.0, each operation's first call", (1, 0)),
]


def rules_for(forward_to: str, nth: int = 1) -> list:
    rules = []
    for f in FAULTS:
        action = dict(f.action, to=forward_to) if f.action["type"] == "forward" else f.action
        rules.append({"match": {"operation": f.operation, "direction": f.direction,
                                "nth": nth}, "action": action})
    return rules


@dataclass
class Observed:
    outcome: str                    # "result", "wrong result", an exception's name, "hung", ...
    exception_id: str = ""
    minor: int | None = None
    completed: str = ""
    elapsed: float = 0.0
    requests: int = 0
    detail: str = ""


@dataclass
class ClientRun:
    label: str
    results: "OrderedDict[str, Observed]" = field(default_factory=OrderedDict)
    processes: int = 0
    elapsed: float = 0.0
    # fault name -> what a call before the faulted one gave when it was not the result
    before: dict = field(default_factory=dict)
    versions: Counter = field(default_factory=Counter)   # the requests' GIOP versions


COMPLETION = {0: "YES", 1: "NO", 2: "MAYBE"}


def observed(fault: Fault, line: dict, elapsed: float) -> Observed:
    if "result" in line:
        expected = fault.args[0]
        ok = line["result"] == expected or (isinstance(expected, float) and
                                            line["result"] == pytest.approx(expected))
        return Observed("result" if ok else "wrong result", elapsed=elapsed,
                        detail="" if ok else repr(line["result"]))
    if "system_exception" in line:
        e = line["system_exception"]
        completed = e.get("completed")
        completed = COMPLETION.get(completed, completed) if isinstance(completed, int) \
            else str(completed).replace("COMPLETED_", "")
        repo_id = e["exception_id"]
        name = repo_id.rsplit("/", 1)[-1].split(":")[0]
        minor = e.get("minor")
        return Observed(name, repo_id, minor if isinstance(minor, int) else None, completed,
                        elapsed)
    e = line.get("user_exception", {})
    return Observed("user exception", e.get("id", ""), elapsed=elapsed)


async def _stderr_tail(stream, sink: list):
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            return
        sink.append(chunk)
        del sink[:-4]


async def run_client(label, client, ior, counts, work_dir, nth=1) -> ClientRun:
    """All the faults' calls of one client: one process, and a new one after a call that hung
    or a process that ended early, for the faults left. Each fault's operation is called
    ``nth`` times, the rule hitting the last of them."""
    run = ClientRun(label)
    started = time.monotonic()
    pending = list(FAULTS)
    while pending:
        run.processes += 1
        # (index in pending of the call's fault, or -1 for the baseline; whether the rule
        # hits it) for each call
        plan = [(-1, False)] + [(i, k == nth - 1) for i in range(len(pending))
                                for k in range(nth)]
        calls = [BASELINE] + [(pending[i].operation, pending[i].args) for i, _ in plan[1:]]
        argv = client.command(work_dir, ior, calls)
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        errors: list = []
        drain = asyncio.ensure_future(_stderr_tail(process.stderr, errors))
        index, last, stopped = 0, time.monotonic(), None
        try:
            while index < len(calls):
                try:
                    raw = await asyncio.wait_for(process.stdout.readline(),
                                                 STARTUP_BOUND_S if index == 0 else HANG_BOUND_S)
                except asyncio.TimeoutError:
                    stopped = "hung"
                    break
                if not raw:
                    stopped = "ended"
                    break
                line = client.parse(calls[index][0],
                                    raw.decode("utf-8", "replace").rstrip("\r\n"))
                if line is None:
                    continue
                now = time.monotonic()
                at, hit = plan[index]
                if at >= 0:
                    fault = pending[at]
                    o = observed(fault, line, now - last)
                    if hit:
                        run.results[fault.name] = o
                    elif o.outcome != "result":
                        run.before[fault.name] = o
                last, index = now, index + 1
        finally:                        # (a failure elsewhere cancels this: no process left)
            if process.returncode is None:
                process.kill()
            await process.wait()
            await drain
        stderr = b"".join(errors).decode("utf-8", "replace").strip()
        if stopped is None:
            break
        if index == 0:
            pytest.fail(f"{label}: its first call, with no fault, {stopped}: {stderr[-2000:]}",
                        pytrace=False)
        # calls[index] got no answer: its fault is judged by it (a call before the faulted
        # one that got none is said to be that); a new process makes the faults' calls after.
        at, hit = plan[index]
        fault = pending[at]
        last_words = stderr.splitlines()[-1][:200] if stderr else ""
        o = Observed("hung", elapsed=HANG_BOUND_S) if stopped == "hung" else \
            Observed("process ended", elapsed=time.monotonic() - last,
                     detail=f"exit status {process.returncode} {last_words}".strip())
        run.results[fault.name] = o
        if not hit:
            run.before[fault.name] = o
        pending = pending[at + 1:]
    run.elapsed = time.monotonic() - started
    for f in FAULTS:
        run.results[f.name].requests = counts[f.operation] - (nth - 1)
    run.results = OrderedDict((f.name, run.results[f.name]) for f in FAULTS)
    return run


def with_version(ior, giop: tuple):
    """``ior`` with its IIOP profile at GIOP version ``giop`` (a 1.0 profile has no
    components)."""
    profile = decode_profile(ior.profiles[0])
    components = profile.components if giop >= (1, 1) else ()
    return make_ior(ior.type_id, [dataclasses.replace(profile, version=giop,
                                                      components=components)])


async def run_matrix(clients: dict, variant: Variant = VARIANTS[0]) \
        -> "OrderedDict[str, ClientRun]":
    """The reference ORB's echo server (and a second one, the forward's destination), a proxy
    for each client in front of them, and every client's calls at once."""
    interface = load_echo_module().interfaces[ECHO_INTERFACE]
    target, other = Server(), Server()
    key = target.activate(EchoServant(interface), "Echo")
    other_key = other.activate(EchoServant(interface), "Elsewhere")
    await target.start()
    await other.start()
    proxies, jobs, versions = [], [], {}
    work_root = tempfile.TemporaryDirectory(prefix="pycdr-resilience-")
    forward_to = ior_to_string(with_version(other.ior(other_key), variant.giop))
    try:
        for label, client in clients.items():
            counts, seen = Counter(), versions.setdefault(label, Counter())
            core = ProxyCore(rewriter=ReferenceRewriter({}), seed=1,
                             rules=parse_rules(rules_for(forward_to, variant.nth)),
                             hooks=Hooks(request=lambda call, c=counts: c.update(
                                 [call.operation])),
                             emit=lambda row, v=seen: v.update(
                                 [row.get("giop_version")] if row.get("message_type") ==
                                 "Request" else []))
            proxy = Proxy(core, [Listener("127.0.0.1", 0, (target.host, target.port)),
                                 Listener("127.0.0.1", 0, (other.host, other.port))])
            await proxy.start()
            proxies.append(proxy)
            front = proxy.listeners[0].advertised
            ior, _ = ReferenceRewriter({(target.host, target.port): front}).rewrite(
                target.ior(key))
            work_dir = tempfile.mkdtemp(dir=work_root.name)
            jobs.append(run_client(label, client, ior_to_string(with_version(ior, variant.giop)),
                                   counts, work_dir, variant.nth))
        runs = await asyncio.gather(*jobs)
    finally:
        for proxy in proxies:
            await proxy.close()
        await target.stop()
        await other.stop()
        work_root.cleanup()
    for run in runs:
        run.versions = versions[run.label]
    return OrderedDict((r.label, r) for r in runs)


# What each client is known to do under each fault: "<outcome> <requests the proxy saw>", or a
# tuple of the ways it has been seen to go. The test asserts exactly these; any other outcome
# fails it (after one more run of that client alone, as the conformance matrix does).
_SAME_AS_REFERENCE = {
    "transient": "TRANSIENT 1", "comm-failure-maybe": "COMM_FAILURE 1",
    "close-before": "result 2", "close-after": "result 2", "reset": "COMM_FAILURE 1",
    "message-error": "TIMEOUT 1", "fragment-1": "result 1", "trickle": "result 1",
    "delay": "result 1", "forward": "result 2", "duplicate-reply": "result 1",
    "drop-reply": "TIMEOUT 1", "stall": "TIMEOUT 1"}
_FIRST_CALL = {
    "pycdr reference ORB": _SAME_AS_REFERENCE,
    "omniORBpy 4.2.5": {**_SAME_AS_REFERENCE, "message-error": "COMM_FAILURE 1"},
    "JacORB 3.9": _SAME_AS_REFERENCE,
    # After the CloseConnection of close-before it may send the next call on that connection
    # before it has seen it close: COMM_FAILURE with no request reaching the proxy.
    "OpenJDK ORB 10.1.3": {**_SAME_AS_REFERENCE, "close-before": "COMM_FAILURE 1",
                           "close-after": ("COMM_FAILURE 1", "COMM_FAILURE 0"),
                           "message-error": "COMM_FAILURE 1",
                           "drop-reply": "hung 1", "stall": "hung 1"},
    "GlassFish ORB 5.0.0": {**_SAME_AS_REFERENCE, "transient": "result 2",
                            "message-error": "COMM_FAILURE 1", "drop-reply": "COMM_FAILURE 1",
                            "stall": "COMM_FAILURE 1"},
    "Combat 0.8.1": {**_SAME_AS_REFERENCE, "reset": "INTERNAL 1", "message-error": "INTERNAL 1",
                     "drop-reply": "hung 1", "stall": "hung 1"},
}
# By variant: the first call's outcomes, and where another variant's differ from them.
KNOWN = {
    "first-call": _FIRST_CALL,
    "second-call": {},
    "giop-1.1": {},
    "giop-1.0": {},
}


def _seen(run: ClientRun) -> dict:
    """fault name -> "<outcome> <requests>", with " after <outcome>" when a call of the
    operation before the faulted one did not give the result."""
    return {name: f"{o.outcome} {o.requests}" + (
        f" after {run.before[name].outcome}" if name in run.before else "")
        for name, o in run.results.items()}


def _unexpected(variant: Variant, run: ClientRun) -> dict:
    known = {**KNOWN[VARIANTS[0].name][run.label], **KNOWN.get(variant.name, {}).get(
        run.label, {})}
    return {name: (seen, known[name]) for name, seen in _seen(run).items()
            if seen not in (known[name] if isinstance(known[name], tuple) else (known[name],))}


def _cell(fault: Fault, o: Observed, before: Observed | None = None) -> str:
    if o.outcome == "hung":
        text = f"**hung** (no answer in {HANG_BOUND_S} s)"
    elif o.exception_id:
        minor = "" if o.minor is None else f" 0x{o.minor:08x}"
        said = meaning(o.outcome, o.minor) if o.minor is not None else None
        name = o.outcome if o.exception_id == f"IDL:omg.org/CORBA/{o.outcome}:1.0" \
            else o.exception_id
        text = f"`{name}`{minor}{f' ({said})' if said else ''} {o.completed}"
    else:
        text = o.outcome + (f" {o.detail}" if o.detail else "")
    retried = "" if o.requests < 2 or o.outcome != "result" else \
        " (followed)" if fault.action["type"] == "forward" else " (retried)"
    earlier = f" (the call before it: {before.outcome})" if before is not None else ""
    return f"{text}{earlier}; {o.requests} req{retried}; {o.elapsed:.2f} s"


def _grouped(runs, fault: Fault) -> "OrderedDict[str, list]":
    """What the clients did under ``fault`` (the outcome, its completion status, whether the
    call was sent again) -> the clients that did it."""
    groups: "OrderedDict[str, list]" = OrderedDict()
    for label, run in runs.items():
        o = run.results[fault.name]
        what = o.outcome + (f" {o.completed}" if o.completed else "")
        if o.requests > 1:
            what += f" after {o.requests} requests"
        groups.setdefault(what, []).append(label)
    return groups


def _table(runs) -> list:
    labels = list(runs)
    return ["| fault | " + " | ".join(labels) + " |",
            "|---|" + "---|" * len(labels),
            *[f"| `{f.name}` | " + " | ".join(
                _cell(f, runs[label].results[f.name], runs[label].before.get(f.name))
                for label in labels) + " |" for f in FAULTS]]


def _differences(first, runs) -> list:
    """Where a client did otherwise than under the first variant (its outcome and whether
    the call was sent again)."""
    out = []
    for label, run in runs.items():
        was, now = _seen(first[label]), _seen(run)
        changed = [f"`{name}` {now[name]} (first variant: {was[name]})" for name in now
                   if now[name] != was[name]]
        out.append(f"- {label}: " + ("; ".join(changed) if changed else "as in the first "
                                     "table") + ".")
    return out


def write_matrix(results, clients) -> None:
    """``results``: variant name -> (runs, the variant's time)."""
    first_runs = results[VARIANTS[0].name][0]
    labels = list(first_runs)
    lines = [
        "# Resilience matrix: what each client ORB does under a fault",
        "",
        "Written by `tests/test_resilience_matrix.py` from one run. Each client ORB calls the "
        "reference ORB's echo server (conformance/echo.idl) through `pycdr proxy`, whose "
        "rules ([proxy](proxy.md#rules)) put one fault on one call: the rule matches that "
        "call's operation and hits its first request only (`\"nth\": 1`), so a retry goes "
        "through. A cell "
        "gives what the client reported (the result, or the system exception's name, minor "
        "code (with its meaning where the vendor's table is known) and completion status), "
        "how many requests for the call the proxy saw (2 after a forward: the request it "
        "answered and the one the client sent to the new address; 2 otherwise: the client "
        "sent the call again), and how long the call took. **hung**: no answer in "
        f"{HANG_BOUND_S} s; the test then ends that client's process and starts a new one "
        "for the calls left.",
        "",
        "The faults are put on four kinds of call, a table each: the first call of each "
        "operation over GIOP 1.2; the second call of each operation (`\"nth\": 2`; the first "
        "went through, on the connection the second is made on); and the first call over "
        "GIOP 1.1 and GIOP 1.0 (the clients are given an IOR whose IIOP profile has that "
        "version, and send it). The proxy's rows "
        "show each request's GIOP version: the test fails when a client sent another. The "
        "`fragment` rule cuts GIOP 1.2 messages only: under 1.1 and 1.0 the reply goes on "
        "whole.",
        "",
        "## How each client is configured",
        "",
        *[f"- {label}: {clients[label].configuration}." for label in labels],
        "",
        "## The faults, in call order",
        "",
        *[f"- `{f.name}` (`{f.operation}`): {f.what}." for f in FAULTS],
    ]
    for variant in VARIANTS:
        runs = results[variant.name][0]
        lines += ["", f"## {variant.title}", "", *_table(runs)]
        if variant is VARIANTS[0]:
            lines += ["", "### By fault, the clients grouped by what they did", "",
                      *[f"- `{f.name}`: " + "; ".join(
                          f"{what}: {', '.join(who)}" for what, who in
                          _grouped(runs, f).items()) + "." for f in FAULTS]]
        else:
            lines += ["", "Where a client did otherwise than in the first table:", "",
                      *_differences(first_runs, runs)]
    lines += [
        "",
        "## Summary",
        "",
        "Processes and time of each client's run, by table.",
        "",
        "| client | " + " | ".join(f"`{v.name}`" for v in VARIANTS) + " |",
        "|---|" + "---|" * len(VARIANTS),
        *[f"| {label} | " + " | ".join(
            f"{r.processes}, {r.elapsed:.1f} s" for v in VARIANTS
            for r in [results[v.name][0][label]]) + " |" for label in labels],
        "",
        "The tables' runs were made at once, and the clients of a table side by side: "
        + ", ".join(f"`{v.name}` {results[v.name][1]:.1f} s" for v in VARIANTS) + ".",
    ]
    replace_section(DOC, "resilience", "\n".join(lines))


def _clients():
    """The clients, or a skip naming each one that cannot run here: the matrix is written
    whole or not at all."""
    from peers.resilience_clients import CLIENTS
    missing = []
    for label, client in CLIENTS.items():
        try:
            client.check()
        except PeerNotInstalled as e:
            missing.append(f"{label}: {e}")
    if missing:
        pytest.skip("not installed, so the matrix is not run: " + "; ".join(missing))
    return CLIENTS


async def _timed(clients, variant: Variant) -> tuple:
    started = time.monotonic()
    runs = await run_matrix(clients, variant)
    return runs, time.monotonic() - started


def run_variants(clients) -> "OrderedDict[str, tuple]":
    """variant name -> (label -> ClientRun, time), the variants run at once (most of a run
    is waiting on a timeout or a hang); a client that did not go as KNOWN is run once more,
    alone, and judged by that run."""
    async def all_at_once():
        return await asyncio.gather(*(_timed(clients, v) for v in VARIANTS))
    results = OrderedDict((v.name, done) for v, done in zip(VARIANTS, asyncio.run(
        all_at_once())))
    for variant in VARIANTS:
        runs = results[variant.name][0]
        for label, run in runs.items():
            if _unexpected(variant, run):
                print(f"{variant.name}, {label}: run again, not as known the first time: "
                      f"{_unexpected(variant, run)}")
                runs[label] = asyncio.run(run_matrix({label: clients[label]}, variant))[label]
    return results


def test_resilience_matrix():
    if os.environ.get("PYCDR_PURE"):
        pytest.skip("the matrix runs once, in the C-path pass: only the reference ORB uses "
                    "pycdr's codec, and tests/test_proxy.py puts it under these faults")
    clients = _clients()
    results = run_variants(clients)
    assert {(v, label): _unexpected(variant, run) for variant in VARIANTS
            for v in [variant.name] for label, run in results[v][0].items()} == \
        {(v.name, label): {} for v in VARIANTS for label in results[v.name][0]}
    for variant in VARIANTS:
        runs = results[variant.name][0]
        # every request of the variant's clients had its GIOP version
        version = f"{variant.giop[0]}.{variant.giop[1]}"
        assert {label: set(run.versions) for label, run in runs.items()} == \
            {label: {version} for label in runs}, variant.name
        # What the outcomes mean beyond their names: the exception the rule answered reaches
        # the client as the rule said it, and a delay or a stall takes its time.
        for label, run in runs.items():
            transient = run.results["transient"]
            if transient.outcome == "TRANSIENT":
                assert (transient.minor, transient.completed) == (TRANSIENT_MINOR, "NO"), \
                    (variant.name, label)
            maybe = run.results["comm-failure-maybe"]
            assert (maybe.minor, maybe.completed) == (COMM_FAILURE_MINOR, "MAYBE"), \
                (variant.name, label)
            # (a call's time runs from the test's reading of the line before to its own:
            # read late on a loaded machine, that line makes the call look shorter -- a
            # 0.5 s delay has been seen as 0.495 s, and omniORB's 3 s call timeout to end a
            # stall after 2.84 s so measured; hence 10 % less than each)
            assert run.results["delay"].elapsed >= 0.45, (variant.name, label)
            assert run.results["stall"].elapsed >= 2.5, (variant.name, label)
    write_matrix(results, clients)
    text = open(DOC).read()
    assert text.count("<!-- matrix:resilience begin -->") == 1
    assert all(f"| `{f.name}` |" in text for f in FAULTS)
    assert all(f"## {v.title}" in text for v in VARIANTS)
