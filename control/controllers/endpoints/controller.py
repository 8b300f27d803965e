"""The endpoints controller: keeps one Endpoints object per Service with a selector, listing the selected
pods' addresses and ports.

Upstream: pkg/controller/endpoint/endpoints_controller.go (EndpointController: service and
pod informers fill local caches, handlers push only *service* keys into a work queue — a pod change is
mapped to the services selecting it, `getPodServiceMemberships` — and 5 workers sync one service each).

Shape (the controller base, control/controllers/shared/base.py):
- Shared informers (control/client/informer.py) on services, pods and endpoints; every handler only
  enqueues "namespace/name" keys into a rate-limited work queue (control/client/workqueue.py), so a burst
  of pod changes for one service is one sync, and a service is never synced by two workers at once.
- A pod add/update/delete enqueues every service of its namespace whose selector matches its old or new
  labels (upstream `GetPodServiceMemberships` on both). An Endpoints delete enqueues its key, so a
  deleted object is written again; once the caches have synced (`on_synced`), every Endpoints key is
  enqueued once (upstream `checkLeftoverEndpoints`), so Endpoints of Services deleted while no controller ran go too.
- `sync(key)`: Service gone → delete its Endpoints (404 is fine); no selector (or ExternalName) → leave
  the Endpoints alone, they are the user's (the `kubernetes` Service's are the API server's,
  control/apiserver/controlplane/master_endpoints.py); otherwise compute the subsets (subsets.py, pure: with
  upstream's 1,000-address truncation and `over-capacity` annotation) and the last-change trigger time
  (shared/trigger_time.py, computed on every sync as upstream, so its memory stays current), and
  create or update only when the subsets, labels or over-capacity annotation differ; the trigger-time
  annotation rides along with a write but never causes one. The update carries the cached resourceVersion,
  so a stale cache gets 409 and the key is retried with backoff (upstream behaviour: the error requeues;
  after 15 retries the key is dropped until the next change).

Not done (upstream has them): EndpointSlices, and skipping pod updates that change nothing an Endpoints
shows (here every pod update of a selected pod costs one cheap in-memory sync).
"""

from __future__ import annotations

import logging

from control.api.typed import Endpoints
from control.apimachinery.labels import selector_from_set
from control.apimachinery.meta import split_key
from control.client.errors import NotFound
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.endpoints.subsets import compute_subsets, desired_endpoints
from control.controllers.shared.base import APIClient
from control.controllers.shared.endpoint_util import LEADER_ANNOTATION
from control.controllers.shared.service_pods import ServicePodController
from control.controllers.shared.trigger_time import TriggerTimeTracker, format_trigger_time

log = logging.getLogger(__name__)

DEFAULT_WORKERS = 5  # upstream --concurrent-endpoint-syncs
MAX_RETRIES = 15  # upstream endpoints_controller.go maxRetries


class EndpointsController(ServicePodController):
    """Registers its handlers on construction; `run(stop)` (the base's) syncs services until `stop` is set."""

    name = "endpoint"  # upstream's controller name (--controllers) and the events' "endpoint-controller"
    max_retries = MAX_RETRIES

    def __init__(self, client: APIClient, informers: InformerFactory, *, workers: int = DEFAULT_WORKERS,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None) -> None:
        super().__init__(client, informers, workers=workers, queue=queue, recorder=recorder)
        self.trigger_times = TriggerTimeTracker()
        services, pods, endpoints = (informers.informer("v1", "services"), informers.informer("v1", "pods"),
                                     informers.informer("v1", "endpoints"))
        self.services, self.pods, self.endpoints = services.lister(), pods.lister(), endpoints.lister()
        services.add_event_handler(on_add=self.enqueue, on_update=self.enqueue_update, on_delete=self.enqueue)
        pods.add_event_handler(on_add=self.on_pod_add, on_update=self.on_pod_update, on_delete=self.on_pod_add)
        endpoints.add_event_handler(on_delete=self.enqueue)

    # -- the worker ----------------------------------------------------------------------------------------

    def sync(self, key: str) -> None:
        """Bring the Endpoints named `key` in line with its Service (module notes). Raises to retry."""
        namespace, name = split_key(key)
        path = resource_path("v1", "endpoints", namespace=namespace, name=name)
        service = self.services.get(namespace, name)
        if service is None:
            self.trigger_times.forget(namespace, name)
            current = self.endpoints.get(namespace, name)
            if current is not None and LEADER_ANNOTATION in Endpoints(current).metadata.annotations:
                return  # a lock object, not a Service's endpoints
            try:
                self.client.delete(path)
                log.info("deleted Endpoints %s: its Service is gone", key)
            except NotFound:
                pass
            return
        spec = service.get("spec") or {}
        if not spec.get("selector") or spec.get("type") == "ExternalName":
            return
        pods = self.pods.list(namespace, selector_from_set(spec["selector"]))
        trigger_time = self.trigger_times.compute(service, pods)
        current = self.endpoints.get(namespace, name)
        wanted = desired_endpoints(service, compute_subsets(service, pods), current,
                                   trigger_time=format_trigger_time(trigger_time) if trigger_time else None)
        if wanted is None:
            return
        if current is None:
            self.client.create(resource_path("v1", "endpoints", namespace=namespace), wanted)
            log.debug("created Endpoints %s", key)
        else:
            self.client.update(path, wanted)
            log.debug("updated Endpoints %s", key)

    def on_synced(self) -> None:
        """Enqueue every existing Endpoints once, so those of Services deleted while no controller ran go."""
        for endpoints in self.endpoints.list():
            self.enqueue(endpoints)
