"""Settings resolution against real TOML files and environment variables."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rage.config import format_size, load_settings, parse_size
from rage.errors import ConfigError
from tests.conftest import run_rage


def test_precedence_flags_env_app_table_default_table_app_defaults(config_file: Path) -> None:
    config_file.write_text(
        '[default]\nmax_runs = 10\nupload_url = "https://default.example/"\n'
        'issues_url = "https://default.example/issues"\n'
        '[app.tool]\nmax_runs = 20\n'
    )
    defaults = {"max_runs": 5, "tools": ["git"], "upload_url": "https://app.example/"}
    s = load_settings("tool", app_defaults=defaults, environ={})
    assert s.max_runs == 20  # [app.tool] beats [default] and the app's own default
    assert s.upload_url == "https://default.example/"  # the user's file beats the app default
    assert s.tools == ("git",)  # app default where the user said nothing
    s = load_settings("tool", app_defaults=defaults, environ={"RAGE_MAX_RUNS": "30"})
    assert s.max_runs == 30
    s = load_settings("tool", environ={"RAGE_MAX_RUNS": "30"},
                      overrides={"max_runs": 40, "upload_url": None})
    assert s.max_runs == 40 and s.upload_url == "https://default.example/"
    other = load_settings("other", environ={})
    assert other.max_runs == 10


def test_sizes_lists_and_booleans_from_env(config_file: Path) -> None:
    s = load_settings("tool", environ={
        "RAGE_OUTPUT_CAP": "1.5MiB", "RAGE_ATTACH": "a.log:b/*.log",
        "RAGE_HINT_ON_FAILURE": "yes", "RAGE_BUNDLE_MAX_BYTES": "2G",
    })
    assert s.output_cap == 1536 * 1024
    assert s.attach == ("a.log", "b/*.log")
    assert s.hint_on_failure is True
    assert s.bundle_max_bytes == 2 * 1024**3


@pytest.mark.parametrize("text, fragment", [
    ("[default\n", "invalid config"),
    ("[default]\nno_such_key = 1\n", "unknown setting 'no_such_key'"),
    ("[default]\nmax_runs = \"many\"\n", "max_runs"),
    ("[default]\noutput_cap = \"lots\"\n", "not a size"),
])
def test_bad_config_is_a_config_error(config_file: Path, text: str, fragment: str) -> None:
    config_file.write_text(text)
    with pytest.raises(ConfigError, match=fragment):
        load_settings("tool", environ={})


def test_bad_config_through_the_cli_is_one_line_and_exit_6(config_file: Path) -> None:
    from rage.record.history import RunStore

    # gc reads the settings of each recorded app
    RunStore().start("tool", ["tool"], recorder="test").finish(exit_code=0)
    config_file.write_text("[default]\nmax_runs = [1, 2\n")
    res = run_rage("gc")
    assert res.returncode == 6, res.stderr
    assert res.stderr.startswith("rage: invalid config ") and "Traceback" not in res.stderr


def test_parse_and_format_size() -> None:
    assert parse_size("64MiB") == 64 * 1024**2
    assert parse_size("8M") == 8 * 1024**2
    assert parse_size(4096) == 4096
    with pytest.raises(ValueError):
        parse_size("-1")
    assert format_size(0) == "0 B"
    assert format_size(1023) == "1023 B"
    assert format_size(4710) == "4.6 KiB"
    assert format_size(12 * 1024 * 1024) == "12.0 MiB"
    assert format_size(3 * 1024**4) == "3072.0 GiB"
    assert parse_size(format_size(64 * 1024**2).replace(" ", "")) == 64 * 1024**2


@pytest.mark.parametrize(("toml", "value"), [
    ("max_runs = 0", 0), ("max_bytes = 0", 0), ("max_age_days = 0", 0.0),
    ("max_runs = 5.0", 5), ("max_age_days = 0.5", 0.5), ('max_bytes = "1MiB"', 1024**2),
    ("output_cap = 0", 0), ("upload_timeout = 0.5", 0.5),
])
def test_valid_numbers(config_file: Path, toml: str, value: float) -> None:
    config_file.write_text(f"[default]\n{toml}\n")
    s = load_settings("tool", environ={})
    assert getattr(s, toml.split(maxsplit=1)[0]) == value


@pytest.mark.parametrize(("toml", "why"), [
    ("max_runs = -1", "max_runs: must be 0 (no limit) or more, not -1"),
    ("max_runs = 1.5", "max_runs: expected a whole number, not 1.5"),
    ("max_runs = true", "max_runs: expected a number, not true"),
    ("max_runs = nan", "max_runs: expected a whole number, not nan"),
    ("max_age_days = nan", "max_age_days: expected a finite number, not nan"),
    ("max_age_days = inf", "max_age_days: expected a finite number, not inf"),
    ("max_age_days = -0.5", "max_age_days: must be 0 (no limit) or more, not -0.5"),
    ("max_bytes = -1", "max_bytes: size must not be negative"),
    ("max_bytes = 1.5", "max_bytes: not a size: 1.5 (try 64MiB)"),
    ("bundle_max_bytes = 0", "bundle_max_bytes: must be more than 0, not 0"),
    ("upload_timeout = 0", "upload_timeout: must be more than 0, not 0"),
    ("attach = [1, 2]", "attach: expected a list of strings"),
    ("hint_on_failure = 1", "hint_on_failure: not a boolean: 1"),
])
def test_invalid_numbers_are_errors(config_file: Path, toml: str, why: str) -> None:
    config_file.write_text(f"[default]\n{toml}\n")
    with pytest.raises(ConfigError) as e:
        load_settings("tool", environ={})
    assert str(e.value) == f"{config_file} [default]: {why}"


def test_config_and_the_store_do_not_import_each_other() -> None:
    for first, second in (("rage.config", "rage.record.store"),
                          ("rage.record.store", "rage.config")):
        code = f"import sys, {first}; print({second!r} in sys.modules)"
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True)
        assert proc.stdout == "False\n", (first, second)
