"""Configuration: one frozen :class:`Settings` per app.

Precedence, highest first: command-line flags (``overrides``), ``RAGE_*`` environment
variables, the user's config file (``[app.<name>]`` over ``[default]``), the defaults the
app's own integration supplies (``app_defaults``), then the built-in defaults below.

The config file is TOML::

    [default]
    max_runs = 200
    upload_url = "https://rage.example.org/"

    [app.mytool]
    attach = ["~/.cache/mytool/debug.log"]
    issues_url = "https://github.com/me/mytool/issues/new"
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rage.defaults import (
    DEFAULT_MAX_AGE_DAYS,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_RUNS,
    DEFAULT_OUTPUT_CAP,
    MiB,
)
from rage.errors import ConfigError
from rage.paths import config_file


@dataclass(frozen=True)
class Settings:
    """Every setting rage reads. Field names are the config file keys."""

    # recording
    disable: bool = False
    output_cap: int = DEFAULT_OUTPUT_CAP  # bytes of output/log kept per run (head + tail)
    attach: tuple[str, ...] = ()  # log files copied into the run when it ends
    hint_on_failure: bool = False  # print the report hint on any non-zero exit, not only crashes
    native_backtrace: bool = False  # a crashed wrapped program's backtrace, from its core
    # retention
    max_runs: int = DEFAULT_MAX_RUNS
    max_bytes: int = DEFAULT_MAX_BYTES
    max_age_days: float = DEFAULT_MAX_AGE_DAYS
    # reporting
    collectors: tuple[str, ...] = ()  # extra collector names to enable (entry points)
    disable_collectors: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()  # executables whose --version the `tools` collector records
    redact: tuple[str, ...] = ()  # extra regular expressions to redact
    bundle_max_bytes: int = 64 * MiB  # uncompressed size cap for one bundle's run files
    # upload
    upload_url: str | None = None
    upload_protocol: str | None = None  # multipart | put | receiver | gist | file
    allow_http: bool = False
    upload_ca_bundle: str | None = None  # PEM file of a private CA to trust for uploads
    upload_timeout: float = 60.0
    issues_url: str | None = None
    gist_api_url: str = "https://api.github.com"
    gist_token_env: str = "GITHUB_TOKEN"


_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}

# RAGE_<NAME> for every field; these extra aliases read better in shells.
_ENV_ALIASES = {"RAGE_OUTPUT_CAP": "output_cap"}

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?B?)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def parse_size(value: str | int) -> int:
    """Parse ``"64MiB"``, ``"8M"``, ``"1.5G"`` or a plain byte count."""
    if isinstance(value, int):
        if value < 0:
            raise ValueError("size must not be negative")
        return value
    m = _SIZE_RE.match(value)
    if not m:
        raise ValueError(f"not a size: {value!r} (try 64MiB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def format_size(n: int) -> str:
    """Render a byte count for people: ``512 B``, ``4.6 KiB``, ``12.0 MiB``, ``1.5 GiB``."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if value < 1024 or unit == "GiB":
            break
    return f"{value:.1f} {unit}"


def _parse_bool(value: str | bool) -> bool:
    if isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise ValueError(f"not a boolean: {value!r}")
    v = value.strip().lower()
    if v in {"1", "true", "yes", "on"}:
        return True
    if v in {"0", "false", "no", "off", ""}:
        return False
    raise ValueError(f"not a boolean: {value!r}")


# Lower bounds of the numeric settings; for the retention limits 0 means "no limit".
_MINIMUM: dict[str, tuple[float, bool, str]] = {  # name: (bound, bound allowed, meaning)
    "output_cap": (0, True, "0 or more (0: keep no output)"),
    "max_runs": (0, True, "0 (no limit) or more"),
    "max_bytes": (0, True, "0 (no limit) or more"),
    "max_age_days": (0, True, "0 (no limit) or more"),
    "bundle_max_bytes": (0, False, "more than 0"),
    "upload_timeout": (0, False, "more than 0"),
}


def _number(typ: str, value: Any) -> int | float:
    if isinstance(value, bool):
        raise ValueError(f"expected a number, not {str(value).lower()}")
    if typ == "int":
        if isinstance(value, float):
            if not value.is_integer():
                raise ValueError(f"expected a whole number, not {value}")
            return int(value)
        return int(value)
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"expected a finite number, not {value}")
    return number


def _coerce(name: str, value: Any) -> Any:
    """Convert ``value`` (from TOML, env or flags) to the type of field ``name`` and check
    its range (:data:`_MINIMUM`)."""
    f = _FIELDS[name]
    typ = str(f.type)
    if value is None:
        return None
    if name in _MINIMUM:
        if name in {"output_cap", "max_bytes", "bundle_max_bytes"}:
            if isinstance(value, bool) or not isinstance(value, int | str):
                raise ValueError(f"not a size: {value!r} (try 64MiB)")
            number: int | float = parse_size(value)
        else:
            number = _number(typ, value)
        bound, inclusive, meaning = _MINIMUM[name]
        if number < bound or (number == bound and not inclusive):
            raise ValueError(f"must be {meaning}, not {value}")
        return number
    if typ == "bool":
        return _parse_bool(value)
    if typ in {"int", "float"}:
        return _number(typ, value)
    if typ.startswith("tuple"):
        if isinstance(value, str):
            return tuple(v for v in value.split(os.pathsep) if v)
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise ValueError("expected a list of strings")
    if typ.startswith("str"):
        if not isinstance(value, str):
            raise ValueError("expected a string")
        return value
    return value


def _apply(layer: Mapping[str, Any], into: dict[str, Any], source: str,
           warnings: list[str] | None = None) -> None:
    """Apply ``layer``; with ``warnings``, a bad key is reported there and skipped (the
    rest of the layer still applies) instead of raising."""
    for key, value in layer.items():
        name = key.replace("-", "_")
        try:
            if name not in _FIELDS:
                raise ConfigError(f"{source}: unknown setting {key!r}")
            try:
                into[name] = _coerce(name, value)
            except (TypeError, ValueError) as e:
                raise ConfigError(f"{source}: {key}: {_plain(e, value)}") from None
        except ConfigError as e:
            if warnings is None:
                raise
            warnings.append(f"{e.message}; ignored, the other settings apply")


def _plain(e: Exception, value: Any) -> str:
    """Python's conversion errors (``invalid literal for int()``) in plain words."""
    text = str(e)
    if text.startswith("invalid literal for int()"):
        return f"expected a whole number, not {value!r}"
    if text.startswith("could not convert string to float"):
        return f"expected a number, not {value!r}"
    return text


CONFIG_MAX_BYTES = 1024 * 1024  # a config file is a few lines; this bounds what is read


def read_config_file(path: Path | None = None) -> dict[str, Any]:
    """Parse the TOML config file; a missing file is an empty config, unless RAGE_CONFIG
    named it (then it is an error).

    Bounded: only a regular file (or /dev/null; never another device or a FIFO, which could
    block or never end),
    at most :data:`CONFIG_MAX_BYTES`, nested no deeper than the parser's recursion allows."""
    named = path is None and bool(os.environ.get("RAGE_CONFIG"))
    path = path or config_file()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        if named:  # a typo in RAGE_CONFIG would otherwise drop every setting unnoticed
            raise ConfigError(missing_config(str(path))) from None
        return {}
    except OSError as e:
        raise ConfigError(f"cannot read config {path}: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            if stat.S_ISCHR(st.st_mode) and st.st_rdev == os.stat(os.devnull).st_rdev:
                return {}  # "no config", as callers spell it
            raise ConfigError(f"cannot read config {path}: not a regular file")
        data = os.read(fd, CONFIG_MAX_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"cannot read config {path}: {e.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > CONFIG_MAX_BYTES:
        raise ConfigError(f"invalid config {path}: larger than {CONFIG_MAX_BYTES} bytes")
    import tomllib

    try:
        parsed = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"invalid config {path}: {e}") from None
    except RecursionError:
        raise ConfigError(f"invalid config {path}: nested too deep") from None
    return parsed


def missing_config(path: str) -> str:
    return f"RAGE_CONFIG names a missing file: {path} (RAGE_CONFIG=/dev/null: no config)"


def env_layer(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``RAGE_*`` variables that name settings, as ``{field: raw value}``."""
    environ = os.environ if environ is None else environ
    out: dict[str, str] = {}
    for name in _FIELDS:
        raw = environ.get("RAGE_" + name.upper())
        if raw is not None:
            out[name] = raw
    for var, name in _ENV_ALIASES.items():
        if var in environ:
            out[name] = environ[var]
    return out


def load_settings(
    app: str | None,
    *,
    app_defaults: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    path: Path | None = None,
    warnings: list[str] | None = None,
) -> Settings:
    """Resolve the settings for ``app``; raises :class:`ConfigError` on invalid input.

    ``overrides`` holds command-line values; ``None`` values there are ignored so a CLI can
    pass every option through unconditionally. With ``warnings``, a bad key in the file or
    the environment is reported there and skipped; the valid settings still apply.
    """
    values: dict[str, Any] = {}
    if app_defaults:
        _apply(app_defaults, values, "app defaults")
    parsed = read_config_file(path)
    src = str(path or config_file())
    default = parsed.get("default", {})
    if not isinstance(default, dict):
        raise ConfigError(f"{src}: [default] must be a table")
    _apply(default, values, src + " [default]", warnings)
    apps = parsed.get("app", {})
    if app and isinstance(apps, dict) and isinstance(apps.get(app), dict):
        _apply(apps[app], values, f"{src} [app.{app}]", warnings)
    _apply(env_layer(environ), values, "environment", warnings)
    if overrides:
        _apply({k: v for k, v in overrides.items() if v is not None}, values, "command line")
    return Settings(**values)


def load_settings_lenient(app: str | None, **kwargs: Any) -> tuple[Settings, str | None]:
    """Like :func:`load_settings`, but never fails: on error, built-in defaults and a warning.

    Recording paths use this: a broken config file must never stop the user's tool.
    """
    problems: list[str] = []  # bad keys: skipped, the valid settings still apply
    try:
        return load_settings(app, warnings=problems, **kwargs), "; ".join(problems) or None
    except ConfigError as e:
        return Settings(), str(e)


def settings_dict(settings: Settings) -> dict[str, Any]:
    return dataclasses.asdict(settings)


__all__ = [
    "Settings",
    "load_settings",
    "load_settings_lenient",
    "parse_size",
    "read_config_file",
    "settings_dict",
]
