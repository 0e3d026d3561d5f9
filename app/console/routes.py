"""The console's routes, mounted under /console: the pages of signin.py, tenants.py, answers.py,
activity.py, configure.py and webhook_pages.py, the static files, and the error pages every console
URL answers with. Every tenant URL checks that the session reaches that tenant; every POST checks
the session's CSRF token and the request's origin (common.py)."""

from __future__ import annotations

import logging
from urllib.parse import quote

from litestar import Request, Response, Router, get
from litestar.exceptions import HTTPException

from app.console.activity import analytics_page, conversations_page, coverage_page
from app.console.answers import (
    curated_create,
    curated_delete,
    curated_edit,
    curated_page,
    curated_update,
    gap_dismiss,
    gap_draft,
    gap_publish,
    gaps_page,
)
from app.console.common import STATIC, SignInRequired, current_session, page, redirect
from app.console.configure import (
    config_page,
    config_save,
    preview_chat,
    preview_feedback,
    widget_page,
)
from app.console.signin import login, login_form, logout
from app.console.tenants import (
    crawl_cancel,
    crawl_page,
    crawl_progress,
    crawl_start,
    create_tenant,
    home,
    overview,
)
from app.console.webhook_pages import webhook_action, webhook_create, webhook_log, webhooks_page
from store.errors import FrontdeskError, NotFound, RateLimited

log = logging.getLogger("frontdesk.console")


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
        session = current_session(request)
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
        exception_handlers={FrontdeskError: _frontdesk_error, HTTPException: _http_error,
                            Exception: _internal_error},
        include_in_schema=False,
    )
]
