"""Reaching PostgreSQL: the connection pool, the names of a tenant's schema and role, and the
one way a tenant's data is touched — a transaction running as the tenant's role.

Isolation is the database's: each tenant's tables live in its own schema, owned by its own role
(NOLOGIN), and every unit of work for a tenant runs `SET LOCAL ROLE` to that role with the
schema as its `search_path`. A query that names another tenant's schema fails with permission
denied, whatever the code above it does wrong. `SET LOCAL` ends with the transaction, so a
connection goes back to the pool as the login role.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool, PoolTimeout

from store.errors import BackendUnavailable, StoreError
from store.tenants import validate_tenant_id

PgConnection = psycopg.Connection
"""What the store/pg functions take, as the SQLite ones take an apsw.Connection."""

#: How long a caller waits for a free pooled connection before BackendUnavailable.
POOL_TIMEOUT_S = 10.0
#: Every statement of a tenant's unit of work is cut off after this (as SQLite's time limit).
STATEMENT_TIMEOUT_MS = 30_000


def _name(prefix: str, tenant_id: str) -> str:
    """A PostgreSQL identifier for a tenant (63 bytes at most; longer ids end in a hash)."""
    name = prefix + validate_tenant_id(tenant_id).replace("-", "_")
    if len(name) <= 63:
        # '-' → '_' could make two ids one name ("a-b", "a_b" cannot both exist: '_' is not
        # allowed in an id), so the mapping stays one-to-one.
        return name
    digest = hashlib.sha256(tenant_id.encode()).hexdigest()[:10]
    return f"{name[:52]}_{digest}"


def schema_name(tenant_id: str) -> str:
    return _name("t_", tenant_id)


def role_name(tenant_id: str) -> str:
    return _name("frontdesk_t_", tenant_id)


def open_pool(url: str, *, min_size: int = 1, max_size: int = 8, timeout: float = POOL_TIMEOUT_S) -> ConnectionPool:
    """A pool of connections to `url` (FRONTDESK_DATABASE_URL), opened and checked now, so a
    wrong URL or a server that is down is reported once, clearly, instead of on first use."""
    try:
        psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise StoreError(f"FRONTDESK_DATABASE_URL is not a PostgreSQL URL: {exc}") from None
    pool = ConnectionPool(url, min_size=min_size, max_size=max_size, open=False,
                          kwargs={"autocommit": False}, name="frontdesk")
    try:
        pool.open(wait=True, timeout=timeout)
    except PoolTimeout:
        pool.close()
        raise BackendUnavailable(
            f"cannot connect to PostgreSQL at {_safe_url(url)} within {timeout:g} s; check "
            "FRONTDESK_DATABASE_URL and that the server is running"
        ) from None
    return pool


def _safe_url(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "(an unparsable URL)"
    return f"{info.get('host', 'localhost')}:{info.get('port', 5432)}/{info.get('dbname', '')}"


def translate(exc: psycopg.Error) -> StoreError | BackendUnavailable:
    """A psycopg error as the error tree's kind, with what the operator can do about it."""
    if isinstance(exc, psycopg.errors.QueryCanceled):
        return BackendUnavailable("a PostgreSQL query took longer than its time limit; please try again")
    if isinstance(exc, psycopg.OperationalError):
        return BackendUnavailable(f"PostgreSQL is unavailable: {str(exc).strip() or type(exc).__name__}")
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return StoreError(f"PostgreSQL refused the access: {str(exc).strip()}")
    if isinstance(exc, psycopg.errors.UndefinedFile | psycopg.errors.FeatureNotSupported):
        return StoreError(f"PostgreSQL lacks what frontdesk needs (pgvector installed?): {str(exc).strip()}")
    return StoreError(f"PostgreSQL error: {str(exc).strip()}")


@contextmanager
def admin(pool: ConnectionPool) -> Iterator[PgConnection]:
    """One transaction as the login role: creating and dropping tenants' schemas and roles."""
    try:
        with pool.connection(timeout=POOL_TIMEOUT_S) as conn, conn.transaction():
            yield conn
    except PoolTimeout:
        raise BackendUnavailable("no PostgreSQL connection was free in time; please try again") from None
    except psycopg.Error as exc:
        raise translate(exc) from None


@contextmanager
def _isolation(conn: PgConnection, snapshot: bool) -> Iterator[None]:
    if not snapshot:
        yield
        return
    conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    try:
        yield
    finally:
        conn.isolation_level = None  # back to the server's default before the pool reuses it


@contextmanager
def as_tenant(pool: ConnectionPool, tenant_id: str, *, snapshot: bool = False) -> Iterator[PgConnection]:
    """One transaction as the tenant's role, its schema first on the search path (then `public`,
    where the vector type lives). Everything in it commits together or not at all; with
    `snapshot`, all its statements read one snapshot (REPEATABLE READ)."""
    schema, role = schema_name(tenant_id), role_name(tenant_id)
    try:
        with pool.connection(timeout=POOL_TIMEOUT_S) as conn, _isolation(conn, snapshot), conn.transaction():
            # One round trip: SET LOCAL ROLE / search_path / statement_timeout as set_config(…, true).
            conn.execute(
                "SELECT set_config('role', %s, true), set_config('search_path', %s, true), "
                "set_config('statement_timeout', %s, true)",
                (role, sql.Identifier(schema).as_string(conn) + ", public", str(STATEMENT_TIMEOUT_MS)),
            )
            yield conn
    except PoolTimeout:
        raise BackendUnavailable("no PostgreSQL connection was free in time; please try again") from None
    except psycopg.errors.InvalidParameterValue as exc:
        if "role" in str(exc):
            raise StoreError(f"tenant {tenant_id} has no PostgreSQL role ({role}); was it created?") from None
        raise translate(exc) from None
    except psycopg.Error as exc:
        raise translate(exc) from None
