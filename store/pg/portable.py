"""The portable tenant format — one SQLite tenant file — on the default backend: export is an
online copy of the tenant's file, import copies a verified file in as a new tenant. The reports
of a move (`ExportInfo`, `ImportInfo`) are shared with store/pg/transfer.py, which moves tenants
between that format and PostgreSQL. Imports nothing of psycopg: works without the `postgres` extra.
"""

from __future__ import annotations

import time
from pathlib import Path

import msgspec

from store import backup as sqlite_backup
from store.errors import TenantExists, TenantNotFound
from store.tenants import TenantRegistry, validate_tenant_id


class ExportInfo(msgspec.Struct, kw_only=True):
    tenant_id: str
    backend: str
    """Where it came from: "postgres" or "sqlite"."""
    path: str
    bytes: int
    pages: int
    chunks: int
    vectors: int
    seconds: float


class ImportInfo(msgspec.Struct, kw_only=True):
    tenant_id: str
    backend: str
    source: str
    pages: int
    chunks: int
    vectors: int
    seconds: float
    not_imported: dict[str, int] = msgspec.field(default_factory=dict)
    """Rows of tables the import did not move: none for a file of this build; a newer file's
    tables, or `frontdesk reindex`'s staging table when exported mid-run."""


def export_sqlite(registry: TenantRegistry, tenant_id: str, dest: Path | str) -> ExportInfo:
    """With no database configured: an online copy of the tenant's file (store/backup.py)."""
    started = time.perf_counter()
    source = registry.path(tenant_id)
    if not source.exists():
        raise TenantNotFound(f"tenant {tenant_id} does not exist")
    info = sqlite_backup.backup(source, dest)
    checked = sqlite_backup.verify(dest, expected_tenant_id=tenant_id)
    return ExportInfo(tenant_id=tenant_id, backend="sqlite", path=info.path, bytes=info.bytes,
                      pages=checked.pages, chunks=checked.chunks, vectors=checked.vectors,
                      seconds=round(time.perf_counter() - started, 3))


def import_sqlite(registry: TenantRegistry, tenant_id: str, src: Path | str) -> ImportInfo:
    """With no database configured: the file copied in as a new tenant after `verify` (restore
    replaces an existing tenant; import refuses to)."""
    started = time.perf_counter()
    if registry.exists(validate_tenant_id(tenant_id)):
        raise TenantExists(f"tenant {tenant_id} already exists; `frontdesk restore` replaces a tenant's file")
    info = sqlite_backup.restore(registry, tenant_id, src)
    checked = info.verified
    return ImportInfo(tenant_id=tenant_id, backend="sqlite", source=str(src), pages=checked.pages,
                      chunks=checked.chunks, vectors=checked.vectors,
                      seconds=round(time.perf_counter() - started, 3))
