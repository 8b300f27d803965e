"""The API server's calls to kubelets (upstream: pkg/kubelet/client/kubelet_client.go — the
`KubeletClientConfig` with the apiserver-kubelet-client certificate and the CA that verifies the
kubelets' serving certificates — and `NodeConnectionInfoGetter`, which picks the node's address by
preferred type and the port from `status.daemonEndpoints.kubeletEndpoint.Port`).

Every call to a kubelet (pods/log today, exec and the rest later) goes through `KubeletClient.session`:
https to the node's InternalIP (then Hostname, ExternalIP, then any address; upstream's default
`--kubelet-preferred-address-types` puts Hostname first, but node names here rarely resolve), the
kubelet's certificate checked against the cluster CA and its subjectAltNames against the address
dialled, and the API server's client certificate presented. A server without TLS (no CA) has no client
certificate either: it still dials https, and kubelets answer 401 (they accept no anonymous caller).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from control.api.typed.core import NodeStatus

DEFAULT_PORT = 10250
# The largest WebSocket message a relay takes from either side, the client's or the kubelet's (upstream's
# x/net/websocket DefaultMaxPayloadBytes): a larger one closes the connection with 1009 Message Too Big.
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
PREFERRED_ADDRESS_TYPES = ("InternalIP", "Hostname", "ExternalIP")


@dataclass(frozen=True)
class NodeConnection:
    host: str
    port: int

    def url(self, path: str) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"https://{host}:{self.port}{path}"


def node_connection(node: Mapping[str, Any]) -> NodeConnection | None:
    """Where the node's kubelet listens, from its status; None when it reports no address."""
    node_status = node.get("status") or {}
    addresses = [a for a in node_status.get("addresses") or [] if isinstance(a, dict) and a.get("address")]
    host = next((a["address"] for kind in PREFERRED_ADDRESS_TYPES for a in addresses if a.get("type") == kind),
                addresses[0]["address"] if addresses else None)
    if not host:
        return None
    endpoint = NodeStatus(node_status).daemon_endpoints.get("kubeletEndpoint") or {}
    port = endpoint.get("Port")
    return NodeConnection(host=str(host), port=port if isinstance(port, int) and 0 < port < 65536 else DEFAULT_PORT)


def client_ssl_context(ca_file: str | None, cert_file: str | None, key_file: str | None) -> ssl.SSLContext:
    """Verify kubelets against the cluster CA (the system store if there is none), present our certificate."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca_file)
    if cert_file and key_file:
        context.load_cert_chain(cert_file, key_file)
    return context


class KubeletClient:
    """Opens sessions to kubelets; one SSL context, loaded once (call from the server's event loop)."""

    def __init__(self, *, ca_file: str | None, cert_file: str | None, key_file: str | None,
                 connect_timeout: float = 5.0) -> None:
        self._context = client_ssl_context(ca_file, cert_file, key_file)
        self._timeout = aiohttp.ClientTimeout(sock_connect=connect_timeout)

    def session(self) -> aiohttp.ClientSession:
        """A session for one proxied request (`async with`), every connection with our TLS settings."""
        return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=self._context), timeout=self._timeout)
