"""The scheduler's health and metrics, on the shape of upstream kube-scheduler's secure port (default 10259):
`/healthz` and `/livez` answer "ok" while the process runs, `/readyz` "ok" once the scheduler (if this
server leads) has its informers synced, `/metrics` the Prometheus registry (control/scheduler/metrics.py).

Upstream: cmd/kube-scheduler/app/server.go (`newHealthEndpointsAndMetricsHandler`; readyz's
"sched-handler-sync" check answers 500 with "[-]sched-handler-sync failed: reason withheld" until the event
handlers synced) and k8s.io/apiserver's healthz ("ok", text/plain). A server that does not hold the Lease is
healthy and ready too, as upstream's standby schedulers are.

Departure: plain HTTP, not HTTPS with delegated authentication; so the default address is 127.0.0.1, where
upstream binds all interfaces. The listener is control/util/httpendpoints.py, shared with the kube-proxy.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CollectorRegistry

from control.util.httpendpoints import Address, HTTPEndpoints, metrics_route

DEFAULT_BIND_ADDRESS = "127.0.0.1"
DEFAULT_PORT = 10259
NOT_READY_BODY = "[+]ping ok\n[-]sched-handler-sync failed: reason withheld\nreadyz check failed\n"


class SchedulerHTTPServer:
    """`start()` binds `address` (port 0: a free one, see `port`) before returning; `stop()` closes it."""

    def __init__(self, address: Address, *, registry: CollectorRegistry, ready: Callable[[], bool]) -> None:
        self._ready = ready
        self._endpoints = HTTPEndpoints("scheduler-http", {"scheduler": (address, [
            web.get("/healthz", self._ok), web.get("/livez", self._ok), web.get("/readyz", self._readyz),
            metrics_route(registry)])})

    @property
    def port(self) -> int:
        return self._endpoints.ports["scheduler"]

    def start(self) -> None:
        self._endpoints.start()

    def stop(self) -> None:
        self._endpoints.stop()

    async def _ok(self, request: web.Request) -> web.Response:
        return web.Response(text="ok", headers={"X-Content-Type-Options": "nosniff"})

    async def _readyz(self, request: web.Request) -> web.Response:
        if self._ready():
            return await self._ok(request)
        return web.Response(status=500, text=NOT_READY_BODY, headers={"X-Content-Type-Options": "nosniff"})
