"""Operations endpoints: /healthz (process up), /readyz (model loaded, tenants warmed and openable),
/metrics."""

from __future__ import annotations

import anyio
from litestar import MediaType, Request, Response, get

from store.errors import FrontdeskError


@get("/healthz", include_in_schema=False)
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@get("/readyz", include_in_schema=False)
async def readyz(request: Request) -> Response:
    state = request.app.state
    problems: dict[str, str] = {}
    if not getattr(state, "model_ready", False):
        problems["model"] = "embedding model not loaded yet"
    elif not getattr(state, "warm", False):
        problems["warm"] = "warming the tenants for their first question"

    def check_tenants() -> None:
        for tenant_id in state.ctx.registry.ids():
            try:
                state.ctx.tenant(tenant_id)
            except FrontdeskError as exc:
                problems[f"tenant:{tenant_id}"] = exc.code

    await anyio.to_thread.run_sync(check_tenants)
    status = 200 if not problems else 503
    return Response(content={"status": "ready" if status == 200 else "not_ready", "problems": problems},
                    status_code=status)


@get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    state = request.app.state
    state.metrics.queue_depth.set(state.scheduler.queue_depth() if getattr(state, "scheduler", None) else 0)
    return Response(content=state.metrics.render(), media_type=MediaType.TEXT,
                    headers={"Content-Type": state.metrics.content_type})


ROUTES = [healthz, readyz, metrics]
