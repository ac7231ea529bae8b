"""The redaction engine: secrets and personal data never leave the machine in clear.

What is replaced (the catalogue in :mod:`rage.redact.formats`, the rules in
:mod:`rage.redact.patterns`, :mod:`rage.redact.multiline` and :mod:`rage.redact.argv`),
after terminal escapes, ``\r`` redraws and backspaces are resolved
(:mod:`rage.redact.normalize`: the output is the normalised text):

- documented provider credential formats (about 140: GitHub, AWS, Slack, Stripe, SendGrid,
  Twilio, Vault, JWTs...) -> ``[REDACTED:<kind>]``;
- values across lines (YAML block scalars, wrapped bearer tokens, k8s name/value pairs and
  Secret data, .ppk, CSV/TSV secret columns), and argv read as a command line;
- private key blocks (PEM, OpenSSH, PGP), BEGIN to END, whole -> ``[REDACTED:private-key]``;
- values stored under a secret-looking name: ``key=value``, ``"key": "value"``, YAML
  ``key: value``, ``--password x``, HTTP ``Authorization:`` (the scheme word is kept),
  ``Cookie:`` / ``Set-Cookie:``: the key stays, the value goes;
- URL credentials: ``https://user:pw@host/`` -> ``https://[REDACTED:url-credentials]@host/``
  (user and password both go: the "user" is often a token; a short plain login name without
  a password, as in ``ssh://git@host``, is kept);
- literals registered with :func:`register_literal` (``rage.redact_value``) and user regexes;
- pseudonyms (``pseudonymize=True``): the home directory -> ``~``, the user name -> ``user-1``,
  other people's ``/home/<name>`` -> ``/home/user-2``..., the host name -> ``host-1``. Names are
  whole-word, case-sensitive for users and case-insensitive for hosts; names shorter than 3
  characters and shared words/system accounts (``root``, ``runner``, ``ubuntu``,
  ``localhost``...) are left alone, but their home directory (``/root``) still becomes ``~``.

How it stays fast: matching is line-local. A position is only tried when a trigger literal
(``b"ghp_"``, ``b"token"``, the user name...) says a match may start there
(:mod:`rage.redact.native`: one Hyperscan pass with the optional ``fast`` extra, which also
tells a secret word in a key shape from the same word in prose; else :mod:`rage.redact.scan`:
``bytes.find``, walks from rare anchor bytes and byte-group regexes); most log lines contain
none. Streams are cut at line boundaries (and before the opener of a multi-line value near a
block's end), so ``stream()`` gives what ``bytes()`` gives on the whole input; a private key
block may span lines and is matched within :data:`PRIVATE_KEY_MAX` bytes in both modes. Lines
longer than :data:`MAX_SEGMENT` are cut in streams only, after a separator (``,`` ``;`` ``}``,
else a space or quote) so a token crossing the mark is seen whole. A large stream is
redacted in worker processes, block by block, in order (:mod:`rage.redact.parallel`), with
the same output and counts as in-process; given its size, a large stream goes to the workers
from its first block.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rage.fsutil import open_private
from rage.redact.engine import MAX_SEGMENT, PRIVATE_KEY_MAX, RedactionEngine
from rage.redact.handlers import host_names
from rage.redact.literals import register_literal, registered_literals, scrub_literals
from rage.sensitive import looks_harmless_value, looks_secret_name

if TYPE_CHECKING:
    import mmap

BLOCK = 1024 * 1024  # bytes a stream gathers before redacting a batch of whole lines
_CHUNK = 1024 * 1024
_MEMO_MAX = 1 << 16  # distinct strings :meth:`Redactor.data` remembers (a long-lived one)
FEW_LEARNED = 16  # fewer learned values are each searched for: cheaper than a compilation

__all__ = ["BLOCK", "MAX_SEGMENT", "PRIVATE_KEY_MAX", "Redactor", "register_literal",
           "scrub_literals"]


def _default_home() -> str | None:
    try:
        return str(Path.home())
    except (RuntimeError, KeyError, OSError):
        return None


def _default_user() -> str | None:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError, ImportError):
        return None


def _default_hostname() -> str | None:
    uname = getattr(os, "uname", None)  # what gethostname() gives, without importing socket
    if uname is not None:  # (3 ms at a report's start)
        return str(uname().nodename)
    import socket

    try:
        return socket.gethostname()
    except OSError:
        return None


_COMMAND_MAX = 64 * 1024
_ARGV_KEYS = frozenset({"argv", "cmdline", "command_line", "args"})
_Bytes = bytes  # the Redactor.bytes method shadows the builtin inside the class
# a listing asks it of the same few keys hundreds of times (it is a pure function)
_secret_name = functools.lru_cache(maxsize=4096)(looks_secret_name)


class Redactor(RedactionEngine):
    """Redacts text, bytes, streams, files and JSON-like data; counts what it replaced.

    One instance keeps one pseudonym table, so the same name always gets the same pseudonym.
    Not thread-safe: use one Redactor per thread (or per report).
    """

    def __init__(self, *, literals: Iterable[str] = (), patterns: Iterable[str] = (),
                 pseudonymize: bool = True, home: str | None = None, user: str | None = None,
                 hostname: str | None = None) -> None:
        if pseudonymize:
            home = home if home is not None else _default_home()
            user = user if user is not None else _default_user()
            hostname = hostname if hostname is not None else _default_hostname()
        else:
            home = user = hostname = None
        super().__init__(literals=literals, patterns=patterns, pseudonymize=pseudonymize,
                         home=home, user=user, hosts=host_names(hostname))
        # what :meth:`data` made of each distinct string, for all its calls (see _text_once)
        self._memo: dict[str, tuple[tuple[Any, ...], str, dict[str, int]]] = {}

    # -- public API ---------------------------------------------------------------------

    @property
    def counts(self) -> dict[str, int]:
        """Replacements so far, by kind (a copy)."""
        return dict(self._counts)

    def learn(self, environments: Iterable[Mapping[str, str]], argv: Sequence[str]) -> int:
        """Redact, from now on, wherever they appear, the secret-shaped values that this
        Redactor removes from ``environments`` and ``argv`` (:mod:`rage.redact.known`).
        Counts and pseudonyms stay as they were: the context is redacted again where it
        is written. Returns how many values were learned."""
        from rage.redact.known import known_secrets

        saved = (dict(self._counts), dict(self._pseudonyms), self._next_user,
                 dict(self._homes))
        try:
            found = known_secrets(self, environments, argv)
        finally:
            self._counts, self._pseudonyms, self._next_user, self._homes = saved
            # the names numbered meanwhile are forgotten: a table as long as one of them
            # may hold other names, which the state (their number) would not tell apart
            self._memo.clear()
        return len(self.add_literals(found))

    def start_learning(self) -> None:
        """Remember, from now on, the values redacted under a secret name (in this process:
        not in the workers of a large stream) for :meth:`learned`."""
        self._learned = {}

    def learned(self) -> tuple[str, ...]:
        """The secret-shaped values redacted under a name since :meth:`start_learning`,
        that are not literals yet; they become literals of this Redactor (redacted
        wherever they appear from now on). Learning stops."""
        return self.add_literals(self.take_learned())

    def take_learned(self) -> tuple[str, ...]:
        """:meth:`learned`'s values, not made literals yet (see :meth:`add_literals`: each
        addition costs the literals' finder a compilation at the next use). Learning stops."""
        from rage.redact.known import learnable

        found, self._learned = self._learned or {}, None
        values = []
        for v in found:
            try:
                values.append(v.decode("utf-8"))
            except UnicodeDecodeError:
                continue  # not text a literal can match
        return tuple(v for v in dict.fromkeys(values)
                     if learnable(v) and v not in self._own_literals)

    def replace_learned(self, data: bytes, learned: Sequence[str]) -> bytes:
        """``data`` (already redacted) with every occurrence of the ``learned`` values
        replaced and counted as ``[REDACTED:literal]``, longest first.

        Many values are found in one Hyperscan pass, not a search of ``data`` each: a report
        of an 8 MiB log naming a secret every hundred lines learned 583 values and spent
        0.61 s on 583 searches (the redaction itself took 0.06 s); the pass compiles them in
        ~15 ms and finds none in 3 ms."""
        import bisect

        from rage.redact.native import find_all

        values = sorted({s.encode() for s in learned}, key=len, reverse=True)
        find = find_all(values) if len(values) > FEW_LEARNED else None
        if find is None:
            for v in values:
                if v in data:
                    self._count("literal", data.count(v))
                    data = data.replace(v, b"[REDACTED:literal]")
            return data
        found = find(data)
        if not found:
            return data
        # as the searches one value after the other, longest first, replaced them: each
        # value's copies left to right, none across a copy already replaced
        taken: list[tuple[int, int]] = []  # sorted, not overlapping
        for i, v in enumerate(values):
            end = -1
            n = 0
            for at in sorted(found.get(i, ())):
                if at < end:
                    continue  # overlaps this value's previous copy (replace does not)
                k = bisect.bisect(taken, (at, at + len(v)))
                if (k and taken[k - 1][1] > at) or (k < len(taken) and taken[k][0] < at + len(v)):
                    continue  # inside a longer value's copy, already replaced
                taken.insert(k, (at, at + len(v)))
                end = at + len(v)
                n += 1
            if n:
                self._count("literal", n)
        parts: list[bytes] = []
        last = 0
        for a, b in taken:
            parts += (data[last:a], b"[REDACTED:literal]")
            last = b
        parts.append(data[last:])
        return b"".join(parts)

    def add_literals(self, values: Iterable[str]) -> tuple[str, ...]:
        """Add ``values`` to this Redactor's literals (redacted wherever they appear from
        its next use on); returns those that were new."""
        new = tuple(s for s in dict.fromkeys(values) if s not in self._own_literals)
        self._own_literals += new  # found from the next use on (no recompiling)
        return new

    def pseudonym_map(self) -> dict[str, str]:
        """Original -> pseudonym. For the local preview only: NEVER write it into a bundle."""
        return dict(self._pseudonyms)

    def text(self, s: str) -> str:
        """Redact a string. A one-line string that is a command line of a program whose
        options carry secrets (``mysql -pX``, ``redis-cli -a X``: see
        :mod:`rage.redact.argv`) is redacted as one."""
        if "\n" not in s and len(s) < _COMMAND_MAX:
            from rage.redact.argv import looks_like_command

            if looks_like_command(s):
                return self._command_text(s)
        return self._plain_text(s)

    def _command_text(self, s: str) -> str:
        import re
        import shlex

        from rage.redact.argv import ArgvRedactor, join_words, rejoin, word_spans

        prompt = re.match(r"\s*(?:(?:\$|#|>|\++)\s+)*", s)
        head, rest = (s[:prompt.end()], s[prompt.end():]) if prompt else ("", s)
        try:
            words = shlex.split(rest, comments=True)  # `# ...` is no argument: the shell's
        except ValueError:
            return self._plain_text(s)
        if ArgvRedactor(str, lambda kind: None).redact(words) == words:
            return self._plain_text(s)  # no command-line rule applies: it is just text
        cleaned = ArgvRedactor(self._plain_text, self._count).redact(words)
        spans = word_spans(rest)
        comment = ""
        if spans is not None and len(spans) > len(words):  # a comment follows the words
            cut = spans[len(words)][0]
            rest, comment = rest[:cut], self._plain_text(rest[cut:])
        kept = rejoin(rest, words, cleaned)
        return head + (kept if kept is not None else join_words(words, cleaned)) + comment

    def _plain_text(self, s: str) -> str:
        try:
            raw, errors = s.encode("utf-8", "surrogateescape"), "surrogateescape"
        except UnicodeEncodeError:
            raw, errors = s.encode("utf-8", "surrogatepass"), "surrogatepass"
        out = self.bytes(raw)
        if out == raw:
            return s
        try:
            return out.decode("utf-8", errors)
        except UnicodeDecodeError:
            return out.decode("utf-8", "replace")

    def bytes(self, b: _Bytes) -> _Bytes:
        """Redact bytes; bytes that are not UTF-8 pass through unchanged unless in a secret."""
        return self.redact_whole(_Bytes(b))

    def stream(self, chunks: Iterable[_Bytes], *, block: int = BLOCK,
               workers: int | None = None, size: int | None = None) -> Iterator[_Bytes]:
        """Redact a stream of chunks with bounded memory; output equals :meth:`bytes` on the
        concatenation (lines over :data:`MAX_SEGMENT` bytes aside). Secrets split across
        chunks are caught: only whole lines are redacted, the unfinished line is carried.
        ``block`` is how many bytes to gather before redacting (memory use is about twice it,
        plus :data:`PRIVATE_KEY_MAX` while a key block is open).

        Past a few MiB a stream is redacted by ``workers`` forked processes (default: one per
        CPU; 0 or 1 keeps it in-process); output, counts and pseudonyms are the same.
        ``size``, the stream's length when the caller knows it, lets a large stream start in
        the workers at once instead of after its first few MiB; a wrong hint costs only speed.
        """
        from rage.redact.parallel import PARALLEL_MIN, redact_stream

        min_parallel = 0 if size is not None and size >= PARALLEL_MIN else PARALLEL_MIN
        return redact_stream(self, chunks, block=block, workers=workers,
                             min_parallel=min_parallel)

    def stream_pieces(self, chunks: Iterable[_Bytes], *, compress: Callable[[_Bytes], _Bytes],
                      size: int | None = None, block: int = BLOCK,
                      workers: int | None = None) -> Iterator[tuple[_Bytes, _Bytes | None]]:
        """:meth:`stream`, each output with ``compress`` of it when a worker made that (None
        when the output was made in this process: the caller compresses it if it must).

        The workers compress while they redact, so a large file's compression costs no
        time of its own on a machine with CPUs to spare.
        """
        from rage.redact.parallel import PARALLEL_MIN, redact_pieces

        min_parallel = 0 if size is not None and size >= PARALLEL_MIN else PARALLEL_MIN
        return redact_pieces(self, chunks, block=block, workers=workers,
                             min_parallel=min_parallel, compress=compress)

    def mapped_pieces(self, data: mmap.mmap, *, compress: Callable[[_Bytes], _Bytes],
                      block: int = BLOCK, workers: int | None = None, lend: bool = False
                      ) -> Generator[tuple[_Bytes | memoryview, _Bytes | None], None, None]:
        """:meth:`stream_pieces` of a file mapped in memory (``mmap``, read-only): the same
        output, cut from the mapping without reads (see
        :func:`rage.redact.parallel.redact_mapped`). The file must not shrink meanwhile
        (a mapping past a file's end is a SIGBUS): a recorded run's files are final.
        ``lend``: a worker's output with its frame may come as a memoryview, valid until the
        next piece is asked for (a copy saved where the caller only hashes it)."""
        from rage.redact.parallel import PARALLEL_MIN, redact_mapped

        min_parallel = 0 if len(data) >= PARALLEL_MIN else PARALLEL_MIN
        return redact_mapped(self, data, block=block, workers=workers,
                             min_parallel=min_parallel, compress=compress, lend=lend)

    def file(self, src: Path, dst: Path) -> None:
        """Redact ``src`` into ``dst`` (created 0600), streaming."""
        with open(src, "rb") as f, open_private(dst, "wb") as g:
            size = os.fstat(f.fileno()).st_size
            for out in self.stream(iter(lambda: f.read(_CHUNK), b""), size=size):
                g.write(out)

    def argv(self, argv: list[str]) -> list[str]:
        """Redact a command line as one (``--token X``, ``-pX``, ``vault login X``...: see
        :mod:`rage.redact.argv`); other elements are redacted as text."""
        from rage.redact.argv import ArgvRedactor

        return ArgvRedactor(self._plain_text, self._count).redact([str(a) for a in argv])

    def data(self, obj: Any) -> Any:
        """Redact JSON-like data: dicts, lists, tuples, strings (other values pass through).

        A value under a secret-looking key is replaced whole (unless None, a bool or empty);
        a dict under such a key is redacted recursively instead, so ``auth: {user, token}``
        keeps its structure. Keys are redacted as text too.
        """
        if len(self._memo) > _MEMO_MAX:
            self._memo.clear()
        return self._data(obj, self._memo)

    def _state(self) -> tuple[Any, ...]:
        """What a string's redaction depends on besides the string and may change: the
        literals, the names numbered so far, the SQL tables seen, the widths, learning.
        (These tables only grow, but in :meth:`learn`: their sizes tell a change.)"""
        return (registered_literals(), self._own_literals, len(self._pseudonyms),
                self._next_user, len(self._homes), tuple(self._tables.items()),
                self.wrap_widths, -1 if self._learned is None else len(self._learned))

    def _text_once(self, s: str, memo: dict[str, tuple[tuple[Any, ...], str,
                                                       dict[str, int]]]) -> str:
        """:meth:`text`, each distinct string redacted once (a listing repeats its keys and
        paths hundreds of times: 87 packages were 1,000 redactions; and a report's
        collectors, environment and metadata repeat theirs: 420 strings, 277 distinct, in a
        small report): a string seen again in the same state gives the same output and
        counts the same replacements again. A string whose redaction changed the state
        (numbered a name, learned a value or a table) is redacted again each time. Between
        :meth:`data` calls the state's tables only grow too (the one exception, :meth:`learn`,
        forgets what it saw)."""
        state = self._state()
        got = memo.get(s)
        if got is not None and got[0] == state:
            for kind, n in got[2].items():
                self._count(kind, n)
            return got[1]
        before = dict(self._counts)
        out = self.text(s)
        if self._state() == state:
            delta = {k: n - before.get(k, 0) for k, n in self._counts.items()
                     if n != before.get(k, 0)}
            memo[s] = (state, out, delta)
        return out

    def _data(self, obj: Any, memo: dict[str, tuple[tuple[Any, ...], str, dict[str, int]]]
              ) -> Any:
        if isinstance(obj, str):
            return self._text_once(obj, memo)
        if isinstance(obj, dict):
            out: dict[Any, Any] = {}
            for k, v in obj.items():
                nk = self._text_once(k, memo) if isinstance(k, str) else k
                if k in _ARGV_KEYS and isinstance(v, list) and all(isinstance(a, str) for a in v):
                    out[nk] = self.argv(v)  # a command line, read as one
                    continue
                if isinstance(k, str) and _secret_name(k) and not isinstance(v, dict) \
                        and v is not None and not isinstance(v, bool) and v not in ("", [], ()) \
                        and not (isinstance(v, str | int | float)
                                 and looks_harmless_value(str(v), k)):  # 4096; not a PIN
                    self._count("secret-field")
                    out[nk] = "[REDACTED:secret-field]"
                else:
                    out[nk] = self._data(v, memo)
            return out
        if isinstance(obj, list):
            return [self._data(v, memo) for v in obj]
        if isinstance(obj, tuple):
            return tuple(self._data(v, memo) for v in obj)
        if isinstance(obj, _Bytes):
            return self.bytes(obj)
        return obj
