"""The strategy of a plain kind, and the rules every kind shares (upstream: k8s.io/apiserver/pkg/registry/rest
create.go, update.go and delete.go — RESTCreateStrategy, RESTUpdateStrategy, RESTDeleteStrategy,
BeforeCreate/BeforeUpdate — plus what each pkg/registry/<group>/<kind>/strategy.go repeats).

The generic store (registry/store.py) calls a resource's strategy and knows no kind by name; a kind with
rules of its own subclasses `Strategy` in a module of its own (pods.py, services.py, namespaces.py, ...).

The store calls the hooks in this order, entering the admission chain (control/apiserver/admission/) once
per write:
- create: identity checks (apiVersion/kind, namespace, name) → `defaults` → admission: [namespace
  lifecycle, mutating plugins] → `prepare_for_create` → [`validate`, validating plugins, quota] →
  `begin_write` (allocations) → storage; a failed storage write runs the rollback `begin_write` returned.
- update: identity checks → `defaults` (or `prepare_for_subresource_update` for `/status`, `/finalize`)
  → admission: [mutating plugins (main resource only)] → `prepare_for_update` (main resource only) →
  [`validate`, validating plugins (main resource only)] → nothing changed? done → `begin_write` (main
  resource only) → storage (a delete when `ready_to_remove`) → `after_write(old, new or None)`.
- delete: admission: [namespace lifecycle] → `delete_grace_seconds` → `prepare_for_delete` →
  `mark_deleting` → storage (an update while not `ready_to_remove`, else a delete) → `after_write(old,
  None)` once removed.

- read: every object a get, list or watch returns goes through `decorate` on its way out.

Everything but `begin_write`/`after_write` is pure: the store passes `now` and a fresh uid, so the rules
are tested without a server.

Rules kept from upstream because clients rely on them:
- `uid`, `creationTimestamp`, `deletionTimestamp`, `generation` are the server's: a client's values are
  overwritten on create and ignored on update.
- For resources with a `/status` subresource, the main resource ignores `status` on update and the
  status subresource ignores everything but `status` (and metadata labels/annotations), so a controller
  writing status never undoes a user's spec change and the other way round.
- `metadata.generation` starts at 1 and grows when `spec` changes, for the kinds whose controllers
  report `status.observedGeneration` (`kubectl rollout status` compares the two).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any

from control.api.batch import generate_job_selector
from control.api.defaults import apply_defaults
from control.api.validation import validate
from control.apimachinery.meta import deep_copy, format_timestamp
from control.apimachinery.validation import FieldError
from control.apiserver import status
from control.apiserver.registry.strategies import scale as scale_view
from control.apiserver.resources import Resource

Rollback = Callable[[], None]


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """A Table column a strategy defines (upstream: a CRD's additionalPrinterColumns): its definition, and
    `find`, the values found at the column's path in an object (the first one is printed)."""

    name: str
    type: str
    description: str
    find: Callable[[Mapping[str, Any]], list[Any]]
    priority: int = 0
    format: str = ""

# Metadata only the server writes; on update the stored values win.
_SERVER_OWNED_METADATA = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                          "generation", "name", "namespace")


def nothing_to_undo() -> None:
    """The rollback of a `begin_write` that reserved nothing."""


def spec_of(obj: Mapping[str, Any]) -> Any:
    """What counts as the object's desired state for `generation`; for kinds without `spec`, everything
    that is neither metadata nor status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def mark_deleting(obj: dict[str, Any], *, now: datetime, grace_seconds: int) -> bool:
    """Set deletionTimestamp = now + grace (in place); a second delete may only shorten the grace.
    Returns whether the object changed."""
    metadata = obj.setdefault("metadata", {})
    current = metadata.get("deletionGracePeriodSeconds")
    if metadata.get("deletionTimestamp") and current is not None and current <= grace_seconds:
        return False
    try:
        deadline = now + timedelta(seconds=grace_seconds)
    except OverflowError:  # a grace period of centuries (int64 allows it): the latest time there is
        deadline = datetime.max.replace(tzinfo=now.tzinfo) if grace_seconds > 0 else now
    metadata["deletionTimestamp"] = format_timestamp(deadline)
    metadata["deletionGracePeriodSeconds"] = grace_seconds
    return True


def ready_to_remove(obj: Mapping[str, Any]) -> bool:
    """A deleted object goes once its finalizers are gone and its grace period was confirmed as 0
    (upstream: deletionTimestamp set, no finalizers, deletionGracePeriodSeconds 0)."""
    metadata = obj.get("metadata") or {}
    return (bool(metadata.get("deletionTimestamp")) and not metadata.get("finalizers")
            and not metadata.get("deletionGracePeriodSeconds"))


ORPHAN_FINALIZER = "orphan"  # metav1.FinalizerOrphanDependents
FOREGROUND_FINALIZER = "foregroundDeletion"  # metav1.FinalizerDeleteDependents


def gc_finalizers(finalizers: list[str], *, policy: str | None, default_orphan: bool) -> list[str]:
    """The finalizers a delete leaves on the object for the garbage collector (upstream store.go
    `deletionFinalizersForGarbageCollection`, `shouldOrphanDependents`, `shouldDeleteDependents`): the
    request's propagationPolicy decides; without one, an `orphan`/`foregroundDeletion` finalizer already
    there (the first of them) keeps its word; without either, the kind's default (orphan for the legacy
    v1 ReplicationController and batch/v1 Job). Returns `finalizers` itself when the set is unchanged."""
    said = next((f for f in finalizers if f in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)), None)
    if policy:
        orphan, foreground = policy == "Orphan", policy == "Foreground"
    else:
        orphan = said == ORPHAN_FINALIZER if said else default_orphan
        foreground = said == FOREGROUND_FINALIZER
    wanted = [f for f in finalizers if f not in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)]
    wanted += [ORPHAN_FINALIZER] * orphan + [FOREGROUND_FINALIZER] * foreground
    return finalizers if set(wanted) == set(finalizers) else wanted


def prepare_for_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> dict[str, Any]:
    """An update through `/status`: everything but status (and labels/annotations, which upstream lets a
    status writer change) comes from the stored object."""
    result = deep_copy(dict(old))
    result["status"] = deep_copy(new.get("status") or {})
    new_metadata = new.get("metadata") or {}
    for key in ("labels", "annotations"):
        if key in new_metadata:
            result["metadata"][key] = deep_copy(new_metadata[key])
    return result


class Strategy:
    """What the generic store asks of a kind; this base is the whole strategy of the plain kinds
    (configmaps, secrets, nodes, serviceaccounts, ...)."""

    # Status fields the kind's Go type serialises without omitempty: upstream always writes them, zero
    # included, and typed clients (the official Python client) refuse an object without them.
    status_zero_values: Mapping[str, Any] = MappingProxyType({})
    tracks_generation = False  # metadata.generation starts at 1 and grows with spec changes
    resets_status_on_create = False  # upstream PrepareForCreate: `obj.Status = {}`
    allow_create_on_update = False  # upstream AllowCreateOnUpdate: a PUT of a missing object creates it
    binds_pods = False  # a create binds a pod to a node instead of storing an object (the `bindings` kind)
    # Upstream DefaultGarbageCollectionPolicy: a delete without a propagationPolicy orphans the dependents.
    orphans_by_default = False

    def __init__(self, resource: Resource) -> None:
        self.resource = resource

    # -- create and update --------------------------------------------------------------------------

    def defaults(self, obj: dict[str, Any]) -> None:
        """Upstream runs the defaulting functions while decoding; the kubelet shares them (control.api)."""
        apply_defaults(self.resource.plural, obj)

    def prepare_for_create(self, obj: dict[str, Any], *, now: datetime, uid: str) -> None:
        """Set what the server owns on a new object (in place)."""
        metadata = obj.setdefault("metadata", {})
        metadata["uid"] = uid
        metadata["creationTimestamp"] = format_timestamp(now)
        for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion", "selfLink"):
            metadata.pop(key, None)
        if self.tracks_generation:
            metadata["generation"] = 1
        if self.resets_status_on_create:
            obj["status"] = {}
        self.fill_status(obj)

    def prepare_for_update(self, new: dict[str, Any], old: Mapping[str, Any]) -> None:
        """An update of the main resource: server-owned metadata and (with a status subresource) status
        come from the stored object; generation grows when the spec changed."""
        metadata = new.setdefault("metadata", {})
        old_metadata = old.get("metadata") or {}
        for key in _SERVER_OWNED_METADATA:
            if key in old_metadata:
                metadata[key] = deep_copy(old_metadata[key])
            else:
                metadata.pop(key, None)
        if "status" in self.resource.subresources:
            if "status" in old:
                new["status"] = deep_copy(old["status"])
            else:
                new.pop("status", None)
        if self.tracks_generation and spec_of(new) != spec_of(old):
            metadata["generation"] = int(old_metadata.get("generation") or 0) + 1
        self.fill_status(new)

    def prepare_for_subresource_update(self, subresource: str, new: Mapping[str, Any],
                                       old: Mapping[str, Any]) -> dict[str, Any]:
        """The object a write through `/{subresource}` stores; `/status` is the only one most kinds have."""
        if subresource != "status":
            raise status.bad_request(f"{self.resource.plural}/{subresource} cannot be written")
        result = prepare_for_status_update(new, old)
        self.fill_status(result)
        return result

    def fill_status(self, obj: dict[str, Any]) -> None:
        """Add the `status_zero_values` a written status lacks (a status that is not an object is left
        to validation)."""
        if not self.status_zero_values:
            return
        current = obj.setdefault("status", {})
        if isinstance(current, dict):
            for key, zero in self.status_zero_values.items():
                current.setdefault(key, deep_copy(zero))

    @property
    def decorates(self) -> bool:
        """Whether `decorate` can change an object; when not, a read may hand out the stored bytes as
        they are (registry.with_revision) instead of decoding and re-encoding them."""
        return bool(self.status_zero_values) or type(self).decorate is not Strategy.decorate

    def decorate(self, obj: dict[str, Any]) -> None:
        """Called on every object the store hands out — get, list, watch events (upstream
        genericregistry.Store.Decorator). Fills the status zero values, so an object stored before a rule
        existed, or written past the strategies, still reads as upstream serialises it."""
        self.fill_status(obj)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        """Upstream Validate / ValidateUpdate (control.api.validation, shared with the kubelet)."""
        return validate(self.resource.plural, obj, old=old)

    def begin_write(self, new: dict[str, Any], old: Mapping[str, Any] | None) -> Rollback:
        """Reserve what `new` needs before it is stored (old is None on create); returns the undo for a
        write that fails. Upstream: the BeginCreate/BeginUpdate hooks of the kind's REST storage."""
        return nothing_to_undo

    def after_write(self, old: Mapping[str, Any], new: Mapping[str, Any] | None) -> None:
        """After a successful update (new) or removal (None): free what `old` held and `new` does not.
        Upstream: AfterUpdate/AfterDelete."""

    # -- delete -------------------------------------------------------------------------------------

    def delete_grace_seconds(self, obj: Mapping[str, Any], requested: int | None) -> int:
        """Upstream CheckGracefulDelete: most kinds go at once (their finalizers aside)."""
        return 0

    def prepare_for_delete(self, obj: dict[str, Any]) -> None:
        """What a delete sets besides deletionTimestamp (in place)."""

    def ready_to_remove(self, obj: Mapping[str, Any]) -> bool:
        return ready_to_remove(obj)

    # -- what the endpoints ask of a kind beyond storing it ------------------------------------------

    @property
    def list_kind(self) -> str:
        """The kind of a list of these objects (`{Kind}List`; a CRD may accept another)."""
        return f"{self.resource.kind}List"

    def scale_of(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """The autoscaling/v1 Scale view of an object of a kind with `/scale`."""
        return scale_view.scale_of(obj)

    def apply_scale(self, obj: dict[str, Any], scale: dict[str, Any]) -> dict[str, Any]:
        """The object with the replicas a Scale asks for."""
        return scale_view.apply_scale(obj, scale)

    def printer_columns(self) -> tuple[PrinterColumn, ...] | None:
        """Columns a server-side Table prints for this kind after NAME, when the kind defines its own (a
        CRD's additionalPrinterColumns); None: the built-in printer of the resource."""
        return None


class CreateOnUpdateStrategy(Strategy):
    """Endpoints, events and leases: a PUT of a missing object creates it, as their writers (the endpoints
    controller, event recorders, leader election) expect (upstream AllowCreateOnUpdate: true)."""

    allow_create_on_update = True


class WorkloadStrategy(Strategy):
    """Deployments, replica sets, daemon sets, stateful sets, jobs, cron jobs and replication controllers
    (upstream pkg/registry/apps/*/strategy.go, batch/*/strategy.go, core/replicationcontroller): their
    controllers report status.observedGeneration against metadata.generation, and a created object's
    status is the controller's to fill."""

    tracks_generation = True
    resets_status_on_create = True


class ReplicasWorkloadStrategy(WorkloadStrategy):
    """ReplicaSets and ReplicationControllers: `status.replicas` has no omitempty upstream."""

    status_zero_values = MappingProxyType({"replicas": 0})


class ReplicationControllerStrategy(ReplicasWorkloadStrategy):
    """core/v1 ReplicationControllers: upstream's DefaultGarbageCollectionPolicy is OrphanDependents in v1
    "for back compatibility" (kubectl sends propagationPolicy=Background itself)."""

    orphans_by_default = True


class JobStrategy(WorkloadStrategy):
    """batch/v1 Jobs (upstream pkg/registry/batch/job/strategy.go): DefaultGarbageCollectionPolicy is
    OrphanDependents in batch/v1, as for ReplicationControllers (kubectl sends propagationPolicy=Background
    itself); a new Job's selector and template labels are generated from its uid unless
    `spec.manualSelector` (upstream does it in Validate, once the uid is known; here the uid is known in
    prepare_for_create, which runs just before)."""

    orphans_by_default = True

    def prepare_for_create(self, obj: dict[str, Any], *, now: datetime, uid: str) -> None:
        super().prepare_for_create(obj, now=now, uid=uid)
        generate_job_selector(obj, uid)


class StatefulSetStrategy(WorkloadStrategy):
    """apps/v1 StatefulSetStatus: `replicas` and `availableReplicas` have no omitempty upstream."""

    status_zero_values = MappingProxyType({"replicas": 0, "availableReplicas": 0})


class DaemonSetStrategy(WorkloadStrategy):
    """apps/v1 DaemonSetStatus: the four scheduling counts have no omitempty upstream."""

    status_zero_values = MappingProxyType({"currentNumberScheduled": 0, "numberMisscheduled": 0,
                                           "desiredNumberScheduled": 0, "numberReady": 0})


class HorizontalPodAutoscalerStrategy(WorkloadStrategy):
    """autoscaling/v2 HorizontalPodAutoscalers (upstream pkg/registry/autoscaling/horizontalpodautoscaler/
    strategy.go): the status is the controller's; currentReplicas and desiredReplicas have no omitempty."""

    status_zero_values = MappingProxyType({"currentReplicas": 0, "desiredReplicas": 0})


class PodDisruptionBudgetStrategy(WorkloadStrategy):
    """policy/v1 PodDisruptionBudgets (upstream pkg/registry/policy/poddisruptionbudget/strategy.go): the
    disruption controller reports observedGeneration, the status starts empty, and the four counts have
    no omitempty in PodDisruptionBudgetStatus."""

    status_zero_values = MappingProxyType({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0,
                                           "expectedPods": 0})


class ResetStatusStrategy(Strategy):
    """ResourceQuotas (upstream pkg/registry/core/resourcequota/strategy.go): `status.used` is the quota
    controller's, so a client-sent status is dropped on create."""

    resets_status_on_create = True
