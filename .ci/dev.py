"""Bootstrap for a fresh clone that has only Python 3: makes .venv, installs, and runs.

python3 .ci/dev.py demo            the demo: a task end to end on the embedded reference server
python3 .ci/dev.py test [ARGS]     the whole test suite (ARGS go to pytest; the site is built first
                                   when it changed, unless --no-docs)
python3 .ci/dev.py lint            ruff and mypy --strict
python3 .ci/dev.py floors [ARGS]   the fast suite in .venv-floors, at the dependency floors (.ci/floors.txt)
python3 .ci/dev.py docs            the documentation site, built strictly into build/site (tools in .venv-docs)
"""

from __future__ import annotations

import configparser
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")


def run(*argv: str | os.PathLike[str], **kwargs: object) -> None:
    """Run a command in the project root, echoing it; a failure raises."""
    print("+", " ".join(str(a) for a in argv), flush=True)
    subprocess.run([str(a) for a in argv], check=True, cwd=ROOT, **kwargs)  # type: ignore[call-overload]


def ensure_venv() -> Path:
    """Create .venv and install the project with its test extra, once per setup.cfg version."""
    stamp_value = hashlib.sha256((ROOT / "setup.cfg").read_bytes() + (ROOT / "pyproject.toml").read_bytes()).hexdigest()
    stamp = VENV / ".installed"
    if stamp.exists() and stamp.read_text() == stamp_value:
        return BIN / "python"
    if not (BIN / "python").exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    python = BIN / "python"
    run(python, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    run(python, "-m", "pip", "install", "--quiet", "-e", ".[test]")
    stamp.write_text(stamp_value)
    return python


FLOORS_VENV = ROOT / ".venv-floors"
LINT_TOOLS = ("mypy", "ruff", "types-")


def ensure_floors_venv() -> Path:
    """Create .venv-floors: the project at exactly the floors in .ci/floors.txt, and the test
    extra without the lint tools (their stubs want newer libraries than the floors).
    """
    floors = ROOT / ".ci" / "floors.txt"
    stamp_value = hashlib.sha256((ROOT / "setup.cfg").read_bytes() + floors.read_bytes()).hexdigest()
    bin_dir = FLOORS_VENV / ("Scripts" if os.name == "nt" else "bin")
    stamp = FLOORS_VENV / ".installed"
    if stamp.exists() and stamp.read_text() == stamp_value:
        return bin_dir / "python"
    venv.EnvBuilder(with_pip=True, clear=True).create(FLOORS_VENV)
    python = bin_dir / "python"
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    extra = [line.strip() for line in config["options.extras_require"]["test"].splitlines() if line.strip()]
    tests = [req for req in extra if not req.startswith(LINT_TOOLS)]
    run(python, "-m", "pip", "install", "--quiet", "-c", floors, "-e", ".", *tests)
    run(python, "-m", "pip", "check")
    stamp.write_text(stamp_value)
    return python


DOCS_VENV = ROOT / ".venv-docs"
SITE = ROOT / "build" / "site"
SITE_SOURCES = ("docs", "mcp_tasks", "CHANGELOG.md", "setup.cfg")
"""What the site is built from: a change to any of these makes `test` build it again."""


def ensure_docs_venv() -> Path:
    """Create .venv-docs with the pinned tools of the docs extra (the site is built from the source
    tree, so the project itself is not installed there).
    """
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    tools = [line.strip() for line in config["options.extras_require"]["docs"].splitlines() if line.strip()]
    stamp_value = hashlib.sha256("\n".join(tools).encode()).hexdigest()
    bin_dir = DOCS_VENV / ("Scripts" if os.name == "nt" else "bin")
    stamp = DOCS_VENV / ".installed"
    if stamp.exists() and stamp.read_text() == stamp_value:
        return bin_dir / "python"
    venv.EnvBuilder(with_pip=True, clear=True).create(DOCS_VENV)
    python = bin_dir / "python"
    run(python, "-m", "pip", "install", "--quiet", *tools)
    stamp.write_text(stamp_value)
    return python


SYSTEM_PACKAGES = {
    # Debian package: what shows it is there (the site's browser test; the store tests' cluster).
    "chromium": lambda: bool(shutil.which("chromium") or os.path.exists("/usr/bin/chromium")),
    "postgresql": lambda: bool(shutil.which("initdb") or glob.glob("/usr/lib/postgresql/*/bin/initdb")),
}


def ensure_system_packages() -> None:
    """Install the system packages the tests use (Chromium, the PostgreSQL server) where they are
    missing and this is a Debian machine run as root, as CI is; elsewhere say what is missing (the
    tests that need it then fail saying so).
    """
    missing = [name for name, present in SYSTEM_PACKAGES.items() if not present()]
    if not missing:
        return
    if shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        run("apt-get", "update", "-qq", env=env)
        run("apt-get", "install", "-y", "-qq", *missing, env=env)
    else:
        print(f"note: the tests need {' and '.join(missing)} (system packages); install them", file=sys.stderr)


def site_digest() -> str:
    """A digest of every file the site is built from."""
    digest = hashlib.sha256()
    for name in SITE_SOURCES:
        source = ROOT / name
        files = sorted(source.rglob("*")) if source.is_dir() else [source]
        for path in files:
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def build_docs(*, always: bool) -> None:
    """Build the site strictly into build/site; unless `always`, only when a source changed."""
    stamp = SITE / ".sources"
    digest = site_digest()
    if not always and stamp.exists() and stamp.read_text() == digest:
        return
    python = ensure_docs_venv()
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    run(python, "-m", "mkdocs", "build", "--strict", "--config-file", ROOT / "docs" / "mkdocs.yml", env=env)
    stamp.write_text(digest)


def main(argv: list[str]) -> int:
    """Dispatch a command; returns the exit code."""
    command = argv[0] if argv else "test"
    rest = argv[1:]
    if command == "floors":
        try:
            # Without the lint tools (see ensure_floors_venv), the mypy test has nothing to run.
            skip = ["--ignore", str(ROOT / "tests" / "test_typing.py")]
            ensure_system_packages()
            run(ensure_floors_venv(), "-m", "pytest", "-m", "not interop", "-q", *skip, *rest)
        except subprocess.CalledProcessError as exc:
            return exc.returncode or 1
        return 0
    if command == "docs":
        try:
            build_docs(always=True)
        except subprocess.CalledProcessError as exc:
            return exc.returncode or 1
        return 0
    python = ensure_venv()
    try:
        if command == "demo":
            run(python, "-m", "mcp_tasks", "demo", *rest)
        elif command == "test":
            ensure_system_packages()
            peers = ROOT / ".ci" / "peers.py"
            if peers.exists() and "--no-peers" not in rest:
                run(python, peers, "install")
            if "--no-docs" not in rest:
                build_docs(always=False)  # the site's browser test reads the built site
            rest = [a for a in rest if a not in ("--no-peers", "--no-docs")]
            run(python, "-m", "pytest", *rest)
        elif command == "lint":
            run(python, "-m", "ruff", "check", ".")
            run(python, "-m", "ruff", "format", "--check", ".")
            run(python, "-m", "mypy", "--strict")
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except subprocess.CalledProcessError as exc:
        return exc.returncode or 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
