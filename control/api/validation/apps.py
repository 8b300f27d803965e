"""Validation of the apps/v1 workload kinds: Deployments, ReplicaSets, DaemonSets, StatefulSets and
ControllerRevisions.

Upstream: pkg/apis/apps/validation/validation.go (ValidateDeploymentSpec, ValidateReplicaSetSpec,
ValidateDaemonSetSpec, ValidateStatefulSetSpec and their Update variants, ValidateControllerRevision).

Rules kept because controllers depend on them: a controller's selector must be non-empty and select its
own template (else it would adopt or create pods it can never count), its template's pods must restart
Always, and the selector cannot change after creation (a StatefulSet's whole spec but the fields upstream
lists). Left out: the volume claim templates of a StatefulSet.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.api.validation.pods import template_labels, validate_controller_template
from control.api.validation.primitives import NEGATIVE_MESSAGE, Check, Validator, int_or_percent, join, label_selector
from control.apimachinery.validation import FieldError

_STATEFULSET_UPDATABLE = ("replicas", "ordinals", "template", "updateStrategy",
                          "persistentVolumeClaimRetentionPolicy", "minReadySeconds")
STATEFULSET_UPDATE_MESSAGE = (
    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', "
    "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
)


def _rolling_update(c: Check, strategy: Mapping[str, Any], path: str) -> None:
    if (rolling := c.obj(strategy, "rollingUpdate", path)) is None or not rolling:
        return
    unavailable_zero = int_or_percent(c, rolling, "maxUnavailable", join(path, "maxUnavailable"))
    surge_zero = int_or_percent(c, rolling, "maxSurge", join(path, "maxSurge"))
    if unavailable_zero and surge_zero:
        c.add([FieldError.invalid(join(path, "maxUnavailable"), rolling["maxUnavailable"],
                                  "may not be 0 when `maxSurge` is 0")])


def _claim_names(spec: Mapping[str, Any]) -> frozenset[str]:
    """The volume names a StatefulSet's volumeClaimTemplates give its pods (the controller adds them)."""
    claims = spec.get("volumeClaimTemplates")
    if not isinstance(claims, list):
        return frozenset()
    return frozenset(name for claim in claims if isinstance(claim, Mapping)
                     and isinstance(meta := claim.get("metadata"), Mapping)
                     and isinstance(name := meta.get("name"), str))


def _workload(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None, *, kind: str,
              replicas: bool = True) -> dict[str, Any] | None:
    """What deployments, replica sets, daemon sets and stateful sets share; returns the spec."""
    if (spec := c.obj(obj, "spec", "spec")) is None:
        return None
    for key in ("replicas", "minReadySeconds", "revisionHistoryLimit") if replicas else (
            "minReadySeconds", "revisionHistoryLimit"):
        c.nonnegative(spec, key, join("spec", key))
    selector = label_selector(c, spec, "spec.selector", kind=kind.lower())
    if (template := c.obj(spec, "template", "spec.template")) is not None:
        selects = selector is None or selector.matches(template_labels(template))
        claims = _claim_names(spec) if kind == "StatefulSet" else frozenset()
        validate_controller_template(c, template, "spec.template", selects=selects, kind=kind, claim_volumes=claims)
    old_spec = old.get("spec") if old is not None else None
    if isinstance(old_spec, dict) and kind != "StatefulSet":
        c.immutable(spec.get("selector"), old_spec.get("selector"), "spec.selector")
    return spec


def _deployment(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := _workload(c, obj, old, kind="Deployment")) is None:
        return
    if (strategy := c.obj(spec, "strategy", "spec.strategy")) is not None:
        kind = c.supported(strategy, "type", "spec.strategy.type", ("Recreate", "RollingUpdate"), required=True)
        if kind == "Recreate" and strategy.get("rollingUpdate") is not None:
            c.add([FieldError.forbidden("spec.strategy.rollingUpdate",
                                        "may not be specified when strategy `type` is 'Recreate'")])
        elif kind == "RollingUpdate":
            _rolling_update(c, strategy, "spec.strategy.rollingUpdate")
    deadline = c.integer(spec, "progressDeadlineSeconds", "spec.progressDeadlineSeconds")
    if deadline is not None:
        min_ready = spec.get("minReadySeconds")
        if deadline < 0:
            c.add([FieldError.invalid("spec.progressDeadlineSeconds", deadline, NEGATIVE_MESSAGE)])
        elif isinstance(min_ready, int) and deadline <= min_ready:
            c.add([FieldError.invalid("spec.progressDeadlineSeconds", deadline,
                                      "must be greater than minReadySeconds")])


def _replica_set(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    _workload(c, obj, old, kind="ReplicaSet")


def _daemon_set(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := _workload(c, obj, old, kind="DaemonSet", replicas=False)) is None:
        return
    if (strategy := c.obj(spec, "updateStrategy", "spec.updateStrategy")) is not None:
        kind = c.supported(strategy, "type", "spec.updateStrategy.type", ("RollingUpdate", "OnDelete"),
                           required=True)
        if kind == "RollingUpdate":
            _rolling_update(c, strategy, "spec.updateStrategy.rollingUpdate")


def _stateful_set(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    if (spec := _workload(c, obj, old, kind="StatefulSet")) is None:
        return
    c.supported(spec, "podManagementPolicy", "spec.podManagementPolicy", ("OrderedReady", "Parallel"),
                required=True)
    if (strategy := c.obj(spec, "updateStrategy", "spec.updateStrategy")) is not None:
        kind = c.supported(strategy, "type", "spec.updateStrategy.type", ("RollingUpdate", "OnDelete"),
                           required=True)
        path = "spec.updateStrategy.rollingUpdate"
        if kind == "RollingUpdate" and (rolling := c.obj(strategy, "rollingUpdate", path)):
            c.nonnegative(rolling, "partition", "spec.updateStrategy.rollingUpdate.partition")
    retention_path = "spec.persistentVolumeClaimRetentionPolicy"
    if (retention := c.obj(spec, "persistentVolumeClaimRetentionPolicy", retention_path)) is not None:
        for key in ("whenDeleted", "whenScaled"):
            c.supported(retention, key, join(retention_path, key), ("Retain", "Delete"))
    old_spec = old.get("spec") if old is not None else None
    if isinstance(old_spec, dict):
        def fixed(s: Mapping[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in s.items() if k not in _STATEFULSET_UPDATABLE}
        if fixed(spec) != fixed(old_spec):
            c.add([FieldError.forbidden("spec", STATEFULSET_UPDATE_MESSAGE)])


def _controller_revision(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    """ValidateControllerRevision(Update): data is mandatory and immutable, the revision not negative."""
    if obj.get("data") is None:
        c.add([FieldError.required("data", "data is mandatory")])
    c.nonnegative(obj, "revision", "revision")
    if old is not None:
        c.immutable(obj.get("data"), old.get("data"), "data")


VALIDATORS: dict[str, Validator] = {
    "deployments": _deployment,
    "replicasets": _replica_set,
    "daemonsets": _daemon_set,
    "statefulsets": _stateful_set,
    "controllerrevisions": _controller_revision,
}
