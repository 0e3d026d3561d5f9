"""The one error tree of frontdesk: every error a caller, a visitor or an operator can see.

Why it lives in ``store/``: the tree is not about storage. ``store`` is the bottom layer, the
one package that both ``ingest`` and ``app`` may import (tests/test_layering.py), so the one
tree shared by all three sits here instead of in a fourth package. The branches that are about
HTTP requests (``Unauthorized``, ``RateLimited``, ``PayloadTooLarge``…), crawling
(``FetchError``, ``JobRunning``) and answering (``ProviderError``) are here for that reason only;
``store`` itself raises only the ``InvalidInput``, ``NotFound``, ``Conflict``, ``StoreError``
and ``BackendUnavailable`` kinds.

Library code (store, ingest, app internals) raises these and never prints; the edges translate.
``code`` is stable: clients may depend on it. ``status`` is the HTTP status.

    FrontdeskError              500 internal_error
    │   what the caller got wrong; fixing the request fixes it
    ├── InvalidInput            400 invalid_input      (bad ids, bad queries, bad config)
    │   ├── InvalidTenantId     400 invalid_tenant_id
    │   ├── EmptyQuestion       400 empty_question
    │   ├── InvalidConfig       400 invalid_config     (names the field)
    │   └── InvalidQuery        400 invalid_query
    ├── NotFound                404 not_found
    │   └── TenantNotFound      404 tenant_not_found
    │   the request is sound but the state forbids it now
    ├── Conflict                409 conflict
    │   ├── TenantExists        409 tenant_exists
    │   ├── JobRunning          409 job_running        (a crawl of this tenant is already running)
    │   ├── TenantMismatch      409 tenant_mismatch    (a restore file of another tenant)
    │   └── TenantInUse         409 tenant_in_use      (restore while another process has it open)
    │   HTTP access rules, raised only in app/ (routes, rate limits, the question check)
    ├── Unauthorized            401 unauthorized
    ├── Forbidden               403 forbidden
    ├── RateLimited             429 rate_limited       (carries retry_after seconds)
    ├── PayloadTooLarge         413 payload_too_large
    │   └── QuestionTooLong     413 question_too_long
    │   the tenant file itself: needs an operator, not a different request
    ├── StoreError              500 store_error
    │   ├── NotADatabase        500 not_a_database     (corrupt / foreign file, left untouched)
    │   ├── SchemaTooNew        500 schema_too_new
    │   ├── ModelMismatch       409 model_mismatch     (names `frontdesk reindex`)
    │   └── BackupFailed        500 backup_failed      (destination unwritable; nothing left behind)
    │   something outside frontdesk failed
    ├── FetchError              502 fetch_error        (crawler: one page could not be had; .reason)
    ├── ProviderError           502 provider_error     (the LLM endpoint failed or broke off)
    └── BackendUnavailable      503 backend_unavailable (model missing, search over its time limit)

Where each is translated:

- HTTP (widget, admin and A2A routes): ``app/errors.py`` turns any ``FrontdeskError`` into
  ``{"code", "message", …details}`` with its ``status`` (``RateLimited`` adds ``Retry-After``);
  anything else becomes 500 ``internal_error`` with the traceback logged, never sent.
- SSE: once an answer stream has started, ``app/routes/widget.py`` ends it with an ``error``
  event ``{code, message}`` (``app/events.py`` ``ErrorEvent``) instead of an HTTP status.
- CLI: ``app/__main__.py`` prints ``frontdesk: <message>`` on stderr and exits 2 for
  ``InvalidInput`` (bad usage), 1 for any other ``FrontdeskError``.
- MCP: ``app/mcp.py`` ``translate()`` maps ``InvalidInput``/``PayloadTooLarge``, ``NotFound`` and
  the rest to the MCP tool error codes.
- Inside the library: ``ProviderError`` is caught by ``app/providers.py`` ``WithFallback``,
  which streams the extractive answer instead, so a visitor normally never sees it;
  ``FetchError`` is caught per page by ``ingest/pipeline.py`` and counted by its ``reason``;
  a crawl job that fails records the error's message (``ingest/scheduler.py``).

Not in the tree, on purpose: signals that never leave the code that raises them (the crawler's
private retry signals). An edge never sees them, so they carry no code or status.
"""

from __future__ import annotations


class FrontdeskError(Exception):
    status: int = 500
    code: str = "internal_error"

    def __init__(self, message: str, **details: object) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, object]:
        body: dict[str, object] = {"code": self.code, "message": self.message}
        body.update({k: v for k, v in self.details.items() if v is not None})
        return body


class InvalidInput(FrontdeskError):
    status, code = 400, "invalid_input"


class InvalidTenantId(InvalidInput):
    code = "invalid_tenant_id"


class EmptyQuestion(InvalidInput):
    code = "empty_question"


class InvalidConfig(InvalidInput):
    code = "invalid_config"


class InvalidQuery(InvalidInput):
    code = "invalid_query"


class NotFound(FrontdeskError):
    status, code = 404, "not_found"


class TenantNotFound(NotFound):
    code = "tenant_not_found"


class Conflict(FrontdeskError):
    status, code = 409, "conflict"


class TenantExists(Conflict):
    code = "tenant_exists"


class JobRunning(Conflict):
    code = "job_running"


class TenantMismatch(Conflict):
    code = "tenant_mismatch"


class TenantInUse(Conflict):
    code = "tenant_in_use"


class Unauthorized(FrontdeskError):
    status, code = 401, "unauthorized"


class Forbidden(FrontdeskError):
    status, code = 403, "forbidden"


class RateLimited(FrontdeskError):
    status, code = 429, "rate_limited"

    def __init__(self, message: str, retry_after: float = 1.0, **details: object) -> None:
        super().__init__(message, **details)
        self.retry_after = max(1, int(retry_after + 0.999))


class PayloadTooLarge(FrontdeskError):
    status, code = 413, "payload_too_large"


class QuestionTooLong(PayloadTooLarge):
    code = "question_too_long"


class StoreError(FrontdeskError):
    status, code = 500, "store_error"


class NotADatabase(StoreError):
    code = "not_a_database"


class SchemaTooNew(StoreError):
    code = "schema_too_new"


class ModelMismatch(StoreError):
    status, code = 409, "model_mismatch"


class BackupFailed(StoreError):
    code = "backup_failed"


class FetchError(FrontdeskError):
    status, code = 502, "fetch_error"

    def __init__(self, message: str, reason: str = "fetch_error", **details: object) -> None:
        super().__init__(message, reason=reason, **details)
        self.reason = reason


class ProviderError(FrontdeskError):
    """A provider could not produce (the rest of) an answer."""

    status, code = 502, "provider_error"


class BackendUnavailable(FrontdeskError):
    status, code = 503, "backend_unavailable"
