"""``rage shim``: small sh scripts that route ``NAME ...`` through ``rage run``.

A shim is a POSIX sh script named like the program, in a directory that comes before the
real program on PATH. At run time it finds the real program by walking PATH, skipping its
own directory and itself (so it never runs itself), and execs
``rage run --app NAME --exec /real/NAME -- NAME ARGS...`` (the program sees the argv[0]
the user typed); ``NAME rage ARGS...`` becomes
``rage report --app NAME ARGS...``. The second line carries :data:`MARKER`: rage only
overwrites or removes files that carry it.

The interpreter and where rage is installed are written into the shim at install time, so a
shim works without rage on PATH (and inside virtual environments rage is not installed in).
``rage run`` starts with ``python -I -S``: no ``site`` (its .pth files and import hooks cost
~5-20 ms, paid by every recorded command), no current directory or PYTHON* variables on the
import path; rage's own directory is appended instead (:func:`run_command`).
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from rage.errors import NotFoundError, UsageError
from rage.fsutil import private_dir

MARKER = "rage-shim:"
_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]{0,99}$")

TEMPLATE = """\
#!/bin/sh
# {marker} {name} -- written by `rage shim install`; `rage shim remove {name}` deletes it.
# Runs the real {name} (the next one on PATH, never this file) under `rage run`;
# `{name} rage ARGS` opens `rage report --app {name} ARGS`.
rage_name={q_name}
rage_self={q_self}
rage_self_dir={q_dir}
if [ "${{1-}}" = rage ]; then
  shift
  exec {report} report --app "$rage_name" "$@"
fi
rage_real=
rage_ifs=$IFS
IFS=:
set -f
for rage_d in $PATH; do
  [ -n "$rage_d" ] || rage_d=.
  [ "$rage_d" = "$rage_self_dir" ] && continue
  rage_c=$rage_d/$rage_name
  if [ -f "$rage_c" ] && [ -x "$rage_c" ] && ! [ "$rage_c" -ef "$rage_self" ]; then
    rage_real=$rage_c
    break
  fi
done
set +f
IFS=$rage_ifs
if [ -z "$rage_real" ]; then
  echo "$rage_name: command not found (rage shim $rage_self found no other $rage_name on PATH)" >&2
  exit 127
fi
exec {run} run --app "$rage_name" --exec "$rage_real" -- "$rage_name" "$@"
"""


@dataclass(frozen=True)
class Shim:
    """An installed shim and what it runs now (``target`` None: no real program found)."""

    name: str
    path: Path
    target: str | None


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


def rage_command() -> str:
    """How the shim calls rage: this interpreter with ``-m rage``, shell-quoted."""
    return f"{shlex.quote(sys.executable)} -m rage"


def run_argv() -> list[str]:
    """How the shim starts ``rage run``, as an argv prefix: this interpreter, isolated and
    without ``site``, with the directory rage is installed in appended to ``sys.path``.
    Paths that rage needs ``site`` for (platformdirs off Linux) call ``site.main()`` then."""
    import rage

    where = os.path.dirname(os.path.dirname(os.path.abspath(rage.__file__)))
    # double quotes read better inside the shim's single-quoted sh word
    literal = f'"{where}"' if where.isprintable() and not set(where) & set('"\\') else repr(where)
    code = f"import sys; sys.path.append({literal}); from rage.__main__ import main; main()"
    return [sys.executable, "-I", "-S", "-c", code]


def run_command() -> str:
    """:func:`run_argv`, shell-quoted for the shim."""
    return " ".join(shlex.quote(a) for a in run_argv())


def is_shim(path: Path) -> bool:
    """True if ``path`` is a file rage wrote (its second line carries the marker)."""
    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError:
        return False
    lines = head.split(b"\n")
    return len(lines) > 1 and lines[1].startswith(b"# " + MARKER.encode())


def find_real(name: str, shim_dir: Path, path_env: str | None = None) -> str | None:
    """What the shim would run: the first executable ``name`` on PATH outside ``shim_dir``
    that is not a shim of rage's."""
    path_env = os.environ.get("PATH", os.defpath) if path_env is None else path_env
    self_path = shim_dir / name
    for entry in path_env.split(os.pathsep):
        d = entry or "."
        if d == str(shim_dir):
            continue
        c = os.path.join(d, name)
        if not (os.path.isfile(c) and os.access(c, os.X_OK)):
            continue
        try:
            if self_path.exists() and os.path.samefile(c, self_path):
                continue
        except OSError:
            continue
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


def install(name: str, shim_dir: Path | None = None, path_env: str | None = None) -> Installed:
    """Write the shim for ``name`` into ``shim_dir`` (default ``~/.local/bin``).

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
    text = TEMPLATE.format(
        marker=MARKER, name=name, q_name=shlex.quote(name), q_self=shlex.quote(str(path)),
        q_dir=shlex.quote(str(shim_dir)), report=rage_command(), run=run_command(),
    )
    tmp = path.with_name(f".{name}.{os.getpid()}.rage-tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o700)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o700)  # executable for its owner only, whatever the umask
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    path_env = os.environ.get("PATH", os.defpath) if path_env is None else path_env
    warnings = tuple(_path_warnings(name, shim_dir, path_env))
    return Installed(Shim(name, path, find_real(name, shim_dir, path_env)), replaced, warnings)


def list_shims(shim_dir: Path | None = None, path_env: str | None = None) -> list[Shim]:
    """The rage shims in ``shim_dir``, sorted by name, with what each would run now."""
    shim_dir = (shim_dir or default_dir()).expanduser().absolute()
    try:
        entries = sorted(os.scandir(shim_dir), key=lambda e: e.name)
    except OSError:
        return []
    return [Shim(e.name, Path(e.path), find_real(e.name, shim_dir, path_env))
            for e in entries if e.is_file(follow_symlinks=False) and is_shim(Path(e.path))]


def remove(name: str, shim_dir: Path | None = None) -> Path:
    """Delete the shim ``name``; only a file carrying the marker is ever removed."""
    check_name(name)
    shim_dir = (shim_dir or default_dir()).expanduser().absolute()
    path = shim_dir / name
    if not path.exists() and not path.is_symlink():
        raise NotFoundError(f"no shim {name} in {shim_dir}")
    if path.is_symlink() or not is_shim(path):
        raise UsageError(f"{path} was not created by rage; not removing it")
    path.unlink()
    return path
