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

Authentication: client certificates signed by the cluster CA (authentication/x509.py: CN the user, O the
groups), then bearer tokens. The admin token (in `DIR/admin.kubeconfig`) and the node token
(`DIR/node-token`, what `slimkube agent --token` takes) are random, created on first start with mode
0600 and kept across restarts. Once the CA exists, `DIR/node-token` is rewritten in k3s's secure form
`K10<sha256 of the CA>::node:<password>` (control/util/jointoken.py); the password, or that whole string, is
the bearer token, and `GET /cacerts` (no token, as k3s) serves the CA bundle the hash is taken over, so
an agent given only the URL and the token verifies the server before sending the token. The admin
(system:masters) and the shared node credential are allowed everything; any other user (a service account
with its token, an impersonated user) is held to RBAC (authorization/, docs/authorization.md), whose
bootstrap policy is reconciled at every start. Service account tokens are JWTs signed with
`DIR/tls/service.key` (authentication/serviceaccounts.py, registry/tokenrequest.py for
`serviceaccounts/token`, `/.well-known/openid-configuration` and `/openid/v1/jwks` for their verifiers;
docs/service-accounts.md). `/healthz`, `/livez`, `/readyz`, `/version` answer without a token, as upstream's
public-info-viewer role allows.
Who a token is (authentication/tokens.py) is what `POST /apis/authentication.k8s.io/v1/tokenreviews` tells kubelets.

Kubelets: at start, beside the CA, the API server's kubelet client certificate
(`DIR/tls/apiserver-kubelet-client.{crt,key}`, certs.py) that every call to a kubelet presents
(kubeletclient.py), and `POST /v1-slimkube/serving-kubelet-certificate` signs kubelets' serving certificates
(kubeletcerts.py).

Audit: with a policy file and a log (audit/, docs/apiserver.md) each request's events are queued to a
writer thread from the middleware right after authentication; every answer carries an `Audit-Id` header.

Overload: at most `max_inflight` non-watch requests run at once; the next gets 429 with Retry-After,
as upstream's --max-requests-inflight filter does, so a burst degrades into client retries (the
official client and kubectl both retry 429) rather than unbounded queues.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import logging
import os
import platform
import secrets
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import yaml
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from control.apiserver import resources as resources_table
from control.apiserver import status, warning
from control.apiserver.admission import config as admission_config
from control.apiserver.aggregator.backends import group_list_entries
from control.apiserver.aggregator.certs import FrontProxyCerts, authentication_config, ensure_front_proxy_certs
from control.apiserver.aggregator.proxy import Aggregator
from control.apiserver.audit import filter as audit_filter
from control.apiserver.audit import policy as audit_policy
from control.apiserver.audit.backend import LogBackend, LogOptions
from control.apiserver.authentication import certs, kubeletcerts, x509
from control.apiserver.authentication import serviceaccounts as sa_authn
from control.apiserver.authentication import tokens as authn
from control.apiserver.authorization import filter as authz_filter
from control.apiserver.authorization import follower, reviews
from control.apiserver.authorization.authorizer import Chain
from control.apiserver.authorization.nodegraph import NodeGraph
from control.apiserver.authorization.policycache import PolicyCache
from control.apiserver.authorization.source import default_chain
from control.apiserver.codec import fieldvalidation
from control.apiserver.codec.jsonwire import encode_json
from control.apiserver.controlplane import master_endpoints
from control.apiserver.controlplane.bootstrap import bootstrap
from control.apiserver.controlplane.bootstrap_policy import reconcile_policy
from control.apiserver.crd.controller import PREFIX as CRD_PREFIX
from control.apiserver.crd.controller import CRDController
from control.apiserver.endpoints import aggregated_discovery, discovery, health, tables
from control.apiserver.endpoints.handlers import ResourceHandlers, json_response
from control.apiserver.endpoints.metrics import APIServerMetrics, MeteredStorage, is_mutating
from control.apiserver.endpoints.request import decode_object
from control.apiserver.openapi import spec as openapi
from control.apiserver.registry import componentstatus
from control.apiserver.registry.allocators import kubernetes_service_ip
from control.apiserver.registry.metricsapi import MetricsAPI
from control.apiserver.registry.store import Registry
from control.apiserver.registry.tokenrequest import TokenIssuer, create_token
from control.apiserver.resources import by_path
from control.apiserver.status import APIError
from control.apiserver.storage.watchcache import Subscription, WatchCache
from control.apiserver.streaming.kubeletclient import KubeletClient
from control.client.kubeconfig import ClientConfig
from control.storage.factory import open_storage
from control.storage.interface import Storage, StorageError, Unavailable
from control.util import jointoken, openssl, privatefiles, satoken
from control.util.openstreams import OpenStreams

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
    # Service account tokens (docs/service-accounts.md): the signing key file (made when missing; default
    # DIR/tls/service.key), the issuer written into and accepted from tokens, and the audiences accepted
    # (upstream --service-account-signing-key-file, --service-account-issuer, --api-audiences).
    service_account_key_file: str = ""
    service_account_issuer: str = satoken.DEFAULT_ISSUER
    api_audiences: tuple[str, ...] = ()
    disable_admission_plugins: tuple[str, ...] = ()  # upstream --disable-admission-plugins, by plugin name
    # webhooks and aggregated APIs to a Service's endpoints, not its ClusterIP (no kube-proxy on this host)
    enable_aggregator_routing: bool = True
    admission_config_file: str | None = None  # an AdmissionConfiguration (admission/config.py)
    # auditing (audit/, docs/apiserver.md): on when both a policy file and a log are given, as upstream
    audit_policy_file: str | None = None
    audit_log: LogOptions | None = None
    # encryption at rest (storage/encryption.py): an EncryptionConfiguration file
    encryption_provider_config: str | None = None


def _read_or_create_secret(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            value = handle.read().strip()
        if value:
            return value
    except FileNotFoundError:
        pass
    value = secrets.token_hex(32)
    privatefiles.write_private(path, value + "\n")
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


def _stored_getter(registry: Registry) -> sa_authn.Getter:
    """What the service account authenticator reads: stored core objects by plural."""
    def get(plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        resource = resources_table.by_path("", "v1", plural)
        assert resource is not None
        return registry.get(resource, namespace, name)
    return get


def _aggregated(body: dict[str, Any], version: str) -> web.Response:
    """An aggregated discovery document, its Content-Type naming its kind (aggregated_discovery.py); `Vary:
    Accept` because the same URL answers the legacy document to other clients."""
    return web.Response(body=encode_json(body), headers={"Content-Type": aggregated_discovery.content_type(version),
                                                         "Vary": "Accept"})


def _status_response(error: APIError) -> web.Response:
    response = json_response(error.status, error.code)
    if error.code == 429:
        response.headers["Retry-After"] = str((error.details or {}).get("retryAfterSeconds", 1))
    return response


HEALTH_TIMEOUT = 5.0
LONG_RUNNING_SUFFIXES = ("/log", "/exec", "/attach", "/portforward")


def is_long_running(request: web.Request) -> bool:
    """Watches and the streaming subresources: not counted in flight, and ended at once at stop."""
    return request.query.get("watch") in ("1", "true") or request.path.endswith(LONG_RUNNING_SUFFIXES)


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure leaves as a Status with upstream's code; an unexpected exception is a 500 that is
    logged with its traceback (a bug to fix, never an answer to bad input)."""
    try:
        return await handler(request)
    except APIError as exc:
        return _status_response(exc)
    except web.HTTPNotFound:
        return _status_response(status.route_not_found())
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
        return _status_response(status.internal_error(str(exc)))
    except ConnectionResetError:  # aiohttp's ClientConnectionResetError too: the client went away mid-answer
        # A routine end, not an error: re-raised, aiohttp would log "Error handling request" with a traceback.
        # The answer returned here is never sent (aiohttp gives up quietly on the dead connection).
        log.debug("%s %s: the client disconnected", request.method, request.path)
        return web.Response(status=499)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return _status_response(status.internal_error(type(exc).__name__))


async def _cancel(task: asyncio.Task[None] | None) -> None:
    """Cancel a background task of the server and wait until it has ended."""
    if task is None:
        return
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass


class APIServer:
    """One API server; `await start()`, then `url`; `await stop()` to end it."""

    def __init__(self, config: ServerConfig, *, storage: Storage | None = None) -> None:
        self.config = config
        privatefiles.ensure_private_dir(config.data_dir)  # every start: a loosened mode is narrowed back
        self.admin_token = _read_or_create_secret(os.path.join(config.data_dir, "admin-token"))
        # what DIR/node-token holds: the bare password until the CA exists, then the K10 form (start())
        self.node_token = _read_or_create_secret(self._node_token_path)
        self._node_password = jointoken.parse(self.node_token).password
        self.authenticator = authn.TokenAuthenticator({self.admin_token: authn.ADMIN,
                                                        self._node_password: authn.NODE})
        self.service_account_key_file = (config.service_account_key_file
                                         or os.path.join(config.data_dir, "tls", "service.key"))
        self.token_issuer = TokenIssuer(satoken.load_or_create_key(self.service_account_key_file),
                                        issuer=config.service_account_issuer,
                                        audiences=config.api_audiences or (config.service_account_issuer,))
        self.service_accounts: sa_authn.ServiceAccountAuthenticator | None = None  # needs the registry: start()
        self._given_storage = storage
        self._storage: Storage | None = None  # the store, timed into etcd_request_duration_seconds
        self._owns_storage = storage is None
        self.metrics = APIServerMetrics()
        self.metrics.count_storage_objects(self._count_stored)
        self._inflight_by_kind = {"readOnly": 0, "mutating": 0}
        self._bootstrapped = False
        self._stopping = False
        self._inflight = 0
        self._runner: web.AppRunner | None = None
        self._cache: WatchCache | None = None
        self.registry: Registry | None = None
        self.port = config.port
        self.certs: certs.ServingCerts | None = None
        self.advertise_address: str | None = None
        self._endpoints_task: asyncio.Task[None] | None = None
        self._crds: CRDController | None = None
        self._crd_task: asyncio.Task[None] | None = None
        self.aggregator: Aggregator | None = None  # proxying to aggregated APIs (aggregator/), with TLS only
        self._aggregator_task: asyncio.Task[None] | None = None
        self.authorizer: Chain | None = None  # system:masters, the node authorizers, RBAC (authorization/)
        self._authorizer_views_task: asyncio.Task[None] | None = None
        self._audit: audit_filter.AuditFilter | None = None
        self._audit_backend: LogBackend | None = None
        # `kubectl get cs`: the store's check is this server's own; the composition root adds the others
        self.components = componentstatus.ComponentStatuses()
        self.components.register("etcd-0", self._storage_health)
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
            privatefiles.write_private(self._node_token_path, token + "\n")
            self.node_token = token
        self.authenticator.replace({self.admin_token: authn.ADMIN, self._node_password: authn.NODE,
                                    token: authn.NODE})

    async def start(self) -> None:
        self._stopping = False
        if self.config.audit_policy_file and self.config.audit_log and self._audit is None:
            rules = await asyncio.to_thread(audit_policy.load, self.config.audit_policy_file)
            self._audit_backend = LogBackend(self.config.audit_log)
            self._audit_backend.start()
            self._audit = audit_filter.AuditFilter(rules, self._audit_backend, is_long_running=is_long_running)
        encryption = None
        if self.config.encryption_provider_config:  # read first: a bad file stops the start before the store opens
            # imported here: the ciphers' libraries load only on a server that encrypts
            from control.apiserver.storage import encryption as encryption_config
            from control.apiserver.storage.encrypted import EncryptedStorage

            groups = {resource.plural: resource.group for resource in resources_table.RESOURCES}
            encryption = await asyncio.to_thread(encryption_config.load, self.config.encryption_provider_config,
                                                 groups)
        if self._given_storage is None:
            self._given_storage = await asyncio.to_thread(open_storage, self.config.datastore,
                                                          data_dir=self.config.data_dir)
        stored: Storage = self._given_storage
        if encryption is not None:
            stored = EncryptedStorage(stored, encryption)
        self._storage = MeteredStorage(stored, self.metrics.storage_latency)
        self.registry = Registry(self._storage, service_cidr=self.config.service_cidr,
                                 node_port_range=self.config.node_port_range,
                                 endpoint_routing=self.config.enable_aggregator_routing,
                                 admission_config=admission_config.load(self.config.admission_config_file),
                                 disabled_admission=self.config.disable_admission_plugins)
        await asyncio.to_thread(bootstrap, self.registry, api_port=self.config.port)
        await asyncio.to_thread(reconcile_policy, self.registry)
        self.service_accounts = sa_authn.ServiceAccountAuthenticator(
            [self.token_issuer.key.public_key()], issuers=[self.token_issuer.issuer],
            audiences=self.token_issuer.audiences, get=_stored_getter(self.registry))
        node_graph, policy = NodeGraph(), PolicyCache(self._storage)
        self.authorizer = default_chain(self._storage, node_graph, policy)
        self._bootstrapped = True
        self._cache = WatchCache(self._storage)
        await self._cache.start()
        views = (node_graph, policy)
        loaded = await asyncio.to_thread(follower.load, views, self._storage)  # before serving
        self._authorizer_views_task = asyncio.create_task(follower.follow(views, self._storage, self._cache, loaded))
        self._crds = CRDController(self.registry, schemas=self.openapi)
        crd_events = self._cache.subscribe(CRD_PREFIX, self._cache.revision)  # first: no change is missed
        await asyncio.to_thread(self._crds.sync_all)  # custom resources are served before the server listens
        self._crd_task = asyncio.create_task(self._follow_crds(self._crds, self._cache, crd_events))
        ssl_context = None
        if self.config.tls:
            self.certs = await asyncio.to_thread(certs.ensure_serving_certs, self.config.data_dir,
                                                 bind_address=self.config.bind_address,
                                                 service_ip=kubernetes_service_ip(self.config.service_cidr),
                                                 extra_ips=tuple(filter(None, [self.config.advertise_address])))
            await asyncio.to_thread(certs.ensure_kubelet_client_cert, self.certs)
            ssl_context = x509.client_context(self.certs.ssl_context(), self.certs.ca_path)
            await asyncio.to_thread(self._write_join_token, self.certs.ca_pem())
            front_proxy = await asyncio.to_thread(ensure_front_proxy_certs, self.config.data_dir)
            await asyncio.to_thread(self._publish_authentication_config, front_proxy)
            self.aggregator = Aggregator(self.registry, front_proxy,
                                         endpoint_routing=self.config.enable_aggregator_routing)
            self._aggregator_task = asyncio.create_task(self.aggregator.run())
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
        privatefiles.write_private(self.kubeconfig_path, yaml.safe_dump(kubeconfig(
            self.url, self.admin_token, ca_pem=self.certs.ca_pem() if self.certs else None), sort_keys=False))
        self.advertise_address = await asyncio.to_thread(
            master_endpoints.advertise_address, advertise=self.config.advertise_address,
            bind_address=self.config.bind_address)
        await asyncio.to_thread(self._reconcile_endpoints)
        self._endpoints_task = asyncio.create_task(self._keep_endpoints())
        log.info("API server listening on %s (kubeconfig %s)", self.url, self.kubeconfig_path)

    def _publish_authentication_config(self, front_proxy: FrontProxyCerts) -> None:
        """kube-system/extension-apiserver-authentication: what aggregated API servers trust (the front
        proxy's CA and header names, the cluster CA), created or brought up to date."""
        assert self.registry is not None and self.certs is not None
        configmaps = by_path("", "v1", "configmaps")
        assert configmaps is not None
        wanted = authentication_config(front_proxy, self.certs.ca_pem().decode())
        current = self.registry.get(configmaps, "kube-system", wanted["metadata"]["name"])
        if current is None:
            self.registry.create(configmaps, "kube-system", wanted)
        elif current.get("data") != wanted["data"]:
            self.registry.update(configmaps, "kube-system", wanted["metadata"]["name"],
                                 {**current, "data": wanted["data"]})

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

    async def _follow_crds(self, controller: CRDController, cache: WatchCache, subscription: Subscription) -> None:
        """A CRD controller pass after every change under the CRDs' prefix (the watch cache wakes it), and
        one second later again while a pass asks for it (a deletion under way, a lost race). A
        subscription the cache closed (it fell behind) is replaced, then a full pass catches up."""
        again = False
        while True:
            try:
                while not subscription.closed:
                    event = await subscription.next(timeout=1.0 if again else 30.0)
                    if event is None and not again and not subscription.closed:
                        continue
                    try:
                        again = await asyncio.to_thread(controller.sync_all)
                    except Exception:
                        log.exception("the CRD controller's pass failed")
                        again = True
            finally:
                cache.unsubscribe(subscription)
            await asyncio.sleep(1.0)
            subscription = cache.subscribe(CRD_PREFIX, cache.revision)
            again = True

    async def stop(self) -> None:
        self._stopping = True  # readyz's shutdown check fails from here on
        await _cancel(self._aggregator_task)
        self._aggregator_task = None
        if self.aggregator is not None:
            await self.aggregator.close()
            self.aggregator = None
        await _cancel(self._authorizer_views_task)
        self._authorizer_views_task = None
        await _cancel(self._crd_task)
        self._crd_task = None
        if self._crds is not None:
            self._crds.stop()
            self._crds = None
        await _cancel(self._endpoints_task)
        self._endpoints_task = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._cache is not None:
            await self._cache.stop()
            self._cache = None
        if self._audit_backend is not None:
            await asyncio.to_thread(self._audit_backend.close)  # what was queued is written
            self._audit_backend, self._audit = None, None
        if self._given_storage is not None and self._owns_storage:
            await asyncio.to_thread(self._given_storage.close)
            self._given_storage = None
        self._storage = None

    # -- the handler chain --------------------------------------------------------------------------

    @web.middleware
    async def _authenticate(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in PUBLIC_PATHS or request.path.startswith(("/healthz/", "/livez/", "/readyz/")):
            return await handler(request)
        # upstream's union: the client certificate first, then the bearer token (static, then a service
        # account's JWT, which is checked against the store off the event loop)
        transport = request.transport
        user = x509.authenticate_transport(transport.get_extra_info("ssl_object") if transport else None,
                                           now=time.time())
        header = request.headers.get("Authorization", "")
        if user is None:
            user = self.authenticator.authenticate_header(header)
        if user is None and self.service_accounts is not None and header[:7].lower() == "bearer ":
            user = await asyncio.to_thread(self.service_accounts.authenticate, header[7:])
        if user is not None:
            authn.current_user.set(user)
            request[authz_filter.USER_KEY] = user
            return await handler(request)
        raise APIError(401, "Unauthorized", "Unauthorized")

    @web.middleware
    async def _limit_inflight(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if is_long_running(request):
            return await handler(request)  # long-running requests are not counted, as upstream
        if self._inflight >= self.config.max_inflight:
            raise status.too_many_requests(1)
        kind = "mutating" if is_mutating(request.method) else "readOnly"
        self._inflight += 1
        self._inflight_by_kind[kind] += 1
        self.metrics.inflight.labels(kind).set(self._inflight_by_kind[kind])
        try:
            return await handler(request)
        finally:
            self._inflight -= 1
            self._inflight_by_kind[kind] -= 1
            self.metrics.inflight.labels(kind).set(self._inflight_by_kind[kind])

    @web.middleware
    async def _instrument(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """apiserver_request_total and apiserver_request_duration_seconds (metrics.py), around everything
        else, so the code counted is the one the client got."""
        start = time.perf_counter()
        code = 500
        try:
            response = await handler(request)
            code = response.status
            return response
        except web.HTTPException as exc:
            code = exc.status
            raise
        finally:
            route = request.match_info.route.resource
            if route is not None:  # a path nothing serves is not a request of any kind
                self.metrics.observe_request(method=request.method, path=request.path, query=request.query,
                                             content_type=request.headers.get("Content-Type", ""), code=code,
                                             seconds=time.perf_counter() - start, route=route.canonical)

    def _app(self) -> web.Application:
        assert self.registry is not None and self._cache is not None and self.authorizer is not None
        authorization = authz_filter.AuthorizationFilter(self.authorizer)
        aggregation = [self.aggregator.middleware] if self.aggregator is not None else []
        # as upstream's chain: authentication, audit, (impersonation and) authorization, then the in-flight limit
        audit = [self._audit.middleware] if self._audit is not None else []
        app = web.Application(middlewares=[self._instrument, _errors, self._authenticate, *audit,
                                           authorization.middleware, self._limit_inflight, warning.middleware,
                                           *aggregation,
                                           fieldvalidation.middleware(self.openapi)],
                              client_max_size=4 * 1024 * 1024)
        if self._audit is not None:
            self._audit.install(app)
        else:
            audit_filter.install_audit_id(app)
        OpenStreams(is_long_running).install(app)  # the runner's cleanup ends them without its shutdown wait
        kubelet = KubeletClient(ca_file=self.certs.ca_path if self.certs else None,
                                cert_file=self.certs.kubelet_client_cert_path if self.certs else None,
                                key_file=self.certs.kubelet_client_key_path if self.certs else None)
        served = self.registry.resources  # what this server serves, custom resources included
        resources = ResourceHandlers(self.registry, self._cache, kubelet=kubelet,
                                     bookmark_seconds=self.config.bookmark_seconds,
                                     watch_events=self.metrics.watch_events)
        version = discovery.version_info(platform=f"{sys.platform}/{platform.machine()}",
                                         python_version=platform.python_version())

        async def get_version(request: web.Request) -> web.Response:
            return json_response(version)

        async def get_api(request: web.Request) -> web.Response:
            if (aggregated := aggregated_discovery.negotiate(request.headers.get("Accept"))) is not None:
                return _aggregated(aggregated_discovery.discovery_list(served, core=True,
                                                                       version=aggregated), aggregated)
            return json_response(discovery.api_versions(request.host))

        async def get_apis(request: web.Request) -> web.Response:
            local = {r.group for r in served.served()}
            if (aggregated := aggregated_discovery.negotiate(request.headers.get("Accept"))) is not None:
                document = aggregated_discovery.discovery_list(served, core=False, version=aggregated)
                if self.aggregator is not None:
                    document["items"] += self.aggregator.aggregated_groups(local)
                return _aggregated(document, aggregated)
            groups = discovery.api_group_list(served)
            if self.aggregator is not None:
                groups["groups"] += group_list_entries(self.aggregator.available_backends(), local)
            return json_response(groups)

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
            ("/healthz", self._health), ("/livez", self._health), ("/readyz", self._health),
            ("/healthz/{check:.+}", self._health_check), ("/livez/{check:.+}", self._health_check),
            ("/readyz/{check:.+}", self._health_check), ("/metrics", self._metrics),
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
        app.router.add_post(f"/apis/{authn.GROUP_VERSION}/selfsubjectreviews", self._self_subject_review)
        for plural in ("subjectaccessreviews", "selfsubjectaccessreviews", "selfsubjectrulesreviews"):
            app.router.add_post(f"/apis/{reviews.AUTHORIZATION}/{plural}", self._access_review)
        app.router.add_post(f"/apis/{reviews.AUTHORIZATION}/namespaces/{{namespace}}/localsubjectaccessreviews",
                            self._access_review)
        app.router.add_post(kubeletcerts.PATH, self._serving_kubelet_cert)
        app.router.add_post("/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", self._token_request)
        for path, document in ((sa_authn.DISCOVERY_PATH, self._oidc_configuration), (sa_authn.JWKS_PATH, self._jwks)):
            app.router.add_get(path, document)
            app.router.add_get(path + "/", document)
        for path, metrics_handler in MetricsAPI(self.registry, kubelet).routes():
            app.router.add_get(path, metrics_handler)
        app.router.add_get("/api/v1/componentstatuses", self._component_statuses)
        app.router.add_get("/api/v1/componentstatuses/{name}", self._component_statuses)
        app.router.add_route("*", "/api/v1/{tail:.+}", resources.handle)
        app.router.add_route("*", "/apis/{group}/{version}/{tail:.+}", resources.handle)
        return app

    async def _resource_list(self, group: str, version: str) -> web.Response:
        assert self.registry is not None
        body = discovery.api_resource_list(self.registry.resources, group, version)
        if body is None:
            raise web.HTTPNotFound()
        return json_response(body)

    async def _group(self, request: web.Request) -> web.Response:
        assert self.registry is not None
        body = discovery.api_group(self.registry.resources, request.match_info["group"])
        if body is None:
            raise web.HTTPNotFound()
        return json_response(body)

    def _health_checks(self, kind: str) -> health.HealthChecks:
        """The checks of /healthz, /livez or /readyz, in upstream's order and with upstream's names. readyz
        adds what only decides whether to send traffic here: the watch cache synced, not shutting down."""
        async def ok() -> str | None:
            return None

        async def etcd() -> str | None:
            try:
                return await asyncio.wait_for(asyncio.to_thread(self._storage_health), timeout=HEALTH_TIMEOUT)
            except TimeoutError:
                return f"the store did not answer within {HEALTH_TIMEOUT:g}s"

        async def informer_sync() -> str | None:
            return None if self._cache is not None else "the watch cache is not running"

        async def bootstrapped() -> str | None:
            return None if self._bootstrapped else "the system namespaces and Services are not in place yet"

        async def shutdown() -> str | None:
            return "the server is shutting down" if self._stopping else None

        checks: list[tuple[str, health.Check]] = [("ping", ok), ("log", ok), ("etcd", etcd)]
        if kind == "readyz":
            checks += [("etcd-readiness", etcd), ("informer-sync", informer_sync)]
        checks.append(("poststarthook/bootstrap-controller", bootstrapped))
        if kind == "readyz":
            checks.append(("shutdown", shutdown))
        return health.HealthChecks(kind, checks)

    @staticmethod
    def _text(answer: health.Answer) -> web.Response:
        return web.Response(status=answer.code, text=answer.text, charset="utf-8",
                            headers={"X-Content-Type-Options": "nosniff"})

    async def _health(self, request: web.Request) -> web.Response:
        """`/healthz`, `/livez`, `/readyz`, with `?verbose` and `?exclude=` (health.py)."""
        kind = request.path.strip("/").split("/")[0]
        answer = await self._health_checks(kind).run(verbose="verbose" in request.query,
                                                     exclude=request.query.getall("exclude", []))
        return self._text(answer)

    async def _health_check(self, request: web.Request) -> web.Response:
        """`/readyz/etcd`, `/livez/ping`, …: one check."""
        kind = request.path.strip("/").split("/")[0]
        answer = await self._health_checks(kind).run_one(request.match_info["check"])
        if answer is None:
            raise web.HTTPNotFound()
        return self._text(answer)

    async def _metrics(self, request: web.Request) -> web.Response:
        """The Prometheus registry (metrics.py), collected off the event loop (storage counts are reads)."""
        data = await asyncio.to_thread(generate_latest, self.metrics.registry)
        return web.Response(body=data, headers={"Content-Type": CONTENT_TYPE_LATEST})

    def _count_stored(self, prefix: str) -> int:
        if self._storage is None:
            raise StorageError("storage is closed")
        return self._storage.count(prefix)

    def _storage_health(self) -> str | None:
        """The store answers a read of its revision (upstream: the etcd client's health check)."""
        if self._storage is None:
            return "storage is closed"
        try:
            self._storage.revision()
        except StorageError as exc:
            return str(exc)
        return None

    async def _component_statuses(self, request: web.Request) -> web.Response:
        """GET `componentstatuses` (a List or a Table) or `componentstatuses/{name}` (componentstatus.py)."""
        resource = resources_table.COMPONENT_STATUSES
        name = request.match_info.get("name")
        items = [await self.components.get(name)] if name else await self.components.list()
        table = tables.parse_accept_table(request.headers.get("Accept"))
        if table is not None:
            body = tables.table_for(resource, items, now=datetime.now(UTC), list_resource_version="",
                                    include_object=tables.parse_include_object(request.query.get("includeObject")),
                                    table_version=table.version)
        elif name:
            body = items[0]
        else:
            body = {"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": items}
        response = json_response(body)
        response.headers["Warning"] = componentstatus.WARNING
        return response

    async def _token_review(self, request: web.Request) -> web.Response:
        body = decode_object(await request.read(), request.headers.get("Content-Type", ""))
        either = sa_authn.FirstOf(self.authenticator, self.service_accounts)
        return json_response(await asyncio.to_thread(authn.token_review, body, either), 201)

    async def _token_request(self, request: web.Request) -> web.Response:
        """serviceaccounts/token (registry/tokenrequest.py)."""
        assert self.registry is not None
        body = decode_object(await request.read(), request.headers.get("Content-Type", ""))
        answer = await asyncio.to_thread(create_token, self.registry, self.token_issuer,
                                         request.match_info["namespace"], request.match_info["name"], body)
        return json_response(answer, 201)

    async def _oidc_configuration(self, request: web.Request) -> web.Response:
        """The issuer's OpenID Connect discovery document (upstream's shape and cache header)."""
        document = sa_authn.openid_configuration(self.token_issuer.issuer, f"{self.url}{sa_authn.JWKS_PATH}")
        return web.json_response(document, headers={"Cache-Control": sa_authn.DISCOVERY_CACHE_CONTROL})

    async def _jwks(self, request: web.Request) -> web.Response:
        body = satoken.jwks([self.token_issuer.key.public_key()])
        return web.json_response(body, content_type="application/jwk-set+json",
                                 headers={"Cache-Control": sa_authn.DISCOVERY_CACHE_CONTROL})

    async def _access_review(self, request: web.Request) -> web.Response:
        """The four authorization.k8s.io reviews (authorization/reviews.py), answered off the event loop:
        RBAC reads the store."""
        assert self.authorizer is not None
        body = decode_object(await request.read(), request.headers.get("Content-Type", ""))
        chain, user = self.authorizer, request[authz_filter.USER_KEY]
        plural = request.path.rstrip("/").rsplit("/", 1)[1]
        if plural == "localsubjectaccessreviews":
            work = functools.partial(reviews.local_subject_access_review, body, request.match_info["namespace"], chain)
        elif plural == "subjectaccessreviews":
            work = functools.partial(reviews.subject_access_review, body, chain)
        elif plural == "selfsubjectaccessreviews":
            work = functools.partial(reviews.self_subject_access_review, body, user, chain)
        else:
            work = functools.partial(reviews.self_subject_rules_review, body, user, chain)
        return json_response(await asyncio.to_thread(work), 201)

    async def _self_subject_review(self, request: web.Request) -> web.Response:
        body = decode_object(await request.read(), request.headers.get("Content-Type", ""))
        return json_response(reviews.self_subject_review(body, request[authz_filter.USER_KEY], now=datetime.now(UTC)),
                             201)

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
