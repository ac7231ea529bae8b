"""Built-in defaults of the recording and retention settings.

A leaf module (no imports) so that both :mod:`rage.config`, which resolves settings, and
:mod:`rage.record.store`, on every recorded command's start-up path, can use them without
importing each other.
"""

MiB = 1024 * 1024
DEFAULT_OUTPUT_CAP = 8 * MiB
# A text of up to this size is redacted in one process, where the redactor learns the values
# it names under a secret name (`+ PASS=X`) and then removes them wherever else it repeats
# them (`+ echo X`): a report's run files, `rage redact FILE`. Larger ones go to worker
# processes, which do not learn. The default output cap keeps a long run's output at 8 MiB
# and a marker line: it stays under this (it had gone to the workers, and a value it named
# once leaked where it repeated it)
LEARNED_MAX = DEFAULT_OUTPUT_CAP + MiB
DEFAULT_MAX_RUNS = 200  # 0: no limit
DEFAULT_MAX_BYTES = 512 * MiB  # 0: no limit
DEFAULT_MAX_AGE_DAYS = 30.0  # 0: no limit
