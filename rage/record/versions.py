"""Which version of a shimmed program ran: ``NAME --version``, once per change.

The shim calls :func:`remember_tool_version` before the run; it runs the program's
``--version`` only when the executable's path, mtime or size changed since the last probe
and keeps the first line in ``<root>/<app>/.tool-version``. :func:`rage.record.store.start_run`
reads it back (:func:`tool_version`: one stat and one small read) into ``app_version``.
"""

from __future__ import annotations

import os

from rage.fsutil import is_own_dir, private_dir, read_own, write_atomic
from rage.paths import home_root_str, is_app_name

_TRUE = frozenset({"1", "true", "yes", "on"})  # rage.config's spellings of a true boolean


def _tool_key(executable: str) -> str | None:
    """What identifies one build of a program: its path, mtime and size."""
    try:
        st = os.stat(executable)
    except OSError:
        return None
    return f"{executable}\0{st.st_mtime_ns}\0{st.st_size}"


def _read_tool_version(app_dir: str, key: str) -> str | None:
    data = read_own(os.path.join(app_dir, ".tool-version"), 8192)
    if data is None:
        return None
    cached, _, version = data.decode("utf-8", "replace").partition("\n")
    return version if cached == key else None


def tool_version(app_dir: str, executable: str) -> str | None:
    """The recorded ``--version`` of this build of ``executable`` (None: unknown)."""
    key = _tool_key(executable)
    return (_read_tool_version(app_dir, key) or None) if key is not None else None


def remember_tool_version(app: str, executable: str, argv0: str) -> None:
    """Run ``executable --version`` once per change of the executable (path, mtime, size)
    and keep its first line in ``<app>/.tool-version``, where :func:`start_run` finds it.

    The probe gets no stdin and no controlling terminal, and 3 s at most; a program without
    ``--version`` records an empty version, so it is not asked again until it changes."""
    if not is_app_name(app) or os.environ.get("RAGE_DISABLE", "").strip().lower() in _TRUE:
        return
    key = _tool_key(executable)
    app_dir = os.path.join(home_root_str(), app)
    if key is None or "\n" in key or _read_tool_version(app_dir, key) is not None:
        return
    version = _probe(executable, argv0)
    try:
        private_dir(app_dir)
        if is_own_dir(app_dir):
            write_atomic(os.path.join(app_dir, ".tool-version"),
                         f"{key}\n{version}".encode("utf-8", "surrogateescape"))
    except OSError:
        pass


def _probe(executable: str, argv0: str) -> str:
    """The first line ``executable --version`` prints, "" if it fails or takes over 3 s.

    Never waits longer: on timeout its whole process group is killed, and pipes still held
    open by something that left the group are abandoned rather than waited for."""
    import signal
    import subprocess

    try:
        # RAGE_DISABLE: a tool with rage built in must not record the probe as a run of its own
        proc = subprocess.Popen([argv0, "--version"], executable=executable,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True,
                                env={**os.environ, "RAGE_DISABLE": "1"})
    except OSError:
        return ""
    try:
        out, err = proc.communicate(timeout=3)
    except subprocess.TimeoutExpired:
        try:  # noqa: SIM105 - the group may be gone already
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            proc.communicate(timeout=0.5)
        except subprocess.TimeoutExpired:
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
        proc.wait()
        return ""
    text = (out if out.strip() else err).decode("utf-8", "replace")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[0][:200] if proc.returncode == 0 and lines else ""
