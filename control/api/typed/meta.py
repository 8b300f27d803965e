"""Typed views of meta/v1: ObjectMeta, OwnerReference, ListMeta, Condition, LabelSelector, and the
base of every top-level kind.

Upstream: k8s.io/apimachinery/pkg/apis/meta/v1/types.go. Departure: timestamps stay the RFC 3339 strings
of the wire (parse them with `control.apimachinery.meta` where a time is needed); an absent
`deletionTimestamp` reads as None, as Go's nil `*Time`.
"""

from __future__ import annotations

from control.api.typed.base import (
    View,
    integer,
    nested,
    nested_list,
    optional_bool,
    optional_int,
    optional_string,
    raw_list,
    string,
    string_list,
    string_map,
)


class OwnerReference(View):
    __slots__ = ()
    api_version = string("apiVersion")
    kind = string("kind")
    name = string("name")
    uid = string("uid")
    controller = optional_bool("controller")
    block_owner_deletion = optional_bool("blockOwnerDeletion")


class ObjectMeta(View):
    __slots__ = ()
    name = string("name")
    generate_name = string("generateName")
    namespace = string("namespace")
    uid = string("uid")
    resource_version = string("resourceVersion")
    generation = integer("generation")
    creation_timestamp = string("creationTimestamp")
    deletion_timestamp = optional_string("deletionTimestamp")
    deletion_grace_period_seconds = optional_int("deletionGracePeriodSeconds")
    labels = string_map("labels")
    annotations = string_map("annotations")
    owner_references = nested_list("ownerReferences", OwnerReference)
    finalizers = string_list("finalizers")
    managed_fields = raw_list("managedFields")

    @property
    def controller_ref(self) -> OwnerReference | None:
        """The owner reference marked `controller: true` (GetControllerOf); validation allows one."""
        return next((ref for ref in self.owner_references if ref.controller is True), None)


class ListMeta(View):
    __slots__ = ()
    resource_version = string("resourceVersion")
    continue_ = string("continue")
    remaining_item_count = optional_int("remainingItemCount")


class Condition(View):
    """metav1.Condition, and the shape every kind's own condition type shares (type, status, reason…)."""

    __slots__ = ()
    type = string("type")
    status = string("status")
    reason = string("reason")
    message = string("message")
    observed_generation = integer("observedGeneration")
    last_transition_time = string("lastTransitionTime")
    last_update_time = string("lastUpdateTime")
    last_probe_time = string("lastProbeTime")
    last_heartbeat_time = string("lastHeartbeatTime")


class LabelSelector(View):
    """The selector as data (match it with `control.apimachinery.labels`); `raw` is what they take."""

    __slots__ = ()
    match_labels = string_map("matchLabels")
    match_expressions = raw_list("matchExpressions")


class TypedObject(View):
    """A top-level kind: apiVersion, kind, metadata (TypeMeta + ObjectMeta)."""

    __slots__ = ()
    api_version = string("apiVersion")
    kind = string("kind")
    metadata = nested("metadata", ObjectMeta)

    @property
    def key(self) -> str:
        """`namespace/name`, or `name` when cluster-scoped: the cache and work-queue key."""
        metadata = self.metadata
        namespace = metadata.namespace
        return f"{namespace}/{metadata.name}" if namespace else metadata.name


class List(View):
    """A list response: metadata (ListMeta) and the items as dicts."""

    __slots__ = ()
    api_version = string("apiVersion")
    kind = string("kind")
    metadata = nested("metadata", ListMeta)
    items = raw_list("items")
