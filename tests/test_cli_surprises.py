"""Surprises a new user met on first contact (issue 36), each tried with the real CLI."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.conftest import run_rage


def test_usage_errors_speak_like_every_other_error() -> None:
    proc = run_rage("list", "--bogus")
    assert proc.returncode == 2
    assert proc.stderr == "rage: no such option '--bogus'\nrage: see `rage list --help`\n"
    proc = run_rage("--nope")
    assert proc.returncode == 2
    assert proc.stderr == "rage: no such option '--nope'\nrage: see `rage --help`\n"
    proc = run_rage("shim", "remove")
    assert proc.returncode == 2
    assert proc.stderr == ("rage: missing argument 'NAME'\n"
                           "rage: see `rage shim remove --help`\n")


def test_no_failed_run_hint_names_rage_list() -> None:
    assert run_rage("run", "--", "true").returncode == 0
    proc = run_rage("report", "--last-failed", "--yes")
    assert proc.returncode == 3
    assert proc.stderr.splitlines()[-1] == "rage: pick another run: `rage list` lists them"


def test_shims_are_found_wherever_rage_installed_them(tmp_path: Path) -> None:
    shim_dir, real_dir, other = tmp_path / "shimbin", tmp_path / "real", tmp_path / "other"
    real_dir.mkdir()
    (real_dir / "mytool").write_text("#!/bin/sh\necho real\n")
    (real_dir / "mytool").chmod(0o755)
    env = {**os.environ, "PATH": f"{shim_dir}:{real_dir}:/usr/bin:/bin"}
    assert run_rage("shim", "install", "mytool", "--dir", str(shim_dir), env=env).returncode == 0
    proc = run_rage("shim", "list", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"mytool\t{shim_dir / 'mytool'} -> {real_dir / 'mytool'}\n"
    # off PATH, the directory is still known: rage installed a shim there
    assert run_rage("shim", "install", "othertool", "--dir", str(other),
                    env=env).returncode == 0
    names = [s["name"] for s in json.loads(run_rage("shim", "list", "--json", env=env).stdout)
             ["shims"]]
    assert names == ["mytool", "othertool"]
    # a shim copied onto PATH by hand is found there too
    (real_dir / "copied").write_bytes((shim_dir / "mytool").read_bytes())
    (real_dir / "copied").chmod(0o700)
    proc = run_rage("shim", "list", env=env)
    assert [line.split("\t")[0] for line in proc.stdout.splitlines()] == [
        "copied", "mytool", "othertool"]
    proc = run_rage("shim", "remove", "mytool", env=env)
    assert proc.returncode == 0 and proc.stdout == f"removed {shim_dir / 'mytool'}\n"
    assert not (shim_dir / "mytool").exists() and (real_dir / "mytool").exists()
    proc = run_rage("shim", "remove", "othertool", env=env)
    assert proc.returncode == 0 and not (other / "othertool").exists()
    proc = run_rage("shim", "remove", "mytool", env=env)
    assert proc.returncode == 3
    assert proc.stderr.splitlines()[0] == (
        "rage: no shim mytool found on PATH nor where rage installed shims")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def resend_hint(stderr: str) -> list[str]:
    line = next(x for x in stderr.splitlines() if "resend it with: " in x)
    return shlex.split(line.split("resend it with: ", 1)[1])


@pytest.mark.parametrize("to", ["ftp://files.example/", "http://example.com/upload"])
def test_unusable_target_refused_before_any_bundle(to: str, rage_home: Path,
                                                   tmp_path: Path) -> None:
    assert run_rage("run", "--", "false").returncode == 1
    out = tmp_path / "out"
    out.mkdir()
    proc = run_rage("report", "--last", "--yes", "--to", to, "-o", f"{out}/")
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("rage: ")
    assert "Traceback" not in proc.stderr
    assert list(out.iterdir()) == [] and not (rage_home / "false" / "reports").exists()
    # rage send says the same, before asking anything
    assert run_rage("report", "--last", "--yes", "--no-upload").returncode == 0
    proc = run_rage("send", "last", "--yes", "--to", to)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1


def test_bundle_kept_elsewhere_is_pending_and_resend_works_from_scripts(tmp_path: Path) -> None:
    assert run_rage("run", "--", "false").returncode == 1
    out = tmp_path / "out"
    out.mkdir()
    url = f"http://127.0.0.1:{closed_port()}/"
    proc = run_rage("report", "--last", "--yes", "--to", url, "-o", f"{out}/")
    assert proc.returncode == 4, proc.stderr
    [bundle] = list(out.iterdir())
    again = resend_hint(proc.stderr)
    assert again == ["rage", "send", str(bundle), "--to", url, "--yes"]
    listed = json.loads(run_rage("pending", "--json").stdout)["bundles"]
    assert [b["path"] for b in listed] == [str(bundle)]
    assert listed[0]["app"] == "false"
    # the hint runs as given, without a terminal: it fails on the upload (4), not on usage
    proc = run_rage(*again[1:])
    assert proc.returncode == 4, proc.stderr
    # found by name, as bundles in the reports directory are
    proc = run_rage("send", bundle.name, "--yes", "--to", url)
    assert proc.returncode == 4, proc.stderr
    bundle.unlink()
    assert json.loads(run_rage("pending", "--json").stdout)["bundles"] == []


def test_resend_hint_keeps_allow_http(tmp_path: Path) -> None:
    assert run_rage("run", "--", "false").returncode == 1
    url = "http://rage-test.invalid:9/"  # not loopback; never resolves
    proc = run_rage("report", "--last", "--yes", "--allow-http", "--to", url)
    assert proc.returncode == 4, proc.stderr
    again = resend_hint(proc.stderr)
    assert again[-3:] == [url, "--yes", "--allow-http"]
    proc = run_rage(*again[1:])
    assert proc.returncode == 4 and "could not be resolved" in proc.stderr


def test_bad_config_values_are_errors(config_file: Path) -> None:
    assert run_rage("run", "--", "true").returncode == 0
    config_file.write_text("[default]\nmax_runs = -1\n")
    for args in (("gc",), ("report", "--last", "--yes")):
        proc = run_rage(*args)
        assert proc.returncode == 6, args
        assert proc.stderr == (f"rage: {config_file} [default]: max_runs: must be 0 (no limit) "
                               "or more, not -1\n")


def test_rage_config_naming_a_missing_file_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "typo.toml"
    env = {**os.environ, "RAGE_CONFIG": str(missing)}
    assert run_rage("run", "--", "true").returncode == 0
    proc = run_rage("gc", env=env)
    assert proc.returncode == 6
    assert proc.stderr == (f"rage: RAGE_CONFIG names a missing file: {missing} "
                           "(RAGE_CONFIG=/dev/null: no config)\n")
    # a recorded command still runs, with one warning line
    proc = run_rage("run", "--", "sh", "-c", "exit 3", env=env)
    assert proc.returncode == 3
    assert proc.stderr == (f"rage: warning: RAGE_CONFIG names a missing file: {missing} "
                           "(RAGE_CONFIG=/dev/null: no config) (using defaults)\n")
    assert run_rage("list", "--json").returncode == 0
    # RAGE_DISABLE still turns recording off, silently
    proc = run_rage("run", "--", "true", env={**env, "RAGE_DISABLE": "1"})
    assert proc.returncode == 0 and proc.stderr == ""


def test_report_and_send_print_one_link_format(tmp_path: Path, config_file: Path) -> None:
    config_file.write_text('[default]\nissues_url = "https://tracker.example/me/t/issues"\n')
    assert run_rage("run", "--", "sh", "-c", "exit 3").returncode == 3
    outputs = []
    for i, args in enumerate([("report", "--last", "--yes", "-m", "it broke"),
                              ("send", "last", "--yes")]):
        inbox = tmp_path / f"inbox{i}"
        inbox.mkdir()
        if args[0] == "send":
            assert run_rage("report", "--last", "--yes", "-m", "it broke",
                            "--no-upload").returncode == 0
        proc = run_rage(*args, "--to", inbox.as_uri())
        assert proc.returncode == 0, proc.stderr
        lines = [x for x in proc.stdout.splitlines() if not x.startswith("bundle written")]
        url = lines[0].removeprefix("uploaded: ")
        outputs.append([x.replace(url, "URL").replace(quote(url, safe=""), "QURL")
                        for x in lines])
    # the issue bodies end with each bundle's own summary (sizes differ): the rest is equal
    heads = [[*o[:4], o[4].split("%0A%0A%23")[0]] for o in outputs]
    assert heads[0] == heads[1]
    assert outputs[0][:4] == ["uploaded: URL", "paste this into the bug report:",
                              "  [rage report for sh (failed, exit 3)](URL)",
                              "or open a new issue:"]
    issue = outputs[0][4]
    assert issue.startswith("  https://tracker.example/me/t/issues/new?title=sh%20failed")
    assert "it%20broke" in issue and "QURL" in issue


CRASHING_CLICK_TOOL = """\
import os
import re
import click

@click.group()
def cli():
    pass

@cli.command()
def boom():
    raise KeyError("timeout")

if os.environ.get("WITH_RAGE"):
    import rage.click
    rage.click.attach(cli, "crashy")
cli()
"""


def test_click_traceback_is_the_tools_own(tmp_path: Path, rage_home: Path) -> None:
    tool = tmp_path / "crashy.py"
    tool.write_text(CRASHING_CLICK_TOOL)

    def crash(**env: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, str(tool), "boom"], capture_output=True,
                              env={**os.environ, **env}, timeout=60, check=False)

    plain, recorded = crash(), crash(WITH_RAGE="1")
    assert plain.returncode == recorded.returncode == 1
    assert b"Traceback" in plain.stderr
    # run by the interpreter: the hint says so (`crashy.py rage` alone is no command)
    hint = (f"crashy: this crash was recorded; to report it run: {sys.executable} {tool} "
            "rage").encode()
    assert recorded.stderr.startswith(plain.stderr)
    assert recorded.stderr[len(plain.stderr):].startswith(hint)
    assert recorded.stderr.count(b"\n") == plain.stderr.count(b"\n") + 1
    [run] = (rage_home / "crashy" / "runs").iterdir()
    assert b"rage/integration" not in (run / "traceback.txt").read_bytes()


def test_the_tools_own_rage_command_is_not_a_run_of_it(tmp_path: Path) -> None:
    tool = tmp_path / "crashy.py"
    tool.write_text(CRASHING_CLICK_TOOL)
    env = {**os.environ, "WITH_RAGE": "1"}

    def crashy(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(tool), *args], capture_output=True,
                              text=True, env=env, timeout=60, check=False)

    assert crashy("boom").returncode == 1
    assert crashy("rage", "--last-failed", "--yes", "--no-upload").returncode == 0
    assert crashy("rage", "--last-failed", "--preview").returncode == 0
    listed = json.loads(run_rage("list", "--failed", "--json").stdout)["runs"]
    assert [r["argv"][1:] for r in listed] == [["boom"]]
    listed = json.loads(run_rage("list", "--json").stdout)["runs"]
    assert len(listed) == 1


def test_show_finds_the_exception_in_a_wrapped_pythons_output(tmp_path: Path) -> None:
    script = tmp_path / "crash.py"
    script.write_text("def f():\n    raise ValueError('bad value 42')\n\nprint('working')\nf()\n")
    proc = run_rage("run", "--", sys.executable, str(script))
    assert proc.returncode == 1 and "ValueError: bad value 42" in proc.stderr
    show = run_rage("show", "last")
    assert show.returncode == 0, show.stderr
    assert "      exception: ValueError: bad value 42\n" in show.stdout
    # chained: the exception that ended the run
    script.write_text("try:\n    {}['k']\nexcept KeyError:\n    raise RuntimeError('lost k')\n")
    assert run_rage("run", "--", sys.executable, str(script)).returncode == 1
    assert "      exception: RuntimeError: lost k\n" in run_rage("show", "last").stdout


def test_commands_that_cannot_start_are_recorded_and_listed(tmp_path: Path) -> None:
    proc = run_rage("run", "--", "no-such-tool-xyz", "--flag")
    assert proc.returncode == 127
    assert proc.stderr == "rage: no-such-tool-xyz: command not found\n"
    plain = tmp_path / "notes.txt"
    plain.write_text("echo hi\n")
    assert run_rage("run", "--", str(plain)).returncode == 126
    listed = json.loads(run_rage("list", "--failed", "--json").stdout)["runs"]
    assert [(r["app"], r["status"], r["exit_code"]) for r in listed] == [
        ("notes.txt", "failed", 126), ("no-such-tool-xyz", "failed", 127)]
    show = run_rage("show", listed[1]["id"]).stdout
    assert "          error: no-such-tool-xyz: command not found\n" in show
    assert "           exit: 127\n" in show
    out = run_rage("show", listed[1]["id"], "--output-log").stdout
    assert "rage: no-such-tool-xyz: command not found" in out


def test_same_bundle_same_link_whatever_the_url_form(tmp_path: Path) -> None:
    from tests.test_server import launch_serve

    url, server = launch_serve(["--storage", str(tmp_path / "store")])
    try:
        assert run_rage("run", "--", "false").returncode == 1
        assert run_rage("report", "--last", "--yes", "--no-upload").returncode == 0
        [bundle] = json.loads(run_rage("pending", "--json").stdout)["bundles"]
        links = []
        for to in (f"{url}/", f"{url}/", f"receiver+{url}/", f"{url}/api/v1/bundles"):
            proc = run_rage("send", bundle["path"], "--yes", "--json", "--to", to,
                            *(["--protocol", "receiver"] if "api" in to else []))
            assert proc.returncode == 0, proc.stderr
            links.append(json.loads(proc.stdout)["url"])
        assert len(set(links)) == 1 and links[0].startswith(f"{url}/b/")
        stored = list((tmp_path / "store").rglob("*.tar.zst"))
        assert len(stored) == 1
    finally:
        server.terminate()
        server.wait(timeout=10)
        assert server.stdout is not None
        server.stdout.close()


def test_serve_on_all_interfaces_prints_a_usable_link_and_warns(tmp_path: Path) -> None:
    import requests

    proc = subprocess.Popen(
        [sys.executable, "-m", "rage", "serve", "--host", "0.0.0.0", "--port", "0",
         "--storage", str(tmp_path / "store")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    watchdog = threading.Timer(30, proc.kill)  # a missing line must not hang the suite
    watchdog.start()
    try:
        lines = [proc.stdout.readline() for _ in range(4)]
        warning = proc.stderr.readline()
        url = lines[0].split()[-1]
        assert requests.get(url, timeout=10).status_code == 200  # a link that works
    finally:
        watchdog.cancel()
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()
    assert lines[0].startswith("rage serve: listening on all interfaces, port ")
    assert "0.0.0.0" not in url
    host = url.split("//", 1)[1].rsplit(":", 1)[0]
    assert host in {socket.gethostname(), "127.0.0.1"}
    assert "/triage" in lines[3] and "/admin" in lines[3]
    assert f"rage send BUNDLE --to {url}" in lines[2]
    assert warning.startswith("rage serve: warning: uploads need no token")


def test_serve_link_works_and_mentions_triage(tmp_path: Path) -> None:
    import requests

    proc = subprocess.Popen(
        [sys.executable, "-m", "rage", "serve", "--port", "0", "--admin-token", "adm",
         "--storage", str(tmp_path / "store")],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    watchdog = threading.Timer(30, proc.kill)
    watchdog.start()
    try:
        lines = [proc.stdout.readline() for _ in range(4)]
        url = lines[0].split()[-1]
        assert requests.get(url, timeout=10).status_code == 200
    finally:
        watchdog.cancel()
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()
    assert lines[2] == (f"rage serve: send a bundle with `rage send BUNDLE --to {url}` "
                        f"(or `curl -F file=@bundle.tar.zst {url}`)\n")
    assert lines[3] == (f"rage serve: triage at {url}triage, recent bundles at {url}admin "
                        "(sign in with the admin token)\n")


LOGGING_TOOL = """\
import logging
import rage
rage.install("logtool")
logging.getLogger("logtool").warning("disk nearly full")
raise SystemExit(3)
"""


def test_bundle_page_and_json_link_their_signature(tmp_path: Path) -> None:
    import requests

    from tests.test_server import launch_serve

    url, server = launch_serve(["--storage", str(tmp_path / "store"), "--admin-token", "adm"])
    try:
        tool = tmp_path / "logtool.py"
        tool.write_text(LOGGING_TOOL)
        subprocess.run([sys.executable, str(tool)], capture_output=True, timeout=60,
                       check=False)
        proc = run_rage("report", "--app", "logtool", "--last", "--yes", "--json",
                        "--to", f"{url}/")
        assert proc.returncode == 0, proc.stderr
        page_url = json.loads(proc.stdout)["upload"]["url"]
        bundle_id = page_url.rsplit("/", 1)[1]
        data = requests.get(f"{url}/api/v1/bundles/{bundle_id}", timeout=10).json()
        sig = data["signature"]
        assert sig["url"] == f"{url}/triage/{sig['hash']}"
        assert sig["text"] == "logtool: logtool.py: exit 3: disk nearly full"
        page = requests.get(page_url, timeout=10).text
        assert f'href="{sig["url"]}"' in page
        # log records: ISO times, not epoch floats
        rows = re.findall(r'<tr><td class="muted">([^<]*)</td><td class="lvl-', page)
        assert rows and all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", t)
                            for t in rows), rows
        # every collector has its block under Environment: no Sections table repeating them
        assert 'id="environment"' in page and 'id="sections"' not in page
        # the signature's own page answers at that link (for the maintainer)
        r = requests.get(sig["url"], headers={"Authorization": "Bearer adm"}, timeout=10)
        assert r.status_code == 200
    finally:
        server.terminate()
        server.wait(timeout=10)
        assert server.stdout is not None
        server.stdout.close()


def test_upload_keys_are_scoped_to_the_host(tmp_path: Path) -> None:
    from rage.upload.idempotency import host_scope, upload_key

    bundle = tmp_path / "b.tar.zst"
    bundle.write_bytes(b"same bytes")
    here = upload_key(bundle, host_scope("http://Rage.Example:8080/"))
    assert here == upload_key(bundle, host_scope("https://rage.example/api/v1/bundles"))
    assert here != upload_key(bundle, host_scope("https://0x0.example/"))


def test_list_keeps_the_command_column_whatever_the_app_names(tmp_path: Path) -> None:
    # apps are named after their commands: `rage run -- nonexistent-cmd` ran over the APP
    # column's fixed 12 characters and pushed its COMMAND out of line
    long_name = tmp_path / "a-tool-whose-name-is-far-too-long-for-any-column"
    long_name.write_text("#!/bin/sh\nexit 0\n")
    long_name.chmod(0o755)
    for argv in (["true"], ["nonexistent-cmd"], [str(long_name)]):
        run_rage("run", "--", *argv)
    lines = run_rage("list").stdout.splitlines()
    column = lines[0].index("COMMAND")
    assert [line[column:] for line in lines[1:]] == [
        shlex.join([str(long_name)]), "nonexistent-cmd", "true"]
    assert "a-tool-whose-name-is-fa… " in lines[1]
