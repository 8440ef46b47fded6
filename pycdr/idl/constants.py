"""Constant expressions (CORBA 3.0 section 3.10.2): integer, floating point,
fixed point, character, string, boolean and enumeration constants.

Integer expressions are evaluated exactly and then checked against the
range of the target type; division and remainder truncate toward zero as in
C/C++.  Fixed-point constants are decimals with at most 31 digits.
"""

from __future__ import annotations

from decimal import Decimal, localcontext

from . import ast
from .scope import BaseRef, FixedRef, NamedRef, StringRef, unalias

INTEGER_RANGES = {
    "short": (-2**15, 2**15 - 1), "unsigned short": (0, 2**16 - 1),
    "long": (-2**31, 2**31 - 1), "unsigned long": (0, 2**32 - 1),
    "long long": (-2**63, 2**63 - 1), "unsigned long long": (0, 2**64 - 1),
    "octet": (0, 255),
}
FLOAT_TYPES = ("float", "double", "long double")
# Integer expressions are evaluated in 64 bits (CORBA 3.0 section 3.10.2:
# long long or unsigned long long): an intermediate value outside both
# ranges is an error, which also keeps the arithmetic on small numbers.
INTERMEDIATE_RANGE = (-2**63, 2**64 - 1)


class ConstError(Exception):
    def __init__(self, pos, message):
        super().__init__(message)
        self.pos = pos
        self.message = message


def category(ref) -> str | None:
    """The kind of constant a type can hold: int float fixed char wchar string
    wstring boolean enum (None: not a constant type)."""
    ref = unalias(ref)
    if isinstance(ref, BaseRef):
        if ref.name in INTEGER_RANGES:
            return "int"
        if ref.name in FLOAT_TYPES:
            return "float"
        if ref.name in ("char", "wchar", "boolean"):
            return ref.name
        return None
    if isinstance(ref, StringRef):
        return "wstring" if ref.wide else "string"
    if isinstance(ref, FixedRef):
        return "fixed"
    if isinstance(ref, NamedRef) and ref.symbol.kind == "enum":
        return "enum"
    return None


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


class Evaluator:
    """Evaluates expressions; ``resolve(scoped_name)`` gives the Symbol of a name."""

    def __init__(self, resolve):
        self.resolve = resolve

    def evaluate(self, expr, ref, pos=None):
        """The value of ``expr`` as a constant of type ``ref`` (range-checked)."""
        cat = category(ref)
        if cat is None:
            raise ConstError(pos or expr.pos, "not a valid constant type")
        # ~ depends on the target type (signed or not, 32 or 64 bits).
        self.integer_type = unalias(ref).name if cat == "int" else None
        value = self.eval(expr, cat)
        return self.check(value, ref, cat, expr.pos)

    def check(self, value, ref, cat, pos):
        base = unalias(ref)
        if cat == "int":
            lo, hi = INTEGER_RANGES[base.name]
            if not lo <= value <= hi:
                raise ConstError(pos, f"value {value} out of range for {base.name}")
        elif cat == "float":
            if base.name == "float" and abs(value) > 3.4028234663852886e38 and value != float("inf"):
                raise ConstError(pos, f"value {value} out of range for float")
        elif cat == "fixed":
            digits = len(value.as_tuple().digits)
            if digits > 31:
                raise ConstError(pos, "fixed constant has more than 31 digits")
        elif cat == "enum":
            if value.info.get("enum") is not base.symbol:
                raise ConstError(pos, f"{value.scoped_name()} is not an enumerator of "
                                      f"{base.symbol.scoped_name()}")
        elif cat in ("string", "wstring") and base.bound and len(value) > base.bound:
            raise ConstError(pos, f"string longer than its bound {base.bound}")
        return value

    def eval(self, expr, cat):
        if isinstance(expr, ast.Literal):
            return self.literal(expr, cat)
        if isinstance(expr, ast.ScopedName):
            sym = self.resolve(expr)
            if sym.kind == "enumerator":
                if cat != "enum":
                    raise ConstError(expr.pos, f"enumerator {expr} used where a {cat} "
                                               "constant is expected")
                return sym
            if sym.kind != "const":
                raise ConstError(expr.pos, f"{expr} is not a constant")
            if sym.value is None:
                raise ConstError(expr.pos, f"constant {expr} has no valid value")
            got = category(sym.type)
            if got != cat and not (got == "int" and cat in ("float", "fixed")) and \
                    not (got == "float" and cat == "fixed"):
                raise ConstError(expr.pos, f"{expr} is a {got} constant, not {cat}")
            value = sym.value
            if cat == "float":
                return float(value)
            if cat == "fixed" and not isinstance(value, Decimal):
                return Decimal(value)
            return value
        if isinstance(expr, ast.UnaryOp):
            if cat not in ("int", "float", "fixed"):
                raise ConstError(expr.pos, f"operator {expr.op} does not apply to {cat}")
            v = self.eval(expr.operand, cat)
            if expr.op == "-":
                return -v
            if expr.op == "+":
                return v
            if cat != "int":
                raise ConstError(expr.pos, "~ applies to integers only")
            # CORBA 3.0 section 3.10.2: -(v+1) for signed types, (2**32-1)-v for
            # unsigned long (and the shorter unsigned types, promoted to it),
            # (2**64-1)-v for unsigned long long.
            target = self.integer_type
            if target == "unsigned long long":
                return (2**64 - 1) - v
            if target in ("unsigned long", "unsigned short", "octet"):
                return (2**32 - 1) - v
            return -(v + 1)
        if isinstance(expr, ast.BinaryOp):
            value = self.binary(expr, cat)
            if cat == "int" and not INTERMEDIATE_RANGE[0] <= value <= INTERMEDIATE_RANGE[1]:
                raise ConstError(expr.pos, f"integer expression overflows 64 bits (operator "
                                           f"{expr.op})")
            return value
        raise ConstError(expr.pos, "not a constant expression")

    def binary(self, expr, cat):
        op = expr.op
        if cat not in ("int", "float", "fixed"):
            raise ConstError(expr.pos, f"operator {op} does not apply to {cat}")
        if cat != "int" and op in ("|", "^", "&", "<<", ">>", "%"):
            raise ConstError(expr.pos, f"operator {op} applies to integers only")
        a = self.eval(expr.left, cat)
        b = self.eval(expr.right, cat)
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op in ("/", "%"):
            if b == 0:
                raise ConstError(expr.pos, "division by zero")
            if cat == "int":
                q = _trunc_div(a, b)
                return q if op == "/" else a - q * b
            if cat == "fixed":
                with localcontext() as ctx:
                    ctx.prec = 31
                    return a / b
            return a / b
        if op == "|":
            return a | b
        if op == "^":
            return a ^ b
        if op == "&":
            return a & b
        if op in ("<<", ">>"):
            if not 0 <= b < 64:
                raise ConstError(expr.pos, f"shift by {b} (must be 0..63)")
            return a << b if op == "<<" else a >> b
        raise ConstError(expr.pos, f"unknown operator {op}")

    def literal(self, lit: ast.Literal, cat):
        kind = lit.kind
        # As omniidl: no integer literal in a floating-point expression.
        ok = {"int": ("int",), "float": ("float",), "fixed": ("fixed", "int", "float"),
              "char": ("char",), "wchar": ("wchar", "char"), "string": ("string",),
              "wstring": ("wstring", "string"), "boolean": ("boolean",), "enum": ()}[cat]
        if kind not in ok:
            raise ConstError(lit.pos, f"{kind} literal {lit.text} where a {cat} constant "
                                      "is expected")
        if cat == "float":
            return float(lit.value)
        if cat == "fixed":
            text = lit.text.rstrip("dD") if kind == "fixed" else str(lit.value)
            return Decimal(text)
        return lit.value
