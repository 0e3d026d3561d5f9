"""Numbered schema migrations, applied on open and recorded in the file's `meta` table.

Each migration is a function `(conn, dim)` registered in order; `SCHEMA_VERSION` is the
number of the last one. A file whose version is newer than this code is refused; an older
one is migrated forward (the caller takes a backup first, see store/tenants.py).
"""

from __future__ import annotations

from collections.abc import Callable

import apsw

from store.connect import all_rows
from store.errors import ModelMismatch, SchemaTooNew

Migration = Callable[[apsw.Connection, int], None]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


def create_chunk_vec(conn: apsw.Connection, dim: int) -> None:
    """The chunks' vectors: a sqlite-vec table (cosine) with kind and lang as metadata columns for
    filtered kNN, rowid = chunks.id. Made by the first migration, and again at another
    dimension when `frontdesk reindex` switches a tenant's model."""
    conn.execute(
        f"CREATE VIRTUAL TABLE chunk_vec USING vec0(embedding float[{int(dim)}] distance_metric=cosine, "
        "kind text, lang text)"
    )


@migration
def m001_initial(conn: apsw.Connection, dim: int) -> None:
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

        CREATE TABLE site_config (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            config TEXT NOT NULL,
            updated_at REAL NOT NULL
        );

        CREATE TABLE pages (
            id INTEGER PRIMARY KEY,
            url TEXT NOT NULL UNIQUE,            -- canonical URL: the page's identity
            fetched_url TEXT,
            title TEXT NOT NULL DEFAULT '',
            description TEXT NOT NULL DEFAULT '',
            lang TEXT NOT NULL DEFAULT '',
            breadcrumbs TEXT NOT NULL DEFAULT '[]',
            updated TEXT,
            etag TEXT,
            last_modified TEXT,
            sitemap_lastmod TEXT,
            content_hash TEXT,
            status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'gone')),
            http_status INTEGER,
            gone_reason TEXT,
            fetched_at REAL,
            changed_at REAL,
            removed_at REAL
        );
        CREATE INDEX pages_status ON pages(status);

        -- Raw HTML, zlib-compressed, so chunks can be rebuilt without the network.
        CREATE TABLE page_html (
            page_id INTEGER PRIMARY KEY REFERENCES pages(id) ON DELETE CASCADE,
            encoding TEXT,
            html BLOB NOT NULL
        );

        -- One row per distinct chunk text; shared by every page it appears on.
        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY,
            hash TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL CHECK (kind IN ('prose', 'fact', 'faq', 'form', 'action')),
            lang TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            heading TEXT NOT NULL DEFAULT '',
            tokens INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL
        );

        CREATE TABLE page_chunks (
            page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            chunk_id INTEGER NOT NULL REFERENCES chunks(id),
            uid TEXT NOT NULL,
            heading_path TEXT NOT NULL DEFAULT '[]',
            PRIMARY KEY (page_id, position)
        ) WITHOUT ROWID;
        CREATE INDEX page_chunks_chunk ON page_chunks(chunk_id);
        """
    )
    create_chunk_vec(conn, dim)
    conn.execute(
        """
        CREATE VIRTUAL TABLE chunk_fts USING fts5(
            title, heading, text,
            content='chunks', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
            INSERT INTO chunk_fts(rowid, title, heading, text)
            VALUES (new.id, new.title, new.heading, new.text);
        END;
        CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
            INSERT INTO chunk_fts(chunk_fts, rowid, title, heading, text)
            VALUES ('delete', old.id, old.title, old.heading, old.text);
            DELETE FROM chunk_vec WHERE rowid = old.id;
        END;
        CREATE TRIGGER chunks_au AFTER UPDATE OF title, heading, text ON chunks BEGIN
            INSERT INTO chunk_fts(chunk_fts, rowid, title, heading, text)
            VALUES ('delete', old.id, old.title, old.heading, old.text);
            INSERT INTO chunk_fts(rowid, title, heading, text)
            VALUES (new.id, new.title, new.heading, new.text);
        END;

        CREATE TABLE facts (
            id INTEGER PRIMARY KEY,
            page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
            type TEXT NOT NULL,
            kind TEXT NOT NULL,
            text TEXT NOT NULL,
            data TEXT NOT NULL
        );
        CREATE INDEX facts_page ON facts(page_id);

        CREATE TABLE forms (
            id INTEGER PRIMARY KEY,
            page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
            data TEXT NOT NULL
        );
        CREATE INDEX forms_page ON forms(page_id);

        CREATE TABLE actions (
            id INTEGER PRIMARY KEY,
            page_id INTEGER REFERENCES pages(id) ON DELETE CASCADE,  -- NULL: site-wide manifest
            name TEXT NOT NULL,
            label TEXT NOT NULL DEFAULT '',
            selector TEXT NOT NULL DEFAULT '',
            url TEXT NOT NULL DEFAULT '',
            source TEXT NOT NULL,
            data TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX actions_page ON actions(page_id);

        CREATE TABLE sitemap_urls (
            url TEXT PRIMARY KEY,
            lastmod TEXT,
            seen_at REAL NOT NULL
        ) WITHOUT ROWID;

        CREATE TABLE crawl_runs (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,
            started_at REAL NOT NULL,
            finished_at REAL,
            status TEXT NOT NULL DEFAULT 'running',
            summary TEXT NOT NULL DEFAULT '{}'
        );

        CREATE TABLE crawl_errors (
            id INTEGER PRIMARY KEY,
            run_id INTEGER REFERENCES crawl_runs(id) ON DELETE CASCADE,
            url TEXT NOT NULL,
            reason TEXT NOT NULL,
            message TEXT NOT NULL DEFAULT '',
            at REAL NOT NULL
        );
        CREATE INDEX crawl_errors_run ON crawl_errors(run_id);

        CREATE TABLE curated (
            id INTEGER PRIMARY KEY,
            question TEXT NOT NULL,
            normalized TEXT NOT NULL,
            answer TEXT NOT NULL,
            urls TEXT NOT NULL DEFAULT '[]',
            lang TEXT NOT NULL DEFAULT '',
            embedding BLOB,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE INDEX curated_normalized ON curated(normalized);

        CREATE TABLE conversations (
            id TEXT PRIMARY KEY,
            created_at REAL NOT NULL,
            last_at REAL NOT NULL,
            page_url TEXT NOT NULL DEFAULT '',
            lang TEXT NOT NULL DEFAULT ''
        );

        CREATE TABLE messages (
            id TEXT PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            question TEXT NOT NULL,
            answer TEXT NOT NULL,
            confidence REAL NOT NULL DEFAULT 0,
            lang TEXT NOT NULL DEFAULT '',
            source TEXT NOT NULL DEFAULT '',
            answered INTEGER NOT NULL DEFAULT 1,
            latency_ms REAL,
            ttft_ms REAL,
            feedback INTEGER,
            feedback_at REAL,
            created_at REAL NOT NULL
        );
        CREATE INDEX messages_conversation ON messages(conversation_id);

        CREATE TABLE citations (
            message_id TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            rank INTEGER NOT NULL,
            url TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            chunk_id INTEGER,
            score REAL,
            PRIMARY KEY (message_id, rank)
        ) WITHOUT ROWID;

        CREATE TABLE gaps (
            id INTEGER PRIMARY KEY,
            question TEXT NOT NULL,
            normalized TEXT NOT NULL,
            lang TEXT NOT NULL DEFAULT '',
            count INTEGER NOT NULL DEFAULT 1,
            best_score REAL,
            page_url TEXT NOT NULL DEFAULT '',
            first_at REAL NOT NULL,
            last_at REAL NOT NULL,
            embedding BLOB
        );
        CREATE UNIQUE INDEX gaps_normalized ON gaps(normalized);

        CREATE TABLE usage (
            day TEXT NOT NULL,
            counter TEXT NOT NULL,
            value INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (day, counter)
        ) WITHOUT ROWID;
        """
    )


@migration
def m002_console_webhooks(conn: apsw.Connection, dim: int) -> None:
    """Resolved knowledge gaps (the console turns them into curated answers) and outgoing
    webhooks: endpoints, an outbox of deliveries, and each delivery attempt for the log."""
    conn.execute(
        """
        ALTER TABLE gaps ADD COLUMN resolved_at REAL;
        ALTER TABLE gaps ADD COLUMN curated_id INTEGER;

        CREATE TABLE webhook_endpoints (
            id INTEGER PRIMARY KEY,
            url TEXT NOT NULL,
            secret TEXT NOT NULL,
            events TEXT NOT NULL DEFAULT '[]',
            active INTEGER NOT NULL DEFAULT 1,
            description TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL,
            gap_cursor INTEGER NOT NULL DEFAULT 0      -- gaps.id already sent as gap.new
        );

        CREATE TABLE webhook_deliveries (
            id INTEGER PRIMARY KEY,
            endpoint_id INTEGER NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
            event_id TEXT NOT NULL,
            event TEXT NOT NULL,
            body TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'sending', 'delivered', 'failed')),
            attempts INTEGER NOT NULL DEFAULT 0,
            next_at REAL NOT NULL,
            lease_until REAL,
            response_status INTEGER,
            error TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL,
            delivered_at REAL
        );
        CREATE INDEX webhook_deliveries_due ON webhook_deliveries(status, next_at);
        CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, id);

        CREATE TABLE webhook_attempts (
            delivery_id INTEGER NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
            attempt INTEGER NOT NULL,
            at REAL NOT NULL,
            response_status INTEGER,
            error TEXT NOT NULL DEFAULT '',
            ms REAL,
            PRIMARY KEY (delivery_id, attempt)
        ) WITHOUT ROWID;
        """
    )


@migration
def m003_render_decisions(conn: apsw.Connection, dim: int) -> None:
    """Per page: whether the crawler read it as served or rendered it in headless Chromium, and
    why (``crawl.render``; ingest/render/). Keyed by URL, like the crawl's own bookkeeping."""
    conn.execute(
        """
        CREATE TABLE render_decisions (
            url TEXT PRIMARY KEY,
            mode TEXT NOT NULL,                  -- the tenant's crawl.render: never | auto | always
            decision TEXT NOT NULL
                CHECK (decision IN ('static', 'rendered', 'render_discarded', 'render_failed')),
            reason TEXT NOT NULL DEFAULT '',     -- detector verdict or failure reason
            render_ms REAL,
            requests INTEGER NOT NULL DEFAULT 0, -- requests the page's scripts made
            blocked TEXT NOT NULL DEFAULT '[]',  -- ["reason url", ...] the guard refused (first 20)
            at REAL NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX render_decisions_decision ON render_decisions(decision);
        """
    )


@migration
def m005_trust(conn: apsw.Connection, dim: int) -> None:
    """What a hostile site taught (issue 13):

    - ``page_flags``: passages kept out of the index as prompt injection (ingest/injection.py),
      per page, with the reason, where on the page, and the text, for the site owner;
    - ``page_html.scrubbed``: the raw-HTML cache is stored scrubbed of personal data and secrets
      like the index; rows written before this are 0 until the crawler re-scrubs them;
    - ``site_manifest``: the site's ``actions.json`` with its validators (conditional GET); its
      actions are the ``actions`` rows without a page;
    - ``site_contacts``: the business's own published phone numbers and e-mail addresses, learned
      from its Organization / LocalBusiness data and contact page (``clean.allow_site_contacts``)."""
    conn.execute(
        """
        CREATE TABLE page_flags (
            id INTEGER PRIMARY KEY,
            page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
            kind TEXT NOT NULL DEFAULT 'injection',
            reason TEXT NOT NULL,                -- override, fake_role_tag, addressed_to_ai…
            location TEXT NOT NULL DEFAULT '',   -- where on the page: a heading path, "image alt"…
            text TEXT NOT NULL,                  -- the passage kept out of the index
            at REAL NOT NULL
        );
        CREATE INDEX page_flags_page ON page_flags(page_id);

        ALTER TABLE page_html ADD COLUMN scrubbed INTEGER NOT NULL DEFAULT 0;

        CREATE TABLE site_manifest (
            url TEXT PRIMARY KEY,
            etag TEXT,
            last_modified TEXT,
            content_hash TEXT,
            actions INTEGER NOT NULL DEFAULT 0,
            status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'gone', 'invalid')),
            fetched_at REAL NOT NULL
        ) WITHOUT ROWID;

        CREATE TABLE site_contacts (
            value TEXT PRIMARY KEY,              -- as published: "+1-207-555-0148", "hello@…"
            kind TEXT NOT NULL CHECK (kind IN ('phone', 'email')),
            source TEXT NOT NULL DEFAULT '',     -- the page it was learned from
            seen_at REAL NOT NULL
        ) WITHOUT ROWID;
        """
    )


@migration
def m006_manifest_flags(conn: apsw.Connection, dim: int) -> None:
    """Passages of an actions.json manifest kept out as prompt injection, for the site owner (a
    manifest has no page to hang ``page_flags`` on)."""
    conn.execute("ALTER TABLE site_manifest ADD COLUMN flags TEXT NOT NULL DEFAULT '[]'")


@migration
def m007_junk_urls(conn: apsw.Connection, dim: int) -> None:
    """URLs the crawler kept out of the index as generated junk (calendar chains, endless query
    families, faceted filters, near-duplicate templates; ingest/crawl/junk.py), with the reason."""
    conn.execute(
        """
        CREATE TABLE junk_urls (
            url TEXT PRIMARY KEY,
            family TEXT NOT NULL,                -- the URL family, e.g. host/events/{date}/{date}/
            reason TEXT NOT NULL,                -- junk_calendar | junk_query | junk_template
            detail TEXT NOT NULL DEFAULT '',
            fetched INTEGER NOT NULL DEFAULT 1,  -- 0: refused unfetched once its family was judged
            run_id INTEGER,
            at REAL NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX junk_urls_reason ON junk_urls(reason);
        """
    )


@migration
def m008_pending_vectors(conn: apsw.Connection, dim: int) -> None:
    """Chunks written before their vectors (issue 15): a page is searchable by its text as soon as
    it is fetched, and ingest/embed_stage.py embeds what is listed here in the background. A
    chunk that goes takes its entry with it. A file from before had a vector for every chunk; any
    chunk without one (there should be none) is listed, so it gets one."""
    conn.execute(
        """
        CREATE TABLE chunk_pending (
            chunk_id INTEGER PRIMARY KEY,        -- chunks.id, listed until its vector is in chunk_vec
            queued_at REAL NOT NULL
        );
        CREATE TRIGGER chunks_ad_pending AFTER DELETE ON chunks BEGIN
            DELETE FROM chunk_pending WHERE chunk_id = old.id;
        END;
        INSERT INTO chunk_pending(chunk_id, queued_at)
            SELECT id, created_at FROM chunks WHERE id NOT IN (SELECT rowid FROM chunk_vec);
        """
    )


SCHEMA_VERSION = len(MIGRATIONS)


def read_meta(conn: apsw.Connection) -> dict[str, str]:
    exists = conn.execute("SELECT 1 FROM sqlite_schema WHERE type='table' AND name='meta'").fetchone()
    if not exists:
        return {}
    return dict(all_rows(conn.execute("SELECT key, value FROM meta")))


def set_meta(conn: apsw.Connection, **values: object) -> None:
    for key, value in values.items():
        conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, str(value)),
        )


def generation(conn: apsw.Connection) -> int:
    """The tenant's content generation: caches keyed by it go stale when indexed content changes."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    return int(row[0]) if row else 0


def bump_generation(conn: apsw.Connection) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES ('generation', '1') "
        "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
    )


def site_config(conn: apsw.Connection) -> str | None:
    """The site config as stored (JSON), or None when the tenant has none."""
    row = conn.execute("SELECT config FROM site_config WHERE id = 1").fetchone()
    return None if row is None else str(row[0])


def set_site_config(conn: apsw.Connection, config: str, updated_at: float) -> None:
    conn.execute(
        "INSERT INTO site_config(id, config, updated_at) VALUES (1, ?, ?) "
        "ON CONFLICT(id) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at",
        (config, updated_at),
    )


def schema_version(conn: apsw.Connection) -> int:
    return int(read_meta(conn).get("schema_version", "0"))


def check_version(conn: apsw.Connection, name: str) -> int:
    version = schema_version(conn)
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"tenant {name} was written by a newer frontdesk (schema {version}, this build knows "
            f"{SCHEMA_VERSION}); upgrade frontdesk to open it"
        )
    return version


def model_mismatch(meta: dict[str, str], name: str, embedder_id: str, dim: int) -> ModelMismatch | None:
    """The error for vectors of another model than `embedder_id` (None when they match), naming the
    command that fixes it; both backends read their `meta` table and raise it."""
    stored = meta.get("embedder_id")
    if stored and (stored != embedder_id or int(meta.get("embedder_dim", dim)) != dim):
        return ModelMismatch(
            f"tenant {name} was indexed with model {stored} ({meta.get('embedder_dim')}-d), not "
            f"{embedder_id} ({dim}-d); run `frontdesk reindex {name}` to rebuild its vectors",
            stored_model=stored,
            model=embedder_id,
        )
    return None


def check_model(conn: apsw.Connection, name: str, embedder_id: str, dim: int) -> None:
    if (mismatch := model_mismatch(read_meta(conn), name, embedder_id, dim)) is not None:
        raise mismatch


def migrate(conn: apsw.Connection, dim: int) -> int:
    """Apply every migration after the file's version, each in its own transaction."""
    version = schema_version(conn)
    for number, step in enumerate(MIGRATIONS[version:], start=version + 1):
        with conn:
            step(conn, dim)
            set_meta(conn, schema_version=number)
    return SCHEMA_VERSION
