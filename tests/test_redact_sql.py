"""SQL as databases and ORMs log it: a prepared statement's parameters printed apart from it,
and PostgreSQL's constraint errors quoting the key.

On the code before, every one of these kept the secret: SQLAlchemy's echo (``echo=True``,
the ORM's inserts, executemany, a cached statement) and the ``[parameters: ...]`` of its
errors, PostgreSQL's ``log_statement`` with ``DETAIL:  parameters: $2 = '...'``, Django's
``args=(...)``, and ``DETAIL:  Key (api_token)=(...) already exists.``, which psycopg puts
in every unique violation's exception.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tests.conftest import run_rage
from tests.redact_helpers import red, red_both, reported

S = "Zq8s3cretValue77xY"
R = "[REDACTED:secret-field]"
E = "INFO sqlalchemy.engine.Engine "


@pytest.mark.parametrize(("text", "kept"), [
    (f"{E}INSERT INTO users (name, password) VALUES (?, ?)\n"
     f"{E}[generated in 0.00023s] ('bob', '{S}')", f"('bob', '{R}')"),
    (f"{E}INSERT INTO users (name, api_token, age) VALUES (?, ?, ?)\n"
     f"{E}[generated in 0.0001s] [('al', '{S}', 3), ('cy', 'Mm4Nn6Bb8RRq', 4)]",
     f"[('al', '{R}', 3), ('cy', '{R}', 4)]"),
    (f"{E}UPDATE users SET password=? WHERE users.name = ?\n"
     f"{E}[cached since 12.5s ago] ('{S}', 'bob')", f"('{R}', 'bob')"),
    (f"{E}SELECT users.id, users.name \nFROM users \nWHERE users.api_token = ?\n"
     f"{E}[generated in 0.0001s] ('{S}',)", f"('{R}',)"),
    (f"{E}SELECT * FROM users WHERE api_token = %(tok)s AND name = %(name)s\n"
     f"{E}[generated in 0.0001s] {{'tok': '{S}', 'name': 'bob'}}",
     f"{{'tok': '{R}', 'name': 'bob'}}"),
    (f"{E}INSERT INTO users (name, password_hash) VALUES (?, ?) RETURNING id\n"
     f"{E}[insertmanyvalues 2/2 (ordered; batch not supported)] ('cy', '{S}')",
     f"('cy', '{R}')"),
    (f"{E}UPDATE users SET password = crypt(:pw, gen_salt('bf')) WHERE id = :id\n"
     f"{E}[generated in 0.0001s] {{'pw': '{S}', 'id': 7}}", f"{{'pw': '{R}', 'id': 7}}"),
    ("sqlalchemy.exc.IntegrityError: (sqlite3.IntegrityError) UNIQUE constraint failed: "
     "users.name\n[SQL: INSERT INTO users (name, password_hash, api_token) VALUES (?, ?, ?)]\n"
     f"[parameters: ('al', '{S}', 'Qq1Ww2Ee3RrT')]", f"[parameters: ('al', '{R}', '{R}')]"),
    ("2026-12-03 19:55:05.237 UTC [7667] LOG:  execute <unnamed>: UPDATE users SET password = "
     "$1 WHERE name = $2\n2026-12-03 19:55:05.237 UTC [7667] DETAIL:  parameters: "
     f"$1 = '{S}', $2 = 'bob'", f"parameters: $1 = '{R}', $2 = 'bob'"),
    ("LOG:  execute S_1: INSERT INTO users (name, password) VALUES ($1, $2)\n"
     f"DETAIL:  parameters: $1 = 'bob', $2 = '{S}'", f"$1 = 'bob', $2 = '{R}'"),
    # Django logs the statement with its values in it, then the values: no placeholders to
    # match, so every string of a statement that names a secret column goes
    ('(0.002) UPDATE "auth_user" SET "password" = \'' + S + '\', "is_active" = true WHERE '
     f'"auth_user"."id" = 7; args=(\'{S}\', True, 7); alias=default',
     f"args=('{R}', True, 7); alias=default"),
    (f"ERROR:  duplicate key value violates unique constraint \"users_api_token_key\"\n"
     f"DETAIL:  Key (api_token)=({S}) already exists.", f"Key (api_token)=({R}) already"),
    (f"DETAIL:  Key (tenant_id, api_key)=(7, {S}) already exists.", f"=(7, {R}) already"),
])
def test_a_parameter_of_a_secret_column_goes(text: str, kept: str) -> None:
    out, counts = red_both(text)
    assert S not in out, out
    assert kept in out, out
    assert set(counts) == {"secret-field"}


@pytest.mark.parametrize("text", [
    f"{E}SELECT users.id FROM users WHERE users.name = ?\n{E}[generated in 0.0001s] ('bob',)",
    f"{E}INSERT INTO users (name, age) VALUES (?, ?)\n{E}[generated in 0.0001s] ('bob', 42)",
    # the statement before the parameters' is not theirs: it has its own
    f"{E}SELECT password FROM users WHERE id = ?\n{E}[generated in 0.1s] (7,)\n"
    f"{E}SELECT name FROM users WHERE id = ?\n{E}[generated in 0.1s] ('bob',)",
    f"{E}UPDATE users SET password = ? WHERE id = ?\n{E}[generated in 0.1s] (None, 7)",
    "LOG:  execute <unnamed>: SELECT * FROM users WHERE name = $1\n"
    "DETAIL:  parameters: $1 = 'bob'",
    "DETAIL:  Key (email)=(bob@example.com) already exists.",
    'DETAIL:  Key (user_id)=(42) is not present in table "users".',
    "(0.001) SELECT \"auth_user\".\"id\" FROM \"auth_user\" WHERE \"auth_user\".\"username\" = "
    "'bob' LIMIT 21; args=('bob',); alias=default",
    f"{E}[raw sql] ()",
])
def test_other_parameters_stay(text: str) -> None:
    assert red(text) == (text, {})


def _sqlalchemy_tool(tmp_path: Path) -> Path:
    tool = tmp_path / "users.py"
    tool.write_text(f"""
import sys
from sqlalchemy import String, create_engine, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

class Base(DeclarativeBase):
    pass

class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String, unique=True)
    password_hash: Mapped[str] = mapped_column(String)
    api_token: Mapped[str] = mapped_column(String)

engine = create_engine("sqlite://", echo=True)
Base.metadata.create_all(engine)
with Session(engine) as s:
    s.add_all([User(name="al", password_hash="{S}1", api_token="{S}2"),
               User(name="cy", password_hash="{S}3", api_token="{S}4")])
    s.commit()
    s.execute(select(User).where(User.api_token == "{S}2")).all()
    s.add(User(name="al", password_hash="{S}5", api_token="{S}6"))
    s.commit()  # a unique violation: its traceback ends with [SQL: ...] [parameters: ...]
""")
    return tool


def test_a_real_sqlalchemy_echo_and_its_integrity_error(tmp_path: Path) -> None:
    proc = run_rage("run", "--app", "users", "--", sys.executable, str(_sqlalchemy_tool(tmp_path)))
    assert proc.returncode == 1, proc.stderr
    seen = proc.stdout + proc.stderr
    assert all(f"{S}{k}" in seen for k in range(1, 7)), seen  # what the user saw
    assert "[parameters: ('al', " in seen
    raw = reported("users", tmp_path / "b.tar.zst")
    assert S.encode() not in raw
    assert f"[parameters: ('al', '{R}', '{R}')]".encode() in raw
    assert f"('al', '{R}', '{R}')".encode() in raw and f"('cy', '{R}', '{R}')".encode() in raw


def test_a_real_postgresql_log_and_a_unique_violation(tmp_path: Path) -> None:
    """PostgreSQL with log_statement = all logs each prepared statement's parameters; a
    unique violation's DETAIL, in the server's log and in psycopg's exception, quotes the
    key."""
    psycopg = pytest.importorskip("psycopg")
    from tests.services import run_postgres

    with run_postgres() as pg:
        with psycopg.connect(pg.url, autocommit=True) as c:
            c.execute("ALTER SYSTEM SET log_statement = 'all'")
            c.execute("SELECT pg_reload_conf()")
        time.sleep(0.3)
        tool = tmp_path / "signup.py"
        tool.write_text(f"""
import sys, psycopg
with psycopg.connect(sys.argv[1], autocommit=True) as c:
    c.execute("CREATE TABLE users (name text, password text, api_token text UNIQUE)")
    c.execute("INSERT INTO users (name, password, api_token) VALUES (%s, %s, %s)",
              ("bob", "{S}1", "{S}2"))
    c.execute("UPDATE users SET password = %s WHERE name = %s", ("{S}3", "bob"))
    c.execute("INSERT INTO users (name, password, api_token) VALUES (%s, %s, %s)",
              ("al", "{S}4", "{S}2"))
""")
        proc = run_rage("run", "--app", "signup", "--", sys.executable, str(tool), pg.url)
        log = Path(pg.ctl[pg.ctl.index("-l") + 1]).read_text()
    assert proc.returncode == 1
    assert f"Key (api_token)=({S}2) already exists." in proc.stderr  # psycopg's exception
    assert f"$2 = '{S}1'" in log and f"$1 = '{S}3'" in log and f"=({S}2) already" in log
    raw = reported("signup", tmp_path / "b.tar.zst")
    assert S.encode() not in raw
    assert f"Key (api_token)=({R}) already exists.".encode() in raw
    server_log = run_rage("redact", "--no-pseudonyms", input=log, stdin=None)
    assert server_log.returncode == 0
    assert S not in server_log.stdout
    assert f"parameters: $1 = 'bob', $2 = '{R}', $3 = '{R}'" in server_log.stdout
    assert f"parameters: $1 = '{R}', $2 = 'bob'" in server_log.stdout
