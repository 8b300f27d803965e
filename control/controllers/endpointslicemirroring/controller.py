"""The EndpointSlice mirroring controller: Endpoints a user writes for a Service without a selector get
EndpointSlices too, so the kube-proxy (which reads only slices) serves them.

Upstream: pkg/controller/endpointslicemirroring (endpointslicemirroring_controller.go `syncEndpoints`,
`shouldMirror`; reconciler.go; utils.go `addressToEndpoint`, `newEndpointSlice`). Mirrored when the
Service exists and has no selector, and the Endpoints neither carries `endpointslice.kubernetes.io/
skip-mirror: "true"` (the API server's `kubernetes` Endpoints does) nor is a leader-election lock; otherwise
the mirrored slices are deleted.

- Desired endpoints (`mirror_desired`, pure): every address of every subset, ready from `addresses`, not
  ready from `notReadyAddresses` (`conditions.ready` only, as upstream), with its hostname, nodeName and
  targetRef; grouped by address type (from the IP; an address that is no IP is skipped) and by the
  subset's port list, at most `MAX_ENDPOINTS_PER_SUBSET` per subset (upstream
  `--mirroring-max-endpoints-per-subset` 1000; the rest are not mirrored).
- Placement is the EndpointSlice controller's (shared/endpointslice_reconciler.place, no placeholder):
  slices named `<endpoints>-…`, owned by the Endpoints (controller reference), labelled with its labels
  plus `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by:
  endpointslicemirroring-controller.k8s.io`, up to `MAX_ENDPOINTS_PER_SUBSET` endpoints each; the
  Endpoints' `last-change-trigger-time` annotation is carried over.
- The stale-cache guard and handlers are the EndpointSlice controller's (a slice it manages that changes
  or goes enqueues its Endpoints).

Departure: the Endpoints' other annotations are not copied onto the slices.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Mapping
from typing import Any

from control.api.typed import Endpoints, Service
from control.apimachinery.labels import selector_from_set
from control.apimachinery.meta import split_key
from control.client.errors import NotFound
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.shared.base import APIClient, Controller
from control.controllers.shared.endpoint_util import LEADER_ANNOTATION, TRIGGER_TIME_ANNOTATION
from control.controllers.shared.endpointslice_reconciler import (
    API_VERSION,
    MANAGED_BY_LABEL,
    SERVICE_NAME_LABEL,
    DesiredGroup,
    PortsKey,
    SliceOwner,
    SlicePlan,
    endpoint_key,
    place,
    ports_key,
)
from control.controllers.shared.endpointslice_tracker import SliceTracker, StaleInformerCache

log = logging.getLogger(__name__)

MIRRORING_CONTROLLER_NAME = "endpointslicemirroring-controller.k8s.io"
SKIP_MIRROR_LABEL = "endpointslice.kubernetes.io/skip-mirror"
MAX_ENDPOINTS_PER_SUBSET = 1000  # upstream --mirroring-max-endpoints-per-subset
DEFAULT_WORKERS = 5  # upstream --mirroring-concurrent-service-endpoint-syncs

Obj = Mapping[str, Any]


def should_mirror(endpoints: Obj) -> bool:
    """Upstream shouldMirror: not skip-mirror, not a leader-election lock."""
    meta = Endpoints(endpoints).metadata
    return meta.labels.get(SKIP_MIRROR_LABEL) != "true" and LEADER_ANNOTATION not in meta.annotations


def mirror_owner(endpoints: Obj) -> SliceOwner:
    meta = Endpoints(endpoints).metadata
    labels = {key: value for key, value in meta.labels.items() if key not in (SERVICE_NAME_LABEL, MANAGED_BY_LABEL)}
    labels[SERVICE_NAME_LABEL] = meta.name
    labels[MANAGED_BY_LABEL] = MIRRORING_CONTROLLER_NAME
    return SliceOwner("Endpoints", meta.name, meta.namespace, meta.uid, labels)


def _address_type(ip: str) -> str | None:
    try:
        return "IPv4" if ipaddress.ip_address(ip).version == 4 else "IPv6"
    except ValueError:
        return None


def _endpoint(address: Obj, ready: bool) -> dict[str, Any]:
    """Upstream addressToEndpoint."""
    endpoint: dict[str, Any] = {"addresses": [address["ip"]], "conditions": {"ready": ready}}
    if address.get("hostname"):
        endpoint["hostname"] = address["hostname"]
    if address.get("targetRef"):
        endpoint["targetRef"] = dict(address["targetRef"])
    if address.get("nodeName"):
        endpoint["nodeName"] = address["nodeName"]
    return endpoint


def mirror_desired(endpoints: Obj, *, max_per_subset: int = MAX_ENDPOINTS_PER_SUBSET
                   ) -> dict[str, dict[PortsKey, DesiredGroup]]:
    """The endpoints to mirror, by address type, then port list (module notes)."""
    desired: dict[str, dict[PortsKey, DesiredGroup]] = {}
    for subset in endpoints.get("subsets") or ():
        ports = [{"name": p.get("name") or "", "port": p.get("port"), "protocol": p.get("protocol") or "TCP",
                  **({"appProtocol": p["appProtocol"]} if p.get("appProtocol") else {})}
                 for p in subset.get("ports") or ()]
        addresses = [(a, True) for a in subset.get("addresses") or ()]
        addresses += [(a, False) for a in subset.get("notReadyAddresses") or ()]
        for address, ready in addresses[:max_per_subset]:
            address_type = _address_type(address.get("ip") or "")
            if address_type is None:
                continue
            group = desired.setdefault(address_type, {}).setdefault(ports_key(ports), DesiredGroup(ports))
            endpoint = _endpoint(address, ready)
            group.endpoints.setdefault(endpoint_key(endpoint), endpoint)
    return desired


class EndpointSliceMirroringController(Controller):
    """Registers its handlers on construction; `run(stop)` (the base's) syncs Endpoints keys until `stop`."""

    name = "endpointslicemirroring"  # upstream's --controllers alias (EndpointSliceMirroringController)
    max_retries = 15

    def __init__(self, client: APIClient, informers: InformerFactory, *, workers: int = DEFAULT_WORKERS,
                 max_endpoints_per_subset: int = MAX_ENDPOINTS_PER_SUBSET,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None) -> None:
        super().__init__(client, informers, workers=workers, queue=queue,
                         recorder=recorder or EventRecorder(client, component="endpoint-slice-mirroring-controller"))
        self.max_endpoints_per_subset = max_endpoints_per_subset
        self.tracker = SliceTracker()
        services, endpoints = informers.informer("v1", "services"), informers.informer("v1", "endpoints")
        slices = informers.informer(API_VERSION, "endpointslices")
        self.services, self.endpoints, self.slices = services.lister(), endpoints.lister(), slices.lister()
        for informer in (services, endpoints):
            informer.add_event_handler(on_add=self.enqueue, on_update=self.enqueue_update, on_delete=self.enqueue)
        slices.add_event_handler(on_add=self.on_slice, on_update=lambda old, new: self.on_slice(new),
                                 on_delete=self.on_slice_delete)

    @staticmethod
    def _key_of_slice(slice_: Obj) -> str | None:
        meta = slice_.get("metadata") or {}
        labels = meta.get("labels") or {}
        if labels.get(MANAGED_BY_LABEL) != MIRRORING_CONTROLLER_NAME or not labels.get(SERVICE_NAME_LABEL):
            return None
        return f"{meta.get('namespace', '')}/{labels[SERVICE_NAME_LABEL]}"

    def on_slice(self, slice_: Obj) -> None:
        if (key := self._key_of_slice(slice_)) is not None:
            self.queue.add(key)

    def on_slice_delete(self, slice_: Obj) -> None:
        if (key := self._key_of_slice(slice_)) is not None:
            self.tracker.observed_deletion(key, slice_)
            self.queue.add(key)

    def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        existing = self.slices.list(namespace, selector_from_set({SERVICE_NAME_LABEL: name,
                                                                  MANAGED_BY_LABEL: MIRRORING_CONTROLLER_NAME}))
        service, endpoints = self.services.get(namespace, name), self.endpoints.get(namespace, name)
        if (service is None or Service(service).spec.selector or endpoints is None
                or not should_mirror(endpoints)):
            self._apply(key, namespace, SlicePlan(delete=[dict(s) for s in existing]))
            if service is None or endpoints is None:
                self.tracker.forget(key)
            return
        if self.tracker.stale(key, existing):
            raise StaleInformerCache(f"EndpointSlice informer cache is out of date for {key}")
        trigger = Endpoints(endpoints).metadata.annotations.get(TRIGGER_TIME_ANNOTATION)
        plan = place(mirror_owner(endpoints), mirror_desired(endpoints, max_per_subset=self.max_endpoints_per_subset),
                     existing, max_endpoints=self.max_endpoints_per_subset, trigger_time=trigger, placeholder=False)
        self._apply(key, namespace, plan)

    def _apply(self, key: str, namespace: str, plan: SlicePlan) -> None:
        for doomed in plan.delete:
            try:
                self.client.delete(resource_path(API_VERSION, "endpointslices", namespace=namespace,
                                                 name=doomed["metadata"]["name"]))
            except NotFound:
                pass
            self.tracker.deleted(key, doomed)
        for updated in plan.update:
            self.tracker.wrote(key, self.client.update(resource_path(
                API_VERSION, "endpointslices", namespace=namespace, name=updated["metadata"]["name"]), updated))
        for created in plan.create:
            self.tracker.wrote(key, self.client.create(
                resource_path(API_VERSION, "endpointslices", namespace=namespace), created))
        if not plan.empty:
            log.debug("mirrored EndpointSlices of %s: %d created, %d updated, %d deleted", key, len(plan.create),
                      len(plan.update), len(plan.delete))
