"""Backup, verify, restore and reindex on real tenant files (apsw, sqlite-vec, FTS5): consistency under
concurrent writes, exact round trips, and every refusal leaving the live file as it was.

None of this depends on what the model understands, so tenants are indexed with the deterministic
fake embedder (tests/fakes.py); switching a tenant to another model uses the real one."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import apsw
import msgspec
import numpy as np
import pytest

from app.__main__ import main
from app.context import Context
from app.reindex import reindex
from app.settings import Settings
from ingest.document import Document, Fact, Section
from ingest.indexer import PageIndexer
from store import curated
from store.backup import backup, restore, verify
from store.connect import open_connection
from store.errors import (
    BackupFailed,
    ModelMismatch,
    NotADatabase,
    NotFound,
    SchemaTooNew,
    TenantInUse,
    TenantMismatch,
)
from store.migrations import SCHEMA_VERSION, read_meta, set_meta
from store.tenants import Tenant
from tests.fakes import FAKE_MODEL

TOPICS = {"bakery": "sourdough bread and croissants", "garage": "brake pads and oil changes"}
QUERIES = ["sourdough bread prices", "do you open on sunday", "croissants", "page 3 details"]


def page(tenant_id: str, n: int, topic: str | None = None) -> Document:
    topic = topic or TOPICS[tenant_id]
    url = f"https://{tenant_id}.test/p{n}"
    return Document(
        url=url, canonical_url=url, title=f"{tenant_id} page {n}", lang="en",
        sections=[Section(heading_path=(f"{tenant_id} page {n}",),
                          text=f"We sell {topic}. Page {n} explains our {topic} in detail, with prices from {n + 2} euros.")],
        facts=[Fact(type="FAQPage", kind="faq",
                    text=f"Q: Do you open on Sunday? A: The {tenant_id} opens at {n % 4 + 8} am.")],
    )


def make_tenant(ctx: Context, tenant_id: str, pages: int = 6, model: str = FAKE_MODEL) -> Tenant:
    tenant, _ = ctx.create_tenant(tenant_id, f"https://{tenant_id}.test/", model=model)
    indexer = PageIndexer(tenant, ctx.tenant_embedder(tenant))
    for n in range(pages):
        indexer.index(page(tenant_id, n))
    return tenant


def snapshot(ctx: Context, tenant_id: str) -> list:
    tenant = ctx.tenant(tenant_id)
    return [msgspec.to_builtins(ctx.search(tenant, q, k=5).hits) for q in QUERIES]


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def leftovers(folder: Path) -> list[str]:
    """Temp, staging and set-aside files that must never outlive an operation."""
    return sorted(p.name for p in folder.iterdir()
                  if p.name.endswith((".partial", ".restoring", ".pre-restore")) or ".partial-" in p.name)


# -- backup -------------------------------------------------------------------------------------


def test_backup_taken_while_pages_are_written_is_consistent(ctx, tmp_path):
    tenant = make_tenant(ctx, "bakery", pages=4)
    indexer = PageIndexer(tenant, ctx.tenant_embedder(tenant))
    stop, written, failures = threading.Event(), [], []

    def write_continuously() -> None:
        n = 100
        try:
            while not stop.is_set():
                indexer.index(page("bakery", n, topic=f"rye loaves of batch {n}"))
                written.append(n)
                n += 1
        except BaseException as exc:  # surfaced by the assertion below
            failures.append(exc)

    writer = threading.Thread(target=write_continuously)
    writer.start()
    try:
        while len(written) < 3:
            time.sleep(0.01)
        before = len(written)
        info = backup(tenant, tmp_path / "bakery.bak", pages_per_step=4, pause=0.005)
        during = len(written) - before
    finally:
        stop.set()
        writer.join()
    assert not failures
    assert during > 0, "the writer must have committed pages while the backup ran"
    assert info.tenant_id == "bakery" and info.pages > 0

    checked = verify(tmp_path / "bakery.bak", "bakery")
    assert checked.pages >= 4 + before
    assert checked.vectors == checked.chunks
    conn = open_connection(tmp_path / "bakery.bak", readonly=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        pages_without_chunks = conn.execute(
            "SELECT count(*) FROM pages p WHERE p.status = 'active' "
            "AND NOT EXISTS (SELECT 1 FROM page_chunks pc WHERE pc.page_id = p.id)").fetchone()[0]
        links_without_vector = conn.execute(
            "SELECT count(*) FROM page_chunks WHERE chunk_id NOT IN (SELECT rowid FROM chunk_vec)").fetchone()[0]
        assert (pages_without_chunks, links_without_vector) == (0, 0)
    finally:
        conn.close()
    writable = apsw.Connection(str(tmp_path / "bakery.bak"))
    try:
        # FTS5 compares its index with the chunks table; raises if they disagree.
        writable.execute("INSERT INTO chunk_fts(chunk_fts) VALUES ('integrity-check')")
    finally:
        writable.close()


@pytest.mark.parametrize("where", ["under_a_file", "in_a_missing_folder", "onto_a_folder"])
def test_backup_to_an_unwritable_destination_fails_cleanly(ctx, tmp_path, where):
    tenant = make_tenant(ctx, "bakery", pages=2)
    (tmp_path / "blocker").write_text("a file, not a folder")
    (tmp_path / "folder").mkdir()
    dest = {"under_a_file": tmp_path / "blocker" / "bakery.bak",
            "in_a_missing_folder": tmp_path / "missing" / "bakery.bak",
            "onto_a_folder": tmp_path / "folder"}[where]
    with pytest.raises(BackupFailed) as refused:
        backup(tenant, dest)
    assert refused.value.code == "backup_failed"
    assert str(dest) in refused.value.message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker", "data", "folder"]
    assert list((tmp_path / "folder").iterdir()) == []


def test_backup_of_a_missing_tenant_file_is_not_found(tmp_path):
    with pytest.raises(NotFound):
        backup(tmp_path / "nope.db", tmp_path / "out.db")
    assert not (tmp_path / "out.db").exists()


# -- restore ------------------------------------------------------------------------------------


def test_restore_brings_back_exactly_what_was_backed_up(ctx, tmp_path):
    tenant = make_tenant(ctx, "bakery")
    before = snapshot(ctx, "bakery")
    backup(tenant, tmp_path / "bakery.bak")

    indexer = PageIndexer(tenant, ctx.tenant_embedder(tenant))
    indexer.index(page("bakery", 50, topic="gluten free muffins"))
    indexer.remove("https://bakery.test/p1", "gone")
    assert snapshot(ctx, "bakery") != before

    info = restore(ctx.registry, "bakery", tmp_path / "bakery.bak")
    assert info.replaced and info.verified.pages == 6
    assert snapshot(ctx, "bakery") == before
    assert leftovers(ctx.registry.path("bakery").parent) == []


def test_a_plain_copy_of_a_stopped_tenant_file_restores(ctx, tmp_path):
    make_tenant(ctx, "bakery")
    before = snapshot(ctx, "bakery")
    live = ctx.registry.path("bakery")
    ctx.registry.close("bakery")  # what a clean server shutdown does: checkpoint, close
    assert not Path(f"{live}-wal").exists()
    shutil.copyfile(live, tmp_path / "copy.db")

    tenant = ctx.tenant("bakery")
    PageIndexer(tenant, ctx.tenant_embedder(tenant)).index(page("bakery", 60, topic="wedding cakes"))
    assert snapshot(ctx, "bakery") != before
    restore(ctx.registry, "bakery", tmp_path / "copy.db")
    assert snapshot(ctx, "bakery") == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.db", "data"]  # no -wal/-shm left by reading it


def _truncated(ctx, tmp_path) -> Path:
    backup(ctx.tenant("bakery"), tmp_path / "full.db")
    data = (tmp_path / "full.db").read_bytes()
    (tmp_path / "bad.db").write_bytes(data[: len(data) // 2])
    return tmp_path / "bad.db"


def _other_tenant(ctx, tmp_path) -> Path:
    backup(make_tenant(ctx, "garage", pages=2), tmp_path / "bad.db")
    return tmp_path / "bad.db"


def _newer_schema(ctx, tmp_path) -> Path:
    backup(ctx.tenant("bakery"), tmp_path / "bad.db")
    conn = apsw.Connection(str(tmp_path / "bad.db"))
    with conn:
        set_meta(conn, schema_version=SCHEMA_VERSION + 1)
    conn.close()
    return tmp_path / "bad.db"


def _other_model(ctx, tmp_path) -> Path:
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    (other_dir / "models").symlink_to(ctx.settings.model_cache.resolve(), target_is_directory=True)
    other = Context(Settings(data_dir=str(other_dir)))
    try:
        tenant, _ = other.create_tenant("bakery", "https://bakery.test/", model="use-multilingual-v3")
        backup(tenant, tmp_path / "bad.db")
    finally:
        other.close()
    return tmp_path / "bad.db"


def _not_sqlite(ctx, tmp_path) -> Path:
    (tmp_path / "bad.db").write_bytes(b"PK\x03\x04 this is a zip file, not a database" * 100)
    return tmp_path / "bad.db"


def _foreign_sqlite(ctx, tmp_path) -> Path:
    conn = apsw.Connection(str(tmp_path / "bad.db"))
    conn.execute("CREATE TABLE notes(text); INSERT INTO notes VALUES ('hello')")
    conn.close()
    return tmp_path / "bad.db"


BAD_SOURCES = {
    "truncated": (_truncated, NotADatabase, "not_a_database", "truncated"),
    "other_tenant": (_other_tenant, TenantMismatch, "tenant_mismatch", "garage"),
    "newer_schema": (_newer_schema, SchemaTooNew, "schema_too_new", "newer frontdesk"),
    "other_model": (_other_model, ModelMismatch, "model_mismatch", "use-multilingual-v3"),
    "not_sqlite": (_not_sqlite, NotADatabase, "not_a_database", "not an SQLite file"),
    "foreign_sqlite": (_foreign_sqlite, NotADatabase, "not_a_database", "not a frontdesk tenant"),
}


@pytest.mark.parametrize("kind", BAD_SOURCES)
def test_restore_refuses_a_bad_source_and_changes_nothing(ctx, tmp_path, kind):
    build, error, code, mentions = BAD_SOURCES[kind]
    tenant = make_tenant(ctx, "bakery", pages=3)
    source = build(ctx, tmp_path)
    before = snapshot(ctx, "bakery")
    tenant.checkpoint()
    live = ctx.registry.path("bakery")
    live_hash = file_hash(live)
    files_before = {folder: sorted(p.name for p in folder.iterdir()) for folder in (live.parent, tmp_path)}

    with pytest.raises(error) as refused:
        restore(ctx.registry, "bakery", source)
    assert refused.value.code == code
    assert mentions in refused.value.message
    assert file_hash(live) == live_hash
    assert snapshot(ctx, "bakery") == before
    # Nothing appeared beside the live file or the source: no staging, no set-aside, no -wal/-shm.
    assert {folder: sorted(p.name for p in folder.iterdir()) for folder in files_before} == files_before


def test_restore_refuses_while_another_process_has_the_file_open(ctx, tmp_path):
    tenant = make_tenant(ctx, "bakery", pages=2)
    backup(tenant, tmp_path / "bakery.bak")
    live = ctx.registry.path("bakery")
    holder_code = ("import apsw, sys; c = apsw.Connection(sys.argv[1]); "
                   "c.execute('SELECT count(*) FROM pages').fetchall(); print('ready', flush=True); sys.stdin.read()")
    with subprocess.Popen([sys.executable, "-c", holder_code, str(live)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as holder:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(TenantInUse) as refused:
            restore(ctx.registry, "bakery", tmp_path / "bakery.bak")
        holder.stdin.close()
        holder.wait(10)
    assert "another process" in refused.value.message
    assert leftovers(live.parent) == []
    assert restore(ctx.registry, "bakery", tmp_path / "bakery.bak").replaced  # free again: it works


# -- the command line ---------------------------------------------------------------------------


def test_cli_backup_and_restore(ctx, data_dir, tmp_path, capsys):
    make_tenant(ctx, "bakery")
    before = snapshot(ctx, "bakery")
    ctx.registry.close("bakery")  # the CLI is another user of the file; let go of it
    folder = tmp_path / "backups"
    folder.mkdir()

    assert main(["backup", "bakery", str(folder), "--data-dir", str(data_dir), "--json"]) == 0
    made = json.loads(capsys.readouterr().out)
    assert Path(made["path"]).parent == folder and Path(made["path"]).name.startswith("bakery-")
    assert made["tenant_id"] == "bakery" and made["bytes"] == Path(made["path"]).stat().st_size

    broken = tmp_path / "broken.db"
    broken.write_bytes(Path(made["path"]).read_bytes()[:10_000])
    assert main(["restore", "bakery", str(broken), "--data-dir", str(data_dir)]) == 1
    reason = capsys.readouterr().err
    assert reason.startswith("frontdesk: ") and "truncated" in reason and reason.count("\n") == 1

    tenant = ctx.tenant("bakery")
    PageIndexer(tenant, ctx.tenant_embedder(tenant)).index(page("bakery", 70, topic="birthday cakes"))
    ctx.registry.close("bakery")
    assert main(["restore", "bakery", made["path"], "--data-dir", str(data_dir), "--json"]) == 0
    restored = json.loads(capsys.readouterr().out)
    assert restored["replaced"] and restored["verified"]["pages"] == 6
    assert snapshot(ctx, "bakery") == before

    assert main(["backup", "nosuch", str(folder), "--data-dir", str(data_dir)]) == 1
    assert "does not exist" in capsys.readouterr().err


# -- reindex ------------------------------------------------------------------------------------


def vectors(tenant: Tenant) -> dict[int, np.ndarray]:
    return {rowid: np.frombuffer(blob, dtype=np.float32)
            for rowid, blob in tenant.reader().execute("SELECT rowid, embedding FROM chunk_vec")}


def test_reindex_with_the_same_model_rebuilds_equivalent_vectors(ctx):
    tenant = make_tenant(ctx, "bakery")
    old = vectors(tenant)
    top_before = [hits[0]["url"] for hits in snapshot(ctx, "bakery")]

    summary = reindex(ctx, "bakery", batch=4)
    assert (summary.model, summary.previous_model, summary.chunks) == (FAKE_MODEL, FAKE_MODEL, len(old))
    new = vectors(tenant)
    assert new.keys() == old.keys()
    # The fake embeds a text the same way whatever shares its batch, so equal vectors mean reindex
    # embedded exactly the text ingestion embedded.
    assert all(np.array_equal(old[i], new[i]) for i in old)
    assert [hits[0]["url"] for hits in snapshot(ctx, "bakery")] == top_before
    assert tenant.reader().execute("SELECT 1 FROM sqlite_schema WHERE name = 'reindex_vectors'").fetchone() is None


def test_reindex_switches_the_model_and_the_vector_dimension(ctx):
    tenant = make_tenant(ctx, "bakery")
    with tenant.write() as conn:
        curated.add(conn, question="Do you deliver?", normalized="do you deliver", answer="Yes, within 5 km.",
                    urls=[], lang="en", vector=ctx.tenant_embedder(tenant).embed_query("Do you deliver?"))
    chunks = tenant.reader().execute("SELECT count(*) FROM chunks").fetchone()[0]

    summary = reindex(ctx, "bakery", model="use-multilingual-v3")
    assert (summary.model, summary.previous_model, summary.dim) == ("use-multilingual-v3", FAKE_MODEL, 512)
    assert (summary.chunks, summary.curated) == (chunks, 1)
    tenant = ctx.tenant("bakery")  # passes the model check with the new model
    meta = read_meta(tenant.reader())
    assert (meta["embedder_id"], meta["embedder_dim"]) == ("use-multilingual-v3", "512")
    assert tenant.config().model == "use-multilingual-v3"
    assert {len(v) for v in vectors(tenant).values()} == {512}
    blob = tenant.reader().execute("SELECT embedding FROM curated").fetchone()[0]
    assert len(blob) == 512 * 4
    hits = ctx.search(tenant, "sourdough bread and croissants", k=3).hits
    assert hits and hits[0].url.startswith("https://bakery.test/")
    faq = ctx.search(tenant, "is the bakery open on sunday", k=3).hits
    assert any(h.kind == "faq" for h in faq)


def test_a_model_mismatch_names_reindex_and_reindex_fixes_it(ctx, data_dir, capsys):
    tenant = make_tenant(ctx, "bakery", pages=3)
    with tenant.write() as conn:  # as if the packaged weights changed since the file was indexed
        set_meta(conn, embedder_fingerprint=f"{FAKE_MODEL}:older-weights")
    with pytest.raises(ModelMismatch, match="frontdesk reindex bakery"):
        ctx.tenant("bakery")

    assert main(["reindex", "bakery", "--data-dir", str(data_dir), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["chunks"] == tenant.reader().execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert ctx.search(ctx.tenant("bakery"), "sourdough", k=1).hits
    assert main(["reindex", "bakery", "--model", "no-such-model", "--data-dir", str(data_dir)]) == 2
    assert "unknown model" in capsys.readouterr().err
