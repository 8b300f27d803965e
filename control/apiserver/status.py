"""Errors as Kubernetes `Status` objects (upstream: k8s.io/apimachinery/pkg/api/errors/errors.go).

Handlers raise `APIError`; the server turns it into a `Status` body with the same code. Messages, reasons
and `details` follow upstream word for word, because clients act on them: kubectl prints the message,
client-go and the Python client switch on `reason` (AlreadyExists vs Conflict are both 409), and
`details.causes` carries the field errors of a 422 that `kubectl apply` shows per field.
"""

from __future__ import annotations

from collections.abc import Sequence

from control.apimachinery.validation import FieldError


class APIError(Exception):
    """An error with its HTTP code; `status` is the wire body."""

    def __init__(self, code: int, reason: str, message: str, *, details: dict | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    @property
    def status(self) -> dict:
        body = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def success_status(*, details: dict | None = None) -> dict:
    """What a DELETE that removed the object at once answers with when it has nothing else to return."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details is not None:
        body["details"] = details
    return body


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def _details(name: str, resource: str, group: str) -> dict:
    details = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return details


def not_found(resource: str, name: str, *, group: str = "") -> APIError:
    return APIError(404, "NotFound", f'{_qualified(resource, group)} "{name}" not found',
                    details=_details(name, resource, group))


def already_exists(resource: str, name: str, *, group: str = "") -> APIError:
    return APIError(409, "AlreadyExists", f'{_qualified(resource, group)} "{name}" already exists',
                    details=_details(name, resource, group))


def conflict(resource: str, name: str, why: str, *, group: str = "") -> APIError:
    return APIError(409, "Conflict", f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}',
                    details=_details(name, resource, group))


STALE_OBJECT = "the object has been modified; please apply your changes to the latest version and try again"


def invalid(kind: str, name: str, errors: Sequence[FieldError], *, group: str = "") -> APIError:
    """422 with one cause per field error; the message lists them as upstream's NewInvalid does."""
    messages = [e.message for e in errors]
    listed = messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
    qualified = f"{kind}.{group}" if group else kind
    details = {"name": name, "kind": kind, "causes": [e.as_cause() for e in errors]}
    if group:
        details["group"] = group
    return APIError(422, "Invalid", f'{qualified} "{name}" is invalid: {listed}', details=details)


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message)


def method_not_allowed() -> APIError:
    return APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")


def gone(message: str) -> APIError:
    """410 for a watch or continue token whose resourceVersion was compacted away (reason Expired)."""
    return APIError(410, "Expired", message)


def too_large(limit: int) -> APIError:
    return APIError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def unsupported_media_type(content_type: str) -> APIError:
    return APIError(415, "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types include: "
                    "application/json, application/yaml, application/merge-patch+json, "
                    f'application/strategic-merge-patch+json, application/json-patch+json (got "{content_type}")')


def too_many_requests(retry_after: int) -> APIError:
    return APIError(429, "TooManyRequests", "Too many requests, please try again later.",
                    details={"retryAfterSeconds": retry_after})


def service_unavailable(message: str) -> APIError:
    return APIError(503, "ServiceUnavailable", message)
