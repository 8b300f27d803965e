"""Which pods a Service's endpoints hold and how a pod reads as an endpoint, shared by the Endpoints,
EndpointSlice and EndpointSlice mirroring controllers: pure functions over wire dicts.

Upstream: staging k8s.io/endpointslice util/controller_utils.go (`ShouldPodBeInEndpoints`: terminal pods,
pods without an IP and — unless wanted — pods being deleted are left out; `ShouldSetHostname`),
pkg/api/v1/pod/util.go (`IsPodReady`, `FindPort`), the label and annotation names of k8s.io/api core/v1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.api.typed import Pod
from control.apimachinery.labels import selector_from_set

HEADLESS_LABEL = "service.kubernetes.io/headless"  # upstream v1.IsHeadlessService
LEADER_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"  # Endpoints used as a lock: never ours
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
TRIGGER_TIME_ANNOTATION = "endpoints.kubernetes.io/last-change-trigger-time"  # v1.EndpointsLastChangeTriggerTime

Obj = Mapping[str, Any]


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: Obj) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def should_pod_be_in_endpoints(pod: Obj, *, include_terminating: bool) -> bool:
    """Upstream ShouldPodBeInEndpoints: not terminal, has an IP, not being deleted (unless wanted)."""
    status = pod.get("status") or {}
    if status.get("phase") in TERMINAL_PHASES:
        return False
    if not status.get("podIP") and not status.get("podIPs"):
        return False
    return include_terminating or not _meta(pod).get("deletionTimestamp")


def find_port(pod: Obj, service_port: Obj) -> int | None:
    """The pod's port for `service_port` (upstream podutil.FindPort), None when a named port is missing."""
    target = service_port.get("targetPort")
    if target is None or target == "" or target == 0:
        return int(service_port["port"])
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    protocol = service_port.get("protocol") or "TCP"
    for container in _spec(pod).get("containers") or ():
        for port in container.get("ports") or ():
            if port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                return int(port["containerPort"])
    return None


def pod_ips(pod: Obj) -> list[str]:
    """The pod's IPs, primary first (status.podIPs, else status.podIP)."""
    status = pod.get("status") or {}
    ips = [entry.get("ip", "") for entry in status.get("podIPs") or () if entry.get("ip")]
    return ips or ([status["podIP"]] if status.get("podIP") else [])


def service_hostname(pod: Obj, service: Obj) -> str | None:
    """Upstream ShouldSetHostname: the pod's hostname when it names this service as its subdomain (what
    DNS publishes for headless services); shared by Endpoints and EndpointSlices."""
    spec = _spec(pod)
    if spec.get("hostname") and spec.get("subdomain") == _meta(service).get("name") and (
            _meta(pod).get("namespace") == _meta(service).get("namespace")):
        return str(spec["hostname"])
    return None


def selects(service: Obj, pod: Obj) -> bool:
    """Whether `service` selects `pod` (same namespace, labels match). No selector, or an empty one,
    selects nothing: such Endpoints are managed by the user (upstream: nil selector; an empty map is nil
    once stored)."""
    selector = _spec(service).get("selector")
    if not selector or _meta(pod).get("namespace") != _meta(service).get("namespace"):
        return False
    return selector_from_set(selector).matches(Pod(pod).metadata.labels)
