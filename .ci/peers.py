"""Install the independent peers that the interop tests (tests/interop) talk to. Stdlib only.

python3 .ci/peers.py install     make .venv-peers (fastmcp-tasks) and .npm-peers (the conformance suite)
python3 .ci/peers.py status      say what is installed, install nothing

Both live in the repository root and are ignored by git. Each is stamped with what was asked for,
so a second run that finds the same pins installed does nothing. The peer server's dependencies
stay in their own venv: nothing of them leaks into the project's .venv. Any failure exits non-zero.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PEERS_VENV = ROOT / ".venv-peers"
PEERS_BIN = PEERS_VENV / ("Scripts" if os.name == "nt" else "bin")
# The only Python implementation of the Tasks extension that installs here (peers.md Part A §0 and §8.9):
# fastmcp[tasks] 4.1.4, on the official SDK 2.3.0. The transitive pins keep the peer's wire stable.
PYTHON_PINS = (
    "fastmcp[tasks]==4.1.4",
    "fastmcp-tasks==4.1.4",
    "mcp==2.3.0",
    "mcp-types==2.3.0",
    "pydocket==0.27.0",
)

NPM_DIR = ROOT / ".npm-peers"
# The conformance runner; 0.2.x is the first with 2026-07-28 client scenarios (a prerelease: pin it exactly).
NPM_PINS = ("@modelcontextprotocol/conformance@0.2.0-alpha.12",)
CONFORMANCE_BIN = NPM_DIR / "node_modules" / ".bin" / "conformance"

STAMP_NAME = ".peers-installed"


class InstallError(Exception):
    """An install step failed."""


def say(message: str) -> None:
    """One line of progress on stdout."""
    print(f"peers: {message}", flush=True)


def run(argv: list[str], cwd: Path = ROOT) -> None:
    """Run a command, echoing it; a failure raises InstallError."""
    print("+", " ".join(argv), flush=True)
    try:
        subprocess.run(argv, cwd=cwd, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise InstallError(f"{argv[0]} failed: {exc}") from exc


def stamp_value(pins: tuple[str, ...], extra: str) -> str:
    """What a stamp records: the pins and whatever else would make an install stale."""
    return hashlib.sha256(json.dumps([list(pins), extra]).encode()).hexdigest()


def stamped(folder: Path, value: str) -> bool:
    """Whether `folder` was installed for exactly `value`."""
    stamp = folder / STAMP_NAME
    return stamp.is_file() and stamp.read_text().strip() == value


def python_peers() -> str:
    """Make .venv-peers with the pinned fastmcp-tasks, unless it is already there."""
    python = PEERS_BIN / "python"
    value = stamp_value(PYTHON_PINS, f"{sys.version_info.major}.{sys.version_info.minor}")
    if stamped(PEERS_VENV, value) and python.exists():
        return f"{PEERS_VENV.name}: up to date ({', '.join(PYTHON_PINS)})"
    say(f"creating {PEERS_VENV.name} with {', '.join(PYTHON_PINS)}")
    # A fresh venv each time the pins change: nothing stale stays installed beside them.
    venv.EnvBuilder(with_pip=True, clear=True).create(PEERS_VENV)
    run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *PYTHON_PINS])
    # Prove the install imports before stamping it.
    run([str(python), "-c", "import fastmcp, fastmcp_tasks, mcp_types; print('fastmcp', fastmcp.__version__)"])
    (PEERS_VENV / STAMP_NAME).write_text(value + "\n")
    return f"{PEERS_VENV.name}: installed {', '.join(PYTHON_PINS)}"


def npm_peers() -> str:
    """Install the pinned conformance suite into .npm-peers, unless it is already there."""
    npm = shutil.which("npm")
    node = shutil.which("node")
    if npm is None or node is None:
        raise InstallError("node and npm are needed for the conformance suite, and one is not on PATH")
    node_version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    value = stamp_value(NPM_PINS, node_version)
    if stamped(NPM_DIR, value) and CONFORMANCE_BIN.exists():
        return f"{NPM_DIR.name}: up to date ({', '.join(NPM_PINS)}, node {node_version})"
    say(f"installing {', '.join(NPM_PINS)} into {NPM_DIR.name} (node {node_version})")
    NPM_DIR.mkdir(exist_ok=True)
    (NPM_DIR / STAMP_NAME).unlink(missing_ok=True)
    manifest = {"name": "mcp-tasks-npm-peers", "private": True, "description": "written by .ci/peers.py"}
    (NPM_DIR / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
    run([npm, "install", "--no-audit", "--no-fund", "--save-exact", "--loglevel=error", *NPM_PINS], cwd=NPM_DIR)
    if not CONFORMANCE_BIN.exists():
        raise InstallError(f"npm finished but {CONFORMANCE_BIN} is missing")
    (NPM_DIR / STAMP_NAME).write_text(value + "\n")
    return f"{NPM_DIR.name}: installed {', '.join(NPM_PINS)}"


def status() -> int:
    """Say what is installed; non-zero when something is missing."""
    missing = 0
    for name, folder in ((PEERS_VENV.name, PEERS_VENV), (NPM_DIR.name, NPM_DIR)):
        present = (folder / STAMP_NAME).is_file()
        missing += not present
        say(f"{name}: {'installed' if present else 'missing'}")
    return 1 if missing else 0


def main(argv: list[str]) -> int:
    """Dispatch a command; returns the exit code."""
    command = argv[0] if argv else ""
    if command == "status":
        return status()
    if command != "install":
        print(__doc__, file=sys.stderr)
        return 2
    start = time.monotonic()
    try:
        done = [python_peers(), npm_peers()]
    except InstallError as exc:
        print(f"peers: FAILED: {exc}", file=sys.stderr, flush=True)
        return 1
    for line in done:
        say(line)
    say(f"done in {time.monotonic() - start:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
