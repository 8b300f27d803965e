"""The node lifecycle controller: a node whose kubelet stops heartbeating (Lease and status) for the grace
period gets its conditions set Unknown, and every node carries the not-ready / unreachable / pressure
taints its conditions call for.

Upstream: pkg/controller/nodelifecycle/node_lifecycle_controller.go (`monitorNodeHealth` every
nodeMonitorPeriod, 5 s; `tryUpdateNodeHealth` with nodeMonitorGracePeriod 40 s and nodeStartupGracePeriod
60 s; `doNoExecuteTaintingPass` and `doNoScheduleTaintingPass`). The decisions
are health.py's; this module does the I/O.

Shape (the controller base, shared/base.py): informers on nodes, pods and the Leases of kube-node-lease; a node
change or a Lease renewal enqueues the node's name, and `sync(name)` re-adds the name after
nodeMonitorPeriod, so every node is looked at at least that often (upstream's periodic pass, per key).
`sync`: observe the heartbeat (HeartbeatTracker: the newer of a new Lease renewTime and a new Ready
lastHeartbeatTime, timed by this controller's clock), write the Unknown conditions through nodes/status
when past the grace period (event NodeNotReady on the node), set Ready=False on the node's pods while its
Ready is Unknown (MarkPodsNotReady, below), then write spec.taints (the update carries the resourceVersion
just read, so a concurrent change is a 409 and the key is retried).

MarkPodsNotReady: a silent node's pods would otherwise stay Ready and in their Services' EndpointSlices
until the taint eviction controller deletes them (300 s with the default tolerations); with Ready=False the
EndpointSlice controller marks their endpoints `ready: false` within the grace period. Upstream marks on
the controller's own True → Unknown transition, keeps failed nodes in a retry set, and marks a pod bound
later to a not-ready node from its pod handler. Here it is level-triggered: every sync of a node whose Ready
is Unknown marks its pods still ready (a no-op once done), which covers the retry and the pod bound later
(the pods informer enqueues a pod's node when the pod is bound). A Ready=False posted by a live kubelet is
left to that kubelet, as upstream's monitorNodeHealth does. When the node comes back its kubelet writes the
pods' Ready again (nodeagent/status_manager.py reconciles a Ready condition another writer changed).

Eviction rate limits: adding a node's first NoExecute not-ready/unreachable taint (which starts the taint
eviction controller's per-pod clocks) takes a token of its zone's bucket; without one the NoSchedule taints
are written, the NoExecute one is held back and the node tried again in EVICTION_RETRY (upstream's
RateLimitedTimedQueue per zone, drained every 100 ms). zones.py decides the zones' states and rates.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from control.api.typed import Node, Pod
from control.apimachinery.meta import get_condition
from control.client.errors import NotFound
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.store import NODE_NAME_INDEX, index_by_node_name
from control.client.workqueue import RateLimitingQueue
from control.controllers.nodelifecycle.health import (
    HeartbeatTracker,
    desired_taints,
    new_no_execute,
    node_health,
    pods_to_mark_not_ready,
    without_new_no_execute,
)
from control.controllers.nodelifecycle.zones import EvictionPolicy, ZoneLimiters, zone_key, zone_rates
from control.controllers.shared.base import APIClient, Controller
from control.util.clock import Clock, RealClock

log = logging.getLogger(__name__)

LEASE_NAMESPACE = "kube-node-lease"
NODE_MONITOR_PERIOD = 5.0  # upstream --node-monitor-period
NODE_MONITOR_GRACE_PERIOD = 40.0  # upstream --node-monitor-grace-period
NODE_STARTUP_GRACE_PERIOD = 60.0  # upstream --node-startup-grace-period
EVICTION_RETRY = 1.0  # seconds until a node whose NoExecute taint the zone's limiter held back is tried again


class NodeLifecycleController(Controller):
    """Registers its handlers on construction; `run(stop)` (the base's) syncs nodes until `stop` is set."""

    name = "nodelifecycle"  # upstream's controller name (--controllers)

    def __init__(self, client: APIClient, informers: InformerFactory, *, workers: int = 1,
                 monitor_period: float = NODE_MONITOR_PERIOD, grace_period: float = NODE_MONITOR_GRACE_PERIOD,
                 startup_grace_period: float = NODE_STARTUP_GRACE_PERIOD,
                 eviction: EvictionPolicy | None = None, queue: RateLimitingQueue[str] | None = None,
                 recorder: EventRecorder | None = None, clock: Clock | None = None) -> None:
        super().__init__(client, informers, workers=workers, queue=queue, recorder=recorder, clock=clock)
        self.clock: Clock = clock or RealClock()
        self.monitor_period = monitor_period
        self.grace_period = grace_period
        self.startup_grace_period = startup_grace_period
        self.heartbeats = HeartbeatTracker()
        self.limiters = ZoneLimiters(eviction or EvictionPolicy())
        nodes = informers.informer("v1", "nodes")
        leases = informers.informer("coordination.k8s.io/v1", "leases", namespace=LEASE_NAMESPACE)
        pods = informers.informer("v1", "pods")
        try:
            pods.add_indexers({NODE_NAME_INDEX: index_by_node_name})
        except ValueError:  # another controller of the shared informer registered the same standard index
            pass
        self.nodes, self.leases, self.pods = nodes.lister(), leases.lister(), pods.store
        nodes.add_event_handler(on_add=self.enqueue, on_update=self.enqueue_update, on_delete=self.enqueue)
        leases.add_event_handler(on_add=self.on_lease, on_update=self.on_lease_update)
        pods.add_event_handler(on_add=self.on_pod, on_update=self.on_pod_update)

    def on_lease(self, lease: Mapping[str, Any]) -> None:
        """A node's Lease is named after the node."""
        self.queue.add(lease["metadata"]["name"])

    def on_lease_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self.on_lease(new)

    def on_pod(self, pod: Mapping[str, Any]) -> None:
        """A pod bound to a node is looked at with its node (upstream podUpdated: one bound to a node that is
        not ready is marked not ready too)."""
        if node_name := Pod(pod).spec.node_name:
            self.queue.add(node_name)

    def on_pod_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if Pod(old).spec.node_name != Pod(new).spec.node_name:
            self.on_pod(new)

    def sync(self, key: str) -> None:
        """Observe, decide and write one node's health and taints (module notes). Raises to retry."""
        node = self.nodes.get(None, key)
        if node is None:
            self.heartbeats.forget(key)
            return
        now = self.clock.now()
        last_observed = self.heartbeats.observe(node, self.leases.get(LEASE_NAMESPACE, key), now)
        path = resource_path("v1", "nodes", name=key)
        conditions = node_health(node, last_observed, now, grace=self.grace_period,
                                 startup_grace=self.startup_grace_period)
        if conditions is not None:
            was_ready = (ready := Node(node).status.condition("Ready")) is not None and ready.status == "True"
            node = self.client.update(path + "/status", {**node, "status": {**node.get("status", {}),
                                                                           "conditions": conditions}})
            log.info("node %s: no heartbeat for %.0fs, conditions set Unknown", key,
                     (now - last_observed).total_seconds())
            if was_ready:  # upstream recordNodeStatusChange
                self.recorder.eventf(node, "Normal", "NodeNotReady", "Node %s status is now: NodeNotReady", key)
        if (get_condition(node, "Ready") or {}).get("status") == "Unknown":
            self.mark_pods_not_ready(key, now)
        taints = desired_taints(node, now)
        if taints is not None and new_no_execute(node, taints) and not self.may_start_eviction(node):
            taints = without_new_no_execute(node, taints)
            log.info("node %s: NoExecute taint held back by its zone's eviction rate", key)
            self.queue.add_after(key, EVICTION_RETRY)
        if taints is not None:
            self.client.patch(path, {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                                     "spec": {"taints": taints}})
            log.info("node %s: taints now %s", key, [f"{t['key']}:{t['effect']}" for t in taints] or "none")
        self.queue.add_after(key, self.monitor_period)

    def may_start_eviction(self, node: Mapping[str, Any]) -> bool:
        """Whether the node's zone may take one more NoExecute taint now (module notes, zones.py): the
        zones' rates from every node's Ready condition (this node's as just written), then its zone's bucket."""
        zones: dict[str, list[str | None]] = {}
        name = node["metadata"]["name"]
        for other in self.nodes.list():
            current = node if other["metadata"]["name"] == name else other
            zones.setdefault(zone_key(current), []).append((get_condition(current, "Ready") or {}).get("status"))
        monotonic = self.clock.monotonic()
        self.limiters.set_rates(zone_rates(zones, self.limiters.policy), monotonic)
        return self.limiters.try_accept(zone_key(node), monotonic)

    def mark_pods_not_ready(self, node_name: str, now: datetime) -> None:
        """Set Ready=False on the pods of a node gone Unknown (upstream MarkPodsNotReady), each through
        pods/status with the resourceVersion read (a 409 raises, so the node is retried), and the event
        NodeNotReady on each pod; a pod deleted meanwhile is skipped."""
        for pod in pods_to_mark_not_ready(self.pods.by_index(NODE_NAME_INDEX, node_name), node_name, now):
            metadata = pod["metadata"]
            path = resource_path("v1", "pods", namespace=metadata["namespace"], name=metadata["name"],
                                 subresource="status")
            try:
                updated = self.client.update(path, pod)
            except NotFound:
                continue
            log.info("pod %s/%s on node %s: Ready set False", metadata["namespace"], metadata["name"], node_name)
            self.recorder.eventf(updated, "Warning", "NodeNotReady", "Node is not ready")
