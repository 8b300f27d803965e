"""Calling a webhook: where its clientConfig points, and the HTTPS POST there.

Upstream: k8s.io/apiserver/pkg/util/webhook (client.go, `ClientManager.HookClient`, service resolution
`https://<name>.<namespace>.svc:<port><path>`, the server name the certificate must carry), and
k8s.io/apiserver/pkg/util/proxy/proxy.go (`ResolveCluster`: the Service's ClusterIP, an ExternalName's
name; `ResolveEndpoint`: one ready address of the Service's endpoints, chosen at random, at the target port
the service port names), which kube-apiserver picks with `--enable-aggregator-routing`.

The target is decided first (`resolve`, over what a `Reader` returns), then `post` sends the review with
urllib3 — one pool per (address, server name, CA), certificates checked against `caBundle` (the system
roots without one) and the server name `<name>.<namespace>.svc` (a `url`'s host). The admission chain runs
in the registry's worker thread (the aiohttp handlers call the registry through `asyncio.to_thread`), so a
slow webhook holds that thread, never the event loop.
"""

from __future__ import annotations

import base64
import binascii
import random
import ssl
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import urllib3

from control.apiserver.resources import Resource, by_path

SERVICES = by_path("", "v1", "services")
ENDPOINTS = by_path("", "v1", "endpoints")
_MAX_POOLS = 64


class Reader(Protocol):
    def get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any] | None: ...


class ResolveError(Exception):
    """The clientConfig names nothing reachable (no such Service, no ready endpoint, ...)."""


@dataclass(frozen=True, slots=True)
class Target:
    """Where to send: connect to `host:port`, check the certificate for `server_name`, POST `path`; `url` is
    how errors name it (upstream's `Post "https://svc.ns.svc:443/path?timeout=10s"`)."""

    host: str
    port: int
    server_name: str
    path: str
    url: str
    ca_bundle: bytes


def _ca_bundle(config: Mapping[str, Any]) -> bytes:
    value = config.get("caBundle")
    if not value:
        return b""
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError, TypeError):
        raise ResolveError("caBundle is not valid base64") from None


def resolve(config: Mapping[str, Any], reader: Reader, *, endpoint_routing: bool,
            timeout: float | None = None) -> Target:
    """The Target of a clientConfig: its `url`, or its `service` through the ClusterIP or (endpoint routing)
    one ready endpoint; a `timeout` is added to the path as upstream's client does (`?timeout=10s`)."""
    ca = _ca_bundle(config)
    query = f"?timeout={int(timeout)}s" if timeout is not None else ""
    if config.get("url"):
        parts = urlsplit(str(config["url"]))
        host = parts.hostname or ""
        port = parts.port or 443
        path = (parts.path or "/") + query
        return Target(host, port, host, path, f"{config['url']}{query}", ca)
    service = config.get("service") or {}
    namespace, name = str(service.get("namespace", "")), str(service.get("name", ""))
    port = int(service.get("port") or 443)
    path = str(service.get("path") or "/") + query
    server_name = f"{name}.{namespace}.svc"
    url = f"https://{server_name}:{port}{path}"
    host, target_port = _service_address(reader, namespace, name, port, endpoint_routing=endpoint_routing)
    return Target(host, target_port, server_name, path, url, ca)


def _service_address(reader: Reader, namespace: str, name: str, port: int, *,
                     endpoint_routing: bool) -> tuple[str, int]:
    assert SERVICES is not None and ENDPOINTS is not None
    svc = reader.get(SERVICES, namespace, name)
    if svc is None:
        raise ResolveError(f'service "{name}" not found')
    spec = svc.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return str(spec.get("externalName", "")), port
    service_port = next((p for p in spec.get("ports") or [] if p.get("port") == port), None)
    if service_port is None:
        raise ResolveError(f'no service port {port} found for service "{name}"')
    if not endpoint_routing:
        cluster_ip = spec.get("clusterIP") or ""
        if not cluster_ip or cluster_ip == "None":
            raise ResolveError(f"cannot route to service with ClusterIP {cluster_ip or 'None'}")
        return cluster_ip, port
    endpoints = reader.get(ENDPOINTS, namespace, name)
    port_name = service_port.get("name") or ""
    choices: list[tuple[str, int]] = []
    for subset in (endpoints or {}).get("subsets") or []:
        ports = [p for p in subset.get("ports") or [] if (p.get("name") or "") == port_name]
        if ports:
            choices.extend((str(a.get("ip")), int(ports[0]["port"])) for a in subset.get("addresses") or [])
    if not choices:
        raise ResolveError(f'no endpoints available for service "{name}"')
    return random.choice(choices)


class Poster:
    """HTTPS POSTs of AdmissionReviews, a connection pool per (address, server name, CA)."""

    def __init__(self) -> None:
        self._pools: dict[tuple[str, int, str, bytes], urllib3.HTTPSConnectionPool] = {}
        self._lock = threading.Lock()

    def _pool(self, target: Target) -> urllib3.HTTPSConnectionPool:
        key = (target.host, target.port, target.server_name, target.ca_bundle)
        with self._lock:
            pool = self._pools.get(key)
            if pool is None:
                if len(self._pools) >= _MAX_POOLS:
                    for old in self._pools.values():
                        old.close()
                    self._pools.clear()
                context = ssl.create_default_context(cadata=target.ca_bundle.decode("utf-8", "replace")
                                                     if target.ca_bundle else None)
                pool = self._pools[key] = urllib3.HTTPSConnectionPool(
                    target.host, target.port, ssl_context=context, server_hostname=target.server_name,
                    assert_hostname=target.server_name, maxsize=4, block=False)
            return pool

    def post(self, target: Target, body: bytes, *, timeout: float) -> bytes:
        """The answer's body; OSError-like failures as `str` reasons in a RuntimeError (upstream's words:
        `Post "<url>": <why>`)."""
        try:
            pool = self._pool(target)
            response = pool.urlopen("POST", target.path, body=body, retries=False, redirect=False,
                                    timeout=urllib3.Timeout(total=timeout),
                                    headers={"Content-Type": "application/json", "Accept": "application/json",
                                             "Host": f"{target.server_name}:{target.port}"})
        except urllib3.exceptions.NewConnectionError as exc:  # a subclass of the timeout error, but refused
            raise RuntimeError(f'Post "{target.url}": {_reason(exc)}') from None
        except urllib3.exceptions.TimeoutError:
            raise RuntimeError(f'Post "{target.url}": context deadline exceeded') from None
        except (urllib3.exceptions.HTTPError, ssl.SSLError, OSError, ValueError) as exc:
            raise RuntimeError(f'Post "{target.url}": {_reason(exc)}') from None
        if not 200 <= response.status < 300:
            text = response.data[:256].decode("utf-8", "replace")
            raise RuntimeError(f"an error on the server ({text!r}) has prevented the request from succeeding "
                               f"(post {target.url}; HTTP {response.status})")
        return bytes(response.data)

    def close(self) -> None:
        with self._lock:
            for pool in self._pools.values():
                pool.close()
            self._pools.clear()


def _reason(exc: Exception) -> str:
    """Upstream's words for the common failures (Go's net/http and crypto/tls), else Python's."""
    seen: list[BaseException] = [exc]
    while len(seen) < 6:
        inner = getattr(seen[-1], "reason", None) or (seen[-1].args[0] if seen[-1].args else None) \
            or seen[-1].__context__
        if not isinstance(inner, BaseException) or inner in seen:
            break
        seen.append(inner)
    for one in seen:
        if isinstance(one, ssl.SSLCertVerificationError):
            unknown = one.verify_code in (19, 20, 21)  # self-signed in chain, no local issuer, leaf unverifiable
            return "tls: failed to verify certificate: " + (
                "x509: certificate signed by unknown authority" if unknown else str(one.verify_message))
        if isinstance(one, ConnectionRefusedError) or "Connection refused" in str(one):
            return "connect: connection refused"
    return str(seen[-1])
