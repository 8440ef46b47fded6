"""The C preprocessor step (pcpp): #include with -I paths and the including
file's folder, #define, #if/#ifdef/#ifndef; #pragma lines pass through.

The output keeps ``#line N "file"`` markers (pcpp writes one whenever the
source file changes) so the lexer knows where every token came from, and
comments are kept (the lexer skips them) so line numbers stay exact.

pcpp itself has no bounds, so hostile IDL could make it recurse or expand
forever; this step bounds it:

* macro expansion: at most :data:`MAX_EXPANSION_TOKENS` tokens produced by
  macros in one run and :data:`MAX_EXPANSION_DEPTH` expansions inside one
  another (macros in macros, macros in arguments) (a chain of 26 ``#define Mi M(i-1) M(i-1)`` would make 2**26);
* ``#include``: a file that is still open (a file including itself, or two
  including each other) is refused with the chain of includes -- unless its
  include guard is defined, so the inclusion is empty; includes nest at most
  :data:`MAX_INCLUDE_DEPTH` deep.
"""

from __future__ import annotations

import io
import os

from pcpp import Preprocessor, OutputDirective, Action

from .diagnostics import Position, Reporter

MAX_EXPANSION_TOKENS = 1_000_000
MAX_EXPANSION_DEPTH = 100
MAX_INCLUDE_DEPTH = 100


class _ExpansionLimit(Exception):
    """Raised out of pcpp's expansion to abandon the run (its output would be useless)."""

    def __init__(self, position: Position, message: str):
        super().__init__(message)
        self.position = position
        self.message = message


class _IdlPreprocessor(Preprocessor):
    def __init__(self, reporter: Reporter):
        super().__init__()
        self.reporter = reporter
        self.line_directive = "#line"
        self.expansion_nesting = 0     # expand_macros calls open (pcpp recurses)
        self.expansion_site: Position | None = None   # the source line being expanded
        self.expanded_tokens = 0       # tokens macros produced so far, all nesting levels
        self.open_files: list[tuple[str, str]] = []  # (absolute path, as named): the include chain
        self.include_guards: dict[str, str] = {}     # absolute path -> its guard macro

    def on_error(self, file, line, msg):
        # pcpp names no place for some errors (an empty #if expression comes as
        # 'unknown', line 0): the directive being handled is where it is.
        if (not file or file == "unknown" or not line or line < 1) and \
                self.lastdirective is not None:
            file, line = self.lastdirective.source, self.lastdirective.lineno
        self.reporter.error(Position(file or "<idl>", max(1, line or 1), 1), msg)
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

    # --- bounded expansion ----------------------------------------------------
    def expand_macros(self, tokens, expanding_from=[]):  # noqa: B006 (pcpp's signature)
        # Nesting counts every expansion inside another: a macro's replacement
        # and the arguments of function-like macros (F(F(F(...)))) alike.
        if self.expansion_nesting >= MAX_EXPANSION_DEPTH:
            raise _ExpansionLimit(self.expansion_site or self._where(tokens),
                                  f"macros nested more than {MAX_EXPANSION_DEPTH} deep" +
                                  (f" (expanding {expanding_from[0]})" if expanding_from else ""))
        if self.expansion_nesting == 0:
            self.expansion_site = self._where(tokens)
        self.expansion_nesting += 1
        try:
            result = super().expand_macros(tokens, expanding_from)
        finally:
            self.expansion_nesting -= 1
        if self.expansion_nesting > 0:
            # A macro's replacement or argument (the outermost call is source text).
            self.expanded_tokens += len(result)
            if self.expanded_tokens > MAX_EXPANSION_TOKENS:
                raise _ExpansionLimit(self.expansion_site or self._where(tokens),
                                      f"macro expansion makes more than {MAX_EXPANSION_TOKENS:,} "
                                      "tokens" + (f" (expanding {expanding_from[0]})"
                                                  if expanding_from else ""))
        return result

    def _where(self, tokens) -> Position:
        for tok in tokens:
            if getattr(tok, "source", None) and getattr(tok, "lineno", None):
                return Position(tok.source, tok.lineno, 1)
        directive = self.lastdirective
        if directive is not None:
            return Position(directive.source, directive.lineno, 1)
        return Position(self.open_files[0][1] if self.open_files else "<idl>", 1, 1)

    # --- bounded includes -----------------------------------------------------
    def parsegen(self, input, source=None, abssource=None):
        self.open_files.append((os.path.normcase(abssource or ""), source or ""))
        try:
            yield from super().parsegen(input, source, abssource)
        finally:
            self.open_files.pop()

    def on_potential_include_guard(self, macro):
        # Called with the macro of a file's first #ifndef/#if !defined (None at
        # its start): the guard, if it spans the file.
        if macro is not None:
            self.include_guards.setdefault(os.path.normcase(self.source or ""), macro)
        super().on_potential_include_guard(macro)

    def on_file_open(self, is_system_include, includepath):
        handle = super().on_file_open(is_system_include, includepath)   # IOError: try the next -I
        key = os.path.normcase(os.path.abspath(includepath))
        open_paths = [path for path, _ in self.open_files]
        if key in open_paths:
            handle.close()
            guard = self.include_guards.get(key)
            if guard is not None and guard in self.macros:
                # Guarded: would include nothing (or, past its #endif, repeat itself).
                raise OutputDirective(Action.IgnoreAndRemove)
            chain = [named for _, named in self.open_files[open_paths.index(key):]]
            self.on_error(self.lastdirective.source, self.lastdirective.lineno,
                          "#include of a file that is still open: "
                          + " includes ".join(chain + [chain[0]]))
            raise OutputDirective(Action.IgnoreAndRemove)
        if len(self.open_files) >= MAX_INCLUDE_DEPTH:
            handle.close()
            self.on_error(self.lastdirective.source, self.lastdirective.lineno,
                          f"#include nested more than {MAX_INCLUDE_DEPTH} deep")
            raise OutputDirective(Action.IgnoreAndRemove)
        return handle


def preprocess(path: str, include_dirs=(), defines=None, reporter: Reporter | None = None) -> str:
    """The preprocessed text of the IDL file at ``path``.

    ``defines`` maps macro names to values (None for an empty definition).
    Errors go to ``reporter`` (a new one, checked here, if not given); a
    macro expansion over the limits raises :class:`IdlError` at once.
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
    if "\0" in text:
        # A binary file (a capture, an object file): one error, not one a byte.
        line = text.count("\n", 0, text.index("\0")) + 1
        reporter.error(Position(str(path), line, 1), "not IDL: the file holds binary data "
                                                     "(NUL bytes)")
        reporter.check()
    pp.parse(text, os.path.normpath(str(path)))
    out = io.StringIO()
    try:
        pp.write(out)
    except _ExpansionLimit as exc:
        reporter.error(exc.position, exc.message)
        reporter.check()    # nothing useful was made: stop here
    except Exception as exc:  # noqa: BLE001 - pcpp fails on some malformed directives
        # (IndexError for a bare "#pragma", ...): report where it was.
        directive = pp.lastdirective
        where = Position(directive.source, directive.lineno, 1) if directive is not None \
            else Position(str(path), 1, 1)
        reporter.error(where, f"the preprocessor cannot handle this line "
                              f"({type(exc).__name__}: {exc})")
        reporter.check()
    if own_reporter:
        reporter.check()
    return out.getvalue()
