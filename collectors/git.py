"""The ``git`` collector: the work tree the run happened in (branch, HEAD, dirt, remotes)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from collectors.base import Collector, CommandResult, Context

GIT_TIMEOUT = 3.0
# Stable output, no prompts, and never take the index lock (a report must not race the user).
# In a partial clone, never fetch a missing object (newer git; older ones meet
# protocol.allow=never below instead).
_GIT_ENV = {"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0",
            "GIT_PAGER": "cat", "GIT_EDITOR": ":", "GIT_SEQUENCE_EDITOR": ":",
            "GIT_NO_LAZY_FETCH": "1"}
# The user's own git settings (where their global config is, where git's helpers live) are
# kept; every other GIT_* variable is dropped: GIT_DIR and friends would point the
# collector at another repository, GIT_EXTERNAL_DIFF or GIT_SSH_COMMAND name programs.
_KEPT_GIT_VARS = frozenset({"GIT_EXEC_PATH", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
                            "GIT_CONFIG_NOSYSTEM", "GIT_CEILING_DIRECTORIES"})
# Settings that make git run a program, by git-config(1), each set to its "none" value on
# the command line, which beats every config file. The repository being inspected is data
# someone else may have written (a clone, an unpacked archive): reporting on it must not
# run what its .git/config names. Most of these only matter to commands this collector
# never runs (fetch, commit, rebase); they are here so a new command cannot forget them.
# Per-remote programs (remote.*.uploadpack, receivepack, vcs helpers) and send-email's are
# reached only through a transport or a command that is never run here.
_NO_PROGRAMS = (
    ("core.fsmonitor", "false"), ("core.useBuiltinFSMonitor", "false"),
    ("core.hooksPath", "/dev/null"), ("core.pager", "cat"), ("pager.status", "false"),
    ("pager.config", "false"), ("diff.external", ""), ("core.editor", ":"),
    ("sequence.editor", ":"), ("core.sshCommand", ""), ("core.gitProxy", ""),
    ("core.askPass", ""), ("credential.helper", ""), ("gpg.program", ""),
    ("gpg.openpgp.program", ""), ("gpg.x509.program", ""), ("gpg.ssh.program", ""),
    ("core.alternateRefsCommand", ""), ("uploadpack.packObjectsHook", ""),
    ("status.submoduleSummary", "false"),
    # No transport at all, so no credential helper, ssh command or remote helper is reached.
    ("protocol.allow", "never"),
)
# Per-driver settings that name programs; the drivers are found by listing the config.
# An empty command is git's "no filter"/"no textconv"; ``required`` must then be false
# or git would fail on the files the filter is for.
_DRIVER_KEY_RE = re.compile(
    r"^(?:(filter)\.(.+)\.(?:clean|smudge|process|required)"
    r"|(diff)\.(.+)\.(?:textconv|command)|(merge)\.(.+)\.driver)$",
    re.DOTALL,
)
_DRIVER_OFF = {
    "filter": (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")),
    "diff": (("textconv", ""), ("command", "")),
    "merge": (("driver", ""),),
}
# In-progress operations, by the marker each leaves in the git directory.
_OPERATIONS = (("rebase", "rebase-merge"), ("rebase", "rebase-apply"), ("merge", "MERGE_HEAD"),
               ("cherry-pick", "CHERRY_PICK_HEAD"), ("revert", "REVERT_HEAD"),
               ("bisect", "BISECT_LOG"))
_SCP_LIKE_RE = re.compile(r"^([^@/:]+)@([^/:]+):(.*)$")


def find_work_tree(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding ``.git`` (no subprocess)."""
    for p in (start, *start.parents):
        if (p / ".git").exists():
            return p
    return None


def strip_credentials(url: str) -> str:
    """Drop passwords and tokens from a remote URL.

    ``https://user:pw@host/x.git`` -> ``https://host/x.git`` (tokens often sit in the user
    part of http URLs, so it goes too); ``ssh://git:pw@host/x`` keeps the user name.
    """
    if _SCP_LIKE_RE.match(url):  # git@host:path has no password slot
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return "[unparsable url]"
    if not parts.scheme or "@" not in parts.netloc:
        return url
    userinfo, _, hostport = parts.netloc.rpartition("@")
    if parts.scheme.lower() in {"http", "https", "ftp", "ftps"}:
        netloc = hostport
    else:
        netloc = f"{userinfo.split(':', 1)[0]}@{hostport}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def parse_status(text: str) -> dict[str, Any]:
    """Parse ``git status --porcelain=v2 --branch`` output."""
    out: dict[str, Any] = {"branch": None, "head": None, "upstream": None, "ahead": None,
                           "behind": None, "changed": 0, "untracked": 0, "conflicted": 0}
    for line in text.splitlines():
        if line.startswith("# branch.oid "):
            oid = line.split(" ", 2)[2]
            out["head"] = None if oid == "(initial)" else oid
        elif line.startswith("# branch.head "):
            head = line.split(" ", 2)[2]
            out["branch"] = None if head == "(detached)" else head
            out["detached"] = head == "(detached)"
        elif line.startswith("# branch.upstream "):
            out["upstream"] = line.split(" ", 2)[2]
        elif line.startswith("# branch.ab "):
            ahead, behind = line.split(" ")[2:4]
            out["ahead"], out["behind"] = int(ahead), abs(int(behind))
        elif line.startswith(("1 ", "2 ")):
            out["changed"] += 1
        elif line.startswith("u "):
            out["conflicted"] += 1
        elif line.startswith("? "):
            out["untracked"] += 1
    out["dirty"] = out["changed"] + out["conflicted"] + out["untracked"]
    return out


def driver_overrides(config_list: str) -> list[tuple[str, str]]:
    """``(key, value)`` pairs that switch off every driver named in ``git config -z --list``.

    Raises RuntimeError for a driver name that ``git -c`` cannot express (one with ``=``).
    """
    out: dict[str, str] = {}
    for entry in config_list.split("\0"):
        key = entry.partition("\n")[0]
        m = _DRIVER_KEY_RE.match(key)
        if not m:
            continue
        section, name = next((m.group(i), m.group(i + 1)) for i in (1, 3, 5) if m.group(i))
        if "=" in name:
            raise RuntimeError("the repository's config names a driver git cannot be told to "
                               "ignore; not inspected")
        for var, value in _DRIVER_OFF[section]:
            out[f"{section}.{name}.{var}"] = value
    return list(out.items())


def git_environment() -> dict[str, str | None]:
    """What to change in the environment for git: our settings in, other GIT_* out."""
    env: dict[str, str | None] = {k: None for k in os.environ
                                  if k.startswith("GIT_") and k not in _KEPT_GIT_VARS}
    env.update(_GIT_ENV)
    return env


def _first_line(res: CommandResult) -> str:
    lines = (res.stderr or res.stdout).strip().splitlines()
    return lines[0] if lines else f"exit status {res.returncode}"


def _refusal(res: CommandResult) -> str:
    line = _first_line(res)
    if "dubious ownership" in line:
        # git's safe.directory check: the repository belongs to another user, so its config
        # is not to be trusted; rage keeps that refusal rather than overriding it.
        return "the repository belongs to another user (git's safe.directory refused it)"
    return line


class GitCollector(Collector):
    name = "git"
    description = "Git work tree of the run: branch, HEAD, dirty files, remotes, operation"
    timeout = 5.0

    def applies(self, ctx: Context) -> bool:
        return find_work_tree(ctx.cwd) is not None and ctx.which("git") is not None

    def _git(self, ctx: Context, git: str, *args: str,
             overrides: list[tuple[str, str]] | None = None) -> CommandResult:
        options = ["--no-pager", "--no-optional-locks"]
        for key, value in (*_NO_PROGRAMS, *(overrides or ())):
            options += ["-c", f"{key}={value}"]
        res = ctx.run_command([git, *options, *args], GIT_TIMEOUT, env=git_environment())
        if res is None:
            raise RuntimeError("cannot run git")
        if res.timed_out:
            raise RuntimeError(f"git {args[0]} took longer than {GIT_TIMEOUT:g}s")
        return res

    def collect(self, ctx: Context) -> Any:
        git = ctx.which("git")
        if git is None:
            raise RuntimeError("git is not on PATH")
        version = self._git(ctx, git, "--version").stdout.strip().removeprefix("git version ")
        rp = self._git(ctx, git, "rev-parse", "--show-toplevel", "--absolute-git-dir")
        if not rp.ok:
            raise RuntimeError(_refusal(rp))
        top, git_dir = rp.stdout.strip().splitlines()[:2]
        listed = self._git(ctx, git, "config", "-z", "--list")
        if not listed.ok:
            raise RuntimeError(_refusal(listed))
        if listed.truncated:  # a driver could hide past what was read
            raise RuntimeError("the repository's config is larger than rage reads: "
                               "not inspected")
        drivers_off = driver_overrides(listed.stdout)
        # Submodules are other repositories with their own config: git would run `git
        # status` inside each (with their drivers, unlisted here) to see whether its files
        # changed, so only the commit each one is at is compared.
        st = self._git(ctx, git, "status", "--porcelain=v2", "--branch",
                       "--ignore-submodules=dirty", overrides=drivers_off)
        if not st.ok:
            raise RuntimeError(_refusal(st))
        info: dict[str, Any] = {"git_version": version, "top_level": top}
        info.update(parse_status(st.stdout))
        cfg = self._git(ctx, git, "config", "--get-regexp", r"^remote\..*\.url$")
        remotes: dict[str, str] = {}
        for line in cfg.stdout.splitlines():
            key, _, url = line.partition(" ")
            remotes[key[len("remote."):-len(".url")]] = strip_credentials(url)
        info["remotes"] = remotes
        gd = Path(git_dir)
        ops = [op for op, marker in _OPERATIONS if (gd / marker).exists()]
        info["in_progress"] = sorted(set(ops))
        return info
