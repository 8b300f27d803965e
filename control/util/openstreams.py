"""The long-lived streams an aiohttp server is answering (exec, attach, port-forward, followed logs, watches),
ended at once when the server stops.

aiohttp's `AppRunner.cleanup()` stops listening, runs the application's `on_shutdown` hooks, then gives
every request still in progress `shutdown_timeout` seconds to finish on its own before it cancels it, and
as long again for the cancelled handler to return. A stream lasts as long as its client wants, so for
streams that wait is only delay, paid once per server on the way down (upstream's servers end hijacked
connections with the process). `OpenStreams` is the `on_shutdown` hook: its middleware notes the task of
every request `is_stream` picks, and at shutdown each is cancelled and awaited for at most `grace`
seconds. A handler's cleanup on cancellation is its own business (closing a WebSocket with 1001 Going
Away, releasing the container's connection); it has to be quick.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

log = logging.getLogger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class OpenStreams:
    """Register with `install(app)` (before the app is frozen); requests that `is_stream` picks are ended
    when the runner shuts down."""

    def __init__(self, is_stream: Callable[[web.Request], bool], *, grace: float = 2.0) -> None:
        self._is_stream = is_stream
        self._grace = grace
        self._tasks: set[asyncio.Task[object]] = set()  # handlers of open streams; each removes itself

    def install(self, app: web.Application) -> None:
        app.middlewares.append(self._middleware)
        app.on_shutdown.append(self._shutdown)

    def __len__(self) -> int:
        return len(self._tasks)

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not self._is_stream(request):
            return await handler(request)
        task = asyncio.current_task()  # the handler's own task (its connection's task awaits it)
        assert task is not None
        self._tasks.add(task)
        try:
            return await handler(request)
        finally:
            self._tasks.discard(task)

    async def _shutdown(self, app: web.Application) -> None:
        tasks = [task for task in self._tasks if not task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=self._grace)
            log.info("ended %d open stream(s) at shutdown%s", len(tasks),
                     f" ({len(pending)} still closing)" if pending else "")
