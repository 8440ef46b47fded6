"""How a command warns: each cause once in a command's run.

:func:`warn` prints a warning line on stderr unless the run already warned of the same cause.
The library's own log records are not warnings of a command: they reach the user only where
a command asks for them (`pycdr serve -v`), never as a server's log lines in a client.
:func:`group_decode_warnings` folds the decoder's warnings that share a cause (severity,
code and message; several places in the input) into one, with every offset it was seen at.
"""

from __future__ import annotations

import threading

import click

# The causes warned of in this run: a fresh set at each run's start (start_run), shared by
# the threads a command starts (the ORB's), which have no click context of their own.
_warned: set = set()
_lock = threading.Lock()


def start_run() -> None:
    """A command's run begins (the `pycdr` group calls this): nothing warned of yet."""
    global _warned
    _warned = set()


def warn(message: str, *, cause=None, label: str = "warning") -> bool:
    """Print ``label: message`` on stderr unless this run has warned of ``cause`` (the
    message itself by default); True when printed."""
    key = (label, message if cause is None else cause)
    with _lock:
        if key in _warned:
            return False
        _warned.add(key)
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


def warning_lines(warnings_json, indent: str = "") -> list:
    """``severity: [code] message`` lines of decode warnings in JSON form (a capture's
    messages), each cause once."""
    return list(dict.fromkeys(f"{indent}{w['severity']}: [{w['code']}] {w['message']}"
                              for w in warnings_json))


def decode_warnings_json(warnings) -> list:
    return [{**w.to_json(), "offsets": offsets} for w, offsets in group_decode_warnings(warnings)]
