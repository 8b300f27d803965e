"""The root CA publisher: every namespace has the ConfigMap `kube-root-ca.crt` whose `ca.crt` is the
cluster CA, so pods can verify the API server at kubernetes.default.svc; a ConfigMap edited or deleted
is put back.

Upstream: pkg/controller/certificates/rootcacertpublisher/publisher.go (a namespace add, an update to
Active, and an update or delete of a ConfigMap of that name queue the namespace; `syncNamespace`
creates the ConfigMap with the `kubernetes.io/description` annotation, or updates it when `data` differs
from exactly {"ca.crt": CA} or the annotation is empty; a create refused because the namespace is gone
or terminating is no error; one worker). The CA PEM comes from the controller manager's configuration
(the composition root reads the server's CA file), as upstream's --root-ca-file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.api.typed import ConfigMap, Namespace
from control.apimachinery.meta import deep_copy
from control.client.errors import NAMESPACE_TERMINATING_CAUSE, ApiError, NotFound, has_status_cause
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.shared.base import APIClient, Controller

CONFIGMAP_NAME = "kube-root-ca.crt"
CA_KEY = "ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
               "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
               "distributions of Kubernetes clusters.")


class RootCACertPublisher(Controller):
    name = "root-ca-cert-publisher"  # upstream's controller name (alias of root-ca-certificate-publisher-controller)

    def __init__(self, client: APIClient, informers: InformerFactory, *, root_ca: str, workers: int = 1,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None) -> None:
        super().__init__(client, informers, workers=workers, queue=queue, recorder=recorder)
        self.root_ca = root_ca
        namespaces = informers.informer("v1", "namespaces")
        configmaps = informers.informer("v1", "configmaps")
        self.configmaps = configmaps.lister()
        namespaces.add_event_handler(on_add=self.enqueue, on_update=self.on_namespace_update)
        configmaps.add_event_handler(on_update=self.on_configmap_update, on_delete=self.on_configmap)

    def on_namespace_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if (Namespace(new).status.phase or "Active") == "Active":
            self.enqueue(new)

    def on_configmap(self, configmap: Mapping[str, Any]) -> None:
        if configmap["metadata"]["name"] == CONFIGMAP_NAME:
            self.queue.add(configmap["metadata"]["namespace"])

    def on_configmap_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self.on_configmap(new)

    def sync(self, key: str) -> None:
        data = {CA_KEY: self.root_ca}
        current = self.configmaps.get(key, CONFIGMAP_NAME)
        if current is None:
            try:
                self.client.create(resource_path("v1", "configmaps", namespace=key), {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": CONFIGMAP_NAME, "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
                    "data": data})
            except NotFound:
                pass
            except ApiError as exc:  # AlreadyExists too: the cache is behind, the retry checks its content
                if not has_status_cause(exc, NAMESPACE_TERMINATING_CAUSE):
                    raise
            return
        annotations = ConfigMap(current).metadata.annotations
        if current.get("data") == data and annotations.get(DESCRIPTION_ANNOTATION):
            return
        wanted = deep_copy(current)
        wanted["data"] = data
        wanted["metadata"]["annotations"] = {**annotations, DESCRIPTION_ANNOTATION: DESCRIPTION}
        self.client.update(resource_path("v1", "configmaps", namespace=key, name=CONFIGMAP_NAME), wanted)
