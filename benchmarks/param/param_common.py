"""What every Param_Test client sends (param.idl) and how the servers answer.

Every operation is ``T op(in T s1, inout T s2, out T s3)``; the servers answer with s1 as
the result, the new s2 and s3, so a call carries the value twice to the server and three
times back. Values: short 7; 32-character strings; sequences of 16 elements (16-character
strings, Fixed_Structs).
"""

from __future__ import annotations

import os
import sys
import time

PARAM_DIR = os.path.dirname(os.path.abspath(__file__))
IDL_PATH = os.path.join(PARAM_DIR, "param.idl")
BENCH_DIR = os.path.dirname(PARAM_DIR)
if BENCH_DIR not in sys.path:
    sys.path.insert(0, BENCH_DIR)      # for benchprocs, when run as a script

from benchprocs import OwnCPU, ServerCPU, process_cpu_seconds  # noqa: E402,F401

INTERFACE = "ParamTest::Param_Test"
OPERATIONS = ("test_short", "test_unbounded_string", "test_fixed_struct", "test_var_struct",
              "test_nested_struct", "test_strseq", "test_struct_sequence")
SEQUENCE_LENGTH = 16
STRING_LENGTH = 32


def make_value(operation: str, classes: dict):
    """The s1 (and s2) value of ``operation``; ``classes`` maps Fixed_Struct, Var_Struct,
    Nested_Struct to the ORB's struct classes (positional constructors, member order)."""
    fixed = classes["Fixed_Struct"]
    var = classes["Var_Struct"]

    def fixed_struct(i):
        return fixed(i, "x", i % 100, i % 256, 0.5, True, i * 1.25)

    def var_struct():
        return var(2.5, "a" * STRING_LENGTH, True, "b" * STRING_LENGTH, 3)
    if operation == "test_short":
        return 7
    if operation == "test_unbounded_string":
        return "s" * STRING_LENGTH
    if operation == "test_fixed_struct":
        return fixed_struct(1)
    if operation == "test_var_struct":
        return var_struct()
    if operation == "test_nested_struct":
        return classes["Nested_Struct"](var_struct())
    if operation == "test_strseq":
        return ["%016d" % i for i in range(SEQUENCE_LENGTH)]
    if operation == "test_struct_sequence":
        return [fixed_struct(i) for i in range(SEQUENCE_LENGTH)]
    raise ValueError(f"unknown operation {operation!r}")


def answer(s1, s2):
    """What both servers return: (result, new s2, s3)."""
    return s1, s1, s1


def members(value):
    """A value with struct instances replaced by their members, to compare across ORBs."""
    if isinstance(value, (list, tuple)):
        return [members(v) for v in value]
    fields = getattr(value, "__slots__", None) or [k for k in getattr(value, "__dict__", {})
                                                     if not k.startswith("_")]
    if fields and not isinstance(value, (str, bytes, int, float)):
        return {k: members(getattr(value, k)) for k in fields}
    return value


def calls_per_second(call, seconds: float, repeat: int, counted: list | None = None) \
        -> list[float]:
    """``repeat`` timings of calling ``call()`` for at least ``seconds`` each (the number
    of calls made is appended to ``counted``, if given)."""
    rates = []
    for _ in range(repeat):
        calls = 0
        started = time.perf_counter()
        deadline = started + seconds
        while True:
            for _ in range(10):
                call()
            calls += 10
            now = time.perf_counter()
            if now >= deadline:
                break
        rates.append(calls / (now - started))
        if counted is not None:
            counted.append(calls)
    return rates


def timed_row(operation: str, call, correct: bool, seconds: float, repeat: int,
              server_pid: int | None) -> dict:
    """A client's result row for ``operation``: calls/s of ``call()`` (calls_per_second),
    with the server's and this process's CPU microseconds per call over the timings."""
    counted: list = []
    meter, own = ServerCPU(server_pid), OwnCPU()
    rates = calls_per_second(call, seconds, repeat, counted)
    return {"operation": operation, "calls_per_s": rates, "correct": correct,
            "server_cpu_us": meter.per_call(sum(counted)),
            "client_cpu_us": own.per_call(sum(counted))}
