"""How a hint names rage: a command the user can paste into the shell they are in.

A tool's own ``mytool rage`` runs rage's report from the tool's environment. Installed with
pipx (or any installer that puts only the tool's own commands on PATH), ``rage`` itself is
not on PATH there, and a hint saying ``rage send BUNDLE`` would end in "command not found".
"""

from __future__ import annotations

import os
import shlex
import sys


def rage_command() -> str:
    """``rage`` when that is on PATH; else this environment's own ``rage`` script by its
    path; else ``PYTHON -m rage`` with this interpreter. Quoted for a POSIX shell."""
    import shutil

    if shutil.which("rage"):
        return "rage"
    import sysconfig

    own = os.path.join(sysconfig.get_path("scripts"), "rage")
    if os.path.isfile(own) and os.access(own, os.X_OK):
        return shlex.quote(own)
    return f"{shlex.quote(sys.executable)} -m rage"
