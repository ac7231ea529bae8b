"""The engine's regular expressions compiled once, kept on disk for the next process.

Python compiles a regular expression by parsing it in Python: the engine's ~130 patterns
took 35-40 ms at the start of every process that redacts (the combined key/value regex
alone 12 ms), before a report's workers could start, and a fifth of a small ``rage
redact``. Their compiled form, the regex engine's code, is kept in ``<rage home>/.cache/``
beside the Hyperscan databases (:mod:`rage.redact.dbcache`): loading it takes about 1 ms.
So are facts that take parsing a pattern (:func:`derived`: which literals a catalogue
format's match starts with, 5 ms for the catalogue), under a hash of the code that made
them.

The file is named by a hash of the Python build and its regex engine's version
(``_sre.MAGIC``); it is 0600, written atomically, and loaded only if it is a regular file
this user owns that no one else can write (:func:`rage.fsutil.read_own`), as the Hyperscan
databases are: code for the regex engine is never read from a file someone else could have
planted. A damaged file is refused whole (its entries carry a CRC-32: what tells damage
from a file that is whole; no one else can have written it, so a cryptographic hash of its
~230 KB, ~4M instructions at every report's start, would tell nothing more), and the regex
engine checks the code it is given besides; a pattern whose code is refused is compiled as usual,
and the file saved again. It holds what the process used, so a pattern no longer in rage
leaves it with the next save.

Only rage's own patterns go through here: the engine's forms and the catalogue, with the
user's and host's names as the Hyperscan databases hold them; never a literal (a value
registered or learned: a secret) nor a user's own pattern, which ``re.compile`` compiles as
ever. Where the regex engine's internal interface is not the one this module knows (another
Python), every pattern is compiled by ``re.compile``.
"""

from __future__ import annotations

import marshal
import os
import re
import sys
import zlib
from collections.abc import Callable
from typing import Any, AnyStr, TypeVar

from rage.digest import sha256

T = TypeVar("T")

MAX_BYTES = 16 << 20  # far above what the engine's patterns compile to (~200 KB)
_PREFIX = "regex-"
_FORMAT = 4  # 4: a CRC-32 of the body, not its sha256

# (pattern, flags) -> the arguments of _sre.compile after the pattern: final flags, code,
# number of groups, their names to numbers and numbers to names
Entry = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]
Key = tuple[str | bytes, int]

_loaded: dict[Key, Entry] | None = None  # the file's entries, read at the first compile
_used: dict[Key, Entry] = {}  # what this process compiled: what the next save writes
_patterns: dict[Key, Any] = {}  # compiled in this process, returned again
_facts: dict[Any, Any] | None = None  # what derived() stored: the file's, then this process's
_facts_used: dict[Any, Any] = {}
_MEMO_MAX = 512
_dirty = False  # compiled here, not loaded: worth a save
_saved = False
parsed = 0  # patterns this process parsed (tests; 0 when all came from the file)
_sre: Any = None  # the regex engine's module, where its interface is the one known here
_off = False


def compiled(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """``re.compile(pattern, flags)``, from the code stored by an earlier process when
    there is one (see the module's text); the same object again within a process."""
    global _dirty, parsed
    if _off or not _usable():
        return re.compile(pattern, flags)
    key: Key = (pattern, int(flags))
    got: re.Pattern[AnyStr] | None = _patterns.get(key)
    if got is not None:
        return got
    entry = _table().get(key)
    if entry is not None:
        try:
            got = _sre.compile(pattern, *entry)
        except Exception:  # refused by the regex engine: compiled anew below, saved right
            got = None
    if got is None or entry is None:
        try:
            entry = _code(pattern, int(flags))
            got = _sre.compile(pattern, *entry)
        except re.error:
            raise
        except Exception:  # an interface not the one known here: as Python compiles it
            _disable()
            return re.compile(pattern, flags)
        _dirty = True
        parsed += 1
    assert got is not None and entry is not None
    if len(_used) < _MEMO_MAX:
        _used[key] = entry
    if len(_patterns) >= _MEMO_MAX:  # as re's own cache: engines for many names (tests)
        _patterns.clear()
    _patterns[key] = got
    return got


def derived(fn: Callable[[str], T], pattern: str,
            uses: tuple[Callable[..., Any], ...] = ()) -> T:
    """``fn(pattern)``, a fact about one of rage's own patterns that takes parsing it (the
    literals a catalogue format's match starts with: 147 parses, 5 ms), kept in the same
    file as the code, under ``fn``'s name and its code's hash, and those of the functions
    it ``uses`` (a fact made by other code is made again, whatever the version says); the
    value must be what marshal writes (None, str, tuple, set...)."""
    global _dirty, parsed
    key = (fn.__qualname__, "".join(map(_fingerprint, (fn, *uses))), pattern)
    table = _facts_table()
    if key in table:
        value: T = table[key]
    else:
        value = table[key] = fn(pattern)
        _dirty = True
        parsed += 1
    if len(_facts_used) < _MEMO_MAX:
        _facts_used[key] = value
    return value


_FINGERPRINTS: dict[Callable[..., Any], str] = {}


def _fingerprint(fn: Callable[..., Any]) -> str:
    """A hash of ``fn``'s code, its nested functions' and constants with it."""
    got = _FINGERPRINTS.get(fn)
    if got is None:
        got = _FINGERPRINTS[fn] = sha256(marshal.dumps(fn.__code__)).hexdigest()[:16]
    return got


def save() -> None:
    """Write what this process compiled, if any of it was not loaded; once a process (the
    engine calls it after its first build: what later engines of the process compile, for
    other names, is theirs). Best effort: a report never fails because a cache could not
    be written."""
    global _dirty, _saved
    if not _dirty or _off or _saved:
        return
    _saved = True
    try:
        from rage.fsutil import is_own_dir, private_dir, write_atomic
        from rage.redact.dbcache import prune

        path = _path()
        head = os.path.dirname(path)
        private_dir(head)
        if not is_own_dir(head):  # never into a planted symlink's target
            return
        body = marshal.dumps((_used, _facts_used))
        write_atomic(path, marshal.dumps((_FORMAT, zlib.crc32(body), body)))
        _dirty = False
        prune(head, _PREFIX, 2)
    except Exception:  # any failure only costs the next process its compiles
        pass


def _usable() -> bool:
    global _sre
    if _sre is None:
        try:
            import _sre as sre_module  # type: ignore[import-not-found]
            from re import _compiler, _parser  # type: ignore[attr-defined]  # noqa: F401
        except ImportError:
            _disable()
            return False
        _sre = sre_module
    return True


def _disable() -> None:
    global _off
    _off = True


def _path() -> str:
    from rage.paths import home_root_str

    h = sha256(f"{sys.version}\0{_sre.MAGIC}\0{_sre.CODESIZE}\0{_FORMAT}".encode())
    return os.path.join(home_root_str(), ".cache", f"{_PREFIX}{h.hexdigest()[:40]}.bin")


def _table() -> dict[Key, Entry]:
    global _loaded, _facts
    if _loaded is None:
        _loaded, _facts = _load()
    return _loaded


def _facts_table() -> dict[Any, Any]:
    _table()
    assert _facts is not None
    return _facts


def _load() -> tuple[dict[Key, Entry], dict[Any, Any]]:
    from rage.fsutil import read_own

    try:
        data = read_own(_path(), MAX_BYTES)
        if not data:
            return {}, {}
        fmt, digest, body = marshal.loads(data)
        if fmt != _FORMAT or zlib.crc32(body) != digest:
            return {}, {}
        table, facts = marshal.loads(body)
    except Exception:  # absent, not ours, damaged: each pattern compiled anew
        return {}, {}
    if not isinstance(table, dict) or not isinstance(facts, dict):
        return {}, {}
    return table, facts


def _code(pattern: str | bytes, flags: int) -> Entry:
    """What ``re._compiler.compile`` hands the regex engine for ``pattern``."""
    from re import _compiler, _parser  # type: ignore[attr-defined]

    p = _parser.parse(pattern, flags)
    code = [int(c) for c in _compiler._code(p, flags)]  # plain ints: marshal takes them
    groupindex = dict(p.state.groupdict)
    indexgroup: list[str | None] = [None] * p.state.groups
    for name, i in groupindex.items():
        indexgroup[i] = name
    return int(flags | p.state.flags), code, p.state.groups - 1, groupindex, tuple(indexgroup)
