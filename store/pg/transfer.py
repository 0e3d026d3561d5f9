"""Moving a tenant between a PostgreSQL database and the portable format, one SQLite tenant file:
`export_postgres` writes a standalone file the default backend opens; `import_postgres` loads such a
file into the database. Vectors travel as their float32 bytes; nothing is re-embedded.

What moves is the whole tenant: meta (model, keys, generation), the site config as stored, pages
with their raw HTML, chunks with their vectors (a chunk still waiting for one moves without it,
listed in chunk_pending), and every other table of the file — facts, forms, actions, flags, the
crawl's runs, errors, sitemap and junk URLs, render decisions, the site manifest and contacts,
curated answers, conversations with their messages and citations, gaps, usage counters and
webhooks with their deliveries (`LATER_TABLES`). Ids are kept and identity sequences continue
after them, so a chunk id means the same chunk on both sides and export → import → export gives
the same rows. A table this build does not know (a newer file, or `frontdesk reindex`'s staging
table mid-run) is counted in `ImportInfo.not_imported`, not dropped silently; only named columns
are read, so a file with more columns than this build knows still imports what is known.

U+0000 is taken out of every text on the way in (store/pg/nul.py): PostgreSQL text cannot hold it,
and one NUL in a page title or a visitor's message would otherwise fail the whole import. The
SQLite file keeps its NULs; the byte-equal round trip holds for text without them.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import msgspec

from store import backup as sqlite_backup
from store import migrations as sqlite_migrations
from store.config import decode_stored_config
from store.connect import one_row
from store.errors import TenantExists, TenantNotFound
from store.pg import migrations as pg_migrations
from store.pg.connect import PgConnection
from store.pg.nul import strip_nul, without_nul
from store.pg.portable import ExportInfo, ImportInfo
from store.pg.tenants import PgTenants
from store.pg.textsearch import config_for
from store.pg.vectors import from_pg, to_pg
from store.tenants import TenantFile, TenantRegistry, validate_tenant_id

#: Rows per batch read from the source.
BATCH = 1000


class Table(msgspec.Struct, frozen=True):
    """A table copied as it is, by named columns (chunks and their vectors are handled apart)."""

    name: str
    columns: tuple[str, ...]
    order: tuple[str, ...] = ("id",)
    """The order an export writes rows in: the primary key, or for the tables with text ids the
    time a row was made (the order SQLite's hidden rowids had)."""
    identity: bool = True
    """Its `id` is a PostgreSQL identity, to continue after the imported ids."""


def _table(name: str, columns: str, order: str = "id") -> Table:
    """A Table from space-separated names; the tables ordered by an integer `id` have an identity."""
    return Table(name, tuple(columns.split()), tuple(order.split()), identity=order == "id")


#: Copied before the chunks: the pages the chunk links point at.
PAGE_TABLES = (
    _table("pages", "id url fetched_url title description lang breadcrumbs updated etag last_modified "
                    "sitemap_lastmod content_hash status http_status gone_reason fetched_at changed_at removed_at"),
    _table("page_html", "page_id encoding html scrubbed", order="page_id"),
)
#: Copied after the chunks, each after the tables its foreign keys name (both sides check them).
LATER_TABLES = (
    _table("chunk_pending", "chunk_id queued_at", order="chunk_id"),
    _table("page_chunks", "page_id position chunk_id uid heading_path", order="page_id position"),
    _table("facts", "id page_id type kind text data"),
    _table("forms", "id page_id data"),
    _table("actions", "id page_id name label selector url source data"),
    _table("page_flags", "id page_id kind reason location text at"),
    _table("sitemap_urls", "url lastmod seen_at", order="url"),
    _table("crawl_runs", "id kind started_at finished_at status summary"),
    _table("crawl_errors", "id run_id url reason message at"),
    _table("curated", "id question normalized answer urls lang embedding created_at updated_at"),
    _table("conversations", "id created_at last_at page_url lang", order="created_at id"),
    _table("messages", "id conversation_id question answer confidence lang source answered latency_ms ttft_ms "
                       "feedback feedback_at created_at", order="created_at id"),
    _table("citations", "message_id rank url title chunk_id score", order="message_id rank"),
    _table("gaps", "id question normalized lang count best_score page_url first_at last_at embedding "
                   "resolved_at curated_id"),
    _table("usage", "day counter value", order="day counter"),
    _table("webhook_endpoints", "id url secret events active description created_at gap_cursor"),
    _table("webhook_deliveries", "id endpoint_id event_id event body status attempts next_at lease_until "
                                 "response_status error created_at delivered_at"),
    _table("webhook_attempts", "delivery_id attempt at response_status error ms", order="delivery_id attempt"),
    _table("render_decisions", "url mode decision reason render_ms requests blocked at", order="url"),
    _table("site_manifest", "url etag last_modified content_hash actions status fetched_at flags", order="url"),
    _table("site_contacts", "value kind source seen_at", order="value"),
    _table("junk_urls", "url family reason detail fetched run_id at", order="url"),
)
CHUNK_COLUMNS = ("id", "hash", "kind", "lang", "text", "title", "heading", "tokens", "created_at")
#: Every table of the file that moves; anything else an import finds is counted in `not_imported`.
MOVED = frozenset({"meta", "site_config", "chunks", *(t.name for t in (*PAGE_TABLES, *LATER_TABLES))})
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
        config_row = pg.execute("SELECT config, updated_at FROM site_config WHERE id = 1").fetchone()
        if config_row is None:
            raise TenantNotFound(f"tenant {tenant_id} has no site config")
        registry = TenantRegistry(scratch)
        tenant, _ = registry.create(decode_stored_config(config_row[0]), tenant_id,
                                    embedder_id=meta["embedder_id"], dim=int(meta["embedder_dim"]),
                                    fingerprint=meta.get("embedder_fingerprint", ""))
        try:
            with tenant.write() as lite:
                sqlite_migrations.set_meta(lite, **{k: v for k, v in meta.items() if k not in OWN_META})
                # The stored text and time as they are: created anew, the file has its own.
                lite.execute("UPDATE site_config SET config = ?, updated_at = ? WHERE id = 1", config_row)
                for table in PAGE_TABLES:
                    _copy_pg_table(pg, lite, table)
                chunks = f"SELECT {', '.join(CHUNK_COLUMNS)}, embedding::text FROM chunks ORDER BY id"
                for rows in _pg_batches(pg, chunks):
                    _write_sqlite(lite, "chunks", CHUNK_COLUMNS, [row[:-1] for row in rows])
                    with_vector = [(row[0], from_pg(row[-1]), row[2], row[3]) for row in rows if row[-1] is not None]
                    lite.executemany("INSERT INTO chunk_vec(rowid, embedding, kind, lang) VALUES (?, ?, ?, ?)",
                                     with_vector)
                for table in LATER_TABLES:
                    _copy_pg_table(pg, lite, table)
        finally:
            registry.close_all()
        info = sqlite_backup.backup(registry.path(tenant_id), dest)
    checked = sqlite_backup.verify(dest, expected_tenant_id=tenant_id)
    return ExportInfo(tenant_id=tenant_id, backend="postgres", path=str(dest), bytes=info.bytes,
                      pages=checked.pages, chunks=checked.chunks, vectors=checked.vectors,
                      seconds=round(time.perf_counter() - started, 3))


def _copy_pg_table(pg: PgConnection, lite: apsw.Connection, table: Table) -> None:
    query = f"SELECT {', '.join(table.columns)} FROM {table.name} ORDER BY {', '.join(table.order)}"
    for rows in _pg_batches(pg, query):
        _write_sqlite(lite, table.name, table.columns, rows)


# -- SQLite → PostgreSQL ---------------------------------------------------------------------------


def _opened_copy(scratch: Path, tenant_id: str, src: Path) -> TenantFile:
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
            config_row = one_row(lite.execute("SELECT config, updated_at FROM site_config WHERE id = 1"))
            config = decode_stored_config(config_row[0])
            counts = _sqlite_counts(lite)
            copied: dict[str, int] = {}

            def fill(pg: PgConnection) -> None:
                # The stored text and time as they are, not the config encoded again now.
                pg.execute("UPDATE site_config SET config = %s, updated_at = %s WHERE id = 1",
                           without_nul(config_row))
                copied.update(_fill_postgres(lite, pg))

            tenants.create(config, tenant_id, embedder_id=meta["embedder_id"], dim=int(meta["embedder_dim"]),
                           fingerprint=meta.get("embedder_fingerprint", ""),
                           meta={k: strip_nul(v) for k, v in meta.items() if k not in OWN_META}, fill=fill)
        finally:
            tenant.close()
    return ImportInfo(
        tenant_id=tenant_id, backend="postgres", source=str(src), pages=checked.pages,
        chunks=copied.get("chunks", 0), vectors=copied.get("vectors", 0),
        seconds=round(time.perf_counter() - started, 3),
        not_imported={name: n for name, n in sorted(counts.items()) if name not in MOVED and n},
    )


def _fill_postgres(lite: apsw.Connection, pg: PgConnection) -> dict[str, int]:
    """Every known row of the opened SQLite tenant into the new schema (as its role)."""
    copied: dict[str, int] = {}
    for table in PAGE_TABLES:
        copied[table.name] = _copy_lite_table(lite, pg, table)
    columns = (*CHUNK_COLUMNS, "embedding", "ts_config")
    chunks = vectors = 0
    pg_migrations.drop_search_indexes(pg)  # built again below, once, over all the rows
    with pg.cursor().copy(f"COPY chunks ({', '.join(columns)}) FROM STDIN") as copy:
        cursor = lite.execute(
            f"SELECT {', '.join('c.' + c for c in CHUNK_COLUMNS)}, v.embedding FROM chunks c "
            "LEFT JOIN chunk_vec v ON v.rowid = c.id ORDER BY c.id")
        for row in cursor:
            blob = row[-1]
            copy.write_row((*without_nul(row[:-1]), None if blob is None else to_pg(blob), config_for(row[3])))
            chunks += 1
            vectors += blob is not None
    copied["chunks"], copied["vectors"] = chunks, vectors
    pg.execute("SELECT set_config('maintenance_work_mem', '256MB', true)")
    pg_migrations.create_search_indexes(pg)
    pg.execute("INSERT INTO chunk_configs(cfg) SELECT DISTINCT ts_config FROM chunks ON CONFLICT DO NOTHING")
    for table in LATER_TABLES:
        copied[table.name] = _copy_lite_table(lite, pg, table)
    for name in ("chunks", *(t.name for t in (*PAGE_TABLES, *LATER_TABLES) if t.identity)):
        pg.execute(f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), "
                   f"(SELECT coalesce(max(id), 0) + 1 FROM {name}), false)")
    for name in ("pages", "chunks", "page_chunks"):  # statistics for the planner (and search's N)
        pg.execute(f"ANALYZE {name}")
    return copied


def _copy_lite_table(lite: apsw.Connection, pg: PgConnection, table: Table) -> int:
    count = 0
    with pg.cursor().copy(f"COPY {table.name} ({', '.join(table.columns)}) FROM STDIN") as copy:
        for row in lite.execute(f"SELECT {', '.join(table.columns)} FROM {table.name}"):
            copy.write_row(without_nul(row))
            count += 1
    return count
