"""The kubelet's Node object over time: register it, report its status, renew its Lease.

Upstream: pkg/kubelet/kubelet_node_status.go (registerWithAPIServer, tryRegisterWithAPIServer,
reconcileExtendedResource/updateDefaultLabels, syncNodeStatus/tryUpdateNodeStatus) and
pkg/kubelet/nodelease + component-helpers' lease controller: register the node, the node status
loop, the lease heartbeat.

- Registration POSTs the Node built by `node_status.initial_node` with its first status. A 409 means the
  Node exists (a restart, or an admin made it): it is adopted, not replaced — the kubelet's well-known
  labels are brought up to date and `spec.podCIDR` is kept. The CIDR from the config is written only when
  the Node has none, because a CIDR already handed out may have pods on it.
- A report is one merge PATCH of the whole `status` through `nodes/<name>/status`: a merge patch replaces
  lists (conditions, addresses, images) as wholes, which is what the report means — the kubelet owns them.
  The previous status is passed to `node_status` so `lastTransitionTime` moves only on a change.
- The Lease (coordination.k8s.io/v1, kube-node-lease/<node>, holder = node name) is renewed every
  `leaseDuration / 4` (upstream's renewIntervalFraction 0.25), owned by the Node so it goes with it.
- `run` survives API errors: it logs and tries again on the next tick, with upstream's JitterUntil
  factor (0.04) so a fleet of kubelets does not report in lockstep.

Facts (psutil, Docker) come from the injected `facts` callable and the health checks from `health`
(names of failed checks, [] when healthy); everything written is computed by `node_status`.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from control.api.typed.core import Node
from control.apimachinery.meta import format_timestamp
from control.client.errors import ApiError, Conflict, NotFound
from nodeagent import eviction
from nodeagent.config import KubeletConfig
from nodeagent.node_status import ImageFacts, NodeFacts, gather_facts, initial_node, node_status
from nodeagent.runtime.interface import Runtime, RuntimeFailure

log = logging.getLogger(__name__)

LEASE_NAMESPACE = "kube-node-lease"
LEASE_RENEW_FRACTION = 0.25  # upstream nodelease renewIntervalFraction
JITTER = 0.04  # upstream wait.JitterUntil factor for the lease controller
RETRY_SECONDS = 1.0  # registration retry while the API server is unreachable


def _now() -> datetime:
    return datetime.now(UTC)


def node_path(name: str, subresource: str = "") -> str:
    return f"/api/v1/nodes/{name}" + (f"/{subresource}" if subresource else "")


def lease_path(name: str = "") -> str:
    base = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases"
    return f"{base}/{name}" if name else base


def adoption_patch(existing: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch that brings an existing Node in line with the one we would create: our labels
    set (other labels kept), podCIDR added only when the Node has none. {} when nothing differs."""
    patch: dict[str, Any] = {}
    have = Node(existing).metadata.labels
    labels = {k: v for k, v in Node(wanted).metadata.labels.items() if have.get(k) != v}
    if labels:
        patch["metadata"] = {"labels": labels}
    cidr = Node(wanted).spec.pod_cidr
    if cidr and not Node(existing).spec.pod_cidr:
        patch["spec"] = {"podCIDR": cidr, "podCIDRs": [cidr]}
    return patch


def lease_body(node: Mapping[str, Any], *, duration: int, now: datetime) -> dict[str, Any]:
    """The Lease a node holds: renewTime is a MicroTime; the Node owns it (upstream setNodeOwnerFunc)."""
    meta = node.get("metadata") or {}
    metadata: dict[str, Any] = {"name": meta.get("name"), "namespace": LEASE_NAMESPACE}
    if meta.get("uid"):
        metadata["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": meta.get("name"),
                                        "uid": meta["uid"]}]
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata,
            "spec": {"holderIdentity": meta.get("name"), "leaseDurationSeconds": duration,
                     "renewTime": format_timestamp(now, micro=True)}}


def runtime_facts(config: KubeletConfig, runtime: Runtime,
                  image_fs_path: Callable[[], str] | None = None) -> Callable[[], NodeFacts]:
    """A `facts` callable for `NodeReporter`: psutil/platform facts, the runtime's images, and its version
    ("unknown" while the runtime does not answer), and the usage of its data root (the imagefs), whose path
    is asked for once."""
    image_fs: list[str] = []

    def facts() -> NodeFacts:
        images = [ImageFacts(names=record.repo_digests + record.repo_tags, size_bytes=record.size)
                  for record in runtime.images()]
        try:
            version = runtime.version()
        except RuntimeFailure:
            version = "unknown"
        if not image_fs and image_fs_path is not None:
            try:
                image_fs.append(image_fs_path())
            except RuntimeFailure:
                pass
        return gather_facts(node_name=config.node_name, node_ip=config.node_ip, data_dir=config.data_dir,
                            docker_version=version, images=images, image_fs_path=image_fs[0] if image_fs else "")

    return facts


class NodeReporter:
    """Registers this kubelet's Node and keeps its status and Lease fresh. `ready` is the Ready condition
    of the last successful report (False before the first one and after a failed one)."""

    def __init__(self, client: Any, config: KubeletConfig, *, facts: Callable[[], NodeFacts],
                 health: Callable[[], list[str]], clock: Callable[[], datetime] = _now) -> None:
        self.client = client
        self.config = config
        self._facts = facts
        self._health = health
        self._clock = clock
        self._thresholds = eviction.parse_thresholds(config.eviction_hard)
        self._lock = threading.Lock()  # report/register from run() and from the kubelet's start-up
        self.node: dict[str, Any] | None = None  # the Node as the API server last returned it
        self.ready = False

    @property
    def name(self) -> str:
        return self.config.node_name

    @property
    def pod_cidr(self) -> str:
        """The Node's spec.podCIDR (what the network must use), or the config's before registration."""
        return Node(self.node).spec.pod_cidr or self.config.pod_cidr

    def register(self) -> dict[str, Any]:
        """Create the Node, or adopt the existing one; then report its status once. Returns the Node."""
        with self._lock:
            facts = self._facts()
            wanted = initial_node(self.name, facts, pod_cidr=self.config.pod_cidr, labels=self.config.labels)
            wanted["status"] = self._status(facts, old=None)
            try:
                self.node = self.client.create("/api/v1/nodes", wanted)
                log.info("registered node %s", self.name)
            except Conflict:
                existing = self.client.get(node_path(self.name))
                patch = adoption_patch(existing, wanted)
                self.node = self.client.patch(node_path(self.name), patch) if patch else existing
                log.info("node %s already exists; adopted it (podCIDR %s)", self.name, self.pod_cidr or "none")
        return self.report()

    def report(self) -> dict[str, Any]:
        """One status update through nodes/<name>/status; returns the Node the server answered with."""
        with self._lock:
            try:
                facts = self._facts()
                old = (self.node or {}).get("status")
                status = self._status(facts, old=old)
                self.node = self.client.patch(node_path(self.name, "status"), {"status": status})
            except Exception:
                self.ready = False
                raise
            self.ready = _ready(self.node)
            return self.node

    def renew_lease(self) -> None:
        """Renew (or create) kube-node-lease/<node> with renewTime = now."""
        body = lease_body(self.node or {"metadata": {"name": self.name}},
                          duration=self.config.node_lease_duration_seconds, now=self._clock())
        try:
            current = self.client.get(lease_path(self.name))
        except NotFound:
            self.client.create(lease_path(), body)
            return
        meta = current.get("metadata") or {}
        body["metadata"]["resourceVersion"] = meta.get("resourceVersion")
        if meta.get("ownerReferences") and "ownerReferences" not in body["metadata"]:
            body["metadata"]["ownerReferences"] = meta["ownerReferences"]
        self.client.update(lease_path(self.name), body)

    def run(self, stop: threading.Event) -> None:
        """Register (retrying) then report every nodeStatusUpdateFrequency and renew the Lease every
        leaseDuration/4, each with jitter, until `stop` is set. API errors are logged and retried."""
        while self.node is None and not stop.is_set():
            try:
                self.register()
            except Exception as exc:  # noqa: BLE001 - the API server down or refusing: keep trying, it is our only job
                log.warning("node %s: registration failed: %s", self.name, exc)
                stop.wait(RETRY_SECONDS)
        status_every = self.config.node_status_update_frequency
        lease_every = self.config.node_lease_duration_seconds * LEASE_RENEW_FRACTION
        next_status = next_lease = time.monotonic()
        while not stop.is_set():
            if time.monotonic() >= next_lease:
                self._guard("lease renewal", self.renew_lease)
                next_lease = time.monotonic() + _jittered(lease_every)
            if time.monotonic() >= next_status:
                self._guard("status report", self.report)
                next_status = time.monotonic() + _jittered(status_every)
            stop.wait(max(0.0, min(next_status, next_lease) - time.monotonic()))

    # -- helpers --------------------------------------------------------------------------------------

    def _status(self, facts: NodeFacts, *, old: Mapping[str, Any] | None) -> dict[str, Any]:
        problems = list(self._health())
        return node_status(facts, old_status=old, now=self._clock(), max_pods=self.config.max_pods,
                           kubelet_port=self.config.port, runtime_healthy=True, not_ready_reasons=problems,
                           thresholds=self._thresholds)

    def _guard(self, what: str, action: Callable[[], object]) -> None:
        try:
            action()
        except (ApiError, OSError) as exc:
            log.warning("node %s: %s failed: %s", self.name, what, exc)
        except Exception:  # a bug or a runtime failure must not end the heartbeat
            log.exception("node %s: %s failed", self.name, what)


def _ready(node: Mapping[str, Any] | None) -> bool:
    ready = Node(node).status.condition("Ready")
    return ready is not None and ready.status == "True"


def _jittered(period: float) -> float:
    return period * (1 + random.uniform(0, JITTER))

