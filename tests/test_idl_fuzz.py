"""A fuzz target for the IDL front end (issue 25): generated and mutated IDL
goes through preprocessor, lexer, parser, checker and TypeCode builder, and only
pycdr's IdlError may come out -- never another exception, a hang or a crash --
within a time bound per input.  100 examples a test in the normal run;
PYCDR_HYPOTHESIS_EXAMPLES=5000 for a long soak."""

from __future__ import annotations

import glob
import os
import signal
import tempfile
import time

from hypothesis import HealthCheck, given, settings, strategies as st

from pycdr import idl

HERE = os.path.dirname(os.path.abspath(__file__))
SEED_FILES = sorted(glob.glob(os.path.join(HERE, "idl", "oracle", "*.idl")) +
                    glob.glob(os.path.join(HERE, "idl", "unit", "*.idl")) +
                    [os.path.join(HERE, "..", "conformance", "echo.idl")])
SEEDS = [open(p, encoding="utf-8").read() for p in SEED_FILES]
INCLUDE_DIRS = [os.path.join(HERE, "idl", "oracle"), os.path.join(HERE, "idl", "unit")]
SECONDS_PER_INPUT = 20      # a hang guard, far above the ~0.1 s an input takes

SETTINGS = settings(max_examples=int(os.environ.get("PYCDR_HYPOTHESIS_EXAMPLES", "100")),
                    deadline=None, derandomize=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Words, punctuation and directives of IDL, and the hostile pieces issue 25 found
# (self-inclusion, doubling macros, long numbers, deep nesting) in small doses.
VOCABULARY = (
    "module interface struct union switch case default enum typedef sequence const long "
    "short unsigned string wstring fixed valuetype eventtype abstract local custom "
    "truncatable supports exception raises oneway in out inout attribute readonly void "
    "any Object native typeid typeprefix factory public private TRUE FALSE float double "
    "char wchar octet boolean context getraises setraises import A B C _A a1 Echo"
).split() + [
    "<", ">", "{", "}", ";", ":", "::", ",", "(", ")", "[", "]", "=", "*", "+", "-", "~",
    "<<", ">>", "%", "/", "|", "&", "^", "0", "1", "-1", "0x7fffffff", "077", "08", "1.5",
    "1.5e3", "1.5d", ".5", "'c'", "'\\n'", "'\\x41'", '"s"', 'L"w"', "L'w'", "9" * 30,
    "0x" + "f" * 40, "1" * 5000, "(" * 50, ")" * 50, "/*", "*/", "//", "\\", "@", "\x00",
    "\u00aa", "\n", " ",
    '\n#include "fuzz.idl"\n', '\n#include "basic.idl"\n', '\n#include "nosuch.idl"\n',
    "\n#define A B\n", "\n#define B A A\n", "\n#define F(x) x x\n", "\n#ifdef A\n",
    "\n#ifndef G\n", "\n#define G\n", "\n#endif\n", "\n#else\n", "\n#if 1/0\n", "\n#error e\n",
    '\n#pragma prefix "p"\n', '\n#pragma ID A "IDL:x:1.0"\n', "\n#pragma version A 2.1\n",
    "\n#pragma\n", "\n#line 5\n",
]


def _token_soup():
    return st.lists(st.sampled_from(VOCABULARY), max_size=300).map(" ".join)


@st.composite
def _mutated_seed(draw):
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 8))):
        if not text:
            break
        at = draw(st.integers(0, len(text) - 1))
        length = draw(st.integers(1, 40))
        kind = draw(st.sampled_from(["delete", "insert", "duplicate", "replace"]))
        if kind == "delete":
            text = text[:at] + text[at + length:]
        elif kind == "duplicate":
            text = text[:at] + text[at:at + length] * draw(st.integers(2, 30)) + text[at:]
        else:
            piece = draw(st.sampled_from(VOCABULARY))
            text = text[:at] + piece + text[at + (length if kind == "replace" else 0):]
    return text


class _TooSlow(Exception):
    pass


def _alarm(signum, frame):
    raise _TooSlow(f"an input took more than {SECONDS_PER_INPUT} s")


def _compile(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "fuzz.idl")
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(text)
        previous = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, SECONDS_PER_INPUT)
        started = time.monotonic()
        try:
            idl.load(path, include_dirs=INCLUDE_DIRS, register=False)
        except idl.IdlError as e:
            assert e.diagnostics, "an IdlError without a diagnostic"
            for d in e.diagnostics:
                assert d.position.line >= 1 and d.position.column >= 1, str(d)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        assert time.monotonic() - started < SECONDS_PER_INPUT


@SETTINGS
@given(_mutated_seed())
def test_mutated_idl_gives_only_diagnostics(text):
    _compile(text)


@SETTINGS
@given(_token_soup())
def test_generated_idl_gives_only_diagnostics(text):
    _compile(text)
