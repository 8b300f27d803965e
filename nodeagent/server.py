"""The kubelet's HTTP API: /healthz, /pods, /stats/summary, /metrics, /metrics/resource,
/containerLogs/{namespace}/{pod}/{container}, /exec and /attach/{namespace}/{pod}/{container},
/portForward/{namespace}/{pod} (WebSocket, nodeagent/streaming/).

Upstream: pkg/kubelet/server/server.go (InstallDefaultHandlers, getContainerLogs), pkg/kubelet/server/
stats/summary.go and the Summary API types (k8s.io/kubelet/pkg/apis/stats/v1alpha1); DESIGN.md "Kubelet"
last bullet. The API server's `pods/<name>/log` proxy (control/apiserver/handlers.py `_log`) calls
`http://<node InternalIP>:<daemonEndpoints.kubeletEndpoint.Port>/containerLogs/<ns>/<pod>/<container>`
with follow, previous, timestamps, tailLines, limitBytes, sinceSeconds and sinceTime, as here.

HTTPS only, with the serving certificate of nodeagent/servingcert.py; every path but `/healthz` needs a
caller authenticated as nodeagent/authn.py decides (a client certificate from the cluster CA, or a bearer
token the API server vouches for through a TokenReview), checked in a middleware before any handler runs;
anyone else gets 401 with a Status body (upstream writes the bare text "Unauthorized"; a Status is what
every other 401 in the cluster carries). There is no read-only port.

aiohttp on its own event loop thread (the kubelet's other parts are plain threads); every runtime or
callback call is blocking, so it runs in `asyncio.to_thread`. A followed log is read on a thread and fed
to the response through a queue; it ends when the container stops logging for good or the client goes.
The Summary (nodeagent/stats/) comes from psutil, /proc and Docker's stats; /metrics/resource renders it
with upstream's resource metric names, /metrics is the kubelet's own metrics (nodeagent/stats/kubelet_metrics.py).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from aiohttp import web

from control.util.loopthread import LoopThread, serve_app
from nodeagent import authn
from nodeagent.runtime.interface import Runtime, StreamingRuntime
from nodeagent.servingcert import ServingTLS
from nodeagent.stats import resource_metrics
from nodeagent.stats.kubelet_metrics import KubeletMetrics
from nodeagent.stats.provider import StatsProvider
from nodeagent.streaming import portforward, remotecommand

log = logging.getLogger(__name__)

_END = object()
SHUTDOWN_SECONDS = 2.0  # open log streams (kubectl logs -f) get this long before stop closes them


def _int(request: web.Request, name: str) -> int | None:
    value = request.query.get(name)
    if value in (None, ""):
        return None
    try:
        number = int(value)
    except ValueError:
        raise web.HTTPBadRequest(text=f"{name}: {value!r} is not an integer") from None
    if number < 0:
        raise web.HTTPBadRequest(text=f"{name}: must not be negative")
    return number


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "").lower() in ("1", "true")


def _since(request: web.Request) -> int | None:
    """Unix seconds from sinceSeconds or sinceTime (RFC 3339), whichever is given."""
    seconds = _int(request, "sinceSeconds")
    if seconds is not None:
        return int(time.time()) - seconds
    stamp = request.query.get("sinceTime")
    if stamp:
        try:
            return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())
        except ValueError:
            raise web.HTTPBadRequest(text=f"sinceTime: {stamp!r} is not an RFC 3339 time") from None
    return None


UNAUTHORIZED = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "Unauthorized",
                "reason": "Unauthorized", "code": 401}
Handler = Callable[[web.Request], Any]


def server_ssl_context(tls: ServingTLS) -> ssl.SSLContext:
    """TLS 1.2+, our certificate; client certificates asked for and, when sent, verified against the cluster CA
    (`CERT_OPTIONAL`: a caller without one may still authenticate with a token)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(tls.cert_file, tls.key_file)
    if tls.client_ca_file:
        context.load_verify_locations(cafile=tls.client_ca_file)
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


class KubeletServer:
    """The HTTPS API on `address:port` (port 0: any free one, see `.port` after `start`); `authenticate_token`
    is the TokenReview cache's `authenticate` (blocking: it may ask the API server)."""

    def __init__(self, address: str, port: int, *, tls: ServingTLS,
                 authenticate_token: Callable[[str], authn.User | None], pods: Callable[[], list[dict]],
                 runtime: Runtime, health: Callable[[], list[str]],
                 find_container: Callable[[str, str, str], str | None], node_name: str = "",
                 fs_path: str = "/", streams: StreamingRuntime | None = None,
                 open_port: portforward.Opener | None = None, stats: StatsProvider | None = None,
                 metrics: KubeletMetrics | None = None) -> None:
        self.address = address
        self.port = port
        self._tls = tls
        self._authenticate_token = authenticate_token
        self._pods = pods
        self._runtime = runtime
        self._health = health
        self._find_container = find_container
        self._stats = stats or StatsProvider(runtime, node_name=node_name, fs_path=fs_path)
        self._metrics = metrics or KubeletMetrics(runtime.list_pods)
        self._streams = streams
        self._open_port = open_port
        self._thread = LoopThread("kubelet-server")
        self._runner: web.AppRunner | None = None

    # -- lifecycle: start binds before returning (a port in use raises here); stop cleans up the runner,
    #    which closes open log streams, then ends the loop and its thread.

    def start(self) -> None:
        app = web.Application(middlewares=[self._authenticate])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/pods", self._pods_handler)
        app.router.add_get("/stats/summary", self._summary)
        app.router.add_get("/metrics", self._kubelet_metrics)
        app.router.add_get("/metrics/resource", self._resource_metrics)
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._logs)
        if self._streams is not None:
            for kind in ("exec", "attach"):
                for method in ("GET", "POST"):
                    app.router.add_route(method, f"/{kind}/{{namespace}}/{{pod}}/{{container}}",
                                         functools.partial(self._remotecommand, exec_=kind == "exec"))
        if self._open_port is not None:
            for method in ("GET", "POST"):
                app.router.add_route(method, "/portForward/{namespace}/{pod}", self._portforward)
        self._thread.start()
        self._runner, self.port = self._thread.run(
            serve_app(app, self.address, self.port, shutdown_timeout=SHUTDOWN_SECONDS,
                      ssl_context=server_ssl_context(self._tls)))
        log.info("kubelet API listening on https://%s:%d", self.address, self.port)

    def stop(self) -> None:
        if not self._thread.running:
            return
        if self._runner is not None:
            self._thread.run(self._runner.cleanup())
        self._thread.stop()
        self._runner = None

    # -- authentication (nodeagent/authn.py), before any handler ------------------------------------------

    @web.middleware
    async def _authenticate(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        transport = request.transport
        decision = authn.decide(request.path, peercert=transport.get_extra_info("peercert") if transport else None,
                                authorization=request.headers.get("Authorization", ""))
        if decision.outcome is authn.Outcome.REVIEW:
            if await asyncio.to_thread(self._authenticate_token, decision.token) is not None:
                return await handler(request)
        elif decision.outcome is not authn.Outcome.UNAUTHORIZED:
            return await handler(request)
        log.debug("kubelet API: 401 for %s %s from %s", request.method, request.path, request.remote)
        return web.json_response(UNAUTHORIZED, status=401)

    # -- handlers ---------------------------------------------------------------------------------------

    async def _healthz(self, request: web.Request) -> web.Response:
        failed = await asyncio.to_thread(self._health)
        if not failed:
            return web.Response(text="ok")
        lines = [f"[-]{check} failed" for check in failed]
        return web.Response(status=500, text="\n".join([*lines, "healthz check failed"]) + "\n")

    async def _pods_handler(self, request: web.Request) -> web.Response:
        pods = await asyncio.to_thread(self._pods)
        return web.json_response({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": pods})

    async def _summary(self, request: web.Request) -> web.Response:
        return web.json_response(await asyncio.to_thread(self.summary))

    async def _kubelet_metrics(self, request: web.Request) -> web.Response:
        body = await asyncio.to_thread(self._metrics.render)
        return web.Response(body=body, headers={"Content-Type": resource_metrics.CONTENT_TYPE})

    async def _resource_metrics(self, request: web.Request) -> web.Response:
        try:
            summary: dict[str, Any] | None = await asyncio.to_thread(self.summary)
        except Exception:  # Docker down or a stats call failing: upstream answers scrape_error 1
            log.exception("kubelet: gathering resource metrics failed")
            summary = None
        return web.Response(body=resource_metrics.render(summary),
                            headers={"Content-Type": resource_metrics.CONTENT_TYPE})

    async def _remotecommand(self, request: web.Request, *, exec_: bool) -> web.StreamResponse:
        assert self._streams is not None
        return await remotecommand.serve(request, runtime=self._streams, find_container=self._find_container,
                                         exec_=exec_)

    async def _portforward(self, request: web.Request) -> web.StreamResponse:
        assert self._open_port is not None
        return await portforward.serve(request, open_port=self._open_port)

    async def _logs(self, request: web.Request) -> web.StreamResponse:
        namespace, pod, container = (request.match_info[k] for k in ("namespace", "pod", "container"))
        tail, limit = _int(request, "tailLines"), _int(request, "limitBytes")
        since, follow, timestamps = _since(request), _flag(request, "follow"), _flag(request, "timestamps")
        if _flag(request, "previous"):
            container_id = await asyncio.to_thread(self._previous, namespace, pod, container)
            if container_id is None:
                raise web.HTTPBadRequest(text=f'previous terminated container "{container}" in pod "{pod}" '
                                              "not found")
        else:
            container_id = await asyncio.to_thread(self._find_container, namespace, pod, container)
            if container_id is None:
                raise web.HTTPNotFound(text=f'container "{container}" in pod "{pod}" not found')
        output = await asyncio.to_thread(self._runtime.logs, container_id, tail=tail, timestamps=timestamps,
                                         follow=follow, since=since)
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        if isinstance(output, (bytes, bytearray)):
            await response.write(bytes(output[:limit] if limit is not None else output))
        else:
            await self._stream(response, output, limit)
        await response.write_eof()
        return response

    async def _stream(self, response: web.StreamResponse, chunks: Iterator[bytes], limit: int | None) -> None:
        """Copy `chunks` (a blocking iterator) to `response` until it ends, `limit` bytes or the client goes."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=64)
        gone = threading.Event()

        def pump() -> None:
            try:
                for chunk in chunks:
                    if gone.is_set():
                        break
                    asyncio.run_coroutine_threadsafe(queue.put(chunk), loop).result()
            except Exception as exc:  # noqa: BLE001 - the container removed mid-stream, Docker gone: end the stream
                log.debug("log stream ended: %s", exc)
            finally:
                close = getattr(chunks, "close", None)
                if close is not None and gone.is_set():
                    close()
                if not loop.is_closed():
                    asyncio.run_coroutine_threadsafe(queue.put(_END), loop)

        threading.Thread(target=pump, name="kubelet-log-pump", daemon=True).start()
        left = limit
        try:
            while (chunk := await queue.get()) is not _END:
                if left is not None:
                    chunk, left = chunk[:left], left - min(left, len(chunk))
                await response.write(chunk)
                if left == 0:
                    break
        finally:
            gone.set()

    # -- data -------------------------------------------------------------------------------------------

    def _previous(self, namespace: str, pod: str, container: str) -> str | None:
        """The id of the instance before the newest one (upstream: the last terminated container)."""
        for status in self._runtime.list_pods():
            if status.namespace == namespace and status.name == pod:
                found = sorted((c for c in status.containers if c.name == container),
                               key=lambda c: c.restart_count, reverse=True)
                return found[1].id if len(found) > 1 else None
        return None

    def summary(self) -> dict[str, Any]:
        """The Summary API document (stats/v1alpha1) now."""
        return self._stats.summary()
