"""The node IPAM controller: every Node gets a pod CIDR from the cluster CIDR (`spec.podCIDR` and
`spec.podCIDRs`), and a deleted Node's CIDR goes back to the pool.

Upstream: pkg/controller/nodeipam/node_ipam_controller.go with the range allocator,
pkg/controller/nodeipam/ipam/range_allocator.go: one cidrset (cidrset.py) per cluster CIDR; the service
CIDR taken out of it when the two overlap (filterOutServiceRange); on start, the podCIDRs of every
existing Node occupied before anything is allocated (a restarted controller hands out no CIDR twice);
then a Node without podCIDRs gets the next free subnet, patched onto it, and a deleted Node's subnets are
released. An exhausted range records upstream's event on the Node: Normal, reason `CIDRNotAvailable`,
"Node NAME status is now: CIDRNotAvailable", from the component `cidrAllocator`.

Departures: key-driven as every controller here (handlers queue node names, `sync(name)` decides from the
lister, a failure is retried with the queue's backoff instead of upstream's channel and retry loop); the
CIDRs a Node was given are remembered per name, so a deletion needs no tombstone; a Node whose podCIDR
lies outside the cluster CIDR is logged and left alone instead of stopping the controller manager; one
cluster CIDR (no dual stack); the patch carries the Node's resourceVersion, so a podCIDR written by
someone else meanwhile (a kubelet's --pod-cidr) is never overwritten: the conflict is retried and the
Node's own CIDR occupied instead.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Any

from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.nodeipam.cidrset import CIDRSet, CIDRSetError, CIDRsExhausted
from control.controllers.shared.base import APIClient, Controller
from control.util.clock import Clock

log = logging.getLogger(__name__)

DEFAULT_CLUSTER_CIDR = "10.244.0.0/16"  # flannel's and k3s's; upstream has no default
DEFAULT_NODE_CIDR_MASK_SIZE = 24  # upstream --node-cidr-mask-size for IPv4
EVENT_COMPONENT = "cidrAllocator"  # upstream's event source
CIDR_NOT_AVAILABLE = "CIDRNotAvailable"


def overlaps(a: str, b: str) -> bool:
    """Whether two CIDRs share an address (upstream filterOutServiceRange's test)."""
    first, second = ipaddress.ip_network(a, strict=False), ipaddress.ip_network(b, strict=False)
    return first.version == second.version and first.overlaps(second)


def node_cidrs(node: dict[str, Any]) -> tuple[str, ...]:
    spec = node.get("spec") or {}
    return tuple(spec.get("podCIDRs") or ([spec["podCIDR"]] if spec.get("podCIDR") else []))


class NodeIPAMController(Controller):
    name = "nodeipam"  # upstream's --controllers alias of node-ipam-controller

    def __init__(self, client: APIClient, informers: InformerFactory, *, cluster_cidr: str = DEFAULT_CLUSTER_CIDR,
                 node_mask_size: int = DEFAULT_NODE_CIDR_MASK_SIZE, service_cidr: str | None = None,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None,
                 clock: Clock | None = None) -> None:
        super().__init__(client, informers, workers=1, queue=queue,
                         recorder=recorder or EventRecorder(client, component=EVENT_COMPONENT, clock=clock),
                         clock=clock)
        self.cidrs = CIDRSet(cluster_cidr, node_mask_size)  # raises CIDRSetError on a bad pair
        if service_cidr and overlaps(service_cidr, cluster_cidr):
            self.cidrs.occupy(service_cidr)
            log.info("node IPAM: service CIDR %s taken out of the cluster CIDR %s", service_cidr, cluster_cidr)
        nodes = informers.informer("v1", "nodes")
        self.nodes = nodes.lister()
        self._given: dict[str, tuple[str, ...]] = {}  # node name → the CIDRs occupied for it
        self._uids: dict[str, str] = {}  # node name → the uid of the Node object they were occupied for
        self._confirmed: set[str] = set()  # names whose Node is known to carry its CIDRs (seen or patched)
        nodes.add_event_handler(on_add=self.enqueue, on_update=self.enqueue_update, on_delete=self.enqueue)

    def on_synced(self) -> None:
        """Occupy every existing Node's CIDRs before the first allocation (upstream's nodeList at start)."""
        for node in self.nodes.list():
            self._occupy(node["metadata"]["name"], node["metadata"].get("uid", ""), node_cidrs(node))
        log.info("node IPAM: %d of %d node CIDRs of %s in use", self.cidrs.allocated, self.cidrs.max_cidrs,
                 self.cidrs.cluster)

    def _occupy(self, name: str, uid: str, cidrs: tuple[str, ...]) -> None:
        try:
            for cidr in cidrs:
                self.cidrs.occupy(cidr)
        except CIDRSetError as exc:
            log.warning("node IPAM: node %s has podCIDRs %s outside the cluster CIDR: %s", name, list(cidrs), exc)
            return
        self._given[name] = cidrs
        self._uids[name] = uid
        self._confirmed.add(name)

    def _release(self, name: str) -> None:
        self._uids.pop(name, None)
        self._confirmed.discard(name)
        for cidr in self._given.pop(name, ()):
            self.cidrs.release(cidr)

    def sync(self, key: str) -> None:
        node = self.nodes.get(None, key)
        if node is None:  # deleted: its CIDRs go back to the pool
            if key in self._given:
                log.info("node IPAM: released %s of deleted node %s", ", ".join(self._given[key]), key)
            self._release(key)
            return
        cidrs, uid = node_cidrs(node), node["metadata"].get("uid", "")
        if cidrs:
            if self._given.get(key) != cidrs:
                self._release(key)
                self._occupy(key, uid, cidrs)
            return
        held = self._given.get(key) if self._uids.get(key) == uid else None
        if held and key in self._confirmed:
            # the lister has not yet seen our own patch (an older event of this Node, e.g. a taint added
            # meanwhile, was queued behind it): its CIDR stays taken, the patch's watch event comes next.
            # Releasing here would hand the CIDR to the next Node while this one keeps it.
            return
        if not held:  # nothing held for this Node object (a Node re-created under the name drops the old one)
            self._release(key)
            try:
                held = (str(self.cidrs.allocate_next()),)
            except CIDRsExhausted as exc:
                self.recorder.event({"kind": "Node", "apiVersion": "v1", "name": key, "uid": uid}, "Normal",
                                    CIDR_NOT_AVAILABLE, f"Node {key} status is now: {CIDR_NOT_AVAILABLE}")
                raise RuntimeError(
                    f"failed to allocate cidr from cluster cidr {self.cidrs.cluster}: {exc}") from None
            self._given[key], self._uids[key] = held, uid
        cidr = held[0]
        patch = {"metadata": {"resourceVersion": node["metadata"].get("resourceVersion")},
                 "spec": {"podCIDR": cidr, "podCIDRs": [cidr]}}
        # a failure (a conflict: the Node changed meanwhile, a failed call) is retried by the queue with the
        # same CIDR held for this Node, so retries do not walk the range; a deletion or a podCIDR someone
        # else wrote releases it (above)
        self.client.patch(resource_path("v1", "nodes", name=key), patch)
        self._confirmed.add(key)
        log.info("node IPAM: set node %s podCIDR %s", key, cidr)
