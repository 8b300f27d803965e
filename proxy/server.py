"""The kube-proxy's HTTP endpoints: health on healthzBindAddress (default 0.0.0.0:10256) and Prometheus
metrics on metricsBindAddress (default 127.0.0.1:10249).

Upstream: pkg/proxy/healthcheck/proxier_health.go — `/healthz` and `/livez` answer 200 while no queued
change has waited longer than the health timeout, else 503, with a JSON body
`{"lastUpdated": "...","currentTime": "..."}` whose times are Go `time.Time` strings; when healthy,
lastUpdated is reported as the current time (kept for compatibility with old releases, as upstream's
comment says). Each answer is counted in `kubeproxy_proxy_healthz_total{code}` / `..._livez_total{code}`
(pkg/proxy/metrics). cmd/kube-proxy/app/server.go serveMetrics: `/metrics` and `/proxyMode` on the metrics
address. The health decision itself is the proxier's (`Health` below is what it reports); this module only
serves it.

Served by control/util/httpendpoints.py (shared with the scheduler): one site per distinct address, so equal
healthz and metrics addresses share a listener. Port 0 binds a free port (`ports` says which, for tests); an
empty address disables that endpoint.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter

from control.util.httpendpoints import HTTPEndpoints, metrics_route


@dataclass(frozen=True)
class Health:
    healthy: bool
    last_updated: float | None  # unix time of the last successful sync; None: none yet


def go_time(stamp: float | None) -> str:
    """A unix time as Go's time.Time.String() prints it in UTC ("2024-05-01 10:00:00.5 +0000 UTC"); the
    zero time when there is none."""
    if stamp is None:
        return "0001-01-01 00:00:00 +0000 UTC"
    moment = datetime.fromtimestamp(stamp, UTC)
    fraction = f"{moment.microsecond:06d}".rstrip("0")
    return moment.strftime("%Y-%m-%d %H:%M:%S") + (f".{fraction}" if fraction else "") + " +0000 UTC"


def health_body(health: Health, now: float) -> tuple[int, str]:
    """(status, body) of /healthz and /livez."""
    last = now if health.healthy else health.last_updated
    body = json.dumps({"lastUpdated": go_time(last), "currentTime": go_time(now)}, separators=(",", ": "))
    return (200 if health.healthy else 503), body


class ProxyHTTPServer:
    """Health and metrics listeners (see the module notes); start() binds before returning."""

    def __init__(self, *, healthz_address: tuple[str, int] | None, metrics_address: tuple[str, int] | None,
                 health: Callable[[], Health], registry: CollectorRegistry, mode: str = "iptables",
                 clock: Callable[[], float] = time.time) -> None:
        self._health = health
        self._mode = mode
        self._clock = clock
        self._healthz_total = Counter("kubeproxy_proxy_healthz", "Cumulative proxy healthz HTTP status",
                                      ["code"], registry=registry)
        self._livez_total = Counter("kubeproxy_proxy_livez", "Cumulative proxy livez HTTP status",
                                    ["code"], registry=registry)
        self._endpoints = HTTPEndpoints("proxy-http", {
            "healthz": (healthz_address, [web.get("/healthz", self._healthz), web.get("/livez", self._livez)]),
            "metrics": (metrics_address, [metrics_route(registry), web.get("/proxyMode", self._proxy_mode)])})

    @property
    def ports(self) -> dict[str, int]:
        """"healthz"/"metrics" → the bound port."""
        return self._endpoints.ports

    def start(self) -> None:
        self._endpoints.start()

    def stop(self) -> None:
        self._endpoints.stop()

    # -- handlers ---------------------------------------------------------------------------------------

    async def _answer(self, counter: Counter) -> web.Response:
        status, body = health_body(await asyncio.to_thread(self._health), self._clock())
        counter.labels(code=str(status)).inc()
        return web.Response(status=status, text=body, content_type="application/json",
                            headers={"X-Content-Type-Options": "nosniff"})

    async def _healthz(self, request: web.Request) -> web.Response:
        return await self._answer(self._healthz_total)

    async def _livez(self, request: web.Request) -> web.Response:
        return await self._answer(self._livez_total)

    async def _proxy_mode(self, request: web.Request) -> web.Response:
        return web.Response(text=self._mode)
