"""An asyncio event loop on its own thread, and aiohttp apps served on it.

The daemons' other parts are plain threads doing blocking Docker, netlink and iptables calls
(docs/choices.md); their HTTP servers (the API server inside `slimkube up`, the kubelet's API, the
proxy's healthz and metrics) are aiohttp, so each runs its loop on a daemon thread and the caller's thread
stays free (for signals, in `up`). One place starts, feeds and ends such a loop, and binds a site reporting
the port it really got (port 0 picks a free one).
"""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from aiohttp import web

T = TypeVar("T")


class LoopThread:
    """`start()` runs a new event loop on a daemon thread; `run(coro)` runs a coroutine there and waits for its
    result; `stop()` ends the loop and joins the thread (idempotent)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=self.name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], *, timeout: float = 30.0) -> T:
        if self._loop is None:
            coro.close()  # never to run: no "never awaited" warning
            raise RuntimeError(f"{self.name}: the loop is not started")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=timeout)

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()
        self._loop = self._thread = None


async def serve_app(app: web.Application, host: str, port: int, *, shutdown_timeout: float,
                    ssl_context: ssl.SSLContext | None = None) -> tuple[web.AppRunner, int]:
    """Serve `app` on host:port (https with `ssl_context`); the runner (to `cleanup()` at stop) and the port
    actually bound."""
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=shutdown_timeout)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=ssl_context)
    try:
        await site.start()
    except BaseException:  # e.g. the address is in use: nothing half-made stays behind
        await runner.cleanup()
        raise
    server = site._server  # aiohttp exposes the bound sockets only here
    sockets = server.sockets if isinstance(server, asyncio.Server) else ()
    bound = sockets[0].getsockname()[1] if sockets else port
    return runner, bound
