"""IDL that costs exponential time or deep recursion to a naive front end."""

from __future__ import annotations


def diamond(levels: int) -> str:
    """I<n> inherits A<n> and B<n>, both inheriting I<n-1>: 2**levels paths to I0."""
    out = ["interface I0 { void op0(); };"]
    for i in range(1, levels + 1):
        out += [f"interface A{i} : I{i - 1} {{ void fa{i}(); }};",
                f"interface B{i} : I{i - 1} {{ void fb{i}(); }};",
                f"interface I{i} : A{i}, B{i} {{ void op{i}(); }};"]
    return "\n".join(out) + "\n"


def chain(length: int) -> str:
    out = ["interface C0 { void op0(); };"]
    out += [f"interface C{i} : C{i - 1} {{ void op{i}(); }};" for i in range(1, length)]
    return "\n".join(out) + "\n"
