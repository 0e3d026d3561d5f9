"""The server admin's tenant list and tenant creation, and one tenant's overview (pages, languages,
next crawl, sitemap pages missing from the index and why) and crawl pages (start, cancel, live
progress over SSE)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import msgspec
from litestar import Request, Response, get, post
from litestar.response import ServerSentEvent
from litestar.response.sse import ServerSentEventMessage

from app.console.common import (
    SECURITY_HEADERS,
    base_url,
    form_of,
    form_text,
    page,
    redirect,
    signed_in,
    tenant_for,
)
from ingest.crawl.urls import UrlPolicy
from ingest.embed import MODELS
from ingest.pipeline import CrawlOptions
from store.errors import Forbidden, FrontdeskError, InvalidInput, InvalidTenantId
from store.tenants import Connection, Tenant

# -- tenants ---------------------------------------------------------------------------------


def _tenant_rows(request: Request) -> list[dict[str, Any]]:
    registry = request.app.state.ctx.registry
    rows = []
    for tenant_id in registry.ids():
        try:
            tenant = registry.get(tenant_id)
            store = tenant.store
            with tenant.reading() as conn:
                stats = store.pages.stats(conn)
                rows.append({"id": tenant_id, "config": tenant.config(conn), "pages": stats.pages,
                             "chunks": stats.chunks, "last_crawl": stats.last_crawl,
                             "gaps": len(store.conversations.open_gaps(conn, limit=1000)),
                             "questions": store.analytics.summary(conn, 7).questions, "error": ""})
        except FrontdeskError as exc:
            rows.append({"id": tenant_id, "error": exc.message})
    return rows


@get("/", include_in_schema=False)
async def home(request: Request) -> Response:
    session = await signed_in(request)
    if not session.admin:
        return redirect(f"/console/t/{session.scope}")
    rows = await anyio.to_thread.run_sync(_tenant_rows, request)
    return page(request, "tenants.html", session=session, section="tenants", tenants=rows, models=MODELS,
                form={}, error=None)


@post("/tenants", include_in_schema=False)
async def create_tenant(request: Request) -> Response:
    session = await signed_in(request)
    form = await form_of(request, session)
    if not session.admin:
        raise Forbidden("only the server admin creates tenants")
    values = {"id": form_text(form, "id", 100).lower(), "site": form_text(form, "site", 2000),
              "name": form_text(form, "name", 200),
              "model": form_text(form, "model", 100) or None,
              "allow_private_network": form.get("allow_private_network") == "on"}
    ctx = request.app.state.ctx
    try:
        tenant, token = await anyio.to_thread.run_sync(lambda: ctx.create_tenant(
            values["id"], values["site"], model=values["model"], name=values["name"],
            allow_private_network=values["allow_private_network"]))
    except (InvalidInput, FrontdeskError) as exc:
        if exc.status >= 500:
            raise
        rows = await anyio.to_thread.run_sync(_tenant_rows, request)
        named_id = isinstance(exc, InvalidTenantId) or exc.code == "tenant_exists"
        field = exc.details.get("field") or ("id" if named_id else "")
        return page(request, "tenants.html", status=exc.status, session=session, section="tenants", tenants=rows,
                    models=MODELS, form=values, error={"field": field, "message": exc.message})
    base = base_url(request)
    snippet = f'<script src="{base}/widget.js" data-key="{tenant.widget_key}" defer></script>'
    return page(request, "created.html", status=201, session=session, tenant=tenant, section="tenants",
                admin_token=token, widget_key=tenant.widget_key, snippet=snippet)


# -- a tenant's overview ---------------------------------------------------------------------

REASONS = {
    "noindex": "the page says noindex",
    "http_404": "HTTP 404 — not found",
    "http_410": "HTTP 410 — gone",
    "robots": "blocked by robots.txt",
    "calendar_trap": "excluded as junk (an endless calendar or archive chain)",
    "denied_pattern": "excluded by a deny pattern",
    "not_allowed_pattern": "not matched by the allow patterns",
    "not_html_extension": "not an HTML page",
    "off_site": "not on the site's hosts",
    "removed_from_sitemap": "removed from the sitemap",
    "canonical_elsewhere": "its canonical URL is another page",
    "indexed_as": "indexed under its canonical URL",
    "blocked_private_address": "refused: a private or metadata address",
    "not_reached": "not reached by the last crawl (robots.txt, max pages, crawl depth, or not crawled yet)",
    "timeout": "timed out",
    "too_large": "larger than the size limit",
    "not_html": "not HTML",
    "empty": "the page has no content",
    "dns_error": "the host name does not resolve",
}


def _next_crawl(request: Request, tenant: Tenant, conn: Connection) -> float | None:
    if not request.app.state.settings.scheduler:
        return None
    crawl = tenant.config(conn).crawl
    last = tenant.store.analytics.last_done(conn)
    times = []
    if crawl.full_every_days:
        times.append(last.get("full", 0.0) + crawl.full_every_days * 86400)
    if crawl.delta_every_hours:
        times.append(max(last.get("full", 0.0), last.get("delta", 0.0)) + crawl.delta_every_hours * 3600)
    return max(min(times), time.time()) if times else None


def missing_pages(tenant: Tenant, conn: Connection, limit: int = 500) -> list[dict[str, str]]:
    config = tenant.config(conn)
    policy = UrlPolicy(config.crawl, config.site)
    rows = []
    for item in tenant.store.analytics.missing_pages(conn, limit=limit):
        reason = item.reason
        if reason == "not_reached":
            reason = policy.allows(item.url) or reason
        rows.append({"url": item.url, "reason": reason, "why": REASONS.get(reason, reason.replace("_", " ")),
                     "detail": item.detail})
    return rows


def _overview(request: Request, tenant: Tenant) -> dict[str, Any]:
    file_bytes = tenant.size_bytes()  # before the read: on PostgreSQL it is a query of its own
    job = request.app.state.scheduler.job(tenant.id) if request.app.state.scheduler else None
    store = tenant.store
    with tenant.reading() as conn:
        return {"stats": store.pages.stats(conn, file_bytes=file_bytes), "languages": store.analytics.languages(conn),
                "config": tenant.config(conn), "next_crawl": _next_crawl(request, tenant, conn),
                "missing": missing_pages(tenant, conn, 500), "skipped": store.analytics.last_skipped(conn),
                "job": job, "week": store.analytics.summary(conn, 7),
                "open_gaps": len(store.conversations.open_gaps(conn)), "info": tenant.info(conn)}


@get("/t/{tenant_id:str}", include_in_schema=False)
async def overview(request: Request, tenant_id: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    data = await anyio.to_thread.run_sync(_overview, request, tenant)
    return page(request, "overview.html", session=session, tenant=tenant, section="overview", **data)


# -- crawl -----------------------------------------------------------------------------------


@get("/t/{tenant_id:str}/crawl", include_in_schema=False)
async def crawl_page(request: Request, tenant_id: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    scheduler = request.app.state.scheduler

    analytics = tenant.store.analytics

    def read(conn: Connection) -> dict[str, Any]:
        runs = analytics.crawl_runs(conn, 10)
        errors = analytics.crawl_errors(conn, runs[0].id, 100) if runs else []
        return {"runs": runs, "errors": errors}

    data = await tenant.read(read)
    job = scheduler.job(tenant.id) if scheduler else None
    return page(request, "crawl.html", session=session, tenant=tenant, section="crawl", job=job,
                running=bool(job and job.status == "running"), **data)


@post("/t/{tenant_id:str}/crawl", include_in_schema=False)
async def crawl_start(request: Request, tenant_id: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    form = await form_of(request, session)
    kind = form_text(form, "kind", 20) or "delta"
    if kind not in ("delta", "full", "reparse"):
        raise InvalidInput("choose a delta, full or reparse crawl", field="kind")
    request.app.state.scheduler.start_job(tenant.id, CrawlOptions(full=kind == "full", reparse=kind == "reparse"))
    return redirect(f"/console/t/{tenant.id}/crawl?msg=crawl_started")


@post("/t/{tenant_id:str}/crawl/cancel", include_in_schema=False)
async def crawl_cancel(request: Request, tenant_id: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    await form_of(request, session)
    cancelled = request.app.state.scheduler.cancel(tenant.id)
    return redirect(f"/console/t/{tenant.id}/crawl?msg={'crawl_cancelled' if cancelled else 'no_crawl'}")


@get("/t/{tenant_id:str}/crawl/progress", include_in_schema=False)
async def crawl_progress(request: Request, tenant_id: str) -> ServerSentEvent:
    """The scheduler's progress stream (what GET /admin/…/crawl/progress sends), for the page's
    EventSource, which carries the session cookie but no bearer token."""
    _, tenant = await tenant_for(request, tenant_id)
    scheduler = request.app.state.scheduler

    async def events() -> AsyncIterator[ServerSentEventMessage]:
        async for progress in scheduler.subscribe(tenant.id):
            yield ServerSentEventMessage(event="progress", data=msgspec.json.encode(progress).decode())
        yield ServerSentEventMessage(event="done", data=msgspec.json.encode(scheduler.job(tenant.id)).decode())

    return ServerSentEvent(events(), headers=SECURITY_HEADERS)
