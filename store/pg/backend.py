"""Which backend holds the tenants: PostgreSQL when a database URL is configured, else the SQLite
files; and the PostgreSQL side's tenants opened for one command, with a clear error when the
`postgres` extra (psycopg) is not installed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from store.errors import StoreError

if TYPE_CHECKING:
    from store.pg.registry import PgTenantRegistry
    from store.pg.tenants import PgTenants


def _missing(exc: ImportError) -> StoreError:
    return StoreError(
        f"FRONTDESK_DATABASE_URL is set but the PostgreSQL backend is not installed ({exc.name} is "
        "missing): pip install 'frontdesk[postgres]'"
    )


def postgres_registry(url: str, *, pool_size: int = 8) -> PgTenantRegistry:
    """The tenants of the database at `url` for a server: a pool of at most `pool_size`
    connections, opened and checked now (a wrong URL or a server that is down is one clear error);
    the caller closes `registry.pool`."""
    try:
        from store.pg.connect import open_pool
        from store.pg.registry import PgTenantRegistry
    except ImportError as exc:
        raise _missing(exc) from None
    return PgTenantRegistry(open_pool(url, max_size=pool_size))


@contextmanager
def postgres_tenants(url: str, *, pool_size: int = 2) -> Iterator[PgTenants]:
    """The tenants of the database at `url` (FRONTDESK_DATABASE_URL) through a pool of at most
    `pool_size` connections (FRONTDESK_DATABASE_POOL_SIZE), closed on exit."""
    try:
        from store.pg.tenants import connected
    except ImportError as exc:
        raise _missing(exc) from None
    with connected(url, pool_size=pool_size) as tenants:
        yield tenants
