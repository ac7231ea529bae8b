"""``rage shim``: small sh scripts that route ``NAME ...`` through ``rage run``.

A shim is a POSIX sh script named like the program, in a directory that comes before the
real program on PATH. Its second line carries :data:`MARKER`; that marker, not where the file
lives, is what makes a file a shim: a shim runs the first ``NAME`` on PATH that is neither
itself nor any file carrying the marker, so a moved or copied shim never runs itself or
another shim. rage only overwrites or removes files that carry the marker.

The shim never changes the meaning of the program's arguments: ``NAME rage`` opens
``rage report --app NAME`` only in shims installed with ``--report-subcommand`` (for the
user's own tools, where ``rage`` is known not to be a real argument).

The interpreter and where rage is installed are written into the shim at install time, so a
shim works without rage on PATH (and inside virtual environments rage is not installed in).
When rage cannot start (uninstalled, its virtual environment removed, its Python upgraded
away) the shim runs the real program as without rage, after one warning line.

``rage run`` starts with ``python -I -S``: no ``site`` (its .pth files and import hooks cost
~5-20 ms, paid by every recorded command), no current directory or PYTHON* variables on the
import path; rage's own directory is appended instead (:func:`boot_code`).
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from rage.errors import NotFoundError, UsageError
from rage.fsutil import create_temp, private_dir
from rage.record.shimboot import MARKER, is_shim

_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]{0,99}$")
# CPython (and PyPy) find their prefix from argv[0], searching PATH for a bare name: that
# search would find the shim, not the interpreter, and lose the virtual environment. Such
# programs get the real program's path as argv[0], which is what their search would find.
_INTERPRETER_RE = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?[dmt]?$")

# Run by the shim's interpreter as `python -I -S -c CODE SHIM_PATH ARGS...`: the boot module
# (rage.record.shimboot) from its cached bytecode, or, when it cannot be imported, its text as
# it was at install time (the shim then still runs the real program). Only this much Python
# is compiled per command.
LOADER = """\
import sys
sys.path.append({lib})
try:
    from rage.record.shimboot import boot1
except Exception:
    exec({source})
boot1({name}, {interpreter}, {probe})
"""

TEMPLATE = """\
#!/bin/sh
# {marker} {name} -- written by `rage shim install`; `rage shim remove {name}` deletes it.
# Runs the real {name} (the first on PATH that is not a rage shim) under `rage run`; if rage
# cannot start (uninstalled, its Python gone), runs it without rage after one warning line.
rage_name={q_name}
rage_py={q_py}
rage_lib={q_lib}
if [ -x "$rage_py" ] && [ -f "$rage_lib/rage/record/wrapper.py" ]; then
{report}  exec "$rage_py" -I -S -c {q_boot} "$0" "$@"
fi
rage_why="$rage_py or $rage_lib/rage is gone"
echo "rage: warning: not recording $rage_name: rage cannot start ($rage_why);" \\
  "\\`rage shim remove $rage_name\\` removes the shim" >&2
rage_real=
rage_ifs=$IFS
IFS=:
set -f
for rage_d in $PATH; do
  rage_c=${{rage_d:-.}}/$rage_name
  if [ -f "$rage_c" ] && [ -x "$rage_c" ] && ! [ "$rage_c" -ef "$0" ] &&
      ! sed -n '2{{p;q;}}' "$rage_c" 2>/dev/null | grep -q '^# {marker}'; then
    rage_real=$rage_c
    break
  fi
done
set +f
IFS=$rage_ifs
if [ -z "$rage_real" ]; then
  echo "$rage_name: command not found (the rage shim $0 found no other $rage_name on PATH)" >&2
  exit 127
fi
{fallback_exec}
"""

# `NAME rage ARGS` -> `rage report --app NAME ARGS`, only in shims installed with it
REPORT = """\
  if [ "${{1-}}" = rage ]; then
    shift
    exec "$rage_py" -I -c {q_report} report --app "$rage_name" "$@"
  fi
"""

# bash's `exec -a` keeps argv[0] as typed; plain sh can only pass the path
FALLBACK_EXEC = """\
if command -v bash >/dev/null 2>&1; then
  exec bash -c 'exec -a "$0" "$@"' "$rage_name" "$rage_real" "$@"
fi
exec "$rage_real" "$@\""""


@dataclass(frozen=True)
class Shim:
    """An installed shim and what it runs now (``target`` None: no real program found)."""

    name: str
    path: Path
    target: str | None
    # written by a rage before shims could outlive it: `rage shim install NAME` updates it
    outdated: bool = False


@dataclass(frozen=True)
class Installed:
    shim: Shim
    replaced: bool  # an older rage shim was updated
    warnings: tuple[str, ...]


def default_dir() -> Path:
    return Path("~/.local/bin").expanduser()


def check_name(name: str) -> str:
    """``name`` if it can be a program name on PATH, else :class:`UsageError`."""
    if not _NAME_RE.match(name) or name in {".", ".."}:
        raise UsageError(f"invalid program name {name!r}: give a name found on PATH, not a path")
    if name == "rage":
        raise UsageError("cannot shim rage itself")
    return name


def is_interpreter(name: str) -> bool:
    """True for names of interpreters that locate themselves through argv[0] and PATH."""
    return bool(_INTERPRETER_RE.match(name))


def rage_lib() -> str:
    """The directory rage is imported from (its parent holds the ``rage`` package)."""
    import rage

    return os.path.dirname(os.path.dirname(os.path.abspath(rage.__file__)))


def run_argv() -> list[str]:
    """How to start ``rage run`` as a shim does, as an argv prefix: this interpreter, isolated
    and without ``site``, with the directory rage is installed in appended to ``sys.path``.
    Paths that rage needs ``site`` for (platformdirs off Linux) call ``site.main()`` then."""
    return [sys.executable, "-I", "-S", "-c", _main_code(rage_lib())]


def _literal(where: str) -> str:
    """A Python string literal for ``where``; double quotes read better inside the shim's
    single-quoted sh word."""
    return f'"{where}"' if where.isprintable() and not set(where) & set('"\\') else repr(where)


def _main_code(where: str) -> str:
    return f"import sys; sys.path.append({_literal(where)}); from rage.__main__ import main; main()"


def boot_code(name: str, lib: str | None = None, *, version_probe: bool = True) -> str:
    """The Python the shim for ``name`` runs (see :data:`LOADER`)."""
    check_name(name)
    return LOADER.format(lib=_literal(lib or rage_lib()), source=repr(_boot_source()),
                         name=_literal(name), interpreter=is_interpreter(name),
                         probe=version_probe)


def _boot_source() -> str:
    """The text of :mod:`rage.record.shimboot`, which the shim carries for when it cannot be
    imported."""
    with open(os.path.join(os.path.dirname(__file__), "shimboot.py"), encoding="utf-8") as f:
        return f.read()


def render(name: str, *, python: str | None = None, lib: str | None = None,
           report_subcommand: bool = False, version_probe: bool = True) -> str:
    """The text of the shim for ``name``, run by ``python`` with rage found in ``lib``
    (default: this interpreter and this rage)."""
    lib = lib or rage_lib()
    # interpreters get the path as argv[0]: they find themselves from it
    fallback = 'exec "$rage_real" "$@"' if is_interpreter(name) else FALLBACK_EXEC
    return TEMPLATE.format(
        marker=MARKER, name=name, q_name=shlex.quote(name),
        q_py=shlex.quote(python or sys.executable), q_lib=shlex.quote(lib),
        q_boot=shlex.quote(boot_code(name, lib, version_probe=version_probe)),
        report=REPORT.format(q_report=shlex.quote(_main_code(lib))) if report_subcommand else "",
        fallback_exec=fallback,
    )


def find_real(name: str, shim_dir: Path, path_env: str | None = None) -> str | None:
    """What a shim would run: the first executable ``name`` on PATH that is not a shim."""
    path_env = os.environ.get("PATH", os.defpath) if path_env is None else path_env
    del shim_dir  # shims are recognised by their marker, wherever they are
    for entry in path_env.split(os.pathsep):
        c = os.path.join(entry or ".", name)
        if os.path.isfile(c) and os.access(c, os.X_OK) and not is_shim(c):
            return c
    return None


def _path_warnings(name: str, shim_dir: Path, path_env: str) -> list[str]:
    dirs = [os.path.abspath(d or ".") for d in path_env.split(os.pathsep)]
    real = find_real(name, shim_dir, path_env)
    out: list[str] = []
    if str(shim_dir) not in dirs:
        out.append(f"{shim_dir} is not on PATH: add it in front of PATH so `{name}` finds the "
                   "shim")
    elif real is not None:
        real_dir = os.path.abspath(os.path.dirname(real))
        if real_dir in dirs and dirs.index(real_dir) < dirs.index(str(shim_dir)):
            out.append(f"{shim_dir} comes after {real_dir} on PATH: `{name}` will run {real} "
                       "without rage; put the shim directory first")
    if real is None:
        out.append(f"no other {name} found on PATH yet: the shim fails until one is installed")
    return out


def install(name: str, shim_dir: Path | None = None, path_env: str | None = None, *,
            report_subcommand: bool = False, version_probe: bool = True) -> Installed:
    """Write the shim for ``name`` into ``shim_dir`` (default ``~/.local/bin``).

    ``report_subcommand``: ``NAME rage ARGS`` opens ``rage report --app NAME ARGS`` instead
    of running ``NAME`` (only for programs that never take ``rage`` as an argument).
    ``version_probe``: record ``NAME --version`` once per change of the executable.

    Refuses (:class:`UsageError`) to overwrite a file that is not a rage shim. Problems with
    PATH (directory missing from it or behind the real program) come back as warnings.
    """
    check_name(name)
    shim_dir = (shim_dir or default_dir()).expanduser().absolute()
    path = shim_dir / name
    replaced = False
    if path.exists() or path.is_symlink():
        if not is_shim(path) or path.is_symlink():
            raise UsageError(f"{path} exists and was not created by rage; not overwriting it",
                             hint="remove it yourself or choose another --dir")
        replaced = True
    private_dir(shim_dir)
    text = render(name, report_subcommand=report_subcommand, version_probe=version_probe)
    tmp, fd = create_temp(path)  # a fresh name, never through a planted symlink
    try:
        os.fchmod(fd, 0o700)  # executable for its owner only, whatever the umask
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:
        _remember(shim_dir)
    except OSError as e:  # the shim works; only `rage shim list` without --dir misses it
        noted = [f"could not note {shim_dir} in rage's home: {e.strerror or e}"]
    else:
        noted = []
    path_env = os.environ.get("PATH", os.defpath) if path_env is None else path_env
    warnings = tuple([*_path_warnings(name, shim_dir, path_env), *noted])
    return Installed(Shim(name, path, find_real(name, shim_dir, path_env)), replaced, warnings)


def list_shims(shim_dir: Path | None = None, path_env: str | None = None) -> list[Shim]:
    """The rage shims in ``shim_dir``, or (None) wherever rage put them: every directory
    it installed one in, ``~/.local/bin`` and PATH. Sorted by name, then by where they
    come on PATH, each with what it would run now."""
    path_env = os.environ.get("PATH", os.defpath) if path_env is None else path_env
    dirs = [_absolute(shim_dir)] if shim_dir else search_dirs(path_env)
    found: list[Shim] = []
    for d in dirs:
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            continue
        found += [Shim(e.name, Path(e.path), find_real(e.name, d, path_env),
                       outdated=_is_outdated(e.path))
                  for e in entries if _may_be_shim(e) and is_shim(Path(e.path))]
    return sorted(found, key=lambda s: s.name)  # stable: PATH order within a name


def search_dirs(path_env: str) -> list[Path]:
    """Where shims may be, each once: PATH's directories in order (the ones that matter),
    then the directories rage installed shims in, then the default one."""
    out: list[Path] = []
    seen: set[str] = set()
    candidates = [Path(e or ".") for e in path_env.split(os.pathsep)]
    for d in [*candidates, *_remembered(), default_dir()]:
        key = os.path.realpath(_absolute(d))
        if key not in seen:
            seen.add(key)
            out.append(_absolute(d))
    return out


def _absolute(d: Path) -> Path:
    return d.expanduser().absolute()


def _may_be_shim(entry: os.DirEntry[str]) -> bool:
    """Cheap test before reading a file: shims are small regular files of this user's (PATH
    holds thousands of others, which are never opened)."""
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    return (st.st_mode & 0o170000) == 0o100000 and st.st_uid == os.geteuid() and (
        st.st_size <= _MAX_SHIM_BYTES)


_MAX_SHIM_BYTES = 1 << 16
_DIRS_FILE = ".shim-dirs"  # in the rage home: every directory `rage shim install` wrote to


def _remembered() -> list[Path]:
    from rage.fsutil import read_own
    from rage.paths import home_root

    data = read_own(home_root() / _DIRS_FILE, _MAX_SHIM_BYTES)
    if not data:
        return []
    return [Path(line) for line in data.decode("utf-8", "surrogateescape").splitlines()
            if line.startswith("/")]


def _remember(shim_dir: Path) -> None:
    """Add ``shim_dir`` to the directories `rage shim list` and `remove` look in."""
    from rage.fsutil import write_atomic
    from rage.paths import home_root

    known = _remembered()
    if shim_dir in known:
        return
    root = private_dir(home_root())
    text = "".join(f"{d}\n" for d in [*known, shim_dir])
    write_atomic(root / _DIRS_FILE, text.encode("utf-8", "surrogateescape"))


def _is_outdated(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return b"\nrage_lib=" not in f.read(2048)
    except OSError:
        return False


def remove(name: str, shim_dir: Path | None = None, path_env: str | None = None
           ) -> list[Path]:
    """Delete the shim ``name`` from ``shim_dir``, or (None) every shim ``name`` rage put
    anywhere (see :func:`list_shims`); only a file carrying the marker is ever removed."""
    check_name(name)
    if shim_dir is None:
        paths = [s.path for s in list_shims(None, path_env) if s.name == name]
        if not paths:
            raise NotFoundError(f"no shim {name} found on PATH nor where rage installed shims",
                                hint="`rage shim list` lists them; --dir DIR looks in DIR")
        for path in paths:
            path.unlink()
        return paths
    shim_dir = _absolute(shim_dir)
    path = shim_dir / name
    if not path.exists() and not path.is_symlink():
        raise NotFoundError(f"no shim {name} in {shim_dir}")
    if path.is_symlink() or not is_shim(path):
        raise UsageError(f"{path} was not created by rage; not removing it")
    path.unlink()
    return [path]
