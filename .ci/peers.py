"""Install the independent peers that the interop tests (tests/interop) talk to. Stdlib only.

python3 .ci/peers.py install     make every peer's venv or npm folder (list below)
python3 .ci/peers.py status      say what is installed, install nothing

Python peers, one venv each (their dependencies clash, and none may leak into the project's .venv):
    .venv-peers           fastmcp-tasks 4.1.4 on mcp 2.3.0: the 2026-07-28 Tasks extension
    .venv-peers-mcp1      mcp 1.30.0, the official SDK's last 1.x: 2025-11-25 experimental tasks
    .venv-peers-fastmcp3  fastmcp[tasks] 3.4.11 (its own Docket engine on mcp 1.30.0): 2025-11-25 tasks
npm peers, one folder each:
    .npm-peers            the conformance runner 0.2.0-alpha.12 (2026-07-28 client scenarios)
    .npm-peers-016        the conformance runner 0.1.16 (2025-11-25 client scenarios)
    .npm-peers-everything the reference "everything" server (2025-11-25 tasks: simulate-research-query)

All live in the repository root and are ignored by git. Each is stamped with what was asked for,
so a second run that finds the same pins installed does nothing. Any failure exits non-zero.
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
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BIN_DIR = "Scripts" if os.name == "nt" else "bin"


@dataclass(frozen=True)
class PythonPeer:
    """A venv of pinned packages, and a line of Python that proves they import."""

    folder: Path
    pins: tuple[str, ...]
    check: str

    @property
    def python(self) -> Path:
        """The venv's interpreter."""
        return self.folder / BIN_DIR / "python"


@dataclass(frozen=True)
class NpmPeer:
    """An npm folder of pinned packages, and the file that proves the install."""

    folder: Path
    pins: tuple[str, ...]
    marker: Path


PYTHON_PEERS = (
    # The only Python implementation of the Tasks extension that installs here (peers.md Part A §0 and
    # §8.9): fastmcp[tasks] 4.1.4, on the official SDK 2.3.0. The transitive pins keep the wire stable.
    PythonPeer(
        ROOT / ".venv-peers",
        ("fastmcp[tasks]==4.1.4", "fastmcp-tasks==4.1.4", "mcp==2.3.0", "mcp-types==2.3.0", "pydocket==0.27.0"),
        "import fastmcp, fastmcp_tasks, mcp_types; print('fastmcp', fastmcp.__version__)",
    ),
    # The official SDK's last 1.x: Server.experimental.enable_tasks() serves 2025-11-25 tasks.
    PythonPeer(
        ROOT / ".venv-peers-mcp1",
        ("mcp==1.30.0",),
        "import mcp.server.experimental.task_context, importlib.metadata as m; print('mcp', m.version('mcp'))",
    ),
    # fastmcp 3's own task engine (Docket, memory backend) on mcp 1.30.0: 2025-11-25 tasks as well.
    PythonPeer(
        ROOT / ".venv-peers-fastmcp3",
        ("fastmcp[tasks]==3.4.11", "mcp==1.30.0"),
        "import fastmcp, docket; print('fastmcp', fastmcp.__version__)",
    ),
)

NPM_PEERS = (
    # The conformance runner; 0.2.x is the first with 2026-07-28 client scenarios (a prerelease: pinned exactly).
    NpmPeer(
        ROOT / ".npm-peers",
        ("@modelcontextprotocol/conformance@0.2.0-alpha.12",),
        ROOT / ".npm-peers" / "node_modules" / ".bin" / "conformance",
    ),
    # The last release line with the 2025-11-25 client scenarios (initialize, sse-retry, ...).
    NpmPeer(
        ROOT / ".npm-peers-016",
        ("@modelcontextprotocol/conformance@0.1.16",),
        ROOT / ".npm-peers-016" / "node_modules" / ".bin" / "conformance",
    ),
    # The reference server on the TypeScript SDK 1.x; this release has the legacy task tool.
    NpmPeer(
        ROOT / ".npm-peers-everything",
        ("@modelcontextprotocol/server-everything@2026.8.31",),
        ROOT
        / ".npm-peers-everything"
        / "node_modules"
        / "@modelcontextprotocol"
        / "server-everything"
        / "package.json",
    ),
)

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


def python_peer(peer: PythonPeer) -> str:
    """Make one peer venv with its pins, unless it is already there."""
    name, pins = peer.folder.name, ", ".join(peer.pins)
    value = stamp_value(peer.pins, f"{sys.version_info.major}.{sys.version_info.minor}")
    if stamped(peer.folder, value) and peer.python.exists():
        return f"{name}: up to date ({pins})"
    say(f"creating {name} with {pins}")
    # A fresh venv each time the pins change: nothing stale stays installed beside them.
    venv.EnvBuilder(with_pip=True, clear=True).create(peer.folder)
    run([str(peer.python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *peer.pins])
    # Prove the install imports before stamping it.
    run([str(peer.python), "-c", peer.check])
    (peer.folder / STAMP_NAME).write_text(value + "\n")
    return f"{name}: installed {pins}"


def node_version() -> tuple[str, str]:
    """The npm command and node's version; InstallError when either is missing."""
    npm = shutil.which("npm")
    node = shutil.which("node")
    if npm is None or node is None:
        raise InstallError("node and npm are needed for the npm peers, and one is not on PATH")
    return npm, subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout.strip()


def npm_peer(peer: NpmPeer) -> str:
    """Install one npm folder's pins, unless they are already there."""
    npm, version = node_version()
    name, pins = peer.folder.name, ", ".join(peer.pins)
    value = stamp_value(peer.pins, version)
    if stamped(peer.folder, value) and peer.marker.exists():
        return f"{name}: up to date ({pins}, node {version})"
    say(f"installing {pins} into {name} (node {version})")
    peer.folder.mkdir(exist_ok=True)
    (peer.folder / STAMP_NAME).unlink(missing_ok=True)
    manifest = {"name": f"mcp-tasks-{name.strip('.')}", "private": True, "description": "written by .ci/peers.py"}
    (peer.folder / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
    run([npm, "install", "--no-audit", "--no-fund", "--save-exact", "--loglevel=error", *peer.pins], cwd=peer.folder)
    if not peer.marker.exists():
        raise InstallError(f"npm finished but {peer.marker} is missing")
    (peer.folder / STAMP_NAME).write_text(value + "\n")
    return f"{name}: installed {pins}"


def status() -> int:
    """Say what is installed; non-zero when something is missing."""
    missing = 0
    for peer in (*PYTHON_PEERS, *NPM_PEERS):
        present = (peer.folder / STAMP_NAME).is_file()
        missing += not present
        say(f"{peer.folder.name}: {'installed' if present else 'missing'}")
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
        done = [python_peer(peer) for peer in PYTHON_PEERS] + [npm_peer(peer) for peer in NPM_PEERS]
    except InstallError as exc:
        print(f"peers: FAILED: {exc}", file=sys.stderr, flush=True)
        return 1
    for line in done:
        say(line)
    say(f"done in {time.monotonic() - start:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
