"""The node agent's side of the pod network between nodes: watch the Nodes, publish this node's backend
facts on its own Node, and keep the routes / FDB / neighbour entries towards every other node's pods as
`desired` says (adding what is missing, removing what belongs to nodes that went or moved, touching
nothing it did not make).

Upstream: flannel's main loop as k3s embeds it (flannel pkg/subnet/kube/kube.go watches Nodes and turns
spec.podCIDR and the flannel.alpha.coreos.com annotations into subnet lease events; pkg/backend/
route_network.go and vxlan_network.go handle them; `routeCheck` re-adds what is missing every 10 s).
Departures: instead of per-event handlers, every Node change (and a periodic resync) triggers one full
reconciliation of desired against present entries, which is also what a restarted agent does first;
host-gw's refusal of a node that is not directly connected is logged (once per change) instead of being
fatal for the whole daemon.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.rest import RESTClient
from nodeagent.network.backends.desired import (
    VXLAN_DEVICE,
    Backend,
    Changes,
    Desired,
    Entries,
    desired,
    diff,
    node_annotations,
    remote_nodes,
    vtep_address,
)
from nodeagent.network.backends.netlink import VxlanDevice

log = logging.getLogger(__name__)

RESYNC_SECONDS = 10.0  # flannel's routeCheck period
STOP_CHECK_SECONDS = 0.5


class Netlink(Protocol):
    """What the agent needs from netlink (netlink.NetlinkRoutes is the real one)."""

    def connected(self) -> list[str]: ...

    def ensure_vxlan(self, name: str, *, public_ip: str, vtep: str) -> VxlanDevice: ...

    def present(self, device: str) -> Entries: ...

    def apply(self, changes: Changes) -> None: ...


class PodNetworkAgent:
    """One node's backend (module notes). `setup()` once the pod CIDR is known, then `run(stop)`."""

    def __init__(self, client: RESTClient, netlink: Netlink, *, node_name: str, backend: Backend, node_ip: str,
                 pod_cidr: str, device: str = VXLAN_DEVICE, resync: float = RESYNC_SECONDS) -> None:
        self.client = client
        self.netlink = netlink
        self.node_name = node_name
        self.backend = backend
        self.node_ip = node_ip
        self.pod_cidr = pod_cidr
        self.device = device
        self.resync = resync
        self.vxlan: VxlanDevice | None = None
        self._changed = threading.Event()
        self._last_refusals: tuple[str, ...] = ()

    @property
    def pod_mtu(self) -> int | None:
        """The MTU pods must use so their packets fit the VXLAN device (None: the uplink's)."""
        return self.vxlan.mtu if self.vxlan is not None else None

    def setup(self) -> None:
        """Make the VXLAN device (vxlan) and publish this node's backend annotations."""
        if self.backend is Backend.NONE:
            return
        if self.backend is Backend.VXLAN:
            self.vxlan = self.netlink.ensure_vxlan(self.device, public_ip=self.node_ip,
                                                   vtep=vtep_address(self.pod_cidr))
            log.info("pod network vxlan: device %s (MAC %s, MTU %d) on %s", self.device, self.vxlan.mac,
                     self.vxlan.mtu, self.node_ip)
        annotations = node_annotations(self.backend, public_ip=self.node_ip,
                                       vtep_mac=self.vxlan.mac if self.vxlan else "")
        self.client.patch(resource_path("v1", "nodes", name=self.node_name), {"metadata": {"annotations": annotations}})

    def desired(self, nodes: Sequence[Mapping[str, Any]]) -> Desired:
        remotes = remote_nodes(nodes, self_name=self.node_name)
        connected = self.netlink.connected() if self.backend is Backend.HOST_GW else []
        return desired(self.backend, remotes, connected=connected, device=self.device)

    def reconcile(self, nodes: Sequence[Mapping[str, Any]]) -> Changes:
        """One pass: desired from `nodes` against what is present; returns what was changed."""
        want = self.desired(nodes)
        refusals = tuple(r.reason for r in want.refused)
        if refusals != self._last_refusals:
            for reason in refusals:
                log.error("%s", reason)
            self._last_refusals = refusals
        changes = diff(want.entries, self.netlink.present(self.device))
        if changes.add or changes.remove:
            self.netlink.apply(changes)
            log.info("pod network %s: +%d/-%d routes, +%d/-%d neighbours, +%d/-%d fdb", self.backend.value,
                     len(changes.add.routes), len(changes.remove.routes), len(changes.add.neighbours),
                     len(changes.remove.neighbours), len(changes.add.fdb), len(changes.remove.fdb))
        return changes

    def run(self, stop: threading.Event) -> None:
        """Watch Nodes and reconcile on every change and every `resync` seconds until `stop`."""
        if self.backend is Backend.NONE:
            return
        factory = InformerFactory(self.client)
        informer = factory.informer("v1", "nodes")
        informer.add_event_handler(on_add=lambda _: self._changed.set(), on_update=lambda *_: self._changed.set(),
                                   on_delete=lambda _: self._changed.set())
        factory.start(stop)
        while not factory.wait_for_sync(0.5):
            if stop.is_set():
                return
        while not stop.is_set():
            self._changed.clear()
            try:
                self.reconcile(informer.lister().list())
            except Exception:
                log.exception("pod network %s: reconciling failed; again in %.0f s", self.backend.value, self.resync)
            deadline = time.monotonic() + self.resync
            while not (stop.is_set() or self._changed.is_set()) and time.monotonic() < deadline:
                self._changed.wait(STOP_CHECK_SECONDS)
