"""The documentation site: built with warnings as errors, its references generated from the
code, and every `rage` command it (or the README) shows accepted by the real CLI.

The site is built here, so the README's test command (which CI runs verbatim) builds it.
"""

from __future__ import annotations

import dataclasses
import html
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from rage.cli.main import COMMANDS, cli
from rage.config import Settings

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
MKDOCS = Path(sys.executable).with_name("mkdocs")
RAGE = str(Path(sys.executable).with_name("rage"))
PAGES = sorted(DOCS.glob("*.md"))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as `mkdocs build --strict` makes it (any warning fails the build)."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    p = subprocess.run([str(MKDOCS), "build", "--strict", "--quiet", "-f",
                        str(ROOT / "mkdocs.yml"), "-d", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=120, env=env,
                       check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    return out


def page_text(site: Path, name: str) -> str:
    """A built page's text without its tags."""
    raw = (site / name / "index.html").read_text()
    return html.unescape(re.sub(r"<[^>]+>", "", raw))


def test_the_site_builds_strict_with_every_page_in_its_nav(site: Path) -> None:
    for page in PAGES:
        if page.name != "index.md":
            assert (site / page.stem / "index.html").is_file(), page.name


def test_the_cli_reference_names_every_subcommand_and_its_options(site: Path) -> None:
    text = page_text(site, "cli")
    assert "Sentinel" not in text  # click's "no default" marker, shown as a default
    ctx = click.Context(cli, info_name="rage")
    for name in COMMANDS:
        assert f"rage {name}" in text, name
        command = cli.get_command(ctx, name)
        assert command is not None
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert param.opts[0] in text, (name, param.opts[0])
    for sub in ("install", "list", "remove"):
        assert f"rage shim {sub}" in text


def test_the_configuration_reference_names_every_setting(site: Path) -> None:
    text = page_text(site, "configuration")
    for field in dataclasses.fields(Settings):
        assert field.name in text, field.name
        assert "RAGE_" + field.name.upper() in text, field.name


def test_the_redaction_page_lists_every_catalogue_kind(site: Path) -> None:
    from rage.redact.formats import FORMATS
    from rage.server.placeholders import RULES

    text = page_text(site, "redaction")
    for f in FORMATS:
        assert f.kind in text and f.source in html.unescape(
            (site / "redaction" / "index.html").read_text()), f.kind
    receiver = page_text(site, "receiver")
    for rule in RULES:
        assert rule.name in receiver, rule.name


def test_a_setting_without_a_description_fails_the_build() -> None:
    import importlib.util

    from mkdocs.exceptions import PluginError

    spec = importlib.util.spec_from_file_location("reference", DOCS / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)

    saved = reference.SETTING_MEANINGS.pop("max_runs")
    try:
        with pytest.raises(PluginError, match="max_runs"):
            reference.expand("<!-- rage:config-table -->\n")
    finally:
        reference.SETTING_MEANINGS["max_runs"] = saved
    with pytest.raises(PluginError, match="unknown table"):
        reference.expand("<!-- rage:no-such-table -->\n")


# -- every command shown is one the CLI accepts --------------------------------------------

_INLINE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_SEPARATORS = {"&&", "||", ";", "|", "(", ")", "&"}
_SHELL = {"sh", "console", "bash"}


def blocks(text: str) -> tuple[list[tuple[str, list[str]]], str]:
    """A Markdown text's fenced code blocks as (language, lines), and the prose around them."""
    found: list[tuple[str, list[str]]] = []
    prose: list[str] = []
    current: list[str] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            if current is None:
                current = []
                found.append((stripped[3:].strip(), current))
            else:
                current = None
            continue
        (prose if current is None else current).append(stripped)
    return found, "\n".join(prose)


def shown_commands(text: str) -> tuple[list[str], list[str]]:
    """The shell lines of a Markdown text's code blocks, and its `rage ...` inline code."""
    found, prose = blocks(text)
    lines: list[str] = []
    for lang, block in found:
        if lang not in _SHELL:
            continue
        for line in "\n".join(block).replace("\\\n", " ").splitlines():
            if lang != "console":
                lines.append(line)
            elif line.startswith("$ "):  # a prompt; the rest of a session is its output
                lines.append(line[2:])
    spans = (" ".join(m.group(2).split()) for m in _INLINE.finditer(prose))
    return lines, [span for span in spans if span.startswith("rage ")]


def rage_invocations(line: str) -> list[list[str]]:
    """The argv after `rage` of each rage command in a shell line."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    out: list[list[str]] = []
    words: list[str] = []
    for token in [*lexer, ";"]:
        if token in _SEPARATORS:
            completing = False
            while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
                # VAR=value before a command; with _RAGE_COMPLETE rage writes a completion
                # script instead (the completion tests below run those)
                completing |= words.pop(0).startswith("_RAGE_COMPLETE=")
            if words[:1] == ["rage"] and not completing:
                out.append(words[1:])
            words = []
        elif token in {">", ">>", "<", "<<<", "2>", "2>&1"} or token.startswith(">"):
            words.append("\0")  # a redirection: it and its target are not arguments
        elif words and words[-1] == "\0":
            words[-1] = "\1"
        else:
            words.append(token)
    return [[w for w in argv if w not in {"\0", "\1"}] for argv in out]


def parse(argv: list[str]) -> None:
    """Parse ``rage ARGV`` as the real CLI would, without running the command."""
    if argv[:1] == ["run"]:
        run_options(argv[1:], whole=True)
        return
    ctx = cli.make_context("rage", list(argv), resilient_parsing=False)
    command: click.Command = cli
    args = [*ctx._protected_args, *ctx.args] if hasattr(ctx, "_protected_args") \
        else [*ctx.protected_args, *ctx.args]
    while isinstance(command, click.Group) and args:
        name, sub, rest = command.resolve_command(ctx, args)
        assert sub is not None, argv
        ctx = sub.make_context(name or sub.name or "", rest, parent=ctx)
        command = sub
        args = ([*ctx._protected_args, *ctx.args] if hasattr(ctx, "_protected_args")
                else [*ctx.protected_args, *ctx.args]) if isinstance(sub, click.Group) else []


def run_options(args: list[str], *, whole: bool) -> None:
    """``rage run ARGS`` through the wrapper's own parser (plain `rage run` never reaches
    click); ``whole``: a command to run must be there."""
    from rage.record import wrapper

    try:
        options = wrapper.parse_args(args if whole else [*args, "--", "true"])
    except Exception as e:  # the wrapper's usage error
        raise click.UsageError(str(e)) from None
    if whole and not (options.argv or options.help):
        raise click.UsageError("rage run needs a command")


def mentioned(argv: list[str]) -> None:
    """A command named in prose (`rage send`, `rage serve --storage`): its subcommands and
    options exist, though its arguments may be left out."""
    if argv[:1] == ["run"]:
        run_options(argv[1:], whole=False)
        return
    command: click.Command = cli
    ctx = click.Context(cli, info_name="rage")
    for word in argv:
        if isinstance(command, click.Group) and not word.startswith("-"):
            sub = command.get_command(ctx, word)
            assert sub is not None, f"no such command {word!r}"
            command = sub
        elif word.startswith("-") and word != "--":
            names = {o for p in command.get_params(ctx) for o in (*p.opts, *p.secondary_opts)}
            assert word.split("=")[0] in names, f"no such option {word!r}"
        elif word == "--":
            break


DOC_FILES = [ROOT / "README.md", *PAGES]


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: p.name)
def test_every_rage_command_shown_is_accepted_by_the_cli(path: Path) -> None:
    bad = []
    lines, spans = shown_commands(path.read_text())
    for check, texts in ((parse, lines), (mentioned, spans)):
        for text in texts:
            for argv in rage_invocations(text):
                try:
                    check(argv)
                except (click.UsageError, click.BadParameter, AssertionError) as e:
                    bad.append(f"rage {shlex.join(argv)}: {e}")
    assert not bad, "\n".join(bad)


def test_the_command_finder_sees_pipelines_redirections_and_prompts() -> None:
    assert rage_invocations("kubectl logs pod | rage redact --json") == [["redact", "--json"]]
    assert rage_invocations("rage redact app.log > clean.log  # a filter") == [
        ["redact", "app.log"]]
    assert rage_invocations('(PATH="$v/bin:$PATH"; rage list; rage gc)') == [["list"], ["gc"]]
    assert shown_commands("```console\n$ rage list\n  ID  STARTED\n```\n") == (["rage list"], [])
    assert shown_commands("```python\nx = 1\n```\nsee `rage show`\n") == ([], ["rage show"])
    assert rage_invocations("_RAGE_COMPLETE=bash_source rage > f") == []
    with pytest.raises(click.UsageError):
        parse(["report", "--no-such-option"])
    with pytest.raises(click.UsageError):
        parse(["shim", "instal", "git"])
    mentioned(["send"])
    with pytest.raises(AssertionError):
        mentioned(["serve", "--no-such-option"])


# -- shell completion and man pages --------------------------------------------------------

def test_bash_completion_from_the_generated_script(tmp_path: Path) -> None:
    script = subprocess.run([RAGE], env={**os.environ, "_RAGE_COMPLETE": "bash_source"},
                            capture_output=True, text=True, timeout=60, check=True).stdout
    assert "complete -o nosort -F _rage_completion rage" in script
    (tmp_path / "rage.bash").write_text(script)
    # what bash does on `rage re<TAB>` and `rage report --la<TAB>`, with the real script
    probe = (f'PATH="{Path(RAGE).parent}:$PATH"; source {tmp_path / "rage.bash"}\n'
             'COMP_WORDS=(rage re); COMP_CWORD=1; _rage_completion rage; '
             'echo "${COMPREPLY[*]}"\n'
             'COMPREPLY=(); COMP_WORDS=(rage report --la); COMP_CWORD=2; '
             '_rage_completion rage; '
             'echo "${COMPREPLY[*]}"\n')
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", probe], capture_output=True,
                       text=True, timeout=60, check=False)
    first, second = p.stdout.splitlines()
    assert first.split() == ["redact", "report"], p.stderr
    assert set(second.split()) == {"--last", "--last-failed"}, p.stderr


@pytest.mark.parametrize(("shell", "mark"), [("zsh", "#compdef rage"),
                                             ("fish", "complete --no-files --command rage")])
def test_zsh_and_fish_completion_scripts(shell: str, mark: str) -> None:
    p = subprocess.run([RAGE], env={**os.environ, "_RAGE_COMPLETE": f"{shell}_source"},
                       capture_output=True, text=True, timeout=60, check=False)
    assert p.returncode == 0 and mark in p.stdout, p.stdout + p.stderr
    if shutil.which(shell):
        check = ["zsh", "-n"] if shell == "zsh" else ["fish", "--no-execute"]
        syntax = subprocess.run([*check], input=p.stdout, capture_output=True, text=True,
                                timeout=60, check=False)
        assert syntax.returncode == 0, syntax.stderr


def test_man_pages_are_generated_for_every_command(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, str(DOCS / "gen_man.py"), str(tmp_path)], cwd=ROOT,
                       capture_output=True, text=True, timeout=60, check=False)
    assert p.returncode == 0, p.stderr
    for name in COMMANDS:
        page = tmp_path / f"rage-{name}.1"
        assert page.is_file(), name
        assert page.read_text().startswith(".TH"), name
    top = (tmp_path / "rage.1").read_text()
    assert all(name in top for name in COMMANDS)
    report = (tmp_path / "rage-report.1").read_text()
    assert "--last-failed" in report.replace("\\-", "-")
    if shutil.which("man"):
        shown = subprocess.run(["man", "-l", str(tmp_path / "rage-report.1")],
                               capture_output=True, text=True, timeout=60, check=False,
                               env={**os.environ, "MANPAGER": "cat", "PAGER": "cat"})
        assert "rage report" in shown.stdout, shown.stderr


def _slug(heading: str) -> str:
    """GitHub's (and MkDocs' default) anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_the_readme_links_into_pages_and_headings_that_exist() -> None:
    links = re.findall(r"\]\((docs/[^)#]+)(?:#([^)]+))?\)", (ROOT / "README.md").read_text())
    assert len(links) >= 10
    for target, anchor in links:
        page = ROOT / target
        assert page.is_file(), target
        if anchor:
            headings = re.findall(r"^#+ (.+)$", page.read_text(), re.MULTILINE)
            assert anchor in {_slug(h) for h in headings}, (target, anchor)
