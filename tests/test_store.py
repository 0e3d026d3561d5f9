"""The tenant store on real SQLite files with sqlite-vec: ids, migrations, refusals, page writes."""

from __future__ import annotations

import threading
import time

import anyio
import apsw
import numpy as np
import pytest

from store import migrations
from store.config import SiteConfig
from store.connect import open_connection
from store.errors import (
    InvalidTenantId,
    ModelMismatch,
    NotADatabase,
    SchemaTooNew,
    TenantExists,
    TenantNotFound,
)
from store.pages import ChunkRow, PageWrite, page_states, stats, tombstone_page, write_page
from store.tenants import TenantRegistry, tenant_path, validate_tenant_id

DIM = 8


def vec(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=DIM).astype(np.float32)
    return (v / np.linalg.norm(v)).tobytes()


def chunk(text: str, position: int, kind: str = "prose") -> ChunkRow:
    from ingest.chunk import chunk_uid, content_hash

    return ChunkRow(hash=content_hash(kind, text), kind=kind, lang="en", text=text, heading_path=("H",),
                    position=position, uid=chunk_uid("u", position, text), tokens=3, vector=vec(hash(text) % 1000))


@pytest.fixture
def registry(tmp_path):
    reg = TenantRegistry(tmp_path / "data")
    yield reg
    reg.close_all()


def make(registry, tenant_id="acme"):
    return registry.create(SiteConfig(site="https://acme.test/"), tenant_id, embedder_id="test-model", dim=DIM)


@pytest.mark.parametrize("bad", ["../x", "", "a" * 200, "Ünïcode", "UPPER", "-lead", "a/b", "a.b", "a b", None, 7, "x" * 64])
def test_invalid_tenant_ids_are_refused_and_create_nothing(registry, tmp_path, bad):
    with pytest.raises(InvalidTenantId):
        validate_tenant_id(bad)
    with pytest.raises(InvalidTenantId):
        registry.create(SiteConfig(site="https://a.test/"), bad, embedder_id="m", dim=DIM)
    created = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert created == []


def test_valid_ids_map_under_the_data_dir(tmp_path):
    for good in ("a", "acme-shop", "0day", "x" * 63):
        path = tenant_path(tmp_path, good)
        assert path.parent == tmp_path / "tenants" and path.name == f"{good}.db"


def test_create_list_delete_and_meta(registry):
    tenant, admin_token = make(registry)
    assert tenant.widget_key.startswith("pk_") and admin_token.startswith("fdt_")
    assert tenant.check_admin_token(admin_token) and not tenant.check_admin_token("nope")
    assert registry.ids() == ["acme"]
    meta = migrations.read_meta(tenant.reader())
    assert meta["schema_version"] == str(migrations.SCHEMA_VERSION)
    assert meta["embedder_id"] == "test-model" and meta["embedder_dim"] == str(DIM)
    assert "admin_token" not in meta and admin_token not in meta.values()  # only its hash is kept
    assert tenant.reader().pragma("journal_mode") == "wal"
    assert tenant.reader().pragma("foreign_keys") == 1
    with pytest.raises(TenantExists):
        make(registry)
    assert registry.tenant_for_key(tenant.widget_key) == "acme"
    registry.delete("acme")
    assert registry.ids() == [] and not registry.path("acme").exists()
    with pytest.raises(TenantNotFound):
        registry.get("acme")
    assert registry.tenant_for_key(tenant.widget_key) is None


def test_extension_loading_is_switched_off_after_sqlite_vec(registry):
    tenant, _ = make(registry)
    conn = tenant.reader()
    assert conn.execute("SELECT vec_version()").fetchone()[0].startswith("v")
    with pytest.raises(apsw.Error):
        conn.load_extension("/nonexistent/evil.so")


def test_newer_schema_is_refused(registry):
    tenant, _ = make(registry)
    with tenant.write() as conn:
        migrations.set_meta(conn, schema_version=migrations.SCHEMA_VERSION + 1)
    registry.close_all()
    with pytest.raises(SchemaTooNew, match="newer frontdesk"):
        registry.get("acme")


def test_model_mismatch_names_reindex(registry):
    make(registry)
    registry.close_all()
    with pytest.raises(ModelMismatch, match="frontdesk reindex acme"):
        registry.get("acme", embedder_id="other-model", dim=DIM)
    with pytest.raises(ModelMismatch):
        registry.get("acme", embedder_id="test-model", dim=DIM * 2)
    assert registry.get("acme", embedder_id="test-model", dim=DIM).id == "acme"


@pytest.mark.parametrize("content", [b"this is not a database at all" * 100, b"", b"SQLite format 3\x00" + b"\xff" * 4000])
def test_corrupt_or_foreign_files_are_refused_and_left_untouched(registry, content):
    path = registry.path("junk")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    before = path.read_bytes()
    with pytest.raises(NotADatabase):
        registry.get("junk")
    assert path.read_bytes() == before
    assert not path.with_name("junk.db-wal").exists() or path.with_name("junk.db-wal").stat().st_size == 0


def test_plain_sqlite_file_is_not_a_tenant(registry, tmp_path):
    path = registry.path("plain")
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE t(x)")
    conn.close()
    with pytest.raises(NotADatabase, match="not a frontdesk tenant"):
        registry.get("plain")


def test_older_schema_is_migrated_with_a_backup_first(registry, monkeypatch):
    tenant, _ = make(registry)
    registry.close_all()
    calls = []

    def m002(conn, dim):
        calls.append(dim)
        conn.execute("CREATE TABLE extra(x)")

    current = migrations.SCHEMA_VERSION
    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, m002])
    monkeypatch.setattr(migrations, "SCHEMA_VERSION", len(migrations.MIGRATIONS))
    reopened = registry.get("acme")
    assert calls == [DIM]
    assert migrations.schema_version(reopened.reader()) == migrations.SCHEMA_VERSION
    backups = list(registry.path("acme").parent.glob(f"acme.schema{current}.*.bak.db"))
    assert len(backups) == 1
    old = open_connection(backups[0])
    assert migrations.schema_version(old) == current
    old.close()


def test_shared_chunks_are_stored_once_and_deleted_with_their_last_page(registry):
    tenant, _ = make(registry)
    footer = chunk("Shared footer text that appears on every page.", 1)
    with tenant.write() as conn:
        for n in range(5):
            write_page(conn, PageWrite(url=f"https://acme.test/p{n}", title=f"P{n}", content_hash=str(n),
                                       chunks=[chunk(f"unique body {n}", 0), footer]))
    conn = tenant.reader()
    assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 6
    assert conn.execute("SELECT count(*) FROM chunk_vec").fetchone()[0] == 6
    assert conn.execute("SELECT count(*) FROM page_chunks").fetchone()[0] == 10
    with tenant.write() as conn:
        for n in range(4):
            assert tombstone_page(conn, f"https://acme.test/p{n}", "http_404", 404) == 1
    conn = tenant.reader()
    assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 2  # p4's body + the footer
    with tenant.write() as conn:
        assert tombstone_page(conn, "https://acme.test/p4", "http_410", 410) == 2
    conn = tenant.reader()
    assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM chunk_vec").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM chunk_fts WHERE chunk_fts MATCH 'footer'").fetchone()[0] == 0
    states = page_states(conn)
    assert {s.status for s in states.values()} == {"gone"}
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.execute("INSERT INTO chunk_fts(chunk_fts) VALUES ('integrity-check')")


def test_rewriting_a_page_replaces_only_changed_chunks(registry):
    tenant, _ = make(registry)
    a, b, c = chunk("alpha", 0), chunk("beta", 1), chunk("gamma", 1)
    with tenant.write() as conn:
        first = write_page(conn, PageWrite(url="https://acme.test/x", content_hash="1", chunks=[a, b]))
    with tenant.write() as conn:
        second = write_page(conn, PageWrite(url="https://acme.test/x", content_hash="2", chunks=[a, c]))
    assert (first.chunks_added, second.chunks_added, second.chunks_deleted) == (2, 1, 1)
    texts = {r[0] for r in tenant.reader().execute("SELECT text FROM chunks")}
    assert texts == {"alpha", "gamma"}


def test_a_failed_page_write_leaves_nothing_half_written(registry):
    tenant, _ = make(registry)
    good = chunk("kept", 0)
    with tenant.write() as conn:
        write_page(conn, PageWrite(url="https://acme.test/keep", content_hash="1", chunks=[good]))
    broken = chunk("new text", 0)
    broken.vector = b"\x00" * 3  # wrong size: vec0 refuses it mid-transaction
    with pytest.raises(apsw.Error), tenant.write() as conn:
        write_page(conn, PageWrite(url="https://acme.test/half", content_hash="2", chunks=[chunk("first ok", 0), broken]))
    conn = tenant.reader()
    assert conn.execute("SELECT count(*) FROM pages WHERE url LIKE '%half'").fetchone()[0] == 0
    assert {r[0] for r in conn.execute("SELECT text FROM chunks")} == {"kept"}


def test_reads_proceed_while_a_writer_writes(registry):
    tenant, _ = make(registry)
    with tenant.write() as conn:
        write_page(conn, PageWrite(url="https://acme.test/0", content_hash="0", chunks=[chunk("seed", 0)]))
    stop = threading.Event()
    errors: list[BaseException] = []
    reads = [0]

    def reader():
        try:
            while not stop.is_set():
                n = tenant.reader().execute("SELECT count(*) FROM pages").fetchone()[0]
                assert n >= 1
                reads[0] += 1
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for n in range(1, 40):
        with tenant.write() as conn:
            write_page(conn, PageWrite(url=f"https://acme.test/{n}", content_hash=str(n), chunks=[chunk(f"t{n}", 0)]))
            time.sleep(0.002)  # hold the write transaction open while readers read
    stop.set()
    for t in threads:
        t.join()
    assert not errors and reads[0] > 40
    assert stats(tenant.reader()).pages == 40


def test_async_read_and_write_run_off_the_event_loop_in_one_transaction(registry):
    tenant, _ = make(registry)
    loop_thread = threading.get_ident()

    def add(conn) -> int:
        assert threading.get_ident() != loop_thread and conn.in_transaction
        return write_page(conn, PageWrite(url="https://acme.test/a", content_hash="1", chunks=[chunk("async", 0)])).page_id

    def fail(conn) -> None:
        write_page(conn, PageWrite(url="https://acme.test/b", content_hash="2", chunks=[chunk("rolled back", 0)]))
        raise RuntimeError("after the write")

    def texts(conn) -> set[str]:
        assert threading.get_ident() != loop_thread and conn is not tenant._writer
        return {r[0] for r in conn.execute("SELECT text FROM chunks")}

    async def run() -> None:
        assert await tenant.write(add) == 1  # the function's result comes back
        with pytest.raises(RuntimeError):
            await tenant.write(fail)
        assert await tenant.read(texts) == {"async"}
        assert (await tenant.read(tenant.config)).site == "https://acme.test/"

    anyio.run(run)


def test_checkpoint_on_close_leaves_a_complete_db_file(registry, tmp_path):
    import shutil

    tenant, _ = make(registry)
    with tenant.write() as conn:
        write_page(conn, PageWrite(url="https://acme.test/0", content_hash="0", chunks=[chunk("durable", 0)]))
    registry.close_all()
    copy = tmp_path / "copy.db"
    shutil.copyfile(registry.path("acme"), copy)  # the .db alone, no -wal
    conn = open_connection(copy)
    assert conn.execute("SELECT text FROM chunks").fetchall() == [("durable",)]
    conn.close()


def test_similar_gaps_are_grouped(registry):
    from store.conversations import Turn, gaps, save_turn

    tenant, _ = make(registry)
    base = np.zeros(DIM, dtype=np.float32)
    base[0] = 1.0
    near = base.copy()
    near[1] = 0.2
    near /= np.linalg.norm(near)
    far = np.zeros(DIM, dtype=np.float32)
    far[3] = 1.0
    with tenant.write() as conn:
        for n, (question, vector) in enumerate([("Do you sell bicycles?", base), ("do you sell bikes", near),
                                                ("Do you sell bicycles?", base), ("Is there parking?", far)]):
            save_turn(conn, Turn(conversation_id=f"c{n}", message_id=f"m{n}", question=question, answer="",
                                 confidence=0.0, lang="en", source="not_found", answered=False,
                                 gap_normalized=question.lower().strip("?"), gap_vector=vector.tobytes()))
    grouped = gaps(tenant.reader())
    assert [g.count for g in grouped] == [3, 1]
    assert grouped[0].question.lower().startswith("do you sell") and len(grouped[0].similar) == 1
    assert grouped[1].question == "Is there parking?"
