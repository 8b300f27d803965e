"""Pods (upstream pkg/registry/core/pod/strategy.go and pod/storage/storage.go's BindingREST).

- A created pod starts `Pending` with its QoS class computed from the defaulted spec (requests copied
  from limits first), whatever status the client sent.
- Deletion is graceful once a node has taken the pod: deletionTimestamp = now + grace, and the kubelet
  confirms with a delete of grace 0 after the containers stopped.
- A created or updated pod gets upstream's default NoExecute tolerations (admission plugin DefaultTolerationSeconds,
  plugin/pkg/admission/defaulttolerationseconds): not-ready and unreachable, operator Exists,
  tolerationSeconds 300, each unless the pod already tolerates that taint, so a pod outlives a short node
  outage and is evicted (by the taint eviction controller) five minutes into a long one. Upstream runs the
  plugin on update too, so a `kubectl replace` without them does not drop them.
- A binding sets `spec.nodeName` once, with the PodScheduled condition; it bypasses update validation,
  which forbids any other writer from changing nodeName.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from control.api.qos import qos_class
from control.api.taints import NO_EXECUTE, TAINT_NOT_READY, TAINT_UNREACHABLE, tolerates
from control.api.typed import Pod
from control.apimachinery.meta import set_condition
from control.apiserver import status
from control.apiserver.registry.strategies.base import Strategy

DEFAULT_GRACE_SECONDS = 30
DEFAULT_TOLERATION_SECONDS = 300  # upstream --default-not-ready-toleration-seconds / -unreachable-


def add_default_tolerations(spec: dict[str, Any]) -> None:
    """Upstream DefaultTolerationSeconds (in place): a not-ready and an unreachable NoExecute toleration for
    300 s, each only if no toleration of the pod already tolerates that taint."""
    tolerations = spec.get("tolerations")
    if not isinstance(tolerations, list):
        tolerations = []
    mappings = [t for t in tolerations if isinstance(t, Mapping)]
    added = [{"key": key, "operator": "Exists", "effect": NO_EXECUTE, "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}
             for key in (TAINT_NOT_READY, TAINT_UNREACHABLE)
             if not any(tolerates(t, {"key": key, "effect": NO_EXECUTE}) for t in mappings)]
    if added:
        spec["tolerations"] = tolerations + added


def graceful_pod_seconds(pod: Mapping[str, Any], requested: int | None) -> int:
    """The grace period a pod delete gets (upstream pod strategy CheckGracefulDelete): the request's,
    else the pod's `terminationGracePeriodSeconds` (30); 0 — delete now — for a pod no node has taken
    or one that has already finished, since no kubelet will confirm it."""
    spec = pod.get("spec")
    pod_status = pod.get("status")
    node = spec.get("nodeName") if isinstance(spec, Mapping) else None
    phase = pod_status.get("phase") if isinstance(pod_status, Mapping) else None
    if not node or phase in ("Succeeded", "Failed"):
        return 0
    if requested is not None:
        return max(0, requested)
    grace = spec.get("terminationGracePeriodSeconds") if isinstance(spec, Mapping) else None
    return grace if isinstance(grace, int) and grace >= 0 else DEFAULT_GRACE_SECONDS


def assign_node(pod: dict[str, Any], node_name: str, *, now: datetime) -> None:
    """Bind `pod` (in place) to `node_name` (upstream BindingREST.assignPod): 409 when it is being deleted
    or already bound."""
    name = pod["metadata"].get("name", "")
    if pod["metadata"].get("deletionTimestamp"):
        raise status.conflict("pods/binding", name, f"pod {name} is being deleted, cannot be assigned to a host")
    current = Pod(pod).spec.node_name
    if current:
        raise status.conflict("pods/binding", name, f'pod {name} is already assigned to node "{current}"')
    pod.setdefault("spec", {})["nodeName"] = node_name
    conditions = pod.setdefault("status", {}).setdefault("conditions", [])
    set_condition(conditions, {"type": "PodScheduled", "status": "True", "lastProbeTime": None}, now=now)


class PodStrategy(Strategy):
    def prepare_for_create(self, obj: dict[str, Any], *, now: datetime, uid: str) -> None:
        super().prepare_for_create(obj, now=now, uid=uid)
        spec = obj.get("spec")
        if isinstance(spec, dict):
            add_default_tolerations(spec)
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(spec if isinstance(spec, Mapping) else {})}

    def prepare_for_update(self, new: dict[str, Any], old: Mapping[str, Any]) -> None:
        super().prepare_for_update(new, old)
        spec = new.get("spec")
        if isinstance(spec, dict):
            add_default_tolerations(spec)

    def delete_grace_seconds(self, obj: Mapping[str, Any], requested: int | None) -> int:
        return graceful_pod_seconds(obj, requested)


class BindingStrategy(Strategy):
    """The deprecated `bindings` resource (kube-scheduler once posted there): a create binds the named pod
    like `pods/binding`; nothing of its own is stored."""

    binds_pods = True
