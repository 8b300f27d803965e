"""Mirror pods: the API server's read-only copy of each static pod this kubelet runs.

Upstream: pkg/kubelet/pod/mirror_client.go (CreateMirrorPod, DeleteMirrorPod) and the mirror handling of
kubelet.go syncPod / HandlePodCleanups (deleteOrphanedMirrorPods).

- A mirror is the static pod (same namespace and name, "<name>-<node>") without its uid, status or
  resourceVersion, with annotation kubernetes.io/config.mirror = the static pod's config hash and an
  ownerReference to the Node (controller: true), so deleting the Node takes its mirrors along.
- `sync` makes the API server hold exactly one current mirror per static pod: a mirror whose hash
  differs, or that is being deleted (a user's `kubectl delete`), is deleted and made again; a mirror with
  no static pod behind it is deleted. Deletes use gracePeriodSeconds=0 with a uid precondition (as
  upstream), so the kubelet never removes a newer pod that took the name meanwhile.
- A pod of the same name that is not a mirror (a user's) is left alone and reported, as upstream does.

`sync` decides with `plan` (pure) and then acts; the mirror's status is written by the status manager.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from control.api.typed.core import Pod
from control.client.errors import ApiError, Conflict, NotFound
from nodeagent.sources import CONFIG_MIRROR, config_hash

log = logging.getLogger(__name__)


def mirror_of(static_pod: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name) of the mirror pod of `static_pod`."""
    meta = static_pod.get("metadata") or {}
    return meta.get("namespace") or "default", meta["name"]


def _meta(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return pod.get("metadata") or {}


def is_mirror(pod: Mapping[str, Any]) -> bool:
    return CONFIG_MIRROR in Pod(pod).metadata.annotations


def mirror_body(static_pod: Mapping[str, Any], node: Mapping[str, Any]) -> dict[str, Any]:
    """The mirror pod to create for `static_pod` on `node` (the Node object, for its uid)."""
    pod = copy.deepcopy(dict(static_pod))
    pod.pop("status", None)
    metadata = pod.setdefault("metadata", {})
    for key in ("uid", "resourceVersion", "selfLink", "creationTimestamp", "generation", "managedFields"):
        metadata.pop(key, None)
    metadata["annotations"] = {**(metadata.get("annotations") or {}), CONFIG_MIRROR: config_hash(static_pod)}
    node_meta = node.get("metadata") or {}
    metadata["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": node_meta.get("name"),
                                    "uid": node_meta.get("uid"), "controller": True}]
    return pod


@dataclass(frozen=True)
class MirrorPlan:
    delete: tuple[tuple[str, str, str], ...]  # (namespace, name, uid) of mirrors to remove
    create: tuple[str, ...]  # config hashes (static pod uids) whose mirror must be made


def plan(static_pods: Sequence[Mapping[str, Any]], existing: Sequence[Mapping[str, Any]]) -> MirrorPlan:
    """What to delete and create so each static pod has one current mirror. `existing` are the node's
    pods in the API (mirrors and others)."""
    wanted = {mirror_of(p): config_hash(p) for p in static_pods}
    by_key: dict[tuple[Any, Any], Mapping[str, Any]] = {  # as the API has them (a missing field stays None)
        (_meta(p).get("namespace"), _meta(p).get("name")): p for p in existing}
    delete: list[tuple[str, str, str]] = []
    create: list[str] = []
    for key, pod in by_key.items():
        if not is_mirror(pod):
            continue
        meta = pod.get("metadata") or {}
        current = meta["annotations"][CONFIG_MIRROR] == wanted.get(key) and not meta.get("deletionTimestamp")
        if not current:
            delete.append((key[0], key[1], meta.get("uid", "")))
    gone = {(ns, name) for ns, name, _ in delete}
    for static in static_pods:
        key = mirror_of(static)
        found = by_key.get(key)
        if found is None or key in gone:
            create.append(config_hash(static))
        elif not is_mirror(found):
            log.warning("static pod %s/%s: a pod that is not its mirror has the name; no mirror made", *key)
    return MirrorPlan(delete=tuple(delete), create=tuple(create))


class MirrorPods:
    """Keeps the mirror pods of one node's static pods in the API server."""

    def __init__(self, client: Any, node_name: str) -> None:
        self.client = client
        self.node_name = node_name

    def sync(self, static_pods: list[dict[str, Any]]) -> None:
        """One pass: list this node's pods, then delete and create mirrors as `plan` says. API errors on
        one mirror are logged and leave the rest to go on; the next sync tries again."""
        existing = self.client.list("/api/v1/pods", params={"fieldSelector": f"spec.nodeName={self.node_name}"})
        decided = plan(static_pods, existing.get("items") or [])
        for namespace, name, uid in decided.delete:
            try:
                self.client.delete(f"/api/v1/namespaces/{namespace}/pods/{name}", grace_period_seconds=0,
                                   preconditions={"uid": uid} if uid else None)
                log.info("deleted mirror pod %s/%s", namespace, name)
            except NotFound:
                pass
            except ApiError as exc:
                log.warning("deleting mirror pod %s/%s failed: %s", namespace, name, exc)
        if not decided.create:
            return
        node = self.client.get(f"/api/v1/nodes/{self.node_name}")
        by_hash = {config_hash(p): p for p in static_pods}
        for digest in decided.create:
            body = mirror_body(by_hash[digest], node)
            namespace, name = mirror_of(body)
            try:
                self.client.create(f"/api/v1/namespaces/{namespace}/pods", body)
                log.info("created mirror pod %s/%s", namespace, name)
            except Conflict:
                log.info("mirror pod %s/%s: the name is taken (a deletion in progress?); next sync retries",
                         namespace, name)
            except ApiError as exc:
                log.warning("creating mirror pod %s/%s failed: %s", namespace, name, exc)
