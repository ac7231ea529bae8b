"""What changed since it last worked: a run against the last successful run before it.

The first question of every bug report ("did it ever work, and what changed?") answered
from the user's own history before anything is sent. The baseline is the most recent
successful run of the same app started before the run (of the same subcommand when the
app has one and such a run exists). The comparison reads each run's ``meta.json``,
``environ.json`` and ``fingerprint.json`` (rage.record.fingerprint): the program's
version, options and arguments (as the report redacts them), the working directory,
environment variables (names only: a value is never shown, a secret one is compared by
its keyed digest), the interpreter and its installed distributions, the config files the
app declared, the program's executable, the exit status and the duration.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rage.record.history import Run, RunStore

SCHEMA = 1
# variables a shell or terminal sets per session or per command: their changes say nothing
NOISE = frozenset({
    "_", "OLDPWD", "PWD", "SHLVL", "COLUMNS", "LINES", "RANDOM", "SECONDS", "HISTCMD",
    "TERM_SESSION_ID", "SHELL_SESSION_ID", "WINDOWID", "SSH_AUTH_SOCK", "SSH_AGENT_PID",
    "SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY", "XDG_SESSION_ID", "XDG_VTNR", "GPG_TTY",
    "TMUX_PANE", "STY", "WT_SESSION", "KITTY_WINDOW_ID", "INVOCATION_ID", "JOURNAL_STREAM",
    "PYTEST_CURRENT_TEST", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_TESTRUNUID", "OTEL_TRACE_ID",
    "GIO_LAUNCHED_DESKTOP_FILE_PID", "VSCODE_GIT_IPC_HANDLE", "ITERM_SESSION_ID",
})
SHOWN_MAX = 8  # changes named in the one-line summary


def _subcommand(meta: Mapping[str, Any]) -> str | None:
    argv = meta.get("argv")
    if isinstance(argv, list) and len(argv) > 1 and isinstance(argv[1], str) and re.fullmatch(
            r"[a-z][a-z0-9_-]{0,40}", argv[1]):
        return argv[1]
    return None


def baseline(run: Run, runs: Sequence[Run]) -> Run | None:
    """The last successful run of ``run``'s app before it, among ``runs``: of the same
    subcommand if there is one."""
    before = [r for r in runs if r.app == run.app and r.id != run.id and r.status == "ok"
              and (r.started_at or "", r.id) < (run.started_at or "", run.id)]
    before.sort(key=lambda r: (r.started_at or "", r.id))
    sub = _subcommand(run.meta)
    same = [r for r in before if _subcommand(r.meta) == sub] if sub else []
    pick = same or before
    return pick[-1] if pick else None


def _options(argv: Sequence[str]) -> tuple[dict[str, str | None], list[str]]:
    """Options (``--x``, ``--x=v``, ``-x``) by name, and the other arguments, in order."""
    opts: dict[str, str | None] = {}
    args: list[str] = []
    rest = False
    for a in argv:
        if not rest and a == "--":
            rest = True
        elif not rest and a.startswith("-") and a != "-":
            name, eq, value = a.partition("=")
            opts[name] = value if eq else None
        else:
            args.append(a)
    return opts, args


def _environ(run: Run) -> dict[str, str]:
    from rage.record.meta import read_environ

    try:
        return read_environ(run.dir) or {}
    except (OSError, ValueError):
        return {}


def _distributions(fp: Mapping[str, Any] | None, cache: str) -> dict[str, str] | None:
    """name -> version over a fingerprint's site directories; None when unknown."""
    from rage.record.fingerprint import listing

    py = (fp or {}).get("python")
    if not isinstance(py, dict) or not isinstance(py.get("sites"), list):
        return None
    out: dict[str, str] = {}
    for site in py["sites"]:
        got = listing(cache, site[2] if isinstance(site, list) and len(site) == 3 else None)
        if got is None:
            return None
        for name, version in got.items():
            out.setdefault(name, version)  # the first directory on the path wins
    return out


def compare(old: Run, new: Run, redactor: Any, cache: str) -> dict[str, Any]:
    """What differs from ``old`` (it worked) to ``new``, as redacted plain data."""
    from rage.record.fingerprint import read as read_fp

    out: dict[str, Any] = {"schema": SCHEMA, "baseline": {
        "run": old.id, "started_at": old.started_at, "status": old.status}}
    mo, mn = old.meta, new.meta
    if mo.get("app_version") != mn.get("app_version"):
        out["version"] = [mo.get("app_version"), mn.get("app_version")]

    def argv(m: Mapping[str, Any]) -> list[str]:
        a = m.get("argv")
        return [str(x) for x in a[1:]] if isinstance(a, list) else []

    (oo, oa), (no, na) = _options(redactor.argv(argv(mo))), _options(redactor.argv(argv(mn)))
    opts = {"added": sorted(set(no) - set(oo)), "removed": sorted(set(oo) - set(no)),
            "changed": {k: [oo[k], no[k]] for k in sorted(set(oo) & set(no)) if oo[k] != no[k]}}
    if any(opts.values()):
        out["options"] = opts
    if oa != na:
        out["arguments"] = [oa, na]
    if mo.get("cwd") != mn.get("cwd"):
        out["cwd"] = [redactor.text(str(mo.get("cwd") or "")),
                      redactor.text(str(mn.get("cwd") or ""))]
    eo, en = _environ(old), _environ(new)
    fo, fn = read_fp(old.meta), read_fp(new.meta)
    if eo and en:
        do, dn = fo.get("env") or {}, fn.get("env") or {}
        names = (set(eo) | set(en)) - NOISE
        env = {"added": sorted(k for k in names if k not in eo),
               "removed": sorted(k for k in names if k not in en),
               "changed": sorted(k for k in names if k in eo and k in en and (
                   eo[k] != en[k] or do.get(k) != dn.get(k)))}
        if any(env.values()):
            out["env"] = env
    po, pn = fo.get("python") or {}, fn.get("python") or {}
    if po.get("version") != pn.get("version") and po and pn:
        out["python"] = [po.get("version"), pn.get("version")]
    do_, dn_ = _distributions(fo, cache), _distributions(fn, cache)
    if do_ is not None and dn_ is not None:
        dists = {"added": {k: dn_[k] for k in sorted(set(dn_) - set(do_))},
                 "removed": {k: do_[k] for k in sorted(set(do_) - set(dn_))},
                 "changed": {k: [do_[k], dn_[k]] for k in sorted(set(do_) & set(dn_))
                             if do_[k] != dn_[k]}}
        if any(dists.values()):
            out["distributions"] = dists
    elif po.get("sites") != pn.get("sites") and po and pn:
        out["distributions"] = {"unknown": True}  # changed, their lists no longer kept
    xo, xn = fo.get("executable"), fn.get("executable")
    if isinstance(xo, list) and isinstance(xn, list) and xo[0] == xn[0] and xo[1:] != xn[1:]:
        out["executable"] = redactor.text(str(xn[0]))
    co = {c[0]: c[1:] for c in fo.get("config") or [] if isinstance(c, list) and c}
    cn = {c[0]: c[1:] for c in fn.get("config") or [] if isinstance(c, list) and c}
    conf = {"added": sorted(redactor.text(k) for k in set(cn) - set(co)),
            "removed": sorted(redactor.text(k) for k in set(co) - set(cn)),
            "changed": sorted(redactor.text(k) for k in set(co) & set(cn)
                              if (co[k][0], co[k][2]) != (cn[k][0], cn[k][2]))}
    if any(conf.values()):
        out["config"] = conf
    out["exit"] = [_ending(old), _ending(new)]
    if isinstance(mo.get("duration_s"), int | float) and isinstance(
            mn.get("duration_s"), int | float):
        out["duration_s"] = [mo["duration_s"], mn["duration_s"]]
    return out


def _ending(run: Run) -> str:
    sig = run.meta.get("signal")
    if sig:
        from rage.report.summary import signal_name

        return str(signal_name(sig if isinstance(sig, int) else None) or sig)
    return f"exit {run.meta.get('exit_code')}"


def items(changes: Mapping[str, Any]) -> list[str]:
    """Each change in a few words, the likeliest causes first."""
    out: list[str] = []
    if "version" in changes:
        a, b = changes["version"]
        out.append(f"version {a or '?'} -> {b or '?'}")
    d = changes.get("distributions") or {}
    if d.get("unknown"):
        out.append("installed distributions changed")
    out += [f"{k} {a} -> {b}" for k, (a, b) in (d.get("changed") or {}).items()]
    out += [f"{k} {v} installed" for k, v in (d.get("added") or {}).items()]
    out += [f"{k} {v} removed" for k, v in (d.get("removed") or {}).items()]
    if "python" in changes:
        a, b = changes["python"]
        out.append(f"Python {a} -> {b}")
    if "executable" in changes:
        out.append(f"the program changed ({changes['executable']})")
    o = changes.get("options") or {}
    out += [f"option {k} added" for k in o.get("added") or ()]
    out += [f"option {k} removed" for k in o.get("removed") or ()]
    out += [f"option {k} changed" for k in o.get("changed") or {}]
    if "arguments" in changes:
        out.append("arguments changed")
    c = changes.get("config") or {}
    out += [f"config {k} changed" for k in c.get("changed") or ()]
    out += [f"config {k} added" for k in c.get("added") or ()]
    out += [f"config {k} missing" for k in c.get("removed") or ()]
    e = changes.get("env") or {}
    out += [f"env {k} changed" for k in e.get("changed") or ()]
    out += [f"env {k} set" for k in e.get("added") or ()]
    out += [f"env {k} unset" for k in e.get("removed") or ()]
    if "cwd" in changes:
        out.append("working directory changed")
    return out


def _ago(started_at: str | None, now: float | None = None) -> str:
    from rage.record.history import parse_iso

    try:
        then = parse_iso(started_at or "").timestamp()
    except (ValueError, TypeError):
        return "at an unknown time"
    import time

    s = max(0, (time.time() if now is None else now) - then)
    for unit, n in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if s >= n:
            k = int(s // n)
            return f"{k} {unit}{'s' if k > 1 else ''} ago"
    return "just before"


def headline(changes: Mapping[str, Any] | None) -> str:
    """``Since it last worked (run X, 3 days ago): a, b, c`` (or that nothing differs, or
    that it never worked)."""
    if not changes:
        return "It never worked before: no earlier successful run of this app is recorded."
    base = changes["baseline"]
    short = str(base["run"]).rsplit("-", 1)[-1]
    what = items(changes)
    if not what:
        listed = "nothing rage records differs"
    else:
        listed = ", ".join(what[:SHOWN_MAX])
        if len(what) > SHOWN_MAX:
            listed += f", and {len(what) - SHOWN_MAX} more"
    if base.get("status") != "ok":
        return f"Since run {short} ({_ago(base.get('started_at'))}): {listed}"
    return f"Since it last worked (run {short}, {_ago(base.get('started_at'))}): {listed}"


def find_baseline(run: Run, store: RunStore | None = None) -> Run | None:
    """:func:`baseline` among the runs of ``run``'s app in ``store``, read newest first:
    ``meta.json`` is read only from ``run`` back to the match (and the runs of the match's
    last seconds, whose order their ids alone do not tell), not for the whole history.
    Ids are dated by the clock that dates ``started_at`` (never after it), so a run whose
    id is older than a match's ``started_at`` by more than a moment cannot come after it
    (:func:`rage.report.select.stop_before`). A run of a subcommand that never worked as
    that subcommand is compared with the last run that worked at all: that one takes
    reading back to the start of the history."""
    from rage.record.history import load_run
    from rage.report.select import id_second, stop_before

    store = store if store is not None else RunStore()
    key = (run.started_at or "", run.id)
    sub = _subcommand(run.meta)
    best_any: Run | None = None
    best_same: Run | None = None
    stop: str | None = None  # ids dated before this second hold no better match
    for d in reversed(store.run_dirs(run.app)):
        if stop is not None and id_second(d.name) < stop:
            break
        if d.name == run.id or (run.started_at and id_second(d.name) > run.started_at):
            continue  # (an id is never dated after its started_at: a later run, unread)
        r = load_run(run.app, d)
        if r.status != "ok" or (r.started_at or "", r.id) >= key:
            continue
        rkey = (r.started_at or "", r.id)
        if best_any is None or rkey > (best_any.started_at or "", best_any.id):
            best_any = r
        if sub and _subcommand(r.meta) == sub and (
                best_same is None or rkey > (best_same.started_at or "", best_same.id)):
            best_same = r
        found = best_same if sub else best_any
        if found is not None:
            stop = stop_before(found)
    return best_same or best_any


def for_run(run: Run, redactor: Any, runs: Sequence[Run] | None = None
            ) -> dict[str, Any] | None:
    """The changes since ``run``'s baseline (None when there is none); ``runs``: the runs
    to choose it from, else the app's history, read back only as far as the baseline
    (:func:`find_baseline`)."""
    from rage.paths import home_root

    old = find_baseline(run) if runs is None else baseline(run, runs)
    if old is None:
        return None
    return compare(old, run, redactor, os.path.join(home_root(), ".cache"))
