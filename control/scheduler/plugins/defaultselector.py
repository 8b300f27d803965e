"""The selector of "the pods that belong with this one": the union of the selectors of the Services that
select the pod and of the ReplicationController, ReplicaSet or StatefulSet that controls it. Spreading
plugins spread a pod away from the pods this selector matches when the pod says nothing itself
(PodTopologySpread's default constraints, SelectorSpread).

Upstream: pkg/scheduler/framework/plugins/helper/spread.go (`DefaultSelector`, `GetPodServices`). The
old SelectorSpreadPriority used the same grouping ("pods of the same Service or RC").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from control.api.typed.apps import ReplicaSet
from control.api.typed.core import Pod as PodView
from control.api.typed.core import ReplicationController, Service
from control.api.typed.meta import TypedObject
from control.apimachinery import labels
from control.scheduler.framework import Listers, Pod

_RC = ("v1", "ReplicationController")
_RS = ("apps/v1", "ReplicaSet")
_SS = ("apps/v1", "StatefulSet")


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return TypedObject(obj).metadata.labels


def controller_of(pod: Pod) -> Mapping[str, Any] | None:
    """The owner reference with `controller: true` (upstream metav1.GetControllerOf)."""
    owner = PodView(pod).metadata.controller_ref
    return None if owner is None else owner.raw


def pod_services(pod: Pod, listers: Listers) -> list[Mapping[str, Any]]:
    """The Services of the pod's namespace whose selector matches it; a Service without a selector matches
    nothing (upstream GetPodServices)."""
    namespace = PodView(pod).metadata.namespace
    pod_labels = _labels(pod)
    matched = []
    for service in listers.services.list(namespace):
        selector = Service(service).spec.raw.get("selector")
        if selector is None:  # nil matches nothing, an empty map everything
            continue
        if labels.selector_from_set(selector).matches(pod_labels):
            matched.append(service)
    return matched


def _requirements(label_selector: Mapping[str, Any] | None) -> tuple[labels.Requirement, ...]:
    """A workload's metav1.LabelSelector as requirements; none for a nil or invalid one (upstream ignores
    both: `Requirements()` of Nothing is empty, a parse error skips the owner)."""
    try:
        return labels.selector_from_label_selector(label_selector).requirements
    except labels.SelectorError:
        return ()


def default_selector(pod: Pod, listers: Listers) -> labels.Selector:
    """Upstream DefaultSelector: the Services' selectors merged (later ones win on a shared key), plus the
    controlling RC's selector map, or the controlling RS's / StatefulSet's selector requirements. EVERYTHING
    (`empty`) when nothing selects the pod."""
    label_set: dict[str, str] = {}
    for service in pod_services(pod, listers):
        label_set.update(Service(service).spec.selector)
    selector = labels.selector_from_set(label_set)
    owner = controller_of(pod)
    if owner is None:
        return selector
    namespace = PodView(pod).metadata.namespace
    kind = (owner.get("apiVersion"), owner.get("kind"))
    name = owner.get("name") or ""
    if kind == _RC:
        rc = listers.replication_controllers.get(namespace, name)
        if rc is not None:
            label_set.update(ReplicationController(rc).spec.selector)
            selector = labels.selector_from_set(label_set)
    elif kind in (_RS, _SS):
        lister = listers.replica_sets if kind == _RS else listers.stateful_sets
        workload = lister.get(namespace, name)
        if workload is not None:
            extra = _requirements(ReplicaSet(workload).spec.selector.raw)  # a StatefulSet's spec.selector alike
            selector = labels.Selector(tuple(sorted(selector.requirements + extra, key=lambda r: r.key)))
    return selector
