"""A throwaway PostgreSQL server for the store tests.

``PgServer.start()`` runs ``initdb`` into a fresh temporary directory and
starts ``postgres`` with ``pg_ctl``, listening **only** on a Unix socket in
that same directory (``listen_addresses=''``: no TCP port is opened, so
parallel test runs never collide).  The server is tuned for throwaway data
(``fsync=off``, no full-page writes), trusts local connections, and has one
superuser, ``postgres``.  ``create_database()`` hands out a new empty
database and returns its SQLAlchemy URL, e.g.::

    postgresql+psycopg://postgres@/t3?host=/tmp/slurmlite-pg-ab12cd

``stop()`` is ``pg_ctl stop -m immediate`` (the data is thrown away, so no
clean shutdown is needed) followed by removing the directory.

PostgreSQL refuses to run as root.  As root the server runs as the
``postgres`` system user when it exists, else as a system user created here
with ``useradd`` and removed by ``stop()``; the directory is given to that
user.  (Root can still connect: the socket directory's permissions do not
stop it.)

The binaries are looked for in ``pg_config --bindir``, then the newest
``/usr/lib/postgresql/*/bin`` (Debian/Ubuntu), then ``$PATH``;
``find_bindir()`` returns None when there are none, and the fixtures skip
(or fail, under ``SLURMLITE_REQUIRE_PG=1``, which ``.ci/run`` sets).
"""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

CREATED_USER = "slurmlite-pgtest"
SETTINGS = {
    "listen_addresses": "''",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "200",
}


def find_bindir() -> Path | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``, or None."""
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip():
            candidates.append(Path(out.stdout.strip()))
    debian = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        reverse=True,
    )
    candidates += debian
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(Path(initdb).resolve().parent)
    for d in candidates:
        if all((d / exe).is_file() for exe in ("initdb", "pg_ctl", "postgres")):
            return d
    return None


@dataclass
class PgServer:
    bindir: Path
    root: Path  # data directory, socket and log all live under it
    run_as: pwd.struct_passwd | None  # None: run as ourselves (not root)
    created_user: bool = False
    _admin: psycopg.Connection | None = None
    _names: itertools.count = field(default_factory=lambda: itertools.count(1))

    # ------------------------------------------------------------ life

    @classmethod
    def start(cls, bindir: Path) -> PgServer:
        run_as, created = _server_user()
        root = Path(tempfile.mkdtemp(prefix="slurmlite-pg-"))
        server = cls(bindir=bindir, root=root, run_as=run_as, created_user=created)
        try:
            if run_as is not None:
                os.chown(root, run_as.pw_uid, run_as.pw_gid)
            server._run(
                "initdb", "-D", str(root / "data"), "-U", "postgres", "--auth=trust",
                "-E", "UTF8", "--locale=C", "--no-sync",
            )  # fmt: skip
            with open(root / "data" / "postgresql.conf", "a") as conf:
                for key, value in {**SETTINGS, "unix_socket_directories": f"'{root}'"}.items():
                    conf.write(f"{key} = {value}\n")
            server._run(
                "pg_ctl", "-D", str(root / "data"), "-l", str(root / "server.log"), "-w", "-t", "60", "start"
            )  # fmt: skip
            server._admin = psycopg.connect(
                host=str(root), dbname="postgres", user="postgres", autocommit=True
            )
        except BaseException:
            server.stop()
            raise
        return server

    def stop(self) -> None:
        """Stop the server at once and remove every trace of it; safe to call twice."""
        if self._admin is not None:
            self._admin.close()
            self._admin = None
        if (self.root / "data" / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)
        if self.created_user:
            subprocess.run(["userdel", CREATED_USER], capture_output=True)
            self.created_user = False

    # -------------------------------------------------------- databases

    def url(self, dbname: str) -> str:
        return f"postgresql+psycopg://postgres@/{dbname}?host={self.root}"

    def create_database(self) -> tuple[str, str]:
        """A new empty database: (name, SQLAlchemy URL)."""
        assert self._admin is not None, "server not started"
        name = f"t{next(self._names)}"
        self._admin.execute(f'CREATE DATABASE "{name}"')
        return name, self.url(name)

    def drop_database(self, name: str) -> None:
        """Drop it even if a test left connections open."""
        if self._admin is not None:
            self._admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    # ---------------------------------------------------------- helpers

    def _run(self, exe: str, *args: str) -> None:
        kwargs: dict = {}
        if self.run_as is not None:
            kwargs = {"user": self.run_as.pw_uid, "group": self.run_as.pw_gid, "extra_groups": []}
        done = subprocess.run(
            [str(self.bindir / exe), *args],
            capture_output=True,
            text=True,
            cwd=self.root,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"},
            timeout=120,
            **kwargs,
        )
        if done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(
                f"{exe} failed ({done.returncode}): {done.stdout}{done.stderr}\n{tail}"
            )


def _server_user() -> tuple[pwd.struct_passwd | None, bool]:
    """Who runs the server: ourselves, or (as root) a system user; and whether we made it."""
    if os.geteuid() != 0:
        return None, False
    for name in ("postgres", CREATED_USER):
        try:
            return pwd.getpwnam(name), False
        except KeyError:
            pass
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", CREATED_USER],
        check=True,
        capture_output=True,
    )
    return pwd.getpwnam(CREATED_USER), True


def server_for_tests() -> Iterator[PgServer]:
    """A throwaway server for a fixture's lifetime (``yield from`` it).

    Without the binaries the test is skipped, or failed under
    ``SLURMLITE_REQUIRE_PG=1`` (CI); the server is stopped however the
    fixture's tests end.
    """
    import pytest  # only the test fixtures need it; the benchmarks import this module too

    bindir = find_bindir()
    if bindir is None:
        why = (
            "PostgreSQL server binaries (initdb, pg_ctl) not found; install the postgresql package"
        )
        if os.environ.get("SLURMLITE_REQUIRE_PG") == "1":
            pytest.fail(why + " (SLURMLITE_REQUIRE_PG=1)")
        pytest.skip(why)
    server = PgServer.start(bindir)
    try:
        yield server
    finally:
        server.stop()
