"""The tenants in one PostgreSQL database: create (schema + role + migrations + meta), open,
list, delete, and a tenant's read and write transactions."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from psycopg import sql
from psycopg_pool import ConnectionPool

from store.config import SiteConfig, decode_stored_config, encode_config
from store.errors import TenantExists, TenantNotFound
from store.pg import leases, migrations
from store.pg.connect import PgConnection, admin, as_tenant, role_name, schema_name
from store.tenants import hash_token, validate_tenant_id


class PgTenants:
    """Tenants of one database, reached through one pool (FRONTDESK_DATABASE_URL)."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool
        self._migrated: set[str] = set()

    def exists(self, tenant_id: str) -> bool:
        with admin(self.pool) as conn:
            row = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s",
                               (schema_name(tenant_id),)).fetchone()
        return row is not None

    def ids(self) -> list[str]:
        """The tenants whose schema has a meta table naming them. Each meta is read as the
        schema's owner (the login role itself may not read it: see `create`); schemas owned by a
        role the login role cannot become are not frontdesk's and are skipped."""
        found = []
        with admin(self.pool) as conn:
            # 'SET' (16+): may become the owner; a membership with ADMIN OPTION alone may not.
            can_become = "SET" if conn.info.server_version >= 160000 else "MEMBER"
            rows = conn.execute(
                "SELECT n.nspname, r.rolname FROM pg_namespace n JOIN pg_roles r ON r.oid = n.nspowner "
                "JOIN pg_class c ON c.relnamespace = n.oid "
                "WHERE starts_with(n.nspname, 't_') AND c.relname = 'meta' "
                "AND pg_has_role(current_user, n.nspowner, %s) ORDER BY 1", (can_become,)
            ).fetchall()
            for schema, owner in rows:
                conn.execute("SELECT set_config('role', %s, true)", (owner,))
                row = conn.execute(
                    sql.SQL("SELECT value FROM {}.meta WHERE key = 'tenant_id'").format(sql.Identifier(schema))
                ).fetchone()
                conn.execute("SELECT set_config('role', 'none', true)")
                if row is not None:
                    found.append(str(row[0]))
        return sorted(found)

    def create(self, config: SiteConfig, tenant_id: str, *, embedder_id: str, dim: int,
               fingerprint: str = "", meta: dict[str, str] | None = None,
               fill: Callable[[PgConnection], None] | None = None) -> str:
        """Create a tenant: its role (NOLOGIN), its schema owned by that role, the migrations, meta
        and site config, in one transaction.

        The role is granted to the login role WITH INHERIT FALSE, SET TRUE (PostgreSQL 16+): the
        login role may become the tenant (`SET ROLE`, what every unit of work does) but does not
        hold its privileges otherwise, so outside a tenant's unit of work — and after a `RESET
        ROLE` inside one — a non-superuser login role reads no tenant's tables. (A superuser reads
        everything whatever the grants.) A login role with CREATEROLE gets ADMIN OPTION on the
        roles it creates (PostgreSQL 16+), which is what lets it grant this and drop the role later.

        Returns the admin token (shown once). `meta` (an import) overrides the generated keys;
        `fill` (an import) writes the tenant's rows in that same transaction, as its role, so a
        failed import leaves no tenant behind."""
        validate_tenant_id(tenant_id)
        schema, role = sql.Identifier(schema_name(tenant_id)), sql.Identifier(role_name(tenant_id))
        admin_token = "fdt_" + secrets.token_urlsafe(24)
        with admin(self.pool) as conn:
            # Serialise creators of one id; the schema check below is then race-free.
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('frontdesk:create:' || %s))", (tenant_id,))
            if conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s",
                            (schema_name(tenant_id),)).fetchone():
                raise TenantExists(f"tenant {tenant_id} already exists")
            has_role = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role_name(tenant_id),)).fetchone()
            if not has_role:  # left by a tenant deleted while its role could not be dropped
                conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(role))
            if conn.info.server_version >= 160000:
                conn.execute(sql.SQL("GRANT {} TO current_user WITH INHERIT FALSE, SET TRUE").format(role))
            else:  # no grant options before 16: membership inherits (untested here, PostgreSQL 18)
                conn.execute(sql.SQL("GRANT {} TO current_user").format(role))
            conn.execute(sql.SQL("CREATE SCHEMA {} AUTHORIZATION {}").format(schema, role))
            conn.execute(sql.SQL("SET LOCAL ROLE {}").format(role))
            conn.execute(sql.SQL("SET LOCAL search_path = {}, public").format(schema))
            migrations.migrate(conn, tenant_id, dim)
            values: dict[str, object] = {
                "tenant_id": tenant_id, "embedder_id": embedder_id, "embedder_dim": dim,
                "embedder_fingerprint": fingerprint or embedder_id,
                "widget_key": "pk_" + secrets.token_urlsafe(16),
                "admin_token_hash": hash_token(admin_token), "created_at": time.time(), "generation": 0,
            }
            values.update({k: v for k, v in (meta or {}).items() if k != "schema_version"})
            migrations.set_meta(conn, **values)
            conn.execute("INSERT INTO site_config(id, config, updated_at) VALUES (1, %s, %s)",
                         (encode_config(config).decode(), time.time()))
            if fill is not None:
                fill(conn)
        self._migrated.add(tenant_id)
        return admin_token

    def delete(self, tenant_id: str) -> None:
        """Drop the tenant's schema (all its data), its crawl lease and its role, in one transaction."""
        if not self.exists(tenant_id):
            raise TenantNotFound(f"tenant {tenant_id} does not exist")
        schema, role = sql.Identifier(schema_name(tenant_id)), sql.Identifier(role_name(tenant_id))
        with admin(self.pool) as conn:
            # As the schema's owner: the login role does not inherit the tenant's privileges.
            conn.execute("SELECT set_config('role', %s, true)", (role_name(tenant_id),))
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(schema))
            conn.execute("SELECT set_config('role', 'none', true)")
            leases.forget(conn, tenant_id)
            conn.execute(sql.SQL("DROP ROLE {}").format(role))
        self._migrated.discard(tenant_id)

    @contextmanager
    def read(self, tenant_id: str, *, snapshot: bool = False) -> Iterator[PgConnection]:
        """A transaction as the tenant's role. With `snapshot`, every statement in it sees the
        tenant as it was at the first (REPEATABLE READ): what an export needs."""
        self._ensure_migrated(tenant_id)
        with as_tenant(self.pool, tenant_id, snapshot=snapshot) as conn:
            yield conn

    @contextmanager
    def write(self, tenant_id: str) -> Iterator[PgConnection]:
        """A write transaction as the tenant's role: all of it commits, or none of it."""
        self._ensure_migrated(tenant_id)
        with as_tenant(self.pool, tenant_id) as conn:
            yield conn

    def config(self, tenant_id: str) -> SiteConfig:
        with self.read(tenant_id) as conn:
            row = conn.execute("SELECT config FROM site_config WHERE id = 1").fetchone()
        if row is None:
            raise TenantNotFound(f"tenant {tenant_id} has no site config")
        return decode_stored_config(row[0])

    def meta(self, tenant_id: str) -> dict[str, str]:
        with self.read(tenant_id) as conn:
            return migrations.read_meta(conn)

    def open(self, tenant_id: str, *, embedder_id: str | None = None, dim: int | None = None) -> None:
        """Check a tenant can be used: it exists, its schema is migrated, and (when given) its
        vectors are of this model."""
        self._ensure_migrated(tenant_id)
        if embedder_id is not None and dim is not None:
            with self.read(tenant_id) as conn:
                migrations.check_model(conn, tenant_id, embedder_id, dim)

    def _ensure_migrated(self, tenant_id: str) -> None:
        if tenant_id in self._migrated:
            return
        if not self.exists(tenant_id):
            raise TenantNotFound(f"tenant {tenant_id} does not exist")
        with as_tenant(self.pool, tenant_id) as conn:
            meta = migrations.read_meta(conn)
            migrations.migrate(conn, tenant_id, int(meta.get("embedder_dim", "0") or 0))
        self._migrated.add(tenant_id)


@contextmanager
def connected(url: str, *, pool_size: int = 2) -> Iterator[PgTenants]:
    """The tenants of the database at `url`, through a pool of at most `pool_size` connections,
    closed on exit (a CLI command's)."""
    from store.pg.connect import open_pool

    pool = open_pool(url, max_size=pool_size)
    try:
        yield PgTenants(pool)
    finally:
        pool.close()
