"""The node lifecycle controller: a node whose kubelet stops heartbeating (Lease and status) for the grace
period gets its conditions set Unknown, and every node carries the not-ready / unreachable / pressure
taints its conditions call for.

Upstream: pkg/controller/nodelifecycle/node_lifecycle_controller.go (`monitorNodeHealth` every
nodeMonitorPeriod, 5 s; `tryUpdateNodeHealth` with nodeMonitorGracePeriod 40 s and nodeStartupGracePeriod
60 s; `doNoExecuteTaintingPass` and `doNoScheduleTaintingPass`). The decisions
are health.py's; this module does the I/O.

Shape (the controller base, shared/base.py): informers on nodes and on the Leases of kube-node-lease; a node
change or a Lease renewal enqueues the node's name, and `sync(name)` re-adds the name after
nodeMonitorPeriod, so every node is looked at at least that often (upstream's periodic pass, per key).
`sync`: observe the heartbeat (HeartbeatTracker: the newer of a new Lease renewTime and a new Ready
lastHeartbeatTime, timed by this controller's clock), write the Unknown conditions through nodes/status
when past the grace period (event NodeNotReady on the node), then write spec.taints (the update carries
the resourceVersion just read, so a concurrent change is a 409 and the key is retried).

Not done (upstream has them): marking the pods of an Unknown node NotReady (MarkPodsNotReady), zone
states and eviction rate limits (eviction is tainteviction/controller.py's, per pod, as upstream since 1.29).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from control.api.typed import Node
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.nodelifecycle.health import HeartbeatTracker, desired_taints, node_health
from control.controllers.shared.base import APIClient, Controller
from control.util.clock import Clock, RealClock

log = logging.getLogger(__name__)

LEASE_NAMESPACE = "kube-node-lease"
NODE_MONITOR_PERIOD = 5.0  # upstream --node-monitor-period
NODE_MONITOR_GRACE_PERIOD = 40.0  # upstream --node-monitor-grace-period
NODE_STARTUP_GRACE_PERIOD = 60.0  # upstream --node-startup-grace-period


class NodeLifecycleController(Controller):
    """Registers its handlers on construction; `run(stop)` (the base's) syncs nodes until `stop` is set."""

    name = "nodelifecycle"  # upstream's controller name (--controllers)

    def __init__(self, client: APIClient, informers: InformerFactory, *, workers: int = 1,
                 monitor_period: float = NODE_MONITOR_PERIOD, grace_period: float = NODE_MONITOR_GRACE_PERIOD,
                 startup_grace_period: float = NODE_STARTUP_GRACE_PERIOD,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None,
                 clock: Clock | None = None) -> None:
        super().__init__(client, informers, workers=workers, queue=queue, recorder=recorder, clock=clock)
        self.clock: Clock = clock or RealClock()
        self.monitor_period = monitor_period
        self.grace_period = grace_period
        self.startup_grace_period = startup_grace_period
        self.heartbeats = HeartbeatTracker()
        nodes = informers.informer("v1", "nodes")
        leases = informers.informer("coordination.k8s.io/v1", "leases", namespace=LEASE_NAMESPACE)
        self.nodes, self.leases = nodes.lister(), leases.lister()
        nodes.add_event_handler(on_add=self.enqueue, on_update=self.enqueue_update, on_delete=self.enqueue)
        leases.add_event_handler(on_add=self.on_lease, on_update=self.on_lease_update)

    def on_lease(self, lease: Mapping[str, Any]) -> None:
        """A node's Lease is named after the node."""
        self.queue.add(lease["metadata"]["name"])

    def on_lease_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self.on_lease(new)

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
        taints = desired_taints(node, now)
        if taints is not None:
            self.client.patch(path, {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                                     "spec": {"taints": taints}})
            log.info("node %s: taints now %s", key, [f"{t['key']}:{t['effect']}" for t in taints] or "none")
        self.queue.add_after(key, self.monitor_period)
