"""Declares every name, resolves every reference and computes repository ids.

Repository ids follow CORBA 3.0 section 10.7.5: ``IDL:<prefix>/<scoped
name>:<version>``.  The prefix in force is tracked as omniidl and the spec
do: entering a module, interface, value, struct, union or exception appends
its name; ``#pragma prefix`` replaces the current prefix until the end of
the scope (or file) it appears in; an included file starts with an empty
prefix and the including file's prefix comes back after it; ``typeprefix``
sets the prefix of a named scope; ``#pragma ID`` / ``typeid`` replace an id;
``#pragma version`` replaces the version part.
"""

from __future__ import annotations

import re

from . import ast
from .constants import ConstError, Evaluator, category
from .diagnostics import Position, Reporter
from .scope import (ArrayRef, BaseRef, FixedRef, LookupError_, NamedRef, SequenceRef,
                    StringRef, Symbol, lookup, unalias)

class Checker:
    def __init__(self, reporter: Reporter, keyword_clashes: dict | None = None):
        self.reporter = reporter
        self.keyword_clashes = keyword_clashes or {}
        self.root = Symbol("global", "", None, None)
        self.prefix_stack = [""]
        self.scope = self.root
        self.evaluator = Evaluator(self.resolve_name)
        self.declared: list[Symbol] = []     # every named entity, in declaration order
        self.current = None                  # the definition being checked
        self._declare_builtins()

    def _declare_builtins(self):
        # CORBA::TypeCode and CORBA::Principal are known without any include
        # (pseudo objects in the CORBA module, as in omniidl).
        corba = Symbol("module", "CORBA", self.root, None, repo_id="")
        corba.info["builtin"] = True
        self.root.members["corba"] = corba
        for name in ("TypeCode", "Principal"):
            sym = Symbol("builtin", name, corba, None, repo_id=f"IDL:omg.org/CORBA/{name}:1.0")
            corba.members[name.lower()] = sym

    # --- helpers -------------------------------------------------------------
    def error(self, pos, message):
        self.reporter.error(pos, message)

    def resolve_name(self, name: ast.ScopedName) -> Symbol:
        try:
            return lookup(self.scope, name, self.root)
        except LookupError_ as exc:
            raise ConstError(name.pos, exc.message) from None

    def find(self, name: ast.ScopedName) -> Symbol | None:
        """The symbol ``name`` denotes here, or None (the error reported)."""
        try:
            return lookup(self.scope, name, self.root)
        except LookupError_ as exc:
            self.error(name.pos, exc.message)
            return None

    def make_repo_id(self, name: str) -> str:
        prefix = self.prefix_stack[-1]
        return f"IDL:{prefix + '/' if prefix else ''}{name}:1.0"

    def declare(self, kind: str, name: str, pos, node=None) -> Symbol:
        low = name.lower()
        if pos in self.keyword_clashes:
            self.error(pos, f"identifier {name!r} clashes with keyword "
                            f"{self.keyword_clashes[pos]!r}")
        if self.scope.kind != "global" and low == self.scope.name.lower():
            self.error(pos, f"{name!r} clashes with the name of its enclosing scope "
                            f"{self.scope.scoped_name()!r}")
        introduced = self.scope.info.get("introduced", {}).get(low)
        if introduced is not None and not (introduced[2].forward and introduced[2].name == name
                                           and introduced[2].parent is self.scope):
            self.error(pos, f"declaration of {name!r} clashes with the use of "
                            f"{introduced[0]!r} in this scope (at {introduced[1]})")
        existing = self.scope.members.get(low)
        if existing is not None:
            if existing.name != name:
                self.error(pos, f"{name!r} clashes with {existing.scoped_name()!r} "
                                "(IDL names may not differ only in case)")
            else:
                where = f" (at {existing.pos})" if existing.pos else ""
                self.error(pos, f"{name!r} is already declared in this scope{where}")
            # Carry on with a fresh symbol that is not entered in the scope.
            return Symbol(kind, name, self.scope, pos, node, repo_id=self.make_repo_id(name))
        if kind in ("operation", "attribute"):
            for base in self.all_bases(self.scope):
                clash = base.members.get(low)
                if clash is not None and clash.kind in ("operation", "attribute"):
                    self.error(pos, f"{name!r} clashes with inherited {clash.scoped_name()!r}")
        sym = Symbol(kind, name, self.scope, pos, node, repo_id=self.make_repo_id(name))
        self.scope.members[low] = sym
        self.scope.order.append(sym)
        self.declared.append(sym)
        return sym

    def all_bases(self, sym: Symbol) -> list:
        """Every interface or value ``sym`` inherits from, each once (kept in
        ``info``: bases are final when the body is checked, and each of its
        operations asks)."""
        known = sym.info.get("all_bases")
        if known is not None:
            return known
        out, seen, stack = [], set(), list(sym.bases)
        while stack:
            b = stack.pop()
            if id(b) not in seen:
                seen.add(id(b))
                out.append(b)
                stack.extend(b.bases)
        if not sym.forward:
            sym.info["all_bases"] = out
        return out

    def enter(self, sym: Symbol):
        self.scope = sym
        if sym.typeprefix is not None:
            self.prefix_stack.append(sym.typeprefix)
        else:
            top = self.prefix_stack[-1]
            self.prefix_stack.append(f"{top}/{sym.name}" if top else sym.name)

    def leave(self, sym: Symbol):
        self.prefix_stack.pop()
        self.scope = sym.parent

    # --- definitions ---------------------------------------------------------
    def check(self, body: list):
        self.definitions(body)

    def position(self, path: str) -> Position:
        """Where checking is (the definition being checked), for a diagnostic."""
        node = self.current
        return node.pos if node is not None and node.pos is not None else Position(path, 1, 1)

    def definitions(self, body: list):
        for node in body:
            self.current = node
            method = getattr(self, "do_" + type(node).__name__.rstrip("_"), None)
            if method is None:
                self.error(node.pos, f"{type(node).__name__} is not allowed here")
                continue
            method(node)

    def do_FileMarker(self, node: ast.FileMarker):
        if node.enter:
            self.prefix_stack.append("")
        elif len(self.prefix_stack) > 1:
            self.prefix_stack.pop()

    def do_Import(self, node):
        self.error(node.pos, "import declarations are not supported (use #include)")

    def do_Pragma(self, node: ast.Pragma):
        text = node.text
        m = re.match(r'prefix\s+"((?:[^"\\]|\\.)*)"\s*$', text)
        if m:
            self.prefix_stack[-1] = m.group(1)
            return
        if text.startswith("prefix"):
            self.error(node.pos, "#pragma prefix needs a string literal")
            return
        m = re.match(r'ID\s+(::)?([A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)\s+"([^"]*)"\s*$', text)
        if m:
            sym = self.pragma_target(node, m.group(1), m.group(2))
            if sym is not None:
                self.set_id(node.pos, sym, m.group(3))
            return
        if text.startswith("ID"):
            self.error(node.pos, "malformed #pragma ID")
            return
        m = re.match(r'version\s+(::)?([A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)\s+(\d+)\.(\d+)\s*$',
                     text)
        if m:
            sym = self.pragma_target(node, m.group(1), m.group(2))
            if sym is not None:
                if sym.id_fixed:
                    self.error(node.pos, f"cannot set the version of {sym.scoped_name()}: "
                                         "its repository id was set explicitly")
                elif not sym.repo_id.startswith("IDL:"):
                    self.error(node.pos, "#pragma version applies to IDL: ids only")
                else:
                    sym.repo_id = sym.repo_id.rsplit(":", 1)[0] + f":{m.group(3)}.{m.group(4)}"
                    sym.info["version_set"] = True
            return
        if text.startswith("version"):
            self.error(node.pos, "malformed #pragma version")
        # Other pragmas (omniORB's hh, javaPackage, ...) do not concern pycdr.

    def pragma_target(self, node, absolute, name_text):
        parts = [p.strip() for p in name_text.split("::")]
        parts = [p[1:] if p.startswith("_") else p for p in parts]
        return self.find(ast.ScopedName(node.pos, parts, bool(absolute)))

    def set_id(self, pos, sym: Symbol, repo_id: str):
        if sym.id_fixed and sym.repo_id != repo_id:
            self.error(pos, f"repository id of {sym.scoped_name()} already set to "
                            f"{sym.repo_id!r}")
            return
        if ":" not in repo_id:
            self.error(pos, f"{repo_id!r} is not a repository id (no format prefix)")
            return
        sym.repo_id = repo_id
        sym.id_fixed = True

    def do_TypeId(self, node: ast.TypeId):
        sym = self.find(node.target)
        if sym is None:
            return
        self.set_id(node.pos, sym, node.repo_id)

    def do_TypePrefix(self, node: ast.TypePrefix):
        sym = self.find(node.target)
        if sym is None:
            return
        if sym.kind not in ("module", "interface", "value"):
            self.error(node.pos, f"typeprefix applies to modules, interfaces and value "
                                 f"types, not {sym.kind}s")
            return
        sym.typeprefix = node.prefix
        if sym is self.scope:
            self.prefix_stack[-1] = node.prefix

    def do_Module(self, node: ast.Module):
        low = node.name.lower()
        sym = self.scope.members.get(low)
        if sym is None or sym.kind != "module" or sym.name != node.name:
            sym = self.declare("module", node.name, node.pos, node)
        elif sym.info.get("builtin"):
            # The predeclared CORBA module, opened for the first time.
            sym.info["builtin"] = False
            sym.pos = node.pos
            sym.repo_id = self.make_repo_id(node.name)
            self.declared.append(sym)
        self.enter(sym)
        self.definitions(node.body)
        self.leave(sym)

    # --- interfaces ----------------------------------------------------------
    def forward_or_new(self, kind: str, node, subkind: str):
        """The symbol for a (re)declaration that may complete an earlier forward one."""
        low = node.name.lower()
        existing = self.scope.members.get(low)
        if existing is not None and existing.kind == kind and existing.name == node.name \
                and existing.forward:
            if existing.info.get("subkind", "") != subkind:
                self.error(node.pos, f"{node.name} was forward declared as a different "
                                     f"kind of {kind} (at {existing.pos})")
            existing.pos = existing.pos if node is None else node.pos
            existing.node = node
            if not existing.id_fixed:
                existing.repo_id = self.make_repo_id(node.name)
            return existing
        sym = self.declare(kind, node.name, node.pos, node)
        sym.info["subkind"] = subkind
        return sym

    def do_Interface(self, node: ast.Interface):
        if node.body is None:
            low = node.name.lower()
            existing = self.scope.members.get(low)
            if existing is not None and existing.kind == "interface" and existing.name == node.name:
                if existing.info.get("subkind", "") != node.kind:
                    self.error(node.pos, f"{node.name} was declared as a different kind of "
                                         f"interface (at {existing.pos})")
                return   # a forward declaration after a forward or full one
            sym = self.declare("interface", node.name, node.pos, node)
            sym.forward = True
            sym.info["subkind"] = node.kind
            return
        sym = self.forward_or_new("interface", node, node.kind)
        sym.forward = False
        bases = []
        for name in node.bases:
            base = self.find(name)
            if base is None:
                continue
            if base.kind != "interface":
                self.error(name.pos, f"{name} is a {base.kind}, not an interface")
                continue
            if base.forward:
                self.error(name.pos, f"cannot inherit from {name}: it is only forward declared")
                continue
            if any(b is base for b in bases):
                self.error(name.pos, f"{name} is inherited twice")
                continue
            if base is sym:
                self.error(name.pos, f"{name} cannot inherit from itself")
                continue
            base_kind = base.info.get("subkind", "")
            if node.kind == "abstract" and base_kind != "abstract":
                self.error(name.pos, f"abstract interface {node.name} can only inherit "
                                     "from abstract interfaces")
            if node.kind == "" and base_kind == "local":
                self.error(name.pos, f"unconstrained interface {node.name} cannot inherit "
                                     f"from local interface {name}")
            bases.append(base)
        sym.bases = bases
        self.enter(sym)
        self.definitions(node.body)
        self.leave(sym)

    def do_Operation(self, node: ast.Operation):
        sym = self.declare("operation", node.name, node.pos, node)
        sym.info["result"] = self.type_ref(node.result, allow_void=True)
        self.check_not_local(sym.info["result"], node.pos, f"operation {node.name!r}")
        params = []
        seen = set()
        for p in node.params:
            if p.name.lower() in seen:
                self.error(p.pos, f"parameter {p.name!r} declared twice")
            seen.add(p.name.lower())
            ptype = self.type_ref(p.type)
            self.check_not_local(ptype, p.pos, f"parameter {p.name!r}")
            params.append((p.name, p.mode, ptype))
        sym.info["params"] = params
        sym.info["raises"] = self.exceptions(node.raises)
        sym.info["oneway"] = node.oneway
        sym.info["contexts"] = list(node.contexts)
        if node.oneway:
            if not (isinstance(node.result, ast.BaseType) and node.result.name == "void"):
                self.error(node.pos, f"oneway operation {node.name} must return void")
            if any(mode != "in" for _, mode, _ in params):
                self.error(node.pos, f"oneway operation {node.name} can only have in "
                                     "parameters")
            if node.raises:
                self.error(node.pos, f"oneway operation {node.name} cannot raise "
                                     "user exceptions")

    def exceptions(self, names) -> list:
        out = []
        for name in names:
            sym = self.find(name)
            if sym is None:
                continue
            if sym.kind != "exception":
                self.error(name.pos, f"{name} is a {sym.kind}, not an exception")
                continue
            out.append(sym)
        return out

    def do_Attribute(self, node: ast.Attribute):
        sym = self.declare("attribute", node.name, node.pos, node)
        sym.type = self.type_ref(node.type)
        self.check_not_local(sym.type, node.pos, f"attribute {node.name!r}")
        sym.info["readonly"] = node.readonly
        sym.info["getraises"] = self.exceptions(node.getraises)
        sym.info["setraises"] = self.exceptions(node.setraises)

    # --- value types ---------------------------------------------------------
    def do_ValueType(self, node: ast.ValueType):
        subkind = "abstract" if node.abstract else ""
        kind_word = "eventtype" if node.event else "valuetype"
        if node.body is None:
            low = node.name.lower()
            existing = self.scope.members.get(low)
            if existing is not None and existing.kind == "value" and existing.name == node.name:
                return
            sym = self.declare("value", node.name, node.pos, node)
            sym.forward = True
            sym.info["subkind"] = subkind
            sym.info["event"] = node.event
            return
        sym = self.forward_or_new("value", node, subkind)
        sym.forward = False
        sym.info.update(event=node.event, abstract=node.abstract, custom=node.custom,
                        truncatable=node.truncatable)
        bases = []
        for i, name in enumerate(node.bases):
            base = self.find(name)
            if base is None:
                continue
            if base.kind != "value" or base.forward:
                self.error(name.pos, f"{name} is not a defined value type")
                continue
            if not base.info.get("abstract") and i > 0:
                self.error(name.pos, f"{kind_word} {node.name}: only the first base can be "
                                     "a concrete value type")
            if not base.info.get("abstract") and node.abstract:
                self.error(name.pos, f"abstract {kind_word} {node.name} cannot inherit from "
                                     f"concrete {name}")
            bases.append(base)
        if node.truncatable and (not bases or bases[0].info.get("abstract")):
            self.error(node.pos, "truncatable needs a concrete base value type")
        supports = []
        for name in node.supports:
            iface = self.find(name)
            if iface is None:
                continue
            if iface.kind != "interface" or iface.forward:
                self.error(name.pos, f"{name} is not a defined interface")
                continue
            supports.append(iface)
        sym.bases = bases + supports
        sym.info["value_bases"] = bases
        sym.info["supports"] = supports
        sym.info["state"] = []
        self.enter(sym)
        self.definitions(node.body)
        self.leave(sym)

    def do_StateMember(self, node: ast.StateMember):
        ref = self.type_ref(node.type)
        for d in node.declarators:
            sym = self.declare("member", d.name, d.pos, node)
            sym.type = self.with_dims(ref, d)
            self.scope.info["state"].append((d.name, sym.type, node.public))

    def do_Factory(self, node: ast.Factory):
        sym = self.declare("factory", node.name, node.pos, node)
        sym.info["params"] = [(p.name, "in", self.type_ref(p.type)) for p in node.params]
        sym.info["raises"] = self.exceptions(node.raises)

    def do_ValueBox(self, node: ast.ValueBox):
        sym = self.declare("valuebox", node.name, node.pos, node)
        ref = self.type_ref(node.type)
        target = unalias(ref)
        if isinstance(target, NamedRef) and target.symbol.kind in ("value", "valuebox"):
            self.error(node.type.pos, "a value box cannot box a value type")
        sym.type = ref

    # --- types ---------------------------------------------------------------
    def do_Typedef(self, node: ast.Typedef):
        ref = self.type_ref(node.type)
        for d in node.declarators:
            sym = self.declare("typedef", d.name, d.pos, node)
            sym.type = self.with_dims(ref, d)

    def do_Native(self, node: ast.Native):
        self.declare("native", node.name, node.pos, node)

    def do_Struct(self, node: ast.Struct):
        if node.members is None:
            return self.forward_struct_or_union("struct", node)
        sym = self.begin_definition("struct", node)
        sym.info["members"] = self.members(node.members)
        self.leave(sym)
        sym.complete = True
        return sym

    def begin_definition(self, kind: str, node) -> Symbol:
        """Declare (or complete the forward declaration of) a struct or union
        and enter its scope; it stays incomplete until its end."""
        sym = self.forward_or_new(kind, node, "")
        sym.forward = False
        sym.complete = False
        self.enter(sym)
        return sym

    def members(self, members: list) -> list:
        """(name, type) of struct or exception members, declared in the current scope."""
        out = []
        for m in members:
            ref = self.type_ref(m.type)
            self.check_no_forward(ref, m.type.pos)
            for d in m.declarators:
                msym = self.declare("member", d.name, d.pos, m)
                msym.type = self.with_dims(ref, d)
                out.append((d.name, msym.type))
        return out

    def check_no_forward(self, ref, pos):
        """A member may refer (through sequences) to a struct or union under
        definition -- a recursive type -- but not to one only forward declared."""
        seen = set()
        while True:
            if isinstance(ref, NamedRef):
                sym = ref.symbol
                if sym.kind == "typedef" and id(sym) not in seen:
                    seen.add(id(sym))
                    ref = sym.type
                    continue
                if sym.kind in ("struct", "union") and sym.forward:
                    self.error(pos, f"cannot use a sequence of forward-declared {sym.kind} "
                                    f"{sym.scoped_name()!r} before it is fully defined")
                return
            if isinstance(ref, (SequenceRef, ArrayRef)):
                ref = ref.element
                continue
            return

    def check_not_local(self, ref, pos, what):
        """Unconstrained interfaces cannot pass local interfaces."""
        if self.scope.kind != "interface" or self.scope.info.get("subkind") == "local":
            return
        target = unalias(ref)
        if isinstance(target, NamedRef) and target.symbol.kind == "interface" and \
                target.symbol.info.get("subkind") == "local":
            self.error(pos, f"in unconstrained interface {self.scope.name!r}, {what} has "
                            f"local type {target.symbol.scoped_name()!r}")

    def forward_struct_or_union(self, kind, node):
        existing = self.scope.members.get(node.name.lower())
        if existing is not None and existing.kind == kind and existing.name == node.name:
            return existing
        sym = self.declare(kind, node.name, node.pos, node)
        sym.forward = True
        sym.complete = False
        return sym

    def do_Exception(self, node: ast.Exception_):
        sym = self.declare("exception", node.name, node.pos, node)
        self.enter(sym)
        sym.info["members"] = self.members(node.members)
        self.leave(sym)
        return sym

    def do_Enum(self, node: ast.Enum):
        sym = self.declare("enum", node.name, node.pos, node)
        labels = []
        for i, e in enumerate(node.enumerators):
            # Enumerators belong to the scope enclosing the enum.
            esym = self.declare("enumerator", e.name, e.pos, e)
            esym.value = i
            esym.info["enum"] = sym
            labels.append(e.name)
        sym.info["labels"] = labels
        sym.info["enumerators"] = [self.scope.members.get(e.name.lower()) for e in node.enumerators]
        return sym

    def do_Union(self, node: ast.Union):
        if node.cases is None:
            return self.forward_struct_or_union("union", node)
        sym = self.begin_definition("union", node)
        disc = self.type_ref(node.discriminator)
        base = unalias(disc)
        ok = isinstance(base, BaseRef) and base.name in (
            "short", "long", "long long", "unsigned short", "unsigned long",
            "unsigned long long", "char", "wchar", "boolean") or \
            isinstance(base, NamedRef) and base.symbol.kind == "enum"
        if not ok:
            # (octet is IDL 4; CORBA 3 TypeCodes have no octet discriminators.)
            self.error(node.discriminator.pos, "not a valid union discriminator type")
        cases = []
        seen_labels = {}
        seen_names = {}
        has_default = False
        for case in node.cases:
            ref = self.type_ref(case.type)
            self.check_no_forward(ref, case.type.pos)
            ref = self.with_dims(ref, case.declarator)
            name = case.declarator.name
            if name.lower() in seen_names:
                self.error(case.declarator.pos, f"union member {name!r} declared twice")
            else:
                msym = self.declare("member", name, case.declarator.pos, case)
                msym.type = ref
            seen_names[name.lower()] = True
            for label in case.labels:
                if label is None:
                    if has_default:
                        self.error(case.pos, "a union has at most one default case")
                    has_default = True
                    cases.append(("default", name, ref))
                    continue
                if not ok:
                    continue
                value = self.const_value(label, disc)
                if value is None:
                    continue
                key = value.value if isinstance(value, Symbol) else value
                if key in seen_labels:
                    # Reported on the union, as omniidl does, naming the label's place.
                    shown = value.name if isinstance(value, Symbol) else repr(key)
                    self.error(node.pos, f"union {node.name!r}: case label {shown} repeated "
                                         f"(at {label.pos})")
                    continue
                seen_labels[key] = True
                cases.append(("label", name, ref, value))
        self.leave(sym)
        sym.info["discriminator"] = disc
        sym.info["cases"] = cases
        sym.complete = True
        return sym

    def do_Const(self, node: ast.Const):
        ref = self.type_ref(node.type, const=True)
        sym = self.declare("const", node.name, node.pos, node)
        sym.type = ref
        if category(ref) is None:
            self.error(node.type.pos, "not a valid constant type")
            return
        sym.value = self.const_value(node.value, ref)

    def const_value(self, expr, ref):
        try:
            return self.evaluator.evaluate(expr, ref)
        except ConstError as exc:
            self.error(exc.pos, exc.message)
            return None

    def positive_int(self, expr, what):
        try:
            value = self.evaluator.evaluate(expr, BaseRef("unsigned long"))
        except ConstError as exc:
            self.error(exc.pos, exc.message)
            return 1
        if value <= 0:
            self.error(expr.pos, f"{what} must be positive")
            return 1
        return value

    def with_dims(self, ref, declarator: ast.Declarator):
        if not declarator.dims:
            return ref
        dims = tuple(self.positive_int(d, "an array dimension") for d in declarator.dims)
        return ArrayRef(ref, dims)

    def type_ref(self, node, allow_void=False, in_sequence=False, const=False):
        """The resolved type of a type expression (declaring any struct/union/enum in it)."""
        if isinstance(node, ast.BaseType):
            if node.name == "void" and not allow_void:
                self.error(node.pos, "void is only allowed as an operation result")
            return BaseRef(node.name)
        if isinstance(node, ast.ScopedName):
            sym = self.find(node)
            if sym is None:
                return BaseRef("long")  # keep going; the error is reported
            if sym.kind in ("struct", "union") and not sym.complete and not in_sequence:
                self.error(node.pos, f"{node} is used before its definition is complete "
                                     "(only sequence<...> may refer to it)")
            elif sym.kind not in ("interface", "struct", "union", "enum", "typedef",
                                  "exception", "native", "value", "valuebox", "builtin"):
                self.error(node.pos, f"{node} is a {sym.kind}, not a type")
                return BaseRef("long")
            if sym.kind == "exception":
                self.error(node.pos, f"exception {node} cannot be used as a type")
            return NamedRef(sym)
        if isinstance(node, ast.SequenceType):
            element = self.type_ref(node.element, in_sequence=True)
            bound = self.positive_int(node.bound, "a sequence bound") if node.bound else 0
            return SequenceRef(element, bound)
        if isinstance(node, ast.StringType):
            bound = self.positive_int(node.bound, "a string bound") if node.bound else 0
            return StringRef(node.wide, bound)
        if isinstance(node, ast.FixedType):
            if node.digits is None:
                if not const:
                    self.error(node.pos, "fixed without <digits,scale> is only for constants")
                return FixedRef(0, 0)
            digits = self.positive_int(node.digits, "fixed digits")
            try:
                scale = self.evaluator.evaluate(node.scale, BaseRef("unsigned short"))
            except ConstError as exc:
                self.error(exc.pos, exc.message)
                scale = 0
            if digits > 31 or scale > digits:
                self.error(node.pos, f"fixed<{digits},{scale}>: need scale <= digits <= 31")
            return FixedRef(digits, scale)
        if isinstance(node, (ast.Struct, ast.Union, ast.Enum)):
            method = getattr(self, "do_" + type(node).__name__)
            sym = method(node)
            return NamedRef(sym)
        self.error(node.pos, "not a type")
        return BaseRef("long")
