"""The API server process: storage → registry → watch cache → HTTP (upstream: cmd/kube-apiserver and
k8s.io/apiserver/pkg/server — the handler chain with authentication, max-in-flight and panic recovery;
k3s pkg/daemons/control for starting the pieces in order and writing the admin kubeconfig and node token).

Lifecycle (aiohttp web_runner's explicit start/stop): `start` opens the store, bootstraps what must
exist (system namespaces, the `kubernetes` Service, allocator repair), starts the watch cache and then
listens, then keeps the `kubernetes` Endpoints pointing at itself (master_endpoints.py); `stop` stops
listening and closes open connections first (watch streams end, clients reconnect elsewhere), then stops
the watch cache, then closes the store, so no request runs against a closed store. `serve_forever` (and
slimkube/allinone.py's BackgroundServer) then start the controller manager with this server's admin
credentials, and stop it before the server.

Authentication: bearer tokens. The admin token (in `DIR/admin.kubeconfig`) and the node token
(`DIR/node-token`, what `slimkube agent --token` takes) are random, created on first start with mode
0600 and kept across restarts. Once the CA exists, `DIR/node-token` is rewritten in k3s's secure form
`K10<sha256 of the CA>::node:<password>` (control/util/jointoken.py); the password, or that whole string, is
the bearer token, and `GET /cacerts` (no token, as k3s) serves the CA bundle the hash is taken over, so
an agent given only the URL and the token verifies the server before sending the token. Both are
allowed everything for now; authorization per identity and TLS
come with the security issue, so bind to 127.0.0.1 or a private network until then. `/healthz`,
`/livez`, `/readyz`, `/version` answer without a token, as upstream's public-info-viewer role allows.
Who a token is (authn.py) is what `POST /apis/authentication.k8s.io/v1/tokenreviews` tells kubelets.

Kubelets (issue 16 item 2): at start, beside the CA, the API server's kubelet client certificate
(`DIR/tls/apiserver-kubelet-client.{crt,key}`, certs.py) that every call to a kubelet presents
(kubeletclient.py), and `POST /v1-slimkube/serving-kubelet-certificate` signs kubelets' serving certificates
(kubeletcerts.py).

Overload: at most `max_inflight` non-watch requests run at once; the next gets 429 with Retry-After,
as upstream's --max-requests-inflight filter does, so a burst degrades into client retries (the
official client and kubectl both retry 429) rather than unbounded queues.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import platform
import secrets
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import yaml
from aiohttp import web

from control.apiserver import authn, certs, discovery, fieldvalidation, kubeletcerts, master_endpoints, openapi, status
from control.apiserver.allocators import kubernetes_service_ip
from control.apiserver.bootstrap import bootstrap
from control.apiserver.handlers import ResourceHandlers, json_response
from control.apiserver.kubeletclient import KubeletClient
from control.apiserver.metricsapi import MetricsAPI
from control.apiserver.registry import Registry
from control.apiserver.request import decode_object
from control.apiserver.status import APIError
from control.apiserver.watchcache import WatchCache
from control.client.kubeconfig import ClientConfig
from control.storage.factory import open_storage
from control.storage.interface import Storage, StorageError, Unavailable
from control.util import jointoken, openssl

log = logging.getLogger(__name__)

PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/cacerts"})
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class ServerConfig:
    data_dir: str
    bind_address: str = "0.0.0.0"
    port: int = 6443
    datastore: str = "sqlite://"
    service_cidr: str = "10.96.0.0/12"
    cluster_cidr: str = "10.244.0.0/16"
    node_port_range: tuple[int, int] = (30000, 32767)
    max_inflight: int = 400
    bookmark_seconds: float = 60.0
    tls: bool = True  # client-go sends the kubeconfig's token only over https (see certs.py)
    advertise_address: str | None = None  # the `kubernetes` Endpoints' IP (master_endpoints.advertise_address)


def _read_or_create_secret(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            value = handle.read().strip()
        if value:
            return value
    except FileNotFoundError:
        pass
    value = secrets.token_hex(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(value + "\n")
    return value


def kubeconfig(server_url: str, token: str, *, name: str = "slimkube", ca_pem: bytes | None = None) -> dict[str, Any]:
    """A kubeconfig any client reads: one cluster (with the CA that signed the serving certificate), one
    user with a bearer token, one current context."""
    cluster: dict[str, Any] = {"server": server_url}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    return {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": "admin", "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "admin", "namespace": "default"}}],
        "current-context": name,
    }


def _write_private(path: str, text: str) -> None:
    tmp = f"{path}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def _status_response(error: APIError) -> web.Response:
    response = json_response(error.status, error.code)
    if error.code == 429:
        response.headers["Retry-After"] = str((error.details or {}).get("retryAfterSeconds", 1))
    return response


LONG_RUNNING_SUFFIXES = ("/log", "/exec", "/attach", "/portforward")


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure leaves as a Status with upstream's code; an unexpected exception is a 500 that is
    logged with its traceback (a bug to fix, never an answer to bad input)."""
    try:
        return await handler(request)
    except APIError as exc:
        return _status_response(exc)
    except web.HTTPNotFound:
        return _status_response(APIError(404, "NotFound", "the server could not find the requested resource"))
    except web.HTTPMethodNotAllowed:
        return _status_response(status.method_not_allowed())
    except web.HTTPRequestEntityTooLarge:
        return _status_response(status.too_large(3 * 1024 * 1024))
    except web.HTTPException:
        raise
    except Unavailable as exc:
        return _status_response(status.service_unavailable(f"storage is unavailable: {exc}"))
    except StorageError as exc:
        log.exception("storage error on %s %s", request.method, request.path)
        return _status_response(APIError(500, "InternalError", f"Internal error occurred: {exc}"))
    except (ConnectionResetError, asyncio.CancelledError):
        raise
    except Exception as exc:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return _status_response(APIError(500, "InternalError", f"Internal error occurred: {type(exc).__name__}"))


class APIServer:
    """One API server; `await start()`, then `url`; `await stop()` to end it."""

    def __init__(self, config: ServerConfig, *, storage: Storage | None = None) -> None:
        self.config = config
        os.makedirs(config.data_dir, mode=0o700, exist_ok=True)
        self.admin_token = _read_or_create_secret(os.path.join(config.data_dir, "admin-token"))
        # what DIR/node-token holds: the bare password until the CA exists, then the K10 form (start())
        self.node_token = _read_or_create_secret(self._node_token_path)
        self._node_password = jointoken.parse(self.node_token).password
        self.authenticator = authn.TokenAuthenticator({self.admin_token: authn.ADMIN,
                                                        self._node_password: authn.NODE})
        self._storage = storage
        self._owns_storage = storage is None
        self._inflight = 0
        self._runner: web.AppRunner | None = None
        self._cache: WatchCache | None = None
        self.registry: Registry | None = None
        self.port = config.port
        self.certs: certs.ServingCerts | None = None
        self.advertise_address: str | None = None
        self._endpoints_task: asyncio.Task | None = None
        # what /openapi/v2 and /openapi/v3 serve; the CRD code publishes custom kinds through add_custom
        self.openapi = openapi.OpenAPIDocuments()

    @property
    def url(self) -> str:
        host = self.config.bind_address
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        scheme = "https" if self.config.tls else "http"
        return f"{scheme}://{host}:{self.port}"

    def client_config(self) -> ClientConfig:
        """How components in this process (the controller manager) reach this server: URL, CA, admin token."""
        return ClientConfig(server=self.url, token=self.admin_token, ca_file=self.certs.ca_path if self.certs else None)

    @property
    def kubeconfig_path(self) -> str:
        return os.path.join(self.config.data_dir, "admin.kubeconfig")

    @property
    def _node_token_path(self) -> str:
        return os.path.join(self.config.data_dir, "node-token")

    def _write_join_token(self, ca_pem: bytes) -> None:
        """DIR/node-token in the secure form (rewritten only when it changes, e.g. a new CA)."""
        token = str(jointoken.JoinToken(password=self._node_password, ca_hash=jointoken.ca_hash(ca_pem)))
        if token != self.node_token:
            _write_private(self._node_token_path, token + "\n")
            self.node_token = token
        self.authenticator.replace({self.admin_token: authn.ADMIN, self._node_password: authn.NODE,
                                    token: authn.NODE})

    async def start(self) -> None:
        if self._storage is None:
            self._storage = await asyncio.to_thread(open_storage, self.config.datastore, data_dir=self.config.data_dir)
        self.registry = Registry(self._storage, service_cidr=self.config.service_cidr,
                                 node_port_range=self.config.node_port_range)
        await asyncio.to_thread(bootstrap, self.registry, api_port=self.config.port)
        self._cache = WatchCache(self._storage)
        await self._cache.start()
        ssl_context = None
        if self.config.tls:
            self.certs = await asyncio.to_thread(certs.ensure_serving_certs, self.config.data_dir,
                                                 bind_address=self.config.bind_address,
                                                 service_ip=kubernetes_service_ip(self.config.service_cidr),
                                                 extra_ips=tuple(filter(None, [self.config.advertise_address])))
            await asyncio.to_thread(certs.ensure_kubelet_client_cert, self.certs)
            ssl_context = self.certs.ssl_context()
            await asyncio.to_thread(self._write_join_token, self.certs.ca_pem())
        app = self._app()
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.config.bind_address, self.config.port, reuse_address=True,
                           ssl_context=ssl_context)
        await site.start()
        # the real port when 0 was asked for
        sockets = site._server.sockets if isinstance(site._server, asyncio.Server) else []
        if sockets:
            self.port = sockets[0].getsockname()[1]
        _write_private(self.kubeconfig_path, yaml.safe_dump(kubeconfig(
            self.url, self.admin_token, ca_pem=self.certs.ca_pem() if self.certs else None), sort_keys=False))
        self.advertise_address = await asyncio.to_thread(
            master_endpoints.advertise_address, advertise=self.config.advertise_address,
            bind_address=self.config.bind_address)
        await asyncio.to_thread(self._reconcile_endpoints)
        self._endpoints_task = asyncio.create_task(self._keep_endpoints())
        log.info("API server listening on %s (kubeconfig %s)", self.url, self.kubeconfig_path)

    def _reconcile_endpoints(self) -> None:
        assert self.registry is not None and self.advertise_address is not None
        if master_endpoints.reconcile(self.registry, ip=self.advertise_address, port=self.port):
            log.info("Endpoints default/kubernetes: %s:%d", self.advertise_address, self.port)

    async def _keep_endpoints(self) -> None:
        """Upstream's endpoint reconciler loop: put the `kubernetes` Endpoints back if someone changed it."""
        while True:
            await asyncio.sleep(master_endpoints.RECONCILE_SECONDS)
            try:
                await asyncio.to_thread(self._reconcile_endpoints)
            except Exception:
                log.exception("reconciling Endpoints default/kubernetes failed")

    async def stop(self) -> None:
        if self._endpoints_task is not None:
            self._endpoints_task.cancel()
            try:
                await self._endpoints_task
            except asyncio.CancelledError:
                pass
            self._endpoints_task = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._cache is not None:
            await self._cache.stop()
            self._cache = None
        if self._storage is not None and self._owns_storage:
            await asyncio.to_thread(self._storage.close)
            self._storage = None

    # -- the handler chain --------------------------------------------------------------------------

    @web.middleware
    async def _authenticate(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in PUBLIC_PATHS or request.path.startswith(("/healthz/", "/livez/", "/readyz/")):
            return await handler(request)
        if self.authenticator.authenticate_header(request.headers.get("Authorization", "")) is not None:
            return await handler(request)
        raise APIError(401, "Unauthorized", "Unauthorized")

    @web.middleware
    async def _limit_inflight(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.query.get("watch") in ("1", "true") or request.path.endswith(LONG_RUNNING_SUFFIXES):
            return await handler(request)  # long-running requests are not counted, as upstream
        if self._inflight >= self.config.max_inflight:
            raise status.too_many_requests(1)
        self._inflight += 1
        try:
            return await handler(request)
        finally:
            self._inflight -= 1

    def _app(self) -> web.Application:
        assert self.registry is not None and self._cache is not None
        app = web.Application(middlewares=[_errors, self._authenticate, self._limit_inflight,
                                           fieldvalidation.middleware(self.openapi)],
                              client_max_size=4 * 1024 * 1024)
        kubelet = KubeletClient(ca_file=self.certs.ca_path if self.certs else None,
                                cert_file=self.certs.kubelet_client_cert_path if self.certs else None,
                                key_file=self.certs.kubelet_client_key_path if self.certs else None)
        resources = ResourceHandlers(self.registry, self._cache, kubelet=kubelet,
                                     bookmark_seconds=self.config.bookmark_seconds)
        version = discovery.version_info(platform=f"{sys.platform}/{platform.machine()}",
                                         python_version=platform.python_version())

        async def get_version(request: web.Request) -> web.Response:
            return json_response(version)

        async def get_api(request: web.Request) -> web.Response:
            return json_response(discovery.api_versions(request.host))

        async def get_apis(request: web.Request) -> web.Response:
            return json_response(discovery.api_group_list())

        async def get_core(request: web.Request) -> web.Response:
            return await self._resource_list("", "v1")

        async def get_group_version(request: web.Request) -> web.Response:
            return await self._resource_list(request.match_info["group"], request.match_info["version"])

        # Discovery answers with and without a trailing slash, as upstream's (its OpenAPI document names
        # the slashed forms, and clients call `GET /version/` first).
        discovery_routes = [
            ("/version", get_version), ("/api", get_api), ("/apis", get_apis), ("/api/v1", get_core),
            ("/apis/{group}", self._group), ("/apis/{group}/{version}", get_group_version),
        ]
        other_routes = [
            ("/healthz", self._health), ("/livez", self._health), ("/readyz", self._ready),
            ("/openapi/v2", self._openapi_v2), ("/openapi/v3", self._openapi_v3_index),
            ("/openapi/v3/{gv:.+}", self._openapi_v3), ("/cacerts", self._cacerts),
        ]
        for path, handler in discovery_routes:
            app.router.add_get(path, handler)
            app.router.add_get(path + "/", handler)
        for path, handler in other_routes:
            app.router.add_get(path, handler)
        # before the generic resource route, which would otherwise take them
        app.router.add_post(f"/apis/{authn.GROUP_VERSION}/tokenreviews", self._token_review)
        app.router.add_post(kubeletcerts.PATH, self._serving_kubelet_cert)
        for path, metrics_handler in MetricsAPI(self.registry, kubelet).routes():
            app.router.add_get(path, metrics_handler)
        app.router.add_route("*", "/api/v1/{tail:.+}", resources.handle)
        app.router.add_route("*", "/apis/{group}/{version}/{tail:.+}", resources.handle)
        return app

    @staticmethod
    async def _resource_list(group: str, version: str) -> web.Response:
        body = discovery.api_resource_list(group, version)
        if body is None:
            raise web.HTTPNotFound()
        return json_response(body)

    @staticmethod
    async def _group(request: web.Request) -> web.Response:
        body = discovery.api_group(request.match_info["group"])
        if body is None:
            raise web.HTTPNotFound()
        return json_response(body)

    @staticmethod
    async def _health(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _ready(self, request: web.Request) -> web.Response:
        """Ready while the store answers; a load balancer then stops sending to a server without one."""
        assert self._storage is not None
        try:
            await asyncio.wait_for(asyncio.to_thread(self._storage.revision), timeout=5)
        except (StorageError, TimeoutError) as exc:
            return web.Response(status=503, text=f"[-]storage failed: {exc}\nreadyz check failed")
        return web.Response(text="ok")

    async def _token_review(self, request: web.Request) -> web.Response:
        body = decode_object(await request.read(), request.headers.get("Content-Type", ""))
        return json_response(authn.token_review(body, self.authenticator), 201)

    async def _serving_kubelet_cert(self, request: web.Request) -> web.Response:
        """A kubelet's serving certificate (kubeletcerts.py); 404 on a server without a CA."""
        if self.certs is None:
            raise web.HTTPNotFound()
        wanted = kubeletcerts.parse(decode_object(await request.read(), "application/json"))
        try:
            issued = await asyncio.to_thread(certs.sign, self.certs, wanted.csr_pem, subject=wanted.subject,
                                             extensions=wanted.extensions)
        except openssl.OpenSSLError as exc:  # openssl refused the CSR (bad PEM, bad self-signature)
            raise status.bad_request(f"csr: {exc}") from None
        log.info("issued a kubelet serving certificate for node %s (%s)", wanted.node_name, ", ".join(wanted.alt_names))
        return json_response({"certificate": issued.decode()}, 201)

    async def _cacerts(self, request: web.Request) -> web.Response:
        """The CA bundle, byte for byte as on disk (the join token's hash is over these bytes)."""
        if self.certs is None:
            raise web.HTTPNotFound()
        return web.Response(body=await asyncio.to_thread(self.certs.ca_pem), content_type="application/x-pem-file")

    async def _openapi_v2(self, request: web.Request) -> web.Response:
        """JSON, or gnostic protobuf when asked for (kubectl 1.20 asks for it and accepts octet-stream)."""
        if "protobuf" in request.headers.get("Accept", ""):
            body = await asyncio.to_thread(self.openapi.v2_protobuf)
            return web.Response(body=body, content_type="application/octet-stream")
        return web.Response(body=await asyncio.to_thread(self.openapi.v2_json), content_type="application/json")

    async def _openapi_v3_index(self, request: web.Request) -> web.Response:
        return json_response(await asyncio.to_thread(self.openapi.v3_index))

    async def _openapi_v3(self, request: web.Request) -> web.Response:
        """One group-version's document; a stale `?hash=` is redirected to the current one, and a matching
        one may be cached for good, as kube-openapi's handler3 answers."""
        found = await asyncio.to_thread(self.openapi.v3, request.match_info["gv"].strip("/"))
        if found is None:
            raise web.HTTPNotFound()
        data, digest = found
        wanted = request.query.get("hash")
        if wanted is not None and wanted != digest:
            raise web.HTTPMovedPermanently(f"{request.path}?hash={digest}")
        headers = {"ETag": f'"{digest}"', "Cache-Control": "public, immutable" if wanted else "no-cache, private"}
        return web.Response(body=data, content_type="application/json", headers=headers)
