"""In-process recording for Python tools.

``rage.install(app)`` (see :mod:`rage.integration.recorder`) records the process as a run in
the same history the ``rage run`` wrapper writes, so ``rage list``/``rage report`` and
``mytool rage`` see the same runs:

- :mod:`~rage.integration.loghandler` keeps every log record, DEBUG included, in the run's
  ``log.jsonl`` without changing what the console shows;
- :mod:`~rage.integration.hooks` records uncaught exceptions (``traceback.txt``), exceptions in
  threads, and fatal signals (``fatal.log`` through :mod:`faulthandler`);
- :mod:`~rage.integration.click` and :mod:`~rage.integration.argparse` add a ``rage``
  subcommand that reports a run of the app.

Nothing here is imported by ``import rage``; modules are loaded on first use.
"""
