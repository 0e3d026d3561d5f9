"""The public widget API: POST /v1/chat (SSE), POST /v1/feedback, CORS preflights, /widget.js."""

from __future__ import annotations

import gzip
import hashlib
import ipaddress
import logging
import time
from collections.abc import AsyncIterator
from functools import lru_cache
from pathlib import Path

import anyio
import msgspec
from litestar import Request, Response, get, post, route
from litestar.openapi.datastructures import ResponseSpec
from litestar.response import ServerSentEvent
from litestar.response.sse import ServerSentEventMessage

from app.answer import Answerer
from app.events import ChatRequest, ErrorBody, ErrorEvent, FeedbackRequest, event_name
from app.question import check_question
from app.routes.common import read_json
from store.config import SiteConfig
from store.errors import Forbidden, FrontdeskError, Unauthorized
from store.tenants import Tenant

log = logging.getLogger("frontdesk.widget")

WIDGET_DIR = Path(__file__).resolve().parents[2] / "widget"
CORS_HEADERS = {
    "Access-Control-Allow-Methods": "POST, OPTIONS",
    "Access-Control-Allow-Headers": "Content-Type",
    "Access-Control-Max-Age": "600",
}


def client_ip(request: Request) -> str:
    """The visitor's address: the TCP peer, or behind a trusted proxy (`trust_proxy`) the last
    X-Forwarded-For entry — the one that proxy appended. Entries to its left come from the client
    and are whatever it chose to send, so they never count; nor does an entry that is not an IP."""
    peer = request.client.host if request.client else "unknown"
    if request.app.state.settings.trust_proxy:
        last = request.headers.get("x-forwarded-for", "").rsplit(",", 1)[-1].strip()
        try:
            return str(ipaddress.ip_address(last))
        except ValueError:
            return peer
    return peer


def allowed_origin(config: SiteConfig, origin: str | None) -> bool:
    """Requests without an Origin (servers, curl) pass; browsers must come from the tenant's site."""
    if not origin:
        return True
    allowed = {config.origin, *(o.rstrip("/").lower() for o in config.allowed_origins)}
    return origin.rstrip("/").lower() in allowed or "*" in allowed


def resolve_tenant(request: Request, key: str) -> Tenant:
    ctx = request.app.state.ctx
    tenant_id = ctx.registry.tenant_for_key(key) if key else None
    if tenant_id is None:
        raise Unauthorized("unknown widget key")
    tenant = ctx.tenant(tenant_id)
    if tenant.widget_key != key:  # the key index is a cache; the file is the truth
        raise Unauthorized("unknown widget key")
    return tenant


def cors(origin: str | None) -> dict[str, str]:
    return {"Access-Control-Allow-Origin": origin, "Vary": "Origin"} if origin else {"Vary": "Origin"}


@route(["/v1/chat", "/v1/feedback"], http_method="OPTIONS", include_in_schema=False)
async def preflight(request: Request) -> Response:
    # The preflight carries no widget key, so it cannot know the tenant: it is answered for any
    # origin, and the POST itself is refused unless its Origin belongs to the key's tenant.
    origin = request.headers.get("origin")
    return Response(content=b"", status_code=204, headers={**CORS_HEADERS, **cors(origin)})


async def _sse(answerer: Answerer, tenant: Tenant, body: ChatRequest,
               received: float) -> AsyncIterator[ServerSentEventMessage]:
    events = answerer.stream(tenant, body, received=received)
    try:
        async for event in events:
            yield ServerSentEventMessage(event=event_name(event), data=msgspec.json.encode(event).decode())
    except FrontdeskError as exc:
        error = ErrorEvent(code=exc.code, message=exc.message)
        yield ServerSentEventMessage(event="error", data=msgspec.json.encode(error).decode())
    except Exception:
        log.exception("answer stream failed for tenant %s", tenant.id)
        error = ErrorEvent(code="internal_error", message="the answer could not be completed; please try again")
        yield ServerSentEventMessage(event="error", data=msgspec.json.encode(error).decode())
    finally:
        await events.aclose()


WIDGET_ERRORS = {
    status: ResponseSpec(data_container=ErrorBody, description=description)
    for status, description in (
        (400, "Invalid request or empty question: `{code, message}`"),
        (401, "Unknown widget key"),
        (403, "The request's Origin is not allowed for this key"),
        (413, "Body or question too long"),
        (429, "Rate limited; see Retry-After"),
    )
}


@post("/v1/chat", status_code=200, summary="Ask a question; answer streamed as Server-Sent Events",
      responses=WIDGET_ERRORS)
async def chat(request: Request) -> Response:
    received = time.perf_counter()  # the answer's TTFT counts from here, the wait for a turn too
    state = request.app.state
    origin = request.headers.get("origin")
    body = await read_json(request, ChatRequest, state.settings.max_body_bytes)
    tenant = await anyio.to_thread.run_sync(resolve_tenant, request, body.key)
    if not allowed_origin(await tenant.read(tenant.config), origin):
        raise Forbidden("this site is not allowed to use this widget key")
    # Bad input is refused here, with a JSON error and a 4xx status, before any stream starts.
    body.question = check_question(body.question, state.settings.max_question_chars)
    state.ratelimits.check(tenant.id, client_ip(request))
    return ServerSentEvent(_sse(state.answerer, tenant, body, received), headers=cors(origin))


@post("/v1/feedback", status_code=200, summary="Thumbs up or down on an answer", responses=WIDGET_ERRORS)
async def feedback(request: Request) -> Response:
    state = request.app.state
    origin = request.headers.get("origin")
    body = await read_json(request, FeedbackRequest, 8_000)
    tenant = await anyio.to_thread.run_sync(resolve_tenant, request, body.key)
    if not allowed_origin(await tenant.read(tenant.config), origin):
        raise Forbidden("this site is not allowed to use this widget key")
    state.ratelimits.check(tenant.id, client_ip(request))

    rating = 1 if body.rating == "up" else -1
    await tenant.write(lambda conn: tenant.store.conversations.set_feedback(
        conn, body.message_id, rating, body.conversation_id))
    if body.rating == "down" and getattr(state, "webhooks", None) is not None:
        await state.webhooks.feedback_negative(tenant, body.message_id)  # the feedback.negative webhook
    return Response(content={"ok": True}, headers=cors(origin))


@lru_cache(maxsize=4)
def _static(name: str) -> tuple[bytes, bytes, str]:
    raw = (WIDGET_DIR / name).read_bytes()
    return raw, gzip.compress(raw, 9, mtime=0), '"' + hashlib.sha256(raw).hexdigest()[:20] + '"'


@get("/widget.js", include_in_schema=False)
async def widget_js(request: Request) -> Response:
    raw, packed, etag = _static("widget.js")
    headers = {"Cache-Control": "public, max-age=3600", "ETag": etag, "Vary": "Accept-Encoding",
               "Access-Control-Allow-Origin": "*", "X-Content-Type-Options": "nosniff"}
    if request.headers.get("if-none-match") == etag:
        return Response(content=b"", status_code=304, headers=headers)
    if "gzip" in request.headers.get("accept-encoding", ""):
        return Response(content=packed, media_type="application/javascript; charset=utf-8",
                        headers={**headers, "Content-Encoding": "gzip"})
    return Response(content=raw, media_type="application/javascript; charset=utf-8", headers=headers)


ROUTES = [preflight, chat, feedback, widget_js]
