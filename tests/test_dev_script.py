"""The developers' bootstrap (.ci/dev.py): what it decides before it installs anything."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def dev() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ci_dev", ROOT / ".ci" / "dev.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SIMULATION = """\
NOTE: This is only a simulation!
Reading package lists...
Inst libsystemd0 [252.19-1~deb12u1] (252.30-1~deb12u2 Debian-Security:12/stable-security [amd64])
Inst chromium-common (131.0.6778.85-1~deb12u1 Debian-Security:12/stable-security [amd64])
Inst perl-base [5.36.0-7+deb12u1] (5.36.0-7+deb12u2 Debian:12.9/stable [amd64])
Conf chromium-common (131.0.6778.85-1~deb12u1 Debian-Security:12/stable-security [amd64])
"""


def test_apt_upgrades_are_the_installed_packages_it_would_replace() -> None:
    assert dev().upgrades_of(SIMULATION) == ["libsystemd0", "perl-base"]
    assert dev().upgrades_of("Inst chromium (131 Debian:12 [amd64])\n") == []


def test_upgrades_go_ahead_under_ci_and_are_refused_without_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    module = dev()
    monkeypatch.setenv("CI", "true")
    assert module.consent_to_upgrade(["perl-base"])
    monkeypatch.delenv("CI")
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert not module.consent_to_upgrade(["perl-base"])


def test_the_suite_runs_in_parallel_unless_the_caller_chose() -> None:
    module = dev()
    assert module.parallel(["tests/test_wire.py"])[:2] == ["-n", module.WORKERS]
    assert module.parallel(["-n", "2"]) == ["-n", "2"]
    assert module.parallel(["-p", "no:xdist"]) == ["-p", "no:xdist"]
