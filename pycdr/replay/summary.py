"""What a replay found, per operation, in memory that does not grow with the
capture: counts by outcome and latency percentiles from log-scale histograms
(pycdr pcap --stats's, 1 % wide);
JUnit XML of the calls that were not the same (the same ones counted)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ..capture.stats import LatencyHistogram
from .compare import difference_text
from .session import DIFFERENT, FAILED, OUTCOMES, SAME, SKIPPED

# Calls that were not the same kept for the JUnit report (the rest are counted).
MAX_JUNIT_CASES = 1000


class OperationStats:
    __slots__ = ("counts", "recorded", "replayed")

    def __init__(self):
        self.counts = dict.fromkeys(OUTCOMES, 0)
        self.recorded = LatencyHistogram()
        self.replayed = LatencyHistogram()

    def to_json(self) -> dict:
        out = {"calls": sum(self.counts.values()), **self.counts}
        for name, h in (("recorded", self.recorded), ("replayed", self.replayed)):
            for p in (50, 99):
                v = h.quantile(p / 100)
                out[f"{name}_p{p}_ms"] = None if v is None else round(v * 1e3, 3)
        return out


class ReplaySummary:
    def __init__(self):
        self.operations: dict = {}
        self.not_same: list = []        # the first MAX_JUNIT_CASES calls not the same
        self.not_same_count = 0

    def add(self, call) -> None:
        self.add_outcome(call.operation, call.outcome,
                         call.recorded_latency if call.recorded_reply is not None else None,
                         call.replayed_latency)
        if call.outcome in (DIFFERENT, FAILED):
            self.not_same_count += 1
            if len(self.not_same) < MAX_JUNIT_CASES:
                self.not_same.append(_case_of(call))

    def add_outcome(self, operation: str, outcome: str, recorded_latency, replayed_latency) -> None:
        """A call counted (latencies in seconds, or None)."""
        stats = self.operations.get(operation)
        if stats is None:
            stats = self.operations[operation] = OperationStats()
        stats.counts[outcome] += 1
        if recorded_latency is not None:
            stats.recorded.add(recorded_latency)
        if replayed_latency is not None:
            stats.replayed.add(replayed_latency)

    def add_counted(self, operation: str, same: int, skipped: int, recorded: tuple,
                    replayed: tuple) -> None:
        """Calls counted without their Calls (the same and skipped calls a replay's
        lanes finish in pycdr._replaylane): how many, and the latencies as
        (buckets, count, max) of LatencyHistogram's bucketing."""
        stats = self.operations.get(operation)
        if stats is None:
            stats = self.operations[operation] = OperationStats()
        stats.counts[SAME] += same
        stats.counts[SKIPPED] += skipped
        stats.recorded.merge(*recorded)
        stats.replayed.merge(*replayed)

    def totals(self) -> dict:
        out = dict.fromkeys(OUTCOMES, 0)
        for stats in self.operations.values():
            for k, v in stats.counts.items():
                out[k] += v
        out["calls"] = sum(out[k] for k in OUTCOMES)
        return out

    @property
    def ok(self) -> bool:
        t = self.totals()
        return t[DIFFERENT] == 0 and t[FAILED] == 0

    def to_json(self) -> dict:
        return {"totals": self.totals(),
                "operations": {op: s.to_json() for op, s in sorted(self.operations.items())}}

    def to_junit(self, name: str = "pycdr-replay") -> str:
        """One test case per operation (its same calls), one per call that was not
        the same (a failure with its differences); skipped calls as skipped cases."""
        t = self.totals()
        suite = ET.Element("testsuite", name=name, tests=str(t["calls"]),
                           failures=str(t[DIFFERENT] + t[FAILED]), skipped=str(t[SKIPPED]))
        for op, stats in sorted(self.operations.items()):
            if stats.counts[SAME]:
                case = ET.SubElement(suite, "testcase", classname=f"replay.{op}",
                                     name=f"{op}: {stats.counts[SAME]} calls the same")
                ET.SubElement(case, "system-out").text = str(stats.to_json())
            if stats.counts[SKIPPED]:
                case = ET.SubElement(suite, "testcase", classname=f"replay.{op}",
                                     name=f"{op}: {stats.counts[SKIPPED]} calls skipped")
                ET.SubElement(case, "skipped", message="not replayed")
        for c in self.not_same:
            case = ET.SubElement(suite, "testcase", classname=f"replay.{c['operation']}",
                                 name=c["name"])
            failure = ET.SubElement(case, "failure", message=c["message"])
            failure.text = c["text"]
        return ET.tostring(suite, encoding="unicode")


def _case_of(call) -> dict:
    diffs = call.differences
    message = call.reason if call.outcome == FAILED or not diffs else \
        "; ".join(f"{d['path']}: {_text(d, 'recorded')} -> {_text(d, 'replayed')}"
                  for d in diffs[:3])
    text = "\n".join(f"{d['path']}: recorded {_text(d, 'recorded')}, "
                     f"replayed {_text(d, 'replayed')}" for d in diffs)
    return {"operation": call.operation,
            "name": f"{call.operation} connection {call.connection} "
                    f"request {call.recorded_id}",
            "message": message or call.outcome, "text": text or call.reason}


def difference_lines(call) -> list:
    """A call that was not the same, for the terminal."""
    head = f"{call.outcome.upper()}: {call.operation} (connection {call.connection}, " \
           f"recorded request {call.recorded_id})"
    lines = [head + (f": {call.reason}" if call.reason else "")]
    for d in call.differences:
        lines.append(f"  {d['path']}: recorded {_text(d, 'recorded')}, "
                     f"replayed {_text(d, 'replayed')}")
    return lines


def _text(difference: dict, side: str) -> str:
    return difference_text(difference["path"], difference[side])
