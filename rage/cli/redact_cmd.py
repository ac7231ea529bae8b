"""`rage redact [FILE|-]`: the redaction engine as a filter, for any log and for scripts."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import click

from rage.errors import BadInputError, NotFoundError

_CHUNK = 64 * 1024


_PAUSE = 0.2  # seconds a live input may be silent before what is held back goes out


def _chunks(f: BinaryIO, *, live: bool = False) -> Iterator[bytes]:
    """The input's chunks. ``live`` (a pipe): whatever is there, and after a pause of
    :data:`_PAUSE` the engine's FLUSH, so a line held for the lines that may follow a
    multi-line opener (``Bearer``, ``name:``, ``key: |``) waits that long at most."""
    read = getattr(f, "read1", f.read)  # a pipe: take what is there, do not wait for 64 KiB
    if live:
        import select

        from rage.redact.parallel import FLUSH

        try:  # from the descriptor itself: nothing may wait unseen in a buffer
            fd = f.fileno()
            read = lambda n: os.read(fd, n)  # noqa: E731
        except (OSError, ValueError):
            live = False
    while True:
        if live:
            try:
                ready = select.select([f], [], [], _PAUSE)[0]
            except (OSError, ValueError):  # no select on this input: never flushed early
                live = False
            else:
                if not ready:
                    yield FLUSH
        chunk = read(_CHUNK)
        if not chunk:
            return
        yield chunk


def _open_input(path: str) -> tuple[BinaryIO, int | None]:
    if path == "-":
        stdin = sys.stdin.buffer
        try:
            st = os.fstat(stdin.fileno())
            size = st.st_size if st.st_size and stat.S_ISREG(st.st_mode) else None
        except (OSError, ValueError):
            size = None
        return stdin, size
    p = Path(path)
    if not p.exists():
        raise NotFoundError(f"no such file: {path}")
    if p.is_dir():
        raise BadInputError(f"{path} is a directory, not a file")
    try:
        f = open(p, "rb")  # noqa: SIM115 - closed by the caller
    except OSError as e:
        raise BadInputError(f"cannot read {path}: {e.strerror or e}") from None
    return f, os.fstat(f.fileno()).st_size


def _run_of(source: str) -> Any:
    """The recorded run (:class:`rage.record.history.Run`) whose file ``source`` is, in the
    rage home's ``<app>/runs/<id>/``; None for any other file or standard input."""
    if source == "-":
        return None
    from rage.paths import home_root
    from rage.record.history import load_run
    from rage.record.runid import is_run_id

    try:
        path = Path(source).resolve()
        rel = path.relative_to(home_root().resolve()).parts
    except (OSError, ValueError):
        return None
    if len(rel) < 4 or rel[1] != "runs" or not is_run_id(rel[2]):
        return None
    run_dir = home_root().resolve() / rel[0] / "runs" / rel[2]
    return load_run(rel[0], run_dir)


def _summary_line(counts: dict[str, int]) -> str:
    total = sum(counts.values())
    if not total:
        return "rage: nothing redacted"
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1],
                                                                                   kv[0])))
    return f"rage: redacted {total} ({kinds})"


@click.command()
@click.argument("source", metavar="[FILE|-]", required=False, default="-")
@click.option("--output", "-o", type=click.Path(path_type=Path), metavar="FILE",
              help="Write to FILE (created 0600) instead of standard output.")
@click.option("--no-pseudonyms", is_flag=True,
              help="Keep your home directory, user and host names as they are.")
@click.option("--pattern", "patterns", multiple=True, metavar="REGEX",
              help="Also redact what REGEX matches (repeatable; added to the `redact` "
                   "setting).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the counts per kind as JSON on standard error.")
@click.option("--quiet", "-q", is_flag=True, help="Print no counts.")
def redact(*, source: str, output: Path | None, no_pseudonyms: bool, patterns: tuple[str, ...],
           as_json: bool, quiet: bool) -> None:
    """Redact FILE (or standard input) to standard output, as a bundle would be redacted.

    Secrets become [REDACTED:<kind>]; the counts per kind go to standard error. The
    secret values of this process's environment are redacted wherever they appear. Terminal
    escapes and redraws are resolved first, so the output is plain text. Exits 3 if FILE
    does not exist, 6 if it cannot be read.
    """
    from rage.config import load_settings
    from rage.defaults import LEARNED_MAX
    from rage.fsutil import create_temp, open_private
    from rage.redact import Redactor

    settings = load_settings(None)
    redactor = Redactor(patterns=(*settings.redact, *patterns),
                        pseudonymize=not no_pseudonyms)
    redactor.learn([os.environ], [])  # a secret of this environment, wherever it is
    run = _run_of(source)
    if run is not None:  # and those of the run's, as its report removes them
        from rage.cli.render import warn
        from rage.report import learn_from_record, recorded_environ

        said: list[str] = []
        learn_from_record(redactor, run, recorded_environ(run, said), said)
        for w in said:
            warn(w)
    src, size = _open_input(source)
    tmp = None
    try:
        if output is not None:
            # FILE may be in a directory others can write: a symlink planted at FILE or at
            # a guessable temporary name must never be written through. A fresh O_EXCL|
            # O_NOFOLLOW file under a random name, renamed over FILE once complete
            try:
                if _write_through(output):
                    out: BinaryIO = open_private(output, "wb")
                else:
                    tmp, fd = create_temp(output)
                    out = os.fdopen(fd, "wb")
                    if size is None:
                        # a pipe (`tail -f log | rage redact -o F`) may never end: F is
                        # the fresh file at once, and grows as lines are redacted
                        os.replace(tmp, output)
                        tmp = None
            except OSError as e:
                raise BadInputError(f"cannot write {output}: {e.strerror or e}") from None
        else:
            out = sys.stdout.buffer
        target = str(output) if output is not None else "standard output"

        def put(data: bytes) -> None:
            # a write that fails is the output's fault, not the source's (a full disk)
            try:
                out.write(data)
                if output is None or size is None:  # a pipe's lines out as they come
                    out.flush()
            except BrokenPipeError:
                raise
            except OSError as e:
                raise BadInputError(f"cannot write {target}: {e.strerror or e}") from None

        try:
            if size is not None and size <= LEARNED_MAX:
                # a file read whole, as a report reads a run's: a value it names once under
                # a secret name (`+ PASS=X`) goes wherever else it repeats it (`+ echo X`)
                redactor.start_learning()
                data = b"".join(redactor.stream(_chunks(src), size=size, workers=1))
                put(redactor.replace_learned(data, redactor.learned()))
            else:
                # a large file: large blocks and workers; a pipe: each read as it comes, so
                # `tail -f log | rage redact` shows lines as they are written
                block = {} if size is not None else {"block": 1}
                learner = _ForwardLearner(redactor) if size is None else None
                for piece in redactor.stream(_chunks(src, live=size is None), size=size,
                                             **block):
                    put(piece if learner is None else learner(piece))
        except OSError as e:
            if isinstance(e, BrokenPipeError):
                _quiet_stdout()
                return
            raise BadInputError(f"cannot read {source}: {e.strerror or e}") from None
        finally:
            if output is not None:
                try:
                    out.close()
                except OSError as e:
                    raise BadInputError(f"cannot write {target}: {e.strerror or e}") from None
        if tmp is not None and output is not None:
            try:
                os.replace(tmp, output)  # a symlink at FILE is replaced, never followed
            except OSError as e:
                raise BadInputError(f"cannot write {output}: {e.strerror or e}") from None
            tmp = None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if src is not sys.stdin.buffer:
            src.close()
    counts = redactor.counts
    if as_json:
        click.echo(json.dumps({"counts": counts, "total": sum(counts.values())}), err=True)
    elif not quiet:
        click.echo(_summary_line(counts), err=True)


def _write_through(path: Path) -> bool:
    """Whether ``path`` is a device, FIFO or symlink that only root or this user could have
    put there (``/dev/null``, ``/dev/stdout``): written to as a shell's redirection would.
    Anything else there is replaced by the new file, never followed (and a device is
    never replaced by a file, which as root would break ``/dev/null``)."""
    try:
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
            return False
        parent = os.stat(path.parent)
    except OSError:
        return False
    trusted = {0, os.geteuid()}
    return (st.st_uid in trusted and parent.st_uid in trusted
            and not parent.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


class _ForwardLearner:
    """On a pipe: what a piece names under a secret name is removed where the piece repeats
    it, and where the pieces after it do (the lines before are out already). The first
    :data:`PIPE_LEARN_MAX` values only. Each value is first looked for with ``in``, then
    made a literal of the redactor with those learned since (which compiles its literals'
    finder again) once there are 8 to 16 of them, a third of those learned: a pipe that names a
    secret on every line compiled it on every read, 0.2 s became 1.1 s for 12 MB. Redacted
    in this process only: past the first 8 MiB the worker processes redact, which do not
    learn (they know what was learned before they started)."""

    def __init__(self, redactor: Any) -> None:
        from rage.redact import FEW_LEARNED

        self.redactor = redactor
        self.few = FEW_LEARNED
        self.pending: list[str] = []  # learned, not yet the redactor's literals
        self.count = 0
        redactor.start_learning()

    def __call__(self, piece: bytes) -> bytes:
        r = self.redactor
        new = tuple(v for v in r.take_learned() if v not in self.pending)
        new = new[:PIPE_LEARN_MAX - self.count]
        self.count += len(new)
        if self.count < PIPE_LEARN_MAX:
            r.start_learning()
        self.pending += new
        if self.pending:
            piece = r.replace_learned(piece, self.pending)
            # (at most FEW_LEARNED pending: replace_learned searches for that few one by
            # one, and compiles a finder for more)
            if len(self.pending) >= min(self.few, max(8, self.count // 3)) or (
                    self.count >= PIPE_LEARN_MAX):
                r.add_literals(self.pending)
                self.pending = []
        return piece


PIPE_LEARN_MAX = 64  # values a pipe learns at most: a log rarely names more secrets


def _quiet_stdout() -> None:
    """The reader went away (``| head``): no traceback at exit when Python flushes stdout."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
