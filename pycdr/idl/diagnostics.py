"""Errors of the IDL front end: every one carries file:line:column and a caret excerpt.

The front end keeps going after an error where it can (the parser skips to the
next declaration, the checker to the next name), so one run reports several
problems; they are raised together as one :class:`IdlError`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import PycdrError


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
                        return f"{text}\n{' ' * (self.position.column - 1)}^"
        except OSError:
            pass
        return ""

    def __str__(self) -> str:
        text = f"{self.position}: error: {self.message}"
        excerpt = self.excerpt()
        return f"{text}\n{excerpt}" if excerpt else text


class IdlError(PycdrError):
    """IDL that cannot be compiled; ``diagnostics`` lists every problem found."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(str(d) for d in self.diagnostics))


class Reporter:
    """Collects diagnostics; ``check()`` raises them all at once."""

    def __init__(self):
        self.diagnostics: list[Diagnostic] = []

    def error(self, position: Position, message: str) -> None:
        self.diagnostics.append(Diagnostic(position, message))

    def check(self) -> None:
        if self.diagnostics:
            raise IdlError(self.diagnostics)
