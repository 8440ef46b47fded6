"""pycdr.idl against omniidl and omniORBpy on the same IDL files.

For every file: if omniidl accepts it, pycdr must too, every repository id
must be omniidl's, and every TypeCode's CDR encoding must be the one
omniORBpy marshals (padding aside: omniORB leaves it uninitialised). If
omniidl rejects it, pycdr must reject it with an error on the same line.
The oracle runs here, in a child process (tests/idl_oracle.py).
"""

from __future__ import annotations

import functools
import glob
import json
import os
import re
import struct
import subprocess
import sys

import pytest

pytest.importorskip("omniidl")
pytestmark = pytest.mark.oracle

from pycdr import idl  # noqa: E402
from pycdr.codec.cdr import CDRReader, CDRWriter  # noqa: E402
from pycdr.codec.tcmarshal import read_typecode, write_typecode  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OWN_DIR = os.path.join(HERE, "idl", "oracle")
OMG_DIR = "/usr/share/idl/omniORB"
OMG_INCLUDES = [OMG_DIR, os.path.join(OMG_DIR, "COS")]
# What omniidl defines itself; the OMG files test for it.
OMNIIDL_DEFINES = {"__OMNIIDL__": "4.2"}

OWN_FILES = sorted(glob.glob(os.path.join(OWN_DIR, "*.idl")))
# Files with one mistake each, which omniidl rejects: pycdr must reject them
# with an error on the same line.
ERROR_DIR = os.path.join(HERE, "idl", "oracle_errors")
ERROR_FILES = sorted(glob.glob(os.path.join(ERROR_DIR, "*.idl")))
OMG_FILES = sorted(glob.glob(os.path.join(OMG_DIR, "COS", "*.idl")) +
                   glob.glob(os.path.join(OMG_DIR, "*.idl")))


@functools.lru_cache(maxsize=None)
def oracle(path: str, include_dirs: tuple) -> dict:
    args = [sys.executable, os.path.join(HERE, "idl_oracle.py"), path]
    for d in include_dirs:
        args += ["-I", d]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def typecode_bytes(tc) -> bytes:
    """As the oracle marshals it: an any's TypeCode (tk_TypeCode, 4 bytes) then the
    TypeCode, little endian; repeated TypeCodes as indirections, as omniORB does."""
    w = CDRWriter(little=True)
    w.write_ulong(12)
    write_typecode(w, tc, repeated_indirection=True)
    return w.getvalue()


def objref_for_local(hex_bytes: str, repo_id: str) -> str:
    """pycdr's encoding with the local interface ``repo_id`` written as
    tk_objref, as omniORBpy describes local interfaces (its marshaller has no
    tk_local_interface, so that is the one encoding the oracle can give)."""
    rid = (repo_id.encode() + b"\0")
    body = struct.pack("<I", len(rid)).hex() + rid.hex()
    return re.sub(r"21000000(.{8}01......" + body + ")", r"0e000000\1", hex_bytes)


def same_typecode_other_sharing(omni_hex: str, ours) -> bool:
    """True when omniORB's bytes are the same TypeCode as ours, written with
    fewer indirections.

    omniORB writes an indirection for a repeated TypeCode only when both are
    the same C++ object (TypeCode_offsetTable::lookupTypeCode compares
    pointers), and which objects omniORBpy shares depends on what it had
    registered before (it preloads part of the CORBA module), not on the IDL.
    So where the bytes differ, omniORB's must be longer (a repeat written out
    where we write a 12-byte indirection) and decode to a TypeCode equal() to
    ours: ids, names, members, labels, bounds, everything."""
    raw = bytes.fromhex(omni_hex)
    if len(raw) <= len(typecode_bytes(ours)):
        return False
    reader = CDRReader(raw, little=True)
    reader.read_ulong()
    return read_typecode(reader).equal(ours)


def compare(path: str, include_dirs: list, valid=None):
    """valid: True/False when the file is meant to be (in)valid IDL, None if either."""
    expected = oracle(path, tuple(include_dirs))
    if valid is not None:
        assert expected["ok"] == valid, \
            f"omniidl {'rejects' if valid else 'accepts'} {path}: {expected['errors']}"
    if not expected["ok"]:
        with pytest.raises(idl.IdlError) as info:
            idl.load(path, include_dirs, OMNIIDL_DEFINES, register=False)
        assert expected["errors"], "omniidl failed without an error message"
        ofile, oline, omsg = expected["errors"][0]
        places = {(os.path.basename(d.position.file), d.position.line)
                  for d in info.value.diagnostics}
        assert (os.path.basename(ofile), oline) in places, \
            f"omniidl: {ofile}:{oline}: {omsg}\npycdr: {info.value}"
        return
    module = idl.load(path, include_dirs, OMNIIDL_DEFINES, register=False)
    first_ids = {}
    for scoped, repo_id, cls, _file, _line in expected["decls"]:
        first_ids.setdefault(scoped, (repo_id, cls))
    wrong_ids = []
    for scoped, (repo_id, cls) in first_ids.items():
        ours = module.repo_ids.get(scoped)
        if ours != repo_id:
            wrong_ids.append((scoped, cls, repo_id, ours))
    assert not wrong_ids, "repository ids differ (name, kind, omniidl, pycdr):\n" + \
        "\n".join(map(str, wrong_ids))
    extra = set(module.repo_ids) - set(first_ids)
    assert not extra, f"pycdr declares names omniidl does not: {sorted(extra)}"
    by_id = {}
    for scoped, t in module.types.items():
        by_id.setdefault(t.id(), t)
    wrong_tcs = []
    for repo_id, hex_bytes in expected["typecodes"].items():
        assert repo_id in by_id, f"no pycdr TypeCode for {repo_id}"
        ours = typecode_bytes(by_id[repo_id]).hex()
        for local_id in expected["local_interfaces"]:
            ours = objref_for_local(ours, local_id)
        if ours != hex_bytes and not same_typecode_other_sharing(hex_bytes, by_id[repo_id]):
            wrong_tcs.append(f"{repo_id}\n  omniORB {hex_bytes}\n  pycdr   {ours}")
    assert not wrong_tcs, "TypeCode encodings differ:\n" + "\n".join(wrong_tcs)
    assert expected["typecodes"], "the oracle produced no TypeCodes to compare"


@pytest.mark.parametrize("path", OWN_FILES, ids=os.path.basename)
def test_own_idl_matches_omniidl(path):
    compare(path, [OWN_DIR], valid=True)


@pytest.mark.parametrize("path", ERROR_FILES, ids=os.path.basename)
def test_bad_idl_rejected_on_the_same_line_as_omniidl(path):
    compare(path, [ERROR_DIR], valid=False)


@pytest.mark.skipif(not os.path.isdir(OMG_DIR),
                    reason="Debian package omniorb-idl is not installed")
@pytest.mark.parametrize("path", OMG_FILES, ids=lambda p: os.path.relpath(p, OMG_DIR))
def test_omg_service_idl_matches_omniidl(path):
    compare(path, OMG_INCLUDES)


def test_own_idl_files_exist():
    assert len(OWN_FILES) >= 8 and len(ERROR_FILES) >= 15
