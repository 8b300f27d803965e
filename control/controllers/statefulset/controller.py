"""The StatefulSet controller: pods with stable names, hostnames and claims, created, updated and removed
in ordinal order.

Upstream: pkg/controller/statefulset/stateful_set.go (informers on sets, pods and revisions; pod handlers
resolve the controller reference; `sync` claims pods with the ControllerRefManager), stateful_set_control.go
(`performUpdate`: revisions → one round → status → history truncation) and stateful_pod_control.go
(`CreateStatefulPod`: claims first, then the pod; the events "create Pod web-0 in StatefulSet web
successful", "create Claim data-web-0 Pod web-0 in StatefulSet web success"; claims' ownerReferences for
persistentVolumeClaimRetentionPolicy). The decisions are pods.py's; the revisions are
control/controllers/shared/history.py's ControllerRevisions.

Revisions (upstream getStatefulSetRevisions): the update revision is the set's template; an equal one that
is the newest is reused, an equal older one gets the next revision number (a rollback), else a new
revision is created. The current revision is the one `status.currentRevision` names, else the update one.

Departures: no expectations (upstream's StatefulSet controller has none either: stable names make a second
create an AlreadyExists); identity repair updates labels only (hostname and subdomain are immutable on a
pod here as upstream, so they come right only with a recreated pod); no periodic resync.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from control.api.typed import PersistentVolumeClaim, Pod, StatefulSet, TypedObject
from control.apimachinery.labels import SelectorError, selector_from_label_selector
from control.apimachinery.meta import controller_ref, deep_copy, key_of, new_controller_ref, split_key
from control.client.errors import ApiError, Conflict, NotFound
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.shared.base import APIClient, Controller
from control.controllers.shared.controller_ref_manager import ControllerRefManager
from control.controllers.shared.history import (
    History,
    equal_revision,
    find_equal_revisions,
    max_revision,
    new_controller_revision,
    sort_revisions,
)
from control.controllers.statefulset.pods import (
    API_VERSION,
    KIND,
    POD_INDEX_LABEL,
    POD_NAME_LABEL,
    Step,
    claim_owner_refs,
    claim_templates,
    is_member,
    new_claim,
    ordinal_of,
    plan_round,
    revision_data,
    revision_of,
    statefulset_status,
    template_of_revision,
)

log = logging.getLogger(__name__)

DEFAULT_WORKERS = 5  # upstream --concurrent-statefulset-syncs


def _now() -> datetime:
    return datetime.now(UTC)


class StatefulSetController(Controller):
    name = "statefulset"

    def __init__(self, client: APIClient, informers: InformerFactory, *, workers: int = DEFAULT_WORKERS,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None) -> None:
        recorder = recorder or EventRecorder(client, component="statefulset-controller")
        super().__init__(client, informers, workers=workers, queue=queue, recorder=recorder)
        sets = informers.informer(API_VERSION, "statefulsets")
        pods = informers.informer("v1", "pods")
        revisions = informers.informer(API_VERSION, "controllerrevisions")
        self.sets, self.pods = sets.lister(), pods.lister()
        self.claims = informers.informer("v1", "persistentvolumeclaims").lister()
        self.history = History(client, revisions.lister())
        sets.add_event_handler(on_add=self.enqueue, on_update=self.enqueue_update, on_delete=self.enqueue)
        pods.add_event_handler(on_add=self._pod_changed, on_update=lambda old, new: self._pod_changed(new, old),
                               on_delete=self._pod_changed)
        revisions.add_event_handler(on_add=self._pod_changed, on_update=lambda old, new: self._pod_changed(new),
                                    on_delete=lambda obj: None)

    def _pod_changed(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> None:
        """A pod (or revision) change wakes its controlling set; an orphan, every set that selects it."""
        namespace = TypedObject(obj).metadata.namespace or ""
        for candidate in (obj, old):
            ref = controller_ref(candidate) if candidate is not None else None
            if ref is not None:
                if ref.get("kind") == KIND:
                    self.queue.add(f"{namespace}/{ref.get('name')}")
                return
        for sts in self.sets.list(namespace):
            try:
                selector = selector_from_label_selector(StatefulSet(sts).spec.raw.get("selector"))
            except SelectorError:
                continue
            if not selector.empty and selector.matches(TypedObject(obj).metadata.labels):
                self.queue.add(key_of(sts))

    # -- sync -----------------------------------------------------------------------------------------------

    def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        sts = self.sets.get(namespace, name)
        if sts is None:
            return
        try:
            selector = selector_from_label_selector(StatefulSet(sts).spec.raw.get("selector"))
        except SelectorError as exc:
            self.recorder.event(sts, "Warning", "InvalidSelector", f"Invalid selector: {exc}")
            return
        reference = new_controller_ref(sts, api_version=API_VERSION, kind=KIND)

        def can_adopt() -> None:
            fresh = self.client.get(resource_path(API_VERSION, "statefulsets", namespace=namespace, name=name))
            if StatefulSet(fresh).metadata.uid != StatefulSet(sts).metadata.uid:
                raise RuntimeError(f"original StatefulSet {key} is gone")
            if StatefulSet(fresh).metadata.deletion_timestamp:
                raise RuntimeError(f"StatefulSet {key} is being deleted")

        manager = ControllerRefManager(self.client, owner=sts, reference=reference, selector=selector,
                                       child_api_version="v1", child_plural="pods", can_adopt=can_adopt)
        pods = [p for p in manager.claim(self.pods.list(namespace)) if is_member(sts, p)]
        revisions = self.history.list_controller_revisions(sts, selector)
        current, update, collision_count = self._revisions(sts, revisions)
        status = sts.get("status") or {}
        round_ = plan_round(sts, pods, current=(current["metadata"]["name"], template_of_revision(current)),
                            update=(update["metadata"]["name"], template_of_revision(update)),
                            current_replicas=int(status.get("currentReplicas") or 0), now=_now())
        error: Exception | None = None
        try:
            self._claim_references(sts, pods)
            for action in round_.actions:
                if action.step is Step.CREATE:
                    self._create(sts, dict(action.pod))
                elif action.step is Step.DELETE:
                    self._delete(sts, action.pod)
                else:
                    self._repair(sts, action.pod)
        except ApiError as exc:
            error = exc
        self._write_status(sts, current["metadata"]["name"], update["metadata"]["name"], collision_count)
        live = {revision_of(p) for p in self.pods.list(namespace) if is_member(sts, p)}
        live |= {current["metadata"]["name"], update["metadata"]["name"]}
        limit = StatefulSet(sts).spec.revision_history_limit
        self.history.truncate(self.history.list_controller_revisions(sts, selector), live=live,
                              limit=limit if isinstance(limit, int) else 10)
        if error is not None:
            raise error

    def _revisions(self, sts: Mapping[str, Any],
                   revisions: list[dict[str, Any]]) -> tuple[Mapping[str, Any], Mapping[str, Any], int]:
        """(current, update, collisionCount) as upstream getStatefulSetRevisions (module notes)."""
        ordered = sort_revisions(revisions)
        status = sts.get("status") or {}
        collision_count = int(status.get("collisionCount") or 0)
        template_labels = StatefulSet(sts).spec.template.metadata.labels
        candidate = new_controller_revision(sts, api_version=API_VERSION, kind=KIND, template_labels=template_labels,
                                            data=revision_data(sts), revision=max_revision(ordered) + 1,
                                            collision_count=collision_count)
        equal = find_equal_revisions(ordered, candidate)
        update: Mapping[str, Any]
        if equal and equal_revision(ordered[-1], equal[-1]):
            update = ordered[-1]
        elif equal:
            update = self.history.update_revision_number(equal[-1], candidate["revision"])
        else:
            update, collision_count = self.history.create_controller_revision(sts, candidate, collision_count)
        current = next((r for r in ordered if r["metadata"]["name"] == status.get("currentRevision")), update)
        return current, update, collision_count

    def _claim_references(self, sts: Mapping[str, Any], pods: list[Mapping[str, Any]]) -> None:
        """The claims of existing pods carry the ownerReferences the retention policy asks for."""
        namespace = StatefulSet(sts).metadata.namespace or ""
        for pod in pods:
            ordinal = ordinal_of(pod)
            for template in claim_templates(sts):
                name = (new_claim(sts, template, ordinal))["metadata"]["name"]
                claim = self.claims.get(namespace, name)
                if claim is None:
                    continue
                wanted = claim_owner_refs(sts, claim, pod, ordinal)
                if wanted != [ref.raw for ref in PersistentVolumeClaim(claim).metadata.owner_references]:
                    # an update, as upstream's claim owner sync: the controller's role may update claims
                    meta = {k: v for k, v in PersistentVolumeClaim(claim).metadata.raw.items()
                            if k != "ownerReferences"}
                    if wanted:
                        meta["ownerReferences"] = wanted
                    self.client.update(resource_path("v1", "persistentvolumeclaims", namespace=namespace, name=name),
                                       {**claim, "metadata": meta})

    def _create(self, sts: Mapping[str, Any], pod: dict[str, Any]) -> None:
        """CreateStatefulPod: the missing claims, then the pod."""
        namespace = StatefulSet(sts).metadata.namespace or ""
        set_name = StatefulSet(sts).metadata.name
        ordinal = ordinal_of(pod)
        for template in claim_templates(sts):
            claim = new_claim(sts, template, ordinal)
            claim_name = claim["metadata"]["name"]
            if self.claims.get(namespace, claim_name) is not None:
                continue
            try:
                self.client.create(resource_path("v1", "persistentvolumeclaims", namespace=namespace), claim)
            except Conflict:
                pass  # AlreadyExists: the informer had not seen it yet
            except ApiError as exc:
                self.recorder.event(sts, "Warning", "FailedCreate", f"create Claim {claim_name} for Pod "
                                    f"{pod['metadata']['name']} in StatefulSet {set_name} failed error: {exc}")
                raise
            self.recorder.event(sts, "Normal", "SuccessfulCreate", f"create Claim {claim_name} Pod "
                                f"{pod['metadata']['name']} in StatefulSet {set_name} success")
        try:
            self.client.create(resource_path("v1", "pods", namespace=namespace), pod)
        except Conflict:
            return
        except ApiError as exc:
            self.recorder.event(sts, "Warning", "FailedCreate", f"create Pod {pod['metadata']['name']} in "
                                f"StatefulSet {set_name} failed error: {exc}")
            raise
        self.recorder.event(sts, "Normal", "SuccessfulCreate",
                            f"create Pod {pod['metadata']['name']} in StatefulSet {set_name} successful")

    def _delete(self, sts: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        try:
            self.client.delete(resource_path("v1", "pods", namespace=meta.get("namespace"), name=meta.get("name")),
                               preconditions={"uid": meta.get("uid")})
        except NotFound:
            return
        self.recorder.event(sts, "Normal", "SuccessfulDelete",
                            f"delete Pod {meta.get('name')} in StatefulSet {StatefulSet(sts).metadata.name} "
                            "successful")

    def _repair(self, sts: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
        """Identity labels restored (the pod's name, ordinal); the spec is immutable here."""
        meta = pod.get("metadata") or {}
        labels = {POD_NAME_LABEL: meta.get("name"), POD_INDEX_LABEL: str(ordinal_of(pod))}
        self.client.patch(resource_path("v1", "pods", namespace=meta.get("namespace"), name=meta.get("name")),
                          {"metadata": {"labels": labels}})

    def _write_status(self, sts: Mapping[str, Any], current: str, update: str, collision_count: int) -> None:
        meta = sts.get("metadata") or {}
        pods = [p for p in self.pods.list(meta.get("namespace")) if is_member(sts, p)
                and (ref := Pod(p).metadata.controller_ref) is not None and ref.uid == meta.get("uid")]
        status = statefulset_status(sts, pods, current_revision=current, update_revision=update,
                                    collision_count=collision_count, now=_now())
        if status == sts.get("status"):
            return
        body = deep_copy(dict(sts))
        body["status"] = status
        try:
            self.client.update(resource_path(API_VERSION, "statefulsets", namespace=meta.get("namespace"),
                                             name=meta.get("name"), subresource="status"), body)
        except Conflict:
            self.queue.add(key_of(sts))
