"""Marshal microbenchmark: encode and decode MB/s of pycdr next to omniORBpy, pycdr2
and the bytes-copy ceiling, all measured in one run (issue 2, issue 7 "Marshal").

    python benchmarks/bench_marshal.py                     # full run, tables on stdout
    python benchmarks/bench_marshal.py --quick             # smoke run in seconds
    python benchmarks/bench_marshal.py --types double,BinStruct --sizes 64,128 --json out.json

Importable: ``run(...)`` returns the results as a dict (see its docstring) and
``format_tables(results)`` renders them, so ``pycdr bench marshal`` can wrap both.

What is measured, per type, payload size and byte order:
- pycdr:      ``pycdr.encode(tc, value, little=...)`` / ``pycdr.decode(tc, data, little=...)``
              (label ``pycdr-C`` when the C extension runs the plans, ``pycdr-Py`` otherwise);
- omniORBpy:  ``omniORB.cdrMarshal(tc, value, endian)`` / ``omniORB.cdrUnmarshal(tc, data,
              endian)`` (the raw form, no byte-order octet: the same bytes as pycdr.encode);
- pycdr2:     ``W(data=...).serialize(endianness=...)`` / ``W.deserialize(data)`` where W is
              ``struct W { sequence<T> data; }`` (pycdr2 only marshals top-level structs; it
              adds its 4-byte XCDR header, and plain XCDR1 is CORBA CDR from there on);
- pycdr-arr:  pycdr with the opt-in array mapping (sequence<short|long|double> only):
              ``encode`` of an ``array.array``, ``decode(..., numeric_arrays=True)``; its
              ratio to the copy ceiling is the "arr/copy" column (target >= 25 %);
- stdlib:     CPython's standard library converting the same numbers, no CDR around them
              (sequence<short|long|double> only): ``struct.Struct(fmt).pack(*list)`` to
              encode; ``array.frombytes`` + ``byteswap`` (when the order is not the
              machine's) + ``tolist()`` to decode, the faster of the two modules for each.
              A reference, not a competitor: it reads (or makes) exactly the Python numbers
              the list mapping asks for, so its ratios to omniORBpy and pycdr2
              ("std/omniORB", "std/pycdr2") show how much of a lead over them is left once
              those objects are paid for;
- copy:       ``bytes(memoryview(data))`` of the same payload, the ceiling.
MB/s is the pycdr payload size in bytes / 1e6 over the best time of ``repeat`` timings,
each the mean of enough calls to last ``min_time`` seconds (timeit's autorange).  The
timings of one type, size and byte order are interleaved (every library once, then
every library again), so a change of machine speed during the run does not land on
one library only.

Everyone marshals the same data: the values are made for pycdr, omniORB's come from
``cdrUnmarshal`` of pycdr's encapsulation and pycdr2's are built member by member; every
decoder is timed on pycdr's bytes, after checking it decodes them to the value it was
given to encode (omniORB's and pycdr2's own encodings are checked to decode back too).

Value mappings differ where the libraries differ: sequence<octet> is bytes in all three;
sequence<char> is str in pycdr and omniORBpy but a list of 1-character str in pycdr2;
structs are instances everywhere (pycdr2: dataclasses).

Peers: omniORBpy (C++ marshaling under Python) and pycdr2 (pure Python).  Floor: the
copy column for every type, and for the numeric lists the stdlib column: it makes (or
reads) exactly the Python ints and floats the list mapping asks for with C loops and
nothing else.  Where std/omniORB is about 1x, omniORBpy already decodes numbers as fast
as CPython makes them, and a lead over it of 1.5x would mean making ints and floats 1.5x
faster than ``array.tolist()`` does.  Targets: list decoding of short, long and double at
least 1.0x stdlib on the C path and 0.9x on the Python path; the array mapping at least
25 % of the copy; the Python path faster than pycdr2.
"""

from __future__ import annotations

import argparse
import array
import contextlib
import json
import os
import platform
import random
import struct
import sys
import time
import timeit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results as results_format  # noqa: E402

# The run benchmarks/README.md's table comes from (every type, size and byte order, best
# of 3): about 2 minutes on 2 cores (92 s of CPU).
FULL_RUN = "python benchmarks/bench_marshal.py --repeat 3 --results"

SIZES_KB = (1, 8, 64, 128)
TYPES = ("short", "long", "double", "octet", "char", "string", "BinStruct", "CharLongLong")
STRING_LENGTH = 128             # characters in each element of sequence<string>
IMPLS = ("pycdr", "pycdr-py", "pycdr-arr", "omniORBpy", "pycdr2", "stdlib", "copy")
# The array mapping's array.array typecodes of the numeric types (CDR long is 32 bits).
ARRAY_CODES = {"short": "h", "long": "i", "double": "d"}


# --------------------------------------------------------------------------
# Which pycdr runs
# --------------------------------------------------------------------------
def pycdr_path() -> str:
    """'c' when pycdr's C extension (pycdr.codec._speedups) is loaded, else 'python'.

    PYCDR_PURE=1 in the environment before pycdr is imported forces the Python path
    (issue 7); main() sets it for --impl python.
    """
    import pycdr  # noqa: F401  (importing pycdr loads the extension if there is one)
    return "c" if "pycdr.codec._speedups" in sys.modules else "python"



@contextlib.contextmanager
def pure_python():
    """pycdr with its C path switched off (pycdr-Python in a C-path run)."""
    from pycdr.codec import _cmarshal
    _cmarshal.enabled = False
    try:
        yield
    finally:
        _cmarshal.enabled = True

# --------------------------------------------------------------------------
# The types under test, in the three libraries' terms
# --------------------------------------------------------------------------
class Case:
    """One element type: its pycdr sequence TypeCode and how to make pycdr element values;
    pycdr2_wrapper / to_pycdr2 are filled in by _add_pycdr2 when pycdr2 is installed."""

    def __init__(self, name, seq_tc, wire_stride, make_element, whole=None):
        self.name = name
        self.tc = seq_tc
        self.wire_stride = wire_stride      # CDR octets per element, padding included
        self.make_element = make_element    # rng -> one pycdr element value
        self.whole = whole                  # list of elements -> pycdr sequence value
        self.pycdr2_wrapper = None          # pycdr2 class of struct W { sequence<T> data; }
        self.to_pycdr2 = None               # pycdr element -> pycdr2 element (None: same)


def _cases():
    """The benchmark's types, keyed by name."""
    from pycdr.codec import tc
    from pycdr.codec import values

    bin_struct_tc = tc.struct("IDL:BinStruct:1.0", "BinStruct", [
        ("s", tc.short), ("c", tc.char), ("l", tc.long), ("o", tc.octet),
        ("d", tc.double), ("pad", tc.array(tc.octet, 8))])
    char_ll_tc = tc.struct("IDL:CharLongLong:1.0", "CharLongLong", [
        ("c1", tc.char), ("ll", tc.longlong)])
    BinStruct = values.class_for(bin_struct_tc)
    CharLongLong = values.class_for(char_ll_tc)

    def letter(rng):
        return chr(rng.randrange(0x20, 0x7f))   # ASCII: pycdr2 writes char as signed 'b'

    def make_bin_struct(rng):
        return BinStruct(rng.randrange(-2**15, 2**15), letter(rng), rng.randrange(-2**31, 2**31),
                         rng.randrange(256), rng.uniform(-1e6, 1e6), rng.randbytes(8))

    cases = [
        Case("short", tc.sequence(tc.short), 2, lambda rng: rng.randrange(-2**15, 2**15)),
        Case("long", tc.sequence(tc.long), 4, lambda rng: rng.randrange(-2**31, 2**31)),
        Case("double", tc.sequence(tc.double), 8, lambda rng: rng.uniform(-1e6, 1e6)),
        Case("octet", tc.sequence(tc.octet), 1, lambda rng: rng.randrange(256), whole=bytes),
        Case("char", tc.sequence(tc.char), 1, letter, whole="".join),
        # 4 (length) + 128 + NUL = 133, padded to 136 before the next length
        Case("string", tc.sequence(tc.string), 136,
             lambda rng: "".join(letter(rng) for _ in range(STRING_LENGTH))),
        Case("BinStruct", tc.sequence(bin_struct_tc), 32, make_bin_struct),
        Case("CharLongLong", tc.sequence(char_ll_tc), 16,
             lambda rng: CharLongLong(letter(rng), rng.randrange(-2**63, 2**63))),
    ]
    cases = {case.name: case for case in cases}
    _add_pycdr2(cases)
    return cases


def pycdr2_version():
    """The installed pycdr2's version, or None."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("pycdr2")
    except PackageNotFoundError:
        return None


def _add_pycdr2(cases):
    """pycdr2's classes for the same types (pycdr2 marshals top-level structs only)."""
    if pycdr2_version() is None:
        return
    from pycdr2 import make_idl_struct
    from pycdr2.types import array, char, float64, int16, int32, int64, sequence, uint8

    BinStruct2 = make_idl_struct("BinStruct", "BinStruct", {
        "s": int16, "c": char, "l": int32, "o": uint8, "d": float64, "pad": array[uint8, 8]})
    CharLongLong2 = make_idl_struct("CharLongLong", "CharLongLong", {"c1": char, "ll": int64})
    element_types = {"short": sequence[int16], "long": sequence[int32],
                     "double": sequence[float64], "octet": bytes, "char": sequence[char],
                     "string": sequence[str], "BinStruct": sequence[BinStruct2],
                     "CharLongLong": sequence[CharLongLong2]}
    for name, data_type in element_types.items():
        cases[name].pycdr2_wrapper = make_idl_struct(f"Seq_{name}", f"Seq_{name}",
                                                     {"data": data_type})
    cases["char"].to_pycdr2 = str    # each character of pycdr's str
    cases["BinStruct"].to_pycdr2 = lambda v: BinStruct2(s=v.s, c=v.c, l=v.l, o=v.o, d=v.d,
                                                        pad=v.pad)
    cases["CharLongLong"].to_pycdr2 = lambda v: CharLongLong2(c1=v.c1, ll=v.ll)


def _pycdr_value(case, size_bytes, rng):
    """A pycdr sequence value whose CDR encoding is at most about size_bytes."""
    count = max(1, (size_bytes - 8) // case.wire_stride)
    elements = [case.make_element(rng) for _ in range(count)]
    return case.whole(elements) if case.whole else elements


def _pycdr2_value(case, pycdr_value):
    if case.to_pycdr2 is not None:
        data = [case.to_pycdr2(v) for v in pycdr_value]
    else:
        data = pycdr_value
    return case.pycdr2_wrapper(data=data)


# --------------------------------------------------------------------------
# omniORBpy
# --------------------------------------------------------------------------
_omni_module = None


def omni():
    """omniORB with an initialised ORB (cdrMarshal needs one), or None if not installed."""
    global _omni_module
    if _omni_module is None:
        try:
            import omniORB
            from omniORB import CORBA
        except ImportError:
            return None
        CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
        _omni_module = omniORB
    return _omni_module


def omni_typecode(tc):
    """omniORB's TypeCode for a pycdr TypeCode, built from pycdr's CDR encoding of it."""
    from omniORB import CORBA
    from pycdr.codec.tcmarshal import encode_typecode_encapsulation
    return omni().cdrUnmarshal(CORBA.TC_TypeCode, encode_typecode_encapsulation(tc))


# --------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------
def calls_per_timing(fn, *, min_time: float) -> int:
    """How many calls of ``fn`` make one timing last >= min_time (timeit's autorange
    with our own floor)."""
    timer = timeit.Timer(fn)
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= min_time:
            return number
        number = max(number * 2, int(number * min_time / max(elapsed, 1e-9) * 1.2))


def best_seconds_interleaved(entries: dict, *, repeat: int, min_time: float) -> dict:
    """Best seconds per call of each ``entries[key] = (fn, context)``, where context
    (None or a context-manager factory) is entered around each of fn's timings.

    The repetitions are interleaved: pass 1 times every entry once, then pass 2,
    and so on, and each entry keeps its best pass.  A shared machine changes speed
    by tens of percent over seconds; timing one entry's repetitions back to back and
    then the next entry's put that drift into the ratios between them (this made
    the same build's array-mapping/copy ratio read 20 % in one run and 40 % in the
    next)."""
    plans = {}
    for key, (fn, context) in entries.items():
        with (context or contextlib.nullcontext)():
            plans[key] = (timeit.Timer(fn), calls_per_timing(fn, min_time=min_time), context)
    best = {key: float("inf") for key in entries}
    for _ in range(repeat):
        for key, (timer, number, context) in plans.items():
            with (context or contextlib.nullcontext)():
                best[key] = min(best[key], timer.timeit(number) / number)
    return best


# --------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------
class BenchmarkError(Exception):
    """A library did not round-trip the benchmark's data: its numbers would be meaningless."""


def _same(a, b) -> bool:
    return a == b or (isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and
                      all(vars_or_value(x) == vars_or_value(y) for x, y in zip(a, b)))


def vars_or_value(v):
    """Struct instances of different libraries compare by their members."""
    if hasattr(v, "__dict__") and v.__dict__:
        return {k: x for k, x in vars(v).items() if not k.startswith("_")}
    if hasattr(v, "__slots__"):
        return {k: getattr(v, k) for k in v.__slots__}
    return v


def _check(what, got, expected):
    if not _same(got, expected):
        raise BenchmarkError(f"{what}: decoded value differs from the encoded one")


def measure_case(case, size_kb: int, little: bool, *, repeat: int, min_time: float,
                 impls=IMPLS, seed: int = 2) -> list[dict]:
    """Encode and decode MB/s of one type, payload size and byte order, for each impl."""
    import pycdr

    rng = random.Random(f"{seed}/{case.name}/{size_kb}")
    tc = case.tc
    value = _pycdr_value(case, size_kb * 1024, rng)
    data = pycdr.encode(tc, value, little=little)
    _check("pycdr", pycdr.decode(tc, data, little=little), value)
    payload = len(data)
    entries = {}          # (impl, op) -> (function to time, context around it)

    def timed(impl, op, fn, context=None):
        entries[impl, op] = (fn, context)

    encode, decode = pycdr.encode, pycdr.decode
    if "pycdr" in impls:
        timed("pycdr", "encode", lambda: encode(tc, value, little=little))
        timed("pycdr", "decode", lambda: decode(tc, data, little=little))
    if "pycdr-py" in impls and pycdr_path() == "c":
        # The same calls with the C path switched off: pycdr-Python in the same run.
        with pure_python():
            _check("pycdr-py", pycdr.decode(tc, data, little=little), value)
        timed("pycdr-py", "encode", lambda: encode(tc, value, little=little), pure_python)
        timed("pycdr-py", "decode", lambda: decode(tc, data, little=little), pure_python)
    if "pycdr-arr" in impls and case.name in ARRAY_CODES:
        numbers = array.array(ARRAY_CODES[case.name], value)
        _check("pycdr-arr", decode(tc, data, little=little, numeric_arrays=True), numbers)
        _check("pycdr-arr", encode(tc, numbers, little=little), data)
        timed("pycdr-arr", "encode", lambda: encode(tc, numbers, little=little))
        timed("pycdr-arr", "decode", lambda: decode(tc, data, little=little, numeric_arrays=True))
    if "omniORBpy" in impls and omni() is not None:
        omniORB = omni()
        otc = omni_typecode(tc)
        ovalue = omniORB.cdrUnmarshal(otc, pycdr.encode_encapsulation(tc, value, little=little))
        endian = 1 if little else 0
        _check("omniORBpy", omniORB.cdrUnmarshal(otc, data, endian), ovalue)
        _check("omniORBpy", omniORB.cdrUnmarshal(otc, omniORB.cdrMarshal(otc, ovalue, endian),
                                                 endian), ovalue)
        marshal, unmarshal = omniORB.cdrMarshal, omniORB.cdrUnmarshal
        timed("omniORBpy", "encode", lambda: marshal(otc, ovalue, endian))
        timed("omniORBpy", "decode", lambda: unmarshal(otc, data, endian))
    if "pycdr2" in impls and case.pycdr2_wrapper is not None:
        from pycdr2._support import Endianness
        wrapper = case.pycdr2_wrapper
        value2 = _pycdr2_value(case, value)
        endianness = Endianness.Little if little else Endianness.Big
        # XCDR1 header: representation identifier CDR_BE 00 00 / CDR_LE 00 01, options 00 00
        data2 = bytes([0, 1 if little else 0, 0, 0]) + data
        _check("pycdr2", wrapper.deserialize(data2).data, value2.data)
        _check("pycdr2", wrapper.deserialize(value2.serialize(endianness=endianness)).data,
               value2.data)
        timed("pycdr2", "encode", lambda: value2.serialize(endianness=endianness))
        timed("pycdr2", "decode", lambda: wrapper.deserialize(data2))
    if "stdlib" in impls and case.name in ARRAY_CODES:
        std_encode, std_decode = _stdlib_reference(ARRAY_CODES[case.name], data, little)
        _check("stdlib", std_decode(), value)
        _check("stdlib", std_encode(value), data[len(data) - len(std_encode(value)):])
        timed("stdlib", "encode", lambda: std_encode(value))
        timed("stdlib", "decode", std_decode)
    if "copy" in impls:
        view = memoryview(data)
        timed("copy", "encode", lambda: bytes(view))

    timings = best_seconds_interleaved(entries, repeat=repeat, min_time=min_time)
    if ("copy", "encode") in timings:
        timings["copy", "decode"] = timings["copy", "encode"]

    return [{"type": case.name, "size_kb": size_kb, "payload_bytes": payload,
             "order": "LE" if little else "BE", "impl": impl, "op": op,
             "seconds": seconds, "mb_per_s": payload / seconds / 1e6}
            for (impl, op), seconds in timings.items()]


def _stdlib_reference(code: str, data: bytes, little: bool):
    """(encode, decode) of the numbers of ``data`` (a CDR sequence of array typecode
    ``code``) by the standard library: encode(list) gives the elements' bytes,
    decode() the list."""
    count = int.from_bytes(data[:4], "little" if little else "big")
    packer = struct.Struct(f"{'<' if little else '>'}{count}{code}")
    elements = memoryview(data)[len(data) - packer.size:]      # after length and padding
    swap = little != (sys.byteorder == "little")

    def decode():
        numbers = array.array(code)
        numbers.frombytes(elements)
        if swap:
            numbers.byteswap()
        return numbers.tolist()

    def encode(values):
        return packer.pack(*values)

    return encode, decode


def run(*, sizes=SIZES_KB, types=TYPES, orders=("BE", "LE"), quick: bool = False,
        repeat: int | None = None, min_time: float | None = None, impls=IMPLS,
        progress=None) -> dict:
    """Measure every (type, size in KB, byte order) and return::

        {"meta": {"pycdr": "python"|"c", "python": ..., "machine": ..., "repeat": ...,
                  "min_time": ..., "omniORBpy": bool, "pycdr2": version},
         "results": [{"type", "size_kb", "payload_bytes", "order", "impl", "op",
                      "seconds", "mb_per_s"}, ...]}

    impl is one of IMPLS; op is "encode" or "decode". ``quick`` means few, short timings
    (numbers only good for a smoke test). ``progress`` is called with a line of text
    before each measurement.
    """
    if repeat is None:
        repeat = 2 if quick else 5
    if min_time is None:
        min_time = 0.002 if quick else 0.05
    unknown = [t for t in types if t not in TYPES]
    if unknown:
        raise ValueError(f"unknown types {unknown}; known: {', '.join(TYPES)}")
    cases = _cases()
    results = []
    for name in types:
        for size_kb in sizes:
            for order in orders:
                if progress:
                    progress(f"{name} {size_kb} KB {order}")
                results += measure_case(cases[name], size_kb, order == "LE", repeat=repeat,
                                        min_time=min_time, impls=impls)
    meta = {"pycdr": pycdr_path(), "python": platform.python_version(),
            "machine": f"{platform.machine()} {os.cpu_count()} CPUs",
            "repeat": repeat, "min_time": min_time, "omniORBpy": omni() is not None,
            "pycdr2": pycdr2_version()}
    return {"meta": meta, "results": results}


# --------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------
def _ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "-"


def _percent(a, b):
    return f"{100 * a / b:.0f}%" if a and b else "-"


def format_tables(results: dict) -> str:
    """One table per type: MB/s of each implementation and pycdr's ratios to the others."""
    meta = results["meta"]
    label = "pycdr-C" if meta["pycdr"] == "c" else "pycdr-Py"
    mbps = {}
    for row in results["results"]:
        mbps[row["type"], row["size_kb"], row["order"], row["op"], row["impl"]] = row["mb_per_s"]
    lines = [f"MB/s (payload bytes / best time); {label} = pycdr "
             f"({meta['pycdr']} path), Python {meta['python']}, {meta['machine']}, "
             f"best of {meta['repeat']}, pycdr2 {meta['pycdr2']}"]
    # pycdr-Py (the Python path measured in the same run) only appears when pycdr runs C.
    impls = [impl for impl in IMPLS if impl not in ("pycdr-py", "pycdr-arr", "stdlib") or
             any(row["impl"] == impl for row in results["results"])]
    names = {"pycdr": label, "pycdr-py": "pycdr-Py", "pycdr-arr": label + "-arr"}
    ratio_to = [impl for impl in ("pycdr-py", "omniORBpy", "pycdr2") if impl in impls]
    ratio_names = {"pycdr-py": "/Py", "omniORBpy": "/omniORB", "pycdr2": "/pycdr2"}
    # The Python path's own target is against pycdr2 (issue 7): its ratio too.
    py_to_pycdr2 = "pycdr-py" in impls and "pycdr2" in impls
    # The standard library against the peers: about the most a list-mapping lead over
    # them can be once the Python numbers themselves are made (or read).
    std_to = [impl for impl in ("omniORBpy", "pycdr2") if "stdlib" in impls and impl in impls]
    std_names = {"omniORBpy": "std/omniORB", "pycdr2": "std/pycdr2"}
    header = (f"{'size':>6} {'order':>5} {'op':>6} "
              + " ".join(f"{names.get(impl, impl):>9}" for impl in impls) + " "
              + " ".join(f"{ratio_names[impl]:>9}" for impl in ratio_to)
              + (f" {'Py/pycdr2':>9}" if py_to_pycdr2 else "")
              + (f" {'arr/copy':>9}" if "pycdr-arr" in impls else "")
              + "".join(f" {std_names[impl]:>11}" for impl in std_to))
    seen_types = list(dict.fromkeys(row["type"] for row in results["results"]))
    keys = list(dict.fromkeys((r["size_kb"], r["order"], r["op"]) for r in results["results"]))
    for name in seen_types:
        lines += ["", f"sequence<{name}>", header, "-" * len(header)]
        for size_kb, order, op in keys:
            got = {impl: mbps.get((name, size_kb, order, op, impl)) for impl in impls}
            if got["pycdr"] is None:
                continue
            cells = [f"{got[impl]:9.1f}" if got[impl] is not None else f"{'-':>9}"
                     for impl in impls]
            ratios = [f"{_ratio(got['pycdr'], got[impl]):>9}" for impl in ratio_to]
            if py_to_pycdr2:
                ratios.append(f"{_ratio(got['pycdr-py'], got['pycdr2']):>9}")
            if "pycdr-arr" in impls:      # the array mapping against the copy ceiling
                ratios.append(f"{_percent(got['pycdr-arr'], got['copy']):>9}")
            ratios += [f"{_ratio(got['stdlib'], got[impl]):>11}" for impl in std_to]
            lines.append(f"{str(size_kb) + ' KB':>6} {order:>5} {op:>6} " + " ".join(cells)
                         + " " + " ".join(ratios))
    return "\n".join(lines)


def results_tables(results: dict) -> list:
    """The tables of format_tables as a results file's rows: MB/s and the same ratios."""
    import results as results_format
    ratio = results_format.ratio
    mbps = {(r["type"], r["size_kb"], r["order"], r["op"], r["impl"]): r["mb_per_s"]
            for r in results["results"]}
    impls = [impl for impl in IMPLS if any(row["impl"] == impl for row in results["results"])]
    label = "pycdr-C" if results["meta"]["pycdr"] == "c" else "pycdr-Py"
    names = {"pycdr": label, "pycdr-py": "pycdr-Py", "pycdr-arr": label + "-arr"}
    r = results_format.RATIO
    columns = (["type", "size KB", "order", "op"] + [f"{names.get(i, i)} MB/s" for i in impls]
               + [f"pycdr/Py {r}", f"pycdr/omniORBpy {r}", f"pycdr/pycdr2 {r}",
                  f"Py/pycdr2 {r}", f"arr/copy {r}", f"stdlib/omniORBpy {r}",
                  f"stdlib/pycdr2 {r}"])
    rows = []
    keys = dict.fromkeys((r_["type"], r_["size_kb"], r_["order"], r_["op"])
                         for r_ in results["results"])
    for name, size_kb, order, op in keys:
        got = {impl: mbps.get((name, size_kb, order, op, impl)) for impl in IMPLS}
        if got["pycdr"] is None:
            continue
        rows.append([name, size_kb, order, op]
                    + [round(got[i], 1) if got[i] is not None else None for i in impls]
                    + [ratio(got["pycdr"], got["pycdr-py"]),
                       ratio(got["pycdr"], got["omniORBpy"]),
                       ratio(got["pycdr"], got["pycdr2"]),
                       ratio(got["pycdr-py"], got["pycdr2"]),
                       ratio(got["pycdr-arr"], got["copy"]),
                       ratio(got["stdlib"], got["omniORBpy"]),
                       ratio(got["stdlib"], got["pycdr2"])])
    return [results_format.table("MB/s (payload bytes / 1e6 over the best time) and ratios",
                                 columns, rows)]


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------
def _comma_list(text):
    return [item.strip() for item in text.split(",") if item.strip()]


def _sizes(text):
    sizes = []
    for item in _comma_list(text):
        number = item.upper().removesuffix("KB").removesuffix("K")
        if not number.isdigit() or int(number) == 0:
            raise argparse.ArgumentTypeError(f"bad size {item!r}: a number of KB, e.g. 64 or 64K")
        sizes.append(int(number))
    return sizes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=_sizes, default=None,
                        help="payload sizes in KB, comma-separated (default 1,8,64,128; "
                             "with --quick: 1)")
    parser.add_argument("--types", type=_comma_list, default=list(TYPES),
                        help=f"element types, comma-separated (default {','.join(TYPES)})")
    parser.add_argument("--orders", type=_comma_list, default=["BE", "LE"],
                        help="byte orders: BE, LE or BE,LE (default both)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run in seconds: short timings, 1 KB unless --sizes")
    parser.add_argument("--repeat", type=int, default=None,
                        help="timings per measurement, best one kept (default 5; quick 2)")
    parser.add_argument("--min-time", type=float, default=None,
                        help="seconds each timing lasts at least (default 0.05; quick 0.002)")
    parser.add_argument("--impl", choices=("auto", "python", "c"), default="auto",
                        help="pycdr path: python sets PYCDR_PURE=1; c requires pycdr.codec._speedups "
                             "(default: whatever `import pycdr` gives)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    results_format.add_argument(parser)
    args = parser.parse_args(argv)

    if args.impl == "python":
        if "pycdr" in sys.modules and pycdr_path() == "c":
            parser.error("--impl python: pycdr is already imported with its C extension")
        os.environ["PYCDR_PURE"] = "1"       # read when pycdr is first imported
    if args.impl == "c" and pycdr_path() != "c":
        parser.error("--impl c: pycdr.codec._speedups is not built (or PYCDR_PURE=1 is set)")
    for order in args.orders:
        if order not in ("BE", "LE"):
            parser.error(f"--orders: {order!r} is neither BE nor LE")
    sizes = args.sizes or ([1] if args.quick else list(SIZES_KB))

    started = time.perf_counter()
    try:
        results = run(sizes=sizes, types=args.types, orders=args.orders, quick=args.quick,
                      repeat=args.repeat, min_time=args.min_time,
                      progress=lambda text: print(f"  measuring {text}...", file=sys.stderr))
    except (ValueError, BenchmarkError) as e:
        print(f"bench_marshal: {e}", file=sys.stderr)
        return 1
    results["meta"]["elapsed_s"] = round(time.perf_counter() - started, 1)
    print(format_tables(results))
    if results["meta"]["omniORBpy"] is False:
        print("\nomniORBpy is not installed: its columns are empty", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    meta = results["meta"]
    results_format.write(args.results, "marshal", results_format.record(
        "marshal", script=__file__, argv=sys.argv[1:] if argv is None else argv,
        tables=results_tables(results), quick=args.quick,
        path={"codec": meta["pycdr"]},
        settings={"repeat": meta["repeat"], "min_time_s": meta["min_time"],
                  "pycdr2": meta["pycdr2"], "omniORBpy": meta["omniORBpy"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
