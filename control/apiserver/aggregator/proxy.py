"""The aggregator: proxying to aggregated API servers and keeping their APIServices' availability.

Upstream: k8s.io/kube-aggregator/pkg/apiserver/handler_proxy.go (`proxyHandler`: the request forwarded with
the user as `X-Remote-User`, `X-Remote-Group` and `X-Remote-Extra-<key>` headers, its own credentials and
any impersonation headers removed, over TLS with the front proxy's client certificate, the backend's
certificate checked for `<service>.<namespace>.svc` against the APIService's `caBundle` unless
`insecureSkipTLSVerify`; 503 `service unavailable` while the APIService is not Available; errors
dialling 503 `Error trying to reach service: '<why>'`) and pkg/controllers/status/available_controller.go
(each service-backed APIService checked: Service, port, endpoints, then `GET /apis/<group>/<version>` within
5 s; `Available` True `Passed` or False with the reason, written to `/status` when it changes).

How it runs: `refresh` (every `PERIOD` seconds, on the server's event loop) lists the APIServices, checks the
service-backed ones (again after `RECHECK` seconds, at once when one is new or changed or was unavailable)
and keeps what the middleware reads: the backends and, for discovery, the APIResourceList each one answered
(merged into `/apis` and the aggregated discovery document by the server). A Service is reached at its
endpoints or its ClusterIP as admission webhooks are (`--enable-aggregator-routing`).

Departures: checks run every `PERIOD` seconds instead of on informer events; the discovery documents of an
aggregated API are those of its last successful check; OpenAPI documents of aggregated APIs are not merged.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import ssl
import time
from collections.abc import Mapping
from typing import Any

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from control.apiserver import status
from control.apiserver.admission.webhook import client
from control.apiserver.aggregator import backends as decide
from control.apiserver.aggregator.backends import Backend
from control.apiserver.aggregator.certs import EXTRA_PREFIX, GROUP_HEADER, USER_HEADER, FrontProxyCerts
from control.apiserver.authentication.tokens import AUTHENTICATED, UserInfo
from control.apiserver.authorization import filter as authz_filter
from control.apiserver.registry.store import Registry
from control.apiserver.resources import by_path

log = logging.getLogger(__name__)

API_SERVICES = by_path("apiregistration.k8s.io", "v1", "apiservices")
PERIOD = 2.0
RECHECK = 30.0
CHECK_TIMEOUT = 5.0
AGGREGATOR = UserInfo("system:kube-aggregator", groups=("system:masters",))
# never forwarded: the client's credentials, hop-by-hop headers, identity headers a client could forge
_DROPPED = {"authorization", "host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade",
            "te", "trailer", "content-length"}
_DROPPED_PREFIXES = ("impersonate-", "x-remote-")
_DROPPED_ANSWER = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}


class Aggregator:
    """The backends, their discovery documents, the HTTP client that reaches them."""

    def __init__(self, registry: Registry, certs: FrontProxyCerts, *, endpoint_routing: bool) -> None:
        self._registry = registry
        self._certs = certs
        self._endpoint_routing = endpoint_routing
        self.backends: dict[tuple[str, str], Backend] = {}
        self.available: dict[str, bool] = {}  # APIService name → Available
        self.discovery: dict[tuple[str, str], dict[str, Any]] = {}  # (group, version) → APIResourceList
        self._checked: dict[str, tuple[Backend, float]] = {}
        self._contexts: dict[tuple[str, bool], ssl.SSLContext] = {}
        self._session: aiohttp.ClientSession | None = None

    # -- the HTTP client -----------------------------------------------------------------------------

    def _ssl(self, backend: Backend) -> ssl.SSLContext:
        key = (backend.ca_bundle, backend.insecure)
        context = self._contexts.get(key)
        if context is None:
            if backend.insecure:
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            else:
                pem = None
                if backend.ca_bundle:
                    try:
                        pem = base64.b64decode(backend.ca_bundle, validate=True).decode("utf-8", "replace")
                    except (binascii.Error, ValueError):
                        pem = None
                context = ssl.create_default_context(cadata=pem)
            context.load_cert_chain(self._certs.cert_path, self._certs.key_path)
            self._contexts[key] = context
        return context

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(auto_decompress=False)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _target(self, backend: Backend, path: str) -> client.Target:
        config = {"service": {"namespace": backend.namespace, "name": backend.service, "port": backend.port,
                              "path": path}}
        return await asyncio.to_thread(client.resolve, config, self._registry, endpoint_routing=self._endpoint_routing)

    # -- proxying ------------------------------------------------------------------------------------

    def backend_for(self, path: str) -> Backend | None:
        parts = path.split("/")
        if len(parts) < 4 or parts[1] != "apis":
            return None
        return self.backends.get((parts[2], parts[3]))

    def remote_group(self, path: str) -> list[Backend]:
        """The backends of `/apis/<group>` when that group is served only remotely."""
        parts = path.rstrip("/").split("/")
        if len(parts) != 3 or parts[1] != "apis" or any(r.group == parts[2] for r in self._registry.resources.served()):
            return []
        return [b for b in self.backends.values() if b.group == parts[2] and self.available.get(b.name)]

    @web.middleware
    async def middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Requests for a remote group-version go to its backend; everything else to the local handlers."""
        backend = self.backend_for(request.path)
        if backend is None:
            members = self.remote_group(request.path) if request.path.startswith("/apis/") else []
            if members:
                return web.json_response(decide.api_group(members[0].group, members) |
                                         {"kind": "APIGroup", "apiVersion": "v1"})
            response: web.StreamResponse = await handler(request)
            return response
        if not self.available.get(backend.name):
            raise status.service_unavailable("service unavailable")
        return await self._proxy(request, backend)

    async def _proxy(self, request: web.Request, backend: Backend) -> web.StreamResponse:
        user = request.get(authz_filter.USER_KEY)
        try:
            target = await self._target(backend, request.path_qs)
        except client.ResolveError as exc:
            raise status.service_unavailable(f"Error trying to reach service: '{exc}'") from None
        headers = CIMultiDict((k, v) for k, v in request.headers.items()
                              if k.lower() not in _DROPPED and not k.lower().startswith(_DROPPED_PREFIXES))
        headers.update(identity_headers(user))
        body = await request.read() if request.can_read_body else None
        url = f"https://{_host(target.host)}:{target.port}{target.path}"
        try:
            upstream = await self._client().request(
                request.method, url, headers=headers, data=body, ssl=self._ssl(backend),
                server_hostname=target.server_name, allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=10))
        except (aiohttp.ClientError, OSError, ssl.SSLError) as exc:
            raise status.service_unavailable(f"Error trying to reach service: '{exc}'") from None
        try:
            response = web.StreamResponse(status=upstream.status)
            for key, value in upstream.headers.items():
                if key.lower() not in _DROPPED_ANSWER:
                    response.headers.add(key, value)
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response
        finally:
            upstream.release()

    # -- availability --------------------------------------------------------------------------------

    async def run(self) -> None:
        """The availability loop, until cancelled."""
        while True:
            try:
                await self.refresh()
            except Exception:
                log.exception("the APIService availability check failed")
            await asyncio.sleep(PERIOD)

    async def refresh(self) -> None:
        assert API_SERVICES is not None
        services = await asyncio.to_thread(self._registry.list_all, API_SERVICES, "")
        found: dict[tuple[str, str], Backend] = {}
        now = time.monotonic()
        for api_service in services:
            backend = decide.backend_of(api_service)
            if backend is None:
                continue
            found[(backend.group, backend.version)] = backend
            last = self._checked.get(backend.name)
            if last is not None and last[0] == backend and self.available.get(backend.name) and now - last[1] < RECHECK:
                continue
            available = await self._check(api_service, backend)
            self._checked[backend.name] = (backend, now)
            self.available[backend.name] = available
        self.backends = found
        names = {b.name for b in found.values()}
        for name in [n for n in self.available if n not in names]:
            self.available.pop(name, None)
            self._checked.pop(name, None)
        for key in [k for k in self.discovery if k not in found]:
            self.discovery.pop(key, None)

    async def _check(self, api_service: Mapping[str, Any], backend: Backend) -> bool:
        """Check one backend, write its condition when it changed; whether it is Available."""
        services, endpoints = by_path("", "v1", "services"), by_path("", "v1", "endpoints")
        assert services is not None and endpoints is not None
        service = await asyncio.to_thread(self._registry.get, services, backend.namespace, backend.service)
        found_endpoints = await asyncio.to_thread(self._registry.get, endpoints, backend.namespace, backend.service)
        condition = decide.service_condition(backend, service, found_endpoints, endpoint_routing=self._endpoint_routing)
        if condition is None:
            condition = await self._discovery_check(backend)
        await asyncio.to_thread(self._write_condition, backend.name, condition)
        return condition["status"] == "True"

    async def _discovery_check(self, backend: Backend) -> dict[str, str]:
        path = f"/apis/{backend.group}/{backend.version}"
        try:
            target = await self._target(backend, path)
        except client.ResolveError as exc:
            return decide.condition("False", "FailedDiscoveryCheck", str(exc))
        url = f"https://{_host(target.host)}:{target.port}{path}"
        shown = f"https://{target.server_name}:{backend.port}{path}"
        try:
            async with self._client().get(url, ssl=self._ssl(backend), server_hostname=target.server_name,
                                          headers=identity_headers(AGGREGATOR),
                                          timeout=aiohttp.ClientTimeout(total=CHECK_TIMEOUT)) as answer:
                body = await answer.read()
                if not 200 <= answer.status < 300:
                    return decide.condition("False", "FailedDiscoveryCheck",
                                            f"failing or missing response from {shown}: bad status from {shown}: "
                                            f"{answer.status}")
        except TimeoutError:
            return decide.condition("False", "FailedDiscoveryCheck", f"failing or missing response from {shown}: "
                                    "context deadline exceeded")
        except (aiohttp.ClientError, OSError, ssl.SSLError) as exc:
            return decide.condition("False", "FailedDiscoveryCheck", f"failing or missing response from {shown}: {exc}")
        try:
            document = json.loads(body)
            if isinstance(document, dict):
                self.discovery[(backend.group, backend.version)] = document
        except ValueError:
            pass  # available all the same: upstream checks only the status code
        return decide.condition("True", "Passed", "all checks passed")

    def _write_condition(self, name: str, condition: dict[str, str]) -> None:
        assert API_SERVICES is not None
        current = self._registry.get(API_SERVICES, "", name)
        if current is None:
            return
        conditions = (current.get("status") or {}).get("conditions") or []
        old = next((c for c in conditions if c.get("type") == "Available"), None)
        if old is not None and all(old.get(k) == v for k, v in condition.items()):
            return
        stamped = {**condition, "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        if old is not None and old.get("status") == condition["status"]:
            stamped["lastTransitionTime"] = old.get("lastTransitionTime", stamped["lastTransitionTime"])
        current["status"] = {**(current.get("status") or {}),
                             "conditions": [c for c in conditions if c.get("type") != "Available"] + [stamped]}
        try:
            self._registry.update(API_SERVICES, "", name, current, subresource="status")
        except status.APIError as exc:
            log.info("APIService %s: status not written (%s); next pass", name, exc.message)

    # -- discovery -----------------------------------------------------------------------------------

    def available_backends(self) -> list[Backend]:
        return [b for b in self.backends.values() if self.available.get(b.name)]

    def aggregated_groups(self, local_groups: set[str]) -> list[dict[str, Any]]:
        lists: dict[str, dict[str, dict[str, Any]]] = {}
        for backend in self.available_backends():
            document = self.discovery.get((backend.group, backend.version))
            if document is not None and backend.group not in local_groups:
                lists.setdefault(backend.group, {})[backend.version] = document
        return [decide.aggregated_group(group, versions) for group, versions in lists.items()]


def identity_headers(user: UserInfo | None) -> CIMultiDict[str]:
    """X-Remote-User, one X-Remote-Group per group (system:authenticated included), X-Remote-Extra-<key>."""
    headers: CIMultiDict[str] = CIMultiDict()
    if user is None:
        return headers
    headers[USER_HEADER] = user.username
    for group in [*user.groups, *(() if AUTHENTICATED in user.groups else (AUTHENTICATED,))]:
        headers.add(GROUP_HEADER, group)
    for key, values in user.extra:
        for value in values:
            headers.add(EXTRA_PREFIX + key, value)
    return headers


def _host(address: str) -> str:
    return f"[{address}]" if ":" in address else address
