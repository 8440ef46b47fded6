"""How a command warns: each cause once in a command's run.

:func:`warn` prints a warning line on stderr unless the run already warned of the same cause;
:func:`group_decode_warnings` folds the decoder's warnings that share a cause (severity,
code and message; several places in the input) into one, with every offset it was seen at.
"""

from __future__ import annotations

import click

_META_KEY = "pycdr.warned"


def _warned() -> set:
    """The causes this run has warned of: kept on the root click context, so every command
    invocation starts afresh (and so does each CliRunner.invoke in tests)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return set()          # outside a command: nothing to deduplicate against
    return ctx.find_root().meta.setdefault(_META_KEY, set())


def warn(message: str, *, cause=None, label: str = "warning") -> bool:
    """Print ``label: message`` on stderr unless this run has warned of ``cause`` (the
    message itself by default); True when printed."""
    seen = _warned()
    key = (label, message if cause is None else cause)
    if key in seen:
        return False
    seen.add(key)
    click.echo(f"{label}: {message}", err=True)
    return True


def group_decode_warnings(warnings) -> list:
    """[(DecodeWarning, [offsets])]: the first warning of each cause, in order, with the
    offsets of all its occurrences."""
    groups: dict = {}
    for w in warnings:
        key = (w.severity, w.code, w.message)
        if key in groups:
            groups[key][1].append(w.offset)
        else:
            groups[key] = (w, [w.offset])
    return list(groups.values())


def decode_warning_text(w, offsets) -> str:
    """``severity: [code] message at offset N`` (``at offsets N, M`` when it recurs)."""
    where = f"offset {offsets[0]}" if len(offsets) == 1 else \
        "offsets " + ", ".join(map(str, offsets))
    return f"{w.severity}: [{w.code}] {w.message} at {where}"


def decode_warnings_json(warnings) -> list:
    return [{**w.to_json(), "offsets": offsets} for w, offsets in group_decode_warnings(warnings)]
