"""What a shim runs in Python: find the real program, then record it through ``rage run``, or
run it without rage when rage cannot start.

A shim (:mod:`rage.record.shims`) starts ``python -I -S -c CODE SHIM_PATH ARGS...``, where
CODE imports this module and calls :func:`boot1`: imported, it comes from its cached
bytecode, so no command pays for compiling it. The shim also carries this file's text, as it
was when the shim was installed: when the import fails (rage uninstalled or damaged, or too
new for this Python), CODE runs that text instead, which still finds and runs the real
program. Hence two rules: nothing of rage's is imported here before the real program is
found, and :func:`boot1` keeps its signature (a different one is a new name, ``boot2``;
without ``boot1`` here, older shims fall back to their own copy).
"""

from __future__ import annotations

import os
import stat
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

MARKER = "rage-shim:"  # on line 2 of every shim, after "# "


def is_shim(path: str | os.PathLike[str]) -> bool:
    """True if ``path`` is a file rage wrote (its second line carries the marker)."""
    try:
        with open(path, "rb") as f:
            lines = f.read(512).split(b"\n", 2)
    except OSError:
        return False
    return len(lines) > 1 and lines[1].startswith(b"# " + MARKER.encode())


def find_real(name: str, shim: str) -> str | None:
    """The first ``name`` on PATH that is a regular executable file, neither the file
    ``shim`` (by device and inode: a moved or copied shim is still itself) nor a shim."""
    try:
        s = os.stat(shim)
        me: tuple[int, int] | None = (s.st_dev, s.st_ino)
    except OSError:
        me = None
    for d in os.environ.get("PATH", os.defpath).split(os.pathsep):
        c = os.path.join(d or ".", name)
        try:
            s = os.stat(c)
        except OSError:
            continue
        if (stat.S_ISREG(s.st_mode) and (s.st_dev, s.st_ino) != me
                and os.access(c, os.X_OK) and not is_shim(c)):
            return c
    return None


def boot1(name: str, interpreter: bool, probe: bool) -> NoReturn:
    """Run the shim for ``name``; ``sys.argv`` is ``[-c, SHIM_PATH, ARGS...]``.

    ``interpreter``: the program gets the real path as argv[0] (interpreters find themselves
    from it), else ``name`` as typed. ``probe``: record ``name --version`` once per change
    of the executable."""
    shim, args = sys.argv[1], sys.argv[2:]
    real = find_real(name, shim)
    if real is None:
        sys.stderr.write(name + ": command not found (the rage shim " + shim
                         + " found no other " + name + " on PATH)\n")
        sys.exit(127)
    argv0 = real if interpreter else name
    try:
        from rage.record.wrapper import main_exit
    except Exception as e:
        sys.stderr.write("rage: warning: not recording " + name + ": rage cannot start ("
                         + type(e).__name__ + "); `rage shim remove " + name
                         + "` removes the shim\n")
        try:
            os.execv(real, [argv0, *args])
        except OSError as e:
            sys.stderr.write(name + ": " + str(e.strerror) + "\n")
            sys.exit(127 if e.errno == 2 else 126)
    if probe:
        try:  # `NAME --version`, once per change of the executable (path, mtime, size)
            from rage.record.versions import remember_tool_version

            remember_tool_version(name, real, argv0)
        except Exception:
            pass
    main_exit(["--app", name, "--exec", real, "--", argv0, *args])
