"""Request helpers the route modules share: JSON bodies decoded into Structs, bearer tokens, the
request's trace id."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
from litestar import Request

from store.errors import FrontdeskError, InvalidInput, PayloadTooLarge, Unauthorized

BODY_TIMEOUT_S = 15.0
"""Longest a request body may take to arrive. granian cuts off slow headers (30 s) but waits for a
body as long as bytes keep trickling in: a byte a second holds a connection for hours (slowloris).
64 KB reach us in far less on any real link."""


class RequestTimeout(FrontdeskError):
    """The body did not arrive in time (408). Belongs with its siblings in store/errors.py."""

    status, code = 408, "request_timeout"


async def read_body(request: Request, limit: int) -> bytes:
    """The raw body, at most `limit` bytes, arrived within BODY_TIMEOUT_S (a body sent a byte at a
    time would otherwise hold its connection for ever)."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"request body over {limit} bytes")
    try:
        with anyio.fail_after(BODY_TIMEOUT_S):
            body = await request.body()
    except TimeoutError:
        raise RequestTimeout(f"the request body did not arrive within {BODY_TIMEOUT_S:.0f} s") from None
    if len(body) > limit:
        raise PayloadTooLarge(f"request body over {limit} bytes")
    return body


def decode_json(body: bytes, kind: Any = Any) -> Any:
    """`body` decoded into `kind`; not JSON, not UTF-8, nested too deeply or the wrong shape → a
    clear InvalidInput that names the offending field."""
    try:
        return msgspec.json.decode(body or b"{}", type=kind)
    except msgspec.ValidationError as exc:
        text = str(exc)
        field = text.rsplit("at `$.", 1)[-1].rstrip("`") if "at `$." in text else None
        raise InvalidInput(f"invalid request: {text}", field=field) from None
    except msgspec.DecodeError:
        raise InvalidInput("the request body must be JSON") from None
    # msgspec checks UTF-8 only when it builds a str, and nests by recursion: neither is a DecodeError.
    except UnicodeDecodeError:
        raise InvalidInput("the request body must be UTF-8 JSON") from None
    except RecursionError:
        raise InvalidInput("the request body is nested too deeply") from None


async def read_json(request: Request, kind: type, limit: int) -> Any:
    """The body decoded into `kind`; too large, too slow, not JSON or the wrong shape → a clear 4xx."""
    return decode_json(await read_body(request, limit), kind)


def bearer_token(request: Request) -> str:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("send `Authorization: Bearer <token>` (the server or tenant admin token)")
    return token.strip()


def trace_id(request: Request) -> str:
    """The id the request log middleware (app/asgi.py) gave this request ('' outside the app)."""
    return request.scope.get("state", {}).get("trace_id", "")
