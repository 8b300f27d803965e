"""The API server's CRD controller: names, Established, serving, and cleanup of a deleted CRD's objects.

Upstream runs several controllers inside kube-apiserver's apiextensions server: the naming controller
(acceptedNames, NamesAccepted), the establishing controller (Established), the finalizer controller
(deletes every object of a CRD being deleted, then removes `customresourcecleanup.apiextensions.k8s.io`)
and the handler that serves what is Established. Here one `sync_all` pass does all of it over every CRD:
CRDs are few, and one pass over all of them is simpler to get right than per-key queues with
cross-CRD requeues (a name conflict resolves when the other CRD goes). The server runs a pass at start
(so a restarted server serves its custom resources before it listens) and again after every change the
watch cache reports under the CRDs' prefix, or one second later while a deletion is still under way.

Departure: upstream's establishing controller waits for every API server of an HA setup to serve the
CRD; here a CRD is Established as soon as its names are accepted. A second API server on the same etcd
follows the same CRDs through its own watch cache.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from control.api.typed import TypedObject
from control.apimachinery.meta import deep_copy, format_timestamp
from control.apiserver.apiextensions import definitions
from control.apiserver.controlplane import autoregister
from control.apiserver.crd.conversion import WebhookConverter
from control.apiserver.crd.strategies import CustomResourceStrategy
from control.apiserver.registry.store import DeleteOptions, Registry
from control.apiserver.resources import by_path
from control.apiserver.status import APIError

log = logging.getLogger(__name__)

CRDS = by_path(definitions.GROUP, "v1", "customresourcedefinitions")
PREFIX = "/registry/customresourcedefinitions/"


def _fingerprint(crd: Mapping[str, Any]) -> str:
    """What serving depends on: a change of it means serving anew."""
    return json.dumps([crd.get("spec"), (crd.get("status") or {}).get("acceptedNames"),
                       bool(TypedObject(crd).metadata.deletion_timestamp)], sort_keys=True)


def _creation(crd: Mapping[str, Any]) -> tuple[str, str]:
    metadata = crd.get("metadata") or {}
    return metadata.get("creationTimestamp", ""), metadata.get("name", "")


class SchemaPublisher(Protocol):
    """Where the schemas of served versions go for /openapi/v2 and /v3 (wt-openapi's OpenAPIDocuments,
    /work/notes/openapi-hook.md): one call per served version, again on a change, removal when it goes."""

    def add_custom(self, group: str, version: str, kind: str, schema: Mapping[str, Any], *, plural: str,
                   namespaced: bool, list_kind: str = "") -> None: ...

    def remove_custom(self, group: str, version: str, kind: str) -> None: ...


class CRDController:
    """One registry's CRDs, kept in step with what it serves (and, given a publisher, what OpenAPI
    documents). Not thread-safe: one pass at a time."""

    def __init__(self, registry: Registry, *, schemas: SchemaPublisher | None = None) -> None:
        assert CRDS is not None
        self.registry = registry
        self.schemas = schemas
        self._served: dict[str, str] = {}  # CRD name → fingerprint of what is served
        self._published: dict[str, list[tuple[str, str, str]]] = {}  # CRD name → (group, version, kind)
        self._registered: list[tuple[str, str]] | None = None  # group-versions with an APIService
        self._converter = WebhookConverter(registry, endpoint_routing=registry.endpoint_routing)

    def sync_all(self) -> bool:
        """One pass over every CRD; returns whether another pass is needed soon (deletions under way,
        lost races)."""
        assert CRDS is not None
        crds = sorted(self.registry.list_all(CRDS, ""), key=_creation)  # the older CRD keeps a contested name
        again = False
        for index, crd in enumerate(crds):
            try:
                crds[index], retry = self._sync(crd, crds)
                again |= retry
            except APIError as exc:
                log.info("CRD %s: %s; trying again", crd["metadata"]["name"], exc.status.get("message"))
                again = True
        present = {crd["metadata"]["name"] for crd in crds}
        for name in [n for n in self._served if n not in present]:
            self._stop(name)
        self._api_services()
        return again

    def _api_services(self) -> None:
        """upstream crdregistration_controller: an APIService per served custom group-version (Local,
        automanaged "true", priority 1000/100), deleted when no CRD serves it any more."""
        served = sorted({(r.group, r.version) for r in self.registry.resources.custom()})
        if served == self._registered:
            return
        autoregister.register(self.registry, served, now=format_timestamp(self.registry.clock()),
                              managed=autoregister.SYNCED, priority=autoregister.CRD_PRIORITY)
        autoregister.unregister_synced(self.registry, served)
        self._registered = served

    def stop(self) -> None:
        for name in list(self._served):
            self._stop(name)
        self.registry.stop_serving_custom()

    def _stop(self, name: str) -> None:
        self.registry.stop_serving_custom(name)
        self._served.pop(name, None)
        self._publish(name, [])

    def _publish(self, name: str, versions: list[definitions.Version], list_kind: str = "") -> None:
        if self.schemas is None:
            return
        wanted = {(v.resource.group, v.resource.version, v.resource.kind): v for v in versions}
        for key in self._published.pop(name, []):
            if key not in wanted:
                self.schemas.remove_custom(*key)
        for (group, version, kind), served in wanted.items():
            self.schemas.add_custom(group, version, kind, served.schema, plural=served.resource.plural,
                                    namespaced=served.resource.namespaced, list_kind=list_kind)
        if wanted:
            self._published[name] = list(wanted)

    def _serve(self, crd: Mapping[str, Any]) -> None:
        name = crd["metadata"]["name"]
        fingerprint = _fingerprint(crd)
        if self._served.get(name) == fingerprint:
            return
        versions = definitions.served_versions(crd)
        if versions:
            self.registry.serve_custom(name, [CustomResourceStrategy(v, converter=self._converter) for v in versions])
            self._served[name] = fingerprint
            self._publish(name, versions, versions[0].list_kind)
            log.info("serving %s (versions %s)", name, ", ".join(v.resource.version for v in versions))
        else:
            self._stop(name)

    def _write_status(self, crd: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any]:
        assert CRDS is not None
        if wanted == (crd.get("status") or {}):
            return crd
        updated, _ = self.registry.update(CRDS, "", crd["metadata"]["name"], {**crd, "status": wanted},
                                          subresource="status")
        return updated

    def _sync(self, crd: dict[str, Any], crds: list[dict[str, Any]]) -> tuple[dict[str, Any], bool]:
        now = format_timestamp(self.registry.clock())
        if crd["metadata"].get("deletionTimestamp"):
            return self._finalize(crd, now)
        others = [other for other in crds if other is not crd]
        crd = self._write_status(crd, definitions.desired_status(crd, others, now=now))
        if definitions.is_established(crd):
            self._serve(crd)
        else:
            self._stop(crd["metadata"]["name"])
        return crd, False

    def _finalize(self, crd: dict[str, Any], now: str) -> tuple[dict[str, Any], bool]:
        """Upstream crd_finalizer.go: Terminating, delete every object (new ones are refused meanwhile),
        then drop the finalizer once none is left."""
        assert CRDS is not None
        name = crd["metadata"]["name"]
        if definitions.CLEANUP_FINALIZER not in (crd["metadata"].get("finalizers") or []):
            self._stop(name)
            return crd, False
        if definitions.is_established(crd):
            self._serve(crd)  # still served (get, list, delete), creates refused
        versions = definitions.served_versions(crd)
        crd = self._write_status(crd, definitions.terminating_status(
            crd, reason="InstanceDeletionInProgress", message="CustomResource deletion is in progress", now=now))
        if versions and name in self._served:
            resource = versions[0].resource
            left = 0
            for obj in self.registry.list_all(resource, ""):
                metadata = obj["metadata"]
                try:
                    _, removed = self.registry.delete(resource, metadata.get("namespace", ""), metadata["name"],
                                                      DeleteOptions())
                    left += not removed
                except APIError as exc:
                    if exc.code != 404:
                        raise
            if left:
                crd = self._write_status(crd, definitions.terminating_status(
                    crd, reason="InstanceDeletionCheck", now=now,
                    message=f"could not confirm zero CustomResources remaining: {left} left"))
                return crd, True
        crd = self._write_status(crd, definitions.terminating_status(
            crd, reason="InstanceDeletionCompleted", message="removed all instances", now=now, status="False"))
        finished = deep_copy(crd)
        finished["metadata"]["finalizers"] = [f for f in crd["metadata"].get("finalizers") or []
                                              if f != definitions.CLEANUP_FINALIZER]
        self.registry.update(CRDS, "", name, finished)
        self._stop(name)
        log.info("CRD %s: every object deleted, finalizer removed", name)
        return finished, False
