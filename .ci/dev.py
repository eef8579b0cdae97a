"""Bootstrap for a fresh clone that has only Python 3: makes .venv, installs, and runs.

python3 .ci/dev.py demo            the demo: a task end to end on the embedded reference server (installs
                                   the runtime alone: requests, attrs, cattrs)
python3 .ci/dev.py test [ARGS]     the whole test suite, in parallel (ARGS go to pytest; the site is built
                                   first when it changed, unless --no-docs; --no-peers skips the peers' install)
python3 .ci/dev.py lint            ruff and mypy --strict
python3 .ci/dev.py floors [ARGS]   the tests of what the dependency floors can break, in .venv-floors at
                                   exactly the floors (.ci/floors.txt)
python3 .ci/dev.py docs            the documentation site, built strictly into build/site (tools in .venv-docs)
python3 .ci/dev.py setup           everything the others install, at once (CI's first stage)

MCP_TASKS_TEST_WORKERS sets the suite's parallel workers (default 4; 0 runs it in one process).
"""

from __future__ import annotations

import configparser
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")


def run(*argv: str | os.PathLike[str], **kwargs: object) -> None:
    """Run a command in the project root, echoing it; a failure raises."""
    print("+", " ".join(str(a) for a in argv), flush=True)
    subprocess.run([str(a) for a in argv], check=True, cwd=ROOT, **kwargs)  # type: ignore[call-overload]


def ensure_venv(*, tests: bool = True) -> Path:
    """Create .venv and install what is asked, once per setup.cfg and pyproject.toml version: the
    project with its test extra, or (`tests=False`, the demo's) the runtime dependencies alone, as
    wheels with no build step (the demo runs the package from this tree). The test extra serves both.
    """
    stamp_value = hashlib.sha256((ROOT / "setup.cfg").read_bytes() + (ROOT / "pyproject.toml").read_bytes()).hexdigest()
    full, runtime = VENV / ".installed", VENV / ".installed-runtime"
    wanted = [full] if tests else [full, runtime]
    if any(stamp.exists() and stamp.read_text() == stamp_value for stamp in wanted):
        return BIN / "python"
    if not (BIN / "python").exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    python = BIN / "python"
    quiet = ("--quiet", "--disable-pip-version-check")
    if tests:
        run(python, "-m", "pip", "install", *quiet, "-e", ".[test]")
    else:
        run(python, "-m", "pip", "install", *quiet, "--only-binary", ":all:", *requirements("install_requires"))
    (full if tests else runtime).write_text(stamp_value)
    return python


def requirements(key: str, extra: str | None = None) -> list[str]:
    """The requirements setup.cfg lists under [options] `key`, or under an extra of extras_require."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    value = config["options.extras_require"][extra] if extra else config["options"][key]
    return [line.strip() for line in value.splitlines() if line.strip() and not line.strip().startswith("#")]


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
    tests = [req for req in requirements("extras_require", "test") if not req.startswith(LINT_TOOLS)]
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
    tools = requirements("extras_require", "docs")
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
    # Debian package: what shows it is there (the site's browser test; the store tests' cluster;
    # the Celery tests' broker).
    "chromium": lambda: bool(shutil.which("chromium") or os.path.exists("/usr/bin/chromium")),
    "postgresql": lambda: bool(shutil.which("initdb") or glob.glob("/usr/lib/postgresql/*/bin/initdb")),
    "redis-server": lambda: bool(shutil.which("redis-server")),
}


def upgrades_of(simulation: str) -> list[str]:
    """The installed packages an `apt-get -s install` would upgrade: its `Inst NAME [OLD] (NEW …)` lines
    (a package new to the machine has no `[OLD]`).
    """
    lines = [line.split() for line in simulation.splitlines() if line.startswith("Inst ")]
    return [words[1] for words in lines if len(words) > 2 and words[2].startswith("[")]


def consent_to_upgrade(upgrades: list[str]) -> bool:
    """Whether apt may upgrade these installed packages: asked on a terminal, yes under CI=true, else no."""
    if os.environ.get("CI") == "true":
        print(f"note: installing also upgrades {', '.join(upgrades)} (CI=true)", flush=True)
        return True
    if sys.stdin.isatty():
        answer = input(f"apt-get would also upgrade these installed packages: {', '.join(upgrades)}. Go ahead? [y/N] ")
        return answer.strip().lower() in ("y", "yes")
    return False


def ensure_system_packages() -> None:
    """Install the system packages the tests use (Chromium, the PostgreSQL server, Redis) where they are
    missing and this is a Debian machine run as root, as CI is; elsewhere say what is missing (the
    tests that need it then fail saying so). Only missing packages are installed, and an installed
    package is upgraded only with consent (see `consent_to_upgrade`): apt simulates first.
    """
    missing = [name for name, present in SYSTEM_PACKAGES.items() if not present()]
    if not missing:
        return
    if not (shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0):
        print(f"note: the tests need {' and '.join(missing)} (system packages); install them", file=sys.stderr)
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    print(f"installing the system packages the tests need: {', '.join(missing)}", flush=True)
    run("apt-get", "update", "-qq", env=env)
    simulation = subprocess.run(
        ["apt-get", "-s", "install", "--no-upgrade", *missing], capture_output=True, text=True, env=env, check=True
    ).stdout
    upgrades = upgrades_of(simulation)
    if upgrades and not consent_to_upgrade(upgrades):
        raise SystemExit(
            f"refused: installing {', '.join(missing)} would upgrade installed packages ({', '.join(upgrades)});"
            " install them yourself, or run on a terminal to be asked"
        )
    run("apt-get", "install", "-y", "-qq", "--no-upgrade", *missing, env=env)


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


FLOORS_TESTS = (
    # What the declared floors can break, and nothing else (the whole suite runs at the newest
    # versions): requests and urllib3 carry every HTTP byte (the transports, OAuth, the client over
    # HTTP, the hostile servers, the fuzzed decoders); attrs and cattrs define and convert every value
    # type (Status, the wire, errors, task refs in the stores, options, the session's agreement).
    "tests/transports",
    "tests/oauth",
    "tests/session",
    "tests/errors",
    "tests/test_status.py",
    "tests/test_wire.py",
    "tests/test_client.py",
    "tests/test_input.py",
    "tests/test_misbehaving.py",
    "tests/test_fuzz.py",
    "tests/tasks/test_tasks.py",
    "tests/store/test_store.py",
)

WORKERS = os.environ.get("MCP_TASKS_TEST_WORKERS", "4")
"""The suite's parallel workers: its tests mostly wait on sockets and processes, so more than the cores."""

SETUP_JOBS = ("venv", "system", "peers", "docs", "floors-venv")


def parallel(args: list[str]) -> list[str]:
    """The arguments for pytest with the parallel workers added, unless the caller chose (-n, -p no:xdist).
    Tests marked with one ``xdist_group`` run on one worker (the Celery tests share their Redis and
    workers that way); the others are spread as before.
    """
    if WORKERS == "0" or any(a.startswith("-n") or a == "no:xdist" for a in args):
        return args
    return ["-n", WORKERS, "--dist", "loadgroup", *args]


def prepare(job: str) -> None:
    """One of the setup jobs (run in parallel by `setup`)."""
    if job == "venv":
        ensure_venv()
    elif job == "system":
        ensure_system_packages()
    elif job == "peers":
        run(sys.executable, ROOT / ".ci" / "peers.py", "install")
    elif job == "docs":
        build_docs(always=True)
    elif job == "floors-venv":
        ensure_floors_venv()


def setup() -> int:
    """Every setup job at once, each in its own process; print each one's output and time as it ends."""
    started = time.monotonic()
    jobs = {
        job: subprocess.Popen(
            [sys.executable, __file__, "_prepare", job],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL if os.environ.get("CI") == "true" else None,
            text=True,
        )
        for job in SETUP_JOBS
    }
    failed = []
    for job, process in jobs.items():
        output, _ = process.communicate()
        print(f"--- setup {job}: {time.monotonic() - started:.0f}s, exit {process.returncode}\n{output}", flush=True)
        if process.returncode:
            failed.append(job)
    if failed:
        print(f"setup failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def announce_test() -> None:
    """Say what `test` installs on a fresh clone, and how long the run takes."""
    if (VENV / ".installed").exists():
        return
    print(
        "dev.py test: installs the project with its test extra into .venv (about 270 MB), the interop peers"
        " (.venv-peers*, .npm-peers*: about 500 MB) and the site's tools (.venv-docs: about 200 MB), and"
        " Chromium and the PostgreSQL server where they are missing; the first run takes about 8 minutes on"
        " 2 cores, later ones about 5",
        flush=True,
    )


def main(argv: list[str]) -> int:
    """Dispatch a command; returns the exit code."""
    command = argv[0] if argv else "test"
    rest = argv[1:]
    try:
        if command == "_prepare":
            prepare(rest[0])
            return 0
        if command == "setup":
            return setup()
        if command == "floors":
            ensure_system_packages()
            run(ensure_floors_venv(), "-m", "pytest", "-m", "not interop", "-q", *parallel([*FLOORS_TESTS, *rest]))
            return 0
        if command == "docs":
            build_docs(always=True)
            return 0
        if command == "demo":
            run(ensure_venv(tests=False), "-m", "mcp_tasks", "demo", *rest)
        elif command == "test":
            announce_test()
            python = ensure_venv()
            ensure_system_packages()
            peers = ROOT / ".ci" / "peers.py"
            if peers.exists() and "--no-peers" not in rest:
                run(python, peers, "install")
            if "--no-docs" not in rest:
                build_docs(always=False)  # the site's browser test reads the built site
            rest = [a for a in rest if a not in ("--no-peers", "--no-docs")]
            run(python, "-m", "pytest", *parallel(rest))
        elif command == "lint":
            python = ensure_venv()
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
