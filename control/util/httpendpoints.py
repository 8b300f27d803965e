"""A daemon's small HTTP side: named groups of routes (health, metrics), each on its own address or none,
served by aiohttp on a LoopThread; groups with equal addresses share one listener.

The kube-proxy (healthz on 0.0.0.0:10256, metrics on 127.0.0.1:10249: proxy/server.py) and the scheduler
(healthz, readyz and metrics on one port, 10259: control/scheduler/httpserver.py) are both this; only their
handlers differ. Port 0 binds a free port (`ports` says which, for tests and logs); a group without an
address is not served. `start()` binds before it returns, so a port in use fails there.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from control.util.loopthread import LoopThread, serve_app

log = logging.getLogger(__name__)

Address = tuple[str, int]


def metrics_route(registry: CollectorRegistry, path: str = "/metrics") -> web.RouteDef:
    """GET `path`: `registry` in Prometheus' text format (collected off the event loop)."""
    async def handler(request: web.Request) -> web.Response:
        data = await asyncio.to_thread(generate_latest, registry)
        return web.Response(body=data, headers={"Content-Type": CONTENT_TYPE_LATEST})

    return web.get(path, handler)


class HTTPEndpoints:
    """`groups`: name → (address or None, routes). See the module notes."""

    def __init__(self, name: str, groups: Mapping[str, tuple[Address | None, Sequence[web.RouteDef]]]) -> None:
        self.name = name
        self._groups = dict(groups)
        self.ports: dict[str, int] = {}  # group name → the bound port
        self._thread = LoopThread(name)
        self._runners: list[web.AppRunner] = []

    def start(self) -> None:
        by_address: dict[Address, list[str]] = {}
        for group, (address, _) in self._groups.items():
            if address is not None:
                by_address.setdefault(address, []).append(group)
        self._thread.start()
        try:
            for address, groups in by_address.items():
                self._thread.run(self._serve(address, groups))
        except BaseException:
            self.stop()
            raise

    async def _serve(self, address: Address, groups: list[str]) -> None:
        app = web.Application()
        for group in groups:
            app.add_routes(self._groups[group][1])
        runner, port = await serve_app(app, address[0], address[1], shutdown_timeout=1.0)
        self._runners.append(runner)
        for group in groups:
            self.ports[group] = port
        log.info("%s: %s listening on %s:%d", self.name, "+".join(groups), address[0], port)

    def stop(self) -> None:
        if not self._thread.running:
            return
        for runner in self._runners:
            self._thread.run(runner.cleanup())
        self._thread.stop()
        self._runners = []
