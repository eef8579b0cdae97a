"""A real PostgreSQL for the tests: a cluster made with ``initdb`` in a temporary folder, listening
on 127.0.0.1 on a free port, removed after. PostgreSQL refuses to run as root (CI runs as root):
then the cluster is made and run as the ``postgres`` system user. Missing binaries fail the tests
with a message saying what to install; nothing is skipped.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["PASSWORD", "Cluster", "find_binary", "running_cluster"]

PASSWORD = "pg-secret-Zq7w1x"
"""The superuser's password: the tests check it never shows in an error."""
SERVER_USER = "postgres"


def find_binary(name: str) -> str:
    """`name` (initdb, pg_ctl) from the PATH, else from Debian's /usr/lib/postgresql/<version>/bin."""
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(Path(p).parts[-3]))
    if versions:
        return versions[-1]
    raise RuntimeError(
        f"the PostgreSQL server's {name} was not found on the PATH or in /usr/lib/postgresql/*/bin: the store "
        "tests need a real PostgreSQL (Debian: apt-get install postgresql; .ci/run installs it)"
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Cluster:
    """One running cluster: `url()` for a database of it, as the superuser or a role of the tests'."""

    def __init__(self, folder: Path, port: int, as_user: list[str]) -> None:
        self.folder = folder
        self.port = port
        self.as_user = as_user

    def url(self, dbname: str = "postgres", user: str = "postgres", password: str = PASSWORD) -> str:
        return f"postgresql://{user}:{password}@127.0.0.1:{self.port}/{dbname}"

    def sql(self, statement: str, dbname: str = "postgres") -> None:
        """Run `statement` as the superuser (autocommit)."""
        import psycopg

        with psycopg.connect(self.url(dbname), autocommit=True) as conn:
            conn.execute(statement.encode())

    def new_database(self) -> str:
        """A fresh database's name."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        self.sql(f"CREATE DATABASE {name}")
        return name

    def _run(self, *argv: str) -> None:
        done = subprocess.run([*self.as_user, *argv], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            log = self.folder / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}\n{tail}")

    def start(self) -> None:
        password_file = self.folder / "password"
        password_file.write_text(PASSWORD + "\n")
        if self.as_user:
            shutil.chown(password_file, SERVER_USER)
        self._run(
            find_binary("initdb"),
            "-D",
            str(self.folder / "data"),
            "-U",
            "postgres",
            "--pwfile",
            str(password_file),
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--no-sync",
        )
        self.resume()

    def resume(self) -> None:
        """Start the server of a cluster made by `start` (again, after `stop`)."""
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.folder} -c fsync=off -c max_connections=200"
        self._run(
            find_binary("pg_ctl"), "-D", str(self.folder / "data"), "-l", str(self.folder / "server.log"),
            "-o", options, "-w", "-t", "60", "start",
        )  # fmt: skip

    def stop(self) -> None:
        self._run(find_binary("pg_ctl"), "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop")


@contextmanager
def running_cluster() -> Iterator[Cluster]:
    """A cluster for the duration of the block (as the ``postgres`` user when this one is root)."""
    as_user: list[str] = []
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        runuser = shutil.which("runuser")
        if runuser is None:
            raise RuntimeError("running as root, PostgreSQL needs another user, and runuser was not found")
        as_user = [runuser, "-u", SERVER_USER, "--"]
    folder = Path(tempfile.mkdtemp(prefix="mcp_tasks-pg-"))
    try:
        if as_user:
            shutil.chown(folder, SERVER_USER)
        cluster = Cluster(folder, _free_port(), as_user)
        cluster.start()
        try:
            yield cluster
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
