"""The IDL front end: OMG IDL (CORBA 3.x) to TypeCodes, interface
descriptions and Python classes, with repository ids as CORBA specifies.

    >>> from pycdr import idl
    >>> m = idl.load("Echo.idl", include_dirs=["/usr/share/idl/omniORB"])
    >>> m.types["Demo::Point"]            # a TypeCode
    >>> m.interfaces["Demo::Echo"].operation("echo_point").params
    >>> Point = m["Demo::Point"]          # the Python class, registered by repo id

Steps: :mod:`.preprocess` (pcpp), :mod:`.lexer`, :mod:`.parser` (syntax tree,
:mod:`.ast`), :mod:`.checker` (scopes, names, constants, repository ids),
:mod:`.typecodes`, :mod:`.loader`.  Every problem is reported with
file:line:column in one :class:`IdlError`.
"""

from __future__ import annotations

import os
import tempfile

from .checker import Checker
from .diagnostics import Diagnostic, IdlError, Position, Reporter  # noqa: F401
from .lexer import tokenize
from .loader import build_module
from .model import Attribute, IdlModule, Interface, Operation, Param  # noqa: F401
from .parser import Parser
from .preprocess import preprocess
from .typecodes import TypeNestingError


# The OMG IDL files pycdr ships (CosNaming.idl), installed as package data.
STANDARD_IDL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "standard")


def standard_idl(name: str) -> str:
    """The path of a shipped IDL file: ``standard_idl("CosNaming.idl")``."""
    return os.path.join(STANDARD_IDL_DIR, name)


def load(path, include_dirs=(), defines=None, register: bool = True) -> IdlModule:
    """Compile the IDL file at ``path``; raises :class:`IdlError` listing every problem.

    ``include_dirs`` are the -I folders (the including file's folder is always
    searched first for ``#include "..."``); ``defines`` maps macro names to
    values (None: defined empty).  With ``register`` the Python classes are
    registered by repository id for the decoders.
    """
    path = os.fspath(path)
    reporter = Reporter()
    text = preprocess(path, include_dirs, defines, reporter)
    keyword_clashes: dict = {}
    tokens = tokenize(text, reporter, path, keyword_clashes)
    parser = Parser(tokens, reporter)
    try:
        tree = parser.parse_specification()
    except RecursionError:
        # Absurdly deep nesting (expressions, sequences, modules): refuse it.
        reporter.error(parser.position(), "declarations or expressions nested too deeply")
    reporter.check()   # do not check names on a tree with syntax errors
    checker = Checker(reporter, keyword_clashes)
    try:
        checker.check(tree)
    except RecursionError:
        reporter.error(checker.position(path), "declarations or expressions nested too deeply")
    reporter.check()
    try:
        module = build_module(path, checker, register)
    except TypeNestingError as exc:
        reporter.error(exc.position, exc.message)
    reporter.check()
    return module


def load_string(source: str, include_dirs=(), defines=None, register: bool = True,
                name: str = "<string>.idl") -> IdlModule:
    """Compile IDL given as text (written to a temporary file so errors can
    show an excerpt while it exists)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, os.path.basename(name))
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        return load(path, include_dirs, defines, register)
