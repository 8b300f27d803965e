"""API errors on the client side (upstream: k8s.io/apimachinery/pkg/api/errors, as client-go sees them).

Every non-2xx answer from the API server is a `Status` body; the client raises it as one `ApiError`
subclass per code so callers can write `except NotFound` instead of comparing numbers. Both flavours of
409 (a stale resourceVersion and AlreadyExists) are `Conflict`: callers that care look at `.reason`, as
client-go's `IsAlreadyExists` / `IsConflict` do.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An error answer: `code` (HTTP status), `reason` (Status.reason), `status` (the body, {} if none)."""

    def __init__(self, code: int, reason: str, message: str, status: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code} {reason}: {message}" if reason else f"{code}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.status: dict[str, Any] = status or {}


class NotFound(ApiError):
    """404."""


class Conflict(ApiError):
    """409: a stale resourceVersion (reason Conflict) or a name already taken (reason AlreadyExists)."""


class Gone(ApiError):
    """410: a watch or continue token older than what the server still has; relist."""


class Invalid(ApiError):
    """422: field errors are in `status["details"]["causes"]`."""


class TooManyRequests(ApiError):
    """429: the server is overloaded (retried by the client before this is raised)."""


_BY_CODE: dict[int, type[ApiError]] = {404: NotFound, 409: Conflict, 410: Gone, 422: Invalid, 429: TooManyRequests}


def error_from_status(code: int, status: dict[str, Any]) -> ApiError:
    """The `ApiError` subclass for `code`; `status` is the Status body (or {} when there was none).

    An in-stream watch ERROR carries its code inside the Status, so a `code` of 0 defers to it."""
    status = status if isinstance(status, dict) else {}
    if not code:
        code = int(status.get("code") or 0)
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or "") or f"the server answered {code}"
    return _BY_CODE.get(code, ApiError)(code, reason, message, status)


NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"  # v1.NamespaceTerminatingCause


def has_status_cause(exc: ApiError, cause: str) -> bool:
    """Whether the Status names `cause` among its details.causes (upstream errors.HasStatusCause)."""
    causes = ((exc.status.get("details") or {}).get("causes") or []) if isinstance(exc.status, dict) else []
    return any(isinstance(c, dict) and c.get("reason") == cause for c in causes)
