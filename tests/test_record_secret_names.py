"""The record's masked environment: rage.sensitive's masking, with the verdict on each
variable name remembered between runs (rage.record.context.masked_environ)."""

from __future__ import annotations

import marshal
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rage.record import context
from rage.sensitive import masked_environ as reference

NAMES = ["PATH", "HOME", "PWD", "OLDPWD", "DB_PASSWORD", "GITHUB_TOKEN", "API_KEY", "SIM_PIN",
         "TOKENIZERS_PARALLELISM", "MAX_TOKENS", "AWS_SECRET_ACCESS_KEY", "LANG", "sort_key"]
VALUES = st.one_of(st.sampled_from(["", "1", "true", "/home/a b", "hunter2hunter2", "482913",
                                    "${OTHER}", "s3cr3t-a1b2c3d4e5"]), st.text(max_size=12))
ENVIRONS = st.dictionaries(st.one_of(st.sampled_from(NAMES), st.text(min_size=1, max_size=10)),
                           VALUES, max_size=8)


def same(got: dict[str, str], environ: dict[str, str]) -> None:
    want = reference(environ)
    assert got == want
    # a value kept is the caller's own object: save_environ finds the hidden values so
    for k, v in environ.items():
        assert (got[k] is v) == (want[k] is v), k


@settings(max_examples=150, deadline=None)
@given(ENVIRONS, ENVIRONS)
def test_the_same_masking_before_and_after_the_names_are_known(
        tmp_path_factory: pytest.TempPathFactory, first: dict[str, str],
        second: dict[str, str]) -> None:
    cache = os.path.join(tmp_path_factory.mktemp("c"), ".cache")
    same(context.masked_environ(first, cache), first)  # decided, remembered
    same(context.masked_environ(first, cache), first)  # from the cache
    same(context.masked_environ(second, cache), second)  # some known, some new


def test_verdicts_are_kept_privately_and_dated_by_the_rules(tmp_path: Path) -> None:
    cache = str(tmp_path / ".cache")
    env = {"PATH": "/bin", "GITHUB_TOKEN": "ghp_abcdefghijklmnop"}
    assert context.masked_environ(env, cache)["GITHUB_TOKEN"] == "[set, 20 chars, hidden]"
    path = tmp_path / ".cache" / context.SECRET_NAMES_FILE
    assert path.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / ".cache").stat().st_mode & 0o777 == 0o700
    stamp, names = marshal.loads(path.read_bytes())
    assert names == {"PATH": False, "GITHUB_TOKEN": True}
    # verdicts from other rules (another version, an edited rules file) are not used
    path.write_bytes(marshal.dumps((("0.0.0", 1, 2), {"GITHUB_TOKEN": False})))
    assert context.masked_environ(env, cache)["GITHUB_TOKEN"] != env["GITHUB_TOKEN"]
    assert marshal.loads(path.read_bytes()) == (stamp, names)


def test_a_planted_or_damaged_cache_is_never_believed(tmp_path: Path) -> None:
    cache = tmp_path / ".cache"
    env = {"GITHUB_TOKEN": "ghp_abcdefghijklmnop"}
    context.masked_environ(env, str(cache))
    path = cache / context.SECRET_NAMES_FILE
    stamp, _ = marshal.loads(path.read_bytes())
    lie = marshal.dumps((stamp, {"GITHUB_TOKEN": False}))
    path.write_bytes(lie)
    path.chmod(0o666)  # writable by others: planted, whatever it says
    assert context.masked_environ(env, str(cache))["GITHUB_TOKEN"] != env["GITHUB_TOKEN"]
    path.unlink()
    (tmp_path / "elsewhere").write_bytes(lie)
    path.symlink_to(tmp_path / "elsewhere")
    assert context.masked_environ(env, str(cache))["GITHUB_TOKEN"] != env["GITHUB_TOKEN"]
    path.unlink()
    path.write_bytes(b"\x00garbage")
    path.chmod(0o600)
    assert context.masked_environ(env, str(cache))["GITHUB_TOKEN"] != env["GITHUB_TOKEN"]


def test_an_unwritable_cache_still_masks(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    env = {"DB_PASSWORD": "hunter2hunter2", "HOME": "/root"}
    same(context.masked_environ(env, str(tmp_path / "file" / ".cache")), env)


def test_a_kept_value_is_remembered_a_masked_one_never(tmp_path: Path) -> None:
    cache = str(tmp_path / ".cache")
    env = {"PWD": "/home/alice/project", "DB_PASSWORD": "hunter2hunter2", "DB_PASS": "1"}
    same(context.masked_environ(env, cache), env)
    data = (tmp_path / ".cache" / context.SECRET_NAMES_FILE).read_bytes()
    _, names = marshal.loads(data)
    # a number under a password's name is masked (a PIN): only PWD's value is kept
    assert names == {"PWD": "/home/alice/project", "DB_PASSWORD": True, "DB_PASS": True}
    assert b"hunter2" not in data
    moved = {**env, "PWD": "/tmp/elsewhere"}
    same(context.masked_environ(moved, cache), moved)
    assert marshal.loads((tmp_path / ".cache" / context.SECRET_NAMES_FILE).read_bytes())[1][
        "PWD"] == "/tmp/elsewhere"
