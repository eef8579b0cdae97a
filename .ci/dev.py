"""Bootstrap for a fresh clone that has only Python 3: makes .venv, installs, and runs.

python3 .ci/dev.py demo            the demo: a task end to end on the embedded reference server
python3 .ci/dev.py test [ARGS]     the whole test suite (ARGS go to pytest)
python3 .ci/dev.py lint            ruff and mypy --strict
python3 .ci/dev.py floors [ARGS]   the fast suite in .venv-floors, at the dependency floors (.ci/floors.txt)
"""

from __future__ import annotations

import configparser
import hashlib
import os
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


def main(argv: list[str]) -> int:
    """Dispatch a command; returns the exit code."""
    command = argv[0] if argv else "test"
    rest = argv[1:]
    if command == "floors":
        try:
            # Without the lint tools (see ensure_floors_venv), the mypy test has nothing to run.
            skip = ["--ignore", str(ROOT / "tests" / "test_typing.py")]
            run(ensure_floors_venv(), "-m", "pytest", "-m", "not interop", "-q", *skip, *rest)
        except subprocess.CalledProcessError as exc:
            return exc.returncode or 1
        return 0
    python = ensure_venv()
    try:
        if command == "demo":
            run(python, "-m", "mcp_tasks", "demo", *rest)
        elif command == "test":
            peers = ROOT / ".ci" / "peers.py"
            if peers.exists() and "--no-peers" not in rest:
                run(python, peers, "install")
            rest = [a for a in rest if a != "--no-peers"]
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
