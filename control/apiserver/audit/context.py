"""The per-request audit record the rest of the server writes into (upstream k8s.io/apiserver/pkg/audit/
context.go: AddAuditAnnotation, and request.go's LogRequestObject/LogRequestPatch).

The audit filter opens one `Record` per request and makes it current (a context variable, so code running
in `asyncio.to_thread` for that request sees the same record); admission adds its annotations, the body reader
the raw request body. With auditing off no record is current and every call here does nothing.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Record:
    """What the handlers contribute to one request's event."""

    annotations: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    wants_body: bool = False  # the policy's level is Request or above, or the name must come from the body


_current: contextvars.ContextVar[Record | None] = contextvars.ContextVar("slimkube_audit_record", default=None)


def begin(record: Record) -> contextvars.Token[Record | None]:
    return _current.set(record)


def end(token: contextvars.Token[Record | None]) -> None:
    _current.reset(token)


def add_annotations(annotations: Mapping[str, str]) -> None:
    """Upstream's AddAuditAnnotation: the first value of a key stays; a different later one is logged."""
    record = _current.get()
    if record is None:
        return
    for key, value in annotations.items():
        kept = record.annotations.setdefault(key, value)
        if kept != value:
            log.warning("audit annotation %r: keeping %r, dropping %r", key, kept, value)


def note_request_body(body: bytes) -> None:
    """The body as the client sent it, kept only when the event will carry it."""
    record = _current.get()
    if record is not None and record.wants_body:
        record.body = body
