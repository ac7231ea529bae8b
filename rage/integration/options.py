"""The options of ``rage.install()``, checked without importing the configuration module.

``rage.config`` (dataclasses, TOML) costs ~10 ms, more than the whole start-up budget of a
recorded tool, so the names of its ``Settings`` fields are listed here; a test checks that
the two lists agree.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

# the fields of rage.config.Settings
SETTING_NAMES = frozenset({
    "allow_http", "attach", "bundle_max_bytes", "collectors", "disable", "disable_collectors",
    "gist_api_url", "gist_token_env", "hint_on_failure", "issues_url", "max_age_days",
    "max_bytes", "max_runs", "native_backtrace", "output_cap", "redact", "tools",
    "upload_ca_bundle",
    "upload_protocol", "upload_timeout", "upload_url",
})
# the settings that change how a run is recorded (rage.record.store.RecordingSettings): an
# app default for one of these sends install() through the full configuration loader
RECORDING_NAMES = frozenset({
    "attach", "disable", "hint_on_failure", "max_age_days", "max_bytes", "max_runs",
    "native_backtrace", "output_cap",
})


def split_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """Split install options into Settings app defaults and extra collector objects.

    Raises TypeError for an option that is neither a Settings field nor ``collectors``.
    ``collectors`` holds Collector objects; strings there are entry-point names, which go to
    the ``collectors`` setting.
    """
    defaults: dict[str, Any] = {}
    collectors: tuple[Any, ...] = ()
    for key, value in options.items():
        if key == "collectors":
            items = tuple(value or ())
            names = tuple(c for c in items if isinstance(c, str))
            collectors = tuple(c for c in items if not isinstance(c, str))
            if names:
                defaults["collectors"] = names
        elif key in SETTING_NAMES:
            defaults[key] = value
        else:
            raise TypeError(f"rage.install() got an unexpected option {key!r}")
    return defaults, collectors
