"""One conformance run: resolve the target, pick the cases that apply, run
them, and hand back results (used by the CLI and the pytest plugin)."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from pycdr.codec import tc
from pycdr.giop.messages import KeyAddr, Reply, ReplyStatus, Request, encode_message
from pycdr.codec.marshal import read_value
from pycdr.orb.tls import DEFAULT_TLS, TLSOptions

from .cases import catalog, echo_catalog
from .echo import ECHO_INTERFACE, ECHO_REPO_ID, load_echo_module
from .reference import reference_endpoint
from .runner import Result, Runner, verdict_counts
from .target import Target, resolve_target
from .wire import Observation


@dataclass
class Run:
    target: Target
    results: list = field(default_factory=list)
    started: float = field(default_factory=time.time)
    elapsed: float = 0.0

    @property
    def counts(self) -> dict:
        return verdict_counts(self.results)


def serves_echo(target: Target) -> bool:
    """Whether the target implements the conformance Echo (asked with _is_a)."""
    if target.type_id == ECHO_REPO_ID:
        return True
    msg = Request(version=(1, 2), request_id=1, target=KeyAddr(target.object_key),
                  operation="_is_a")
    try:
        with target.wire() as wire:
            wire.send(encode_message(msg, write_body=lambda w: w.write_string(ECHO_REPO_ID)))
            obs = wire.observe(Observation(), want=1, timeout=3.0)
    except OSError:
        return False
    for event in obs.messages:
        m = event.message
        if isinstance(m, Reply) and m.reply_status == ReplyStatus.NO_EXCEPTION:
            try:
                return read_value(m.body_reader(), tc.boolean) is True
            except Exception:
                return False
    return False


class Suite:
    """The cases for one target, ready to run one by one (pytest) or all at once."""

    def __init__(self, target_text: str, *, wide_chars: bool | None = None, groups=None,
                 progress=None, tls: TLSOptions = DEFAULT_TLS):
        self.target = resolve_target(target_text, tls=tls)
        module = iface = None
        if serves_echo(self.target):
            module = load_echo_module()
            iface = module.interfaces[ECHO_INTERFACE]
            self.target = Target(**{**self.target.__dict__, "echo": True})
        if wide_chars is None:
            wide_chars = True
        self.runner = Runner(self.target, echo_module=module, echo_interface=iface,
                             wide_chars=wide_chars, progress=progress)
        cases = catalog(self.target.version)
        if iface is not None:
            cases += echo_catalog(module, iface)
        if groups:
            cases = [c for c in cases if c.group in groups]
        self.cases = cases
        self.run = Run(self.target)

    def run_case(self, case) -> Result:
        result = self.runner.run(case)
        self.run.results.append(result)
        return result

    def run_all(self) -> Run:
        start = time.monotonic()
        for case in self.cases:
            self.run_case(case)
        self.run.elapsed = time.monotonic() - start
        return self.run


@contextmanager
def target_or_reference(target_text: str | None):
    """The given target, or the reference ORB started in-process."""
    if target_text:
        yield target_text
        return
    with reference_endpoint() as ior:
        yield ior
