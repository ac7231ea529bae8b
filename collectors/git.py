"""The ``git`` collector: the work tree the run happened in (branch, HEAD, dirt, remotes)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from collectors.base import Collector, CommandResult, Context

GIT_TIMEOUT = 3.0
# Stable output, no prompts, and never take the index lock (a report must not race the user).
_GIT_ENV = {"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0",
            "GIT_PAGER": "cat"}
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


def _first_line(res: CommandResult) -> str:
    lines = (res.stderr or res.stdout).strip().splitlines()
    return lines[0] if lines else f"exit status {res.returncode}"


class GitCollector(Collector):
    name = "git"
    description = "Git work tree of the run: branch, HEAD, dirty files, remotes, operation"
    timeout = 5.0

    def applies(self, ctx: Context) -> bool:
        return find_work_tree(ctx.cwd) is not None and shutil.which("git") is not None

    def _git(self, ctx: Context, *args: str) -> CommandResult:
        res = ctx.run_command(["git", *args], GIT_TIMEOUT, env=_GIT_ENV)
        if res is None:
            raise RuntimeError("cannot run git")
        if res.timed_out:
            raise RuntimeError(f"git {args[0]} took longer than {GIT_TIMEOUT:g}s")
        return res

    def collect(self, ctx: Context) -> Any:
        version = self._git(ctx, "--version").stdout.strip().removeprefix("git version ")
        rp = self._git(ctx, "rev-parse", "--show-toplevel", "--absolute-git-dir")
        if not rp.ok:
            raise RuntimeError(_first_line(rp))
        top, git_dir = rp.stdout.strip().splitlines()[:2]
        st = self._git(ctx, "status", "--porcelain=v2", "--branch")
        if not st.ok:
            raise RuntimeError(_first_line(st))
        info: dict[str, Any] = {"git_version": version, "top_level": top}
        info.update(parse_status(st.stdout))
        cfg = self._git(ctx, "config", "--get-regexp", r"^remote\..*\.url$")
        remotes: dict[str, str] = {}
        for line in cfg.stdout.splitlines():
            key, _, url = line.partition(" ")
            remotes[key[len("remote."):-len(".url")]] = strip_credentials(url)
        info["remotes"] = remotes
        gd = Path(git_dir)
        ops = [op for op, marker in _OPERATIONS if (gd / marker).exists()]
        info["in_progress"] = sorted(set(ops))
        return info
