"""The baseline of "what changed since it last worked" is found by reading the history back
from the newest run, only as far as the match: counted as the `meta.json` files the
process really opens (a Python audit hook in a child process sees every open), on a real
history of hundreds of runs. And it is the run a full listing would choose."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rage.record.history import Run, RunStore, load_run
from rage.record.store import start_run
from rage.redact import Redactor
from rage.report.changes import baseline, for_run
from tests.test_select_walk import COUNTS_META_OPENS, MINUTE, T0

ROOT = Path(__file__).resolve().parent.parent

# for_run in a new process that counts the meta.json files it opens
CHILD = COUNTS_META_OPENS + """
from rage.record.history import RunStore
from rage.redact import Redactor
from rage.report import changes
run = RunStore(Path(sys.argv[1])).resolve(sys.argv[2], "tool")
redactor = Redactor(pseudonymize=False)
sys.addaudithook(hook)
result = changes.for_run(run, redactor)
print(json.dumps({"opened": len(opened), "baseline": result and result["baseline"]["run"]}))
"""


def record(home: Path, at_ns: int, argv: list[str], exit_code: int) -> str:
    """One finished run of `tool`, dated ``at_ns``, as a recorder writes it."""
    rec = start_run(home, "tool", argv, recorder="wrapper", started_ns=at_ns)
    rec.finish_meta(exit_code=exit_code)
    return os.path.basename(rec.run_dir)


def history(home: Path, n: int, argv: list[str], start: int = T0) -> list[str]:
    """``n`` successful runs, one a minute from ``start``."""
    return [record(home, start + i * MINUTE, argv, 0) for i in range(n)]


def child(home: Path, ref: str) -> dict[str, int | str | None]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", CHILD, str(home), ref], env=env,
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def by_listing(home: Path, run_id: str) -> str | None:
    """The baseline as the full listing of the history chooses it."""
    store = RunStore(home)
    run = load_run("tool", home / "tool" / "runs" / run_id)
    old = baseline(run, store.list("tool").runs)
    return old.id if old else None


def test_the_baseline_is_read_back_only_as_far_as_the_match(rage_home: Path) -> None:
    home = rage_home
    ids = history(home, 400, ["tool", "build"])
    failed = record(home, T0 + 400 * MINUTE, ["tool", "build", "--fast"], 3)
    got = child(home, failed)
    assert got["baseline"] == ids[-1] == by_listing(home, failed)
    # the failed run's own meta is not read again, its baseline's once, and nothing older
    # than a few seconds before that (a listing reads all 401)
    assert got["opened"] == 1


def test_an_older_failed_run_reads_only_from_itself_back(rage_home: Path) -> None:
    home = rage_home
    ids = history(home, 300, ["tool", "build"])
    failed = record(home, T0 + 150 * MINUTE + 30 * 10**9, ["tool", "build"], 3)
    got = child(home, failed)
    assert got["baseline"] == ids[150] == by_listing(home, failed)
    assert got["opened"] == 1  # the newer runs' ids say they came after it: not read


def test_a_subcommand_walks_back_to_its_own_last_success(rage_home: Path) -> None:
    home = rage_home
    deploy = record(home, T0, ["tool", "deploy"], 0)
    history(home, 50, ["tool", "build"], T0 + MINUTE)
    failed = record(home, T0 + 60 * MINUTE, ["tool", "deploy", "--now"], 1)
    got = child(home, failed)
    assert got["baseline"] == deploy == by_listing(home, failed)
    assert got["opened"] == 51  # every build back to the deploy, no further


def test_same_answer_as_the_listing_in_every_corner(rage_home: Path) -> None:
    """Runs of one second whose ids' random parts sort against their start times; a
    subcommand that never worked (the last success of any kind answers); no success at
    all; a damaged record in the way."""
    home = rage_home
    second = T0 + 10 * MINUTE
    same_second = [record(home, second + k * 10**8, ["tool", "build"], 0) for k in range(6)]
    failed_same = record(home, second + 9 * 10**8, ["tool", "build"], 2)
    never = record(home, second + MINUTE, ["tool", "lint"], 1)
    broken = record(home, second + 2 * MINUTE, ["tool", "build"], 0)
    (home / "tool" / "runs" / broken / "meta.json").write_text("{")
    after_broken = record(home, second + 3 * MINUTE, ["tool"], 5)
    redactor = Redactor(pseudonymize=False)
    for ref in (failed_same, never, after_broken, same_second[0]):
        run = load_run("tool", home / "tool" / "runs" / ref)
        found = for_run(run, redactor)
        assert (found and found["baseline"]["run"]) == by_listing(home, ref), ref
    # the latest by start time in that second, whatever its id's random part
    assert by_listing(home, failed_same) == same_second[-1]
    assert by_listing(home, same_second[0]) is None  # the app never worked before it


def test_for_run_still_takes_a_given_list(rage_home: Path) -> None:
    home = rage_home
    ids = history(home, 3, ["tool"])
    failed = record(home, T0 + 5 * MINUTE, ["tool"], 1)
    run = load_run("tool", home / "tool" / "runs" / failed)
    runs: list[Run] = [load_run("tool", home / "tool" / "runs" / ids[0])]
    old = baseline(run, runs)
    assert old is not None and old.id == ids[0]
