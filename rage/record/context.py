"""What a run keeps of its context besides ``meta.json`` and ``environ.json``, on the
recording side: every recorded command imports this one module for both (an import costs
~0.6M instructions, a fifth of a millisecond).

- :func:`start_hidden` and :func:`settle_hidden`: what a report needs to remove the secret
  values ``environ.json`` masks wherever the run's files repeat them, never the values
  (``hidden.json``; read back by :mod:`rage.record.hidden`, which says how).
- :func:`fingerprint`: the run's cheap fingerprint, kept in its ``meta.json``, for what
  changed since it last worked (read by :mod:`rage.record.fingerprint` and
  :mod:`rage.report.changes`, which say what it holds).
"""

from __future__ import annotations

import os

from rage.fsutil import is_own_dir, private_dir, read_own, write_atomic

TYPE_CHECKING = False
if TYPE_CHECKING:  # no typing, json or re: ~10-30M instructions on every recorded command
    from collections.abc import Iterable, Mapping
    from typing import Any

HIDDEN_FILE = "hidden.json"
HIDDEN_SCHEMA = 1
MIN_LEN = 8  # as rage.redact.known.MIN_LEN: shorter values are never learned
DIGEST_BYTES = 3
MAX_VALUES = 64  # an environment with more secret values keeps the longest (learned first)
MAX_LEN = 4096  # a longer value is a document (a key file's text), found by its rules
FILE_MAX = 64 * 1024 * 1024  # a larger run file is not searched at the end: the digests stay
# rage's own files of a run, never searched for the hidden values (a kept core, at most 2 GiB,
# neither: it is never bundled)
OWN_FILES = frozenset({"meta.json", "environ.json", HIDDEN_FILE, "lock", "joined.json", "core"})
FINGERPRINT = "fingerprint"  # its field in meta.json
FINGERPRINT_SCHEMA = 1
CONFIG_MAX = 1024 * 1024  # a config file larger than this is compared by stat alone
LISTING_MAX = 20_000  # distributions listed in one directory


SECRET_NAMES_FILE = "secret-names"  # in the cache: which variable names look secret
SITE_IDS_FILE = "site-ids"  # in the cache: the listing ids of site directories, by mtime
SITE_IDS_MAX = 256  # directories remembered; past this the file keeps one run's
SECRET_NAMES_MAX = 4096  # names remembered; past this the file keeps one environment's


def masked_environ(environ: Mapping[str, str], cache: str) -> dict[str, str]:
    """:func:`rage.sensitive.masked_environ` of ``environ``, the same values (the same
    objects where kept), with what it decided before remembered in ``cache``.

    Whether a name looks secret costs ~60K instructions a name (2.3M for 37 variables, more
    than any other step of a run's record), and a command's environment has the same names
    run after run: that verdict is kept per name. A value is looked at only under a secret
    name; one kept in clear there (``PWD``, a path under any shell) is kept as the name's
    verdict too, and the same value is then kept without a look: it is in the run's
    ``environ.json`` in clear anyway, while a masked value is never written here. The
    verdicts are dated by rage's version and its rules' file (size, mtime): rules that
    change, in a release or a checkout, decide anew. When every verdict is known,
    rage.sensitive (~1M instructions to import) is not imported at all."""
    import marshal

    path = os.path.join(cache, SECRET_NAMES_FILE)
    stamp = _rules_stamp()
    # False: not a secret name; True: a secret name; a string: a secret name whose value
    # was this string, kept in clear
    known: dict[str, bool | str] = {}
    data = None if stamp is None else read_own(path, 1 << 20)
    if data is not None:
        try:
            cached_stamp, names = marshal.loads(data)
            if cached_stamp == stamp and isinstance(names, dict):
                known = names
        except (ValueError, EOFError, TypeError):
            pass  # damaged or from another version: decided anew
    changed = False
    new = [k for k in environ if k not in known]
    if new:
        from rage.sensitive import looks_secret_name

        known.update((k, looks_secret_name(k)) for k in new)
        changed = True
    # a secret name, unless its value is the one kept last time
    secret = {k: v for k, v in environ.items()
              if known[k] is True or (known[k] is not False and known[k] != v)}
    out = dict(environ)
    if secret:
        from rage.sensitive import masked_environ as mask

        for k, m in mask(secret).items():
            out[k] = m
            verdict = m if m is secret[k] else True
            changed = changed or known[k] != verdict
            known[k] = verdict
    if changed and stamp is not None:
        if len(known) > SECRET_NAMES_MAX:
            known = {k: known[k] for k in environ}
        _remember(path, marshal.dumps((stamp, known)))
    return out


def _rules_stamp() -> tuple[str, int, int] | None:
    """What the name verdicts depend on: rage's version and its rules' source file."""
    from rage._version import __version__

    try:
        st = os.stat(os.path.join(os.path.dirname(os.path.dirname(__file__)), "sensitive.py"))
    except OSError:
        return None  # no source to date the rules by: nothing is remembered
    return (__version__, st.st_size, st.st_mtime_ns)


def _remember(path: str, data: bytes) -> None:
    """Best effort: a run is never failed for a cache."""
    try:
        private_dir(os.path.dirname(path))
        if is_own_dir(os.path.dirname(path)):  # never into a planted symlink's target
            write_atomic(path, data)
    except (OSError, ValueError):
        pass


def hidden_values(masked: Iterable[str]) -> list[str]:
    """Of the values ``environ.json`` masks (:func:`rage.sensitive.masked_environ`), those a
    report could learn: at least :data:`MIN_LEN` characters, longest first."""
    out = {v for v in masked if MIN_LEN <= len(v.strip()) <= MAX_LEN}
    return sorted(out, key=lambda v: (-len(v), v))[:MAX_VALUES]


def forms(value: str) -> list[bytes]:
    """The bytes ``value`` can be in a run's files: as the program wrote it, and escaped as
    a JSON string, other than ASCII as it is (``log.jsonl``: json's encode_basestring) or
    as ``\\uXXXX`` (``json.dumps``'s default: a tool's JSON output)."""
    from rage.fsutil import _str as ascii_json

    out = [value.encode("utf-8", "surrogateescape")]
    try:
        kept = "".join(ascii_json(c)[1:-1] if c in '"\\' or c < " " else c for c in value)
        out += [kept.encode(), ascii_json(value)[1:-1].encode()]
    except UnicodeEncodeError:  # a lone surrogate (an undecodable byte): not JSON text
        pass
    return list(dict.fromkeys(out))


def digest(form: bytes, salt: bytes) -> str:
    from _blake2 import blake2b  # hashlib would load OpenSSL first: ~2 ms of start-up

    return blake2b(form, key=salt, digest_size=DIGEST_BYTES).hexdigest()


class Hidden:
    """The hidden values of a run being recorded, in this process only."""

    def __init__(self, values: list[str], salt: bytes) -> None:
        self.values = values
        self.salt = salt


def start_hidden(path: str, masked: Iterable[str]) -> Hidden | None:
    """Write the digests of the ``masked`` values (those ``environ.json`` hides) that a
    report could learn to ``path`` (the run's :data:`HIDDEN_FILE`); None, and nothing written,
    when there is none."""
    values = hidden_values(masked)
    if not values:
        return None
    from rage.fsutil import FILE_MODE

    salt = os.urandom(16)
    digests = sorted({(len(f), digest(f, salt)) for v in values for f in forms(v)})
    text = (f'{{"schema": {HIDDEN_SCHEMA}, "salt": "{salt.hex()}", "settled": false, "digests": ['
            + ", ".join(f'[{n}, "{d}"]' for n, d in digests) + "]}\n")
    # a new file of a new run (still hidden, see rage.record.store.open_run): created, not
    # renamed into place, at the start of every recorded command
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 FILE_MODE)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    return Hidden(values, salt)


def run_files(run_dir: str) -> list[tuple[str, str]]:
    """(relative name, path) of the run's regular files a report includes."""
    out = []
    for dirpath, _dirs, names in os.walk(run_dir):
        for n in names:
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, run_dir)
            if rel in OWN_FILES or n.startswith(".") or os.path.islink(p) or not os.path.isfile(p):
                continue
            out.append((rel.replace(os.sep, "/"), p))
    return sorted(out)


def settle_hidden(run_dir: str, hidden: Hidden | None) -> None:
    """At the run's end: replace the digests in ``run_dir``'s :data:`HIDDEN_FILE` by where the
    run's files hold each hidden value (the first place: a report then removes it
    everywhere), or remove the file when they hold none. A file too large to search
    leaves the digests as they are (the report tests its tokens)."""
    if hidden is None:
        return
    from rage.fsutil import read_own, write_json_atomic

    path = os.path.join(run_dir, HIDDEN_FILE)
    found: dict[bytes, list[Any]] = {}
    wanted = [f for v in hidden.values for f in forms(v)]
    for rel, p in run_files(run_dir):
        try:
            if os.path.getsize(p) > FILE_MAX:
                return
        except OSError:
            continue
        data = read_own(p, FILE_MAX)
        if not data:
            continue
        for f in wanted:
            if f not in found:
                at = data.find(f)
                if at >= 0:
                    found[f] = [rel, at, len(f), digest(f, hidden.salt)]
    if not found:
        try:  # noqa: SIM105 - contextlib costs ~5 ms to import, at every recorded command
            os.unlink(path)
        except FileNotFoundError:
            pass
        return
    write_json_atomic(path, {"schema": HIDDEN_SCHEMA, "salt": hidden.salt.hex(), "settled": True,
                             "found": sorted(found.values())})


def _key(cache: str) -> bytes:
    """The rage home's fingerprint key (made once, 0600; its own files only)."""
    from rage.fsutil import FILE_MODE, private_dir, read_own

    path = os.path.join(cache, "fingerprint.key")
    key = read_own(path, 64)
    if key is not None and len(key) == 32:
        return key
    private_dir(cache)
    key = os.urandom(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     FILE_MODE)
    except FileExistsError:  # another run made it first: theirs is the key
        got = read_own(path, 64)
        if got is None or len(got) != 32:
            raise OSError(f"{path} is not a fingerprint key") from None
        return got
    try:
        os.write(fd, key)
    finally:
        os.close(fd)
    return key


def _keyed(data: bytes, key: bytes, size: int) -> str:
    from _blake2 import blake2b  # not hashlib: it loads OpenSSL first (~2 ms)

    return blake2b(data, key=key, digest_size=size, person=b"rage-fp").hexdigest()


def venv_of(executable: str) -> str | None:
    """The virtual environment ``executable`` runs in: its ``bin/`` is the venv's, or it is
    a script whose ``#!`` line names a venv's interpreter."""
    for exe in (executable, _shebang(executable)):
        if exe:
            root = os.path.dirname(os.path.dirname(exe))
            if os.path.isfile(os.path.join(root, "pyvenv.cfg")):
                return root
    return None


def _shebang(path: str) -> str | None:
    try:  # os.open: no file object (io's buffered reader) on every recorded command
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        head = os.read(fd, 256)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not head.startswith(b"#!"):
        return None
    parts = head[2:].split(b"\n", 1)[0].split()
    return os.fsdecode(parts[0]) if parts and parts[0].startswith(b"/") else None


def venv_python(root: str) -> tuple[str | None, list[str]]:
    """A venv's Python version (its ``pyvenv.cfg``) and site-packages directories."""
    version = None
    try:
        with open(os.path.join(root, "pyvenv.cfg"), encoding="utf-8", errors="replace") as f:
            for line in f.read(8192).splitlines():
                k, _, v = line.partition("=")
                if k.strip() in ("version", "version_info"):
                    version = v.strip()
    except OSError:
        pass
    lib = os.path.join(root, "lib")
    try:
        sites = [os.path.join(lib, d, "site-packages") for d in sorted(os.listdir(lib))
                 if d.startswith("python")]
    except OSError:
        sites = []
    return version, [s for s in sites if os.path.isdir(s)]


def _listing_id(site: str, mtime_ns: int) -> str:
    from _blake2 import blake2b

    return blake2b(f"{site}\0{mtime_ns}".encode("utf-8", "surrogateescape"),
                   digest_size=12).hexdigest()


def _site_ids(cache: str) -> dict[str, Any]:
    """The listing ids computed before, ``{dir: (mtime_ns, id)}``: the same id without
    hashing, so a run whose environment holds no secret loads no ``_blake2`` (an extension
    module: ~0.4M instructions). Only this user's own file, as every cache here."""
    import marshal

    data = read_own(os.path.join(cache, SITE_IDS_FILE), 1 << 20)
    if data is not None:
        try:
            ids = marshal.loads(data)
        except (ValueError, EOFError, TypeError):
            return {}  # damaged: computed anew
        if isinstance(ids, dict):
            return ids
    return {}


def _site(site: str, cache: str, ids: dict[str, Any]) -> list[Any] | None:
    """``[dir, mtime_ns, listing id]``, the listing of its distributions kept in the cache
    when it is not there yet; a new id goes into ``ids``."""
    try:
        mtime = os.stat(site).st_mtime_ns
    except OSError:
        return None
    known = ids.get(site)
    if (type(known) is tuple and len(known) == 2 and known[0] == mtime
            and type(known[1]) is str and len(known[1]) == 24 and known[1].isalnum()):
        lid = known[1]
    else:
        lid = _listing_id(site, mtime)
        ids[site] = (mtime, lid)
    path = os.path.join(cache, "sites", lid)
    if not os.path.exists(path):
        try:
            names = sorted(n[:-len(".dist-info")] for n in os.listdir(site)
                           if n.endswith(".dist-info"))[:LISTING_MAX]
            from rage.fsutil import private_dir, write_atomic

            private_dir(os.path.dirname(path))
            write_atomic(path, "\n".join(names).encode("utf-8", "surrogateescape"))
        except OSError:
            return [site, mtime, None]
    return [site, mtime, lid]


def fingerprint(cache: str, *, masked: Mapping[str, str], environ: Mapping[str, str],
         executable: str | None = None, python: tuple[str | None, Iterable[str]] | None = None,
         config_files: Iterable[str] = ()) -> dict[str, Any]:
    """The run's fingerprint. ``masked``: ``environ.json``'s values; ``python``: (version,
    site directories) of the run's own interpreter (the integration), else found from
    ``executable`` (the wrapper)."""
    keys: list[bytes] = []

    def key() -> bytes:  # read only when needed: most runs have no secret or config file
        if not keys:
            keys.append(_key(cache))
        return keys[0]

    env = {k: _keyed(v.encode("utf-8", "surrogateescape"), key(), 2)
           for k, v in environ.items() if masked.get(k) is not v}
    out: dict[str, Any] = {"schema": FINGERPRINT_SCHEMA, "env": env}
    if executable:
        executable = os.path.abspath(executable)
        try:
            st = os.stat(executable)
            out["executable"] = [executable, st.st_size, st.st_mtime_ns]
        except OSError:
            pass
        if python is None:
            venv = venv_of(executable)
            python = venv_python(venv) if venv else None
    if python is not None:
        version, sites = python
        ids = _site_ids(cache)
        before = dict(ids)
        out["python"] = {"version": version, "sites": [
            s for s in (_site(os.path.abspath(d), cache, ids) for d in sites) if s]}
        if ids != before:
            import marshal

            if len(ids) > SITE_IDS_MAX:
                ids = {s[0]: (s[1], s[2]) for s in out["python"]["sites"]}
            _remember(os.path.join(cache, SITE_IDS_FILE), marshal.dumps(ids))
    configs: list[list[Any]] = []
    for name in config_files:
        p = os.path.abspath(os.path.expanduser(name))
        try:
            st = os.stat(p)
        except OSError:
            configs.append([p, None, None, None])
            continue
        digest = None
        if st.st_size <= CONFIG_MAX:
            try:
                with open(p, "rb") as f:
                    digest = _keyed(f.read(CONFIG_MAX), key(), 4)
            except OSError:
                pass
        configs.append([p, st.st_size, st.st_mtime_ns, digest])
    if configs:
        out["config"] = configs
    return out
