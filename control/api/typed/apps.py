"""Typed views of apps/v1: Deployment, ReplicaSet, DaemonSet, StatefulSet, ControllerRevision.

Upstream: k8s.io/api/apps/v1/types.go. Absent fields read as zero values; pointer fields the API server
defaults (`replicas`, `revisionHistoryLimit`, `progressDeadlineSeconds`) read as None when absent, as
Go's nil. An update strategy reads its type; its rolling-update parameters (IntOrString data) are read whole.
"""

from __future__ import annotations

from control.api.typed.base import (
    View,
    boolean,
    integer,
    mapping,
    nested,
    nested_list,
    optional_int,
    optional_mapping,
    raw_list,
    string,
)
from control.api.typed.core import PodTemplateSpec
from control.api.typed.meta import Condition, LabelSelector, TypedObject


class DeploymentStrategy(View):
    __slots__ = ()
    type = string("type")
    rolling_update = optional_mapping("rollingUpdate")


class UpdateStrategy(View):
    """DaemonSetUpdateStrategy and StatefulSetUpdateStrategy: the same two fields."""

    __slots__ = ()
    type = string("type")
    rolling_update = optional_mapping("rollingUpdate")


class DeploymentSpec(View):
    __slots__ = ()
    replicas = optional_int("replicas")
    selector = nested("selector", LabelSelector)
    template = nested("template", PodTemplateSpec)
    strategy = nested("strategy", DeploymentStrategy)
    min_ready_seconds = integer("minReadySeconds")
    revision_history_limit = optional_int("revisionHistoryLimit")
    paused = boolean("paused")
    progress_deadline_seconds = optional_int("progressDeadlineSeconds")


class DeploymentStatus(View):
    __slots__ = ()
    observed_generation = integer("observedGeneration")
    replicas = integer("replicas")
    updated_replicas = integer("updatedReplicas")
    ready_replicas = integer("readyReplicas")
    available_replicas = integer("availableReplicas")
    unavailable_replicas = integer("unavailableReplicas")
    conditions = nested_list("conditions", Condition)
    collision_count = optional_int("collisionCount")


class Deployment(TypedObject):
    __slots__ = ()
    spec = nested("spec", DeploymentSpec)
    status = nested("status", DeploymentStatus)


class ReplicaSetSpec(View):
    __slots__ = ()
    replicas = optional_int("replicas")
    min_ready_seconds = integer("minReadySeconds")
    selector = nested("selector", LabelSelector)
    template = nested("template", PodTemplateSpec)


class ReplicaSetStatus(View):
    __slots__ = ()
    replicas = integer("replicas")
    fully_labeled_replicas = integer("fullyLabeledReplicas")
    ready_replicas = integer("readyReplicas")
    available_replicas = integer("availableReplicas")
    observed_generation = integer("observedGeneration")
    conditions = nested_list("conditions", Condition)


class ReplicaSet(TypedObject):
    __slots__ = ()
    spec = nested("spec", ReplicaSetSpec)
    status = nested("status", ReplicaSetStatus)


class DaemonSetSpec(View):
    __slots__ = ()
    selector = nested("selector", LabelSelector)
    template = nested("template", PodTemplateSpec)
    update_strategy = nested("updateStrategy", UpdateStrategy)
    min_ready_seconds = integer("minReadySeconds")
    revision_history_limit = optional_int("revisionHistoryLimit")


class DaemonSetStatus(View):
    __slots__ = ()
    current_number_scheduled = integer("currentNumberScheduled")
    number_misscheduled = integer("numberMisscheduled")
    desired_number_scheduled = integer("desiredNumberScheduled")
    number_ready = integer("numberReady")
    observed_generation = integer("observedGeneration")
    updated_number_scheduled = integer("updatedNumberScheduled")
    number_available = integer("numberAvailable")
    number_unavailable = integer("numberUnavailable")
    collision_count = optional_int("collisionCount")
    conditions = nested_list("conditions", Condition)


class DaemonSet(TypedObject):
    __slots__ = ()
    spec = nested("spec", DaemonSetSpec)
    status = nested("status", DaemonSetStatus)


class StatefulSetSpec(View):
    __slots__ = ()
    replicas = optional_int("replicas")
    selector = nested("selector", LabelSelector)
    template = nested("template", PodTemplateSpec)
    volume_claim_templates = raw_list("volumeClaimTemplates")
    service_name = string("serviceName")
    pod_management_policy = string("podManagementPolicy")
    update_strategy = nested("updateStrategy", UpdateStrategy)
    revision_history_limit = optional_int("revisionHistoryLimit")
    min_ready_seconds = integer("minReadySeconds")
    persistent_volume_claim_retention_policy = optional_mapping("persistentVolumeClaimRetentionPolicy")
    ordinals = optional_mapping("ordinals")


class StatefulSetStatus(View):
    __slots__ = ()
    observed_generation = integer("observedGeneration")
    replicas = integer("replicas")
    ready_replicas = integer("readyReplicas")
    current_replicas = integer("currentReplicas")
    updated_replicas = integer("updatedReplicas")
    available_replicas = integer("availableReplicas")
    current_revision = string("currentRevision")
    update_revision = string("updateRevision")
    collision_count = optional_int("collisionCount")
    conditions = nested_list("conditions", Condition)


class StatefulSet(TypedObject):
    __slots__ = ()
    spec = nested("spec", StatefulSetSpec)
    status = nested("status", StatefulSetStatus)


class ControllerRevision(TypedObject):
    __slots__ = ()
    data = mapping("data")
    revision = integer("revision")
