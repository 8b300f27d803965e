"""Warnings for the client, added by whatever serves a request — admission plugins and webhooks (upstream:
k8s.io/apiserver/pkg/warning/context.go `AddWarning`; the handler chain's recorder in
pkg/endpoints/filters/warning.go).

The middleware puts one `Recorder` in the request's context; asyncio.to_thread copies the context, so the
registry thread serving the write adds to the same recorder. After the handler, each distinct warning
becomes one `Warning: 299 - "<text>"` header (kubectl prints `Warning: <text>`). Writes the server makes
for itself have no recorder: what they would add is dropped.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Recorder:
    warnings: list[str] = field(default_factory=list)


_current: ContextVar[Recorder | None] = ContextVar("warnings", default=None)


def add_warning(text: str) -> None:
    """A warning for the client; the same text twice is sent once, as upstream's recorder does."""
    recorder = _current.get()
    if recorder is not None and text and text not in recorder.warnings:
        recorder.warnings.append(text)


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
        response = await handler(request)
    if not response.prepared:
        for text in recorder.warnings:
            response.headers.add("Warning", header(text))
    return response
