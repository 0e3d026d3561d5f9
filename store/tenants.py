"""Tenants: id validation → file path, creating / opening / deleting tenant files, and the
registry of open tenants (per-thread readers, one writer per tenant).

From the event loop, `await tenant.read(fn)` and `await tenant.write(fn)` run `fn(conn)` in a
worker thread on a read connection or inside the one write transaction; code already in a worker
thread uses `with tenant.reading() as conn:` and `with tenant.write() as conn:` directly. Both
hand out the connection of the tenant's backend, and `tenant.store` names that backend's modules
(store/modules.py): code above the store calls `tenant.store.pages.…(conn, …)`, and a PostgreSQL
tenant (store/pg/tenants.py `PgTenant`) is used the same way.
"""

from __future__ import annotations

import abc
import contextlib
import hashlib
import hmac
import os
import re
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, TypeVar, overload

import anyio
import apsw
import msgspec

from store import migrations
from store.config import SiteConfig, decode_stored_config, encode_config
from store.connect import check_is_sqlite, open_connection, storage_error
from store.errors import InvalidTenantId, NotADatabase, StoreError, TenantExists, TenantNotFound
from store.modules import SQLITE, StoreModules

T = TypeVar("T")

TENANT_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")


def validate_tenant_id(tenant_id: object) -> str:
    """Return the id if it matches `^[a-z0-9][a-z0-9-]{0,62}$`, else raise InvalidTenantId."""
    if not isinstance(tenant_id, str) or not TENANT_ID.fullmatch(tenant_id):
        shown = repr(tenant_id)[:40]
        raise InvalidTenantId(
            f"invalid tenant id {shown}: use 1-63 characters a-z, 0-9 and '-', starting with a letter or digit"
        )
    return tenant_id


def tenants_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "tenants"


def tenant_path(data_dir: Path, tenant_id: str) -> Path:
    """The file of a tenant; the id is validated, so the path cannot leave DATA_DIR/tenants."""
    return tenants_dir(data_dir) / f"{validate_tenant_id(tenant_id)}.db"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class TenantInfo(msgspec.Struct):
    id: str
    widget_key: str
    embedder_id: str
    embedder_dim: int
    schema_version: int
    site: str
    created_at: float


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_dev, stat.st_ino


Connection = Any
"""What a tenant's `reading()` / `write()` hand out: an apsw.Connection for a tenant file, a
psycopg connection for a PostgreSQL tenant. Only that tenant's `store` modules take it."""


class Tenant(abc.ABC):
    """An open tenant on some backend: the interface `app/` and `ingest/` use. `TenantFile` (below)
    is a tenant file; `PgTenant` (store/pg/registry.py) a tenant schema in PostgreSQL."""

    store: StoreModules
    """The modules that read and write this tenant's connections."""
    id: str
    widget_key: str
    admin_token_hash: str
    embedder_id: str
    embedder_dim: int
    closed: bool

    @property
    @abc.abstractmethod
    def identity(self) -> str:
        """A name for this tenant unique in the process across data dirs and backends (for
        process-local locks and caches)."""

    def is_current(self) -> bool:
        """Whether this object still names the stored tenant (see `TenantFile`)."""
        return True

    @abc.abstractmethod
    def reading(self) -> AbstractContextManager[Connection]:
        """A read connection for one unit of work (on SQLite, this thread's reader: nothing to
        give back; on PostgreSQL a pooled connection in a transaction, returned at the end)."""

    async def read(self, fn: Callable[[Connection], T]) -> T:
        """`fn(conn)` on a worker thread's read connection, off the event loop."""

        def run() -> T:
            with self.reading() as conn:
                return fn(conn)

        return await anyio.to_thread.run_sync(run)

    @overload
    def write(self) -> AbstractContextManager[Connection]: ...

    @overload
    def write(self, fn: Callable[[Connection], T]) -> Awaitable[T]: ...

    def write(self, fn: Callable[[Connection], T] | None = None):
        """Without `fn` (in a worker thread): `with tenant.write() as conn:` is one write
        transaction. With `fn` (on the event loop): `await tenant.write(fn)` runs `fn(conn)` inside
        that transaction in a worker thread and returns its result; an exception rolls it back.
        One writer per tenant in a process; a nested use from the same thread joins the
        transaction."""
        if fn is None:
            return self._transaction()
        return self._write_in_thread(fn)

    async def _write_in_thread(self, fn: Callable[[Connection], T]) -> T:
        def run() -> T:
            with self._transaction() as conn:
                return fn(conn)

        return await anyio.to_thread.run_sync(run)

    @abc.abstractmethod
    def _transaction(self) -> AbstractContextManager[Connection]: ...

    def bump_generation(self, conn: Connection) -> None:
        """Mark that indexed content changed: caches keyed by the generation go stale."""
        self.store.migrations.bump_generation(conn)

    # These take the connection `read(fn)` / `write(fn)` hand them, or make their own.

    def generation(self, conn: Connection | None = None) -> int:
        if conn is None:
            with self.reading() as conn:
                return self.generation(conn)
        return int(self.store.migrations.generation(conn))

    def config(self, conn: Connection | None = None) -> SiteConfig:
        if conn is None:
            with self.reading() as conn:
                return self.config(conn)
        stored = self.store.migrations.site_config(conn)
        if stored is None:
            raise StoreError(f"tenant {self.id} has no site config")
        return decode_stored_config(stored)

    def set_config(self, config: SiteConfig, conn: Connection | None = None) -> None:
        if conn is None:
            with self.write() as conn:
                self.set_config(config, conn)
            return
        self.store.migrations.set_site_config(conn, encode_config(config).decode(), time.time())
        # Answers depend on the config: every worker's and node's cache, keyed by the generation,
        # goes stale with it (not only the cache of the process that took the change).
        self.bump_generation(conn)

    def check_admin_token(self, token: str) -> bool:
        return bool(self.admin_token_hash) and hmac.compare_digest(hash_token(token), self.admin_token_hash)

    def info(self, conn: Connection | None = None) -> TenantInfo:
        if conn is None:
            with self.reading() as conn:
                return self.info(conn)
        meta = self.store.migrations.read_meta(conn)
        return TenantInfo(
            id=self.id,
            widget_key=meta.get("widget_key", ""),
            embedder_id=meta.get("embedder_id", ""),
            embedder_dim=int(meta.get("embedder_dim", "0") or 0),
            schema_version=int(meta.get("schema_version", "0")),
            site=self.config(conn).site,
            created_at=float(meta.get("created_at", "0")),
        )

    def _load_meta(self, meta: dict[str, str]) -> None:
        self.widget_key = meta.get("widget_key", "")
        self.admin_token_hash = meta.get("admin_token_hash", "")
        self.embedder_id = meta.get("embedder_id", "")
        self.embedder_dim = int(meta.get("embedder_dim", "0") or 0)

    @abc.abstractmethod
    def size_bytes(self) -> int:
        """What the tenant takes on disk (its file; its schema's tables and indexes)."""

    def checkpoint(self) -> None:  # noqa: B027 - nothing to do on most backends
        """Make the stored tenant complete on its own (SQLite folds its WAL in; else nothing)."""

    @abc.abstractmethod
    def close(self) -> None: ...


class TenantFile(Tenant):
    """An open tenant file. Reads use a connection per thread; writes go through one lock."""

    store = SQLITE

    def __init__(self, tenant_id: str, path: Path) -> None:
        self.id = tenant_id
        self.path = path
        self._local = threading.local()
        self._connections: list[apsw.Connection] = []
        self._connections_lock = threading.Lock()
        self._write_lock = threading.RLock()
        self._writer: apsw.Connection | None = None
        self.closed = False
        self.file_id = _file_id(path)
        self._load_meta(migrations.read_meta(self.reader()))

    @property
    def identity(self) -> str:
        return str(self.path)

    def is_current(self) -> bool:
        """Whether the tenant's path still names the file this object has open (not deleted,
        not replaced by a restore or a copy)."""
        return _file_id(self.path) == self.file_id

    def _connect(self) -> apsw.Connection:
        if self.closed:
            raise StoreError(f"tenant {self.id} is closed")
        conn = open_connection(self.path)
        with self._connections_lock:
            self._connections.append(conn)
        return conn

    def reader(self) -> apsw.Connection:
        """This thread's read connection (WAL: reads never block the writer or each other)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn

    @contextlib.contextmanager
    def reading(self) -> Iterator[apsw.Connection]:
        yield self.reader()

    async def read(self, fn: Callable[[apsw.Connection], T]) -> T:
        # The thread's reader needs no unit of work around it: one call less on the hot path.
        return await anyio.to_thread.run_sync(lambda: fn(self.reader()))

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[apsw.Connection]:
        """One write transaction (BEGIN IMMEDIATE); one writer per tenant in this process."""
        with self._write_lock:
            if self._writer is None:
                self._writer = self._connect()
            conn = self._writer
            if conn.in_transaction:  # nested use from the same thread: join the transaction
                yield conn
                return
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                    conn.execute("COMMIT")
                except BaseException:
                    # A failed COMMIT (a full disk) leaves the transaction open, and every later
                    # write would join it and never commit; SQLite may also have rolled back
                    # already (SQLITE_FULL), so a plain ROLLBACK would mask the error.
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            except apsw.Error as exc:
                if (failure := storage_error(exc, self.path)) is not None:
                    raise failure from None
                raise

    def size_bytes(self) -> int:
        return self.path.stat().st_size

    def checkpoint(self) -> None:
        """Fold the WAL into the main file so the .db alone is a complete copy."""
        with self._write_lock:
            conn = self._writer or self._connect()
            self._writer = conn
            conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)

    def close(self) -> None:
        if self.closed:
            return
        with contextlib.suppress(apsw.Error, StoreError):
            self.checkpoint()
        self.closed = True
        with self._connections_lock:
            for conn in self._connections:
                with contextlib.suppress(apsw.Error):
                    conn.close()
            self._connections.clear()
        self._writer = None


def _open_checked(tenant_id: str, path: Path, *, embedder_id: str | None, dim: int | None) -> TenantFile:
    if not path.exists():
        raise TenantNotFound(f"tenant {tenant_id} does not exist")
    check_is_sqlite(path)
    # Look before touching: a read-only probe, so a foreign SQLite file is never switched to WAL.
    probe = open_connection(path, readonly=True)
    try:
        meta = migrations.read_meta(probe)
    finally:
        probe.close()
    if "schema_version" not in meta or "embedder_id" not in meta:
        raise NotADatabase(f"{path.name} is an SQLite file but not a frontdesk tenant database")
    conn = open_connection(path)
    try:
        version = migrations.check_version(conn, tenant_id)
        if embedder_id is not None and dim is not None:
            migrations.check_model(conn, tenant_id, embedder_id, dim)
        if version < migrations.SCHEMA_VERSION:
            # Upgrade: keep the old file beside the new one before touching it.
            backup = path.with_name(f"{path.stem}.schema{version}.{int(time.time())}.bak.db")
            with apsw.Connection(str(backup)) as target, target.backup("main", conn, "main") as job:
                job.step(-1)
            migrations.migrate(conn, int(meta["embedder_dim"]))
    finally:
        conn.close()
    return TenantFile(tenant_id, path)


class TenantRegistry:
    """The tenants under one data dir; opens each file once and shares it between requests."""

    backend = "sqlite"

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self._open: dict[str, TenantFile] = {}
        self._lock = threading.Lock()
        self._keys: dict[str, str] = {}
        self._keys_loaded_at = 0.0

    def path(self, tenant_id: str) -> Path:
        return tenant_path(self.data_dir, tenant_id)

    def exists(self, tenant_id: str) -> bool:
        return self.path(tenant_id).exists()

    def ids(self) -> list[str]:
        folder = tenants_dir(self.data_dir)
        if not folder.exists():
            return []
        return sorted(p.stem for p in folder.glob("*.db") if TENANT_ID.fullmatch(p.stem))

    def get(self, tenant_id: str, *, embedder_id: str | None = None, dim: int | None = None) -> TenantFile:
        path = self.path(tenant_id)
        with self._lock:
            tenant = self._open.get(tenant_id)
            if tenant is not None and not tenant.closed and not tenant.is_current():
                # Deleted or replaced under a running server: an open handle would go on serving
                # the unlinked file (found by tests/chaos/faults.py). Requests already running
                # finish on it; this one opens what the path names now, or gets TenantNotFound.
                del self._open[tenant_id]
                self._keys = {k: v for k, v in self._keys.items() if v != tenant_id}
                tenant = None
            if tenant is not None and not tenant.closed:
                if embedder_id is not None and dim is not None:
                    migrations.check_model(tenant.reader(), tenant_id, embedder_id, dim)
                return tenant
            tenant = _open_checked(tenant_id, path, embedder_id=embedder_id, dim=dim)
            self._open[tenant_id] = tenant
            self._keys[tenant.widget_key] = tenant_id
            return tenant

    def create(self, config: SiteConfig, tenant_id: str, *, embedder_id: str, dim: int, fingerprint: str = "") -> tuple[TenantFile, str]:
        """Create a tenant file atomically; returns the tenant and its admin token (shown once)."""
        path = self.path(tenant_id)
        if path.exists():
            raise TenantExists(f"tenant {tenant_id} already exists")
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{tenant_id}.{os.getpid()}.creating")
        admin_token = "fdt_" + secrets.token_urlsafe(24)
        widget_key = "pk_" + secrets.token_urlsafe(16)
        try:
            conn = open_connection(partial, create=True)
            migrations.migrate(conn, dim)
            with conn:
                migrations.set_meta(
                    conn,
                    tenant_id=tenant_id,
                    embedder_id=embedder_id,
                    embedder_dim=dim,
                    embedder_fingerprint=fingerprint or embedder_id,
                    widget_key=widget_key,
                    admin_token_hash=hash_token(admin_token),
                    created_at=time.time(),
                    generation=0,
                )
                conn.execute(
                    "INSERT INTO site_config(id, config, updated_at) VALUES (1, ?, ?)",
                    (encode_config(config).decode(), time.time()),
                )
            conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
            conn.pragma("journal_mode", "delete")  # leave no -wal beside the partial file
            conn.close()
            try:
                os.link(partial, path)  # fails if another creator won the race
            except FileExistsError:
                raise TenantExists(f"tenant {tenant_id} already exists") from None
        except apsw.Error as exc:  # a full or read-only disk: say so, leave nothing behind
            if (failure := storage_error(exc, path)) is not None:
                raise failure from None
            raise
        finally:
            for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
                leftover.unlink(missing_ok=True)
        return self.get(tenant_id), admin_token

    def delete(self, tenant_id: str) -> None:
        path = self.path(tenant_id)
        if not path.exists():
            raise TenantNotFound(f"tenant {tenant_id} does not exist")
        self.close(tenant_id)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        with self._lock:
            self._keys = {k: v for k, v in self._keys.items() if v != tenant_id}

    def close(self, tenant_id: str) -> None:
        with self._lock:
            tenant = self._open.pop(tenant_id, None)
        if tenant is not None:
            tenant.close()

    def close_all(self) -> None:
        with self._lock:
            tenants = list(self._open.values())
            self._open.clear()
        for tenant in tenants:
            tenant.close()

    def tenant_for_key(self, widget_key: str) -> str | None:
        """The one tenant a public widget key belongs to (None if no tenant has it)."""
        with self._lock:
            found = self._keys.get(widget_key)
            stale = time.monotonic() - self._keys_loaded_at > 5.0
        if found is not None or not stale:
            return found
        keys: dict[str, str] = {}
        for tenant_id in self.ids():
            with contextlib.suppress(StoreError, apsw.Error):
                conn = open_connection(self.path(tenant_id), readonly=True)
                try:
                    key = migrations.read_meta(conn).get("widget_key")
                finally:
                    conn.close()
                if key:
                    keys[key] = tenant_id
        with self._lock:
            self._keys.update(keys)
            self._keys_loaded_at = time.monotonic()
            return self._keys.get(widget_key)


class Registry(Protocol):
    """The tenants of one backend, as `app/` and `ingest/` use them: `TenantRegistry` (the files
    under a data dir) or `PgTenantRegistry` (store/pg/registry.py: the schemas of a database)."""

    backend: str

    def exists(self, tenant_id: str) -> bool: ...

    def ids(self) -> list[str]: ...

    def get(self, tenant_id: str, *, embedder_id: str | None = None, dim: int | None = None) -> Tenant: ...

    def create(self, config: SiteConfig, tenant_id: str, *, embedder_id: str, dim: int,
               fingerprint: str = "") -> tuple[Tenant, str]: ...

    def delete(self, tenant_id: str) -> None: ...

    def close(self, tenant_id: str) -> None: ...

    def close_all(self) -> None: ...

    def tenant_for_key(self, widget_key: str) -> str | None: ...
