"""Errors of the IDL front end: every one carries file:line:column and a caret excerpt.

The front end keeps going after an error where it can (the parser skips to the
next declaration, the checker to the next name), so one run reports several
problems; they are raised together as one :class:`IdlError` -- the first
:data:`MAX_DIAGNOSTICS` of them, and how many more there were (hostile input
can make one per character).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import PycdrError

MAX_DIAGNOSTICS = 100
EXCERPT_WIDTH = 120     # columns of the source line shown around the caret


@dataclass(frozen=True)
class Position:
    file: str
    line: int
    column: int  # 1-based

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Diagnostic:
    position: Position
    message: str

    def excerpt(self) -> str:
        """The source line and a caret under the column ('' if the file cannot be read)."""
        try:
            with open(self.position.file, encoding="utf-8", errors="replace") as f:
                for number, text in enumerate(f, 1):
                    if number == self.position.line:
                        text = text.rstrip("\n").expandtabs(1)
                        caret = self.position.column - 1
                        start = max(0, min(caret - EXCERPT_WIDTH // 2, len(text) - EXCERPT_WIDTH))
                        # Control characters would garble the terminal: one '?' each
                        # keeps the caret in its column.
                        text = "".join(c if c.isprintable() else "?"
                                       for c in text[start:start + EXCERPT_WIDTH])
                        return f"{text}\n{' ' * (caret - start)}^"
        except OSError:
            pass
        return ""

    def __str__(self) -> str:
        text = f"{self.position}: error: {self.message}"
        excerpt = self.excerpt()
        return f"{text}\n{excerpt}" if excerpt else text


class IdlError(PycdrError):
    """IDL that cannot be compiled; ``diagnostics`` lists every problem found."""

    def __init__(self, diagnostics: list[Diagnostic], more: int = 0):
        self.diagnostics = list(diagnostics)
        self.more = more        # problems found beyond the ones listed
        self.count = len(self.diagnostics) + more
        text = "\n".join(str(d) for d in self.diagnostics)
        if more:
            text += f"\n... and {more} more error(s)"
        super().__init__(text)


class Reporter:
    """Collects diagnostics; ``check()`` raises them all at once."""

    def __init__(self):
        self.diagnostics: list[Diagnostic] = []
        self.more = 0

    def error(self, position: Position, message: str) -> None:
        if len(self.diagnostics) < MAX_DIAGNOSTICS:
            self.diagnostics.append(Diagnostic(position, message))
        else:
            self.more += 1

    def check(self) -> None:
        if self.diagnostics:
            raise IdlError(self.diagnostics, self.more)
