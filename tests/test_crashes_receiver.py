"""Crashes of other runtimes on the receiver: real programs (C with AddressSanitizer, C++,
Rust, Node, Java: compiled and run here) crash in two variants each (another directory,
lines shifted, other values), are recorded with `rage run`, reported and uploaded to a real
receiver; the same cause gets one signature, another cause another, and the signature names
the frames, not the values."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.test_crashes import C_SRC, CPP_SRC, JAVA_SRC, NODE_LIB, NODE_SRC, RUST_SRC, _pad
from tests.test_server import Server, start_server, stop_server

ADMIN = "crashes-admin-token"
AUTH = {"Authorization": f"Bearer {ADMIN}"}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = start_server(tmp_path / "store", "--admin-token", ADMIN)
    yield s
    stop_server(s)


def run_and_report(server: Server, home: Path, app: str, argv: list[str], cwd: Path, *,
                   env: dict[str, str] | None = None) -> None:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("RAGE_", "RUST_"))}
    base.update({"RAGE_HOME": str(home), "RAGE_CONFIG": "/dev/null", **(env or {})})
    rage = [sys.executable, "-m", "rage"]
    run = subprocess.run([*rage, "run", "--app", app, "--", *argv], cwd=cwd, env=base,
                         capture_output=True, timeout=60, check=False)
    assert run.returncode != 0
    rep = subprocess.run([*rage, "report", "--last", "--app", app, "--yes", "--no-collect",
                          "--to", f"receiver+{server.url}/"], env=base, capture_output=True,
                         text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)
    assert rep.returncode == 0 and "uploaded:" in rep.stdout, rep.stderr


def signatures(server: Server) -> list[dict[str, object]]:
    r = requests.get(f"{server.url}/api/v1/signatures", headers=AUTH, timeout=10,
                     params={"per_page": 100})
    rows: list[dict[str, object]] = r.json()["signatures"]
    return rows


@pytest.mark.skipif(not shutil.which("g++") or not shutil.which("rustc"),
                    reason="needs g++ and rustc")
def test_native_crashes_group_by_their_frames_on_the_receiver(server: Server,
                                                              tmp_path: Path) -> None:
    home = tmp_path / "home"
    for variant, (sub, shift) in enumerate((("a", 0), ("b/deeper", 7))):
        where = tmp_path / sub
        where.mkdir(parents=True)
        (where / "crash.cpp").write_text(_pad(CPP_SRC, shift))
        subprocess.run(["g++", "-g", "-O0", "-o", "crashy-cpp", "crash.cpp"], cwd=where,
                       check=True, capture_output=True, timeout=120)
        (where / "main.rs").write_text(_pad(RUST_SRC, shift))
        subprocess.run(["rustc", "-g", "--crate-name", "crashy", "-o", "crashy", "main.rs"],
                       cwd=where, check=True, capture_output=True, timeout=120)
        for mode in ("throw", "range"):
            run_and_report(server, home, "crashy-cpp",
                           [str(where / "crashy-cpp"), mode, str(7 + 5 * variant)], where)
        for mode in ("idx", "parse"):
            run_and_report(server, home, "crashy", [str(where / "crashy"), mode,
                                                   str(4 + variant)], where,
                           env={"RUST_BACKTRACE": "1"})
    rows = signatures(server)
    counts = Counter(str(r["app"]) for r in rows)
    assert counts == {"crashy-cpp": 2, "crashy": 2}  # two causes each, not four variants
    assert all(r["count"] == 2 for r in rows)  # each cause's two variants together
    texts = [str(r["text"]) for r in rows]
    assert any("std::runtime_error" in t for t in texts), texts
    assert any("std::out_of_range" in t for t in texts), texts
    for t in texts:
        assert "/" not in t.split(": ", 1)[1] or "::" in t  # no paths
        assert not any(str(v) in t for v in (7, 12))  # no values from argv


@pytest.mark.skipif(not shutil.which("gcc") or not shutil.which("node")
                    or not shutil.which("javac"), reason="needs gcc, node and a JDK")
def test_c_node_and_java_crashes_group_on_the_receiver(server: Server, tmp_path: Path) -> None:
    home = tmp_path / "home"
    for variant, (sub, shift) in enumerate((("a", 0), ("b/deeper", 7))):
        where = tmp_path / sub
        (where / "node_modules" / "lib").mkdir(parents=True)
        (where / "crash.c").write_text(_pad(C_SRC, shift))
        subprocess.run(["gcc", "-g", "-O0", "-fsanitize=address", "-o", "asan", "crash.c"],
                       cwd=where, check=True, capture_output=True, timeout=120)
        (where / "app.js").write_text(_pad(NODE_SRC, shift))
        (where / "node_modules" / "lib" / "index.js").write_text(NODE_LIB)
        (where / "App.java").write_text(_pad(JAVA_SRC, shift))
        subprocess.run(["javac", "App.java"], cwd=where, check=True, capture_output=True,
                       timeout=120)
        for mode in ("uaf", "overflow"):
            run_and_report(server, home, "asan", [str(where / "asan"), mode, str(3 + 2 * variant)],
                           where, env={"ASAN_OPTIONS": "detect_leaks=0"})
        for mode in ("throw", "save"):
            run_and_report(server, home, "app", ["node", str(where / "app.js"), mode,
                                                 str(2 + variant * 9)], where)
        for mode in ("cause", "state"):
            run_and_report(server, home, "App", ["java", "-Xshare:auto", "-cp", str(where),
                                                 "App", mode, str(1 + variant * 40)], where)
    rows = signatures(server)
    assert Counter(str(r["app"]) for r in rows) == {"asan": 2, "app": 2, "App": 2}
    assert all(r["count"] == 2 for r in rows), [(r["text"], r["count"]) for r in rows]
    assert {str(r["kind"]) for r in rows} == {"crash"}
    texts = " | ".join(str(r["text"]) for r in rows)
    for name in ("heap-use-after-free", "heap-buffer-overflow", "IllegalStateException"):
        assert name in texts, texts
    # the page says what was compared, the app's own frames first
    one = requests.get(f"{server.url}/api/v1/signatures/{rows[0]['hash']}", headers=AUTH,
                       timeout=10).json()
    assert any(r.startswith("frames compared, the app's own first: ") for r in one["reasons"])
