"""The EndpointSlice controller: keeps the discovery.k8s.io/v1 EndpointSlices of every Service with a
selector, the objects the kube-proxy reads.

Upstream: pkg/controller/endpointslice/endpointslice_controller.go (`syncService`, the pod / service /
slice / node handlers, `--concurrent-service-endpoint-syncs` 5 workers, `--max-endpoints-per-slice` 100)
and staging k8s.io/endpointslice (reconciler.go, endpointslice_tracker.go): the same shape
as the EndpointController (handlers only enqueue *service* keys, workers sync one service at a time).

- Handlers: a Service change enqueues it; a pod change enqueues every Service of its namespace that
  selects its old or new labels (shared with the endpoints controller: shared/service_pods.py); a
  change to a slice this controller manages enqueues the Service named by its `kubernetes.io/service-name`
  label (so an edited or deleted slice is put back).
- `sync(key)`: Service gone, being deleted, without a selector or of type ExternalName → nothing (the
  slices of a deleted Service go with it through their ownerReference and the garbage collector, as
  upstream); otherwise the pure `shared/endpointslice_reconciler.reconcile` plans creates, updates and deletes
  over the cached slices labelled for the Service and managed by this controller, and they are written
  (deletes first, then updates, then creates — upstream's order, so a Service never has more slices than
  it needs for long).
- Stale cache (upstream EndpointSliceTracker): the controller remembers the generation of every slice it
  wrote and the uids it deleted, per Service. A sync whose cached slices are older than that (a slice
  written but not yet seen, a generation behind, a deleted one still there) raises `StaleInformerCache`
  and is retried with backoff, instead of planning against a cache that would make it create a slice
  twice.
- The `endpoints.kubernetes.io/last-change-trigger-time` of every written slice comes from its own
  TriggerTimeTracker (shared/trigger_time.py), computed on every sync, as upstream.

Departures: a node's zone is read when a pod's endpoint is built, but a node relabelled with another zone
does not by itself resync its Services (upstream's node handler does so only for its topology cache);
no topology hints; events only for failed writes (upstream's FailedToUpdateEndpointSlices).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from control.api.typed import EndpointSlice, Node, Pod, Service
from control.apimachinery.labels import selector_from_set
from control.apimachinery.meta import split_key
from control.client.errors import NotFound
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.shared.base import APIClient
from control.controllers.shared.endpointslice_reconciler import (
    API_VERSION,
    CONTROLLER_NAME,
    MANAGED_BY_LABEL,
    MAX_ENDPOINTS_PER_SLICE,
    SERVICE_NAME_LABEL,
    ZONE_LABEL,
    SlicePlan,
    reconcile,
)
from control.controllers.shared.endpointslice_tracker import SliceTracker, StaleInformerCache
from control.controllers.shared.service_pods import ServicePodController
from control.controllers.shared.trigger_time import TriggerTimeTracker, format_trigger_time

log = logging.getLogger(__name__)

DEFAULT_WORKERS = 5  # upstream --concurrent-service-endpoint-syncs
MAX_RETRIES = 15  # upstream endpointslice_controller.go maxRetries


def _service_key_of_slice(slice_: Mapping[str, Any]) -> str | None:
    meta = slice_.get("metadata") or {}
    labels = meta.get("labels") or {}
    if labels.get(MANAGED_BY_LABEL) != CONTROLLER_NAME or not labels.get(SERVICE_NAME_LABEL):
        return None
    return f"{meta.get('namespace', '')}/{labels[SERVICE_NAME_LABEL]}"


class EndpointSliceController(ServicePodController):
    """Registers its handlers on construction; `run(stop)` (the base's) syncs services until `stop`."""

    name = "endpointslice"  # upstream's --controllers alias (EndpointSliceController)
    max_retries = MAX_RETRIES

    def __init__(self, client: APIClient, informers: InformerFactory, *, workers: int = DEFAULT_WORKERS,
                 max_endpoints_per_slice: int = MAX_ENDPOINTS_PER_SLICE,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None) -> None:
        super().__init__(client, informers, workers=workers, queue=queue,
                         recorder=recorder or EventRecorder(client, component="endpoint-slice-controller"))
        self.max_endpoints_per_slice = max_endpoints_per_slice
        self.trigger_times = TriggerTimeTracker()
        self.tracker = SliceTracker()
        services, pods = informers.informer("v1", "services"), informers.informer("v1", "pods")
        slices, nodes = informers.informer(API_VERSION, "endpointslices"), informers.informer("v1", "nodes")
        self.services, self.pods, self.slices, self.nodes = (services.lister(), pods.lister(), slices.lister(),
                                                             nodes.lister())
        services.add_event_handler(on_add=self.enqueue, on_update=self.enqueue_update, on_delete=self.enqueue)
        pods.add_event_handler(on_add=self.on_pod_add, on_update=self.on_pod_update, on_delete=self.on_pod_add)
        slices.add_event_handler(on_add=self.on_slice, on_update=lambda old, new: self.on_slice(new),
                                 on_delete=self.on_slice_delete)

    # -- handlers (the pod handlers are ServicePodController's) -------------------------------------------

    def on_slice(self, slice_: Mapping[str, Any]) -> None:
        if (key := _service_key_of_slice(slice_)) is not None:
            self.queue.add(key)

    def on_slice_delete(self, slice_: Mapping[str, Any]) -> None:
        if (key := _service_key_of_slice(slice_)) is not None:
            self.tracker.observed_deletion(key, slice_)
            self.queue.add(key)

    # -- the worker ---------------------------------------------------------------------------------------

    def _zones(self, pods: Sequence[Mapping[str, Any]]) -> dict[str, str]:
        zones: dict[str, str] = {}
        for node_name in {Pod(pod).spec.node_name for pod in pods} - {""}:
            node = self.nodes.get(None, node_name)
            zone = Node(node).metadata.labels.get(ZONE_LABEL) if node is not None else None
            if zone:
                zones[node_name] = zone
        return zones

    def sync(self, key: str) -> None:
        """Bring the slices of the Service named `key` in line (module notes). Raises to retry."""
        namespace, name = split_key(key)
        service = self.services.get(namespace, name)
        if service is None:
            self.trigger_times.forget(namespace, name)
            self.tracker.forget(key)
            return
        spec = service.get("spec") or {}
        if (not spec.get("selector") or spec.get("type") == "ExternalName"
                or Service(service).metadata.deletion_timestamp):
            return
        pods = self.pods.list(namespace, selector_from_set(spec["selector"]))
        existing = self.slices.list(namespace, selector_from_set({SERVICE_NAME_LABEL: name,
                                                                  MANAGED_BY_LABEL: CONTROLLER_NAME}))
        if self.tracker.stale(key, existing):
            raise StaleInformerCache(f"EndpointSlice informer cache is out of date for {key}")
        trigger_time = self.trigger_times.compute(service, pods)
        plan = reconcile(service, pods, existing, zones=self._zones(pods),
                         max_endpoints=self.max_endpoints_per_slice,
                         trigger_time=format_trigger_time(trigger_time) if trigger_time else None)
        if not plan.empty:
            self._apply(key, service, plan)

    def _apply(self, key: str, service: Mapping[str, Any], plan: SlicePlan) -> None:
        namespace = Service(service).metadata.namespace
        try:
            for doomed in plan.delete:
                name = EndpointSlice(doomed).metadata.name
                try:
                    self.client.delete(resource_path(API_VERSION, "endpointslices", namespace=namespace, name=name))
                except NotFound:
                    pass
                self.tracker.deleted(key, doomed)
            for updated in plan.update:
                name = updated["metadata"]["name"]
                self.tracker.wrote(key, self.client.update(
                    resource_path(API_VERSION, "endpointslices", namespace=namespace, name=name), updated))
            for created in plan.create:
                self.tracker.wrote(key, self.client.create(
                    resource_path(API_VERSION, "endpointslices", namespace=namespace), created))
        except Exception as exc:
            self.recorder.event(service, "Warning", "FailedToUpdateEndpointSlices",
                                f"Error updating Endpoint Slices for Service {key}: {exc}")
            raise
        log.debug("EndpointSlices of %s: %d created, %d updated, %d deleted", key, len(plan.create),
                  len(plan.update), len(plan.delete))
