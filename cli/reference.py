"""The text of an object reference as users have it: on the command line, in a file (a
path or ``file://`` URL), on stdin (``-``), wrapped over several lines."""

from __future__ import annotations

import os
import re
import sys
from urllib.parse import unquote, urlparse

import click

# The schemes an object reference is written in (case does not matter).
SCHEMES = ("ior:", "corbaloc:", "corbaname:")
HOST_PORT = re.compile(r"\[?[^\s/\]]+\]?:\d+")
# The most a reference file is read (an IOR of many profiles is some kilobytes).
MAX_REFERENCE_BYTES = 1 << 20


class ReferenceError(click.ClickException):
    """A reference that cannot be read: one line, exit status 1 (bad input)."""


def _unwrap(text: str) -> str:
    """One reference from text that may be wrapped over lines (catior's output, a mail):
    an IOR's hex has its whitespace removed; a URL is its first non-empty line."""
    text = text.strip()
    if text[:4].lower() == "ior:":
        return "".join(text.split())
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else ""


def _read_file(path: str, shown: str) -> str:
    if os.path.isdir(path):
        raise ReferenceError(f"{shown} is a folder, not a file holding a reference")
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_REFERENCE_BYTES + 1)
    except OSError as e:
        raise ReferenceError(f"cannot read {shown}: {e.strerror}") from None
    if len(data) > MAX_REFERENCE_BYTES:
        raise ReferenceError(f"{shown} is larger than {MAX_REFERENCE_BYTES} bytes: not a "
                             "file holding a reference")
    text = data.decode("utf-8", "replace")
    if not text.strip():
        raise ReferenceError(f"{shown} is empty: no reference in it")
    return text


def read_reference(text: str) -> str:
    """The reference ``text`` stands for: ``-`` reads stdin, ``file://PATH`` and an
    existing PATH read that file; anything else is the reference itself (the parser
    judges it).  Lines are joined as _unwrap does."""
    stripped = text.strip()
    if stripped == "-":
        text = sys.stdin.read()
        if not text.strip():
            raise ReferenceError("no reference on stdin")
    elif stripped.lower().startswith("file:"):
        parsed = urlparse(stripped)
        if parsed.netloc not in ("", "localhost"):
            raise ReferenceError(f"{stripped}: only local file:// URLs can be read")
        text = _read_file(unquote(parsed.path), stripped)
    elif not stripped.lower().startswith(SCHEMES) and not HOST_PORT.fullmatch(stripped):
        if os.path.exists(stripped) or os.sep in stripped or stripped.endswith(".ior"):
            text = _read_file(stripped, stripped)
    return _unwrap(text)
