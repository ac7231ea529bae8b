"""Every branch of every catalogue regex, and the texts that show each one is needed.

A *site* is a choice inside a regex's parse tree: one alternative of an alternation, one
literal of a character class of literals (``[sr]``), an optional part taken or left out, a
``*``-repeated part used at all. Its *mutant* is the regex with that choice removed (the
alternative or literal dropped, the optional part made required or impossible). A text
*covers* a site when the regex and its mutant find different matches in it: then a sample
or witness of that text fails if someone deletes the branch (the Stripe entry losing
``prod`` went unnoticed because no sample spelled ``sk_prod_``).

``branch_witnesses.txt`` holds, for the sites no corpus sample covers, one text a line
(``kind<TAB>text``; the text may hold tabs) generated from the parse tree.
``python -m tests.corpus.branches`` appends witnesses for sites nothing covers yet and
never deletes one: a witness whose branch was removed from the catalogue keeps failing
until someone deletes its line on purpose. Uses the ``re`` parser's tree (``re._parser``,
CPython 3.11+): internal, but the one faithful reading of what ``re`` compiles.
"""

from __future__ import annotations

import random
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from re import _compiler as sre_compile  # type: ignore[attr-defined]
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

from rage.redact.formats import FORMATS, SecretFormat
from tests.corpus.secrets import SAMPLES, sample

WITNESSES = Path(__file__).parent / "branch_witnesses.txt"
HEADER = """\
# One text a line (kind<TAB>text) for each catalogue branch no sample in secrets.py spells
# out: tests/test_redact_catalogue_branches.py checks that the redactor removes each and
# that every branch is covered. Appended by: python -m tests.corpus.branches (never
# deleted: delete a line only when its branch left the catalogue on purpose).
"""
SALTS = ("", "branch-1", "branch-2")  # more draws of each sample: more classes' letters
_REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT)
Step = int | tuple[str, int]


@dataclass(frozen=True)
class Site:
    """One choice in a regex: ``what`` at ``path`` (indices into the parse tree)."""

    what: str  # drop-branch | drop-literal | never | always
    path: tuple[Step, ...]
    index: int = 0

    def describe(self, regex: str) -> str:
        _, _, av = _at(sre_parse.parse(regex), self.path)
        if self.what == "drop-branch":
            return f"alternative {self.index + 1} of {len(av[1])}: {_show(av[1][self.index])!r}"
        if self.what == "drop-literal":
            return f"class literal {chr(av[self.index][1])!r}"
        part = _show(av[2])
        return f"optional {part!r} left out" if self.what == "always" else f"{part!r} used"


def _show(sub: Any) -> str:
    """A readable form of a parse subtree: a generated instance of it."""
    return _Gen(random.Random(0), {}).emit(sub, ())


def sites(regex: str) -> list[Site]:
    return list(_sites(sre_parse.parse(regex), ()))


def _sites(sub: Any, path: tuple[Step, ...]) -> Iterator[Site]:
    for i, (op, av) in enumerate(sub.data):
        here = (*path, i)
        if op is C.BRANCH:
            for j, alt in enumerate(av[1]):
                yield Site("drop-branch", here, j)
                yield from _sites(alt, (*here, ("b", j)))
        elif op is C.IN:
            if len(av) > 1 and all(o is C.LITERAL for o, _ in av):
                yield from (Site("drop-literal", here, j) for j in range(len(av)))
        elif op is C.SUBPATTERN:
            yield from _sites(av[3], (*here, ("s", 0)))
        elif op in _REPEATS:
            if av[0] == 0:
                yield Site("never", here)
                if av[1] == 1:
                    yield Site("always", here)
            yield from _sites(av[2], (*here, ("r", 0)))
        elif op in (C.ASSERT, C.ASSERT_NOT):
            yield from _sites(av[1], (*here, ("a", 0)))
        elif op is C.ATOMIC_GROUP:
            yield from _sites(av, (*here, ("g", 0)))


def _child(op: Any, av: Any, step: tuple[str, int]) -> Any:
    kind, j = step
    return {"b": lambda: av[1][j], "s": lambda: av[3], "r": lambda: av[2],
            "a": lambda: av[1], "g": lambda: av}[kind]()


def _at(tree: Any, path: tuple[Step, ...]) -> tuple[Any, Any, Any]:
    """(the subpattern holding the node at ``path``, the node's op, its argument)."""
    sub, op, av = tree, None, None
    for step in path:
        if isinstance(step, int):
            op, av = sub.data[step]
        else:
            sub = _child(op, av, step)
    return sub, op, av


def mutant(regex: str, site: Site) -> re.Pattern[str]:
    tree = sre_parse.parse(regex)
    sub, op, av = _at(tree, site.path)
    i = site.path[-1]
    assert isinstance(i, int)
    if site.what == "drop-branch":
        rest = [alt for j, alt in enumerate(av[1]) if j != site.index]
        sub.data[i] = (op, (av[0], rest)) if rest else (C.IN, [])  # nothing left: never
    elif site.what == "drop-literal":
        sub.data[i] = (op, [item for j, item in enumerate(av) if j != site.index])
    else:
        n = 0 if site.what == "never" else 1
        sub.data[i] = (op, (n, n, av[2]))
    return sre_compile.compile(tree, tree.state.flags)  # type: ignore[no-any-return]


def _found(pattern: re.Pattern[str], text: str) -> list[tuple[int, ...]]:
    secret = "secret" in pattern.groupindex
    return [m.span() + (m.span("secret") if secret else ()) for m in pattern.finditer(text)]


def covers(regex: str, site: Site, text: str) -> bool:
    return _found(re.compile(regex), text) != _found(mutant(regex, site), text)


def texts_of(kind: str) -> list[str]:
    """The corpus samples of ``kind`` (several draws each) and its witnesses."""
    out = [sample(name, salt)[2] for name, (k, _) in SAMPLES.items() if k == kind
           for salt in SALTS]
    return out + [text for k, text in witnesses() if k == kind]


def witnesses() -> list[tuple[str, str]]:
    if not WITNESSES.exists():
        return []
    lines = WITNESSES.read_text().splitlines()
    return [(k, t) for k, _, t in (ln.partition("\t") for ln in lines if ln and ln[0] != "#")]


def uncovered(fmt: SecretFormat, texts: list[str]) -> list[Site]:
    return [s for s in sites(fmt.regex) if not any(covers(fmt.regex, s, t) for t in texts)]


# -- generating a witness from the parse tree -----------------------------------------------

_CATEGORY = {C.CATEGORY_DIGIT: "0123456789", C.CATEGORY_WORD: "abcxyz019_",
             C.CATEGORY_SPACE: " ", C.CATEGORY_NOT_DIGIT: "abcx", C.CATEGORY_NOT_WORD: "-. ",
             C.CATEGORY_NOT_SPACE: "abc019"}
_ANY = "abcdefxyzABCXYZ0123456789"


class _Gen:
    """One random instance of a parse tree, with the choices in ``forced`` (path: how many
    repeats or which alternative/literal) made as told."""

    def __init__(self, rng: random.Random, forced: dict[tuple[Step, ...], int]) -> None:
        self.rng, self.forced, self.groups = rng, forced, dict[int, str]()

    def emit(self, sub: Any, path: tuple[Step, ...]) -> str:
        return "".join(self._one(op, av, (*path, i)) for i, (op, av) in enumerate(sub.data))

    def _one(self, op: Any, av: Any, here: tuple[Step, ...]) -> str:
        pick = self.forced.get(here)
        if op is C.LITERAL:
            return chr(av)
        if op is C.NOT_LITERAL:
            return "x" if av != ord("x") else "y"
        if op is C.ANY:
            return self.rng.choice(_ANY)
        if op is C.IN:
            return self._char(av, pick)
        if op is C.BRANCH:
            j = self.rng.randrange(len(av[1])) if pick is None else pick
            return self.emit(av[1][j], (*here, ("b", j)))
        if op is C.SUBPATTERN:
            text = self.emit(av[3], (*here, ("s", 0)))
            if av[0] is not None:
                self.groups[av[0]] = text
            return text
        if op in _REPEATS:
            lo, hi = av[0], av[1]
            if pick is not None:
                n = pick
            elif hi <= 500 and self.rng.random() < 0.25:
                n = hi  # at its longest, where a branch after it can still matter
            else:
                n = self.rng.randint(lo, min(hi, lo + 8))
            return "".join(self.emit(av[2], (*here, ("r", 0))) for _ in range(n))
        if op is C.GROUPREF:
            return self.groups.get(av, "")
        if op is C.ATOMIC_GROUP:
            return self.emit(av, (*here, ("g", 0)))
        return ""  # AT, ASSERT, ASSERT_NOT: zero-width (a witness is checked afterwards)

    def _char(self, items: list[tuple[Any, Any]], pick: int | None) -> str:
        if items and items[0][0] is C.NEGATE:
            return next(c for c in _ANY if re.fullmatch(_class(items), c))
        chosen = items if pick is None else [items[pick]]
        # uniform over the characters, not the items: `[A-Za-z0-9+/]` is mostly letters
        return self.rng.choice("".join(_chars(op, av) for op, av in chosen))


def _chars(op: Any, av: Any) -> str:
    if op is C.LITERAL:
        return chr(av)
    if op is C.RANGE:
        return "".join(map(chr, range(av[0], av[1] + 1)))
    return _CATEGORY[av]


def _class(items: list[tuple[Any, Any]]) -> re.Pattern[str]:
    sub = sre_parse.SubPattern(sre_parse.State(), [(C.IN, items)])
    return sre_compile.compile(sub, 0)  # type: ignore[no-any-return]


def _forcing(site: Site, regex: str) -> list[dict[tuple[Step, ...], int]]:
    """Choices that take the branch the site removes (for an optional part: leave it out)."""
    _, _, av = _at(sre_parse.parse(regex), site.path)
    if site.what in ("drop-branch", "drop-literal"):
        return [{site.path: site.index}]
    if site.what == "always":
        return [{site.path: 0}]
    return [{site.path: n} for n in range(1, min(av[1], 3) + 1)]


def witness(fmt: SecretFormat, site: Site, tries: int = 200) -> str | None:
    """A text the format matches whole, that covers ``site``, holding one of its prefixes."""
    regex = fmt.regex
    whole = re.compile(regex)
    for n in range(tries):
        rng = random.Random(f"rage-branch:{fmt.kind}:{site}:{n}")
        for forced in _forcing(site, regex):
            text = _Gen(rng, forced).emit(sre_parse.parse(regex), ())
            if (whole.fullmatch(text) and any(p in text for p in fmt.prefixes)
                    and "\n" not in text and covers(regex, site, text)):
                return text
    return None


def main() -> int:
    found = witnesses()
    added: list[tuple[str, str]] = []
    failed = 0
    for fmt in FORMATS:
        texts = texts_of(fmt.kind) + [t for k, t in added if k == fmt.kind]
        for site in uncovered(fmt, texts):
            if any(covers(fmt.regex, site, t) for k, t in added if k == fmt.kind):
                continue
            text = witness(fmt, site)
            if text is None:
                failed += 1
                print(f"{fmt.kind}: no witness for {site.describe(fmt.regex)}", file=sys.stderr)
            else:
                added.append((fmt.kind, text))
    lines = [f"{k}\t{t}" for k, t in found + added]
    WITNESSES.write_text(HEADER + "".join(line + "\n" for line in lines))
    print(f"{len(added)} witnesses added, {len(found)} kept, {failed} branches without one")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
