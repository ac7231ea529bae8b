"""MkDocs hook: the reference tables of the documentation, generated from rage's own code.

A page asks for a table with a marker line, ``<!-- rage:NAME -->``; :func:`on_page_markdown`
replaces it with the table :data:`TABLES` makes for NAME. An unknown marker, a setting
without a description here, or a table the code no longer provides stops the build: the
site is built with ``--strict`` and a reference that no longer matches the code is an error,
not a page that quietly goes stale.

The tables read the code's data (the settings dataclass, the provider format catalogue, the
secret words, the key/value forms, the command-line rules, the triage placeholders); where
the code keeps a rule's description in a source comment, :func:`_comments_above` reads it.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
from collections.abc import Callable, Iterable
from typing import Any

from mkdocs.exceptions import PluginError

MARKER = re.compile(r"^<!-- rage:([a-z0-9-]+) -->$", re.MULTILINE)

# What each setting means: the one thing the code does not say at run time. A setting added
# to rage.config.Settings without a line here fails the build (and tests/test_docs.py).
SETTING_MEANINGS: dict[str, str] = {
    "disable": "Record nothing (`RAGE_DISABLE=1` turns recording off for one shell).",
    "output_cap": "Output and log bytes kept per run: the head and the tail; the middle is "
                  "dropped with a marker line.",
    "attach": "Log files (paths or globs) copied into the run when it ends.",
    "hint_on_failure": "Print the report hint after any non-zero exit, not only after a crash.",
    "native_backtrace": "When a program `rage run` wraps crashes (SEGV, ABRT, BUS, ILL, FPE, "
                        "TRAP), keep a backtrace of it made from its core dump with gdb; the "
                        "core itself is deleted (see [Recording](recording.md)).",
    "max_runs": "Runs kept per app; 0 means no limit. Live runs are never deleted.",
    "max_bytes": "Bytes of history kept per app; 0 means no limit.",
    "max_age_days": "Days a run is kept; 0 means no limit.",
    "collectors": "Opt-in plugin collectors to run (entry-point names).",
    "disable_collectors": "Collectors to skip.",
    "tools": "Executables whose `--version` the `tools` collector records.",
    "redact": "Extra regular expressions to redact (Python `re` syntax).",
    "bundle_max_bytes": "Cap on the run files in one bundle, before compression (the head "
                        "and tail of each file are kept).",
    "upload_url": "Where `rage report` uploads (see [Uploading](uploading.md) for the forms).",
    "upload_protocol": "The protocol, when the URL does not say it: `multipart`, `put`, "
                       "`receiver`, `gist` or `file`.",
    "allow_http": "Allow plain `http://` targets that are not on a loopback address.",
    "upload_ca_bundle": "A PEM file of a private CA to trust for uploads.",
    "upload_timeout": "Seconds the whole upload may take, retries included.",
    "issues_url": "The new-issue URL of the app's tracker, for a pre-filled issue link.",
    "gist_api_url": "The GitHub API the `gist` uploader talks to.",
    "gist_token_env": "The environment variable holding the `gist` uploader's token.",
}

_SIZES = {"output_cap", "max_bytes", "bundle_max_bytes"}


def _cell(text: object) -> str:
    """Text for one Markdown table cell: pipes escaped, one line."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(text: str) -> str:
    """Inline code for any text (a backtick inside needs a longer fence)."""
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}".replace("|", "\\|")


def _table(head: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    head = list(head)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _need(module: Any, name: str) -> Any:
    """``module.name``, or a build error naming what the docs expected there."""
    try:
        return getattr(module, name)
    except AttributeError:
        raise PluginError(f"docs/hooks/reference.py: {module.__name__}.{name} is gone; "
                          "update the generator and the page that shows it") from None


def _comments_above(obj: Any, variable: str) -> list[str]:
    """The comment lines written just above each element of the tuple assigned to
    ``variable`` in ``obj``'s module source, one string per element ('' when none)."""
    source = inspect.getsource(obj)
    lines = source.splitlines()
    for node in ast.parse(source).body:
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AnnAssign) else [])
        if any(isinstance(t, ast.Name) and t.id == variable for t in targets):
            assert isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
            value = node.value
            if not isinstance(value, ast.Tuple):
                break
            out = []
            for element in value.elts:
                i = element.lineno - 2
                comment: list[str] = []
                while i >= 0 and lines[i].strip().startswith("#"):
                    comment.insert(0, lines[i].strip().lstrip("#").strip())
                    i -= 1
                out.append(" ".join(comment))
            return out
    raise PluginError(f"docs/hooks/reference.py: no tuple {variable} in {obj.__name__}")


# -- the tables --------------------------------------------------------------------------

def config_table() -> str:
    from rage import config

    settings = _need(config, "Settings")
    missing = [f.name for f in dataclasses.fields(settings) if f.name not in SETTING_MEANINGS]
    extra = sorted(set(SETTING_MEANINGS) - {f.name for f in dataclasses.fields(settings)})
    if missing or extra:
        raise PluginError("docs/hooks/reference.py: SETTING_MEANINGS is out of date: "
                          f"no meaning for {missing}, no such setting {extra}")
    aliases = {name: var for var, name in _need(config, "_ENV_ALIASES").items()}
    rows = []
    for f in dataclasses.fields(settings):
        default = f.default
        if f.name in _SIZES and isinstance(default, int):
            shown = _code(config.format_size(default).replace(" ", "").replace(".0", ""))
        elif default is None:
            shown = "none"
        elif isinstance(default, bool):
            shown = _code(str(default).lower())
        elif isinstance(default, tuple):
            shown = _code("[]")
        elif isinstance(default, str):
            shown = _code(f'"{default}"')
        else:
            shown = _code(f"{default:g}" if isinstance(default, float) else str(default))
        kind = str(f.type).replace("tuple[str, ...]", "list of strings").replace(" | None", "")
        if f.name in _SIZES:
            kind = "size (`64MiB`, `8M`, bytes)"
        env = _code("RAGE_" + f.name.upper())
        if f.name in aliases and aliases[f.name] != "RAGE_" + f.name.upper():
            env += ", " + _code(aliases[f.name])
        rows.append((_code(f.name), kind, shown, env, SETTING_MEANINGS[f.name]))
    return _table(["key", "type", "default", "environment", "meaning"], rows)


def _site(url: str) -> str:
    """A source's short name: its host, or a GitHub repository's owner/name."""
    parts = re.sub(r"^https?://(www\.)?", "", url).split("/")
    if parts[0] == "github.com" and len(parts) >= 3:
        return f"{parts[1]}/{parts[2]}"
    return parts[0]


def provider_formats() -> str:
    from rage.redact import formats

    rows = []
    for f in _need(formats, "FORMATS"):
        prefixes = list(dict.fromkeys(f.prefixes))
        shown = ", ".join(_code(p) for p in prefixes[:4])
        if len(prefixes) > 4:
            shown += f" and {len(prefixes) - 4} more"
        rows.append((_code(f.kind), f.provider or "", shown, f"[{_site(f.source)}]({f.source})"))
    kinds = len({f.kind for f in formats.FORMATS})
    return (f"{len(rows)} formats of {kinds} kinds, in the order the engine tries them.\n\n"
            + _table(["kind (`[REDACTED:kind]`)", "provider", "a match holds", "source"], rows))


def secret_words() -> str:
    from rage import sensitive

    def words(items: Iterable[str]) -> str:
        return ", ".join(_code(w) for w in sorted(set(items)))

    rows = [
        ("anywhere in the name", words(_need(sensitive, "_WORDS"))),
        ("anywhere, once `_` and `-` are removed (`API-KEY`, `api_key`)",
         words(_need(sensitive, "_JOINED"))),
        ("only as a whole part of the name (`DB_PASS`, `GITHUB_PAT`, `dbPass`)",
         words(_need(sensitive, "_PARTS"))),
        ("a short number under these is a secret too (a PIN, a numeric password)",
         words(_need(sensitive, "PASSWORD_WORDS"))),
        ("a last part that makes the name describe a secret, not hold one (`KEY_VAULT_NAME`)",
         words(_need(sensitive, "_META_LAST"))),
    ]
    return _table(["a name is secret when it holds", "words"], rows)


def key_value_forms() -> str:
    from rage.redact import patterns

    forms = _need(patterns, "KEY_VALUE_FORMS")
    comments = _comments_above(patterns, "KEY_VALUE_FORMS")
    rows = []
    for (name, _regex), comment in zip(forms, comments, strict=True):
        whatever = "any name (the shape says secret)" if name.startswith("forced-") else \
            "a secret name"
        # a form with no comment of its own is the one above it in another frame
        rows.append((_code(name), comment or "as the row above, in another frame", whatever))
    return _table(["form", "what it matches", "value taken under"], rows)


def argv_rules() -> str:
    from rage.redact import argv

    rules: dict[str, list[str]] = {}

    def add(program: str, text: str) -> None:
        rules.setdefault(program, []).append(text)

    def opts(options: Iterable[str]) -> str:
        return ", ".join(_code(o) for o in sorted(options))

    for program, options in _need(argv, "_SECRET_OPTS").items():
        if options:
            add(program, f"the value of {opts(options)}")
    for program in _need(argv, "_GLUED_P"):
        add(program, "`-pVALUE` glued")
    for program, (options, sep) in _need(argv, "_USERPASS").items():
        where = f" of {opts(options)}" if options else ""
        add(program, f"the password in `user{sep}password`{where}")
    for program, subs in _need(argv, "_POSITIONAL").items():
        for sub in sorted(subs):
            add(program, f"the operand after `{sub}`")
    for program, shapes in _need(argv, "_NTH_OPERAND").items():
        for words, n in shapes:
            after = f" after `{' '.join(words)}`" if words else ""
            add(program, f"operand {n}{after} (counting from 1)")
    for program, words in _need(argv, "_AFTER_WORD").items():
        for word in sorted({w.lower() for w in words}):
            add(program, f"the last operand after `{word}`")
    for program, subs in _need(argv, "_SECOND_POSITIONAL").items():
        add(program, f"the second operand of {opts(subs)}")
    for path, options in _need(argv, "_SUBCOMMAND_OPTS").items():
        add(path[0], f"{opts(options)} of `{' '.join(path)}`")
    for program in _need(argv, "_ORACLE"):
        add(program, "the password in `user/password@db`")
    for program in _need(argv, "_FREERDP"):
        add(program, opts(_need(argv, "_FREERDP_PASS")))
    for program in _need(argv, "_LOGIN_ONLY"):
        add(program, "`-p` only in `login` (elsewhere it is a port or a path)")
    grouped: dict[tuple[str, ...], list[str]] = {}
    for program, texts in rules.items():
        grouped.setdefault(tuple(dict.fromkeys(texts)), []).append(program)
    rows = sorted((", ".join(_code(p) for p in sorted(programs)), "; ".join(texts))
                  for texts, programs in grouped.items())
    stdin = ", ".join(_code(s) for s in _need(argv, "STDIN_SECRET"))
    return (_table(["program", "what is removed"], rows)
            + f"\nWhat a pipeline feeds these is a password: {stdin}.\n")


def triage_placeholders() -> str:
    from rage.server import placeholders

    rows = [(_code(r.name), _code(r.replacement) if r.replacement else "(removed)", r.source)
            for r in _need(placeholders, "RULES")]
    return _table(["rule", "becomes", "where the idea comes from"], rows)


def serve_bounds() -> str:
    import click

    from rage.cli import serve_cmd

    command = _need(serve_cmd, "serve")
    rows = []
    for param in command.params:
        # a bound has a value by default (click 8.2 marks "no default" with a sentinel)
        if (not isinstance(param, click.Option) or param.is_flag
                or not isinstance(param.default, str | int | float)):
            continue
        if param.multiple or param.name in {"host", "port"}:
            continue
        env = _code(param.envvar) if isinstance(param.envvar, str) else ""
        rows.append((_code(param.opts[-1]), _code(str(param.default)), param.help or "", env))
    if not any(row[3] for row in rows):  # no bound is read from the environment
        return _table(["option", "default", "what it bounds"], [row[:3] for row in rows])
    return _table(["option", "default", "what it bounds", "environment"], rows)


def run_usage() -> str:
    from rage.record import wrapper

    usage = str(_need(wrapper, "USAGE")).rstrip()
    return f"```text\n{usage}\n```\n"


TABLES: dict[str, Callable[[], str]] = {
    "run-usage": run_usage,
    "serve-bounds": serve_bounds,
    "config-table": config_table,
    "provider-formats": provider_formats,
    "secret-words": secret_words,
    "key-value-forms": key_value_forms,
    "argv-rules": argv_rules,
    "triage-placeholders": triage_placeholders,
}


def expand(markdown: str, where: str = "") -> str:
    """``markdown`` with every marker replaced by its table."""
    def table(m: re.Match[str]) -> str:
        make = TABLES.get(m.group(1))
        if make is None:
            raise PluginError(f"{where}: unknown table marker {m.group(0)!r}")
        return make()

    return MARKER.sub(table, markdown)


def on_page_markdown(markdown: str, page: Any, **_kwargs: Any) -> str:
    return expand(markdown, page.file.src_path)


# click 8.2 marks "no default" with a sentinel object, which mkdocs-click 0.9 prints as
# `Sentinel.UNSET` in the CLI reference's Default column: that cell is empty
_UNSET_CELL = re.compile(r"<td><code>Sentinel\.UNSET</code></td>")


def on_page_content(html: str, page: Any, **_kwargs: Any) -> str:
    return _UNSET_CELL.sub("<td></td>", html)
