"""HTTP edge of the one error tree (store/errors.py): every error becomes `{"code", "message"}`
with its status; anything unexpected becomes a 500 `internal_error` — never a traceback.
The other edges (SSE `error` event, CLI, MCP) are listed with the tree."""

from __future__ import annotations

import logging

from litestar import MediaType, Request, Response
from litestar.exceptions import HTTPException, NotFoundException, ValidationException

from store.errors import FrontdeskError, RateLimited

log = logging.getLogger("frontdesk.http")

_HTTP_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
               405: "method_not_allowed", 413: "payload_too_large", 415: "unsupported_media_type",
               429: "rate_limited", 500: "internal_error", 503: "backend_unavailable"}


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None,
                   extra: dict | None = None, request: Request | None = None) -> Response:
    body = {"code": code, "message": message, **(extra or {})}
    headers = dict(headers or {})
    origin = request.headers.get("origin") if request is not None else None
    if origin and request is not None and request.url.path.startswith("/v1/"):
        # The widget must be able to read why it was refused (429's Retry-After above all).
        headers.update({"Access-Control-Allow-Origin": origin, "Vary": "Origin",
                        "Access-Control-Expose-Headers": "Retry-After"})
    return Response(content=body, status_code=status, media_type=MediaType.JSON, headers=headers)


def frontdesk_error_handler(request: Request, exc: FrontdeskError) -> Response:
    headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, RateLimited) else {}
    _count(request, exc.code)
    extra = {k: v for k, v in exc.details.items() if isinstance(v, str | int | float)}
    if isinstance(exc, RateLimited):
        extra["retry_after"] = exc.retry_after
    return error_response(exc.status, exc.code, exc.message, headers, extra, request)


def http_error_handler(request: Request, exc: HTTPException) -> Response:
    status = exc.status_code
    if isinstance(exc, ValidationException):
        code, message = "invalid_request", "the request is malformed: " + str(exc.detail)[:200]
    elif isinstance(exc, NotFoundException):
        code, message = "not_found", "no such resource"
    else:
        code, message = _HTTP_CODES.get(status, "http_error"), str(exc.detail)[:200]
    _count(request, code)
    return error_response(status, code, message, dict(exc.headers or {}), request=request)


def internal_error_handler(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    _count(request, "internal_error")
    return error_response(500, "internal_error", "something went wrong on our side; it has been logged",
                          request=request)


def _count(request: Request, code: str) -> None:
    metrics = getattr(request.app.state, "metrics", None)
    if metrics is not None:
        metrics.errors.inc(code=code)


EXCEPTION_HANDLERS = {
    FrontdeskError: frontdesk_error_handler,
    HTTPException: http_error_handler,
    Exception: internal_error_handler,
}
