"""PostgreSQL tenants behind the interface `app/` and `ingest/` use (store/tenants.py `Tenant`,
`Registry`): `PgTenant` is one tenant schema, `PgTenantRegistry` the tenants of one database,
both over `PgTenants` (store/pg/tenants.py) and its pool.

A unit of work borrows a pooled connection for one transaction as the tenant's role and gives it
back at its end (`reading()`, `write()`), so a process holds at most the pool's size of
connections whatever the number of tenants or requests. As with a tenant file, writes of one
tenant are serialised inside a process (one writer; a nested write from the same thread joins the
open transaction); across nodes PostgreSQL's row locks and the crawl lease (store/pg/leases.py)
keep writers apart."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

from psycopg_pool import ConnectionPool

from store.config import SiteConfig
from store.errors import StoreError, TenantNotFound
from store.pg import migrations
from store.pg.connect import PgConnection
from store.pg.modules import POSTGRES
from store.pg.tenants import PgTenants
from store.tenants import Connection, Tenant, validate_tenant_id

#: How long the registry trusts that an open tenant still exists (another node may delete it).
RECHECK_S = 5.0


class ScopedConnection:
    """A tenant's pooled connection for one unit of work, unusable once the unit ends.

    After `reading()` / `write()` the connection goes back to the pool and may serve another
    tenant's transaction next: a reference kept by mistake (a closure, a generator not started
    yet) must not run a statement there. Every attribute is reached through this object, which
    refuses once its unit of work is over. (A cursor taken inside the unit is psycopg's own:
    functions that return lazily, such as `curated_vectors`, are consumed inside it.)"""

    __slots__ = ("_conn", "_tenant_id")

    def __init__(self, conn: PgConnection, tenant_id: str) -> None:
        self._conn: PgConnection | None = conn
        self._tenant_id = tenant_id

    def __getattr__(self, name: str):
        conn = self._conn
        if conn is None:
            raise StoreError(f"a connection of tenant {self._tenant_id} was used after its unit of work ended")
        return getattr(conn, name)

    def end(self) -> None:
        self._conn = None


class PgTenant(Tenant):
    """One tenant schema, opened (checked and migrated) once per process."""

    store = POSTGRES

    def __init__(self, tenants: PgTenants, tenant_id: str) -> None:
        self.id = tenant_id
        self._tenants = tenants
        self._write_lock = threading.RLock()
        self._local = threading.local()
        self.closed = False
        self.checked_at = time.monotonic()
        self._load_meta(tenants.meta(tenant_id))

    @property
    def identity(self) -> str:
        return f"postgres:{self.id}"

    @contextlib.contextmanager
    def reading(self) -> Iterator[Connection]:
        if self.closed:
            raise StoreError(f"tenant {self.id} is closed")
        writing = getattr(self._local, "conn", None)
        if writing is not None:  # inside this thread's write: read what it wrote
            yield writing
            return
        with self._tenants.read(self.id) as conn:
            scoped = ScopedConnection(conn, self.id)
            try:
                yield scoped
            finally:
                scoped.end()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Connection]:
        if self.closed:
            raise StoreError(f"tenant {self.id} is closed")
        with self._write_lock:
            joined = getattr(self._local, "conn", None)
            if joined is not None:
                yield joined
                return
            with self._tenants.write(self.id) as conn:
                scoped = self._local.conn = ScopedConnection(conn, self.id)
                try:
                    yield scoped
                finally:
                    self._local.conn = None
                    scoped.end()

    def size_bytes(self) -> int:
        with self.reading() as conn:
            row = conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'm')"
            ).fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        self.closed = True


class PgTenantRegistry:
    """The tenants of one PostgreSQL database (FRONTDESK_DATABASE_URL), sharing one pool."""

    backend = "postgres"

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool
        self.tenants = PgTenants(pool)
        self._open: dict[str, PgTenant] = {}
        self._lock = threading.Lock()
        self._keys: dict[str, str] = {}
        self._keys_loaded_at = 0.0

    def exists(self, tenant_id: str) -> bool:
        return self.tenants.exists(validate_tenant_id(tenant_id))

    def ids(self) -> list[str]:
        return self.tenants.ids()

    def get(self, tenant_id: str, *, embedder_id: str | None = None, dim: int | None = None) -> PgTenant:
        validate_tenant_id(tenant_id)
        with self._lock:
            tenant = self._open.get(tenant_id)
        if tenant is not None and time.monotonic() - tenant.checked_at > RECHECK_S:
            # Deleted (or deleted and made again) by another node: a new object reads its keys anew.
            if not self.tenants.exists(tenant_id):
                self._forget(tenant_id)
                raise TenantNotFound(f"tenant {tenant_id} does not exist")
            fresh = PgTenant(self.tenants, tenant_id)
            if fresh.widget_key != tenant.widget_key or fresh.admin_token_hash != tenant.admin_token_hash:
                self._forget(tenant_id)
                tenant = None
            else:
                tenant.checked_at = fresh.checked_at
        if tenant is None:
            self.tenants.open(tenant_id)
            tenant = PgTenant(self.tenants, tenant_id)
            with self._lock:
                tenant = self._open.setdefault(tenant_id, tenant)
                self._keys[tenant.widget_key] = tenant_id
        if embedder_id is not None and dim is not None:
            with tenant.reading() as conn:
                migrations.check_model(conn, tenant_id, embedder_id, dim)
        return tenant

    def create(self, config: SiteConfig, tenant_id: str, *, embedder_id: str, dim: int,
               fingerprint: str = "") -> tuple[PgTenant, str]:
        admin_token = self.tenants.create(config, tenant_id, embedder_id=embedder_id, dim=dim,
                                          fingerprint=fingerprint)
        return self.get(tenant_id), admin_token

    def delete(self, tenant_id: str) -> None:
        self.tenants.delete(validate_tenant_id(tenant_id))
        self._forget(tenant_id)

    def _forget(self, tenant_id: str) -> None:
        with self._lock:
            tenant = self._open.pop(tenant_id, None)
            self._keys = {k: v for k, v in self._keys.items() if v != tenant_id}
        if tenant is not None:
            tenant.close()

    def close(self, tenant_id: str) -> None:
        self._forget(tenant_id)

    def close_all(self) -> None:
        with self._lock:
            tenants = list(self._open.values())
            self._open.clear()
        for tenant in tenants:
            tenant.close()

    def tenant_for_key(self, widget_key: str) -> str | None:
        """The one tenant a public widget key belongs to (None if no tenant has it); keys of
        tenants made on another node are found by a reload at most every few seconds."""
        with self._lock:
            found = self._keys.get(widget_key)
            stale = time.monotonic() - self._keys_loaded_at > RECHECK_S
        if found is not None or not stale:
            return found
        keys: dict[str, str] = {}
        for tenant_id in self.ids():
            with contextlib.suppress(StoreError):
                key = self.tenants.meta(tenant_id).get("widget_key")
                if key:
                    keys[key] = tenant_id
        with self._lock:
            self._keys = keys
            self._keys_loaded_at = time.monotonic()
            return self._keys.get(widget_key)
