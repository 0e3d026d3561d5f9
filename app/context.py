"""The application context shared by the CLI, the HTTP app, MCP and tests: settings, the tenant
registry and the embedders (one object per model per process, loaded once)."""

from __future__ import annotations

from pathlib import Path

from app.settings import Settings
from ingest.embed import MODELS, Embedder, shared_embedder
from store import text_index, vector_index
from store.config import CrawlSettings, SiteConfig, validate_config
from store.errors import InvalidConfig, ModelMismatch
from store.migrations import model_mismatch
from store.search import DEFAULT_FUSION, Filters, FusionParams, Mode, SearchResult
from store.tenants import Connection, Registry, Tenant, TenantRegistry, validate_tenant_id


class Context:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.data_dir = Path(settings.data_dir)
        self.registry: Registry = open_registry(settings)
        vector_index.configure(settings.vector_memory_mb)
        text_index.configure(settings.text_memory_mb)

    def embedder(self, model: str | None = None) -> Embedder:
        return shared_embedder(
            model or self.settings.model,
            cache_dir=self.settings.model_cache,
            threads=self.settings.embed_threads or None,
            batch=self.settings.embed_batch or None,
        )

    def tenant(self, tenant_id: str) -> Tenant:
        """Open a tenant, refusing a file whose vectors came from another model than its config names."""
        tenant = self.registry.get(validate_tenant_id(tenant_id))
        self.tenant_embedder(tenant)
        return tenant

    def tenant_embedder(self, tenant: Tenant, conn: Connection | None = None) -> Embedder:
        """The embedder a tenant's vectors were made with (checked against its config and weights),
        read on `conn` when the caller is inside a unit of work of the tenant already."""
        if conn is None:
            with tenant.reading() as conn:
                return self.tenant_embedder(tenant, conn)
        model = tenant.config(conn).model
        if model not in MODELS:
            raise ModelMismatch(
                f"tenant {tenant.id} uses model {model!r}, which this build does not have; "
                f"run `frontdesk reindex {tenant.id}` to rebuild it with one of {', '.join(MODELS)}"
            )
        embedder = self.embedder(model)
        meta = tenant.store.migrations.read_meta(conn)  # once: every question comes through here
        if (mismatch := model_mismatch(meta, tenant.id, embedder.id, embedder.dim)) is not None:
            raise mismatch
        stored = meta.get("embedder_fingerprint", embedder.fingerprint)
        if stored != embedder.fingerprint:
            raise ModelMismatch(
                f"tenant {tenant.id} was indexed with different weights of {embedder.id} "
                f"({stored} vs {embedder.fingerprint}); run `frontdesk reindex {tenant.id}`"
            )
        return embedder

    def create_tenant(self, tenant_id: str, site: str, *, model: str | None = None,
                      allow_private_network: bool = False, name: str = "") -> tuple[Tenant, str]:
        validate_tenant_id(tenant_id)
        model = model or self.settings.model
        if model not in MODELS:
            raise InvalidConfig(f"unknown model {model!r}; choose one of {', '.join(MODELS)}", field="model")
        config = validate_config(
            SiteConfig(site=site, name=name or tenant_id, model=model,
                       crawl=CrawlSettings(allow_private_network=allow_private_network))
        )
        embedder = self.embedder(model)
        return self.registry.create(
            config, tenant_id, embedder_id=embedder.id, dim=embedder.dim, fingerprint=embedder.fingerprint
        )

    def search(self, tenant: Tenant, query: str, *, k: int = 10, mode: Mode = "hybrid",
               filters: Filters | None = None, params: FusionParams | None = None,
               trace: bool = False, boost_url: str | None = None, boost: float = 0.0) -> SearchResult:
        vector = None if mode == "bm25" else self.tenant_embedder(tenant).embed_query(query)
        with tenant.reading() as conn:
            result: SearchResult = tenant.store.search.search(
                conn, query, vector, k=k, mode=mode, filters=filters, trace=trace, boost_url=boost_url,
                boost=boost, params=params if params is not None else DEFAULT_FUSION)
            if trace:
                result.coverage = tenant.store.search.term_coverage(conn, query)
        return result

    def close(self) -> None:
        self.registry.close_all()
        close_registry(self.registry)


def open_registry(settings: Settings) -> Registry:
    """The tenants of the configured backend: a PostgreSQL database when FRONTDESK_DATABASE_URL
    is set (a pool of FRONTDESK_DATABASE_POOL_SIZE connections), else the files under DATA_DIR."""
    url = settings.database_url.strip()
    if not url:
        return TenantRegistry(Path(settings.data_dir))
    from store.pg.backend import postgres_registry

    return postgres_registry(url, pool_size=settings.database_pool_size)


def close_registry(registry: Registry) -> None:
    """Give a PostgreSQL registry's pooled connections back to the server (files need nothing)."""
    pool = getattr(registry, "pool", None)
    if pool is not None:
        pool.close()
