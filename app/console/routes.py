"""The console's routes: sign-in, tenants, and each tenant's overview, crawl (live progress over
SSE), knowledge gaps turned into curated answers, curated answers, conversations, analytics,
coverage, site config, widget preview and webhooks. Every tenant URL checks that the session
reaches that tenant; every POST checks the session's CSRF token and the request's origin."""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import anyio
import msgspec
from jinja2 import Environment, FileSystemLoader
from litestar import MediaType, Request, Response, Router, get, post
from litestar.exceptions import HTTPException
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.response import Redirect, ServerSentEvent, Template
from litestar.response.sse import ServerSentEventMessage
from litestar.template.config import TemplateConfig

from app.answer import check_question
from app.cache import normalize_question
from app.console import auth, gaps, views
from app.events import ChatRequest, ErrorEvent, event_name
from app.routes.widget import client_ip
from app.webhooks import change_endpoint, create_endpoint, remove_endpoint, rotate_secret, send_test
from ingest.crawl.urls import UrlPolicy
from ingest.embed import MODELS
from ingest.pipeline import CrawlOptions
from store import analytics, conversations, curated
from store import webhooks as outbox
from store.config import SiteConfig, decode_config
from store.errors import (
    Forbidden,
    FrontdeskError,
    InvalidConfig,
    InvalidInput,
    InvalidTenantId,
    NotFound,
    RateLimited,
    Unauthorized,
)
from store.pages import stats as page_stats
from store.tenants import Tenant, validate_tenant_id

log = logging.getLogger("frontdesk.console")

HERE = Path(__file__).resolve().parent
STATIC = {name: HERE / "static" / name for name in ("console.css", "console.js")}
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cache-Control": "no-store",
}
PAGE_SIZE = 20
MESSAGES = {
    "signed_out": "You are signed out.",
    "crawl_started": "The crawl has started.",
    "crawl_cancelled": "The crawl is being cancelled.",
    "no_crawl": "No crawl was running.",
    "published": "The curated answer is published and the gap is resolved.",
    "dismissed": "The gap is dismissed.",
    "curated_saved": "The curated answer is saved.",
    "curated_deleted": "The curated answer is deleted.",
    "config_saved": "The site config is saved.",
    "webhook_updated": "The webhook is updated.",
    "webhook_deleted": "The webhook is deleted.",
    "webhook_test": "A webhook.test delivery is queued.",
}


class SignInRequired(Unauthorized):
    code = "sign_in_required"


def template_config() -> TemplateConfig:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True, trim_blocks=True,
                      lstrip_blocks=True)
    views.install_filters(env)
    return TemplateConfig(instance=JinjaTemplateEngine.from_environment(env))


def _keys(request: Request) -> auth.Keys:
    state = request.app.state
    keys = getattr(state, "console_keys", None)
    if keys is None:
        keys = state.console_keys = auth.Keys(auth.load_secret(state.settings))
        state.console_brake = auth.LoginBrake()
    return keys


def _static_version() -> str:
    digest = hashlib.sha256()
    for path in STATIC.values():
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


_VERSION = _static_version()


def page(request: Request, name: str, *, status: int = 200, session: auth.Session | None = None,
         tenant: Tenant | None = None, section: str = "", **context: Any) -> Template:
    keys = _keys(request)
    return Template(template_name=name, status_code=status, headers=SECURITY_HEADERS, media_type=MediaType.HTML,
                    context={"session": session, "csrf": keys.csrf(session) if session else "",
                             "csrf_field": auth.CSRF_FIELD, "tenant": tenant, "tenant_id": tenant.id if tenant else "",
                             "section": section, "version": _VERSION,
                             "message": MESSAGES.get(request.query_params.get("msg", "")), **context})


def redirect(path: str) -> Redirect:
    return Redirect(path=path, status_code=303, headers=SECURITY_HEADERS)


# -- who is asking ---------------------------------------------------------------------------


def _current(request: Request) -> auth.Session | None:
    session = _keys(request).session(request.cookies.get(auth.COOKIE))
    if session is None:
        return None
    state = request.app.state
    if session.admin:
        token = state.settings.admin_token
        ok = bool(token) and session.fingerprint == auth.admin_fingerprint(token)
    else:
        registry = state.ctx.registry
        try:
            ok = registry.exists(session.scope) and session.fingerprint == auth.tenant_fingerprint(
                registry.get(session.scope).admin_token_hash)
        except FrontdeskError:
            ok = False
    return session if ok else None


async def signed_in(request: Request) -> auth.Session:
    session = await anyio.to_thread.run_sync(_current, request)
    if session is None:
        raise SignInRequired("sign in to use the console")
    return session


async def tenant_for(request: Request, tenant_id: str) -> tuple[auth.Session, Tenant]:
    """The session and the tenant, if the session reaches it. A tenant session gets the same
    refusal for another tenant and for one that does not exist."""
    session = await signed_in(request)
    try:
        validate_tenant_id(tenant_id)
    except InvalidTenantId:
        raise (NotFound("there is no such tenant") if session.admin else Forbidden(
            "this sign-in reaches only its own tenant")) from None
    if not session.reaches(tenant_id):
        raise Forbidden("this sign-in reaches only its own tenant")
    registry = request.app.state.ctx.registry
    if not registry.exists(tenant_id):
        raise NotFound(f"there is no tenant {tenant_id}")
    return session, await anyio.to_thread.run_sync(registry.get, tenant_id)


async def form_of(request: Request, session: auth.Session):
    """The posted form, after the CSRF token and the request's origin are checked."""
    origin = request.headers.get("origin")
    if origin and urlsplit(origin).netloc != request.headers.get("host", ""):
        raise Forbidden("a form from another site was refused")
    if request.headers.get("sec-fetch-site") == "cross-site":
        raise Forbidden("a form from another site was refused")
    form = await request.form()
    if not _keys(request).check_csrf(session, str(form.get(auth.CSRF_FIELD) or "")):
        raise Forbidden("the form's security token is missing or stale: reload the page and try again")
    return form


def _text(form, name: str, limit: int = 10_000) -> str:
    value = form.get(name)
    return str(value).strip()[:limit] if value is not None else ""


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _base_url(request: Request) -> str:
    public = request.app.state.settings.public_url.rstrip("/")
    return public or f"{request.url.scheme}://{request.headers.get('host', '')}"


# -- sign-in ---------------------------------------------------------------------------------


def _login_page(request: Request, *, error: str = "", status: int = 200, next_url: str = "") -> Template:
    nonce = request.cookies.get(auth.LOGIN_COOKIE) or secrets.token_urlsafe(18)
    response = page(request, "login.html", status=status, error=error, next_url=next_url,
                    login_csrf=_keys(request).login_csrf(nonce))
    response.set_cookie(auth.LOGIN_COOKIE, nonce, path="/console", httponly=True, samesite="strict",
                        secure=_secure(request), max_age=3600)
    return response


def _secure(request: Request) -> bool:
    return request.url.scheme == "https" or request.app.state.settings.public_url.startswith("https:")


def _safe_next(value: str) -> str:
    return value if value.startswith("/console") and not value.startswith("//") and "\\" not in value else "/console"


@get("/login", include_in_schema=False)
async def login_form(request: Request) -> Response:
    if await anyio.to_thread.run_sync(_current, request) is not None:
        return redirect("/console")
    return _login_page(request, next_url=_safe_next(request.query_params.get("next", "")))


def _who(request: Request, token: str, tenant_id: str) -> tuple[str, str] | None:
    """(scope, fingerprint) for a server or tenant admin token, else None."""
    state = request.app.state
    admin = state.settings.admin_token
    if admin and hmac.compare_digest(token.encode(), admin.encode()):
        return "*", auth.admin_fingerprint(admin)
    registry = state.ctx.registry
    candidates = [tenant_id] if tenant_id else registry.ids()
    for candidate in candidates:
        try:
            if not registry.exists(validate_tenant_id(candidate)):
                continue
            tenant = registry.get(candidate)
        except FrontdeskError:
            continue
        if tenant.check_admin_token(token):
            return tenant.id, auth.tenant_fingerprint(tenant.admin_token_hash)
    return None


@post("/login", include_in_schema=False)
async def login(request: Request) -> Response:
    keys = _keys(request)
    brake: auth.LoginBrake = request.app.state.console_brake
    client = client_ip(request)
    form = await request.form()
    next_url = _safe_next(_text(form, "next", 500))
    if not keys.check_login_csrf(request.cookies.get(auth.LOGIN_COOKIE), _text(form, auth.CSRF_FIELD, 200)):
        return _login_page(request, status=403, next_url=next_url,
                           error="The sign-in form expired or came from another site. Please try again.")
    wait = brake.blocked_for(client)
    if wait:
        raise RateLimited(f"too many wrong tokens from your address: try again in {int(wait) + 1} s",
                          retry_after=wait)
    token = _text(form, "token", 500)
    tenant_id = _text(form, "tenant", 100).lower()
    found = await anyio.to_thread.run_sync(_who, request, token, tenant_id) if token else None
    if found is None:
        brake.failed(client)
        message = ("Enter the server admin token or a tenant's admin token." if not token else
                   "That token is neither the server admin token nor the admin token of "
                   + (f"tenant “{tenant_id}”." if tenant_id else "a tenant."))
        return _login_page(request, status=401, error=message, next_url=next_url)
    brake.succeeded(client)
    hours = request.app.state.settings.console_session_hours
    value, session = keys.issue(found[0], found[1], hours)
    target = next_url if session.admin or next_url.startswith(f"/console/t/{session.scope}") else "/console"
    response = redirect(target)
    response.set_cookie(auth.COOKIE, value, path="/console", httponly=True, samesite="strict",
                        secure=_secure(request), max_age=int(hours * 3600))
    response.delete_cookie(auth.LOGIN_COOKIE, path="/console")
    return response


@post("/logout", include_in_schema=False)
async def logout(request: Request) -> Response:
    session = await signed_in(request)
    await form_of(request, session)
    response = redirect("/console/login?msg=signed_out")
    response.delete_cookie(auth.COOKIE, path="/console")
    return response


# -- tenants ---------------------------------------------------------------------------------


def _tenant_rows(request: Request) -> list[dict[str, Any]]:
    registry = request.app.state.ctx.registry
    rows = []
    for tenant_id in registry.ids():
        try:
            tenant = registry.get(tenant_id)
            conn = tenant.reader()
            stats = page_stats(conn)
            rows.append({"id": tenant_id, "config": tenant.config(), "pages": stats.pages, "chunks": stats.chunks,
                         "last_crawl": stats.last_crawl, "gaps": len(conversations.open_gaps(conn, limit=1000)),
                         "questions": analytics.summary(conn, 7).questions, "error": ""})
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
    values = {"id": _text(form, "id", 100).lower(), "site": _text(form, "site", 2000), "name": _text(form, "name", 200),
              "model": _text(form, "model", 100) or None,
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
    base = _base_url(request)
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


def _next_crawl(request: Request, tenant: Tenant, conn) -> float | None:
    if not request.app.state.settings.scheduler:
        return None
    crawl = tenant.config().crawl
    last = analytics.last_done(conn)
    times = []
    if crawl.full_every_days:
        times.append(last.get("full", 0.0) + crawl.full_every_days * 86400)
    if crawl.delta_every_hours:
        times.append(max(last.get("full", 0.0), last.get("delta", 0.0)) + crawl.delta_every_hours * 3600)
    return max(min(times), time.time()) if times else None


def _missing(tenant: Tenant, conn, limit: int = 500) -> list[dict[str, str]]:
    config = tenant.config()
    policy = UrlPolicy(config.crawl, config.site)
    rows = []
    for item in analytics.missing_pages(conn, limit=limit):
        reason = item.reason
        if reason == "not_reached":
            reason = policy.allows(item.url) or reason
        rows.append({"url": item.url, "reason": reason, "why": REASONS.get(reason, reason.replace("_", " ")),
                     "detail": item.detail})
    return rows


def _overview(request: Request, tenant: Tenant) -> dict[str, Any]:
    conn = tenant.reader()
    stats = page_stats(conn, file_bytes=tenant.path.stat().st_size)
    job = request.app.state.scheduler.job(tenant.id) if request.app.state.scheduler else None
    return {"stats": stats, "languages": analytics.languages(conn), "config": tenant.config(),
            "next_crawl": _next_crawl(request, tenant, conn), "missing": _missing(tenant, conn, 500),
            "skipped": analytics.last_skipped(conn), "job": job, "week": analytics.summary(conn, 7),
            "open_gaps": len(conversations.open_gaps(conn)), "info": tenant.info()}


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

    def read() -> dict[str, Any]:
        conn = tenant.reader()
        runs = analytics.crawl_runs(conn, 10)
        errors = analytics.crawl_errors(conn, runs[0].id, 100) if runs else []
        return {"runs": runs, "errors": errors}

    data = await anyio.to_thread.run_sync(read)
    job = scheduler.job(tenant.id) if scheduler else None
    return page(request, "crawl.html", session=session, tenant=tenant, section="crawl", job=job,
                running=bool(job and job.status == "running"), **data)


@post("/t/{tenant_id:str}/crawl", include_in_schema=False)
async def crawl_start(request: Request, tenant_id: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    form = await form_of(request, session)
    kind = _text(form, "kind", 20) or "delta"
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


# -- knowledge gaps → curated answers --------------------------------------------------------


@get("/t/{tenant_id:str}/gaps", include_in_schema=False)
async def gaps_page(request: Request, tenant_id: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    ctx = request.app.state.ctx
    found = await anyio.to_thread.run_sync(gaps.clusters, ctx, tenant)
    return page(request, "gaps.html", session=session, tenant=tenant, section="gaps", clusters=found,
                questions=sum(len(c.questions) for c in found))


async def _cluster(request: Request, tenant: Tenant, gap_id: int) -> gaps.GapCluster:
    found = await anyio.to_thread.run_sync(gaps.cluster_of, request.app.state.ctx, tenant, gap_id)
    if found is None:
        raise NotFound("that knowledge gap is resolved or does not exist")
    return found


@get("/t/{tenant_id:str}/gaps/{gap_id:int}", include_in_schema=False)
async def gap_draft(request: Request, tenant_id: str, gap_id: int) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    cluster = await _cluster(request, tenant, gap_id)
    state = request.app.state
    draft = await anyio.to_thread.run_sync(gaps.draft, state.answerer, state.ctx, tenant, cluster)
    return page(request, "draft.html", session=session, tenant=tenant, section="gaps", cluster=cluster,
                draft=draft, form={"question": draft.question, "answer": draft.answer, "urls": "\n".join(draft.urls)},
                error=None)


def _save_curated(request: Request, tenant: Tenant, curated_id: int | None, question: str, answer: str,
                  urls: list[str], resolve: list[int] | None = None) -> int:
    """Add or replace a curated answer (embedding its question); optionally resolve gaps with it."""
    for i, url in enumerate(urls):
        if urlsplit(url).scheme not in ("http", "https"):
            raise InvalidInput(f"{url!r} is not an http(s) link", field="urls" if i == 0 else f"urls[{i}]")
    vector = request.app.state.ctx.tenant_embedder(tenant).embed_query(question) if question.strip() else None
    with tenant.write() as conn:
        if curated_id is None:
            curated_id = curated.add(conn, question=question, normalized=normalize_question(question), answer=answer,
                                     urls=urls, lang="", vector=vector)
        else:
            curated.update(conn, curated_id, question=question, normalized=normalize_question(question),
                           answer=answer, urls=urls, lang="", vector=vector)
        if resolve:
            conversations.resolve_gaps(conn, resolve, curated_id)
        tenant.bump_generation(conn)
    return curated_id


@post("/t/{tenant_id:str}/gaps/{gap_id:int}/publish", include_in_schema=False)
async def gap_publish(request: Request, tenant_id: str, gap_id: int) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    form = await form_of(request, session)
    cluster = await _cluster(request, tenant, gap_id)
    question, answer = _text(form, "question", 2000), _text(form, "answer", 10_000)
    urls = _lines(_text(form, "urls", 20_000))
    try:
        await anyio.to_thread.run_sync(_save_curated, request, tenant, None, question, answer, urls, cluster.ids)
    except InvalidInput as exc:
        state = request.app.state
        draft = await anyio.to_thread.run_sync(gaps.draft, state.answerer, state.ctx, tenant, cluster)
        return page(request, "draft.html", status=400, session=session, tenant=tenant, section="gaps",
                    cluster=cluster, draft=draft,
                    form={"question": question, "answer": answer, "urls": "\n".join(urls)},
                    error={"field": exc.details.get("field", ""), "message": exc.message})
    request.app.state.cache.clear(tenant.id)
    return redirect(f"/console/t/{tenant.id}/gaps?msg=published")


@post("/t/{tenant_id:str}/gaps/{gap_id:int}/dismiss", include_in_schema=False)
async def gap_dismiss(request: Request, tenant_id: str, gap_id: int) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    await form_of(request, session)
    cluster = await _cluster(request, tenant, gap_id)

    def write() -> None:
        with tenant.write() as conn:
            conversations.resolve_gaps(conn, cluster.ids, None)

    await anyio.to_thread.run_sync(write)
    return redirect(f"/console/t/{tenant.id}/gaps?msg=dismissed")


# -- curated answers -------------------------------------------------------------------------


def _curated_test(request: Request, tenant: Tenant, question: str) -> dict[str, Any]:
    from app.answer import CURATED_SIMILARITY

    embedder = request.app.state.ctx.tenant_embedder(tenant)
    vector = embedder.embed_query(question)
    conn = tenant.reader()
    match = curated.match(conn, normalize_question(question), vector, CURATED_SIMILARITY)
    nearest = sorted(((float(vector @ v), item) for item, v in curated.curated_vectors(conn)), key=lambda p: -p[0])[:3]
    return {"question": question, "match": match, "threshold": CURATED_SIMILARITY,
            "nearest": [{"similarity": round(s, 3), "item": item} for s, item in nearest]}


@get("/t/{tenant_id:str}/curated", include_in_schema=False)
async def curated_page(request: Request, tenant_id: str, q: str = "") -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    items = await anyio.to_thread.run_sync(lambda: curated.all_curated(tenant.reader()))
    test = await anyio.to_thread.run_sync(_curated_test, request, tenant, q.strip()[:2000]) if q.strip() else None
    return page(request, "curated.html", session=session, tenant=tenant, section="curated", items=items, test=test,
                form={}, error=None)


@post("/t/{tenant_id:str}/curated", include_in_schema=False)
async def curated_create(request: Request, tenant_id: str) -> Response:
    return await _curated_save(request, tenant_id, None)


@get("/t/{tenant_id:str}/curated/{curated_id:int}", include_in_schema=False)
async def curated_edit(request: Request, tenant_id: str, curated_id: int) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    item = await anyio.to_thread.run_sync(lambda: curated.get(tenant.reader(), curated_id))
    return page(request, "curated_edit.html", session=session, tenant=tenant, section="curated", item=item,
                form={"question": item.question, "answer": item.answer, "urls": "\n".join(item.urls)}, error=None)


@post("/t/{tenant_id:str}/curated/{curated_id:int}", include_in_schema=False)
async def curated_update(request: Request, tenant_id: str, curated_id: int) -> Response:
    return await _curated_save(request, tenant_id, curated_id)


async def _curated_save(request: Request, tenant_id: str, curated_id: int | None) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    form = await form_of(request, session)
    values = {"question": _text(form, "question", 2000), "answer": _text(form, "answer", 10_000),
              "urls": _text(form, "urls", 20_000)}
    try:
        await anyio.to_thread.run_sync(_save_curated, request, tenant, curated_id, values["question"],
                                       values["answer"], _lines(values["urls"]))
    except InvalidInput as exc:
        error = {"field": exc.details.get("field", ""), "message": exc.message}
        if curated_id is None:
            items = await anyio.to_thread.run_sync(lambda: curated.all_curated(tenant.reader()))
            return page(request, "curated.html", status=400, session=session, tenant=tenant, section="curated",
                        items=items, test=None, form=values, error=error)
        item = await anyio.to_thread.run_sync(lambda: curated.get(tenant.reader(), curated_id))
        return page(request, "curated_edit.html", status=400, session=session, tenant=tenant, section="curated",
                    item=item, form=values, error=error)
    request.app.state.cache.clear(tenant.id)
    return redirect(f"/console/t/{tenant.id}/curated?msg=curated_saved")


@post("/t/{tenant_id:str}/curated/{curated_id:int}/delete", include_in_schema=False)
async def curated_delete(request: Request, tenant_id: str, curated_id: int) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    await form_of(request, session)

    def write() -> None:
        with tenant.write() as conn:
            curated.delete(conn, curated_id)
            tenant.bump_generation(conn)

    await anyio.to_thread.run_sync(write)
    request.app.state.cache.clear(tenant.id)
    return redirect(f"/console/t/{tenant.id}/curated?msg=curated_deleted")


# -- conversations, analytics, coverage ------------------------------------------------------


@get("/t/{tenant_id:str}/conversations", include_in_schema=False)
async def conversations_page(request: Request, tenant_id: str, show: str = "", page_number: int = 1) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    if show not in ("", "unanswered", "down"):
        show = ""
    page_number = max(1, min(page_number, 100_000))
    items, total = await anyio.to_thread.run_sync(lambda: conversations.conversation_views(
        tenant.reader(), unanswered=show == "unanswered", thumbs_down=show == "down", limit=PAGE_SIZE,
        offset=(page_number - 1) * PAGE_SIZE))
    pages = max(1, -(-total // PAGE_SIZE))
    return page(request, "conversations.html", session=session, tenant=tenant, section="conversations",
                items=items, total=total, show=show, page_number=page_number, pages=pages)


@get("/t/{tenant_id:str}/analytics", include_in_schema=False)
async def analytics_page(request: Request, tenant_id: str, days: int = 30) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    days = days if days in (7, 30, 90) else 30

    def read() -> dict[str, Any]:
        conn = tenant.reader()
        per_day = analytics.daily(conn, days)
        return {"summary": analytics.summary(conn, days), "chart": views.day_chart(per_day), "days_rows": per_day,
                "top": analytics.top_questions(conn, days, 10)}

    data = await anyio.to_thread.run_sync(read)
    return page(request, "analytics.html", session=session, tenant=tenant, section="analytics", days=days, **data)


@get("/t/{tenant_id:str}/coverage", include_in_schema=False)
async def coverage_page(request: Request, tenant_id: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    ctx = request.app.state.ctx

    def read() -> dict[str, Any]:
        conn = tenant.reader()
        stats = page_stats(conn)
        return {"stats": stats, "missing": _missing(tenant, conn),
                "never_cited": analytics.sitemap_pages_never_cited(conn),
                "clusters": gaps.clusters(ctx, tenant)[:50], "skipped": analytics.last_skipped(conn)}

    data = await anyio.to_thread.run_sync(read)
    return page(request, "coverage.html", session=session, tenant=tenant, section="coverage", **data)


# -- site config -----------------------------------------------------------------------------


@get("/t/{tenant_id:str}/config", include_in_schema=False)
async def config_page(request: Request, tenant_id: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    config = await anyio.to_thread.run_sync(tenant.config)
    return page(request, "config.html", session=session, tenant=tenant, section="config",
                sections=views.config_sections(config, admin=session.admin), error=None)


@post("/t/{tenant_id:str}/config", include_in_schema=False)
async def config_save(request: Request, tenant_id: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    form = await form_of(request, session)
    current: SiteConfig = await anyio.to_thread.run_sync(tenant.config)
    try:
        data = views.config_from_form(form, current, admin=session.admin)
        config = decode_config(data)
        if config.model != current.model:
            raise InvalidConfig("changing the model needs `frontdesk reindex` (it rebuilds every vector)",
                                field="model")
    except InvalidInput as exc:
        field = str(exc.details.get("field") or "")
        return page(request, "config.html", status=400, session=session, tenant=tenant, section="config",
                    sections=views.config_sections(current, admin=session.admin, posted=form, error_field=field),
                    error={"field": field, "message": exc.message})
    await anyio.to_thread.run_sync(tenant.set_config, config)
    request.app.state.cache.clear(tenant.id)
    return redirect(f"/console/t/{tenant.id}/config?msg=config_saved")


# -- widget preview --------------------------------------------------------------------------


@get("/t/{tenant_id:str}/widget", include_in_schema=False)
async def widget_page(request: Request, tenant_id: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    config = await anyio.to_thread.run_sync(tenant.config)
    theme = views.theme_from_query(request.query_params, config)
    base = _base_url(request)
    snippet = views.widget_snippet(base, tenant.widget_key, theme)
    return page(request, "widget.html", session=session, tenant=tenant, section="widget", theme=theme,
                snippet=snippet, preview_api=f"/console/preview/{quote(_keys(request).preview(tenant.id, session))}",
                widget_key=tenant.widget_key, fields=views.THEME_FIELDS, theme_attrs=views.widget_attrs(theme),
                theme_vars=views.theme_vars(theme))


async def _preview_tenant(request: Request, token: str) -> Tenant:
    origin = request.headers.get("origin")
    if not origin or urlsplit(origin).netloc != request.headers.get("host", ""):
        raise Forbidden("the preview answers only the console's own pages")
    found = _keys(request).preview_tenant(token)
    if found is None:
        raise Unauthorized("the preview link expired: reload the widget page")
    registry = request.app.state.ctx.registry
    if not registry.exists(found[0]):
        raise Unauthorized("the preview link expired: reload the widget page")
    tenant = await anyio.to_thread.run_sync(registry.get, found[0])
    settings = request.app.state.settings
    valid = {auth.tenant_fingerprint(tenant.admin_token_hash)}
    if settings.admin_token:
        valid.add(auth.admin_fingerprint(settings.admin_token))
    if found[1] not in valid:
        raise Unauthorized("the preview link expired: reload the widget page")
    return tenant


@post("/preview/{token:str}/v1/chat", include_in_schema=False)
async def preview_chat(request: Request, token: str) -> Response:
    """The widget preview's questions: answered like a visitor's, but not recorded."""
    tenant = await _preview_tenant(request, token)
    state = request.app.state
    try:
        body = msgspec.json.decode(await request.body(), type=ChatRequest)
    except msgspec.MsgspecError:
        raise InvalidInput("the request body must be a chat request") from None
    body.question = check_question(body.question, state.settings.max_question_chars)

    async def events() -> AsyncIterator[ServerSentEventMessage]:
        stream = state.answerer.stream(tenant, body, persist=False, use_cache=False)
        try:
            async for item in stream:
                yield ServerSentEventMessage(event=event_name(item), data=msgspec.json.encode(item).decode())
        except FrontdeskError as exc:
            error = ErrorEvent(exc.code, exc.message)
            yield ServerSentEventMessage(event="error", data=msgspec.json.encode(error).decode())
        finally:
            await stream.aclose()

    return ServerSentEvent(events(), headers=SECURITY_HEADERS)


@post("/preview/{token:str}/v1/feedback", include_in_schema=False, status_code=200)
async def preview_feedback(request: Request, token: str) -> dict[str, bool]:
    await _preview_tenant(request, token)
    return {"ok": True}  # preview answers are not recorded, so neither is their feedback


# -- webhooks --------------------------------------------------------------------------------


async def _webhooks_page(request: Request, session: auth.Session, tenant: Tenant, *, status: int = 200,
                         created: tuple[outbox.Endpoint, str] | None = None, form: dict | None = None,
                         error: dict | None = None) -> Template:
    def read() -> dict[str, Any]:
        conn = tenant.reader()
        return {"endpoints": outbox.endpoints(conn), "recent": outbox.deliveries(conn, limit=20, with_attempts=False),
                "allow_private": tenant.config().crawl.allow_private_network}

    data = await anyio.to_thread.run_sync(read)
    return page(request, "webhooks.html", status=status, session=session, tenant=tenant, section="webhooks",
                events=outbox.EVENTS, created=created, form=form or {"events": list(outbox.EVENTS)}, error=error,
                **data)


@get("/t/{tenant_id:str}/webhooks", include_in_schema=False)
async def webhooks_page(request: Request, tenant_id: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    return await _webhooks_page(request, session, tenant)


@post("/t/{tenant_id:str}/webhooks", include_in_schema=False)
async def webhook_create(request: Request, tenant_id: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    form = await form_of(request, session)
    values = {"url": _text(form, "url", 2000), "events": [str(e) for e in form.getall("events", [])],
              "description": _text(form, "description", 200)}
    try:
        created = await create_endpoint(getattr(request.app.state, "webhooks", None), tenant, url=values["url"],
                                        events=values["events"], description=values["description"])
    except InvalidInput as exc:
        return await _webhooks_page(request, session, tenant, status=400, form=values,
                                    error={"field": exc.details.get("field", ""), "message": exc.message})
    return await _webhooks_page(request, session, tenant, status=201, created=created)


async def _webhook_page(request: Request, session: auth.Session, tenant: Tenant, endpoint_id: int,
                        secret: str | None = None) -> Template:
    def read() -> dict[str, Any]:
        conn = tenant.reader()
        return {"endpoint": outbox.endpoint(conn, endpoint_id),
                "deliveries": outbox.deliveries(conn, endpoint_id, limit=50)}

    data = await anyio.to_thread.run_sync(read)
    return page(request, "webhook.html", session=session, tenant=tenant, section="webhooks", secret=secret,
                events=outbox.EVENTS, **data)


@get("/t/{tenant_id:str}/webhooks/{endpoint_id:int}", include_in_schema=False)
async def webhook_log(request: Request, tenant_id: str, endpoint_id: int) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    return await _webhook_page(request, session, tenant, endpoint_id)


@post("/t/{tenant_id:str}/webhooks/{endpoint_id:int}/{action:str}", include_in_schema=False)
async def webhook_action(request: Request, tenant_id: str, endpoint_id: int, action: str) -> Response:
    session, tenant = await tenant_for(request, tenant_id)
    form = await form_of(request, session)
    here = f"/console/t/{tenant.id}/webhooks"
    dispatcher = getattr(request.app.state, "webhooks", None)
    if action == "delete":
        await remove_endpoint(tenant, endpoint_id)
        return redirect(f"{here}?msg=webhook_deleted")
    if action == "update":
        await change_endpoint(tenant, endpoint_id, active=form.get("active") == "on",
                              events=[str(e) for e in form.getall("events", [])])
        if dispatcher is not None:
            dispatcher.watch(tenant.id)
        return redirect(f"{here}/{endpoint_id}?msg=webhook_updated")
    if action == "test":
        await send_test(dispatcher, tenant, endpoint_id)
        return redirect(f"{here}/{endpoint_id}?msg=webhook_test")
    if action == "rotate":
        return await _webhook_page(request, session, tenant, endpoint_id, await rotate_secret(tenant, endpoint_id))
    raise NotFound("no such webhook action")


# -- static files and errors -----------------------------------------------------------------


@get("/static/{name:str}", include_in_schema=False)
async def static(request: Request, name: str) -> Response:
    path = STATIC.get(name)
    if path is None:
        raise NotFound("no such file")
    media = "text/css; charset=utf-8" if name.endswith(".css") else "application/javascript; charset=utf-8"
    return Response(content=path.read_bytes(), media_type=media,
                    headers={"Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff"})


@get(["/{rest:path}"], include_in_schema=False)
async def unknown(request: Request, rest: str) -> Response:
    raise NotFound("there is no such console page")


def _error_page(request: Request, status: int, title: str, message: str,
                headers: dict[str, str] | None = None) -> Response:
    try:
        session = _current(request)
    except Exception:  # an error page must render whatever broke
        session = None
    response = page(request, "error.html", status=status, session=session, title=title, message=message)
    response.headers.update(headers or {})
    return response


TITLES = {400: "That did not work", 401: "Please sign in", 403: "Not allowed", 404: "Not found",
          405: "Not allowed", 409: "Not now", 413: "Too large", 429: "Slow down", 500: "Something went wrong"}


def _frontdesk_error(request: Request, exc: FrontdeskError) -> Response:
    if isinstance(exc, SignInRequired):
        if request.method == "GET" and not request.url.path.endswith("/progress"):
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return redirect(f"/console/login?next={quote(target, safe='/')}")
        return _error_page(request, 401, TITLES[401], "Your session has ended. Sign in again, then retry.")
    if exc.status >= 500 and not isinstance(exc, NotFound):
        log.warning("console error %s: %s", exc.code, exc.message)
    headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, RateLimited) else None
    return _error_page(request, exc.status, TITLES.get(exc.status, "Something went wrong"), exc.message, headers)


def _http_error(request: Request, exc: HTTPException) -> Response:
    status = exc.status_code
    message = {404: "There is no such console page.", 405: "That page does not take this kind of request."}.get(
        status, "The request could not be handled." if status < 500 else "Something went wrong on our side.")
    return _error_page(request, status, TITLES.get(status, "That did not work"), message)


def _internal_error(request: Request, exc: Exception) -> Response:
    log.exception("console error on %s %s", request.method, request.url.path)
    return _error_page(request, 500, TITLES[500], "Something went wrong on our side; it has been logged.")


ROUTES = [
    Router(
        path="/console",
        route_handlers=[login_form, login, logout, home, create_tenant, overview, crawl_page, crawl_start,
                        crawl_cancel, crawl_progress, gaps_page, gap_draft, gap_publish, gap_dismiss, curated_page,
                        curated_create, curated_edit, curated_update, curated_delete, conversations_page,
                        analytics_page, coverage_page, config_page, config_save, widget_page, preview_chat,
                        preview_feedback, webhooks_page, webhook_create, webhook_log, webhook_action, static, unknown],
        exception_handlers={FrontdeskError: _frontdesk_error, HTTPException: _http_error,  # type: ignore[dict-item]
                            Exception: _internal_error},
        include_in_schema=False,
    )
]
