"""Hostile data on the user's own disk: a repository, a shared directory, the history.

Each test builds the hostile thing for real (a repository whose config names programs,
symlinks planted in a world-writable directory, FIFOs in the history) and runs the real
`rage` CLI against it in a subprocess.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import run_rage

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout


def bundle_member(bundle: Path, name: str) -> bytes:
    import tarfile

    import zstandard

    with bundle.open("rb") as f, tarfile.open(
            fileobj=zstandard.ZstdDecompressor().stream_reader(f), mode="r|") as tar:
        for member in tar:
            if member.name == name:
                extracted = tar.extractfile(member)
                assert extracted is not None
                return extracted.read()
    raise AssertionError(f"{name} not in {bundle}")


# --- item 15: a repository's config never runs ------------------------------------------

# Every config key git-config(1) documents as naming a program (or a hook directory), as
# (key, whether git runs it through the shell). Shell commands touch a marker named for
# the key; the others point at a script that does.
_PROGRAM_KEYS = (
    "core.fsmonitor", "core.sshCommand", "core.askPass", "core.editor", "core.pager",
    "core.gitProxy", "core.alternateRefsCommand", "sequence.editor", "diff.external",
    "diff.evil.textconv", "diff.evil.command", "merge.evil.driver", "filter.evil.clean",
    "filter.evil.smudge", "filter.evilp.process", "credential.helper", "gpg.program",
    "gpg.ssh.program", "gpg.x509.program", "uploadpack.packObjectsHook", "pager.status",
    "receive.procReceiveRefs", "remote.origin.uploadpack", "remote.origin.receivepack",
    "sendemail.sendmailcmd",
)
_HOOKS = ("post-index-change", "pre-commit", "post-checkout", "fsmonitor-watchman",
          "reference-transaction", "pre-auto-gc", "post-rewrite")


def _hostile_repo(root: Path, markers: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("one\n")
    (repo / "b.txt").write_text("two\n")
    (repo / ".gitattributes").write_text("a.txt filter=evil diff=evil merge=evil\n"
                                          "b.txt filter=evilp diff=evil\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    # A submodule is another repository with its own config, which git status would visit.
    sub = root / "sub"
    sub.mkdir()
    git(sub, "init", "-q", "-b", "main")
    (sub / "c.txt").write_text("three\n")
    (sub / ".gitattributes").write_text("c.txt filter=subevil\n")
    git(sub, "add", "-A")
    git(sub, "commit", "-q", "-m", "sub")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "sub")
    git(repo, "commit", "-q", "-m", "with sub")
    git(repo / "sub", "config", "core.fsmonitor", f"touch '{markers}/sub-fsmonitor'; echo")
    git(repo / "sub", "config", "filter.subevil.clean", f"touch '{markers}/sub-clean'; cat")
    hooks = repo / "hooks"
    hooks.mkdir()
    for hook in _HOOKS:
        script = hooks / hook
        script.write_text(f"#!/bin/sh\ntouch '{markers}/hook-{hook}'\n")
        script.chmod(0o755)
        shutil.copy(script, repo / ".git" / "hooks" / hook)
    for key in _PROGRAM_KEYS:
        git(repo, "config", key, f"touch '{markers}/{key}'; echo")
    git(repo, "config", "core.hooksPath", str(hooks))
    git(repo, "config", "filter.evil.required", "true")
    git(repo, "config", "remote.origin.url", f"ext::sh -c touch% '{markers}/ext'")
    # A tracked file whose stat no longer matches the index: git must look at its content,
    # which is where clean filters run; and one really changed, for the dirty count.
    os.utime(repo / "sub" / "c.txt", (1, 1))
    os.utime(repo / "a.txt", (1, 1))
    (repo / "b.txt").write_text("TWO\n")
    (repo / "new.txt").write_text("untracked\n")
    return repo


@needs_git
def test_report_runs_nothing_a_repository_config_names(tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    repo = _hostile_repo(tmp_path, markers)
    # git itself does run these: the hostile repository is real (the process filter is left
    # out here only because its failure would stop git before it visits the submodule).
    subprocess.run(["git", "-c", "filter.evilp.process=", "status"], cwd=repo,
                   capture_output=True, check=False,
                   env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull})
    ran = {p.name for p in markers.iterdir()}
    assert {"core.fsmonitor", "filter.evil.clean", "hook-post-index-change", "sub-fsmonitor",
            "sub-clean"} <= ran, ran
    for p in markers.iterdir():
        p.unlink()

    assert run_rage("run", "--", "sh", "-c", "exit 3", cwd=repo).returncode == 3
    out = tmp_path / "bug.tar.zst"
    res = run_rage("report", "last", "--yes", "--no-upload", "-o", str(out), "--json",
                   cwd=repo)
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in markers.iterdir()) == []
    section = json.loads(bundle_member(out, "collectors/git.json"))
    assert section["status"] == "ok", section
    info = section["data"]
    assert info["branch"] == "main"
    assert info["head"] == git(repo, "rev-parse", "HEAD").strip()
    assert info["changed"] == 1 and info["untracked"] == 2  # new.txt, hooks/


@needs_git
def test_git_and_tools_are_not_found_in_the_reported_directory(tmp_path: Path) -> None:
    """A PATH with a relative entry must not find programs planted in the run's directory."""
    markers = tmp_path / "markers"
    markers.mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for name in ("git", "mytool"):
        planted = repo / name
        planted.write_text(f"#!/bin/sh\ntouch '{markers}/{name}'\n")
        planted.chmod(0o755)
    real_git = shutil.which("git")
    assert real_git
    env = {**os.environ, "PATH": os.pathsep.join((".", os.environ.get("PATH", "")))}
    assert run_rage("run", "--", "sh", "-c", "exit 3", cwd=repo, env=env).returncode == 3
    out = tmp_path / "bug.tar.zst"
    (tmp_path / "rage-config.toml").write_text('[default]\ntools = ["mytool"]\n')
    res = run_rage("report", "last", "--yes", "--no-upload", "-o", str(out), cwd=repo,
                   env=env)
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in markers.iterdir()) == []
    section = json.loads(bundle_member(out, "collectors/git.json"))
    assert section["status"] == "ok" and section["data"]["branch"] == "main"
    tools = json.loads(bundle_member(out, "collectors/tools.json"))
    assert tools["data"]["mytool"] == {"path": None, "error": "not found"}


def test_python_probe_does_not_import_from_the_reported_directory(tmp_path: Path) -> None:
    from collectors.base import Context
    from collectors.python import PythonCollector

    markers = tmp_path / "markers"
    markers.mkdir()
    cwd = tmp_path / "project"
    cwd.mkdir()
    for module in ("json", "platform", "os"):
        (cwd / f"{module}.py").write_text(
            f"open({str(markers / module)!r}, 'w').close()\nraise SystemExit(9)\n")
    other = tmp_path / "python"
    other.symlink_to(sys.executable)  # another path, so the collector probes it
    info = PythonCollector().collect(Context(cwd=cwd, python=str(other)))
    assert sorted(p.name for p in markers.iterdir()) == []
    assert info["version"] == ".".join(map(str, sys.version_info[:3]))


@needs_git
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="needs root to give the repository to another user")
def test_git_keeps_the_safe_directory_refusal(tmp_path: Path) -> None:
    from collectors.base import Context
    from collectors.git import GitCollector

    repo = tmp_path / "theirs"
    repo.mkdir()
    git(repo, "init", "-q")
    for p in (repo, *repo.rglob("*")):
        os.lchown(p, 65534, 65534)
    with pytest.raises(RuntimeError, match="belongs to another user"):
        GitCollector().collect(Context(cwd=repo))


# --- item 16: temporary files in a directory others can write ---------------------------

def _rage_with_known_pid(*args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
    """Start `rage ARGS` paused: its pid is known before it runs (sh execs into it)."""
    from tests.conftest import rage_cmd

    script = 'read _ && exec "$@"'
    return subprocess.Popen(["sh", "-c", script, "sh", *rage_cmd(*args)], cwd=cwd,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate("go\n", timeout=60)
    return proc.returncode, out, err


def _shared_dir(tmp_path: Path) -> Path:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # world-writable, no sticky bit: anyone may rename anyone's files
    return shared


def _victim(tmp_path: Path, name: str) -> Path:
    victim = tmp_path / name
    victim.write_text("precious\n")
    return victim


def _plant_links(shared: Path, tmp_path: Path, names: list[str]) -> list[Path]:
    """A symlink at each of ``names`` in ``shared`` to a victim file of its own."""
    victims: list[Path] = []
    for name in names:
        victim = _victim(tmp_path, f"victim{len(victims)}")
        (shared / name).symlink_to(victim)
        victims.append(victim)
    return victims


def _assert_private_file(path: Path) -> None:
    st = path.lstat()
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600


def test_report_output_never_writes_through_a_planted_symlink(tmp_path: Path) -> None:
    shared = _shared_dir(tmp_path)
    assert run_rage("run", "--", "sh", "-c", "echo hi; exit 3").returncode == 3
    out = shared / "bug.tar.zst"
    proc = _rage_with_known_pid("report", "last", "--yes", "--no-upload", "-o", str(out))
    pid = proc.pid
    # the names rage used to write through: its temp name and write_bundle's inside it
    victims = _plant_links(shared, tmp_path, [f".bug.tar.zst.{pid}.part",
                                        f"..bug.tar.zst.{pid}.part.{pid}.tmp"])
    code, _, err = _finish(proc)
    assert code == 0, err
    assert [v.read_bytes() for v in victims] == [b"precious\n"] * len(victims)
    _assert_private_file(out)
    assert json.loads(bundle_member(out, "manifest.json"))
    # nothing of rage's is left behind: only the planted links
    assert sorted(p.name for p in shared.iterdir() if not p.is_symlink()) == ["bug.tar.zst"]


def test_send_to_a_directory_never_writes_through_a_planted_symlink(tmp_path: Path) -> None:
    shared = _shared_dir(tmp_path)
    assert run_rage("run", "--", "sh", "-c", "echo hi; exit 3").returncode == 3
    bundle = tmp_path / "b.tar.zst"
    made = run_rage("report", "last", "--yes", "--no-upload", "-o", str(bundle))
    assert made.returncode == 0, made.stderr
    proc = _rage_with_known_pid("send", str(bundle), "--to", shared.as_uri(), "--yes")
    [victim] = _plant_links(shared, tmp_path, [f".b.tar.zst.{proc.pid}.part"])
    code, _, err = _finish(proc)
    assert code == 0, err
    assert victim.read_bytes() == b"precious\n"
    sent = shared / "b.tar.zst"
    _assert_private_file(sent)
    assert sent.read_bytes() == bundle.read_bytes()


def test_redact_output_never_writes_through_a_planted_symlink(tmp_path: Path) -> None:
    shared = _shared_dir(tmp_path)
    src = tmp_path / "app.log"
    src.write_text("password=hunter2-and-more\nall is well\n")
    out = shared / "clean.log"
    proc = _rage_with_known_pid("redact", str(src), "-o", str(out), "-q")
    # at the output itself, and at the temporary names an editor or a naive writer uses
    victims = _plant_links(shared, tmp_path, [
        "clean.log", ".clean.log.tmp", "clean.log.tmp", f"clean.log.{proc.pid}",
        f".clean.log.{proc.pid}.tmp", "clean.log~", ".clean.log.swp"])
    code, _, err = _finish(proc)
    assert code == 0, err
    assert [v.read_bytes() for v in victims] == [b"precious\n"] * len(victims)
    _assert_private_file(out)
    assert out.read_text() == "password=[REDACTED:secret-field]\nall is well\n"
    # nothing of rage's is left behind: only the planted links (the output's is replaced)
    assert sorted(p.name for p in shared.iterdir() if not p.is_symlink()) == ["clean.log"]
    # an existing file of the user's is replaced, as before; a failed write leaves none
    again = run_rage("redact", str(src), "-o", str(out), "-q")
    assert again.returncode == 0 and out.read_text().endswith("all is well\n")
    gone = run_rage("redact", str(tmp_path / "missing.log"), "-o", str(out), "-q")
    assert gone.returncode == 3 and "Traceback" not in gone.stderr
    assert sorted(p.name for p in shared.iterdir() if not p.is_symlink()) == ["clean.log"]
    # a device of the system's is written to, never replaced by a file (as root it could be)
    null = run_rage("redact", str(src), "-o", os.devnull, "-q")
    assert null.returncode == 0, null.stderr
    assert stat.S_ISCHR(os.lstat(os.devnull).st_mode)


def test_redact_of_a_pipe_grows_its_output_at_once_and_follows_no_link(tmp_path: Path) -> None:
    """`tail -f log | rage redact -o F` never ends: F must be there, a fresh 0600 file (a
    link planted at F replaced, not followed), holding each line as it is redacted."""
    from tests.conftest import rage_cmd

    shared = _shared_dir(tmp_path)
    out = shared / "live.log"
    [victim] = _plant_links(shared, tmp_path, [out.name])
    proc = subprocess.Popen(rage_cmd("redact", "-o", str(out), "-q"), stdin=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stderr is not None
    try:
        proc.stdin.write(b"password=hunter2-and-more\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 30  # a hang guard: the input stays open meanwhile
        while time.monotonic() < deadline and not (
                out.exists() and not out.is_symlink() and out.read_bytes()):
            time.sleep(0.05)
        assert proc.poll() is None  # still reading its pipe
        _assert_private_file(out)
        assert out.read_bytes() == b"password=[REDACTED:secret-field]\n"
        proc.stdin.write(b"all is well\n")
    finally:
        proc.stdin.close()
    assert proc.wait(timeout=30) == 0, proc.stderr.read()
    proc.stderr.close()
    assert out.read_bytes() == b"password=[REDACTED:secret-field]\nall is well\n"
    assert victim.read_bytes() == b"precious\n"
    assert sorted(p.name for p in shared.iterdir()) == ["live.log"]


def test_link_new_never_publishes_a_swapped_name(tmp_path: Path) -> None:
    """Someone renames a symlink over the temporary name before it gets its real name."""
    from rage.fsutil import create_temp, link_new

    shared = _shared_dir(tmp_path)
    victim = _victim(tmp_path, "victim")
    tmp, fd = create_temp(shared / "out.bin")
    try:
        os.write(fd, b"ours")
        swap = shared / "swap"
        swap.symlink_to(victim)
        os.replace(swap, tmp)  # what another user can do in this directory
        with pytest.raises(OSError, match="replaced by someone else"):
            link_new(fd, tmp, shared / "out.bin")
    finally:
        os.close(fd)
        os.unlink(tmp)
    assert not os.path.lexists(shared / "out.bin")
    assert victim.read_bytes() == b"precious\n"
    # and when nobody interferes, the file gets its name
    tmp, fd = create_temp(shared / "out.bin")
    try:
        os.write(fd, b"ours")
        link_new(fd, tmp, shared / "out.bin")
        with pytest.raises(FileExistsError):
            link_new(fd, tmp, shared / "out.bin")
    finally:
        os.close(fd)
        os.unlink(tmp)
    _assert_private_file(shared / "out.bin")
    assert (shared / "out.bin").read_bytes() == b"ours"


# --- item 17: what is left in the history can neither hang nor exhaust rage --------------

def _one_run(rage_home: Path) -> Path:
    res = run_rage("run", "--", "sh", "-c", "echo visible; echo oops >&2; exit 3")
    assert res.returncode == 3
    (run_dir,) = (rage_home / "sh" / "runs").iterdir()
    return run_dir


def _plant(run_dir: Path) -> None:
    """A FIFO and links to /dev/zero where the recorder leaves files, as a program could."""
    (run_dir / "stderr.log").unlink()
    os.mkfifo(run_dir / "stderr.log")
    os.mkfifo(run_dir / "traceback.txt")
    (run_dir / "fatal.log").symlink_to("/dev/zero")
    (run_dir / "log.jsonl").symlink_to("/dev/zero")
    (run_dir / "attachments").mkdir()
    os.mkfifo(run_dir / "attachments" / "app.log")


@pytest.mark.parametrize("command", [
    ("show", "last"), ("show", "last", "--json"), ("show", "last", "--output-log"), ("list",),
    ("report", "last", "--yes", "--no-upload", "--no-collect", "-o", "-"),
])
def test_history_with_fifos_and_device_links_is_read_safely(
        rage_home: Path, command: tuple[str, ...]) -> None:
    run_dir = _one_run(rage_home)
    _plant(run_dir)
    res = subprocess.run(_cmd(*command), capture_output=True, timeout=15, check=False,
                         stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr
    assert len(res.stdout) < 1024 * 1024  # nothing of /dev/zero
    err = res.stderr.decode()
    if command[-1] == "--output-log":
        assert b"visible" in res.stdout
        assert "stderr.log of run" in err and "a named pipe, not read" in err
        assert "traceback.txt of run" in err and "fatal.log of run" in err
        assert "a symbolic link, not read" in err
    if command[0] == "report":
        for name in ("stderr.log", "traceback.txt", "attachments/app.log"):
            assert f"cannot read run/{name}: a named pipe, not read" in err, err
        for name in ("fatal.log", "log.jsonl"):
            assert f"cannot read run/{name}: a symbolic link, not read" in err, err


def _cmd(*args: str) -> list[str]:
    from tests.conftest import rage_cmd

    return rage_cmd(*args)


def test_a_fifo_left_as_joined_json_does_not_hang_the_wrapper(rage_home: Path) -> None:
    script = (f'sleep 0.3; for d in "{rage_home}"/sh/runs/2*; do mkfifo "$d/joined.json"; '
              'done; echo planted')
    res = run_rage("run", "--", "sh", "-c", script, timeout=15)
    assert res.returncode == 0 and "planted" in res.stdout, res.stderr
    listed = run_rage("list", "--json", timeout=15)
    assert json.loads(listed.stdout)["runs"][0]["status"] == "ok"


def test_attachments_that_became_fifos_or_devices_are_refused(tmp_path: Path) -> None:
    """A log file matched when the run ended, swapped for a FIFO before it is copied."""
    fifo = tmp_path / "app.log"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.log"
    zero.symlink_to("/dev/zero")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    code = ("import json, sys; from rage.record.attachments import copy_attachments; "
            "print(json.dumps(copy_attachments(sys.argv[1:3], sys.argv[3], 1 << 20)[1]))")
    res = subprocess.run([sys.executable, "-c", code, str(fifo), str(zero), str(run_dir)],
                         capture_output=True, text=True, timeout=15, check=False)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == [f"cannot attach {fifo}: a named pipe, not read",
                                      f"cannot attach {zero}: a device, not read"]


def test_pending_with_a_fifo_sidecar_does_not_hang(rage_home: Path) -> None:
    _one_run(rage_home)
    made = run_rage("report", "last", "--yes", "--no-upload", "--no-collect")
    assert made.returncode == 0, made.stderr
    (bundle,) = (rage_home / "sh" / "reports").glob("*.tar.zst")
    os.mkfifo(bundle.with_name(bundle.name + ".sent.json"))
    res = run_rage("pending", "--json", timeout=15)
    assert res.returncode == 0, res.stderr
    assert [b["path"] for b in json.loads(res.stdout)["bundles"]] == [str(bundle)]


# --- item 18: kill -9 of the wrapper keeps what the user saw -----------------------------

_THIRTY_LINES = 'i=1; while [ $i -le 30 ]; do echo "line $i"; i=$((i+1)); done; sleep 30'


def _lost_run_output(rage_home: Path, name: str) -> bytes:
    listed = run_rage("list", "--json", timeout=15)
    (run,) = json.loads(listed.stdout)["runs"]
    import psutil

    with contextlib.suppress(psutil.Error):  # the command outlives its killed wrapper
        command = psutil.Process(run["pid"])
        for p in (*command.children(recursive=True), command):
            p.kill()
    assert run["status"] == "lost"
    return (Path(run["dir"]) / name).read_bytes()


def test_kill_9_of_the_wrapper_on_a_terminal_keeps_what_was_shown(rage_home: Path) -> None:
    from tests.test_wrapper_pty import terminal

    with terminal("--", "sh", "-c", _THIRTY_LINES) as term:
        term.read_until(b"line 30\r\n")
        os.kill(term.proc.pid, signal.SIGKILL)
        term.proc.wait(timeout=10)
    recorded = _lost_run_output(rage_home, "output.log")
    assert recorded == b"".join(f"line {i}\r\n".encode() for i in range(1, 31))


def test_kill_9_of_the_wrapper_on_pipes_keeps_what_was_passed_on(rage_home: Path) -> None:
    from tests.conftest import rage_cmd

    proc = subprocess.Popen(rage_cmd("run", "--", "sh", "-c", _THIRTY_LINES),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    seen = b""
    while b"line 30\n" not in seen:
        chunk = os.read(proc.stdout.fileno(), 65536)
        assert chunk, seen
        seen += chunk
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    proc.stdout.close()
    recorded = _lost_run_output(rage_home, "stdout.log")
    assert recorded == b"".join(f"line {i}\n".encode() for i in range(1, 31))


# --- item 19: an upload token goes only to the receiver it belongs to -------------------

def _bundle_to_send(rage_home: Path) -> Path:
    _one_run(rage_home)
    made = run_rage("report", "last", "--yes", "--no-upload", "--no-collect")
    assert made.returncode == 0, made.stderr
    (bundle,) = (rage_home / "sh" / "reports").glob("*.tar.zst")
    return bundle


def test_upload_token_reaches_only_its_own_receiver(rage_home: Path,
                                                    config_file: Path) -> None:
    from tests.test_upload_servers import Reply, serving

    bundle = _bundle_to_send(rage_home)
    ok = Reply(201, b'{"url": "{base}/b/1"}')
    env = {**os.environ, "RAGE_UPLOAD_TOKEN": "mine"}
    with serving(ok) as home, serving(ok) as stranger:
        config_file.write_text(f'[default]\nupload_url = "receiver+{home.url}/"\n')
        # another port of the same host is another receiver
        elsewhere = run_rage("send", str(bundle), "--to", f"receiver+{stranger.url}/",
                             "--yes", env=env)
        again = run_rage("report", "last", "--yes", "--no-collect", "--to",
                         f"receiver+{stranger.url}/", env=env)
        own = run_rage("send", str(bundle), "--yes", env=env)
    for res in (elsewhere, again, own):
        assert res.returncode == 0, res.stderr
        assert "mine" not in res.stdout + res.stderr
    # the two uploads, and the report's "is it known?" query before its upload: no token
    assert [(s.method, s.headers.get("Authorization")) for s in stranger.seen] == [
        ("POST", None), ("GET", None), ("POST", None)]
    assert [s.headers.get("Authorization") for s in home.seen] == ["Bearer mine"]
    stranger_origin = stranger.url  # http://127.0.0.1:PORT: scheme, host and port
    for res in (elsewhere, again):
        said = [ln for ln in res.stderr.splitlines() if "RAGE_UPLOAD_TOKEN not sent" in ln]
        assert said == [f"rage: RAGE_UPLOAD_TOKEN not sent to {stranger_origin}: it is bound "
                        f"to upload_url's {home.url}; to send a token there, add it under "
                        f"[tokens] in the config as \"{stranger_origin}\""], res.stderr
    assert "not sent" not in own.stderr


def test_tokens_table_binds_a_token_per_receiver(rage_home: Path, config_file: Path) -> None:
    from tests.test_upload_servers import Reply, serving

    bundle = _bundle_to_send(rage_home)
    ok = Reply(201, b'{"url": "{base}/b/1"}')
    env = {k: v for k, v in os.environ.items() if k != "RAGE_UPLOAD_TOKEN"}
    with serving(ok) as one, serving(ok) as two, serving(ok) as three:
        config_file.write_text(f'[tokens]\n"{one.url}" = "token-one"\n'
                               f'"{two.url}/" = "token-two"\n')  # a path is ignored
        for s in (one, two, three):
            res = run_rage("send", str(bundle), "--to", f"receiver+{s.url}/", "--yes",
                           env=env)
            assert res.returncode == 0, res.stderr
            assert "token-" not in res.stdout + res.stderr
    assert one.seen[0].headers.get("Authorization") == "Bearer token-one"
    assert two.seen[0].headers.get("Authorization") == "Bearer token-two"
    assert "Authorization" not in three.seen[0].headers
    config_file.write_text('[tokens]\n"ftp://x" = "t"\n')
    bad = run_rage("send", str(bundle), "--to", "receiver+http://127.0.0.1:9/", "--yes",
                   env=env)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "[tokens]: 'ftp://x' is not an http(s) origin" in bad.stderr


def test_github_token_goes_only_to_github_or_a_configured_gist_api(
        rage_home: Path, config_file: Path) -> None:
    from tests.test_upload_servers import Reply, serving

    bundle = _bundle_to_send(rage_home)
    made = Reply(201, b'{"html_url": "{base}/gist/1"}')
    env = {**os.environ, "GITHUB_TOKEN": "gh-secret", "PATH": os.defpath}  # no `gh`
    with serving(made) as posing:
        # a gist_api_url someone put in the config: GitHub's token is withheld, said once
        config_file.write_text(f'[default]\ngist_api_url = "{posing.url}"\n')
        res = run_rage("send", str(bundle), "--to", "gist", "--yes", env=env)
        assert res.returncode != 0 and "Traceback" not in res.stderr
        assert "gh-secret" not in res.stdout + res.stderr
        assert res.stderr.count("GITHUB_TOKEN not sent to") == 1, res.stderr
        assert (f"GITHUB_TOKEN not sent to {posing.url}: it is bound to "
                "https://api.github.com") in res.stderr
        assert f'[tokens] in the config as "{posing.url}"' in res.stderr
        # `gist+URL` names the API in the command: the same binding
        res = run_rage("send", str(bundle), "--to", f"gist+{posing.url}", "--yes", env=env)
        assert res.returncode != 0 and "GITHUB_TOKEN not sent to" in res.stderr
        assert posing.seen == []
        # a token the [tokens] table binds to that origin goes there, and only it
        config_file.write_text(f'[default]\ngist_api_url = "{posing.url}"\n'
                               f'[tokens]\n"{posing.url}" = "enterprise-token"\n')
        res = run_rage("send", str(bundle), "--to", "gist", "--yes", env=env)
        assert res.returncode == 0, res.stderr
    assert [(s.method, s.path, s.headers.get("Authorization")) for s in posing.seen] == [
        ("POST", "/gists", "Bearer enterprise-token")]
    # GitHub's own API still gets GitHub's token
    from rage.config import Settings
    from rage.upload.github import gist_token

    os.environ["GITHUB_TOKEN"] = "gh-secret"
    try:
        config_file.write_text("")
        assert gist_token("https://api.github.com/", Settings()) == "gh-secret"
        assert gist_token("https://API.github.com:443", Settings()) == "gh-secret"
    finally:
        del os.environ["GITHUB_TOKEN"]


@pytest.mark.parametrize("fifo", ["fatal.log", "meta.json"])
def test_a_recorded_tools_start_up_never_blocks_on_a_fifo_in_a_dead_run(
        tmp_path: Path, fifo: str) -> None:
    """The integration looks at the runs of recorders that died (their live/ entries) when
    a tool starts: a FIFO there would hang the user's own tool."""
    root = tmp_path / "home"
    run_dir = root / "app" / "runs" / "20250101T000000Z-deadbeef"
    run_dir.mkdir(parents=True)
    (root / "app" / "live").mkdir()
    (root / "app" / "live" / "999999").symlink_to(run_dir)
    (run_dir / "fatal.log").write_text("Fatal Python error: Segmentation fault\n")
    (run_dir / "meta.json").write_text('{"status": "running"}\n')
    (run_dir / fifo).unlink()
    os.mkfifo(run_dir / fifo)
    code = ("import sys; from rage.integration.handoff import earlier_crashes; "
            "print(earlier_crashes(sys.argv[1], 'app'))")
    res = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True,
                         text=True, timeout=15, check=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


def test_a_fifo_as_the_upload_key_secret_does_not_hang_send(rage_home: Path) -> None:
    from rage.upload.idempotency import SECRET_FILE
    from tests.test_upload_servers import Reply, serving

    bundle = _bundle_to_send(rage_home)
    os.mkfifo(rage_home / SECRET_FILE)
    with serving(Reply(201, b'{"url": "{base}/b/1"}')) as s:
        res = run_rage("send", str(bundle), "--to", f"receiver+{s.url}/", "--yes",
                       timeout=15)
    assert res.returncode == 0, res.stderr
    assert len(s.seen) == 1


def test_collector_commands_keep_a_bounded_part_of_a_flood() -> None:
    import tracemalloc

    from collectors.base import Context

    tracemalloc.start()
    try:
        res = Context().run_command(
            [sys.executable, "-c", "import sys; sys.stdout.write('x' * (64 << 20))"],
            timeout=30)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert res is not None and res.ok and res.truncated
    assert len(res.stdout) == 1024 * 1024
    assert peak < 16 * 1024 * 1024, peak


@needs_git
def test_git_refuses_a_config_too_large_to_list_whole(tmp_path: Path) -> None:
    from collectors.base import Context
    from collectors.git import GitCollector

    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    # a driver listed after a megabyte of harmless settings
    (repo / ".git" / "big.cfg").write_text(
        "[alias]\n" + "".join(f"\ta{i} = status\n" for i in range(120_000))
        + f"[filter \"late\"]\n\tclean = touch '{tmp_path}/marker'; cat\n")
    git(repo, "config", "include.path", "big.cfg")
    (repo / ".gitattributes").write_text("* filter=late\n")
    with pytest.raises(RuntimeError, match="config is larger than rage reads"):
        GitCollector().collect(Context(cwd=repo))
    assert not (tmp_path / "marker").exists()
