"""The kubelet's HTTP API: /healthz, /pods, /stats/summary, /metrics, /metrics/resource,
/containerLogs/{namespace}/{pod}/{container}, /exec and /attach/{namespace}/{pod}/{container},
/portForward/{namespace}/{pod} (WebSocket, nodeagent/streaming/).

Upstream: pkg/kubelet/server/server.go (InstallDefaultHandlers, getContainerLogs), pkg/kubelet/server/
stats/summary.go and the Summary API types (k8s.io/kubelet/pkg/apis/stats/v1alpha1).
The API server's `pods/<name>/log` proxy (control/apiserver/endpoints/handlers.py `_log`) calls
`http://<node InternalIP>:<daemonEndpoints.kubeletEndpoint.Port>/containerLogs/<ns>/<pod>/<container>`
with follow, previous, timestamps, tailLines, limitBytes, sinceSeconds and sinceTime, as here.

HTTPS only, with the serving certificate of nodeagent/servingcert.py; every path but `/healthz` needs a
caller authenticated as nodeagent/authn.py decides (a client certificate from the cluster CA, or a bearer
token the API server vouches for through a TokenReview) and authorized as nodeagent/authz.py decides (a
SubjectAccessReview on `nodes/proxy`, `nodes/log`, `nodes/stats`, … of this node), checked in a middleware
before any handler runs. A caller not authenticated gets 401 with a Status body (upstream writes the bare
text "Unauthorized"; a Status is what every other 401 in the cluster carries); one not authorized gets
upstream's plain-text 403. There is no read-only port.

aiohttp on its own event loop thread (the kubelet's other parts are plain threads); every runtime or
callback call is blocking, so it runs in `asyncio.to_thread`. Logs: the options are control/api/
podlogoptions.py's (shared with the API server), the instance and the timestamp format nodeagent/logs.py's.
A log is read on a thread and fed to the chunked response through a queue, each line written as Docker
hands it over; a followed one ends when the container ends (Docker ends the stream), at limitBytes, or
within a second of the client going, even while the container is silent (the Docker stream is then
closed, which wakes the read waiting for the next line). When the kubelet stops, open streams (exec,
attach, port-forward, followed logs) are ended at once (control/util/openstreams.py) instead of each
holding the stop for the runner's shutdown timeout.
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
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any

from aiohttp import web

from control.api import podlogoptions
from control.api.typed.core import Pod
from control.util.loopthread import LoopThread, serve_app
from control.util.openstreams import OpenStreams
from nodeagent import authn, authz, logs
from nodeagent.runtime.interface import ContainerNotFound, Runtime, RuntimeFailure, StreamingRuntime
from nodeagent.servingcert import ServingTLS
from nodeagent.stats import resource_metrics
from nodeagent.stats.kubelet_metrics import KubeletMetrics
from nodeagent.stats.provider import StatsProvider
from nodeagent.streaming import portforward, remotecommand

log = logging.getLogger(__name__)

_END = object()
SHUTDOWN_SECONDS = 2.0  # requests other than streams get this long to finish when the server stops
STREAM_PATHS = ("/exec/", "/attach/", "/portForward/", "/containerLogs/")  # ended at once at stop
CLIENT_CHECK_SECONDS = 1.0  # how soon a followed log of a silent container notices its client went away


def _is(pod: Mapping[str, Any], namespace: str, name: str) -> bool:
    meta = pod.get("metadata") or {}
    return meta.get("name") == name and (meta.get("namespace") or "default") == namespace


def _quietly(close: Callable[[], object]) -> None:
    try:
        close()
    except Exception as exc:  # noqa: BLE001 - closing a stream Docker already ended
        log.debug("closing a log stream: %s", exc)


UNAUTHORIZED = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "Unauthorized",
                "reason": "Unauthorized", "code": 401}
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


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
    is the TokenReview cache's `authenticate`, `authorize` the SubjectAccessReview cache's `allowed` (both
    blocking: they may ask the API server)."""

    def __init__(self, address: str, port: int, *, tls: ServingTLS,
                 authenticate_token: Callable[[str], authn.User | None],
                 authorize: Callable[[authn.User, authz.Check], bool], pods: Callable[[], list[dict[str, Any]]],
                 runtime: Runtime, health: Callable[[], list[str]],
                 find_container: Callable[[str, str, str], str | None],
                 pod_status: Callable[[str], Mapping[str, Any] | None] = lambda uid: None, node_name: str = "",
                 fs_path: str = "/", streams: StreamingRuntime | None = None,
                 open_port: portforward.Opener | None = None, stats: StatsProvider | None = None,
                 metrics: KubeletMetrics | None = None) -> None:
        self.address = address
        self.port = port
        self._tls = tls
        self._authenticate_token = authenticate_token
        self._authorize = authorize
        self._pods = pods
        self._runtime = runtime
        self._health = health
        self._find_container = find_container
        self._stats = stats or StatsProvider(runtime, node_name=node_name, fs_path=fs_path)
        self._metrics = metrics or KubeletMetrics(runtime.list_pods)
        self._pod_status = pod_status
        self._streams = streams
        self._open_port = open_port
        self._thread = LoopThread("kubelet-server")
        self._runner: web.AppRunner | None = None

    # -- lifecycle: start binds before returning (a port in use raises here); stop cleans up the runner,
    #    which ends open streams (exec, attach, port-forward, followed logs) at once, then ends the loop and
    #    its thread.

    def start(self) -> None:
        app = web.Application(middlewares=[self._authenticate])
        OpenStreams(lambda request: request.path.startswith(STREAM_PATHS)).install(app)
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

    # -- authentication (nodeagent/authn.py), then authorization (nodeagent/authz.py), before any handler --

    @web.middleware
    async def _authenticate(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        transport = request.transport
        decision = authn.decide(request.path, peercert=transport.get_extra_info("peercert") if transport else None,
                                authorization=request.headers.get("Authorization", ""))
        if decision.outcome is authn.Outcome.PUBLIC:
            return await handler(request)
        user = decision.user
        if decision.outcome is authn.Outcome.REVIEW:
            user = await asyncio.to_thread(self._authenticate_token, decision.token)
        if user is None:
            log.debug("kubelet API: 401 for %s %s from %s", request.method, request.path, request.remote)
            return web.json_response(UNAUTHORIZED, status=401)
        refusal = await asyncio.to_thread(self._refusal, user, request.method, request.path)
        if refusal is not None:
            log.debug("kubelet API: %d for %s %s: %s", refusal[0], request.method, request.path, refusal[1])
            return web.Response(status=refusal[0], text=refusal[1])
        return await handler(request)

    def _refusal(self, user: authn.User, method: str, path: str) -> tuple[int, str] | None:
        """None when one of the request's checks is allowed; else (403, upstream's text), or (500, …) when the
        API server could not be asked."""
        checks = authz.checks(method, path)
        for check in checks:
            try:
                if self._authorize(user, check):
                    return None
            except authz.ReviewFailed as exc:
                log.warning("kubelet API: authorizing %s %s for %s failed: %s", method, path, user.name, exc)
                return 500, authz.error_text(user, check)
        return 403, authz.forbidden_text(user, checks[0])

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
        """upstream getContainerLogs: the pod and container must be this kubelet's, the options valid, and
        the instance is chosen from the pod's status (nodeagent/logs.py); then Docker's log, streamed."""
        namespace, name, container = (request.match_info[k] for k in ("namespace", "pod", "container"))
        try:
            options = podlogoptions.parse(request.query)
        except ValueError as exc:
            raise web.HTTPBadRequest(text=str(exc)) from None
        errors = podlogoptions.validate(options)
        if errors:
            raise web.HTTPUnprocessableEntity(text="; ".join(e.message for e in errors))
        pod = next((p for p in await asyncio.to_thread(self._pods) if _is(p, namespace, name)), None)
        if pod is None:
            raise web.HTTPNotFound(text=f'pod "{name}" does not exist\n')
        spec = pod.get("spec") or {}
        if not any(c.get("name") == container for key in ("initContainers", "containers", "ephemeralContainers")
                   for c in spec.get(key) or [] if isinstance(c, Mapping)):
            raise web.HTTPNotFound(text=f'container "{container}" not found in pod "{name}"\n')
        uid = Pod(pod).metadata.uid
        status = await asyncio.to_thread(self._pod_status, uid) or pod.get("status") or {}
        try:
            container_id = logs.log_container_id(name, container, status, previous=options.previous)
        except logs.LogUnavailable as exc:
            raise web.HTTPBadRequest(text=str(exc)) from None
        try:
            output = await asyncio.to_thread(self._runtime.logs, container_id, tail=options.tail_lines,
                                             timestamps=options.timestamps, follow=options.follow,
                                             since=options.since(time.time()))
        except ContainerNotFound:  # removed since the status was written (upstream: the runtime's error, 400)
            raise web.HTTPBadRequest(text=f'container "{container}" in pod "{name}" is not available') from None
        except RuntimeFailure as exc:
            raise web.HTTPInternalServerError(text=f"reading the log of {container_id[:12]}: {exc}") from None
        source: Iterable[bytes] = [bytes(output)] if isinstance(output, (bytes, bytearray)) else output
        chunks = logs.limit(logs.restamp(source) if options.timestamps else source, options.limit_bytes)
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        await self._stream(response, chunks, getattr(source, "close", None),
                           client_gone=lambda: request.transport is None or request.transport.is_closing())
        await response.write_eof()
        return response

    async def _stream(self, response: web.StreamResponse, chunks: Iterator[bytes],
                      close: Callable[[], object] | None, *, client_gone: Callable[[], bool]) -> None:
        """Copy `chunks` (a blocking iterator, read on its own thread) to `response` as each arrives, until
        it ends or the client goes (a write fails, or `client_gone` says so while the container is silent,
        checked every CLIENT_CHECK_SECONDS); then `close` the source, which also wakes a read blocked on
        Docker."""
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
                if not loop.is_closed():
                    asyncio.run_coroutine_threadsafe(queue.put(_END), loop)

        threading.Thread(target=pump, name="kubelet-log-pump", daemon=True).start()
        try:
            while True:
                try:
                    chunk = await asyncio.wait_for(queue.get(), CLIENT_CHECK_SECONDS)
                except TimeoutError:
                    if client_gone():
                        break
                    continue
                if chunk is _END:
                    break
                await response.write(chunk)
        finally:
            gone.set()
            while not queue.empty():  # a pump waiting on a full queue gets to see `gone`
                queue.get_nowait()
            if close is not None:
                await asyncio.to_thread(_quietly, close)

    # -- data -------------------------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """The Summary API document (stats/v1alpha1) now."""
        return self._stats.summary()
