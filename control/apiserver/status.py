"""Errors as Kubernetes `Status` objects (upstream: k8s.io/apimachinery/pkg/api/errors/errors.go).

Bodies are byte-compatible with upstream's: metav1.Status and StatusDetails fields in Go's declaration order,
`details` present exactly where upstream's constructor sets it (an empty `{}` for the generic 404/405), and
the JSON written as Go's encoder writes it (handlers.encode_json: compact, `<>&` escaped, a final newline).

Handlers raise `APIError`; the server turns it into a `Status` body with the same code. Messages, reasons
and `details` follow upstream word for word, because clients act on them: kubectl prints the message,
client-go and the Python client switch on `reason` (AlreadyExists vs Conflict are both 409), and
`details.causes` carries the field errors of a 422 that `kubectl apply` shows per field.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from control.apimachinery.validation import FieldError


class APIError(Exception):
    """An error with its HTTP code; `status` is the wire body."""

    def __init__(self, code: int, reason: str, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    @property
    def status(self) -> dict[str, Any]:
        """The body in metav1.Status's field order (kind, apiVersion, metadata, status, message, reason,
        details, code) — Go encodes struct fields in declaration order, so a client comparing bytes sees
        upstream's; `reason` is left out when empty, `details` when the error has none (omitempty)."""
        body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": self.message}
        if self.reason:
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def success_status(*, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a DELETE that removed the object at once answers with when it has nothing else to return."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details is not None:
        body["details"] = details
    return body


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def _details(name: str, resource: str, group: str) -> dict[str, Any]:
    """metav1.StatusDetails in its field order: name, group, kind, (uid, causes, retryAfterSeconds)."""
    details = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = resource
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
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [e.as_cause() for e in errors]
    return APIError(422, "Invalid", f'{qualified} "{name}" is invalid: {listed}', details=details)


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message)


def method_not_allowed() -> APIError:
    """upstream NewGenericServerResponse(405): its details are present and empty."""
    return APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource",
                    details={})


def route_not_found() -> APIError:
    """A path nothing serves (upstream NewGenericServerResponse(404) from the not-found handler)."""
    return APIError(404, "NotFound", "the server could not find the requested resource", details={})


def internal_error(cause: str) -> APIError:
    """upstream NewInternalError: the cause's text in the message and as the one cause."""
    return APIError(500, "InternalError", f"Internal error occurred: {cause}", details={"causes": [{"message": cause}]})


def gone(message: str) -> APIError:
    """410 for a watch or continue token whose resourceVersion was compacted away (reason Expired)."""
    return APIError(410, "Expired", message)


def too_large(limit: int) -> APIError:
    return entity_too_large(f"limit is {limit}")


def entity_too_large(why: str) -> APIError:
    """upstream NewRequestEntityTooLargeError: 413 `Request entity too large: <why>`."""
    return APIError(413, "RequestEntityTooLarge", f"Request entity too large: {why}")


def unsupported_media_type(content_type: str) -> APIError:
    return APIError(415, "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types include: "
                    "application/json, application/yaml, application/merge-patch+json, "
                    f'application/strategic-merge-patch+json, application/json-patch+json (got "{content_type}")')


def not_acceptable() -> APIError:
    """upstream NewNotAcceptableError: the client accepts none of the media types this answer has."""
    return APIError(406, "NotAcceptable", "only the following media types are accepted: application/json, "
                    "application/yaml, application/vnd.kubernetes.protobuf")


def too_many_requests(retry_after: int) -> APIError:
    return APIError(429, "TooManyRequests", "Too many requests, please try again later.",
                    details={"retryAfterSeconds": retry_after})


def service_unavailable(message: str) -> APIError:
    return APIError(503, "ServiceUnavailable", message)
