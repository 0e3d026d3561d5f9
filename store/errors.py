"""The one error tree of frontdesk.

Library code (store, ingest, app internals) raises these; the edges translate them: the HTTP
layer into ``{"code", "message"}`` with ``status``, the SSE stream into an ``error`` event, the
CLI into a one-line reason and exit code 1. ``code`` is stable: clients may depend on it.

    FrontdeskError
    ├── InvalidInput            400 invalid_input      (bad ids, bad queries, bad config)
    │   ├── InvalidTenantId     400 invalid_tenant_id
    │   ├── EmptyQuestion       400 empty_question
    │   ├── InvalidConfig       400 invalid_config     (names the field)
    │   └── InvalidQuery        400 invalid_query
    ├── NotFound                404 not_found
    │   └── TenantNotFound      404 tenant_not_found
    ├── Conflict                409 conflict
    │   ├── TenantExists        409 tenant_exists
    │   ├── JobRunning          409 job_running
    │   ├── TenantMismatch      409 tenant_mismatch    (a restore file of another tenant)
    │   └── TenantInUse         409 tenant_in_use      (restore while another process has it open)
    ├── Unauthorized            401 unauthorized
    ├── Forbidden               403 forbidden
    ├── RateLimited             429 rate_limited       (carries retry_after seconds)
    ├── PayloadTooLarge         413 payload_too_large
    │   └── QuestionTooLong     413 question_too_long
    ├── StoreError              500 store_error
    │   ├── NotADatabase        500 not_a_database     (corrupt / foreign file, left untouched)
    │   ├── SchemaTooNew        500 schema_too_new
    │   ├── ModelMismatch       409 model_mismatch     (names `frontdesk reindex`)
    │   └── BackupFailed        500 backup_failed      (destination unwritable; nothing left behind)
    ├── FetchError              502 fetch_error        (crawler: one page could not be had)
    └── BackendUnavailable      503 backend_unavailable
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


class BackendUnavailable(FrontdeskError):
    status, code = 503, "backend_unavailable"
