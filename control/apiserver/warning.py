"""What admission says about a request besides yes or no: warnings for the client and audit annotations
(upstream: k8s.io/apiserver/pkg/warning/context.go `AddWarning`, and audit's `AddAuditAnnotation`; the
handler chain's recorder in pkg/endpoints/filters/warning.go).

The middleware puts one `Recorder` in the request's context; asyncio.to_thread copies the context, so the
registry thread serving the write adds to the same recorder. After the handler, each distinct warning
becomes one `Warning: 299 - "<text>"` header (kubectl prints `Warning: <text>`), and the audit annotations
are logged, one line per request (this server keeps no audit log). Writes the server makes for itself
have no recorder: what they would add is dropped.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from aiohttp import web

log = logging.getLogger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Recorder:
    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] = field(default_factory=dict)


_current: ContextVar[Recorder | None] = ContextVar("admission_recorder", default=None)


def add_warning(text: str) -> None:
    """A warning for the client; the same text twice is sent once, as upstream's recorder does."""
    recorder = _current.get()
    if recorder is not None and text and text not in recorder.warnings:
        recorder.warnings.append(text)


def add_audit_annotation(key: str, value: str) -> None:
    recorder = _current.get()
    if recorder is not None:
        recorder.audit_annotations.setdefault(key, value)


@contextmanager
def recording() -> Iterator[Recorder]:
    """Collect what the code run inside adds (one request's worth)."""
    recorder = Recorder()
    token = _current.set(recorder)
    try:
        yield recorder
    finally:
        _current.reset(token)


def header(text: str) -> str:
    """RFC 7234 warn-code 299 with agent "-" and the text quoted, as upstream's recorder writes it."""
    return "299 - " + json.dumps(text, ensure_ascii=False)


@web.middleware
async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    with recording() as recorder:
        try:
            response = await handler(request)
        finally:
            if recorder.audit_annotations:
                log.info("audit annotations for %s %s: %s", request.method, request.path, recorder.audit_annotations)
    if not response.prepared:
        for text in recorder.warnings:
            response.headers.add("Warning", header(text))
    return response
