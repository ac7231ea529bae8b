"""`rage report --last` / `--last-failed` pick the run `RunStore.resolve` picks, reading the
history newest first: counted as the `meta.json` files a real process opens (an audit
hook in a child process), on a real history of hundreds of runs of two apps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rage.errors import NotFoundError
from rage.record.history import RunStore
from rage.record.store import start_run
from rage.report.select import resolve_flags

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_780_000_000 * 10**9
MINUTE = 60 * 10**9

# the start of a child process that counts the meta.json files it opens, once it calls
# sys.addaudithook(hook)
COUNTS_META_OPENS = """
import json, sys
from pathlib import Path
opened = []
def hook(event, args):
    if event == "open" and str(args[0]).endswith("meta.json"):
        opened.append(str(args[0]))
"""

CHILD = COUNTS_META_OPENS + """
from rage.record.history import RunStore
from rage.report.select import resolve_flags
store = RunStore(Path(sys.argv[1]))
sys.addaudithook(hook)
run = resolve_flags(store, sys.argv[2] or None, None, last=sys.argv[3] == "last",
                    last_failed=sys.argv[3] == "last-failed")
print(json.dumps({"opened": len(opened), "run": run.id}))
"""


def record(home: Path, app: str, at_ns: int, exit_code: int, *, report: bool = False) -> str:
    rec = start_run(home, app, [app], recorder="wrapper", started_ns=at_ns,
                    extra={"report_command": True} if report else None)
    rec.finish_meta(exit_code=exit_code)
    return os.path.basename(rec.run_dir)


def child(home: Path, app: str | None, flag: str) -> dict[str, int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", CHILD, str(home), app or "", flag], env=env,
                         capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def by_resolve(home: Path, app: str | None, flag: str) -> str:
    return RunStore(home).resolve(flag, app).id


def test_last_reads_back_only_to_the_run_it_picks(rage_home: Path) -> None:
    for i in range(300):
        record(rage_home, "tool", T0 + i * MINUTE, 0 if i % 50 else 2)
    for i in range(100):
        record(rage_home, "other", T0 + i * MINUTE + 10**9, 0)
    newest = record(rage_home, "tool", T0 + 400 * MINUTE, 0)
    failed = record(rage_home, "tool", T0 + 250 * MINUTE + 10**9, 1)
    record(rage_home, "tool", T0 + 401 * MINUTE, 0, report=True)  # `mytool rage` itself

    got = child(rage_home, None, "last")
    assert str(got["run"]) == newest == by_resolve(rage_home, None, "last")
    assert got["opened"] == 2  # the report command's, then the pick (401 before)
    got = child(rage_home, "tool", "last-failed")
    assert str(got["run"]) == failed == by_resolve(rage_home, "tool", "last-failed")
    assert got["opened"] <= 3 + 2 * 50  # back to it, not to the start (303 before)


def test_the_same_pick_as_resolve_in_the_corners(rage_home: Path) -> None:
    """One second's runs whose random ids sort against their start times, a damaged
    newest record, apps interleaved, nothing failed."""
    second = T0 + 10 * MINUTE
    for k in range(6):
        record(rage_home, "tool" if k % 2 else "other", second + k * 10**8, k % 3)
    broken = record(rage_home, "tool", second + MINUTE, 0)
    (rage_home / "tool" / "runs" / broken / "meta.json").write_text("{")
    store = RunStore(rage_home)
    for app in (None, "tool", "other"):
        for flag in ("last", "last-failed"):
            want = by_resolve(rage_home, app, flag)
            got = resolve_flags(store, app, None, last=flag == "last",
                                last_failed=flag == "last-failed")
            assert got is not None and got.id == want, (app, flag)


def test_nothing_failed_and_nothing_recorded(rage_home: Path) -> None:
    store = RunStore(rage_home)
    with pytest.raises(NotFoundError, match="no runs recorded"):
        resolve_flags(store, None, None, last=True, last_failed=False)
    record(rage_home, "tool", T0, 0)
    with pytest.raises(NotFoundError, match="no failed run recorded for app 'tool'") as e:
        resolve_flags(store, "tool", None, last=False, last_failed=True)
    assert e.value.hint and "rage list" in e.value.hint
