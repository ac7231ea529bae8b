"""Query results as database clients print them: psql's aligned tables and expanded records
(``\\x``), mysql's boxes, Markdown tables, pg_dump's ``COPY ... FROM stdin`` rows. A secret
column's cells went into bundles whole: only CSV and TSV were read as tables.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_rage
from tests.redact_helpers import red, red_both, reported

S = "Zq8s3cretValue77xY"
R = "[REDACTED:secret-field]"

PSQL = (" id | email |      api_key       | password_hash \n"
        "----+-------+--------------------+---------------\n"
        f"  1 | a@b.c | {S} | {S}2\n"
        "  2 | d@e.f |                    | \n(2 rows)\n")
RECORDS = (f"-[ RECORD 1 ]-+-------------------\nid            | 1\nemail         | a@b.c\n"
           f"api_key       | {S}\npassword_hash | {S}2\n")
BOX = ("+------+-------+--------------------+---------------------+\n"
       "| id   | email | api_key            | password            |\n"
       "+------+-------+--------------------+---------------------+\n"
       f"|    1 | a@b.c | {S} | {S}2 |\n"
       "|    2 | d@e.f | NULL               | NULL                |\n"
       "+------+-------+--------------------+---------------------+\n")
COPY = ("COPY public.users (id, email, api_key, password_hash) FROM stdin;\n"
        f"1\ta@b.c\t{S}\t{S}2\n\\.\n")
MARKDOWN = f"| name | token |\n|------|-------|\n| ci   | {S} |\n"


@pytest.mark.parametrize("text", [PSQL, RECORDS, BOX, COPY, MARKDOWN])
def test_a_secret_columns_cells_go(text: str) -> None:
    out, counts = red_both(text)
    assert S not in out, out
    assert "a@b.c" in out or "ci" in out  # the other columns stay
    assert "NULL " in out or "NULL" not in text
    assert set(counts) == {"secret-field"}


@pytest.mark.parametrize("text", [
    " id | name \n----+------\n  1 | bob\n(1 row)\n",
    "| name | token |\n|------|-------|\n id | name \n----+------\n  1 | bob\n",
    "+--------+\n| a | b |\n+--------+\n",
    "COPY public.users (id, name) FROM stdin;\n1\tbob\n\\.\n",
    "diff: +-- a/x\n",
])
def test_tables_without_a_secret_column_stay(text: str) -> None:
    assert red(text) == (text, {})


def test_real_psql_and_pg_dump(tmp_path: Path) -> None:
    """PostgreSQL's own client and dumper, against a server on 127.0.0.1."""
    if shutil.which("psql") is None or shutil.which("pg_dump") is None:
        pytest.skip("psql is not installed (.ci/run installs postgresql)")
    from tests.services import run_postgres

    with run_postgres() as pg:
        subprocess.run(["psql", pg.url, "-q", "-c",
                        "create table users (id int, email text, api_key text); "
                        f"insert into users values (1, 'a@b.c', '{S}')"], check=True)
        script = (f"psql {pg.url} -c 'select * from users' -c '\\x' -c 'select * from users';"
                  f" pg_dump -t users {pg.url}")
        proc = run_rage("run", "--app", "db", "--", "bash", "-c", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count(S) == 3  # the table, the record, the COPY row
    raw = reported("db", tmp_path / "b.tar.zst")
    assert S.encode() not in raw
    assert f"  1 | a@b.c | {R}".encode() in raw
    assert f"api_key | {R}".encode() in raw
    assert f"1\ta@b.c\t{R}".encode() in raw


VAULT_KV = (
    "====== Data ======\n"
    "Key         Value\n"
    "---         -----\n"
    "passcode    {pw}\n"
    "username    deploy\n"
    "\n"
    "Key                Value\n"
    "---                -----\n"
    "lease_id           database/creds/readonly/2f6a614c-4a5c\n"
    "lease_duration     1h\n"
    "lease_renewable    true\n"
    "password           {pw}\n"
    "username           v-token-readonly-9blxDY2dqcVy\n"
)


def test_vault_tables_of_names_and_values() -> None:
    """`vault kv get` and a dynamic secret's `vault read database/creds/x`: the value of
    each secret name goes; the lease, its duration and the user name stay."""
    pw = "A1a-Zq8s3cretValue77"
    out, counts = red_both(VAULT_KV.format(pw=pw))
    assert out == VAULT_KV.format(pw="[REDACTED:secret-field]")
    assert counts == {"secret-field": 2}


@pytest.mark.parametrize("text", [
    "Key         Value\n---         -----\nversion     3\ncas_required    false\n",
    "Key    Value\npassword    is set\n",  # no rule line: not Vault's table
    "API Key    rotated\n---    -----\n",
])
def test_key_value_tables_without_a_secret_stay(text: str) -> None:
    assert red(text) == (text, {})


CSV = f"name,username,password\nci,deploy,{S}\n"
FILLER = "".join(f"ordinary log line {i} of the run\n" for i in range(2000))


@pytest.mark.parametrize("text", [PSQL, RECORDS, BOX, COPY, MARKDOWN, CSV],
                         ids=["psql", "records", "box", "copy", "markdown", "csv"])
def test_a_table_cut_anywhere_between_blocks_is_redacted_as_whole(text: str) -> None:
    """A stream redacts whole lines as they come: a block that ended after a table's header
    (`-[ RECORD 1 ]-`, psql's column names, `COPY ... FROM stdin;`) left the rows it names in
    clear. The header is now a multi-line opener: the block ends before it."""
    from rage.redact import Redactor

    data = (FILLER + text + FILLER).encode()
    whole = Redactor(pseudonymize=False).bytes(data)
    assert S.encode() not in whole
    lines = data.splitlines(keepends=True)
    first = FILLER.count("\n")
    for k in range(first - 1, first + text.count("\n") + 1):
        chunks = [b"".join(lines[:k]), b"".join(lines[k:])]
        out = b"".join(Redactor(pseudonymize=False).stream(iter(chunks), block=1, workers=0))
        assert out == whole, k


def test_a_record_read_from_a_pipe_in_two_reads_as_from_a_file(tmp_path: Path) -> None:
    """The issue's case: `api_secret | X` of a psql `\\x` record went through
    `cat FILE | rage redact -` when a read ended after its `-[ RECORD 1 ]-` line, and not
    through `rage redact FILE`."""
    import time

    from tests.conftest import rage_cmd

    head = FILLER + "-[ RECORD 1 ]-----------\n"
    rest = f"id         | 1\napi_secret | {S}\nname       | x\n" + FILLER
    src = tmp_path / "records.txt"
    src.write_text(head + rest)
    by_file = run_rage("redact", "-q", str(src))
    proc = subprocess.Popen(rage_cmd("redact", "-q", "-"), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(head.encode())
    proc.stdin.flush()
    time.sleep(0.05)  # read apart, but within the pause after which held lines go out
    out, _ = proc.communicate(rest.encode(), timeout=60)
    assert proc.returncode == 0 and by_file.returncode == 0
    assert f"api_secret | {R}\n" in by_file.stdout
    assert out.decode() == by_file.stdout
