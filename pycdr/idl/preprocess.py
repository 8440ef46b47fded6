"""The C preprocessor step (pcpp): #include with -I paths and the including
file's folder, #define, #if/#ifdef/#ifndef; #pragma lines pass through.

The output keeps ``#line N "file"`` markers (pcpp writes one whenever the
source file changes) so the lexer knows where every token came from, and
comments are kept (the lexer skips them) so line numbers stay exact.
"""

from __future__ import annotations

import io
import os

from pcpp import Preprocessor, OutputDirective, Action

from .diagnostics import Position, Reporter


class _IdlPreprocessor(Preprocessor):
    def __init__(self, reporter: Reporter):
        super().__init__()
        self.reporter = reporter
        self.line_directive = "#line"

    def on_error(self, file, line, msg):
        self.reporter.error(Position(file, line, 1), msg)
        self.return_code += 1

    def on_include_not_found(self, is_malformed, is_system_include, curdir, includepath):
        what = "malformed #include" if is_malformed else f"cannot find include file {includepath!r}"
        self.on_error(self.lastdirective.source, self.lastdirective.lineno, what)
        raise OutputDirective(Action.IgnoreAndRemove)

    def on_comment(self, tok):
        return True  # keep comments: removing multi-line ones would shift line numbers

    def on_directive_unknown(self, directive, toks, ifpassthru, precedingtoks):
        if directive.value == "error":
            self.on_error(directive.source, directive.lineno,
                          "#error " + "".join(t.value for t in toks).strip())
            return True
        return None  # #pragma and the like go through to the parser


def preprocess(path: str, include_dirs=(), defines=None, reporter: Reporter | None = None) -> str:
    """The preprocessed text of the IDL file at ``path``.

    ``defines`` maps macro names to values (None for an empty definition).
    Errors go to ``reporter`` (a new one, checked here, if not given).
    """
    own_reporter = reporter is None
    reporter = reporter or Reporter()
    pp = _IdlPreprocessor(reporter)
    # The including file's folder comes first for "..." includes (pcpp does
    # that itself); -I folders after it, in order.
    for folder in include_dirs:
        pp.add_path(str(folder))
    for name, value in (defines or {}).items():
        pp.define(f"{name} {'' if value is None else value}")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as exc:
        reporter.error(Position(str(path), 1, 1), f"cannot read: {exc.strerror}")
        reporter.check()
    pp.parse(text, os.path.normpath(str(path)))
    out = io.StringIO()
    pp.write(out)
    if own_reporter:
        reporter.check()
    return out.getvalue()
