"""The fast redaction scan is the default install's wherever Hyperscan publishes a wheel
(users do not read about extras), the pure-Python scan elsewhere, and `rage --version` says
which one runs. The installed distribution's own metadata, the real CLI."""

from __future__ import annotations

import os
import subprocess
from importlib.metadata import requires

import pytest
from packaging.requirements import Requirement

from tests.test_cli_exit_codes import RAGE

# platforms with and without a Hyperscan wheel (PyPI's files for hyperscan 0.9.1)
WHEELS = [("Linux", "x86_64"), ("Linux", "aarch64"), ("Darwin", "arm64"), ("Darwin", "x86_64"),
          ("Windows", "AMD64")]
NO_WHEELS = [("Linux", "riscv64"), ("Linux", "ppc64le"), ("Linux", "s390x"), ("Linux", "i686"),
             ("Windows", "ARM64")]


def hyperscan_requirement() -> Requirement:
    reqs = [Requirement(r) for r in requires("rage-report") or []]
    [default] = [r for r in reqs if r.name == "hyperscan"
                 and (r.marker is None or "extra" not in str(r.marker))]
    return default


def environment(system: str, machine: str, **kw: str) -> dict[str, str]:
    return {"platform_system": system, "platform_machine": machine,
            "platform_python_implementation": kw.get("impl", "CPython"),
            "python_version": kw.get("version", "3.12"), "extra": ""}


@pytest.mark.parametrize(("system", "machine"), WHEELS)
def test_hyperscan_is_a_default_dependency_where_a_wheel_exists(system: str,
                                                                 machine: str) -> None:
    marker = hyperscan_requirement().marker
    assert marker is not None and marker.evaluate(environment(system, machine))


@pytest.mark.parametrize(("system", "machine"), NO_WHEELS)
def test_nowhere_else_a_source_build_could_fail_the_install(system: str, machine: str) -> None:
    marker = hyperscan_requirement().marker
    assert marker is not None and not marker.evaluate(environment(system, machine))
    assert not marker.evaluate(environment("Linux", "x86_64", impl="PyPy"))
    assert not marker.evaluate(environment("Linux", "x86_64", version="3.15"))


def test_this_machine_s_install_has_it_and_says_so() -> None:
    assert hyperscan_requirement().marker.evaluate()  # type: ignore[union-attr]
    out = subprocess.run([RAGE, "--version"], capture_output=True, text=True, check=True,
                         timeout=60).stdout.splitlines()
    assert out[0].startswith("rage, version ")
    assert out[1].startswith("redaction scan: hyperscan ")


def test_the_pure_python_scan_is_said_when_chosen() -> None:
    out = subprocess.run([RAGE, "-V"], capture_output=True, text=True, check=True, timeout=60,
                         env={**os.environ, "RAGE_NATIVE_SCAN": "0"}).stdout
    assert "redaction scan: pure Python (RAGE_NATIVE_SCAN=0)" in out
