"""Stage 1, record: every invocation leaves a run in the local history.

Takes a command (``rage run``, shims) or a Python process (``rage.install``) and returns a run
directory: ``meta.json``, captured output, logs, crash evidence. ``store`` is the cheap write
side used on every command's start-up path, ``history`` the read side (listing, resolving),
``retention`` pruning; ``wrapper``/``spawn``/``relay``/``capture`` make up ``rage run``;
``shims`` routes ``mytool ...`` through it.

Nothing here may import more than it needs: this package's ``__init__`` stays empty because
the wrapper's start-up time is part of every recorded command's run time.
"""
