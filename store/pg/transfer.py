"""Moving a tenant between a PostgreSQL database and the portable format, one SQLite tenant file:
`export_tenant` writes a standalone file the default backend opens; `import_tenant` loads such a
file into the database. Vectors travel as their float32 bytes; nothing is re-embedded.

What moves is what the PostgreSQL backend holds so far: meta (model, keys, generation), the site
config, pages with their raw HTML, chunks with their vectors, the page-chunk links, facts, forms,
actions and injection flags. Ids are kept, so a chunk id means the same chunk on both sides. The
SQLite file's other tables (conversations, curated answers, analytics, webhooks…) are not in the
PostgreSQL schema yet: an import counts their rows in `ImportInfo.not_imported` rather than
dropping them silently. Only named columns are read, so a file with more columns than this build
knows (a newer migration) still imports what is known.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import apsw

from store import backup as sqlite_backup
from store import migrations as sqlite_migrations
from store.config import decode_stored_config
from store.connect import one_row
from store.errors import TenantExists, TenantNotFound
from store.pg import migrations as pg_migrations
from store.pg.connect import PgConnection
from store.pg.portable import ExportInfo, ImportInfo
from store.pg.tenants import PgTenants
from store.pg.textsearch import config_for
from store.pg.vectors import from_pg, to_pg
from store.tenants import Tenant, TenantRegistry, validate_tenant_id

#: Rows per batch read from the source.
BATCH = 1000

#: table → columns, copied as they are (chunks and their vectors are handled apart).
TABLES: dict[str, tuple[str, ...]] = {
    "pages": ("id", "url", "fetched_url", "title", "description", "lang", "breadcrumbs", "updated", "etag",
              "last_modified", "sitemap_lastmod", "content_hash", "status", "http_status", "gone_reason",
              "fetched_at", "changed_at", "removed_at"),
    "page_html": ("page_id", "encoding", "html", "scrubbed"),
    "page_chunks": ("page_id", "position", "chunk_id", "uid", "heading_path"),
    "facts": ("id", "page_id", "type", "kind", "text", "data"),
    "forms": ("id", "page_id", "data"),
    "actions": ("id", "page_id", "name", "label", "selector", "url", "source", "data"),
    "page_flags": ("id", "page_id", "kind", "reason", "location", "text", "at"),
}
CHUNK_COLUMNS = ("id", "hash", "kind", "lang", "text", "title", "heading", "tokens", "created_at")
#: Tables whose identity column must continue after the imported ids.
IDENTITY_TABLES = ("pages", "chunks", "facts", "forms", "actions", "page_flags")
#: Meta kept by the target itself, never copied.
OWN_META = ("schema_version",)


# -- SQLite side -----------------------------------------------------------------------------------


@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    """A data dir of our own for a tenant file on its way in or out."""
    folder = Path(tempfile.mkdtemp(prefix="frontdesk-transfer-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _sqlite_has_table(conn: apsw.Connection, table: str) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", (table,)).fetchone()
    return found is not None


def _sqlite_counts(conn: apsw.Connection) -> dict[str, int]:
    """Rows per table of a tenant file (its own tables, not FTS or vec0 internals)."""
    names = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' "
        "AND name NOT LIKE 'chunk\\_fts%' ESCAPE '\\' AND name NOT LIKE 'chunk\\_vec%' ESCAPE '\\' "
        "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")]
    return {name: int(one_row(conn.execute(f'SELECT count(*) FROM "{name}"'))[0]) for name in names}


def _write_sqlite(conn: apsw.Connection, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
    conn.executemany(
        f"INSERT INTO {table}({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", rows)


# -- PostgreSQL → SQLite ---------------------------------------------------------------------------


def _pg_batches(conn: PgConnection, query: str) -> Iterator[list[tuple]]:
    """A query's rows in batches, through a server-side cursor (the tenant never sits in memory)."""
    with conn.cursor(name=f"frontdesk_export_{time.monotonic_ns()}") as cursor:
        cursor.execute(query)
        while rows := cursor.fetchmany(BATCH):
            yield rows


def export_postgres(tenants: PgTenants, tenant_id: str, dest: Path | str) -> ExportInfo:
    """Write a PostgreSQL tenant as a standalone SQLite tenant file at `dest` (atomically: the file
    is built aside, checked, then renamed into place). Reads one snapshot of the tenant."""
    started = time.perf_counter()
    validate_tenant_id(tenant_id)
    dest = Path(dest)
    with _scratch() as scratch, tenants.read(tenant_id, snapshot=True) as pg:
        meta = pg_migrations.read_meta(pg)
        config_row = pg.execute("SELECT config FROM site_config WHERE id = 1").fetchone()
        if config_row is None:
            raise TenantNotFound(f"tenant {tenant_id} has no site config")
        registry = TenantRegistry(scratch)
        tenant, _ = registry.create(decode_stored_config(config_row[0]), tenant_id,
                                    embedder_id=meta["embedder_id"], dim=int(meta["embedder_dim"]),
                                    fingerprint=meta.get("embedder_fingerprint", ""))
        try:
            with tenant.write() as lite:
                sqlite_migrations.set_meta(lite, **{k: v for k, v in meta.items() if k not in OWN_META})
                for table in ("pages", "page_html"):
                    _copy_pg_table(pg, lite, table)
                pending = _sqlite_has_table(lite, "chunk_pending")  # a schema with pending vectors
                chunks = f"SELECT {', '.join(CHUNK_COLUMNS)}, embedding::text FROM chunks ORDER BY id"
                for rows in _pg_batches(pg, chunks):
                    _write_sqlite(lite, "chunks", CHUNK_COLUMNS, [row[:-1] for row in rows])
                    with_vector = [(row[0], from_pg(row[-1]), row[2], row[3]) for row in rows if row[-1] is not None]
                    lite.executemany("INSERT INTO chunk_vec(rowid, embedding, kind, lang) VALUES (?, ?, ?, ?)",
                                     with_vector)
                    if pending:
                        lite.executemany("INSERT INTO chunk_pending(chunk_id, queued_at) VALUES (?, ?)",
                                         [(row[0], row[8]) for row in rows if row[-1] is None])
                for table in ("page_chunks", "facts", "forms", "actions", "page_flags"):
                    _copy_pg_table(pg, lite, table)
        finally:
            registry.close_all()
        info = sqlite_backup.backup(registry.path(tenant_id), dest)
    checked = sqlite_backup.verify(dest, expected_tenant_id=tenant_id)
    return ExportInfo(tenant_id=tenant_id, backend="postgres", path=str(dest), bytes=info.bytes,
                      pages=checked.pages, chunks=checked.chunks, vectors=checked.vectors,
                      seconds=round(time.perf_counter() - started, 3))


def _copy_pg_table(pg: PgConnection, lite: apsw.Connection, table: str) -> None:
    columns = TABLES[table]
    for rows in _pg_batches(pg, f"SELECT {', '.join(columns)} FROM {table} ORDER BY 1"):
        _write_sqlite(lite, table, columns, rows)


# -- SQLite → PostgreSQL ---------------------------------------------------------------------------


def _opened_copy(scratch: Path, tenant_id: str, src: Path) -> Tenant:
    """The file copied into a scratch data dir and opened there: an older schema is migrated
    forward on the copy, never on `src`."""
    registry = TenantRegistry(scratch)
    registry.path(tenant_id).parent.mkdir(parents=True, exist_ok=True)
    sqlite_backup.backup(src, registry.path(tenant_id))
    return registry.get(tenant_id)


def import_postgres(tenants: PgTenants, tenant_id: str, src: Path | str) -> ImportInfo:
    """Load an SQLite tenant file into PostgreSQL as tenant `tenant_id`, in one transaction.

    The file must be this tenant's, intact and of a schema this build knows (store/backup.py
    `verify`); a tenant of that id must not exist yet (delete it first to replace it)."""
    started = time.perf_counter()
    validate_tenant_id(tenant_id)
    src = Path(src)
    checked = sqlite_backup.verify(src, expected_tenant_id=tenant_id)
    if tenants.exists(tenant_id):
        raise TenantExists(f"tenant {tenant_id} already exists in PostgreSQL; delete it first to replace it")
    with _scratch() as scratch:
        tenant = _opened_copy(scratch, tenant_id, src)
        try:
            lite = tenant.reader()
            meta = sqlite_migrations.read_meta(lite)
            config = decode_stored_config(one_row(lite.execute("SELECT config FROM site_config WHERE id = 1"))[0])
            counts = _sqlite_counts(lite)
            copied: dict[str, int] = {}

            def fill(pg: PgConnection) -> None:
                copied.update(_fill_postgres(lite, pg))

            tenants.create(config, tenant_id, embedder_id=meta["embedder_id"], dim=int(meta["embedder_dim"]),
                           fingerprint=meta.get("embedder_fingerprint", ""),
                           meta={k: v for k, v in meta.items() if k not in OWN_META}, fill=fill)
        finally:
            tenant.close()
    known = {*TABLES, "chunks", "meta", "site_config", "chunk_pending"}
    return ImportInfo(
        tenant_id=tenant_id, backend="postgres", source=str(src), pages=checked.pages,
        chunks=copied.get("chunks", 0), vectors=copied.get("vectors", 0),
        seconds=round(time.perf_counter() - started, 3),
        not_imported={name: n for name, n in sorted(counts.items()) if name not in known and n},
    )


def _fill_postgres(lite: apsw.Connection, pg: PgConnection) -> dict[str, int]:
    """Every known row of the opened SQLite tenant into the new schema (as its role)."""
    copied: dict[str, int] = {}
    for table in ("pages", "page_html"):
        copied[table] = _copy_lite_table(lite, pg, table)
    columns = (*CHUNK_COLUMNS, "embedding", "ts_config")
    chunks = vectors = 0
    pg_migrations.drop_search_indexes(pg)  # built again below, once, over all the rows
    with pg.cursor().copy(f"COPY chunks ({', '.join(columns)}) FROM STDIN") as copy:
        cursor = lite.execute(
            f"SELECT {', '.join('c.' + c for c in CHUNK_COLUMNS)}, v.embedding FROM chunks c "
            "LEFT JOIN chunk_vec v ON v.rowid = c.id ORDER BY c.id")
        for row in cursor:
            blob = row[-1]
            copy.write_row((*row[:-1], None if blob is None else to_pg(blob), config_for(row[3])))
            chunks += 1
            vectors += blob is not None
    copied["chunks"], copied["vectors"] = chunks, vectors
    pg.execute("SELECT set_config('maintenance_work_mem', '256MB', true)")
    pg_migrations.create_search_indexes(pg)
    pg.execute("INSERT INTO chunk_configs(cfg) SELECT DISTINCT ts_config FROM chunks ON CONFLICT DO NOTHING")
    for table in ("page_chunks", "facts", "forms", "actions", "page_flags"):
        copied[table] = _copy_lite_table(lite, pg, table)
    for table in IDENTITY_TABLES:
        pg.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                   f"(SELECT coalesce(max(id), 0) + 1 FROM {table}), false)")
    for table in ("pages", "chunks", "page_chunks"):  # statistics for the planner (and search's N)
        pg.execute(f"ANALYZE {table}")
    return copied


def _copy_lite_table(lite: apsw.Connection, pg: PgConnection, table: str) -> int:
    columns = TABLES[table]
    count = 0
    with pg.cursor().copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in lite.execute(f"SELECT {', '.join(columns)} FROM {table}"):
            copy.write_row(row)
            count += 1
    return count
