"""What a Service's Endpoints should hold: pure functions from (service, pods, current Endpoints) to the
object to write, so every rule is tested on tables without an API server.

Upstream: pkg/controller/endpoint/endpoints_controller.go (`syncService` step 2-3: for each selected pod
`podToEndpointAddressForService`, `podutil.FindPort` per service port, `addEndpointSubset`, then
`endpoints.RepackSubsets`; the "nothing changed" test before writing), staging k8s.io/endpointslice
util/controller_utils.go (`ShouldPodBeInEndpoints`: terminal pods, pods without an IP and — unless the
Service publishes not-ready addresses — pods being deleted are left out) and pkg/api/v1/endpoints/util.go
(`RepackSubsets`).

Rules:
- A pod is ready when its `Ready` condition is "True"; `spec.publishNotReadyAddresses` makes every
  included pod ready (and keeps terminating pods, as upstream's includeTerminating).
- A service port's `targetPort` is a number, or the name of a container port of the same protocol; a pod
  without that named port is left out of that port only. No targetPort means the service port itself.
- A headless Service without ports still gets its addresses (a subset with no ports).
- Repacking: every (port, address) pair is collected, an address ready for a port in any subset is ready
  for it; ports served by exactly the same addresses (with the same readiness) share one subset.

Wire objects stay dicts. Keys are only written when non-empty, as Go's `omitempty` does, so an object
read back from the API server compares equal to a freshly computed one. Order is deterministic:
addresses by IP (string order, as upstream's LessEndpointAddress) then pod UID; ports by (name, port,
protocol); subsets by their first address and ports. Departure: upstream orders ports and subsets by a
hash of the object, which is deterministic but not readable; only the order differs, not the content.

Capacity (upstream `maxCapacity`, `truncateEndpoints`, `capacityAnnotationSetCorrectly` in
endpoints_controller.go): an Endpoints holds at most 1,000 addresses, ready and not-ready counted together.
Above that, ready addresses are kept first: if the ready ones alone exceed the cap, every not-ready address
goes and the cap is shared among the subsets' ready lists; otherwise all ready addresses stay and what is
left of the cap is shared among the not-ready lists. Each subset, in order, gets ceil(its count / total ×
budget), limited to what the earlier subsets left, and keeps the first addresses of its (sorted) list; the
object is annotated `endpoints.kubernetes.io/over-capacity: truncated`, and the annotation is removed once
under the cap again. Departures: the share is computed in integers (upstream rounds a float, which can
only differ by float error), and "nothing changed" compares the *truncated* subsets and wants the
annotation to match, where upstream compares the untruncated ones and so rewrites an over-capacity object
on every sync; a subset left with no address at all is dropped (upstream keeps it with its ports only, which
carries no endpoint).

`endpoints.kubernetes.io/last-change-trigger-time` (shared/trigger_time.py computes it) is written with
every create or update and removed when there is no trigger time, as upstream; it takes no part in the
"nothing changed" comparison, so it never causes a write by itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from control.api.disruption import is_pod_ready
from control.api.typed import Endpoints, Pod, Service
from control.controllers.shared.endpoint_util import (
    HEADLESS_LABEL,
    TRIGGER_TIME_ANNOTATION,
    find_port,
    service_hostname,
    should_pod_be_in_endpoints,
)

MAX_CAPACITY = 1000  # upstream maxCapacity: addresses (ready + not ready) per Endpoints
OVER_CAPACITY_ANNOTATION = "endpoints.kubernetes.io/over-capacity"  # upstream v1.EndpointsOverCapacity
TRUNCATED = "truncated"  # its only value

Obj = Mapping[str, Any]


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: Obj) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def pod_address(pod: Obj, service: Obj) -> dict[str, Any]:
    """Upstream podToEndpointAddressForService: IP, node, a reference to the pod and its hostname when
    `service_hostname` says so."""
    meta, spec = _meta(pod), _spec(pod)
    status = Pod(pod).status
    address: dict[str, Any] = {"ip": status.pod_ip or (status.pod_ips[0].ip if status.pod_ips else "")}
    if (hostname := service_hostname(pod, service)) is not None:
        address["hostname"] = hostname
    if spec.get("nodeName"):
        address["nodeName"] = spec["nodeName"]
    address["targetRef"] = {"kind": "Pod", "namespace": meta.get("namespace", ""), "name": meta.get("name", ""),
                            "uid": meta.get("uid", "")}
    return address


def endpoint_port(service_port: Obj, number: int) -> dict[str, Any]:
    port: dict[str, Any] = {}
    if service_port.get("name"):
        port["name"] = service_port["name"]
    port["port"] = number
    port["protocol"] = service_port.get("protocol") or "TCP"
    if service_port.get("appProtocol"):
        port["appProtocol"] = service_port["appProtocol"]
    return port


def compute_subsets(service: Obj, pods: Iterable[Obj]) -> list[dict[str, Any]]:
    """The repacked subsets for `service` over the candidate `pods` (already selected by its selector)."""
    spec = _spec(service)
    publish_not_ready = bool(spec.get("publishNotReadyAddresses"))
    ports = spec.get("ports") or []
    headless = spec.get("clusterIP") == "None"
    raw: list[dict[str, Any]] = []
    for pod in pods:
        if not should_pod_be_in_endpoints(pod, include_terminating=publish_not_ready):
            continue
        address = pod_address(pod, service)
        key = "addresses" if publish_not_ready or is_pod_ready(pod) else "notReadyAddresses"
        if not ports:
            if headless:
                raw.append({key: [address]})
            continue
        for service_port in ports:
            number = find_port(pod, service_port)
            if number is not None:
                raw.append({key: [address], "ports": [endpoint_port(service_port, number)]})
    return repack_subsets(raw)


_NO_PORTS = ()  # the sentinel port for subsets without ports (upstream uses Port: -1)


def _freeze(obj: Obj) -> tuple[Any, ...]:
    return tuple(sorted((k, _freeze(v) if isinstance(v, Mapping) else v) for k, v in obj.items()))


def _address_key(address: Obj) -> tuple[str, str]:
    """Upstream addressKey: the IP and the target's UID (the same IP may come from two pods)."""
    return address.get("ip", ""), (address.get("targetRef") or {}).get("uid", "")


def _port_order(port: Obj) -> tuple[str, int, str]:
    return port.get("name", ""), int(port.get("port", 0)), port.get("protocol", "")


@dataclass(frozen=True)
class _Group:
    ready: tuple[tuple[str, str], ...]
    not_ready: tuple[tuple[str, str], ...]


def repack_subsets(subsets: Sequence[Obj]) -> list[dict[str, Any]]:
    """Upstream RepackSubsets: one subset per distinct set of (address, readiness) serving some ports."""
    addresses: dict[tuple[str, str], Obj] = {}
    ports: dict[tuple[Any, ...], Obj | None] = {}
    served: dict[tuple[Any, ...], dict[tuple[str, str], bool]] = {}
    for subset in subsets:
        subset_ports = subset.get("ports") or [None]
        for port in subset_ports:
            port_key = _freeze(port) if port is not None else _NO_PORTS
            ports.setdefault(port_key, port)
            readiness = served.setdefault(port_key, {})
            for ready, field in ((True, "addresses"), (False, "notReadyAddresses")):
                for address in subset.get(field) or ():
                    key = _address_key(address)
                    addresses.setdefault(key, address)
                    readiness[key] = readiness.get(key, False) or ready
    groups: dict[_Group, list[Obj | None]] = {}
    for port_key, readiness in served.items():
        group = _Group(tuple(sorted(k for k, r in readiness.items() if r)),
                       tuple(sorted(k for k, r in readiness.items() if not r)))
        if group.ready or group.not_ready:
            groups.setdefault(group, []).append(ports[port_key])
    result = []
    for group, group_ports in groups.items():
        packed: dict[str, Any] = {}
        if group.ready:
            packed["addresses"] = [dict(addresses[k]) for k in group.ready]
        if group.not_ready:
            packed["notReadyAddresses"] = [dict(addresses[k]) for k in group.not_ready]
        real_ports = sorted((dict(p) for p in group_ports if p is not None), key=_port_order)
        if real_ports:
            packed["ports"] = real_ports
        result.append(packed)
    return sorted(result, key=_subset_order)


def _subset_order(subset: Obj) -> tuple[tuple[str, str], tuple[tuple[str, int, str], ...]]:
    first = (subset.get("addresses") or subset.get("notReadyAddresses") or [{}])[0]
    return _address_key(first), tuple(_port_order(p) for p in subset.get("ports") or ())


def endpoints_labels(service: Obj) -> dict[str, str]:
    """The service's labels, plus upstream's headless marker for clusterIP None."""
    labels = dict(Service(service).metadata.labels)
    if _spec(service).get("clusterIP") == "None":
        labels[HEADLESS_LABEL] = ""
    return labels


def truncate_subsets(subsets: Sequence[Obj], *,
                     capacity: int = MAX_CAPACITY) -> tuple[list[dict[str, Any]], bool]:
    """The subsets cut down to `capacity` addresses (module notes) and whether anything was cut."""
    total_ready = sum(len(subset.get("addresses") or ()) for subset in subsets)
    total_not_ready = sum(len(subset.get("notReadyAddresses") or ()) for subset in subsets)
    if total_ready + total_not_ready <= capacity:
        return [dict(subset) for subset in subsets], False
    cut_ready = total_ready > capacity
    field = "addresses" if cut_ready else "notReadyAddresses"
    budget = capacity if cut_ready else capacity - total_ready
    total = total_ready if cut_ready else total_not_ready
    left = budget
    result = []
    for subset in subsets:
        kept = dict(subset)
        if cut_ready:
            kept.pop("notReadyAddresses", None)
        listed = subset.get(field) or []
        share = list(listed[:min(-(-len(listed) * budget // total), left)])  # ceil of the proportional share
        if share:
            kept[field] = share
        else:
            kept.pop(field, None)
        left -= len(share)
        if kept.get("addresses") or kept.get("notReadyAddresses"):
            result.append(kept)
    return result, True


def _capacity_annotation_correct(annotations: Mapping[str, str], truncated: bool) -> bool:
    return annotations.get(OVER_CAPACITY_ANNOTATION) == TRUNCATED if truncated else (
        OVER_CAPACITY_ANNOTATION not in annotations)


def desired_endpoints(service: Obj, subsets: list[dict[str, Any]], current: Obj | None, *,
                      trigger_time: str | None = None) -> dict[str, Any] | None:
    """The Endpoints to write for `service`, or None when `current` already says the same (same subsets
    after truncation, labels and over-capacity annotation; compared as values, so an unchanged pod never
    causes a write, and neither does a new `trigger_time` alone). Keeps the current object's other
    metadata (annotations, resourceVersion for the optimistic update)."""
    subsets, truncated = truncate_subsets(subsets)
    labels = endpoints_labels(service)
    current_annotations = dict(Endpoints(current).metadata.annotations) if current is not None else {}
    if current is not None and (current.get("subsets") or []) == subsets and (
            dict(Endpoints(current).metadata.labels) == labels) and (
            _capacity_annotation_correct(current_annotations, truncated)):
        return None
    meta = _meta(service)
    metadata: dict[str, Any] = dict(_meta(current)) if current is not None else {
        "name": meta.get("name"), "namespace": meta.get("namespace")}
    if labels:
        metadata["labels"] = labels
    else:
        metadata.pop("labels", None)
    annotations = current_annotations
    over_capacity = TRUNCATED if truncated else None
    for key, value in ((TRIGGER_TIME_ANNOTATION, trigger_time), (OVER_CAPACITY_ANNOTATION, over_capacity)):
        if value:
            annotations[key] = value
        else:
            annotations.pop(key, None)
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    wanted: dict[str, Any] = {"apiVersion": "v1", "kind": "Endpoints", "metadata": metadata}
    if subsets:  # omitempty, as upstream: no pods → no `subsets` key
        wanted["subsets"] = subsets
    return wanted
