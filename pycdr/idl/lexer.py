"""Tokens of preprocessed IDL.

Besides the IDL tokens the lexer yields two kinds of *meta* tokens that the
parser keeps in declaration order: ``pragma`` (the text after ``#pragma``)
and ``file`` (entering an included file, value ``"enter"``, or going back to
the including one, ``"leave"``) -- repository id prefixes are scoped by file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from .diagnostics import Position, Reporter

KEYWORDS = frozenset("""
abstract any attribute boolean case char component const consumes context custom
default double emits enum eventtype exception factory FALSE finder fixed float
getraises home import in inout interface local long module multiple native Object
octet oneway out primarykey private provides public publishes raises readonly
sequence setraises short string struct supports switch TRUE truncatable typedef
typeid typeprefix unsigned union uses ValueBase valuetype void wchar wstring
""".split())
_KEYWORDS_LOWER = {k.lower(): k for k in KEYWORDS}
# Keywords new in CORBA 3: an identifier that differs from one only in case
# is accepted (omniidl warns), as IDL written for CORBA 2 uses them.
CORBA3_KEYWORDS = frozenset("""component consumes emits eventtype finder getraises home
import multiple primarykey provides publishes setraises typeid typeprefix uses""".split())

PUNCTUATION = ("::", "<<", ">>", ";", "{", "}", ":", ",", "=", "+", "-", "(", ")",
               "<", ">", "[", "]", "'", '"', "\\", "|", "^", "&", "*", "/", "%", "~")


@dataclass
class Token:
    kind: str      # ident keyword int float fixed char wchar string wstring punct pragma file eof
    value: object
    pos: Position
    text: str = ""

    def __repr__(self):
        return f"Token({self.kind}, {self.value!r}, {self.pos})"


# Every alternative matches in time linear in its length: numbers are one
# alternative (classified afterwards) so a long run of digits is not tried
# once per numeric form, each backtracking over it.
_TOKEN_RE = re.compile(r"""
  (?P<ws>[ \t\r\f\v]+)
| (?P<newline>\n)
| (?P<linecomment>//[^\n]*)
| (?P<blockcomment>/\*.*?\*/)
| (?P<directive>\#[^\n]*)
| (?P<number>0[xX][0-9a-fA-F]+|(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?[dD]?)
| (?P<wchar>L'(?:\\.|[^'\\\n])(?:[^'\\\n]|\\.)*')
| (?P<wstring>L"(?:[^"\\\n]|\\.)*")
| (?P<char>'(?:[^'\\\n]|\\.)(?:[^'\\\n]|\\.)*')
| (?P<string>"(?:[^"\\\n]|\\.)*")
| (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
| (?P<punct>::|<<|>>|[;{}:,=+\-()<>\[\]|^&*/%~])
""", re.VERBOSE | re.DOTALL | re.MULTILINE)
# The most significant digits an integer literal of at most 64 bits can have
# (leading zeros aside), by base: longer ones are refused before conversion
# (Python's int() is quadratic in the digits and refuses more than 4,300).
_MAX_DIGITS = {10: 20, 16: 16, 8: 22}
MAX_INTEGER = 2**64 - 1

# A line marker: "#line N" or GNU's "# N", N then a blank, a file name (with GNU's
# flags) or the end ("#0nde" is no marker but a misspelt directive).
_LINE_RE = re.compile(r'^[ \t]*#[ \t]*(?:line[ \t]+)?(\d+)(?:[ \t]+"([^"]*)"(?:[ \t]+\d)*)?[ \t]*(?:$|//|/\*)')
_PRAGMA_RE = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+(.*)$")

_OCTAL_ESCAPE = re.compile(r"[0-7]{1,3}")
_HEX2_ESCAPE = re.compile(r"[0-9a-fA-F]{1,2}")
_HEX4_ESCAPE = re.compile(r"[0-9a-fA-F]{1,4}")
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "v": "\v", "b": "\b", "r": "\r", "f": "\f",
                   "a": "\a", "\\": "\\", "?": "?", "'": "'", '"': '"'}


def unescape(body: str, wide: bool) -> str:
    """The characters of a char/string literal body (IDL escapes as in C++)."""
    out = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        i += 1
        e = body[i]
        if e in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[e])
            i += 1
        elif e in "01234567":
            m = _OCTAL_ESCAPE.match(body, i)
            out.append(chr(int(m.group(), 8)))
            i += len(m.group())
        elif e == "x":
            m = _HEX2_ESCAPE.match(body, i + 1)
            if not m:
                raise ValueError("\\x needs hex digits")
            out.append(chr(int(m.group(), 16)))
            i += 1 + len(m.group())
        elif e == "u" and wide:
            m = _HEX4_ESCAPE.match(body, i + 1)
            if not m:
                raise ValueError("\\u needs hex digits")
            out.append(chr(int(m.group(), 16)))
            i += 1 + len(m.group())
        else:
            raise ValueError(f"unknown escape \\{e}")
    return "".join(out)


def shorten(text: str, limit: int = 40) -> str:
    """``text`` for a message: long literals cut in the middle, their length said."""
    if len(text) <= limit:
        return text
    return f"{text[:limit // 2]}...{text[-8:]} ({len(text):,} characters)"


def _number(text: str):
    """(token kind, value, problem or "") of a numeric literal."""
    if text[-1] in "dD":
        if "e" in text or "E" in text:
            return "fixed", text, f"fixed-point literal {shorten(text)} cannot have an exponent"
        return "fixed", text, ""
    if text[:2] in ("0x", "0X"):
        base, digits = 16, text[2:]
    elif "." in text or "e" in text or "E" in text:
        return "float", text, ""
    elif len(text) > 1 and text[0] == "0":
        base, digits = 8, text[1:]
        if not digits.isdigit() or "8" in digits or "9" in digits:
            return "int", 0, f"bad octal number {shorten(text)}"
    else:
        base, digits = 10, text
    significant = digits.lstrip("0")
    if len(significant) > _MAX_DIGITS[base] or int(significant or "0", base) > MAX_INTEGER:
        return "int", 0, (f"integer literal {shorten(text)} is too large "
                          "(IDL integers have at most 64 bits)")
    return "int", int(significant or "0", base), ""


def tokenize(text: str, reporter: Reporter, first_file: str = "<idl>",
             keyword_clashes: dict | None = None) -> list[Token]:
    """The tokens of ``text``. Unescaped identifiers that collide with a CORBA 2
    keyword (case aside) are entered in ``keyword_clashes`` (position -> keyword):
    declaring one is an error, referring to one (an escaped declaration) is not."""
    if keyword_clashes is None:
        keyword_clashes = {}
    main_file = os.path.abspath(first_file)
    tokens: list[Token] = []
    pieces: dict[int, list[str]] = {}   # token index -> the string literals it joins
    file = first_file
    file_stack: list[str] = []
    line = 1
    line_start = 0
    pos = 0
    end = len(text)
    while pos < end:
        m = _TOKEN_RE.match(text, pos)
        col = pos - line_start + 1
        where = Position(file, line, col)
        if m is None:
            reporter.error(where, f"unexpected character {text[pos]!r}")
            pos += 1
            continue
        kind = m.lastgroup
        value = m.group()
        pos = m.end()
        if kind == "newline":
            line += 1
            line_start = pos
            continue
        if kind in ("ws", "linecomment"):
            continue
        if kind == "blockcomment":
            line += value.count("\n")
            if "\n" in value:
                line_start = m.start() + value.rindex("\n") + 1
            continue
        if kind == "directive":
            if text[line_start:m.start()].strip():
                reporter.error(where, "'#' must start a line")
                continue
            pragma = _PRAGMA_RE.match(value)
            if pragma:
                tokens.append(Token("pragma", pragma.group(1).strip(), where))
                continue
            marker = _LINE_RE.match(value)
            if marker:
                new_file = marker.group(2)
                if new_file is not None and os.path.abspath(new_file) == main_file:
                    new_file = first_file   # the main file as the caller named it
                if new_file is not None and new_file != file:
                    if not tokens and not file_stack:
                        pass  # the main file's own first marker
                    elif new_file in file_stack:
                        while file_stack and file_stack[-1] != new_file:
                            file_stack.pop()
                            tokens.append(Token("file", "leave", where))
                        if file_stack:
                            file_stack.pop()
                        tokens.append(Token("file", "leave", where))
                    else:
                        file_stack.append(file)
                        tokens.append(Token("file", "enter", Position(new_file, 1, 1), new_file))
                    file = new_file
                # The marker names the number of the *next* line; C allows 1 to
                # 2147483647 (a longer digit string is refused before int()).
                digits = marker.group(1).lstrip("0")
                if not digits or len(digits) > 10 or int(digits) > 2147483647:
                    reporter.error(where, f"line marker {shorten(value.strip())!r}: the line "
                                          "number must be 1 to 2147483647")
                    continue
                line = int(digits) - 1
                continue
            reporter.error(where, f"unknown preprocessor directive {shorten(value.strip())!r}")
            continue
        if kind == "ident":
            low = value.lower()
            if value in KEYWORDS:
                tokens.append(Token("keyword", value, where, value))
            elif low in _KEYWORDS_LOWER:
                if low not in CORBA3_KEYWORDS:
                    keyword_clashes[where] = _KEYWORDS_LOWER[low]
                tokens.append(Token("ident", value, where, value))
            elif value.startswith("_"):
                tokens.append(Token("ident", value[1:], where, value))  # escaped identifier
            else:
                tokens.append(Token("ident", value, where, value))
        elif kind == "number":
            kind, number, problem = _number(value)
            if problem:
                reporter.error(where, problem)
            tokens.append(Token(kind, number, where, value))
        elif kind in ("char", "wchar", "string", "wstring"):
            wide = kind.startswith("w")
            body = value[2:-1] if wide else value[1:-1]
            try:
                chars = unescape(body, wide)
            except ValueError as exc:
                reporter.error(where, f"bad literal {shorten(value)}: {exc}")
                chars = "?"
            if kind in ("char", "wchar") and len(chars) != 1:
                reporter.error(where, f"character literal {shorten(value)} must hold one "
                                      "character")
                chars = chars[:1] or "?"
            if kind == "char" and ord(chars) > 255:
                reporter.error(where, f"character literal {shorten(value)} does not fit a char")
            if kind == "string" and "\0" in chars:
                reporter.error(where, "a string literal cannot contain a nul character")
            # Adjacent string literals concatenate (joined at the end: linear).
            if kind in ("string", "wstring") and tokens and tokens[-1].kind == kind:
                pieces.setdefault(len(tokens) - 1, [tokens[-1].value]).append(chars)
                continue
            tokens.append(Token(kind, chars, where, value))
        else:
            tokens.append(Token("punct", value, where, value))
    for index, parts in pieces.items():
        tokens[index].value = "".join(parts)
    while file_stack:
        file_stack.pop()
        tokens.append(Token("file", "leave", Position(file, line, 1)))
    tokens.append(Token("eof", None, Position(file, line, 1)))
    return tokens
