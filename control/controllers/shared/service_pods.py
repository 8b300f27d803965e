"""The pod handlers of the controllers that follow a Service's selected pods (Endpoints, EndpointSlices):
a pod's change maps to the keys of the Services that select it.

Upstream: staging k8s.io/endpointslice util/controller_utils.go (`GetPodServiceMemberships`,
`GetServicesToUpdateOnPodChange`), which both upstream controllers call from their pod handlers.
Departure: every pod update with a new resourceVersion enqueues its Services (upstream first asks
whether anything an endpoint shows changed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.api.typed import Pod, TypedObject
from control.apimachinery.meta import key_of
from control.client.store import Lister
from control.controllers.shared.base import Controller
from control.controllers.shared.endpoint_util import selects


class ServicePodController(Controller):
    """The pod handlers the Endpoints and EndpointSlice controllers share: a pod's change maps to the keys of
    the Services that select it, before and after (a relabelled pod leaves one Service for another).
    A subclass sets `services`, a lister of the Services informer, before registering the handlers."""

    services: Lister

    def services_of(self, pod: Mapping[str, Any]) -> set[str]:
        namespace = Pod(pod).metadata.namespace
        return {key_of(service) for service in self.services.list(namespace) if selects(service, pod)}

    def on_pod_add(self, pod: Mapping[str, Any]) -> None:
        """Also the delete handler: the pod's services must drop (or add) its address."""
        for key in self.services_of(pod):
            self.queue.add(key)

    def on_pod_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if TypedObject(old).metadata.resource_version == TypedObject(new).metadata.resource_version:
            return  # a periodic resync: nothing changed
        for key in self.services_of(old) | self.services_of(new):
            self.queue.add(key)
