"""This node's endpoint of the `kube-system/kube-dns` Service: one EndpointSlice per node.

Upstream runs CoreDNS as pods behind the selector `k8s-app=kube-dns`; here the DNS server runs beside each
node's kubelet (clusterdns/app.py), so there is no pod to select. The API server's bootstrap makes
`kube-dns` without a selector and with `internalTrafficPolicy: Local`, and each node's DNS, once it listens,
writes its own slice `kube-dns-<node>`: its address and ports, `nodeName`, ready — so the kube-proxy
carries a pod's queries for the tenth service address to its own node's DNS server, and a stopped node's
server is never picked by another node's pods. One slice per node means no two writers share an object;
the slice is owned by the Node (ownerReference), so the garbage collector removes it with the Node, and
`stop()` deletes it when the server stops.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from control.api.typed.meta import TypedObject
from control.client.errors import ApiError, NotFound
from control.client.paths import resource_path

log = logging.getLogger(__name__)

NAMESPACE = "kube-system"
SERVICE = "kube-dns"
MANAGED_BY = "cluster-dns.slimkube.io"  # a label value: no "/"
SLICES = "discovery.k8s.io/v1"


class API(Protocol):
    def get(self, path: str) -> dict[str, Any]: ...

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]: ...

    def update(self, path: str, body: dict[str, Any]) -> dict[str, Any]: ...

    def delete(self, path: str) -> Any: ...


def slice_name(node_name: str) -> str:
    return f"{SERVICE}-{node_name}"[:253].rstrip("-.")


def node_slice(node: dict[str, Any], address: str, *, port: int, metrics_port: int | None) -> dict[str, Any]:
    """The slice of the DNS server of `node` (a Node object) listening on `address`."""
    meta = node.get("metadata") or {}
    name = meta.get("name", "")
    ports = [{"name": "dns", "port": port, "protocol": "UDP"}, {"name": "dns-tcp", "port": port, "protocol": "TCP"}]
    if metrics_port:
        ports.append({"name": "metrics", "port": metrics_port, "protocol": "TCP"})
    return {
        "apiVersion": SLICES, "kind": "EndpointSlice",
        "metadata": {"name": slice_name(name), "namespace": NAMESPACE,
                     "labels": {"kubernetes.io/service-name": SERVICE,
                                "endpointslice.kubernetes.io/managed-by": MANAGED_BY},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name,
                                          "uid": meta.get("uid", "")}]},
        "addressType": "IPv6" if ":" in address else "IPv4",
        "endpoints": [{"addresses": [address], "nodeName": name,
                       "conditions": {"ready": True, "serving": True, "terminating": False}}],
        "ports": ports,
    }


class Registration:
    def __init__(self, client: API, node_name: str) -> None:
        self.client = client
        self.node_name = node_name
        self._path = resource_path(SLICES, "endpointslices", namespace=NAMESPACE, name=slice_name(node_name))

    def register(self, address: str, *, port: int, metrics_port: int | None) -> None:
        """Create or bring up to date this node's slice (the Node must exist)."""
        node = self.client.get(resource_path("v1", "nodes", name=self.node_name))
        desired = node_slice(node, address, port=port, metrics_port=metrics_port)
        try:
            current = self.client.get(self._path)
        except NotFound:
            self.client.create(resource_path(SLICES, "endpointslices", namespace=NAMESPACE), desired)
            return
        if all(current.get(k) == desired.get(k) for k in ("addressType", "endpoints", "ports")) and \
                TypedObject(current).metadata.raw.get("ownerReferences") == desired["metadata"]["ownerReferences"]:
            return
        desired["metadata"]["resourceVersion"] = TypedObject(current).metadata.resource_version
        self.client.update(self._path, desired)

    def unregister(self) -> None:
        try:
            self.client.delete(self._path)
        except NotFound:
            pass
        except (ApiError, OSError) as exc:
            log.warning("could not remove the cluster DNS endpoint of node %s: %s", self.node_name, exc)
