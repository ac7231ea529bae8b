"""Built-in defaults of the recording and retention settings.

A leaf module (no imports) so that both :mod:`rage.config`, which resolves settings, and
:mod:`rage.record.store`, on every recorded command's start-up path, can use them without
importing each other.
"""

MiB = 1024 * 1024
DEFAULT_OUTPUT_CAP = 8 * MiB
DEFAULT_MAX_RUNS = 200  # 0: no limit
DEFAULT_MAX_BYTES = 512 * MiB  # 0: no limit
DEFAULT_MAX_AGE_DAYS = 30.0  # 0: no limit
