"""Request helpers the route modules share: JSON bodies decoded into Structs, bearer tokens, the
request's trace id."""

from __future__ import annotations

import msgspec
from litestar import Request

from store.errors import InvalidInput, PayloadTooLarge, Unauthorized


async def read_json(request: Request, kind: type, limit: int):
    """The body decoded into `kind`; too large, not JSON or the wrong shape → a clear 4xx that
    names the offending field."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"request body over {limit} bytes")
    body = await request.body()
    if len(body) > limit:
        raise PayloadTooLarge(f"request body over {limit} bytes")
    try:
        return msgspec.json.decode(body or b"{}", type=kind)
    except msgspec.ValidationError as exc:
        text = str(exc)
        field = text.rsplit("at `$.", 1)[-1].rstrip("`") if "at `$." in text else None
        raise InvalidInput(f"invalid request: {text}", field=field) from None
    except msgspec.DecodeError:
        raise InvalidInput("the request body must be JSON") from None


def bearer_token(request: Request) -> str:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("send `Authorization: Bearer <token>` (the server or tenant admin token)")
    return token.strip()


def trace_id(request: Request) -> str:
    """The id the request log middleware (app/asgi.py) gave this request ('' outside the app)."""
    return request.scope.get("state", {}).get("trace_id", "")
