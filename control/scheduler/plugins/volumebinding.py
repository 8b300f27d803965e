"""VolumeBinding: a pod goes only where its PersistentVolumeClaims' volumes can be used, and a claim of a
WaitForFirstConsumer class learns the node its first pod was scheduled to.

Upstream: pkg/scheduler/framework/plugins/volumebinding/volume_binding.go and binder.go (`PreFilter`: every
claim must exist and not be being deleted, an unbound claim of an Immediate class makes the pod wait —
"pod has unbound immediate PersistentVolumeClaims"; `Filter` → `FindPodVolumes`: a bound claim's volume's
node affinity must admit the node — "node(s) had volume node affinity conflict"; an unbound delayed claim
needs an Available matching volume on the node or a class whose provisioner can make one — "node(s) didn't
find available persistent volumes to bind"; `PreBind` → `BindPodVolumes`: the claims get the
`volume.kubernetes.io/selected-node` annotation), with the reason texts of its ErrReason* constants.

Departures: upstream's PreBind also binds the static volumes it picked itself and waits (up to 10 min) until
every claim is bound before the pod is bound. Here the scheduler only annotates the delayed claims with the
chosen node (`claims_to_annotate`, done by the scheduler loop before the binding) and the PV controller binds
them — to a matching volume on that node, else through the provisioner
(control/controllers/persistentvolume/binder.py); the pod is bound at once and its kubelet waits for the
claims (a FailedMount event until they are bound). No Score (upstream's capacity scoring is alpha), no
allowedTopologies, no CSI capacity.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from control.api.typed.core import PersistentVolumeClaim
from control.api.typed.core import Pod as PodView
from control.api.volumes import (
    ANN_SELECTED_NODE,
    BINDING_WAIT_FOR_FIRST_CONSUMER,
    NOT_PROVISIONED,
    claim_class,
    find_matching_volume,
    node_affinity_admits,
    pod_claim_names,
)
from control.scheduler.cache import Snapshot
from control.scheduler.framework import SKIP, SUCCESS, CycleState, Listers, Pod, Status, unschedulable
from control.scheduler.nodeinfo import NodeInfo

NAME = "VolumeBinding"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
NODE_CONFLICT = "node(s) had volume node affinity conflict"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"


@dataclass(frozen=True)
class _State:
    bound: tuple[Mapping[str, Any], ...]  # the volumes of the pod's bound claims
    delayed: tuple[tuple[Mapping[str, Any], Mapping[str, Any]], ...]  # (unbound claim, its WFFC class)
    volumes: tuple[Mapping[str, Any], ...]  # every volume, for the delayed claims' matching


def _class_of(claim: Mapping[str, Any], listers: Listers) -> Mapping[str, Any] | None:
    name = claim_class(claim)
    return listers.storage_classes.get(None, name) if name else None


def _is_delayed(storage_class: Mapping[str, Any] | None) -> bool:
    return storage_class is not None and storage_class.get("volumeBindingMode") == BINDING_WAIT_FOR_FIRST_CONSUMER


def claims_to_annotate(pod: Pod, listers: Listers, node_name: str) -> list[Mapping[str, Any]]:
    """The pod's unbound claims of WaitForFirstConsumer classes not yet annotated with `node_name`
    (upstream AssumePodVolumes + BindPodVolumes for the claims to provision)."""
    namespace = PodView(pod).metadata.namespace
    found = []
    for name in pod_claim_names(pod):
        claim = listers.persistent_volume_claims.get(namespace, name)
        if claim is None or PersistentVolumeClaim(claim).spec.volume_name:
            continue
        annotations = PersistentVolumeClaim(claim).metadata.annotations
        if _is_delayed(_class_of(claim, listers)) and annotations.get(ANN_SELECTED_NODE) != node_name:
            found.append(claim)
    return found


class VolumeBinding:
    name = NAME

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status:
        names = pod_claim_names(pod)
        if not names:
            return SKIP
        listers = state.listers
        namespace = PodView(pod).metadata.namespace
        bound: list[Mapping[str, Any]] = []
        delayed: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = []
        for name in names:
            claim = listers.persistent_volume_claims.get(namespace, name)
            if claim is None:
                return unschedulable(f'persistentvolumeclaim "{name}" not found', resolvable=False)
            if PersistentVolumeClaim(claim).metadata.deletion_timestamp:
                return unschedulable(f'persistentvolumeclaim "{name}" is being deleted', resolvable=False)
            volume_name = PersistentVolumeClaim(claim).spec.volume_name
            if volume_name:
                volume = listers.persistent_volumes.get(None, volume_name)
                if volume is None:
                    return unschedulable(f'pvc {namespace}/{name} is bound to non-existent pv "{volume_name}"',
                                         resolvable=False)
                bound.append(volume)
                continue
            storage_class = _class_of(claim, listers)
            if not _is_delayed(storage_class):
                return unschedulable(UNBOUND_IMMEDIATE, resolvable=False)
            assert storage_class is not None
            delayed.append((claim, storage_class))
        state.write(NAME, _State(tuple(bound), tuple(delayed),
                                 tuple(listers.persistent_volumes.list()) if delayed else ()))
        return SUCCESS

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        data: _State = state.read(NAME)
        node_obj = node.node or {}
        for volume in data.bound:
            if not node_affinity_admits(volume, node_obj):
                return unschedulable(NODE_CONFLICT, resolvable=False)
        for claim, storage_class in data.delayed:
            if find_matching_volume(claim, data.volumes, node=node_obj, delay_binding=True) is not None:
                continue
            provisioner = storage_class.get("provisioner") or ""
            if not provisioner or provisioner == NOT_PROVISIONED:
                return unschedulable(BIND_CONFLICT, resolvable=False)
        return SUCCESS
