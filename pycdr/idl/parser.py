"""Recursive-descent parser for CORBA 3.x IDL (OMG IDL grammar, CORBA 3.0 ch. 3).

On a syntax error the parser reports it and skips to the end of the
declaration (the next ``;`` at the same brace depth), so one run reports
several errors.
"""

from __future__ import annotations

from . import ast
from .diagnostics import Reporter
from .lexer import Token


class _SyntaxError(Exception):
    pass


_BASE_TYPE_WORDS = ("float", "double", "long", "short", "unsigned", "char", "wchar",
                    "boolean", "octet", "any", "Object", "ValueBase")


class Parser:
    def __init__(self, tokens: list[Token], reporter: Reporter):
        self.tokens = tokens
        self.index = 0
        self.reporter = reporter
        self.pending_meta: list = []
        self.attempted = 0     # definitions tried (an empty module is an error, a broken one
                               # has been reported already)

    # --- token access --------------------------------------------------------
    def position(self):
        """Where parsing is (the next token), for a diagnostic."""
        return self.tokens[min(self.index, len(self.tokens) - 1)].pos

    def peek(self, ahead: int = 0) -> Token:
        while self.tokens[self.index].kind in ("pragma", "file"):
            tok = self.tokens[self.index]
            if tok.kind == "pragma":
                self.pending_meta.append(ast.Pragma(tok.pos, tok.value))
            else:
                self.pending_meta.append(ast.FileMarker(tok.pos, tok.value == "enter", tok.text))
            self.index += 1
        if ahead == 0:
            return self.tokens[self.index]
        i = self.index
        seen = 0
        while True:
            i += 1
            if self.tokens[i].kind in ("pragma", "file"):
                continue
            seen += 1
            if seen == ahead or self.tokens[i].kind == "eof":
                return self.tokens[i]

    def next(self) -> Token:
        tok = self.peek()
        if tok.kind != "eof":
            self.index += 1
        return tok

    def at(self, value: str, ahead: int = 0) -> bool:
        tok = self.peek(ahead)
        return tok.kind in ("keyword", "punct") and tok.value == value

    def accept(self, value: str) -> bool:
        if self.at(value):
            self.next()
            return True
        return False

    def fail(self, expected: str, tok: Token | None = None):
        tok = tok or self.peek()
        found = "end of file" if tok.kind == "eof" else repr(tok.text or tok.value)
        self.reporter.error(tok.pos, f"expected {expected}, found {found}")
        raise _SyntaxError

    def expect(self, value: str) -> Token:
        if not self.at(value):
            self.fail(repr(value))
        return self.next()

    def identifier(self) -> str:
        tok = self.peek()
        if tok.kind != "ident":
            self.fail("an identifier")
        self.next()
        return tok.value

    def flush_meta(self, into: list) -> None:
        into.extend(self.pending_meta)
        self.pending_meta.clear()

    def recover(self) -> None:
        """Skip to just after the next ';' at this brace depth (or before a '}' closing it)."""
        depth = 0
        while True:
            tok = self.peek()
            if tok.kind == "eof":
                return
            if tok.kind == "punct":
                if tok.value == "{":
                    depth += 1
                elif tok.value == "}":
                    if depth == 0:
                        return
                    depth -= 1
                    if depth == 0 and self.at(";", 1):
                        self.next()
                        self.next()
                        return
                elif tok.value == ";" and depth == 0:
                    self.next()
                    return
            self.next()

    # --- specification -------------------------------------------------------
    def parse_specification(self) -> list:
        body: list = []
        while True:
            self.peek()
            self.flush_meta(body)
            if self.peek().kind == "eof":
                break
            if self.at("}"):
                # recover() stops before a '}' (it closes a body): at the top level
                # nothing does, so skip it here or the loop would not advance.
                self.reporter.error(self.peek().pos, "'}' without a matching '{'")
                self.next()
                continue
            self.definition_into(body, self.definition)
        if self.attempted == 0:
            self.reporter.error(self.peek().pos, "the specification has no definitions")
        return body

    def definition_into(self, body: list, parse_one) -> None:
        self.attempted += 1
        try:
            result = parse_one()
            if isinstance(result, list):
                body.extend(result)
            else:
                body.append(result)
        except _SyntaxError:
            self.recover()

    def body_until_brace(self, parse_one) -> list:
        body: list = []
        while True:
            self.peek()
            self.flush_meta(body)
            if self.at("}") or self.peek().kind == "eof":
                break
            self.definition_into(body, parse_one)
        self.expect("}")
        return body

    def definition(self):
        tok = self.peek()
        if tok.kind == "keyword":
            word = tok.value
            if word == "module":
                return self.module()
            if word in ("abstract", "custom") and (self.at("valuetype", 1) or
                                                   self.at("eventtype", 1)):
                return self.value_decl()
            if word in ("interface", "abstract", "local"):
                return self.interface()
            if word in ("valuetype", "eventtype"):
                return self.value_decl()
            if word == "import":
                return self.import_decl()
        return self.export_definition(allow=())

    def export_definition(self, allow=("attribute", "operation")):
        """type/const/except declarations, typeid/typeprefix; attributes and
        operations where ``allow`` says so (interface and value bodies)."""
        tok = self.peek()
        word = tok.value if tok.kind == "keyword" else None
        if word in ("typedef", "struct", "union", "enum", "native"):
            result = self.type_dcl()
        elif word == "const":
            result = self.const_dcl()
        elif word == "exception":
            result = self.except_dcl()
        elif word == "typeid":
            self.next()
            target = self.scoped_name()
            result = ast.TypeId(tok.pos, target, self.string_literal())
        elif word == "typeprefix":
            self.next()
            target = self.scoped_name()
            result = ast.TypePrefix(tok.pos, target, self.string_literal())
        elif "attribute" in allow and word in ("readonly", "attribute"):
            result = self.attribute()
        elif "operation" in allow and (word == "oneway" or self.starts_type(tok)):
            result = self.operation()
        elif word in ("component", "home", "primarykey", "provides", "uses",
                      "emits", "publishes", "consumes", "finder", "multiple"):
            self.reporter.error(tok.pos, f"CORBA component declarations ({word}) are not "
                                         "supported by pycdr")
            raise _SyntaxError
        else:
            self.fail("a definition")
        self.expect(";")
        return result

    def starts_type(self, tok: Token) -> bool:
        if tok.kind == "ident" or (tok.kind == "punct" and tok.value == "::"):
            return True
        return tok.kind == "keyword" and tok.value in _BASE_TYPE_WORDS + (
            "string", "wstring", "sequence", "fixed", "void")

    def string_literal(self) -> str:
        tok = self.peek()
        if tok.kind != "string":
            self.fail("a string literal")
        self.next()
        return tok.value

    def import_decl(self):
        tok = self.next()
        if self.peek().kind == "string":
            what = self.string_literal()
        else:
            what = str(self.scoped_name())
        self.expect(";")
        return ast.Import(tok.pos, what)

    def module(self):
        self.expect("module")
        tok = self.peek()
        name = self.identifier()
        self.expect("{")
        attempted = self.attempted
        body = self.body_until_brace(self.definition)
        if self.attempted == attempted:
            self.reporter.error(tok.pos, f"module {name} is empty")
        self.expect(";")
        return ast.Module(tok.pos, name, body)

    # --- interfaces ----------------------------------------------------------
    def interface(self):
        kind = ""
        if self.at("abstract") or self.at("local"):
            kind = self.next().value
        self.expect("interface")
        name_tok = self.peek()
        name = self.identifier()
        if self.accept(";"):
            return ast.Interface(name_tok.pos, name, kind, [], None)
        bases = []
        if self.accept(":"):
            bases.append(self.scoped_name())
            while self.accept(","):
                bases.append(self.scoped_name())
        self.expect("{")
        body = self.body_until_brace(self.export_definition)
        self.expect(";")
        return ast.Interface(name_tok.pos, name, kind, bases, body)

    def attribute(self):
        readonly = self.accept("readonly")
        self.expect("attribute")
        atype = self.param_type_spec()
        attrs = []
        name_tok = self.peek()
        names = [(name_tok.pos, self.identifier())]
        getraises, setraises = [], []
        if readonly and self.at("raises"):
            getraises = self.raises_clause("raises")
        elif not readonly and (self.at("getraises") or self.at("setraises")):
            if self.at("getraises"):
                getraises = self.raises_clause("getraises")
            if self.at("setraises"):
                setraises = self.raises_clause("setraises")
        else:
            while self.accept(","):
                tok = self.peek()
                names.append((tok.pos, self.identifier()))
        for pos, name in names:
            attrs.append(ast.Attribute(pos, readonly, atype, name, getraises, setraises))
        return attrs

    def raises_clause(self, word: str) -> list:
        self.expect(word)
        self.expect("(")
        names = [self.scoped_name()]
        while self.accept(","):
            names.append(self.scoped_name())
        self.expect(")")
        return names

    def operation(self):
        oneway = self.accept("oneway")
        if self.at("void"):
            result = ast.BaseType(self.next().pos, "void")
        else:
            result = self.param_type_spec()
        name_tok = self.peek()
        name = self.identifier()
        params = self.parameters(("in", "out", "inout"))
        raises = self.raises_clause("raises") if self.at("raises") else []
        contexts = []
        if self.accept("context"):
            self.expect("(")
            contexts.append(self.string_literal())
            while self.accept(","):
                contexts.append(self.string_literal())
            self.expect(")")
        return ast.Operation(name_tok.pos, name, oneway, result, params, raises, contexts)

    def parameters(self, modes) -> list:
        self.expect("(")
        params = []
        if self.accept(")"):
            return params
        while True:
            tok = self.peek()
            if not (tok.kind == "keyword" and tok.value in modes):
                self.fail(" or ".join(repr(m) for m in modes))
            mode = self.next().value
            ptype = self.param_type_spec()
            name_tok = self.peek()
            params.append(ast.Param(name_tok.pos, mode, ptype, self.identifier()))
            if not self.accept(","):
                break
        self.expect(")")
        return params

    def param_type_spec(self):
        """base types, string/wstring, scoped names (no sequences: CORBA 3 forbids
        anonymous types here, but omniidl accepts them with a warning, so do we)."""
        return self.simple_type_spec()

    # --- value types ---------------------------------------------------------
    def value_decl(self):
        abstract = custom = False
        if self.at("abstract"):
            self.next()
            abstract = True
        elif self.at("custom"):
            self.next()
            custom = True
        kw = self.next()
        if kw.value not in ("valuetype", "eventtype"):
            self.fail("'valuetype' or 'eventtype'", kw)
        event = kw.value == "eventtype"
        name_tok = self.peek()
        name = self.identifier()
        if self.accept(";"):
            return ast.ValueType(name_tok.pos, name, event, abstract, custom, False, [], [], None)
        if not (abstract or custom or event) and not self.at(":") and not self.at("supports") \
                and not self.at("{"):
            vtype = self.type_spec()
            self.expect(";")
            return ast.ValueBox(name_tok.pos, name, vtype)
        truncatable = False
        bases, supports = [], []
        if self.accept(":"):
            truncatable = self.accept("truncatable")
            bases.append(self.scoped_name())
            while self.accept(","):
                bases.append(self.scoped_name())
        if self.accept("supports"):
            supports.append(self.scoped_name())
            while self.accept(","):
                supports.append(self.scoped_name())
        self.expect("{")
        body = self.body_until_brace(self.value_element)
        self.expect(";")
        return ast.ValueType(name_tok.pos, name, event, abstract, custom, truncatable,
                             bases, supports, body)

    def value_element(self):
        tok = self.peek()
        if self.at("public") or self.at("private"):
            public = self.next().value == "public"
            mtype = self.type_spec()
            decls = self.declarators()
            self.expect(";")
            return ast.StateMember(tok.pos, public, mtype, decls)
        if self.at("factory"):
            self.next()
            name_tok = self.peek()
            name = self.identifier()
            params = self.parameters(("in",))
            raises = self.raises_clause("raises") if self.at("raises") else []
            self.expect(";")
            return ast.Factory(name_tok.pos, name, params, raises)
        return self.export_definition()

    # --- type declarations ---------------------------------------------------
    def type_dcl(self):
        tok = self.peek()
        if tok.value == "typedef":
            self.next()
            ttype = self.type_spec()
            return ast.Typedef(tok.pos, ttype, self.declarators())
        if tok.value == "native":
            self.next()
            name_tok = self.peek()
            return ast.Native(name_tok.pos, self.identifier())
        return self.constr_type()

    def constr_type(self):
        tok = self.peek()
        if tok.value == "struct":
            return self.struct()
        if tok.value == "union":
            return self.union()
        if tok.value == "enum":
            return self.enum()
        self.fail("'struct', 'union' or 'enum'")

    def struct(self):
        self.expect("struct")
        name_tok = self.peek()
        name = self.identifier()
        if not self.at("{"):
            return ast.Struct(name_tok.pos, name, None)
        self.next()
        members = self.member_list()
        return ast.Struct(name_tok.pos, name, members)

    def member_list(self) -> list:
        members = []
        while not self.at("}"):
            if self.peek().kind == "eof":
                self.fail("'}'")
            tok = self.peek()
            mtype = self.type_spec()
            decls = self.declarators()
            self.expect(";")
            members.append(ast.Member(tok.pos, mtype, decls))
        self.expect("}")
        self.pending_meta.clear()  # a pragma inside a struct body has no place to go
        return members

    def except_dcl(self):
        self.expect("exception")
        name_tok = self.peek()
        name = self.identifier()
        self.expect("{")
        return ast.Exception_(name_tok.pos, name, self.member_list())

    def union(self):
        self.expect("union")
        name_tok = self.peek()
        name = self.identifier()
        if not self.at("switch"):
            return ast.Union(name_tok.pos, name, None, None)
        self.next()
        self.expect("(")
        disc = self.simple_type_spec() if not self.at("enum") else self.enum()
        self.expect(")")
        self.expect("{")
        cases = []
        while not self.at("}"):
            labels = []
            case_pos = self.peek().pos
            while self.at("case") or self.at("default"):
                if self.accept("default"):
                    labels.append(None)
                else:
                    self.next()
                    labels.append(self.const_expr())
                self.expect(":")
            if not labels:
                self.fail("'case' or 'default'")
            ctype = self.type_spec()
            decl = self.declarator()
            self.expect(";")
            cases.append(ast.UnionCase(case_pos, labels, ctype, decl))
        self.expect("}")
        if not cases:
            self.reporter.error(name_tok.pos, f"union {name} has no members")
        return ast.Union(name_tok.pos, name, disc, cases)

    def enum(self):
        self.expect("enum")
        name_tok = self.peek()
        name = self.identifier()
        self.expect("{")
        enumerators = []
        while True:
            tok = self.peek()
            enumerators.append(ast.Enumerator(tok.pos, self.identifier()))
            if not self.accept(","):
                break
        self.expect("}")
        return ast.Enum(name_tok.pos, name, enumerators)

    def declarators(self) -> list:
        decls = [self.declarator()]
        while self.accept(","):
            decls.append(self.declarator())
        return decls

    def declarator(self):
        tok = self.peek()
        name = self.identifier()
        dims = []
        while self.accept("["):
            dims.append(self.const_expr())
            self.expect("]")
        return ast.Declarator(tok.pos, name, dims)

    def type_spec(self):
        if self.at("struct") or self.at("union") or self.at("enum"):
            return self.constr_type()
        return self.simple_type_spec()

    def simple_type_spec(self):
        tok = self.peek()
        if tok.kind == "ident" or self.at("::"):
            return self.scoped_name()
        if tok.kind != "keyword":
            self.fail("a type")
        word = tok.value
        if word == "sequence":
            self.next()
            self.expect("<")
            element = self.simple_type_spec()
            bound = None
            if self.accept(","):
                bound = self.const_expr(no_shift=True)
            self.expect_closing_angle()
            return ast.SequenceType(tok.pos, element, bound)
        if word in ("string", "wstring"):
            self.next()
            bound = None
            if self.accept("<"):
                bound = self.const_expr(no_shift=True)
                self.expect_closing_angle()
            return ast.StringType(tok.pos, word == "wstring", bound)
        if word == "fixed":
            self.next()
            if not self.accept("<"):
                return ast.FixedType(tok.pos, None, None)
            digits = self.const_expr(no_shift=True)
            self.expect(",")
            scale = self.const_expr(no_shift=True)
            self.expect_closing_angle()
            return ast.FixedType(tok.pos, digits, scale)
        return ast.BaseType(tok.pos, self.base_type_name())

    def expect_closing_angle(self):
        # `sequence<sequence<long>>`: the lexer made one `>>` token.
        tok = self.peek()
        if tok.kind == "punct" and tok.value == ">>":
            tok.value = ">"
            tok.text = ">"
            return
        self.expect(">")

    def base_type_name(self) -> str:
        tok = self.next()
        word = tok.value
        if word == "unsigned":
            nxt = self.next()
            if nxt.value == "short":
                return "unsigned short"
            if nxt.value == "long":
                if self.accept("long"):
                    return "unsigned long long"
                return "unsigned long"
            self.fail("'short' or 'long'", nxt)
        if word == "long":
            if self.accept("long"):
                return "long long"
            if self.accept("double"):
                return "long double"
            return "long"
        if tok.kind == "keyword" and word in _BASE_TYPE_WORDS:
            return word
        self.fail("a type", tok)

    def scoped_name(self) -> ast.ScopedName:
        tok = self.peek()
        absolute = self.accept("::")
        parts = [self.identifier()]
        while self.at("::"):
            self.next()
            parts.append(self.identifier())
        return ast.ScopedName(tok.pos, parts, absolute)

    # --- constants -----------------------------------------------------------
    def const_dcl(self):
        self.expect("const")
        tok = self.peek()
        if tok.kind == "keyword" and tok.value in ("string", "wstring", "fixed") or \
                tok.kind == "ident" or self.at("::"):
            ctype = self.simple_type_spec()
        else:
            ctype = ast.BaseType(tok.pos, self.base_type_name())
        name_tok = self.peek()
        name = self.identifier()
        self.expect("=")
        return ast.Const(name_tok.pos, ctype, name, self.const_expr())

    _BINARY_LEVELS = (("|",), ("^",), ("&",), ("<<", ">>"), ("+", "-"), ("*", "/", "%"))

    def const_expr(self, no_shift: bool = False, level: int = 0):
        # no_shift: inside <...>, a `>>` closes two template brackets.
        if level == len(self._BINARY_LEVELS):
            return self.unary_expr()
        left = self.const_expr(no_shift, level + 1)
        ops = self._BINARY_LEVELS[level]
        while True:
            tok = self.peek()
            if tok.kind == "punct" and tok.value in ops and not (no_shift and tok.value == ">>"):
                self.next()
                right = self.const_expr(no_shift, level + 1)
                left = ast.BinaryOp(tok.pos, tok.value, left, right)
            else:
                return left

    def unary_expr(self):
        tok = self.peek()
        if tok.kind == "punct" and tok.value in ("-", "+", "~"):
            self.next()
            return ast.UnaryOp(tok.pos, tok.value, self.unary_expr())
        return self.primary_expr()

    def primary_expr(self):
        tok = self.peek()
        if tok.kind == "ident" or self.at("::"):
            return self.scoped_name()
        if self.accept("("):
            inner = self.const_expr()
            self.expect(")")
            return inner
        if tok.kind in ("int", "float", "fixed", "char", "wchar", "string", "wstring"):
            self.next()
            return ast.Literal(tok.pos, tok.kind, tok.value, tok.text)
        if tok.kind == "keyword" and tok.value in ("TRUE", "FALSE"):
            self.next()
            return ast.Literal(tok.pos, "boolean", tok.value == "TRUE", tok.value)
        self.fail("a constant expression")
