"""The IDL oracle: omniidl (front end) and omniORBpy (TypeCodes) on one IDL file.

Run as a script in its own process (omniidl's C++ front end keeps global
state and prints errors on the C stderr):

    python idl_oracle.py FILE [-I DIR ...] [-D NAME ...]

prints one JSON object:
  ok          omniidl accepted the file
  errors      [[file, line, message], ...] as omniidl reported them
  decls       [[scoped name, repository id, omniidl class name], ...]
  typecodes   {repository id: hex of the TypeCode's CDR (little endian,
               starting at stream offset 4, alignment padding zeroed)}

omniidl needs a C preprocessor; the one of the system (`cpp`, gcc's) is
used, so the oracle does not share pycdr's (pcpp).
"""

from __future__ import annotations

import io
import json
import os
import re
import struct
import subprocess
import sys


def preprocess(path, include_dirs, defines):
    import _omniidl
    cmd = ["cpp", "-x", "c++", "-undef", "-nostdinc"]
    cmd += [f"-D{d}" for d in defines or [f"__OMNIIDL__={_omniidl.version}"]] + [f"-I{d}" for d in include_dirs] + [path]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    # gcc's markers for its built-in pseudo files ("# 0 ...") confuse omniidl.
    lines = [line for line in proc.stdout.splitlines()
             if not line.startswith("# 0 ") and not re.match(r'# \d+ "<', line)]
    return proc.returncode, "\n".join(lines) + "\n", proc.stderr


def collect_decls(tree):
    from omniidl import idlast
    out = []

    def visit(node, cls=None):
        if isinstance(node, idlast.DeclRepoId) and \
                not isinstance(node, (idlast.Enumerator, idlast.Operation)):
            out.append(["::".join(node.scopedName()), node.repoId(),
                        cls or type(node).__name__, node.file(), node.line()])
        children = []
        if isinstance(node, idlast.AST):
            children = node.declarations()
        elif isinstance(node, idlast.Module):
            children = node.definitions()
        elif isinstance(node, (idlast.Interface, idlast.ValueAbs, idlast.Value)):
            children = node.contents()
        elif isinstance(node, (idlast.Struct, idlast.Exception)):
            # (member declarators have repository ids in omniidl, but no types)
            children = [m.memberType().decl() for m in node.members() if m.constrType()]
        elif isinstance(node, idlast.Typedef):
            for declarator in node.declarators():
                visit(declarator, "Typedef")
            if node.constrType():
                children.append(node.aliasType().decl())
        elif isinstance(node, idlast.Union):
            children = [c.caseType().decl() for c in node.cases() if c.constrType()]
            if node.constrType():
                children.append(node.switchType().decl())
        elif isinstance(node, idlast.StateMember):
            if node.constrType():
                children.append(node.memberType().decl())
        for child in children:
            visit(child)

    visit(tree)
    return out


class _TypeCodeWalker:
    """Finds the alignment padding in a CDR TypeCode (omniORB leaves it
    uninitialised), so the comparison looks at the meaningful bytes only."""

    def __init__(self, buf):
        self.buf = bytearray(buf)
        self.kind_at = {}

    def align(self, pos, base, n):
        while (pos - base) % n:
            self.buf[pos] = 0
            pos += 1
        return pos

    def ulong(self, pos, base, little):
        pos = self.align(pos, base, 4)
        return struct.unpack_from("<I" if little else ">I", self.buf, pos)[0], pos + 4

    def string(self, pos, base, little):
        n, pos = self.ulong(pos, base, little)
        return pos + n

    def typecode(self, pos, base, little):
        pos = self.align(pos, base, 4)
        start = pos
        kind, pos = self.ulong(pos, base, little)
        if kind == 0xFFFFFFFF:
            offset = struct.unpack_from("<i" if little else ">i", self.buf, pos)[0]
            return pos + 4, self.kind_at.get(pos + offset, 0)
        self.kind_at[start] = kind
        if kind in (18, 27):
            return pos + 4, kind
        if kind == 28:
            return pos + 4, kind
        if kind not in (14, 15, 16, 17, 19, 20, 21, 22, 29, 30, 31, 32, 33, 34, 35, 36):
            return pos, kind
        length, pos = self.ulong(pos, base, little)
        end = pos + length
        ebase = pos
        little = self.buf[pos] == 1
        p = pos + 1
        effective = kind
        if kind in (19, 20):
            p, _ = self.typecode(p, ebase, little)
            _, p = self.ulong(p, ebase, little)     # bound / length
        else:
            p = self.string(p, ebase, little)     # id
            p = self.string(p, ebase, little)     # name
            if kind in (15, 22):
                count, p = self.ulong(p, ebase, little)
                for _ in range(count):
                    p = self.string(p, ebase, little)
                    p, _ = self.typecode(p, ebase, little)
            elif kind == 16:
                p, disc = self.typecode(p, ebase, little)
                _, p = self.ulong(p, ebase, little)  # default index
                count, p = self.ulong(p, ebase, little)
                size = {2: 2, 4: 2, 3: 4, 5: 4, 17: 4, 23: 8, 24: 8, 8: 1, 9: 1, 26: 2}[disc]
                for _ in range(count):
                    p = self.align(p, ebase, size) + size
                    p = self.string(p, ebase, little)
                    p, _ = self.typecode(p, ebase, little)
            elif kind == 17:
                count, p = self.ulong(p, ebase, little)
                for _ in range(count):
                    p = self.string(p, ebase, little)
            elif kind in (21, 30):
                p, content = self.typecode(p, ebase, little)
                if kind == 21:
                    effective = content
                    self.kind_at[start] = content
            elif kind in (29, 36):
                p = self.align(p, ebase, 2) + 2    # modifier
                p, _ = self.typecode(p, ebase, little)
                count, p = self.ulong(p, ebase, little)
                for _ in range(count):
                    p = self.string(p, ebase, little)
                    p, _ = self.typecode(p, ebase, little)
                    p = self.align(p, ebase, 2) + 2
        return end, effective


def local_interface_ids(tree):
    from omniidl import idlast
    ids = []

    def visit(node):
        if isinstance(node, (idlast.Interface, idlast.Forward)) and node.local():
            ids.append(node.repoId())
        for child in getattr(node, "declarations", getattr(node, "definitions", lambda: []))():
            visit(child)

    visit(tree)
    return ids


def marshal_typecode(tc):
    import omniORB
    from omniORB import CORBA
    raw = omniORB.cdrMarshal(CORBA._tc_any, CORBA.Any(CORBA._tc_TypeCode, tc), 1)
    walker = _TypeCodeWalker(raw)
    walker.typecode(4, 0, True)
    return bytes(walker.buf)


def load_stubs(tree):
    """What omniORB.importIDL does, from the tree already compiled.

    omniORBpy describes CORBA::Object with an empty repository id (its
    ``CORBA.Object._NP_RepositoryId`` is ''); CORBA (and omniORB's C++
    ``CORBA::_tc_Object``) use "IDL:omg.org/CORBA/Object:1.0": that is put
    right first, so the oracle gives CORBA's encoding.  (omniORBpy also
    describes local interfaces as tk_objref, and its marshaller knows no
    tk_local_interface: the test allows for that, see test_idl_oracle.py.)
    """
    import omniORB
    from omniORB import tcInternal
    from omniidl_be import python as python_be
    object_id = "IDL:omg.org/CORBA/Object:1.0"
    omniORB.typeMapping[object_id] = (tcInternal.tv_objref, object_id, "Object")
    saved = sys.stdout
    sys.stdout = io.StringIO()
    try:
        python_be.run(tree, ["stdout", "inline"])
        source = sys.stdout.getvalue()
    finally:
        sys.stdout = saved
    mdict = {"__file__": "oracle"}
    exec(source, mdict)
    for mod in mdict["_exported_modules"]:
        for m in (mod, omniORB.skeletonModuleName(mod)):
            if m in omniORB._partialModules:
                if m in sys.modules:
                    omniORB.updateModuleDict(sys.modules[m], omniORB._partialModules[m])
                else:
                    sys.modules[m] = omniORB._partialModules[m]
                del omniORB._partialModules[m]


# omniidl writes "file:line: message" for errors, "file:line: Warning: ..." for warnings.
_ERROR_RE = re.compile(r"^(.*?):(\d+): (?!Warning:)(.*)$")
TYPE_CLASSES = {"Interface", "Forward", "Struct", "Exception", "Union", "Enum", "Typedef",
                "Native", "Value", "ValueAbs", "ValueBox", "ValueForward",
                "StructForward", "UnionForward"}


def main(argv):
    path = argv[0]
    include_dirs, defines = [], []
    it = iter(argv[1:])
    for arg in it:
        if arg == "-I":
            include_dirs.append(next(it))
        elif arg == "-D":
            defines.append(next(it))
    rc, text, cpp_errors = preprocess(path, include_dirs, defines)
    result = {"ok": False, "errors": [], "decls": [], "typecodes": {}}
    if rc != 0:
        for line in cpp_errors.splitlines():
            m = re.match(r"^(.*?):(\d+):\d+: (?:fatal )?error: (.*)$", line)
            if m:
                result["errors"].append([m.group(1), int(m.group(2)), m.group(3)])
        print(json.dumps(result))
        return
    import _omniidl
    # The C++ front end writes its errors to fd 2: catch them in a pipe file.
    err_path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"idl_oracle_{os.getpid()}.err")
    saved_fd = os.dup(2)
    with open(err_path, "w") as err_file:
        os.dup2(err_file.fileno(), 2)
        try:
            with open(_as_file(text)) as preprocessed:
                tree = _omniidl.compile(preprocessed, path)
                os.remove(preprocessed.name)
        finally:
            sys.stderr.flush()
            os.dup2(saved_fd, 2)
    with open(err_path) as f:
        messages = f.read()
    os.remove(err_path)
    for line in messages.splitlines():
        m = _ERROR_RE.match(line)
        if m:
            result["errors"].append([m.group(1), int(m.group(2)), m.group(3)])
    if tree is None:
        print(json.dumps(result))
        return
    result["ok"] = True
    result["decls"] = collect_decls(tree)
    from omniORB import CORBA
    import omniORB
    CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
    result["local_interfaces"] = local_interface_ids(tree)
    load_stubs(tree)
    for name, repo_id, cls, _file, _line in result["decls"]:
        if cls in TYPE_CLASSES:
            tc = omniORB.findTypeCode(repo_id)
            if tc is not None:
                result["typecodes"][repo_id] = marshal_typecode(tc).hex()
    print(json.dumps(result))


def _as_file(text):
    import tempfile
    f = tempfile.NamedTemporaryFile("w", suffix=".idl", delete=False)
    f.write(text)
    f.close()
    return f.name


if __name__ == "__main__":
    main(sys.argv[1:])
