"""The independent redaction corpus (tests/corpus/): every catalogued kind in every context,
the structural shapes, argv and the environment, then real runs end to end; and the benign
corpus of real tool output that must survive untouched.

Cases today's engine still fails are listed in tests/corpus/known_failures.txt and marked
``xfail(strict=True)``: when a fix lands, the XPASS fails the run and says which line of
that file to delete; ``python -m tests.corpus.known`` regenerates the file.
"""

from __future__ import annotations

import functools
import getpass
import json
import os
import random
import re
import select
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rage.redact import Redactor
from rage.redact.catalogue import SKIPPED, LazyPattern, compile_format
from rage.redact.formats import FORMATS, SecretFormat
from rage.redact.handlers import is_name
from tests.conftest import rage_cmd
from tests.corpus.contexts import (
    ARGV,
    MASKED,
    NUMERIC_ARGV,
    STRUCTURAL,
    TOKEN_CONTEXTS,
    dump_columns,
    names,
    password,
    pin,
    render,
    shown,
)
from tests.corpus.secrets import SAMPLES, sample
from tests.test_select import Pty

CORPUS = Path(__file__).parent / "corpus"
KNOWN = {
    line.split("#")[0].strip()
    for line in (CORPUS / "known_failures.txt").read_text().splitlines()
    if line.split("#")[0].strip()
}
NO_XFAIL = os.environ.get("RAGE_CORPUS_NO_XFAIL") == "1"
_OVERSTRIKE = re.compile(r"[^\n]\x08")  # "c BACKSPACE c" prints as "c"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Z0-9]")

# why a whole class of cases fails today; the case id says which member of the class
CONTEXT_REASON = {
    "ansi-color": "a token right after a colour escape is not matched",
    "grep-color": "grep --color escapes around the value cut the match",
    "ansi-label": "colour escapes between the label and the value",
    "xml-element": "XML element values are not parsed",
    "xml-attr": "XML key/value attributes are not parsed",
    "csv": "CSV fields are not parsed",
    "escaped-json": "escaped JSON inside a JSON string",
    "http-debug": "one-line HTTP debug dumps",
    "sql": "SQL string literals",
    "code-arrow": "code shapes (=>)",
    "semicolon-list": "unquoted values cut at ';'",
    "comma-list": "unquoted values cut at ','",
    "cr-redraw": "carriage-return redraws",
    "overstrike": "backspace overstrike",
    "grep-match-prefix": "a colour escape inside the token",
    "url-encoded": "a URL-encoded token",
    "json-escaped-slash": "JSON-escaped slashes",
    "k8s-env": "name/value on separate lines",
    "yaml-block": "YAML block scalars",
}


def known(case: str, reason: str) -> Any:
    """Mark ``case`` strict-xfail when today's engine is known to fail it."""
    if case in KNOWN and not NO_XFAIL:
        why = f"{reason} (delete '{case}' from tests/corpus/known_failures.txt when fixed)"
        return pytest.mark.xfail(strict=True, reason=why)
    return ()


def leaks(secret: str, out: str) -> str | None:
    """The part of ``secret`` still visible in ``out``: the whole, or any 12-character piece
    (a secret cut in two by a separator or an escape is still a leak)."""
    plain = _OVERSTRIKE.sub("", _ANSI.sub("", out))
    hexes, chars = dump_columns(out)  # a hex dump shows it twice, over its lines
    texts = (out, plain, chars)
    if any(secret in t for t in texts) or (hexes and secret.encode().hex() in hexes):
        return secret
    n = 12
    for i in range(len(secret) - n + 1):
        piece = secret[i : i + n]
        if any(piece in t for t in texts) or (hexes and piece.encode().hex() in hexes):
            return piece
    return None


@pytest.fixture(autouse=True)
def rage_home() -> None:
    """Thousands of in-process cases touch no state directory: skip the per-test one
    (conftest's); every subprocess below gets its own RAGE_HOME explicitly."""


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(pseudonymize=False)


# -- the catalogue itself ------------------------------------------------------------------


def _boundary_matches(fmt: SecretFormat, text: str) -> Iterator[re.Match[str]]:
    """Matches as the engine takes them: not glued to [A-Za-z0-9] on either side."""
    for m in re.finditer(fmt.regex, text):
        s, e = m.span()
        if s > 0 and text[s - 1].isascii() and text[s - 1].isalnum():
            continue
        if e < len(text) and text[e].isascii() and text[e].isalnum():
            continue
        yield m


@pytest.mark.parametrize("fmt", FORMATS, ids=[f"{f.kind}#{i}" for i, f in enumerate(FORMATS)])
def test_catalogue_entry_is_well_formed(fmt: SecretFormat) -> None:
    compiled = re.compile(fmt.regex)
    assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", fmt.kind)
    assert fmt.prefixes and all(len(p) >= 3 for p in fmt.prefixes)
    assert fmt.source.startswith("https://") and fmt.provider
    assert "\n" not in fmt.regex and "\\b" not in fmt.regex and "(?<" not in fmt.regex
    assert set(compiled.groupindex) <= {"secret"}
    # the engine's form (fenced, bytes), compiled when first tried: usable, as compiled
    c = compile_format(fmt)
    assert c is not None and c.has_secret == ("secret" in compiled.groupindex)
    assert c.search.match(b"") is None and not [k for k, _ in SKIPPED if k == fmt.kind]
    assert re.compile(c.regex).pattern == c.search.source


def test_a_catalogue_regex_found_unusable_when_first_tried_never_matches() -> None:
    for source, why in ((rb"(", "missing )"), (rb"x*", "matches the empty string")):
        lazy = LazyPattern(source, "test-kind")
        assert lazy.match(b"xx") is None and list(lazy.finditer(b"(xx")) == []
        assert SKIPPED[-1][0] == "test-kind" and why in SKIPPED[-1][1]
        SKIPPED.pop()
    assert LazyPattern(rb"ab+", "k").match(b"abbb").group() == b"abbb"


def test_every_kind_has_samples_and_every_sample_a_kind() -> None:
    assert {f.kind for f in FORMATS} == {kind for kind, _ in SAMPLES.values()}
    assert len(FORMATS) > 100


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_is_matched_by_its_format(name: str) -> None:
    kind, secret, planted = sample(name)
    hits = [
        (f, m)
        for f in FORMATS
        if f.kind == kind
        for m in _boundary_matches(f, planted)
        if secret in m.group("secret" if "(?P<secret>" in f.regex else 0)
    ]
    assert hits, f"{name}: {planted!r}"
    assert all(any(p in m.group(0) for p in f.prefixes) for f, m in hits)


def _benign_lines() -> list[tuple[str, str]]:
    out, section, seen = [], "misc", set()
    for line in (CORPUS / "benign.txt").read_text().splitlines():
        if line.startswith("## "):
            section = re.sub(r"[^a-z0-9]+", "-", line[3:].lower()).strip("-")
        elif line and not line.startswith("# "):
            slug = re.sub(r"[^A-Za-z0-9]+", "-", line).strip("-")[:48].lower()
            case = f"{section}:{slug}"
            while case in seen:  # two lines alike in their first 48 characters
                case += "+"
            seen.add(case)
            out.append((case, line))
    return out


BENIGN = _benign_lines()


def test_catalogue_spares_the_benign_corpus() -> None:
    hits = [
        (f.kind, line) for _, line in BENIGN for f in FORMATS for _m in _boundary_matches(f, line)
    ]
    assert hits == []


# -- through the public API ----------------------------------------------------------------


def _token_cases() -> Iterator[Any]:
    for name in sorted(SAMPLES):
        for ctx in TOKEN_CONTEXTS:
            case = f"token:{name}@{ctx}"
            if f"token:{name}@bare" in KNOWN:
                reason = "the engine does not know this format"
            else:
                reason = CONTEXT_REASON.get(ctx, f"context {ctx}")
            yield pytest.param(name, ctx, id=f"{name}@{ctx}", marks=known(case, reason))


@pytest.mark.parametrize(("name", "ctx"), list(_token_cases()))
def test_token_in_context(redactor: Redactor, name: str, ctx: str) -> None:
    kind, secret, planted = sample(name)
    text = render(TOKEN_CONTEXTS[ctx], planted, kind, ctx)
    secret = shown(secret, ctx)
    out = redactor.text(text)
    # pytest.fail without a traceback: thousands of known failures stay cheap
    marked = "**" in out if ctx in MASKED else "[REDACTED" in out
    if (piece := leaks(secret, out)) is not None or not marked:
        pytest.fail(f"{piece!r} survives in {out!r}", pytrace=False)


def _structural(name: str) -> tuple[str, tuple[str, ...]]:
    return STRUCTURAL[name](random.Random(f"rage-corpus:structural:{name}"))


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=known(f"structural:{n}", f"shape {n}")) for n in STRUCTURAL],
)
def test_structural_shape(redactor: Redactor, name: str) -> None:
    text, secrets = _structural(name)
    out = redactor.text(text)
    for s in secrets:
        if (piece := leaks(s, out)) is not None:
            pytest.fail(f"{piece!r} survives in {out!r}", pytrace=False)


def _argv_secret(name: str) -> str:
    rng = random.Random(f"rage-corpus:argv:{name}")
    return pin(rng) if name in NUMERIC_ARGV else password(rng)


def _argv_cases() -> Iterator[Any]:
    for name in ARGV:
        for via in ("argv", "command-text", "output", "list"):
            case = f"argv:{name}@{via}"
            yield pytest.param(
                name, via, id=f"{name}@{via}", marks=known(case, f"argv form {name}")
            )


@pytest.mark.parametrize(("name", "via"), list(_argv_cases()))
def test_argv_form(redactor: Redactor, name: str, via: str) -> None:
    """``argv``: the list the report stores (meta.json, manifest, the Command: line);
    ``command-text``: the same command line as one string (the summary's `Command:`);
    ``output``: printed in a log among other lines (a shell's xtrace, a CI log);
    ``list``: printed as a list, as a CalledProcessError's traceback ends."""
    secret = _argv_secret(name)
    argv = ARGV[name](secret)
    outs: tuple[str, ...]
    if via == "argv":
        clean = redactor.argv(argv)
        outs = (json.dumps(clean), shlex.join(clean))
    elif via == "command-text":
        outs = (redactor.text("+ " + shlex.join(argv)),)
    elif via == "output":
        log = f"Step 3/9 : deploy\n+ {shlex.join(argv)}\n2026-12-02 done\n"
        outs = (redactor.bytes(log.encode()).decode("utf-8", "replace"),)
    else:
        log = (f"subprocess.CalledProcessError: Command '{argv!r}' returned non-zero exit "
               f"status 1.\nargs: {json.dumps(argv)}\n")
        outs = (redactor.bytes(log.encode()).decode("utf-8", "replace"),)
    for out in outs:
        if (piece := leaks(secret, out)) is not None:
            pytest.fail(f"{piece!r} survives in {out!r}", pytrace=False)


def _env_cases() -> Iterator[Any]:
    for name in sorted(SAMPLES):
        for form in ("named", "in-options"):
            case = f"env:{name}@{form}"
            yield pytest.param(name, form, id=f"{name}@{form}", marks=known(case, f"env {form}"))


@pytest.mark.parametrize(("name", "form"), list(_env_cases()))
def test_environment_value(redactor: Redactor, name: str, form: str) -> None:
    kind, secret, planted = sample(name, "env")
    env = {names(kind)[0]: planted} if form == "named" else {"ACME_OPTS": f"-v {planted} -q"}
    out = json.dumps(redactor.data(env))
    if (piece := leaks(secret, out)) is not None:
        pytest.fail(f"{piece!r} survives in {out!r}", pytrace=False)


@pytest.mark.parametrize(
    ("case", "line"),
    [
        pytest.param(c, t, id=c, marks=known(f"benign:{c}", "a harmless line is damaged"))
        for c, t in BENIGN
    ],
)
def test_benign_line_survives(redactor: Redactor, case: str, line: str) -> None:
    if (out := redactor.text(line)) != line:
        pytest.fail(f"damaged: {out!r}", pytrace=False)


def test_benign_corpus_survives_a_live_pipe_with_pauses() -> None:
    """`tail -f | rage redact`: a pause lets out lines held for a multi-line opener, each
    redacted without the lines after it; every benign line still comes out byte for byte."""
    proc = subprocess.Popen(rage_cmd("redact", "-q"), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    lines = [line.encode() + b"\n" for _, line in BENIGN]
    for i, line in enumerate(lines):
        proc.stdin.write(line)
        proc.stdin.flush()
        if i % 10 == 9:
            time.sleep(0.3)  # longer than rage redact's pause: what it held goes out
    proc.stdin.close()
    out = proc.stdout.read().splitlines(keepends=True)
    proc.stdout.close()
    assert proc.wait(timeout=60) == 0
    assert [(a, b) for a, b in zip(lines, out, strict=True) if a != b] == []


BENIGN_ENV = {
    "GIT_COMMIT": "3f9c2a7be41d0c58e6f2a9b7d1c4e8f05a6b3c21",
    "BUILD_ID": "6f1d2c3b-9a8e-4f7d-b6c5-a4e3d2c1b0f9",
    "MAX_TOKENS": "4096",
    "AUTH_METHOD": "oidc",
    "SESSION_TIMEOUT": "3600",
    "KEY_VAULT_NAME": "acme-prod-kv",
    "PUBLIC_KEY_PATH": "/etc/app/signing.pub",
    "TOKEN_FILE": "/run/secrets/token",
}


@pytest.mark.parametrize(
    "var",
    [
        pytest.param(v, marks=known(f"benign-env:{v}", "a harmless variable is damaged"))
        for v in BENIGN_ENV
    ],
)
def test_benign_environment_survives(redactor: Redactor, var: str) -> None:
    assert redactor.data({var: BENIGN_ENV[var]}) == {var: BENIGN_ENV[var]}


# -- end to end: real runs (pipes, a pty), an attached log, argv and the environment, then
# `rage report` and every byte of the bundle read back ---------------------------------------

E2E_SAMPLES = (
    "github-token",
    "aws-access-key",
    "slack-token",
    "stripe-webhook-secret",
    "sendgrid-api-key",
    "telegram-bot-token/url",
    "discord-bot-token",
    "vault-token",
    "docker-hub-token",
    "google-oauth-token",
    "age-secret-key",
    "heroku-api-key",
    "databricks-token",
    "huggingface-token",
    "atlassian-api-token",
    "azure-storage-key/connection-string",
    "shopify-token/shared-secret",
    "twilio-api-key",
    "openai-key",
    "jwt",
)
E2E_CONTEXTS = (
    "log-sentence",
    "ansi-color",
    "traceback-arg",
    "url-path",
    "json-list",
    "exception-message",
    "grep-color",
    "bare",
)
OUTPUT_SURFACES = ("stdout", "stderr", "attach", "pty")
SURFACES = (*OUTPUT_SURFACES, "argv", "env")

CHILD = r"""
import json, sys
plan = json.load(open(sys.argv[1]))
for line in plan["stdout"]:
    print(line, flush=True)
for line in plan["stderr"]:
    print(line, file=sys.stderr, flush=True)
if plan.get("attach"):
    with open(plan["attach"], "w") as f:
        f.write("\n".join(plan["attach_lines"]) + "\n")
"""


def _plants(surface: str) -> list[tuple[str, str, str]]:
    """(sample, secret, text) planted in one surface; each surface gets its own secrets."""
    out = []
    for i, name in enumerate(E2E_SAMPLES):
        kind, secret, planted = sample(name, surface)
        if surface in {"argv", "env"}:
            text = planted
        else:
            text = render(TOKEN_CONTEXTS[E2E_CONTEXTS[i % len(E2E_CONTEXTS)]], planted, kind)
        out.append((name, secret, text))
    return out


def _argv_tail() -> list[str]:
    """The argv plants as a command line carries them: flags with values and bare words."""
    tail: list[str] = []
    for i, (_, _, text) in enumerate(_plants("argv")):
        tail += [["--token", text], [f"--api-key={text}"], [text]][i % 3]
    return tail


def _env() -> dict[str, str]:
    out = {}
    for i, (name, _, text) in enumerate(_plants("env")):
        var = names(SAMPLES[name][0])[0] if i % 2 else f"ACME_SETTING_{i}"
        out[var] = text
    return out


def _benign_for_e2e() -> list[str]:
    return [t for _, t in BENIGN if not _holds_user(t)]


def _holds_user(line: str) -> bool:
    """True when ``line`` holds this machine's user name or home directory, which a report
    pseudonymises (``user-1``, ``~``)."""
    user, home = getpass.getuser(), str(Path.home())
    return (is_name(user) and user in line) or (home != "/" and home in line)


def _extract(bundle: Path, dest: Path) -> dict[str, str]:
    dest.mkdir()
    subprocess.run(f"zstd -dc '{bundle}' | tar -x -C '{dest}'", shell=True, check=True)
    return {
        str(p.relative_to(dest)): p.read_bytes().decode("utf-8", "replace")
        for p in sorted(dest.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """Two recorded runs (pipes, pty), each reported to a bundle; members by name."""
    root = tmp_path_factory.mktemp("corpus-e2e")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGE_")}
    env |= {"RAGE_HOME": str(root / "home"), "RAGE_CONFIG": os.devnull}
    child = root / "tool.py"
    child.write_text(CHILD)
    benign = _benign_for_e2e()
    plan = {
        "stdout": [t for _, _, t in _plants("stdout")] + benign,
        "stderr": [t for _, _, t in _plants("stderr")],
        "attach": str(root / "app.log"),
        "attach_lines": [t for _, _, t in _plants("attach")],
    }
    (root / "pipe.json").write_text(json.dumps(plan))
    pty_plan = {"stdout": [t for _, _, t in _plants("pty")] + benign, "stderr": []}
    (root / "pty.json").write_text(json.dumps(pty_plan))

    run = subprocess.run(
        rage_cmd(
            "run",
            "--attach",
            str(root / "app.log"),
            "--",
            sys.executable,
            str(child),
            str(root / "pipe.json"),
            *_argv_tail(),
        ),
        env=env | _env(),
        cwd=root,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    out: dict[str, dict[str, str]] = {}
    out["pipe"] = _report(root, env, "pipe")

    term = Pty(
        rage_cmd("run", "--", sys.executable, str(child), str(root / "pty.json")),
        env=env | {"TERM": "xterm-256color"},
    )
    try:
        assert drain(term, 120) == 0, term.seen[-2000:]
    finally:
        term.close()
    out["pty"] = _report(root, env, "pty")
    return out


def drain(term: Pty, timeout: float) -> int:
    """Read the terminal until the child closes it (a child blocked on a full terminal
    never exits), then reap it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not select.select([term.master], [], [], 1.0)[0]:
            continue
        try:
            chunk = os.read(term.master, 65536)
        except OSError:  # EIO: every holder of the terminal has closed it
            break
        if not chunk:
            break
        term.seen += chunk
    return term.proc.wait(timeout=max(1.0, deadline - time.monotonic()))


def _report(root: Path, env: dict[str, str], name: str) -> dict[str, str]:
    bundle = root / f"{name}.tar.zst"
    proc = subprocess.run(
        rage_cmd("report", "--last", "--yes", "--output", str(bundle)),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    members = _extract(bundle, root / name)
    raw = subprocess.run(["zstd", "-dc", str(bundle)], check=True, capture_output=True).stdout
    members["<tar stream>"] = raw.decode("utf-8", "replace")
    return members


def _e2e_cases() -> Iterator[Any]:
    for surface in SURFACES:
        for name in E2E_SAMPLES:
            case = f"e2e:{surface}:{name}"
            yield pytest.param(
                surface, name, id=f"{surface}:{name}", marks=known(case, f"{surface} surface")
            )


@pytest.mark.parametrize(("surface", "name"), list(_e2e_cases()))
def test_bundle_keeps_no_planted_secret(
    bundles: dict[str, dict[str, str]], surface: str, name: str
) -> None:
    secret = next(s for n, s, _ in _plants(surface) if n == name)
    run = bundles["pty" if surface == "pty" else "pipe"]
    found = {m: piece for m, text in run.items() if (piece := leaks(secret, text))}
    if found:
        pytest.fail(f"survives in {found}", pytrace=False)


def test_bundle_shows_the_run(bundles: dict[str, dict[str, str]]) -> None:
    pipe = bundles["pipe"]
    assert {
        "manifest.json",
        "summary.md",
        "run/meta.json",
        "run/stdout.log",
        "run/stderr.log",
        "run/attachments/app.log",
        "collectors/environment.json",
    } <= set(pipe)
    assert json.loads(pipe["run/meta.json"])["mode"] == "pipe"
    assert json.loads(bundles["pty"]["run/meta.json"])["mode"] == "pty"
    counts = json.loads(pipe["manifest.json"])["redaction"]["counts"]
    assert sum(counts.values()) >= len(E2E_SAMPLES)


def _benign_e2e_cases() -> Iterator[Any]:
    for mode in ("pipe", "pty"):
        for case, line in BENIGN:
            yield pytest.param(
                mode,
                line,
                id=f"{mode}:{case}",
                marks=known(f"e2e-benign:{mode}:{case}", "a harmless line is damaged"),
            )


@pytest.mark.parametrize(("mode", "line"), list(_benign_e2e_cases()))
def test_bundle_keeps_benign_output(
    bundles: dict[str, dict[str, str]], mode: str, line: str
) -> None:
    if _holds_user(line):
        pytest.skip("the line holds this machine's user name, which is pseudonymised")
    member = "run/stdout.log" if mode == "pipe" else "run/output.log"
    text = bundles[mode].get(member, "").replace("\r\n", "\n")
    if line not in text.splitlines():
        pytest.fail("damaged or missing", pytrace=False)


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=known(f"e2e-argv:{n}", f"argv form {n}")) for n in ARGV]
)
def test_argv_form_end_to_end(tmp_path: Path, name: str) -> None:
    """A real command with a secret argument, recorded, reported and read back."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGE_")}
    env |= {
        "RAGE_HOME": str(tmp_path / "home"),
        "RAGE_CONFIG": os.devnull,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
    }
    secret = _argv_secret(name)
    argv = ARGV[name](secret)
    tool = bin_dir / argv[0]  # a stand-in that accepts the arguments and succeeds
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    run = subprocess.run(
        rage_cmd("run", "--", *argv), env=env, capture_output=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stderr
    members = _report(tmp_path, env, "bundle")
    assert json.loads(members["run/meta.json"])["argv"][0] == argv[0]
    found = {m: p for m, t in members.items() if (p := leaks(secret, t))}
    assert found == {}


# -- properties: any sample, any salt, between any separators and terminal escapes ------------

_LEFT = [
    "",
    " ",
    "\t",
    "(",
    "'",
    '"',
    "=",
    ": ",
    "[",
    ",",
    "/",
    "`",
    "\x1b[32m",
    "\x1b[01;31m\x1b[K",
    "\x1b[1;4;38;5;208m",
    "\x1b]8;;https://example.com\x1b\\",
    "working...\r",
    "\x1b[2K\r",
]
_RIGHT = [
    "",
    " ",
    "\n",
    ")",
    "'",
    '"',
    ",",
    ";",
    ".",
    "&",
    "]",
    "`",
    "\x1b[0m",
    "\x1b[m\x1b[K",
    "\x1b]8;;\x1b\\",
    "\r\n",
]
_WORDS = ["", "INFO ", "2026-12-02T10:15:32Z ", "error: ", "using ", "key ", "-> ", "$ export X="]


@functools.cache
def _shared_redactor() -> Redactor:
    return Redactor(pseudonymize=False)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(SAMPLES)),
    salt=st.text(max_size=4),
    frame=st.tuples(
        st.sampled_from(_WORDS),
        st.sampled_from(_LEFT),
        st.sampled_from(_RIGHT),
        st.sampled_from(["", " done", " (cached)", "\nnext line"]),
    ),
)
def test_property_token_between_separators_and_escapes(
    name: str, salt: str, frame: tuple[str, str, str, str]
) -> None:
    _, secret, planted = sample(name, salt)
    before, left, right, after = frame
    out = _shared_redactor().text(before + left + planted + right + after)
    assert leaks(secret, out) is None, out


# -- segment boundaries: a token across byte 1 MiB (and 2 MiB) of a line longer than that ----


@functools.cache
def _long_line(secrets: tuple[str, ...]) -> bytes:
    """One line of about 2.5 MiB (minified JSON) with a token straddling each MiB boundary."""
    from rage.redact import MAX_SEGMENT

    filler = '{"id": 18842, "status": "ok", "tags": ["a", "b"]}, '
    parts, size = [], 0
    for i, secret in enumerate(secrets, 1):
        head = i * MAX_SEGMENT - len(secret) // 2 - len('"token": ')  # half of it before
        n = (head - size) // len(filler)
        parts += [filler * n, " " * (head - size - n * len(filler)), '"token": ' + secret]
        size = head + len('"token": ') + len(secret)
    parts.append(filler * ((5 * MAX_SEGMENT // 2 - size) // len(filler) + 1))
    return ("".join(parts) + "\n").encode()


def _boundary_secrets() -> tuple[str, ...]:
    return tuple(sample(n, "boundary")[1] for n in ("github-token", "sendgrid-api-key"))


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("block", [64 * 1024, 1024 * 1024])
def test_token_across_segment_boundary_in_a_stream(workers: int, block: int) -> None:
    secrets = _boundary_secrets()
    data = _long_line(secrets)
    chunks = (data[i : i + 65536] for i in range(0, len(data), 65536))
    red = Redactor(pseudonymize=False)
    out = b"".join(red.stream(chunks, block=block, workers=workers, size=len(data)))
    text = out.decode()
    assert all(leaks(s, text) is None for s in secrets)
    assert text.count("[REDACTED") >= len(secrets)


def test_token_across_segment_boundary_end_to_end(tmp_path: Path) -> None:
    secrets = _boundary_secrets()
    (tmp_path / "line.txt").write_bytes(_long_line(secrets))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGE_")}
    env |= {"RAGE_HOME": str(tmp_path / "home"), "RAGE_CONFIG": os.devnull}
    run = subprocess.run(
        rage_cmd("run", "--", "cat", str(tmp_path / "line.txt")),
        env=env,
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    members = _report(tmp_path, env, "bundle")
    assert len(members["run/stdout.log"]) > 2 * 1024 * 1024
    found = {m: p for m, t in members.items() for s in secrets if (p := leaks(s, t))}
    assert found == {}


# -- collector data: tokens in git remote URLs (CI checkouts, `git clone https://TOKEN@...`) ---

_URL_SAFE = re.compile(r"[A-Za-z0-9._~-]+")


def git_remote_plants(salt: str, names_: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """(sample, secret, remote URL) for the URL-safe samples among ``names_``; the token is
    the user (``https://TOKEN@host``) or the password (``https://user:TOKEN@host``)."""
    out = []
    for i, name in enumerate(names_):
        _, secret, planted = sample(name, salt)
        if planted != secret or not _URL_SAFE.fullmatch(secret):
            continue
        userinfo = secret if i % 2 else f"x-access-token:{secret}"
        out.append((name, secret, f"https://{userinfo}@git.example.com/acme/r{i}.git"))
    return out


def record_in_git_repo(root: Path, env: dict[str, str], remotes: list[str]) -> dict[str, str]:
    """`rage run -- true` inside a git work tree with these remotes, reported; members."""
    repo = root / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    for i, url in enumerate(remotes):
        subprocess.run(["git", "-C", str(repo), "remote", "add", f"r{i}", url], check=True, env=env)
    run = subprocess.run(
        rage_cmd("run", "--", "true"),
        env=env,
        cwd=repo,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    return _report(root, env, "git")


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=known(f"e2e-git:{n}", "a token in a git remote URL"))
        for n, _, _ in git_remote_plants("git", E2E_SAMPLES)
    ],
)
def test_git_remote_tokens_end_to_end(git_bundle: dict[str, str], name: str) -> None:
    secret = next(s for n, s, _ in git_remote_plants("git", E2E_SAMPLES) if n == name)
    found = {m: p for m, t in git_bundle.items() if (p := leaks(secret, t))}
    if found:
        pytest.fail(f"survives in {found}", pytrace=False)


@pytest.fixture(scope="module")
def git_bundle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("corpus-git")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGE_", "GIT_"))}
    env |= {"RAGE_HOME": str(root / "home"), "RAGE_CONFIG": os.devnull}
    remotes = [url for _, _, url in git_remote_plants("git", E2E_SAMPLES)]
    members = record_in_git_repo(root, env, remotes)
    assert "collectors/git.json" in members
    return members
