"""The app factory: `create_app(settings)` builds the Litestar app; its lifespan opens the embedder,
the tenant registry, the provider and the scheduler once, and closes them (checkpointing every
tenant's WAL) on shutdown. `app` at module level serves granian: `granian --interface asgi app.asgi:app`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
from litestar import Litestar
from litestar.datastructures import State
from litestar.openapi import OpenAPIConfig
from litestar.types import ASGIApp, Receive, Scope, Send

from app import console, webhooks
from app.context import Context
from app.errors import EXCEPTION_HANDLERS
from app.jobs import CrawlFiles, CrawlLeaseBoard, SharedScheduler
from app.leader import SchedulerLeadership
from app.metrics import Metrics
from app.ratelimit import RateLimits
from app.routes import a2a, admin, ops, widget
from app.settings import Settings
from app.stack import answer_stack
from app.warm import Warmer
from app.workers import single_threaded_blas

log = logging.getLogger("frontdesk.http")


def _request_log_middleware(app: ASGIApp) -> ASGIApp:
    """One JSON log line and one latency observation per request, with a trace id."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        trace_id = uuid.uuid4().hex[:16]
        scope.setdefault("state", {})["trace_id"] = trace_id
        started = time.perf_counter()
        status = [500]

        async def send_with_trace(message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-trace-id", trace_id.encode())]
            await send(message)

        try:
            await app(scope, receive, send_with_trace)
        finally:
            seconds = time.perf_counter() - started
            litestar_app = scope.get("app")
            route = scope.get("path_template") or scope.get("path", "")
            metrics = getattr(getattr(litestar_app, "state", None), "metrics", None)
            if metrics is not None:
                metrics.requests.inc(route=route, status=str(status[0]))
                metrics.request_seconds.observe(seconds, route=route)
            log.info("request", extra={"trace_id": trace_id, "method": scope.get("method"),
                                       "path": scope.get("path"), "status": status[0],
                                       "ms": round(seconds * 1000, 2)})

    return middleware


def create_app(settings: Settings | None = None, *, ctx: Context | None = None) -> Litestar:
    settings = settings or Settings.from_env()

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        state = app.state
        own_ctx = ctx is None
        state.ctx = ctx or Context(settings)
        state.settings = settings
        state.metrics = Metrics()
        shared_limits = Path(settings.data_dir) / "ratelimits.db" if settings.workers > 1 else None
        state.ratelimits = RateLimits(settings.rate_per_ip, settings.rate_burst_ip, settings.rate_per_tenant,
                                      shared=shared_limits)
        stack = answer_stack(state.ctx, cache_entries=settings.cache_entries, cache_ttl=settings.cache_ttl,
                             metrics=state.metrics)
        state.answerer, state.cache = stack.answerer, stack.cache
        state.model_ready = state.warm = False
        state.scheduler = None
        single_threaded_blas()  # each worker, however granian started it (app/workers.py)
        # Load the weights before the first visitor asks (they take a second or two).
        await anyio.to_thread.run_sync(state.ctx.embedder().warm_up)
        state.model_ready = True
        # Then the rest of what the first question would load, tenant by tenant: /readyz says
        # ready once it is done (app/warm.py).
        warmer = Warmer(state.ctx, stack.answerer)

        async def warm_all() -> None:
            await anyio.to_thread.run_sync(warmer.warm_all)
            state.warm = True

        warming = asyncio.create_task(warm_all())

        def content_changed(tenant_id: str) -> None:
            state.cache.clear(tenant_id)
            warmer.warm_later(tenant_id)

        state.webhooks = webhooks.WebhookDispatcher(state.ctx.registry, settings)
        # Every worker takes on-demand crawls (one per tenant across them, by a flock) and answers
        # for the job another runs (app/jobs.py); the one holding DATA_DIR/scheduler.lock also runs
        # the periodic loop (app/leader.py).
        data_dir = Path(settings.data_dir)
        state.scheduler = scheduler = SharedScheduler(state.ctx.registry, state.ctx.tenant_embedder,
                                                      metrics=state.metrics, on_change=content_changed,
                                                      periodic=False, on_finish=state.webhooks.crawl_ended,
                                                      files=crawl_board(state.ctx),
                                                      page_processes=settings.page_processes)
        scheduler.tick_seconds = settings.scheduler_tick_seconds

        async def lead() -> None:
            scheduler.periodic = True
            await scheduler.start()

        state.leadership = SchedulerLeadership(data_dir, lead) if settings.scheduler else None
        if state.leadership is not None:
            await state.leadership.start()
        await state.webhooks.start()
        try:
            yield
        finally:
            await warming
            await anyio.to_thread.run_sync(warmer.close)
            if state.leadership is not None:
                await state.leadership.stop()
            if state.scheduler is not None:
                await state.scheduler.stop()
            if getattr(state, "webhooks", None) is not None:
                await state.webhooks.stop()
            await stack.aclose()
            state.ratelimits.close()
            if own_ctx:
                await anyio.to_thread.run_sync(state.ctx.close)

    return Litestar(
        route_handlers=[*widget.ROUTES, *ops.ROUTES, *admin.ROUTES, *a2a.ROUTES, *webhooks.ROUTES, *console.ROUTES],
        template_config=console.template_config(),
        lifespan=[lifespan],
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        middleware=[_request_log_middleware],
        openapi_config=OpenAPIConfig(title="frontdesk", version="0.1.0", path="/schema"),
        request_max_body_size=max(settings.max_body_bytes, 1_000_000),
        state=State({"settings": settings}),
        debug=False,
    )


def crawl_board(ctx: Context) -> CrawlFiles | CrawlLeaseBoard:
    """One crawl per tenant: among this machine's workers by flocks in DATA_DIR, or, on
    PostgreSQL, among every node on the database by crawl leases (app/jobs.py)."""
    pool = getattr(ctx.registry, "pool", None)
    if pool is None:
        return CrawlFiles(Path(ctx.settings.data_dir))
    from store.pg.leases import CrawlLeases

    return CrawlLeaseBoard(CrawlLeases(pool), ttl_s=ctx.settings.crawl_lease_seconds)


def app_from_env() -> Litestar:
    """Factory for granian (`--factory app.asgi:app_from_env`): settings and logging from env."""
    from app.logs import configure_logging

    settings = Settings.from_env()
    configure_logging(settings.log_level)
    return create_app(settings)


def __getattr__(name: str):  # `app.asgi:app` for granian, built on first access
    if name == "app":
        return app_from_env()
    raise AttributeError(name)
