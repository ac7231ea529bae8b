"""Private files and atomic writes: everything rage stores is 0700/0600.

Written through new, unpredictable temporary names (:func:`create_temp`, :func:`link_new`,
:func:`write_atomic`), never through a name someone else could have planted; read back
as regular files only, within a bound, never blocking (:func:`open_regular`,
:func:`read_own`): a run's history holds what a recorded program could have left there.

On every recorded command's start-up path, so no pathlib or json at import: functions take
``str`` or ``Path`` alike and :func:`dumps_json` writes what ``json.dumps(indent=2)`` would.
"""

from __future__ import annotations

import errno
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    P = TypeVar("P", bound="str | os.PathLike[str]")

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: P) -> P:
    """Create ``path`` (and missing parents) as 0700 directories; return it."""
    missing: list[str] = []
    p = path if isinstance(path, str) else os.fspath(path)
    while not os.path.exists(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p or not parent:
            break
        p = parent
    for d in reversed(missing):
        try:  # noqa: SIM105 - contextlib is not imported on this path (~3 ms)
            os.mkdir(d, DIR_MODE)
        except FileExistsError:
            pass
    return path


def open_private(path: str | os.PathLike[str], mode: str = "wb", buffering: int = -1) -> Any:
    """Open ``path`` for writing (and reading, with ``+`` in ``mode``), created 0600
    (existing files keep their mode)."""
    flags = (os.O_RDWR if "+" in mode else os.O_WRONLY) | os.O_CREAT | os.O_CLOEXEC
    flags |= os.O_APPEND if "a" in mode else os.O_TRUNC
    fd = os.open(path, flags, FILE_MODE)
    return os.fdopen(fd, mode, buffering)


def _create_new(head: str, name: str) -> tuple[str, int]:
    """A new 0600 file next to ``name`` in ``head``, under a fresh random name: O_EXCL and
    O_NOFOLLOW, so a file or symlink planted under a guessable name is never written through."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(8):
        tmp = os.path.join(head, f".{name}.{os.urandom(6).hex()}.tmp")
        try:
            return tmp, os.open(tmp, flags, FILE_MODE)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "could not create a temporary file", head)


def create_temp(dest: str | os.PathLike[str]) -> tuple[str, int]:
    """A new 0600 file in ``dest``'s directory under an unpredictable name, created with
    O_EXCL|O_NOFOLLOW: ``(its path, a write-only fd)``. Give it its name with
    :func:`link_new`; the caller unlinks the temporary name in every case."""
    head, name = os.path.split(os.fspath(dest))
    return _create_new(head, name)


def _same_file(fd: int, path: str) -> bool:
    try:
        a, b = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


# link() errors of file systems without hard links (FAT, some network shares)
_NO_HARD_LINKS = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK})


_SWAPPED = "its temporary file was removed or replaced by someone else while written"


def link_new(fd: int, tmp: str, dest: str | os.PathLike[str]) -> None:
    """Give the file open as ``fd`` (made by :func:`create_temp` as ``tmp``) the name
    ``dest``, which must be free: FileExistsError if anything is there, never replaced.

    In a directory others can write (a shared drop folder, /tmp without the sticky bit)
    the temporary name can be swapped for a symlink at any moment, so on Linux the link is
    made from ``fd`` itself, and elsewhere ``dest`` is checked to be the file written
    (OSError, with ``dest`` removed again, if someone swapped it)."""
    d = os.fspath(dest)
    try:
        # /proc/self/fd/N names the open file itself, whatever its name is now (a dir fd
        # makes os.link call linkat with AT_SYMLINK_FOLLOW, which that needs).
        fds = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.link(str(fd), d, src_dir_fd=fds, follow_symlinks=True)
            return
        finally:
            os.close(fds)
    except FileExistsError:
        raise
    except OSError:
        pass  # no /proc (macOS, BSD), or no hard links here: go by name and check
    if os.fstat(fd).st_nlink == 0:  # its temporary name was taken away: it has none left
        raise OSError(errno.EBUSY, _SWAPPED, d)
    try:
        os.link(tmp, d)
    except FileExistsError:
        raise
    except OSError as e:
        if e.errno not in _NO_HARD_LINKS:
            raise
        if os.path.lexists(d):
            raise FileExistsError(errno.EEXIST, "File exists", d) from None
        os.rename(tmp, d)
    if not _same_file(fd, d):
        try:  # noqa: SIM105 - as above
            os.unlink(d)
        except OSError:
            pass
        raise OSError(errno.EBUSY, _SWAPPED, d)


def _write_all(fd: int, data: bytes) -> None:
    """Write ``data`` to ``fd`` and close it (closed in every case). Plain ``os.write``: a
    file object would cost an fstat, a terminal probe and a seek for a single write."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` through a new temporary file and a rename (which replaces a
    symlink at ``path`` itself, never its target)."""
    p = os.fspath(path)
    head, name = os.path.split(p)
    tmp, fd = _create_new(head, name)
    try:
        _write_all(fd, data)
        os.replace(tmp, p)
    except BaseException:
        try:  # noqa: SIM105 - as above
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_own(path: str | os.PathLike[str], limit: int) -> bytes | None:
    """The first ``limit`` bytes of ``path`` if it is a regular file this user owns that no
    one else can write, read without following a symlink or blocking on a FIFO; else None.

    For files rage itself wrote under its home (caches, stamps): anything else there was
    planted or damaged and is never loaded."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (st.st_mode & 0o170000) != 0o100000 or st.st_uid != os.geteuid() or (
                st.st_mode & 0o022):
            return None
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def open_regular(path: str | os.PathLike[str], *, follow_symlinks: bool = False) -> Any:
    """``path`` opened for reading ("rb") if it is a regular file, else OSError saying what
    it is: a symlink (unless ``follow_symlinks``), a named pipe, a device, a directory.

    Never blocks: a FIFO or device is opened non-blocking, found out, and closed; the
    regular file is read in blocking mode as usual. For whatever rage reads from the run
    history, where a recorded program (or anyone with the user's rights) could have left a
    FIFO that would hang the reader, or a link to /dev/zero that would never end."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if e.errno == errno.ELOOP and not follow_symlinks:
            raise OSError(errno.ELOOP, "a symbolic link, not read", os.fspath(path)) from None
        raise
    try:
        kind = os.fstat(fd).st_mode & 0o170000
        if kind != 0o100000:
            raise OSError(errno.EINVAL, f"{_KINDS.get(kind, 'not a regular file')}, not read",
                          os.fspath(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


_KINDS = {0o010000: "a named pipe", 0o020000: "a device", 0o060000: "a device",
          0o040000: "a directory", 0o140000: "a socket"}


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """At most ``limit`` bytes from the start of regular file ``path`` (see
    :func:`open_regular`; OSError for anything else)."""
    with open_regular(path) as f:
        return f.read(limit)  # type: ignore[no-any-return]


def read_tail(path: str | os.PathLike[str], limit: int) -> bytes:
    """The last ``limit`` bytes (at most) of regular file ``path``, as it is when opened."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        f.seek(max(size - limit, 0))
        return f.read(min(size, limit))  # type: ignore[no-any-return]


def write_new(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path``, which must not exist (O_EXCL, O_NOFOLLOW): for a file of
    a directory nobody else can see yet (a run being built), where a temporary name and a
    rename would only cost. A write that fails leaves no part of the file behind."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 FILE_MODE)
    try:
        _write_all(fd, data)
    except BaseException:
        try:  # noqa: SIM105 - as above
            os.unlink(path)
        except OSError:
            pass
        raise


def is_own_dir(path: str | os.PathLike[str]) -> bool:
    """True if ``path`` is a real directory (not a symlink) owned by this user."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (st.st_mode & 0o170000) == 0o040000 and st.st_uid == os.geteuid()


def write_json_atomic(path: str | os.PathLike[str], obj: Any) -> None:
    """Serialise ``obj`` as indented JSON and write it atomically."""
    write_atomic(path, (dumps_json(obj) + "\n").encode())


def write_json_new(path: str | os.PathLike[str], obj: Any) -> None:
    """Serialise ``obj`` as indented JSON into the new file ``path`` (:func:`write_new`)."""
    write_new(path, (dumps_json(obj) + "\n").encode())


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b",
            "\f": "\\f"}


def _str(s: str) -> str:
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return f'"{s}"'
    out = []
    for ch in s:
        c = ord(ch)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif 0x20 <= c < 0x7F:
            out.append(ch)
        elif c < 0x10000:
            out.append(f"\\u{c:04x}")
        else:  # outside the BMP: a UTF-16 surrogate pair, as json does
            c -= 0x10000
            out.append(f"\\u{0xD800 | (c >> 10):04x}\\u{0xDC00 | (c & 0x3FF):04x}")
    return '"' + "".join(out) + '"'


_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}  # json's spellings


def _float(f: float) -> str:
    # (read from repr, not math.isnan/isinf: importing math costs ~0.1 ms of every run)
    text = float.__repr__(f)
    return _NON_FINITE.get(text, text)


def _key(k: object) -> str:
    if isinstance(k, str):
        return _str(k)
    if k is True or k is False or k is None:
        return '"' + {True: "true", False: "false", None: "null"}[k] + '"'
    if isinstance(k, float):
        return '"' + _float(k) + '"'
    if isinstance(k, int):
        return '"' + int.__repr__(k) + '"'
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(k).__name__}")


def _encode(o: Any, level: int, out: list[str]) -> None:
    if isinstance(o, str):
        out.append(_str(o))
    elif o is None:
        out.append("null")
    elif o is True:
        out.append("true")
    elif o is False:
        out.append("false")
    elif isinstance(o, int):
        out.append(int.__repr__(o))
    elif isinstance(o, float):
        out.append(_float(o))
    elif isinstance(o, list | tuple):
        if not o:
            out.append("[]")
            return
        inner = "\n" + "  " * (level + 1)
        out.append("[")
        for i, v in enumerate(o):
            out.append(("," if i else "") + inner)
            _encode(v, level + 1, out)
        out.append("\n" + "  " * level + "]")
    elif isinstance(o, dict):
        if not o:
            out.append("{}")
            return
        inner = "\n" + "  " * (level + 1)
        out.append("{")
        for i, (k, v) in enumerate(o.items()):
            out.append(("," if i else "") + inner + _key(k) + ": ")
            _encode(v, level + 1, out)
        out.append("\n" + "  " * level + "}")
    else:
        _encode(str(o), level, out)


def dumps_json(obj: Any) -> str:
    """Exactly ``json.dumps(obj, indent=2, default=str)``, without importing json (whose
    import pulls in ``re``: ~5 ms on every recorded command). Circular structures recurse
    until RecursionError instead of json's ValueError."""
    out: list[str] = []
    _encode(obj, 0, out)
    return "".join(out)
