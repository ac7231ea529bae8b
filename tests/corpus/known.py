"""Regenerate tests/corpus/known_failures.txt: run the corpus tests without their xfail
marks and list every case that fails. ``python -m tests.corpus.known`` from the checkout.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
PREFIX = {
    "test_token_in_context": "token",
    "test_structural_shape": "structural",
    "test_argv_form": "argv",
    "test_environment_value": "env",
    "test_benign_line_survives": "benign",
    "test_benign_environment_survives": "benign-env",
    "test_bundle_keeps_no_planted_secret": "e2e",
    "test_bundle_keeps_benign_output": "e2e-benign",
    "test_argv_form_end_to_end": "e2e-argv",
}
HEADER = """\
# Corpus cases today's engine fails, one case id a line: tests/test_redact_corpus.py marks
# each xfail(strict=True). Delete a line when a fix makes its case pass (the XPASS names
# it), or regenerate the whole file with: python -m tests.corpus.known
"""


def main() -> int:
    env = dict(os.environ, RAGE_CORPUS_NO_XFAIL="1")
    tests = [f"tests/test_redact_corpus.py::{t}" for t in PREFIX]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", "-n", "2", *tests],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    rows = sorted(
        f"{PREFIX[m[1]]}:{m[2]}"
        for m in re.finditer(r"^FAILED \S+::(\w+)\[(.*?)\](?: - |$)", proc.stdout, re.M)
        if m[1] in PREFIX
    )
    (HERE / "known_failures.txt").write_text(HEADER + "".join(r + "\n" for r in rows))
    print(f"{len(rows)} known failures written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
