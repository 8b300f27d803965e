"""What a Service's EndpointSlices should be: pure functions from (service, pods, node zones, existing
slices) to a plan of creates, updates and deletes, so every placement rule is tested on tables.

Upstream: staging k8s.io/endpointslice (reconciler.go `reconcile`, `reconcileByAddressType`,
`reconcileByPortMapping`, `finalize`; utils.go `podToEndpoint`, `getEndpointPorts`, `newEndpointSlice`,
`setEndpointSliceLabels`, `getSliceToFill`, `ownedBy`; util/endpointset.go `hashEndpoint`) and
pkg/controller/endpointslice/endpointslice_controller.go (`syncService`). The pod rules shared with the
Endpoints controller (who is in, ready, target ports, hostname) come from shared/endpoint_util.py.

Endpoints (`pod_endpoint`): every pod that `should_pod_be_in_endpoints` with terminating pods included
(slices always carry them), one address of the slice's family, conditions `serving` = the pod is Ready,
`terminating` = it has a deletionTimestamp, `ready` = serving and not terminating, or always with
`publishNotReadyAddresses`; `targetRef` to the pod, `nodeName`, `zone` from the node's
`topology.kubernetes.io/zone` label, `hostname` as for Endpoints. Its ports are the service ports the pod
resolves (a pod without a named port is left out of that port only), so pods can need different port
lists: endpoints are grouped by their port list and each group has slices of its own.

Placement (per address type, then per port list), as upstream, for minimal churn:
1. Every existing slice keeps the desired endpoints it already holds (updated in place when their
   conditions, node or zone changed) and drops the ones no longer wanted; a slice left empty is deleted,
   and so is a slice of a port list nobody needs, of another address type, or not owned by this Service
   (an old Service of the same name). A slice whose endpoints or labels changed is to be updated.
2. The endpoints not placed yet go first into the slices already being updated, fullest first, up to
   `max_endpoints` each (nothing more is written than an update already costs).
3. What is left: when fewer than `max_endpoints` remain, into the unchanged slice with the least room that
   still fits them all (`getSliceToFill`), else into new slices of up to `max_endpoints`.
4. A create and a delete of the same Service and address type become one update of the slice to delete
   (upstream `finalize`), and a Service with no endpoints at all keeps one empty placeholder slice.
Desired endpoints are placed in a sorted order (upstream pops from a set) so plans are deterministic.

New slices are `generateName: <service>-` (or `endpointslice-` when that is not a valid name prefix),
labelled with the Service's labels plus `kubernetes.io/service-name`, `endpointslice.kubernetes.io/
managed-by` and, for headless Services, `service.kubernetes.io/headless`, and owned by the Service
(controller, blockOwnerDeletion). The `endpoints.kubernetes.io/last-change-trigger-time` annotation is set
on every slice written (removed when there is no trigger time) and never causes a write by itself.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from control.api.disruption import is_pod_ready
from control.api.typed import EndpointSlice, Service
from control.apimachinery.meta import deep_copy
from control.apimachinery.validation import is_dns1123_subdomain
from control.controllers.shared.endpoint_util import (
    HEADLESS_LABEL,
    TRIGGER_TIME_ANNOTATION,
    find_port,
    pod_ips,
    service_hostname,
    should_pod_be_in_endpoints,
)

SERVICE_NAME_LABEL = "kubernetes.io/service-name"  # discovery.LabelServiceName
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"  # discovery.LabelManagedBy
CONTROLLER_NAME = "endpointslice-controller.k8s.io"  # the managed-by value of this controller's slices
ZONE_LABEL = "topology.kubernetes.io/zone"  # v1.LabelTopologyZone
MAX_ENDPOINTS_PER_SLICE = 100  # upstream --max-endpoints-per-slice default
MAX_ENDPOINTS_PER_SLICE_LIMIT = 1000  # the flag's upper bound (and the API's per-slice limit)
API_VERSION = "discovery.k8s.io/v1"

Obj = Mapping[str, Any]
PortsKey = tuple[tuple[str, int, str, str], ...]
EndpointKey = tuple[tuple[str, ...], str, str, str]


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: Obj) -> Mapping[str, Any]:
    return obj.get("spec") or {}


# --- endpoints and ports ----------------------------------------------------------------------------

def address_types(service: Obj) -> list[str]:
    """The slices' address types: the Service's ipFamilies (upstream getAddressTypesForService), IPv4 when
    unset."""
    families = [family for family in _spec(service).get("ipFamilies") or () if family in ("IPv4", "IPv6")]
    return families or ["IPv4"]


def _address_of(pod: Obj, address_type: str) -> str | None:
    """The pod's first IP of the family (upstream getEndpointAddresses)."""
    version = 4 if address_type == "IPv4" else 6
    for ip in pod_ips(pod):
        try:
            if ipaddress.ip_address(ip).version == version:
                return ip
        except ValueError:
            continue
    return None


def endpoint_ports(service: Obj, pod: Obj) -> list[dict[str, Any]]:
    """Upstream getEndpointPorts: one EndpointPort per service port the pod resolves."""
    ports = []
    for service_port in _spec(service).get("ports") or ():
        number = find_port(pod, service_port)
        if number is None:
            continue
        port: dict[str, Any] = {"name": service_port.get("name") or "", "port": number,
                                "protocol": service_port.get("protocol") or "TCP"}
        if service_port.get("appProtocol"):
            port["appProtocol"] = service_port["appProtocol"]
        ports.append(port)
    return ports


def ports_key(ports: Iterable[Obj]) -> PortsKey:
    """Upstream NewPortMapKey: the same ports in any order are the same list."""
    return tuple(sorted((p.get("name") or "", int(p.get("port") or 0), p.get("protocol") or "TCP",
                         p.get("appProtocol") or "") for p in ports))


def pod_endpoint(pod: Obj, service: Obj, address_type: str, zone: str | None) -> dict[str, Any] | None:
    """Upstream podToEndpoint (module notes); None when the pod has no address of the family."""
    address = _address_of(pod, address_type)
    if address is None:
        return None
    serving = is_pod_ready(pod)
    terminating = bool(_meta(pod).get("deletionTimestamp"))
    ready = bool(_spec(service).get("publishNotReadyAddresses")) or (serving and not terminating)
    meta = _meta(pod)
    endpoint: dict[str, Any] = {"addresses": [address],
                                "conditions": {"ready": ready, "serving": serving, "terminating": terminating}}
    if (hostname := service_hostname(pod, service)) is not None:
        endpoint["hostname"] = hostname
    endpoint["targetRef"] = {"kind": "Pod", "namespace": meta.get("namespace", ""), "name": meta.get("name", ""),
                             "uid": meta.get("uid", "")}
    if node_name := _spec(pod).get("nodeName"):
        endpoint["nodeName"] = node_name
    if zone:
        endpoint["zone"] = zone
    return endpoint


def endpoint_key(endpoint: Obj) -> EndpointKey:
    """Upstream hashEndpoint: the same endpoint is the same addresses, hostname and target pod."""
    target = endpoint.get("targetRef") or {}
    return (tuple(sorted(endpoint.get("addresses") or ())), endpoint.get("hostname") or "",
            target.get("namespace") or "", target.get("name") or "")


@dataclass
class DesiredGroup:
    """The endpoints that share one port list."""

    ports: list[dict[str, Any]]
    endpoints: dict[EndpointKey, dict[str, Any]] = field(default_factory=dict)


def desired_endpoints(service: Obj, pods: Iterable[Obj], address_type: str,
                      zones: Mapping[str, str]) -> dict[PortsKey, DesiredGroup]:
    """The Service's endpoints of one address type grouped by port list; `zones` maps node name → zone."""
    groups: dict[PortsKey, DesiredGroup] = {}
    for pod in pods:
        if not should_pod_be_in_endpoints(pod, include_terminating=True):
            continue
        endpoint = pod_endpoint(pod, service, address_type, zones.get(_spec(pod).get("nodeName") or ""))
        if endpoint is None:
            continue
        ports = endpoint_ports(service, pod)
        group = groups.setdefault(ports_key(ports), DesiredGroup(ports))
        group.endpoints.setdefault(endpoint_key(endpoint), endpoint)
    return groups


# --- slices ------------------------------------------------------------------------------------------

def slice_labels(service: Obj, controller_name: str = CONTROLLER_NAME) -> dict[str, str]:
    """Upstream setEndpointSliceLabels: the Service's labels, then the ones the controller owns."""
    labels = {key: value for key, value in Service(service).metadata.labels.items()
              if key not in (SERVICE_NAME_LABEL, MANAGED_BY_LABEL, HEADLESS_LABEL)}
    if _spec(service).get("clusterIP") == "None":
        labels[HEADLESS_LABEL] = ""
    labels[SERVICE_NAME_LABEL] = _meta(service).get("name", "")
    labels[MANAGED_BY_LABEL] = controller_name
    return labels


@dataclass(frozen=True)
class SliceOwner:
    """Whose slices are placed: the owner every slice references (a Service; for mirrored slices the
    Endpoints), the labels every slice carries, and the name prefix of new ones."""

    kind: str
    name: str
    namespace: str
    uid: str
    labels: Mapping[str, str]

    @property
    def generate_name(self) -> str:
        """Upstream getEndpointSlicePrefix: `<name>-`, or `endpointslice-` when that is no valid prefix."""
        return f"{self.name}-" if self.name and not is_dns1123_subdomain(self.name) else "endpointslice-"

    def reference(self) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": self.kind, "name": self.name, "uid": self.uid, "controller": True,
                "blockOwnerDeletion": True}

    def owns(self, slice_: Obj) -> bool:
        """Upstream ownedBy: the slice's controller reference names this owner's uid."""
        return any(ref.get("uid") == self.uid and ref.get("kind") == self.kind and ref.get("controller")
                   for ref in _meta(slice_).get("ownerReferences") or ())


def service_owner(service: Obj, controller_name: str = CONTROLLER_NAME) -> SliceOwner:
    meta = _meta(service)
    return SliceOwner("Service", meta.get("name", ""), meta.get("namespace", ""), meta.get("uid", ""),
                      slice_labels(service, controller_name))


def new_slice(owner: SliceOwner, address_type: str, ports: Sequence[Obj]) -> dict[str, Any]:
    """Upstream newEndpointSlice: no endpoints yet."""
    return {"apiVersion": API_VERSION, "kind": "EndpointSlice",
            "metadata": {"generateName": owner.generate_name, "namespace": owner.namespace,
                         "labels": dict(owner.labels), "ownerReferences": [owner.reference()]},
            "addressType": address_type, "endpoints": [], "ports": [dict(p) for p in ports]}


@dataclass
class SlicePlan:
    """What to write: `create` slices have no name (generateName), `update` ones carry the stored
    metadata (resourceVersion included, for the optimistic update)."""

    create: list[dict[str, Any]] = field(default_factory=list)
    update: list[dict[str, Any]] = field(default_factory=list)
    delete: list[dict[str, Any]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.create or self.update or self.delete)


def _room(slice_: Obj, max_endpoints: int) -> int:
    return max_endpoints - len(slice_.get("endpoints") or ())


def _reconcile_ports(owner: SliceOwner, address_type: str, group: DesiredGroup, existing: Sequence[Obj], *,
                     max_endpoints: int, plan: SlicePlan) -> None:
    """Upstream reconcileByPortMapping for one port list (module notes, steps 1-3)."""
    desired = dict(sorted(group.endpoints.items()))
    labels = dict(owner.labels)
    updating: list[dict[str, Any]] = []
    unchanged: list[Obj] = []
    for current in sorted(existing, key=lambda s: _meta(s).get("name", "")):
        kept, changed = [], False
        for endpoint in current.get("endpoints") or ():
            wanted = desired.pop(endpoint_key(endpoint), None)
            if wanted is None:
                changed = True
                continue
            changed = changed or wanted != endpoint
            kept.append(wanted)
        if not kept:
            plan.delete.append(dict(current))
        elif changed or dict(EndpointSlice(current).metadata.labels) != labels:
            updated = deep_copy(dict(current))
            updated["endpoints"] = kept
            updated["metadata"]["labels"] = dict(labels)
            updating.append(updated)
        else:
            unchanged.append(current)
    queue = list(desired.values())
    for updated in sorted(updating, key=lambda s: -len(s["endpoints"])):
        take = min(_room(updated, max_endpoints), len(queue))
        if take > 0:
            updated["endpoints"] += queue[:take]
            del queue[:take]
    while queue:
        target: dict[str, Any] | None = None
        if len(queue) < max_endpoints and unchanged:
            fits = [s for s in unchanged if _room(s, max_endpoints) >= len(queue)]
            if fits:
                chosen = min(fits, key=lambda s: (_room(s, max_endpoints), _meta(s).get("name", "")))
                unchanged.remove(chosen)
                target = deep_copy(dict(chosen))
                target["metadata"]["labels"] = dict(labels)
                updating.append(target)
        if target is None:
            target = new_slice(owner, address_type, group.ports)
            plan.create.append(target)
        take = min(_room(target, max_endpoints), len(queue))
        target["endpoints"] = list(target.get("endpoints") or ()) + queue[:take]
        del queue[:take]
    plan.update += updating


def _is_placeholder(slice_: Obj) -> bool:
    return not slice_.get("endpoints") and not slice_.get("ports")


def place(owner: SliceOwner, desired: Mapping[str, Mapping[PortsKey, DesiredGroup]], existing: Sequence[Obj], *,
          max_endpoints: int, trigger_time: str | None, placeholder: bool) -> SlicePlan:
    """The plan for `owner`'s `existing` slices to hold the `desired` endpoints (by address type, then port
    list), module notes steps 1-4; `placeholder`: keep one empty slice when there is nothing to hold."""
    plan = SlicePlan()
    by_type: dict[str, list[Obj]] = {t: [] for t in desired}
    for current in existing:
        if owner.owns(current) and current.get("addressType") in by_type:
            by_type[current["addressType"]].append(current)
        else:
            plan.delete.append(dict(current))
    for address_type, groups in desired.items():
        by_ports: dict[PortsKey, list[Obj]] = {}
        for current in by_type[address_type]:
            by_ports.setdefault(ports_key(current.get("ports") or ()), []).append(current)
        for key, slices in by_ports.items():
            if key not in groups:
                plan.delete += [dict(s) for s in slices]
        for key, group in groups.items():
            _reconcile_ports(owner, address_type, group, by_ports.get(key, []), max_endpoints=max_endpoints,
                             plan=plan)
    if placeholder and desired:
        _keep_one_placeholder(owner, next(iter(desired)), existing, plan)
    _swap_create_delete(owner, plan)
    for written in plan.create + plan.update:
        annotations = dict(EndpointSlice(written).metadata.annotations)
        if trigger_time:
            annotations[TRIGGER_TIME_ANNOTATION] = trigger_time
        else:
            annotations.pop(TRIGGER_TIME_ANNOTATION, None)
        metadata = written["metadata"]
        if annotations:
            metadata["annotations"] = annotations
        else:
            metadata.pop("annotations", None)
    return plan


def reconcile(service: Obj, pods: Sequence[Obj], existing: Sequence[Obj], *, zones: Mapping[str, str],
              max_endpoints: int = MAX_ENDPOINTS_PER_SLICE, controller_name: str = CONTROLLER_NAME,
              trigger_time: str | None = None) -> SlicePlan:
    """The plan that brings the Service's `existing` slices (those labelled with its name and managed by
    `controller_name`) in line with its selected `pods` (module notes)."""
    desired = {address_type: desired_endpoints(service, pods, address_type, zones)
               for address_type in address_types(service)}
    return place(service_owner(service, controller_name), desired, existing, max_endpoints=max_endpoints,
                 trigger_time=trigger_time, placeholder=True)


def _keep_one_placeholder(owner: SliceOwner, address_type: str, existing: Sequence[Obj], plan: SlicePlan) -> None:
    """Upstream reconcile's placeholder: a Service whose slices would all go keeps (or gets) one empty
    slice of its primary address type, so readers can tell "no endpoints" from "not synced yet"."""
    if plan.create or len(existing) != len(plan.delete):
        return
    for index, doomed in enumerate(plan.delete):
        if (_is_placeholder(doomed) and owner.owns(doomed) and doomed.get("addressType") == address_type
                and dict(EndpointSlice(doomed).metadata.labels) == dict(owner.labels)):
            del plan.delete[index]  # the placeholder there is already the one wanted
            return
    plan.create.append({**new_slice(owner, address_type, []), "ports": []})


def _swap_create_delete(owner: SliceOwner, plan: SlicePlan) -> None:
    """Upstream finalize: rather than create one slice and delete another of this owner with the same
    address type (immutable), update the one to delete into the one to create."""
    index = 0
    while index < len(plan.delete) and plan.create:
        doomed, fresh = plan.delete[index], plan.create[-1]
        if owner.owns(doomed) and doomed.get("addressType") == fresh.get("addressType"):
            plan.create.pop()
            reused = deep_copy(fresh)
            reused["metadata"] = {**deep_copy(dict(_meta(doomed))), "labels": fresh["metadata"]["labels"]}
            reused["metadata"].pop("generateName", None)
            plan.update.append(reused)
            del plan.delete[index]
        else:
            index += 1
