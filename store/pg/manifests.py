"""The site's actions.json manifests in a tenant's PostgreSQL schema: store/manifests.py's
functions, with its arguments and `ManifestState` results, on a connection from PgTenants.read or
.write. Validators and state in ``site_manifest``; the site-wide actions they list are the
``actions`` rows without a page, each naming its manifest in its JSON data, replaced as a whole
when the manifest changes.

The data column is text holding JSON (store/pg/migrations.py m002), kept as written, escapes of
U+0000 included; a manifest's actions are found by reading it with Python's json, as SQLite's
json_extract reads it. Other text goes in without U+0000 (store/pg/nul.py), the manifest URL named
in an action's data too, so its actions are found by the URL stored."""

from __future__ import annotations

import json
import time

from store.manifests import ManifestState, action_row
from store.pg.connect import PgConnection
from store.pg.nul import strip_nul, without_nul


def manifest_states(conn: PgConnection) -> dict[str, ManifestState]:
    rows = conn.execute(
        "SELECT url, etag, last_modified, content_hash, status, actions FROM site_manifest ORDER BY url COLLATE \"C\""
    ).fetchall()
    return {row[0]: ManifestState(*row) for row in rows}


def _named(data: str, url: str) -> bool:
    """Whether an action's JSON data names the manifest `url` (SQLite's json_extract(data, '$.manifest'))."""
    manifest = json.loads(data).get("manifest")
    return isinstance(manifest, str) and strip_nul(manifest) == url


def _delete_actions(conn: PgConnection, url: str) -> int:
    # The data is read here, not by PostgreSQL's JSON operators: those refuse a whole document in
    # which any string holds the escape \u0000, as a crawled action's label may (store/pg/nul.py).
    # A site has a handful of manifest actions.
    url = strip_nul(url)
    ids = [int(action_id) for action_id, data in conn.execute(
        "SELECT id, data FROM actions WHERE page_id IS NULL AND source = 'manifest' ORDER BY id FOR UPDATE")
        if _named(data, url)]
    if not ids:
        return 0
    return conn.execute("DELETE FROM actions WHERE id = ANY(%s)", (ids,)).rowcount


def write_manifest(conn: PgConnection, url: str, actions: list[dict], *, etag: str | None,
                   last_modified: str | None, content_hash: str, status: str = "active",
                   flags: list[dict] | None = None) -> None:
    """Replace a manifest's actions and record its validators, in the caller's transaction.

    ``status`` is ``active``, or ``invalid`` for a file that could not be read as a manifest (it
    then has no actions); ``flags`` are passages kept out as prompt injection."""
    url = strip_nul(url)
    _delete_actions(conn, url)
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO actions(page_id, name, label, selector, url, source, data) "
            "VALUES (NULL, %s, %s, %s, %s, 'manifest', %s)",
            [without_nul(action_row(action, url)) for action in actions],
        )
    conn.execute(
        "INSERT INTO site_manifest(url, etag, last_modified, content_hash, actions, status, fetched_at, flags) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (url) DO UPDATE SET etag = excluded.etag, "
        "last_modified = excluded.last_modified, content_hash = excluded.content_hash, actions = excluded.actions, "
        "status = excluded.status, fetched_at = excluded.fetched_at, flags = excluded.flags",
        (*without_nul((url, etag, last_modified, content_hash)), len(actions), strip_nul(status), time.time(),
         json.dumps(flags or [], ensure_ascii=False)),
    )


def touch_manifest(conn: PgConnection, url: str, *, etag: str | None, last_modified: str | None) -> None:
    """A 304 or unchanged content: new validators and fetch time, nothing else."""
    conn.execute(
        "UPDATE site_manifest SET etag = COALESCE(%s, etag), last_modified = COALESCE(%s, last_modified), "
        "fetched_at = %s WHERE url = %s",
        (*without_nul((etag, last_modified)), time.time(), strip_nul(url)),
    )


def remove_manifest(conn: PgConnection, url: str) -> int:
    """The manifest is gone (404/410): its actions go too. Returns how many."""
    removed = _delete_actions(conn, url)
    conn.execute(
        "UPDATE site_manifest SET status = 'gone', actions = 0, etag = NULL, last_modified = NULL, "
        "content_hash = NULL, fetched_at = %s WHERE url = %s",
        (time.time(), strip_nul(url)),
    )
    return removed


def manifest_actions(conn: PgConnection) -> list[dict]:
    """Every site-wide action, as stored (with the manifest it came from)."""
    rows = conn.execute("SELECT data FROM actions WHERE page_id IS NULL AND source = 'manifest' ORDER BY id")
    return [json.loads(data) for (data,) in rows]


def manifest_flags(conn: PgConnection) -> list[dict]:
    """Manifests with passages kept out as prompt injection: {"url", "flags": [...]}."""
    rows = conn.execute(
        "SELECT url, flags FROM site_manifest WHERE flags != '[]' ORDER BY url COLLATE \"C\"").fetchall()
    return [{"url": url, "flags": json.loads(flags)} for url, flags in rows]


def site_actions(conn: PgConnection) -> list[tuple[str, str, str, str]]:
    """(name, label, selector, url) of every site-wide action (those on no page), in the order
    they were written (SQLite's table order)."""
    return conn.execute("SELECT name, label, selector, url FROM actions WHERE page_id IS NULL ORDER BY id").fetchall()
