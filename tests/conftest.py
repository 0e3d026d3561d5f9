"""Shared test fixtures: paths to ../shared/fixtures, a temp data dir, the real embedders."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.context import Context
from app.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT.parent / "shared" / "fixtures"
SITES = FIXTURES / "sites"
PYPUG = SITES / "pypug"
FASTAPI = SITES / "fastapi"
PYPUG_ORIGIN = "http://127.0.0.1:8766"
FASTAPI_ORIGIN = "http://127.0.0.1:8765"

# One model cache for the whole test session: the int8 copy is made once (~3 s).
_MODEL_CACHE = Path.home() / ".cache" / "frontdesk-tests"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    (path / "models").symlink_to(_MODEL_CACHE, target_is_directory=True)
    _MODEL_CACHE.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def ctx(data_dir: Path):
    context = Context(Settings(data_dir=str(data_dir)))
    yield context
    context.close()


def fresh_context(tmp_path_factory, name: str) -> Context:
    """A Context on a new data dir that shares the session's model cache."""
    data = tmp_path_factory.mktemp(name) / "data"
    data.mkdir()
    _MODEL_CACHE.mkdir(parents=True, exist_ok=True)
    (data / "models").symlink_to(_MODEL_CACHE, target_is_directory=True)
    return Context(Settings(data_dir=str(data)))


def folder_context(tmp_path_factory, tenant_id: str, root: Path, origin: str) -> Context:
    """A fresh Context with one tenant indexed from a fixture folder served at `origin`."""
    from ingest.folder import index_folder

    context = fresh_context(tmp_path_factory, tenant_id)
    tenant, _ = context.create_tenant(tenant_id, origin + "/")
    index_folder(tenant, context.tenant_embedder(tenant), root, origin + "/")
    return context


@pytest.fixture(scope="session")
def pypug_ctx(tmp_path_factory):
    """A tenant indexed from the pypug fixture folder, shared by the read-only tests."""
    context = folder_context(tmp_path_factory, "pypug", PYPUG, PYPUG_ORIGIN)
    yield context
    context.close()


@pytest.fixture(scope="module")
def pg_url():
    """A throwaway PostgreSQL 18 with pgvector (tests/pg.py) for one test module."""
    from tests.pg import postgres_server

    with postgres_server() as url:
        yield url


@pytest.fixture(scope="module")
def pg(pg_url):
    """The tenants of that server, through a pool of up to six connections."""
    from store.pg.connect import open_pool
    from store.pg.tenants import PgTenants

    pool = open_pool(pg_url, max_size=6)
    yield PgTenants(pool)
    pool.close()
