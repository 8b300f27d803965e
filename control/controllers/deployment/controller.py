"""The Deployment controller: turns a Deployment into ReplicaSets, one per pod template, labelled and
selected by the template's pod-template-hash, and moves replicas from the old ones to the new one by its
strategy (RollingUpdate within maxSurge/maxUnavailable, or Recreate), keeping revisions, history and the
Deployment's status and conditions. The ReplicaSet controller makes the pods.

Upstream: pkg/controller/deployment/deployment_controller.go (handlers, getReplicaSetsForDeployment with
ControllerRefManager adopt/release, getPodMapForDeployment, syncDeployment's order: selector-all check,
deletion → status only, paused conditions, paused → sync, deprecated rollbackTo → rollback, scaling
event → sync, else the strategy), sync.go (sync, getNewReplicaSet, scaleReplicaSet, cleanupDeployment,
syncDeploymentStatus), rolling.go, recreate.go, rollback.go, progress.go
(from `kubectl create deployment` to ReplicaSets).

The decisions are pure: util.py (hash, new/old sets, revisions, annotations, fenceposts),
rollout.py (the scale steps), status.py (status and conditions). This module
reads the listers, applies the steps through the API in upstream's order and records the events.

`kubectl rollout undo` patches the Deployment's template itself (kubectl's DeploymentRollbacker: JSON
patch of /spec/template and /metadata/annotations from the ReplicaSet of that revision), and `rollout
restart` patches a restartedAt annotation into the template: both are template changes to this
controller. The deprecated `deprecated.deployment.rollback.to` annotation (what extensions/v1beta1
rollbackTo became) is honoured as upstream's rollback.go does.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from control.api.typed import Deployment, Pod, ReplicaSet, TypedObject
from control.apimachinery.labels import SelectorError, selector_from_label_selector
from control.apimachinery.meta import (
    annotations_of,
    controller_ref,
    deep_copy,
    key_of,
    new_controller_ref,
    split_key,
)
from control.client.errors import NAMESPACE_TERMINATING_CAUSE, ApiError, Conflict, NotFound, has_status_cause
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.deployment import rollout, util
from control.controllers.deployment import status as dstatus
from control.controllers.shared.base import APIClient, Controller
from control.controllers.shared.helpers import DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY, compute_hash, status_condition
from control.util.clock import Clock, RealClock

log = logging.getLogger(__name__)

DEFAULT_WORKERS = 5  # upstream --concurrent-deployment-syncs
MAX_RETRIES = 15  # upstream maxRetries: then the key waits for its next change
API_VERSION, KIND = "apps/v1", "Deployment"
HASH_LABEL = DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY

Obj = Mapping[str, Any]


class AdoptionError(Exception):
    """The Deployment may not adopt: it is gone or being deleted (the sync is retried)."""


@dataclass
class _State:
    """The Deployment as last written in this sync: every write returns a newer object, which the next
    write must carry (its resourceVersion)."""

    d: dict[str, Any]
    rss: list[dict[str, Any]] = field(default_factory=list)  # the claimed ReplicaSets, as last written

    def remember(self, rs: dict[str, Any]) -> None:
        """A ReplicaSet just written: later steps of this sync must carry its new resourceVersion."""
        uid = util.uid_of(rs)
        self.rss[:] = [rs if util.uid_of(known) == uid else known for known in self.rss]

    @property
    def namespace(self) -> str:
        return str(self.d["metadata"]["namespace"])

    @property
    def name(self) -> str:
        return str(self.d["metadata"]["name"])


def _rs_view(rs: Obj) -> rollout.RS:
    return rollout.RS(name=util.name_of(rs), replicas=util.spec_replicas(rs),
                      available=util.status_int(rs, "availableReplicas"),
                      created=ReplicaSet(rs).metadata.creation_timestamp,
                      desired_annotation=util.int_annotation(rs, util.DESIRED_REPLICAS_ANNOTATION),
                      max_annotation=util.int_annotation(rs, util.MAX_REPLICAS_ANNOTATION))


def _deployment_view(d: Obj) -> rollout.Deployment:
    return rollout.Deployment(replicas=util.spec_replicas(d), max_surge=util.max_surge(d),
                              max_unavailable=util.max_unavailable(d), rolling=util.is_rolling_update(d),
                              status_replicas=util.status_int(d, "replicas"))


def _labels(obj: Obj) -> Mapping[str, str]:
    return TypedObject(obj).metadata.labels


def _rollback_to(d: Obj) -> int | None:
    """The revision of the deprecated rollbackTo annotation (getRollbackTo); None if absent or invalid."""
    value = Deployment(d).metadata.annotations.get(util.DEPRECATED_ROLLBACK_TO, "")
    try:
        return int(value) if value else None
    except ValueError:
        return None


class DeploymentController(Controller):
    """Registers its handlers on construction; `run(stop)` (the base's) syncs Deployments until `stop`."""

    name = "deployment"
    max_retries = MAX_RETRIES

    def __init__(self, client: APIClient, informers: InformerFactory, *, workers: int = DEFAULT_WORKERS,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None,
                 clock: Clock | None = None) -> None:
        super().__init__(client, informers, workers=workers, queue=queue, recorder=recorder, clock=clock)
        self.clock: Clock = clock or RealClock()
        deployments = informers.informer(API_VERSION, "deployments")
        replica_sets = informers.informer("apps/v1", "replicasets")
        pods = informers.informer("v1", "pods")
        self.deployments, self.replica_sets, self.pods = deployments.lister(), replica_sets.lister(), pods.lister()
        deployments.add_event_handler(on_add=self.enqueue, on_update=self.enqueue_update, on_delete=self.enqueue)
        replica_sets.add_event_handler(on_add=self.on_rs_add, on_update=self.on_rs_update,
                                       on_delete=self.on_rs_delete)
        pods.add_event_handler(on_delete=self.on_pod_delete)

    # -- handlers: map a change to the Deployments to sync -----------------------------------------------

    def _resolve(self, namespace: str, ref: Obj | None) -> dict[str, Any] | None:
        """The Deployment a controllerRef names, if the cache holds it with that uid."""
        if ref is None or ref.get("kind") != KIND:
            return None
        d = self.deployments.get(namespace, str(ref.get("name")))
        return d if d is not None and util.uid_of(d) == ref.get("uid") else None

    def _deployments_selecting(self, rs: Obj) -> list[dict[str, Any]]:
        """Deployments whose selector (not an empty one) matches an orphan ReplicaSet's labels."""
        found = []
        for d in self.deployments.list(ReplicaSet(rs).metadata.namespace):
            selector_obj = Deployment(d).spec.selector.raw
            if not selector_obj:
                continue
            try:
                if selector_from_label_selector(selector_obj).matches(_labels(rs)):
                    found.append(d)
            except SelectorError:
                continue
        return found

    def on_rs_add(self, rs: Obj) -> None:
        namespace = str(ReplicaSet(rs).metadata.namespace)
        ref = controller_ref(rs)
        if ref is not None:
            if (d := self._resolve(namespace, ref)) is not None:
                self.enqueue(d)
            return
        for d in self._deployments_selecting(rs):
            self.enqueue(d)

    def on_rs_update(self, old: Obj, new: Obj) -> None:
        if TypedObject(old).metadata.resource_version == TypedObject(new).metadata.resource_version:
            return  # a resync: nothing changed
        namespace = str(TypedObject(new).metadata.namespace)
        old_ref, new_ref = controller_ref(old), controller_ref(new)
        if old_ref is not None and old_ref != new_ref and (d := self._resolve(namespace, old_ref)) is not None:
            self.enqueue(d)
        if new_ref is not None:
            if (d := self._resolve(namespace, new_ref)) is not None:
                self.enqueue(d)
            return
        if _labels(old) != _labels(new) or old_ref != new_ref:
            for d in self._deployments_selecting(new):
                self.enqueue(d)

    def on_rs_delete(self, rs: Obj) -> None:
        namespace = str(ReplicaSet(rs).metadata.namespace)
        if (d := self._resolve(namespace, controller_ref(rs))) is not None:
            self.enqueue(d)

    def on_pod_delete(self, pod: Obj) -> None:
        """A Recreate rollout waits until the old pods are gone: the last one's deletion wakes it."""
        namespace = str(Pod(pod).metadata.namespace)
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return
        rs = self.replica_sets.get(namespace, str(ref.get("name")))
        if rs is None or util.uid_of(rs) != ref.get("uid"):
            return
        d = self._resolve(namespace, controller_ref(rs))
        if d is not None and not util.is_rolling_update(d):
            self.enqueue(d)

    # -- sync ---------------------------------------------------------------------------------------------

    def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        cached = self.deployments.get(namespace, name)
        if cached is None:
            log.debug("deployment %s has been deleted", key)
            return
        state = _State(deep_copy(cached))
        d = state.d
        if Deployment(d).spec.raw.get("selector") == {}:
            self.recorder.event(d, "Warning", "SelectingAll",
                                "This deployment is selecting all pods. A non-empty selector is required.")
            if util.status_int(d, "observedGeneration") < int(d["metadata"].get("generation") or 0):
                self._write_status(state, {**Deployment(d).status.raw,
                                           "observedGeneration": int(d["metadata"]["generation"])})
            return
        rss = state.rss = self._claim_replica_sets(state)
        if util.is_deleting(d):
            self._sync_status_only(state, rss)
            return
        self._check_paused_conditions(state)
        if Deployment(state.d).spec.paused:
            self._sync(state, rss)
            return
        if _rollback_to(state.d) is not None:
            self._rollback(state, rss)
            return
        if self._is_scaling_event(state, rss):
            self._sync(state, rss)
            return
        if util.is_rolling_update(state.d):
            self._rollout_rolling(state, rss)
        else:
            self._rollout_recreate(state, rss)

    # -- ownership ------------------------------------------------------------------------------------------

    def _claim_replica_sets(self, state: _State) -> list[dict[str, Any]]:
        """The ReplicaSets this Deployment controls, adopting matching orphans and releasing its own that
        stopped matching (ControllerRefManager.ClaimReplicaSets)."""
        d = state.d
        selector = selector_from_label_selector(d["spec"].get("selector"))
        uid = util.uid_of(d)
        claimed: list[dict[str, Any]] = []
        adoption_checked = False
        for rs in self.replica_sets.list(state.namespace):
            ref = controller_ref(rs)
            matches = selector.matches(_labels(rs))
            if ref is not None:
                if ref.get("uid") != uid:
                    continue
                if matches:
                    claimed.append(rs)
                elif not util.is_deleting(d):
                    self._patch_owner(state, rs, {"$patch": "delete", "uid": uid})
                continue
            if util.is_deleting(d) or not matches or util.is_deleting(rs):
                continue
            if not adoption_checked:
                self._check_can_adopt(state)
                adoption_checked = True
            adopted = self._patch_owner(state, rs, new_controller_ref(d, api_version=API_VERSION, kind=KIND))
            if adopted is not None:
                claimed.append(adopted)
        return claimed

    def _check_can_adopt(self, state: _State) -> None:
        """Adopt only for a Deployment that is live and not being deleted (RecheckDeletionTimestamp: an
        uncached read, as a stale cache could adopt for an object already gone)."""
        fresh = self.client.get(self._deployment_path(state))
        if util.uid_of(fresh) != util.uid_of(state.d):
            raise AdoptionError(f"original Deployment {state.namespace}/{state.name} is gone: got uid "
                                f"{util.uid_of(fresh)}, wanted {util.uid_of(state.d)}")
        if util.is_deleting(fresh):
            raise AdoptionError(f"{state.namespace}/{state.name} has just been deleted at "
                                f"{fresh['metadata']['deletionTimestamp']}")

    def _patch_owner(self, state: _State, rs: Obj, ref: dict[str, Any]) -> dict[str, Any] | None:
        """Adopt (a new controllerRef) or release (a `$patch: delete` of ours) by strategic merge patch,
        with the ReplicaSet's uid as precondition; None if it is gone."""
        patch = {"metadata": {"ownerReferences": [ref], "uid": util.uid_of(rs)}}
        try:
            return self.client.patch(self._rs_path(state, util.name_of(rs)), patch, patch_type="strategic")
        except NotFound:
            return None

    def _pods_by_replica_set(self, state: _State, rss: Sequence[Obj]) -> dict[str, list[dict[str, Any]]]:
        """The Deployment's pods grouped by the uid of the ReplicaSet that controls them
        (getPodMapForDeployment)."""
        selector = selector_from_label_selector(state.d["spec"].get("selector"))
        by_uid: dict[str, list[dict[str, Any]]] = {util.uid_of(rs): [] for rs in rss}
        for pod in self.pods.list(state.namespace, selector):
            ref = controller_ref(pod)
            if ref is not None and ref.get("uid") in by_uid:
                by_uid[str(ref["uid"])].append(pod)
        return by_uid

    # -- paths and writes --------------------------------------------------------------------------------

    def _deployment_path(self, state: _State, subresource: str | None = None) -> str:
        return resource_path(API_VERSION, "deployments", namespace=state.namespace, name=state.name,
                             subresource=subresource)

    def _rs_path(self, state: _State, name: str | None = None) -> str:
        return resource_path("apps/v1", "replicasets", namespace=state.namespace, name=name)

    def _write_status(self, state: _State, status: dict[str, Any]) -> None:
        state.d = self.client.update(self._deployment_path(state, "status"), {**state.d, "status": status})

    def _scale_replica_set(self, state: _State, rs: Obj, replicas: int, *,
                           annotate: bool) -> tuple[bool, dict[str, Any]]:
        """Write spec.replicas (and the desired/max-replicas annotations) of `rs`; True if the size changed,
        then with a ScalingReplicaSet event in upstream's words (scaleReplicaSet)."""
        current = util.spec_replicas(rs)
        if not annotate and current == replicas:
            return False, dict(rs)
        desired = util.spec_replicas(state.d)
        max_replicas = desired + util.max_surge(state.d)
        size_changes = current != replicas
        if not size_changes and not util.replicas_annotations_need_update(rs, desired, max_replicas):
            return False, dict(rs)
        copy = deep_copy(dict(rs))
        copy["spec"]["replicas"] = replicas
        util.set_replicas_annotations(copy, desired, max_replicas)
        updated = self.client.update(self._rs_path(state, util.name_of(rs)), copy)
        if size_changes:
            self.recorder.eventf(state.d, "Normal", "ScalingReplicaSet", "Scaled %s replica set %s from %d to %d",
                                 "up" if current < replicas else "down", util.name_of(rs), current, replicas)
        return size_changes, updated

    def _apply(self, state: _State, steps: Sequence[rollout.Step], rss: Sequence[Obj]) -> bool:
        """Carry out the steps in order against the freshest copy of each ReplicaSet; True if any size
        changed."""
        by_name = {util.name_of(rs): dict(rs) for rs in rss}
        scaled = False
        for step in steps:
            changed, by_name[step.name] = self._scale_replica_set(state, by_name[step.name], step.replicas,
                                                                  annotate=step.annotate)
            state.remember(by_name[step.name])
            scaled = scaled or changed
        return scaled

    # -- the new ReplicaSet and revisions ----------------------------------------------------------------

    def _get_all_and_sync_revision(self, state: _State, rss: Sequence[dict[str, Any]], *, create: bool
                                   ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        _, old = util.find_old_replica_sets(state.d, rss)
        return self._get_new_replica_set(state, rss, old, create=create), old

    def _get_new_replica_set(self, state: _State, rss: Sequence[dict[str, Any]], old: Sequence[Obj], *,
                             create: bool) -> dict[str, Any] | None:
        """getNewReplicaSet: the existing new set with its revision (max old + 1) and annotations brought up
        to date and the Deployment's revision synced; or, if `create`, a new set named
        `<deployment>-<hash>` sized by the strategy. A name taken by another template bumps
        status.collisionCount (the next sync hashes differently)."""
        d = state.d
        new_revision = str(util.max_revision(old) + 1)
        existing = util.find_new_replica_set(d, rss)
        if existing is not None:
            copy = deep_copy(existing)
            annotations_changed = util.set_new_replica_set_annotations(d, copy, new_revision, exists=True)
            min_ready = (d["spec"].get("minReadySeconds") or 0)
            if annotations_changed or (copy["spec"].get("minReadySeconds") or 0) != min_ready:
                copy["spec"]["minReadySeconds"] = min_ready
                updated = self.client.update(self._rs_path(state, util.name_of(copy)), copy)
                state.remember(updated)
                return updated
            needs_update = self._set_deployment_revision(state, annotations_of(copy).get(
                util.REVISION_ANNOTATION, ""))
            status = deep_copy(dict(Deployment(state.d).status.raw))
            if util.has_progress_deadline(d) and status_condition(status, dstatus.PROGRESSING) is None:
                dstatus.set_condition(status, dstatus.new_condition(
                    dstatus.PROGRESSING, "True", dstatus.FOUND_NEW_RS_REASON,
                    f'Found new replica set "{util.name_of(copy)}"', self.clock.now()))
                needs_update = True
            if needs_update:
                self._write_status(state, status)
            return copy
        if not create:
            return None
        collision_count = Deployment(d).status.collision_count
        template = deep_copy(dict(Deployment(d).spec.template.raw))
        pod_hash = compute_hash(template, collision_count)
        template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = pod_hash
        selector = deep_copy(dict(Deployment(d).spec.selector.raw))
        selector.setdefault("matchLabels", {})[HASH_LABEL] = pod_hash
        new_rs: dict[str, Any] = {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"{state.name}-{pod_hash}", "namespace": state.namespace,
                         "ownerReferences": [new_controller_ref(d, api_version=API_VERSION, kind=KIND)],
                         "labels": dict(template["metadata"]["labels"])},
            "spec": {"replicas": 0, "minReadySeconds": d["spec"].get("minReadySeconds") or 0,
                     "selector": selector, "template": template},
        }
        replicas = rollout.new_rs_new_replicas(_deployment_view(d), [_rs_view(rs) for rs in old] + [_rs_view(new_rs)],
                                               _rs_view(new_rs))
        new_rs["spec"]["replicas"] = replicas
        util.set_new_replica_set_annotations(d, new_rs, new_revision, exists=False)
        already_exists = False
        try:
            created = self.client.create(self._rs_path(state), new_rs)
        except Conflict as exc:
            if exc.reason != "AlreadyExists":
                raise
            found = self.replica_sets.get(state.namespace, new_rs["metadata"]["name"])
            ref = controller_ref(found) if found is not None else None
            if found is not None and ref is not None and ref.get("uid") == util.uid_of(d) and \
                    util.equal_ignore_hash(d["spec"].get("template"), found["spec"].get("template")):
                created, already_exists = deep_copy(found), True
            else:
                status = deep_copy(dict(Deployment(d).status.raw))
                status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
                self._write_status(state, status)
                log.info("found a hash collision for deployment %s: bumping collisionCount to %d", key_of(d),
                         status["collisionCount"])
                raise
        except ApiError as exc:
            if has_status_cause(exc, NAMESPACE_TERMINATING_CAUSE):
                raise
            message = f'Failed to create new replica set "{new_rs["metadata"]["name"]}": {exc}'
            if util.has_progress_deadline(d):
                status = deep_copy(dict(Deployment(d).status.raw))
                dstatus.set_condition(status, dstatus.new_condition(
                    dstatus.PROGRESSING, "False", dstatus.FAILED_RS_CREATE_REASON, message, self.clock.now()))
                try:
                    self._write_status(state, status)
                except ApiError:
                    pass  # the create's error is the one to retry on
            self.recorder.event(state.d, "Warning", dstatus.FAILED_RS_CREATE_REASON, message)
            raise
        if not already_exists and replicas > 0:
            self.recorder.eventf(state.d, "Normal", "ScalingReplicaSet", "Scaled up replica set %s from 0 to %d",
                                 util.name_of(created), replicas)
        needs_update = self._set_deployment_revision(state, new_revision)
        status = deep_copy(dict(Deployment(state.d).status.raw))
        if not already_exists and util.has_progress_deadline(state.d):
            dstatus.set_condition(status, dstatus.new_condition(
                dstatus.PROGRESSING, "True", dstatus.NEW_RS_NEW_REPLICAS_REASON,
                f'Created new replica set "{util.name_of(created)}"', self.clock.now()))
            needs_update = True
        if needs_update:
            self._write_status(state, status)
        return created

    def _set_deployment_revision(self, state: _State, revision: str) -> bool:
        """SetDeploymentRevision, in place on the state's object (written with the next status write: the
        status subresource takes annotations, as upstream's does)."""
        annotations = state.d["metadata"].setdefault("annotations", {})
        if annotations.get(util.REVISION_ANNOTATION) == revision:
            return False
        annotations[util.REVISION_ANNOTATION] = revision
        return True

    # -- the ways a sync goes ----------------------------------------------------------------------------

    def _is_scaling_event(self, state: _State, rss: Sequence[dict[str, Any]]) -> bool:
        new, old = self._get_all_and_sync_revision(state, rss, create=False)
        views = [_rs_view(rs) for rs in [*old, *([new] if new is not None else [])]]
        return rollout.is_scaling_event(_deployment_view(state.d), views)

    def _sync(self, state: _State, rss: Sequence[dict[str, Any]]) -> None:
        """A scaling event or a paused Deployment: scale proportionally, no rollout (sync.go `sync`)."""
        new, old = self._get_all_and_sync_revision(state, rss, create=False)
        steps = rollout.scale(_deployment_view(state.d), _rs_view(new) if new is not None else None,
                              [_rs_view(rs) for rs in old])
        self._apply(state, steps, [*old, *([new] if new is not None else [])])
        if Deployment(state.d).spec.paused and _rollback_to(state.d) is None:
            self._cleanup(state, old)
        self._sync_deployment_status(state, [*old, new], new)

    def _sync_status_only(self, state: _State, rss: Sequence[dict[str, Any]]) -> None:
        new, old = self._get_all_and_sync_revision(state, rss, create=False)
        self._sync_deployment_status(state, [*old, new], new)

    def _rollout_rolling(self, state: _State, rss: Sequence[dict[str, Any]]) -> None:
        """rolloutRolling: grow the new set within maxSurge; else shrink old ones within maxUnavailable;
        once complete, clean up old history; always the rollout status."""
        new, old = self._get_all_and_sync_revision(state, rss, create=True)
        assert new is not None  # create=True returns one or raises
        all_rss = [*old, new]
        d_view, all_views = _deployment_view(state.d), [_rs_view(rs) for rs in all_rss]
        step = rollout.reconcile_new(d_view, all_views, _rs_view(new))
        if step is not None and self._apply(state, [step], all_rss):
            self._sync_rollout_status(state, all_rss, new)
            return
        active_old = util.filter_active(old)
        steps = rollout.reconcile_old(d_view, all_views, [_rs_view(rs) for rs in active_old], _rs_view(new))
        if self._apply(state, steps, active_old):
            self._sync_rollout_status(state, all_rss, new)
            return
        if dstatus.deployment_complete(state.d, Deployment(state.d).status.raw):
            self._cleanup(state, old)
        self._sync_rollout_status(state, all_rss, new)

    def _rollout_recreate(self, state: _State, rss: Sequence[dict[str, Any]]) -> None:
        """rolloutRecreate: every old set to 0; wait until no old pod runs; then the new set, at full size."""
        new, old = self._get_all_and_sync_revision(state, rss, create=False)
        all_rss: list[dict[str, Any] | None] = [*old, new]
        active_old = util.filter_active(old)
        if self._apply(state, rollout.recreate_scale_down([_rs_view(rs) for rs in active_old]), active_old):
            self._sync_rollout_status(state, all_rss, new)
            return
        if self._old_pods_running(state, new, old, rss):
            self._sync_rollout_status(state, all_rss, new)
            return
        if new is None:
            new, old = self._get_all_and_sync_revision(state, rss, create=True)
            all_rss = [*old, new]
        assert new is not None
        self._apply(state, [rollout.Step(util.name_of(new), util.spec_replicas(state.d))], [new])
        if dstatus.deployment_complete(state.d, Deployment(state.d).status.raw):
            self._cleanup(state, old)
        self._sync_rollout_status(state, all_rss, new)

    def _old_pods_running(self, state: _State, new: Obj | None, old: Sequence[Obj], rss: Sequence[Obj]) -> bool:
        """oldPodsRunning: an old set still reports replicas, or one of its pods is not Succeeded/Failed."""
        if util.actual_replica_count(old) > 0:
            return True
        new_uid = util.uid_of(new) if new is not None else None
        for uid, pods in self._pods_by_replica_set(state, rss).items():
            if uid == new_uid:
                continue
            if any(Pod(pod).status.phase not in ("Failed", "Succeeded") for pod in pods):
                return True
        return False

    def _rollback(self, state: _State, rss: Sequence[dict[str, Any]]) -> None:
        """rollback.go: the deprecated rollbackTo annotation; 0 means the previous revision. The template of
        that revision's ReplicaSet (and its annotations) goes back into the Deployment, the annotation is
        cleared either way."""
        new, old = self._get_all_and_sync_revision(state, rss, create=True)
        all_rss = [*old, *([new] if new is not None else [])]
        target = _rollback_to(state.d) or util.last_revision(all_rss)
        if target == 0:
            self.recorder.event(state.d, "Warning", "DeploymentRollbackRevisionNotFound",
                                "Unable to find last revision.")
            self._clear_rollback_to(state)
            return
        for rs in all_rss:
            if util.revision(rs) != target:
                continue
            d = state.d
            if not util.equal_ignore_hash(d["spec"].get("template"), rs["spec"].get("template")):
                template = deep_copy(rs["spec"]["template"])
                ((template.get("metadata") or {}).get("labels") or {}).pop(HASH_LABEL, None)
                d["spec"]["template"] = template
                util.set_deployment_annotations_to(d, rs)
                self._clear_rollback_to(state)
                self.recorder.event(state.d, "Normal", "DeploymentRollback",
                                    f'Rolled back deployment "{state.name}" to revision {target}')
            else:
                self.recorder.event(d, "Warning", "DeploymentRollbackTemplateUnchanged",
                                    f'The rollback revision contains the same template as current deployment '
                                    f'"{state.name}"')
                self._clear_rollback_to(state)
            return
        self.recorder.event(state.d, "Warning", "DeploymentRollbackRevisionNotFound",
                            "Unable to find the revision to rollback to.")
        self._clear_rollback_to(state)

    def _clear_rollback_to(self, state: _State) -> None:
        (state.d["metadata"].get("annotations") or {}).pop(util.DEPRECATED_ROLLBACK_TO, None)
        state.d = self.client.update(self._deployment_path(state), state.d)

    # -- cleanup and status ----------------------------------------------------------------------------

    def _cleanup(self, state: _State, old: Sequence[Obj]) -> None:
        """Delete the old ReplicaSets beyond revisionHistoryLimit that are scaled to 0 (cleanupDeployment)."""
        for rs in util.select_cleanable(state.d, old):
            log.info("deployment %s: deleting old replica set %s", key_of(state.d), util.name_of(rs))
            try:
                self.client.delete(self._rs_path(state, util.name_of(rs)))
            except NotFound:
                pass

    def _check_paused_conditions(self, state: _State) -> None:
        status = dstatus.paused_condition(state.d, self.clock.now())
        if status is not None:
            self._write_status(state, status)

    def _sync_deployment_status(self, state: _State, all_rss: Sequence[Obj | None], new: Obj | None) -> None:
        status = dstatus.calculate_status(state.d, all_rss, new, self.clock.now())
        if not dstatus.status_counts_equal(state.d.get("status") or {}, status):
            self._write_status(state, status)

    def _sync_rollout_status(self, state: _State, all_rss: Sequence[Obj | None], new: Obj | None) -> None:
        now = self.clock.now()
        status = dstatus.rollout_status(state.d, all_rss, new, now)
        if not dstatus.status_counts_equal(state.d.get("status") or {}, status):
            self._write_status(state, status)
            return
        after = dstatus.requeue_after(state.d, status, now)
        if after == 0.0:
            self.queue.add_rate_limited(key_of(state.d))
        elif after is not None:
            self.queue.add_after(key_of(state.d), after)
