"""SQL dumps whose INSERTs name no columns: ``pg_dump --inserts`` and mysqldump (whose
default extended inserts are ``INSERT INTO `t` VALUES (...),(...)``). The columns come from
the table's ``CREATE TABLE`` earlier in the stream, in process and across the workers of a
large one. On the code before, every secret column's value in such a dump went into the
bundle whole (only ``COPY`` blocks and INSERTs with a column list were read).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from rage.redact import Redactor
from rage.redact.parallel import redact_stream
from tests.conftest import run_rage
from tests.redact_helpers import red, red_both, reported

S = "Zq8s3cretValue77xY"
R = "[REDACTED:secret-field]"

PG = (f"CREATE TABLE public.users (\n    id integer NOT NULL,\n    email text,\n"
      f"    api_key text,\n    note character varying(20) DEFAULT 'a, b'::character varying\n"
      f");\n\nALTER TABLE public.users OWNER TO app;\n\n"
      f"INSERT INTO public.users VALUES (1, 'a@b.c', '{S}', 'hi');\n"
      f"INSERT INTO public.users VALUES (2, 'd@e.f', NULL, 'x');\n")
MYSQL = ("DROP TABLE IF EXISTS `users`;\nCREATE TABLE `users` (\n"
         "  `id` int NOT NULL AUTO_INCREMENT,\n  `email` varchar(255) DEFAULT NULL,\n"
         "  `password` varchar(255) DEFAULT NULL COMMENT 'plain, sadly',\n"
         "  PRIMARY KEY (`id`),\n  KEY `idx_email` (`email`)\n"
         ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;\nLOCK TABLES `users` WRITE;\n"
         f"INSERT INTO `users` VALUES (1,'a@b.c','{S}'),(2,'d@e.f','{S}2');\nUNLOCK TABLES;\n")
SQLITE = (f"sqlite> create table t (name text, token text);\n"
          f"sqlite> insert into t values ('ci', '{S}');\n")


@pytest.mark.parametrize(("text", "kept"), [
    (PG, f"VALUES (1, 'a@b.c', '{R}', 'hi');"),
    (MYSQL, f"VALUES (1,'a@b.c','{R}'),(2,'d@e.f','{R}');"),
    (SQLITE, f"values ('ci', '{R}');"),
])
def test_an_insert_without_columns_takes_its_tables(text: str, kept: str) -> None:
    out, counts = red_both(text)
    assert S not in out, out
    assert kept in out, out
    assert out.replace(R, "") == text.replace(S + "2", "").replace(S, "")  # nothing else
    assert set(counts) == {"secret-field"}


@pytest.mark.parametrize("text", [
    "CREATE TABLE public.items (\n    id integer,\n    name text\n);\n"
    "INSERT INTO public.items VALUES (1, 'bolt');\n",
    "INSERT INTO public.unknown VALUES (1, 'a@b.c', 'not known to be secret');\n",
    # another table's secret column does not make this one's
    "CREATE TABLE a (id int, token text);\nINSERT INTO b VALUES (1, 'plain');\n",
    "CREATE TABLE `t` (`id` int, `password_min_length` int);\n"
    "INSERT INTO `t` VALUES (1,12);\n",
])
def test_inserts_into_tables_without_a_secret_column_stay(text: str) -> None:
    assert red(text) == (text, {})


def _dump(rows: int) -> bytes:
    """mysqldump's shape: a table, then its extended inserts, one table after another."""
    out = []
    for t in ("audit", "users", "keys"):
        secret = "" if t == "audit" else "  `api_token` varchar(64) DEFAULT NULL,\n"
        out.append(f"CREATE TABLE `{t}` (\n  `id` int NOT NULL,\n  `name` varchar(64),\n"
                   f"{secret}  PRIMARY KEY (`id`)\n) ENGINE=InnoDB;\n")
        for i in range(rows):
            vals = f"'{S}{i}'" if secret else ""
            out.append(f"INSERT INTO `{t}` VALUES ({i},'n{i}'{',' if vals else ''}{vals}),"
                       f"({i + 1},'m'{',' if vals else ''}{vals});\n")
    return "".join(out).encode()


def test_workers_know_the_tables_another_worker_saw() -> None:
    """A large dump in worker processes, pieces round robin: each piece's INSERTs take the
    columns of a CREATE TABLE another worker redacted; the output equals the in-process
    stream's."""
    data = _dump(60_000)
    assert len(data) > 8 * 1024 * 1024
    chunks = [data[i:i + 65536] for i in range(0, len(data), 65536)]
    r = Redactor(pseudonymize=False)
    parallel = b"".join(redact_stream(r, chunks, block=1 << 20, workers=2,
                                      min_parallel=1 << 20, piece=1 << 20))
    assert S.encode() not in parallel
    serial = b"".join(redact_stream(Redactor(pseudonymize=False), chunks,
                                    block=1 << 20, workers=1))
    assert parallel == serial
    assert parallel.count(R.encode()) == 2 * 2 * 60_000


def test_a_real_pg_dump_with_inserts(tmp_path: Path) -> None:
    """pg_dump --inserts (no column lists) against PostgreSQL on 127.0.0.1: a small dump,
    redacted in the reporting process, and one over 8 MiB, redacted by the workers."""
    if shutil.which("psql") is None or shutil.which("pg_dump") is None:
        pytest.skip("pg_dump is not installed (.ci/run installs postgresql)")
    from tests.services import run_postgres

    with run_postgres() as pg:
        subprocess.run(["psql", pg.url, "-q", "-c",
                        "create table users (id int, email text, api_key text); "
                        f"insert into users values (1, 'a@b.c', '{S}'); "
                        "create table events (id int, body text); "
                        "insert into events select g, repeat('x', 40) || g from "
                        "generate_series(1, 120000) g; "
                        "insert into users select g, 'u' || g || '@example.com', "
                        f"'{S}' || g from generate_series(2, 40000) g"], check=True)
        small = run_rage("run", "--app", "small", "--", "pg_dump", "--inserts", "-t", "users",
                         pg.url)
        big = run_rage("run", "--app", "dump", "--", "pg_dump", "--inserts", pg.url)
    assert small.returncode == 0, small.stderr
    assert small.stdout.count(S) == 40000 and len(small.stdout) < 8 * 1024 * 1024
    raw = reported("small", tmp_path / "a.tar.zst")
    assert S.encode() not in raw
    assert f"INSERT INTO public.users VALUES (1, 'a@b.c', '{R}');".encode() in raw
    assert big.returncode == 0, big.stderr
    assert big.stdout.count(S) == 40000  # what the user's terminal (or file) got
    assert len(big.stdout) > 8 * 1024 * 1024  # so the report redacts it in workers
    raw = reported("dump", tmp_path / "b.tar.zst")
    assert S.encode() not in raw
    assert f"INSERT INTO public.users VALUES (1, 'a@b.c', '{R}');".encode() in raw
    assert b"INSERT INTO public.events VALUES (7, 'xxxxxxxxxx" in raw  # other tables stay
