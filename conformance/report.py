"""Reports of a conformance run: JSON, JUnit XML, a text summary, and the
Markdown results matrix across endpoints (docs/CONFORMANCE.md)."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections import OrderedDict

from pycdr.capture.write import TcpSession, write_pcap

from .cases import TOLERANCE_CODES
from .runner import FAIL, NOT_RUN, PASS, TOLERATED

VERDICT_ORDER = (PASS, TOLERATED, FAIL, NOT_RUN)


def to_json(run) -> dict:
    t = run.target
    return {"target": {"host": t.host, "port": t.port, "object_key": t.object_key.hex(),
                       "version": f"{t.version[0]}.{t.version[1]}", "echo": t.echo,
                       "label": t.describe()},
            "elapsed": round(run.elapsed, 3), "counts": run.counts,
            "tolerated_by_reason": tolerated_by_reason(run),
            "results": [r.to_json() for r in run.results]}


def tolerated_by_reason(run) -> dict:
    """{reason code: number of tolerated results}, in TOLERANCE_CODES order."""
    counts = {code: 0 for code in TOLERANCE_CODES}
    for r in run.results:
        if r.verdict == TOLERATED:
            counts[r.reason_code] += 1
    return {code: n for code, n in counts.items() if n}


def to_junit(run, name: str = "pycdr-conformance") -> str:
    suite = ET.Element("testsuite", name=name, tests=str(len(run.results)),
                       failures=str(run.counts.get(FAIL, 0)),
                       skipped=str(run.counts.get(NOT_RUN, 0)), time=f"{run.elapsed:.3f}")
    for r in run.results:
        case = ET.SubElement(suite, "testcase", classname=f"conformance.{r.case.group}",
                             name=r.case.id, time=f"{r.elapsed:.4f}")
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="spec", value=r.case.spec)
        ET.SubElement(props, "property", name="outcome", value=str(r.outcome))
        if r.verdict == FAIL:
            failure = ET.SubElement(case, "failure", message=r.reason)
            failure.text = f"sent: {' '.join(b.hex() for b in r.sent)}\n" \
                           f"received: {r.received.hex()}"
        elif r.verdict == NOT_RUN:
            ET.SubElement(case, "skipped", message=r.reason)
        elif r.verdict == TOLERATED:
            ET.SubElement(props, "property", name="tolerated_reason", value=r.reason_code)
            ET.SubElement(case, "system-out").text = \
                f"tolerated deviation [{r.reason_code}]: {r.reason}"
    return ET.tostring(suite, encoding="unicode")


def client_run_json(run) -> dict:
    """A client run (conformance.client_runner.ClientRun) as JSON."""
    return {"client": run.command, "elapsed": round(run.elapsed, 3), "counts": run.counts,
            "tolerated_by_reason": tolerated_by_reason(run),
            "results": [r.to_json() for r in run.results]}


def summary_lines(run, tolerated_reasons=None) -> list[str]:
    """The text summary; ``tolerated_reasons``: list only tolerated results with these codes
    (None: all). ``run``: a server run (with a target) or a client run."""
    target = getattr(run, "target", None)
    if target is None:
        lines = [run.describe()]
    else:
        lines = [f"target: {target.describe()} (GIOP {target.version[0]}."
                 f"{target.version[1]}{', echo' if target.echo else ''})"]
    groups: dict = OrderedDict()
    for r in run.results:
        g = groups.setdefault(r.case.group, {v: 0 for v in VERDICT_ORDER})
        g[r.verdict] += 1
    lines.append(f"{'group':<12}" + "".join(f"{v:>11}" for v in VERDICT_ORDER))
    for name, counts in groups.items():
        lines.append(f"{name:<12}" + "".join(f"{counts[v]:>11}" for v in VERDICT_ORDER))
    total = run.counts
    lines.append(f"{'total':<12}" + "".join(f"{total.get(v, 0):>11}" for v in VERDICT_ORDER))
    for r in run.results:
        if r.verdict == FAIL:
            lines.append(f"FAIL {r.case.id}: {r.outcome} - {r.reason} [{r.case.spec}]")
    by_reason = tolerated_by_reason(run)
    if by_reason:
        lines.append("tolerated by reason: "
                     + ", ".join(f"{code} {n}" for code, n in by_reason.items()))
    for r in run.results:
        if r.verdict == TOLERATED and (tolerated_reasons is None
                                       or r.reason_code in tolerated_reasons):
            lines.append(f"tolerated [{r.reason_code}] {r.case.id}: {r.outcome} - {r.reason}")
    return lines


def export_pcaps(run, folder: str) -> list[str]:
    """One pcap a case: what was sent and what came back, as a TCP session to
    the target's port (so Wireshark and ``pycdr pcap`` dissect it as GIOP); a
    client case: each of the client's connections to the crafted server, in order."""
    os.makedirs(folder, exist_ok=True)
    paths = []
    for r in run.results:
        if r.verdict == NOT_RUN:
            continue
        packets: list = []
        port = getattr(r, "port", 0) or run.target.port
        for chunks in r.conversations():
            session = TcpSession(packets, server_port=port)
            for from_client, data in chunks:
                session.send(from_client, data)
            session.close()
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", r.case.id).strip("_") + ".pcap"
        path = os.path.join(folder, name)
        write_pcap(path, packets)
        paths.append(path)
    return paths


def _base_id(case_id: str) -> str:
    return case_id.split("[", 1)[0]


def replace_section(path: str, name: str, text: str) -> None:
    """Write ``text`` into the file at ``path`` between the markers of section ``name``
    (appended when the file has none), leaving the other sections as they are: the server and
    client matrices share docs/CONFORMANCE.md, each written by its own test."""
    begin, end = f"<!-- matrix:{name} begin -->\n", f"<!-- matrix:{name} end -->\n"
    old = open(path).read() if os.path.exists(path) else ""
    block = begin + text.rstrip("\n") + "\n" + end
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        new = head + block + rest.split(end, 1)[1]
    else:
        new = old + ("\n" if old and not old.endswith("\n\n") else "") + block
    # Written beside and renamed: the C-path and pure-Python passes of the suite run at the
    # same time and read this file, so a reader must never see it half written.
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(new)
    os.replace(tmp, path)


def matrix_markdown(runs: "OrderedDict[str, object]", intro: str = "", *,
                    heading: str = "##") -> str:
    """Cases down, endpoints across. A cell counts verdicts over the case's
    variants (GIOP versions x byte orders): 'pass 8', 'tolerated 2 / pass 6',
    'FAIL 2 / pass 6', 'not run 8'."""
    names = list(runs)
    rows: dict = OrderedDict()
    for name, run in runs.items():
        for r in run.results:
            key = _base_id(r.case.id)
            rows.setdefault(key, {"title": r.case.title, "spec": r.case.spec, "cells": {}})
            cell = rows[key]["cells"].setdefault(name, {v: 0 for v in VERDICT_ORDER})
            cell[r.verdict] += 1
    out = []
    if intro:
        out.append(intro.rstrip() + "\n")
    out.append("| case | spec | " + " | ".join(names) + " |")
    out.append("|---|---|" + "---|" * len(names))
    for key, row in rows.items():
        cells = []
        for name in names:
            counts = row["cells"].get(name)
            if not counts:
                cells.append("—")
                continue
            parts = [f"{'FAIL' if v == FAIL else v} {counts[v]}" for v in
                     (FAIL, TOLERATED, PASS, NOT_RUN) if counts[v]]
            cells.append(" / ".join(parts))
        out.append(f"| `{key}` | {row['spec'].split(' ', 1)[0]} | " + " | ".join(cells) + " |")
    out.append("")
    out.append(f"{heading} Summary")
    out.append("")
    out.append("| endpoint | " + " | ".join(VERDICT_ORDER) + " | time |")
    out.append("|---|" + "---|" * (len(VERDICT_ORDER) + 1))
    for name, run in runs.items():
        out.append(f"| {name} | " + " | ".join(str(run.counts.get(v, 0)) for v in VERDICT_ORDER)
                   + f" | {run.elapsed:.1f} s |")
    out.append("")
    out.append(f"{heading} Failures and tolerated deviations")
    for name, run in runs.items():
        out.append("")
        out.append(f"{heading}# {name}")
        out.append("")
        seen = set()
        listed = False
        for r in run.results:
            if r.verdict not in (FAIL, TOLERATED):
                continue
            key = (_base_id(r.case.id), r.verdict, str(r.outcome.kind if r.outcome else None),
                   r.reason, r.reason_code)
            if key in seen:
                continue
            seen.add(key)
            listed = True
            label = "FAIL" if r.verdict == FAIL else f"tolerated [{r.reason_code}]"
            out.append(f"- {label} `{r.case.id}`: got {r.outcome}; {r.reason}")
        if not listed:
            out.append("- none")
    return "\n".join(out) + "\n"
