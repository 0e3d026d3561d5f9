"""The admin API (bearer tokens): tenants, site config, crawls and their progress, stats, search
debug, curated answers, knowledge gaps, conversations, cache, and the page-refresh webhook.

The server admin token (FRONTDESK_ADMIN_TOKEN) reaches everything; a tenant's admin token
reaches only that tenant. Every error is `{"code", "message"}` with a 4xx/5xx status.
"""

from __future__ import annotations

import functools
import hmac
from collections.abc import AsyncIterator
from typing import Any, Literal

import anyio
import msgspec
import numpy as np
from litestar import Controller, Request, delete, get, patch, post, put
from litestar.openapi.datastructures import ResponseSpec
from litestar.response import ServerSentEvent
from litestar.response.sse import ServerSentEventMessage

from app.cache import normalize_question
from app.events import ErrorBody
from app.routes.common import bearer_token, decode_json, read_body, read_json
from ingest.pipeline import CrawlOptions
from ingest.scheduler import JobInfo
from store import conversations, curated
from store.config import SiteConfig, decode_config
from store.errors import Forbidden, InvalidInput, NotFound
from store.search import Filters, FusionParams, SearchResult
from store.tenants import Connection, Tenant, TenantInfo, validate_tenant_id


class TenantCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    id: str
    site: str
    model: str | None = None
    allow_private_network: bool = False
    name: str = ""


class TenantCreated(msgspec.Struct):
    id: str
    widget_key: str
    admin_token: str


class CrawlRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    full: bool = False
    reparse: bool = False
    max_pages: int | None = None
    rate: float | None = None


class RefreshRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    urls: list[str]


class SearchDebugRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    query: str
    k: int = 10
    mode: Literal["hybrid", "bm25", "dense"] = "hybrid"
    filters: Filters | None = None
    page_url: str | None = None
    rrf_k: float | None = None
    bm25_weight: float | None = None
    dense_weight: float | None = None


class CuratedBody(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    question: str
    answer: str
    urls: list[str] = msgspec.field(default_factory=list)
    lang: str = ""


class TenantList(msgspec.Struct):
    tenants: list[TenantInfo]


class JobStatus(msgspec.Struct):
    job: JobInfo | None


class CuratedList(msgspec.Struct):
    curated: list[curated.Curated]


class GapList(msgspec.Struct):
    gaps: list[conversations.Gap]


ERROR_RESPONSES = {
    status: ResponseSpec(data_container=ErrorBody, description=description)
    for status, description in (
        (400, "Invalid input: `{code, message}`, the field named where there is one"),
        (401, "Missing bearer token"),
        (403, "The token does not reach this tenant"),
        (404, "No such tenant or item"),
        (409, "A crawl is already running, or the tenant exists"),
    )
}


def is_server_admin(request: Request, token: str) -> bool:
    expected = request.app.state.settings.admin_token
    return bool(expected) and hmac.compare_digest(token.encode(), expected.encode())


def require_server_admin(request: Request) -> None:
    if not is_server_admin(request, bearer_token(request)):
        raise Forbidden("this needs the server admin token")


def authorized_tenant(request: Request, tenant_id: str) -> Tenant:
    """The tenant, if the bearer token is the server's or this tenant's own admin token."""
    token = bearer_token(request)
    validate_tenant_id(tenant_id)
    server_admin = is_server_admin(request, token)
    ctx = request.app.state.ctx
    if not ctx.registry.exists(tenant_id):
        if server_admin:
            raise NotFound(f"tenant {tenant_id} does not exist")
        raise Forbidden("this token does not reach that tenant")  # don't reveal which tenants exist
    tenant = ctx.registry.get(tenant_id)
    if not server_admin and not tenant.check_admin_token(token):
        raise Forbidden("this token does not reach that tenant")
    return tenant


async def _tenant(request: Request, tenant_id: str) -> Tenant:
    return await anyio.to_thread.run_sync(authorized_tenant, request, tenant_id)


async def _embed_question(request: Request, tenant: Tenant, question: str) -> np.ndarray:
    """The question's vector from the tenant's model (in a worker thread: the model runs there)."""
    ctx = request.app.state.ctx
    return await anyio.to_thread.run_sync(lambda: ctx.tenant_embedder(tenant).embed_query(question))


#: Largest admin request body, a site config included.
CONFIG_LIMIT = 256_000


async def _body(request: Request, kind: type):
    return await read_json(request, kind, CONFIG_LIMIT)


class TenantsController(Controller):
    path = "/admin/tenants"
    tags = ["admin"]

    @get("/", summary="List tenants (server admin)", responses=ERROR_RESPONSES)
    async def list_tenants(self, request: Request) -> TenantList:
        require_server_admin(request)
        ctx = request.app.state.ctx
        return TenantList(await anyio.to_thread.run_sync(lambda: [ctx.registry.get(t).info() for t in ctx.registry.ids()]))

    @post("/", status_code=201, summary="Create a tenant (server admin); the admin token is shown once", responses=ERROR_RESPONSES)
    async def create_tenant(self, request: Request) -> TenantCreated:
        require_server_admin(request)
        body = await _body(request, TenantCreate)
        ctx = request.app.state.ctx
        tenant, token = await anyio.to_thread.run_sync(
            lambda: ctx.create_tenant(body.id, body.site, model=body.model,
                                      allow_private_network=body.allow_private_network, name=body.name))
        return TenantCreated(id=tenant.id, widget_key=tenant.widget_key, admin_token=token)

    @get("/{tenant_id:str}", summary="A tenant's identity, model and schema", responses=ERROR_RESPONSES)
    async def get_tenant(self, request: Request, tenant_id: str) -> TenantInfo:
        tenant = await _tenant(request, tenant_id)
        return await tenant.read(tenant.info)

    @delete("/{tenant_id:str}", status_code=200, summary="Delete a tenant and its file (server admin)", responses=ERROR_RESPONSES)
    async def delete_tenant(self, request: Request, tenant_id: str) -> dict[str, str]:
        require_server_admin(request)
        state = request.app.state
        await _tenant(request, tenant_id)
        state.scheduler.cancel(tenant_id)
        await anyio.to_thread.run_sync(state.ctx.registry.delete, tenant_id)
        state.cache.clear(tenant_id)
        return {"deleted": tenant_id}

    @get("/{tenant_id:str}/config", summary="The tenant's site config", responses=ERROR_RESPONSES)
    async def get_config(self, request: Request, tenant_id: str) -> SiteConfig:
        tenant = await _tenant(request, tenant_id)
        return await tenant.read(tenant.config)

    @post("/{tenant_id:str}/config:validate", status_code=200, summary="Check a config without saving it", responses=ERROR_RESPONSES)
    async def validate_config(self, request: Request, tenant_id: str) -> dict[str, Any]:
        tenant = await _tenant(request, tenant_id)
        config = self._checked(await read_body(request, CONFIG_LIMIT), await tenant.read(tenant.config), request)
        return {"valid": True, "config": msgspec.to_builtins(config)}

    @put("/{tenant_id:str}/config", summary="Replace the site config (unknown fields and bad values refused)", responses=ERROR_RESPONSES)
    async def put_config(self, request: Request, tenant_id: str) -> SiteConfig:
        tenant = await _tenant(request, tenant_id)
        config = self._checked(await read_body(request, CONFIG_LIMIT), await tenant.read(tenant.config), request)
        await tenant.write(functools.partial(tenant.set_config, config))
        request.app.state.cache.clear(tenant.id)
        return config

    @patch("/{tenant_id:str}/config", summary="Change some config fields (a JSON merge patch)", responses=ERROR_RESPONSES)
    async def patch_config(self, request: Request, tenant_id: str) -> SiteConfig:
        tenant = await _tenant(request, tenant_id)
        patch_body = decode_json(await read_body(request, CONFIG_LIMIT))
        if not isinstance(patch_body, dict):
            raise InvalidInput("a config patch must be a JSON object")
        current = await tenant.read(tenant.config)
        merged = msgspec.json.encode(_merge(msgspec.to_builtins(current), patch_body))
        config = self._checked(merged, current, request)
        await tenant.write(functools.partial(tenant.set_config, config))
        request.app.state.cache.clear(tenant.id)
        return config

    @staticmethod
    def _checked(raw: bytes, current: SiteConfig, request: Request) -> SiteConfig:
        config = decode_config(raw)
        if config.model != current.model:
            raise InvalidInput("changing the model needs `frontdesk reindex` (it rebuilds every vector)",
                               field="model")
        if (config.crawl.allow_private_network != current.crawl.allow_private_network
                and not is_server_admin(request, bearer_token(request))):
            # The server's own network is the operator's, not the tenant's: the flag opens loopback,
            # private and link-local addresses to the tenant's crawler and to its webhooks.
            raise Forbidden("only the server admin token may change crawl.allow_private_network (it lets this "
                            "tenant's crawler and webhooks reach the server's private network)",
                            field="crawl.allow_private_network")
        return config

    @post("/{tenant_id:str}/crawl", status_code=202, summary="Start a crawl (delta unless full/reparse)", responses=ERROR_RESPONSES)
    async def start_crawl(self, request: Request, tenant_id: str) -> JobInfo:
        tenant = await _tenant(request, tenant_id)
        body = await _body(request, CrawlRequest)
        if body.max_pages is not None and body.max_pages < 1:
            raise InvalidInput("max_pages must be positive", field="max_pages")
        if body.rate is not None and body.rate < 0:
            raise InvalidInput("rate must not be negative", field="rate")
        return request.app.state.scheduler.start_job(tenant.id, CrawlOptions(
            full=body.full, reparse=body.reparse, max_pages=body.max_pages, rate=body.rate))

    @delete("/{tenant_id:str}/crawl", status_code=200, summary="Cancel the running crawl", responses=ERROR_RESPONSES)
    async def cancel_crawl(self, request: Request, tenant_id: str) -> dict[str, Any]:
        tenant = await _tenant(request, tenant_id)
        return {"cancelled": request.app.state.scheduler.cancel(tenant.id)}

    @get("/{tenant_id:str}/crawl", summary="The running (or last) crawl job", responses=ERROR_RESPONSES)
    async def crawl_status(self, request: Request, tenant_id: str) -> JobStatus:
        tenant = await _tenant(request, tenant_id)
        return JobStatus(request.app.state.scheduler.job(tenant.id))

    @get("/{tenant_id:str}/crawl/progress", summary="Crawl progress as Server-Sent Events", responses=ERROR_RESPONSES)
    async def crawl_progress(self, request: Request, tenant_id: str) -> ServerSentEvent:
        tenant = await _tenant(request, tenant_id)
        scheduler = request.app.state.scheduler

        async def events() -> AsyncIterator[ServerSentEventMessage]:
            async for progress in scheduler.subscribe(tenant.id):
                yield ServerSentEventMessage(event="progress", data=msgspec.json.encode(progress).decode())
            info = scheduler.job(tenant.id)
            yield ServerSentEventMessage(event="done", data=msgspec.json.encode(info).decode())

        return ServerSentEvent(events())

    @post("/{tenant_id:str}/pages:refresh", status_code=202, summary="Webhook: re-crawl these URLs now", responses=ERROR_RESPONSES)
    async def refresh_pages(self, request: Request, tenant_id: str) -> JobInfo:
        tenant = await _tenant(request, tenant_id)
        body = await _body(request, RefreshRequest)
        if not body.urls or len(body.urls) > 1000:
            raise InvalidInput("give between 1 and 1000 URLs", field="urls")
        config = await tenant.read(tenant.config)
        hosts = {config.host, *config.crawl.allowed_hosts}
        from urllib.parse import urlsplit

        for i, url in enumerate(body.urls):
            if (urlsplit(url).hostname or "").lower() not in hosts:
                raise InvalidInput(f"{url!r} is not on the tenant's site", field=f"urls[{i}]")
        return request.app.state.scheduler.start_job(tenant.id, CrawlOptions(urls=body.urls))

    @get("/{tenant_id:str}/stats", summary="Pages, chunks, coverage vs sitemap, last crawl, errors by reason", responses=ERROR_RESPONSES)
    async def get_stats(self, request: Request, tenant_id: str) -> dict[str, Any]:
        tenant = await _tenant(request, tenant_id)
        store = tenant.store

        def collect() -> dict[str, Any]:
            file_bytes = tenant.size_bytes()  # before the read: on PostgreSQL it is a query of its own
            with tenant.reading() as conn:
                data = msgspec.to_builtins(store.pages.stats(conn, file_bytes=file_bytes))
                covered, urls = data["sitemap_covered"], data["sitemap_urls"]
                data["coverage"] = round(covered / urls, 4) if urls else None
                data["errors_by_reason"] = store.analytics.last_run_errors(conn)
                data["usage"] = store.conversations.usage(conn)
                data["render"] = store.pages.render_stats(conn)  # which pages needed a browser (crawl.render)
                data["junk"] = msgspec.to_builtins(store.pages.junk_summary(conn))
            return data

        return await anyio.to_thread.run_sync(collect)

    @post("/{tenant_id:str}/search", status_code=200, summary="Search debug: hits with scores and each stage's trace", responses=ERROR_RESPONSES)
    async def search_debug(self, request: Request, tenant_id: str) -> SearchResult:
        tenant = await _tenant(request, tenant_id)
        body = await _body(request, SearchDebugRequest)
        if not 1 <= body.k <= 100:
            raise InvalidInput("k must be between 1 and 100", field="k")
        base = FusionParams()
        params = msgspec.structs.replace(
            base, **{k: v for k, v in (("rrf_k", body.rrf_k), ("bm25_weight", body.bm25_weight),
                                       ("dense_weight", body.dense_weight)) if v is not None})
        ctx = request.app.state.ctx
        config = await tenant.read(tenant.config)
        # Embedding the query and searching: one worker thread hop, not a plain read.
        return await anyio.to_thread.run_sync(lambda: ctx.search(
            tenant, body.query, k=body.k, mode=body.mode, filters=body.filters, params=params, trace=True,
            boost_url=body.page_url, boost=config.answer.page_boost if body.page_url else 0.0))

    @get("/{tenant_id:str}/curated", summary="Curated answers", responses=ERROR_RESPONSES)
    async def list_curated(self, request: Request, tenant_id: str) -> CuratedList:
        tenant = await _tenant(request, tenant_id)
        return CuratedList(await tenant.read(tenant.store.curated.all_curated))

    @post("/{tenant_id:str}/curated", status_code=201, summary="Add a curated answer", responses=ERROR_RESPONSES)
    async def add_curated(self, request: Request, tenant_id: str) -> curated.Curated:
        tenant = await _tenant(request, tenant_id)
        body = await _body(request, CuratedBody)
        vector = await _embed_question(request, tenant, body.question)

        def add(conn: Connection) -> int:
            new_id = tenant.store.curated.add(conn, question=body.question,
                                              normalized=normalize_question(body.question), answer=body.answer,
                                              urls=body.urls, lang=body.lang, vector=vector)
            tenant.bump_generation(conn)
            return new_id

        new_id = await tenant.write(add)
        return await tenant.read(lambda conn: tenant.store.curated.get(conn, new_id))

    @put("/{tenant_id:str}/curated/{curated_id:int}", summary="Replace a curated answer", responses=ERROR_RESPONSES)
    async def put_curated(self, request: Request, tenant_id: str, curated_id: int) -> curated.Curated:
        tenant = await _tenant(request, tenant_id)
        body = await _body(request, CuratedBody)
        vector = await _embed_question(request, tenant, body.question)

        def update(conn: Connection) -> None:
            tenant.store.curated.update(conn, curated_id, question=body.question,
                                        normalized=normalize_question(body.question), answer=body.answer,
                                        urls=body.urls, lang=body.lang, vector=vector)
            tenant.bump_generation(conn)

        await tenant.write(update)
        return await tenant.read(lambda conn: tenant.store.curated.get(conn, curated_id))

    @delete("/{tenant_id:str}/curated/{curated_id:int}", status_code=200, summary="Delete a curated answer", responses=ERROR_RESPONSES)
    async def delete_curated(self, request: Request, tenant_id: str, curated_id: int) -> dict[str, Any]:
        tenant = await _tenant(request, tenant_id)

        def remove(conn: Connection) -> None:
            tenant.store.curated.delete(conn, curated_id)
            tenant.bump_generation(conn)

        await tenant.write(remove)
        return {"deleted": curated_id}

    @get("/{tenant_id:str}/gaps", summary="Knowledge gaps: unanswered questions, similar ones grouped", responses=ERROR_RESPONSES)
    async def get_gaps(self, request: Request, tenant_id: str, limit: int = 100) -> GapList:
        tenant = await _tenant(request, tenant_id)
        if not 1 <= limit <= 1000:
            raise InvalidInput("limit must be between 1 and 1000", field="limit")
        return GapList(await tenant.read(lambda conn: tenant.store.conversations.gaps(conn, limit=limit)))

    @get("/{tenant_id:str}/conversations", summary="Recent conversations with their messages and feedback", responses=ERROR_RESPONSES)
    async def get_conversations(self, request: Request, tenant_id: str, limit: int = 50, offset: int = 0) -> dict[str, Any]:
        tenant = await _tenant(request, tenant_id)
        if not 1 <= limit <= 500 or offset < 0:
            raise InvalidInput("limit must be 1..500 and offset not negative", field="limit")
        items = await tenant.read(
            lambda conn: tenant.store.conversations.conversations(conn, limit=limit, offset=offset))
        return {"conversations": items}

    @delete("/{tenant_id:str}/cache", status_code=200, summary="Drop the tenant's cached answers", responses=ERROR_RESPONSES)
    async def clear_cache(self, request: Request, tenant_id: str) -> dict[str, Any]:
        tenant = await _tenant(request, tenant_id)
        return {"cleared": request.app.state.cache.clear(tenant.id)}


def _merge(target: dict, patch_body: dict) -> dict:
    """RFC 7386 JSON merge patch."""
    result = dict(target)
    for key, value in patch_body.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _merge(result[key], value)
        else:
            result[key] = value
    return result


ROUTES = [TenantsController]
