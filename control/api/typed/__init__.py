"""Typed read-only views of API objects: a class holding one wire dict, with properties for the fields
code reads (`Pod(obj).spec.node_name`), one module per API group (meta, core, apps, batch, discovery,
policy, storage, coordination).

Objects stay plain dicts end to end (they must round-trip unknown fields exactly); a view reads its dict
on access and copies nothing, so wrapping an object costs one small allocation. Absent fields read as
upstream's zero values, which is what `(obj.get("spec") or {}).get(...)` chains spell out by hand.
The machinery is in `base`; the classes follow the upstream Go types of k8s.io/api.

Pure: no I/O, no imports beyond the standard library and this package.
"""

from control.api.typed.apps import ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet
from control.api.typed.base import EMPTY, View, ViewList
from control.api.typed.batch import CronJob, Job
from control.api.typed.coordination import Lease
from control.api.typed.core import (
    ConfigMap,
    Container,
    ContainerStatus,
    Endpoints,
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodSpec,
    PodStatus,
    PodTemplateSpec,
    ReplicationController,
    Secret,
    Service,
)
from control.api.typed.discovery import EndpointSlice
from control.api.typed.meta import Condition, LabelSelector, ObjectMeta, OwnerReference, TypedObject
from control.api.typed.policy import PodDisruptionBudget
from control.api.typed.storage import StorageClass

__all__ = [
    "EMPTY", "Condition", "ConfigMap", "Container", "ContainerStatus", "ControllerRevision", "CronJob",
    "DaemonSet", "Deployment", "EndpointSlice", "Endpoints", "Job", "LabelSelector", "Lease", "Namespace",
    "Node", "ObjectMeta", "OwnerReference", "PersistentVolume", "PersistentVolumeClaim", "Pod",
    "PodDisruptionBudget", "PodSpec", "PodStatus", "PodTemplateSpec", "ReplicaSet",
    "ReplicationController", "Secret", "Service",
    "StatefulSet", "StorageClass", "TypedObject", "View", "ViewList",
]
