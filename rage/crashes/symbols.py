"""Native function names made comparable across builds (the ideas of Socorro's
``CSignatureTool.normalize_cpp_function`` / ``normalize_rust_function``, written anew):
template and generic arguments collapse to ``<T>``, argument lists and cv-qualifiers go,
Rust's symbol hashes and crate disambiguators go, closures and lambdas lose their numbers.
Every step is a single left-to-right scan or a pattern without nested repetition.
"""

from __future__ import annotations

import re

NAME_MAX = 1024

_RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")  # legacy mangling's hash suffix
_CRATE_DISAMBIGUATOR = re.compile(r"\[[0-9a-f]{16}\]")  # v0 mangling: std[e28293b1aa0f68bd]
_CLOSURE = re.compile(r"\{\{?closure(?:#\d{1,6})?\}?\}")  # {{closure}}, {closure#0}
_LAMBDA_NUMBER = re.compile(r"::\$_\d{1,6}")  # clang lambdas: ::$_0
_CLONE = re.compile(r" ?\[clone [^\]]{0,80}\]")  # gcc: [clone .cold], [clone .isra.0]
_SPACE_BEFORE = re.compile(r" (?=[*&,])")
_COMMA = re.compile(r",(?! )")
_ADDRESS = re.compile(r"^0x[0-9a-fA-F]{1,32}$")


def normalise(name: str) -> str:
    """``Box<std::vector<int> >::get(int) const`` -> ``Box<T>::get``."""
    name = " ".join(name[:NAME_MAX].split())
    if _ADDRESS.match(name):
        return "<address>"
    name = _CRATE_DISAMBIGUATOR.sub("", name)
    name = _RUST_HASH.sub("", name)
    name = _CLOSURE.sub("{closure}", name)
    name = _LAMBDA_NUMBER.sub("::$", name)
    name = _CLONE.sub("", name)
    for qualifier in (" const", " &&", " &", " volatile"):
        name = name.removesuffix(qualifier)
    if "::operator" not in name and not name.startswith("operator"):
        name = _drop_arguments(name)
    name = _collapse_generics(name)
    name = _SPACE_BEFORE.sub("", name)
    return _COMMA.sub(", ", name).strip()


def _drop_arguments(name: str) -> str:
    # the argument list is the last balanced (...) at the end: "f(int, char const*)"
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        if name[i] == ")":
            depth += 1
        elif name[i] == "(":
            depth -= 1
            if depth == 0:
                # "(anonymous namespace)" is a name, not arguments
                return name[:i] if i > 0 and not name[i:].startswith("(anonymous") else name
    return name


def _collapse_generics(name: str) -> str:
    # outermost <...> become <T>, except a Rust "<A as Trait>" qualified path whose
    # inside names the code (Socorro keeps those)
    out: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(name):
        if ch == "<" and not name.startswith("<-", i) and not _is_operator(name, i):
            if depth == 0:
                start = i
            depth += 1
        elif ch == ">" and depth > 0 and not name.startswith("->", i - 1):
            depth -= 1
            if depth == 0:
                inside = name[start + 1:i]
                if " as " in inside and start == 0:
                    out.append("<" + _collapse_generics(inside) + ">")
                else:
                    out.append("<T>")
        elif depth == 0:
            out.append(ch)
    if depth:  # unbalanced (a cut name): keep what was before the open bracket
        out.append("<T>")
    return "".join(out)


def _is_operator(name: str, i: int) -> bool:
    return name.endswith("operator", 0, i) or name.endswith("operator<", 0, i)
