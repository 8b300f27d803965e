"""Which objects a node may read: the graph of pods bound to it and what they reference (upstream:
plugin/pkg/auth/authorizer/node/graph.go and the reference visitors of pkg/api/pod/util.go
VisitPodSecretNames/VisitPodConfigmapNames and pkg/api/v1/persistentvolume/util.go VisitPVSecretNames).

Upstream keeps a directed graph with vertices per object and edges pointing towards the node:
secret/configmap/pvc/serviceaccount/resourceclaim → pod → node, pv → pvc, secret → pv, volumeattachment →
node, and asks "is there a path from this object to this node". The paths are never longer than
secret → pv → pvc → pod → node, so here the same question is answered from three indexes kept under one
lock, each changed incrementally as one pod, PV or VolumeAttachment changes:

- `_reachable[(node, ref)]`: how many pods bound to `node` reference `ref` directly (a count, so a secret
  two pods use stays readable until both are gone);
- `_pvs[name]`: a PersistentVolume's claim (from `spec.claimRef`) and the secrets it references, with the
  reverse index from secret to PVs;
- `_attachments[name]`: the node of a VolumeAttachment.

A PV is reachable when its claim is; a secret also when a reachable PV references it. Only pods with a
`spec.nodeName` enter the graph, as upstream's populator. `pod_references` and `pv_references` are pure.

Departure: PV secret references are read from the volume sources slimkube's users meet (csi's five secret
refs, and the `secretRef`/`secretName` of the in-tree sources upstream visits), with upstream's namespace
defaults for each.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

SECRET, CONFIGMAP, PVC, PV = "secrets", "configmaps", "persistentvolumeclaims", "persistentvolumes"
SERVICE_ACCOUNT, RESOURCE_CLAIM, VOLUME_ATTACHMENT = "serviceaccounts", "resourceclaims", "volumeattachments"

_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
_VOLUME_SECRET_REFS = ("cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "storageos")
_CSI_SECRET_REFS = ("controllerPublishSecretRef", "nodePublishSecretRef", "controllerExpandSecretRef",
                    "nodeStageSecretRef", "nodeExpandSecretRef")


class Ref(NamedTuple):
    """One object a node may need: its resource (plural), namespace ("" when cluster-scoped) and name."""

    resource: str
    namespace: str
    name: str


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _name(value: Any, key: str = "name") -> str:
    name = _dict(value).get(key)
    return name if isinstance(name, str) else ""


def _container_refs(spec: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    for key in _CONTAINER_LISTS:
        for container in _list(spec.get(key)):
            for env in _list(container.get("env")):
                source = _dict(env.get("valueFrom"))
                yield SECRET, _name(source.get("secretKeyRef"))
                yield CONFIGMAP, _name(source.get("configMapKeyRef"))
            for env_from in _list(container.get("envFrom")):
                yield SECRET, _name(env_from.get("secretRef"))
                yield CONFIGMAP, _name(env_from.get("configMapRef"))


def _volume_refs(pod_name: str, spec: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    for volume in _list(spec.get("volumes")):
        yield SECRET, _name(volume.get("secret"), "secretName")
        yield SECRET, _name(volume.get("azureFile"), "secretName")
        yield SECRET, _name(_dict(volume.get("csi")).get("nodePublishSecretRef"))
        for source in _VOLUME_SECRET_REFS:
            yield SECRET, _name(_dict(volume.get(source)).get("secretRef"))
        yield CONFIGMAP, _name(volume.get("configMap"))
        for projected in _list(_dict(volume.get("projected")).get("sources")):
            yield SECRET, _name(projected.get("secret"))
            yield CONFIGMAP, _name(projected.get("configMap"))
        yield PVC, _name(volume.get("persistentVolumeClaim"), "claimName")
        if "ephemeral" in volume and _name(volume):
            yield PVC, f"{pod_name}-{_name(volume)}"  # the generic ephemeral volume's claim


def pod_references(pod: Mapping[str, Any]) -> frozenset[Ref]:
    """Everything in the pod's namespace the kubelet must read to run it: image pull, env and volume
    secrets, configmaps, claims (generic ephemeral ones by their derived name), the service account and
    the resource claims."""
    metadata, spec = _dict(pod.get("metadata")), _dict(pod.get("spec"))
    namespace, pod_name = _name(metadata, "namespace") or "default", _name(metadata)
    pairs: list[tuple[str, str]] = [(SECRET, _name(s)) for s in _list(spec.get("imagePullSecrets"))]
    pairs.extend(_container_refs(spec))
    pairs.extend(_volume_refs(pod_name, spec))
    pairs.append((SERVICE_ACCOUNT, _name(spec, "serviceAccountName")))
    pairs.extend((RESOURCE_CLAIM, _name(c, "resourceClaimName")) for c in _list(spec.get("resourceClaims")))
    pairs.extend((RESOURCE_CLAIM, _name(c, "resourceClaimName"))
                 for c in _list(_dict(pod.get("status")).get("resourceClaimStatuses")))
    return frozenset(Ref(resource, namespace, name) for resource, name in pairs if name)


def pv_references(pv: Mapping[str, Any]) -> tuple[Ref | None, frozenset[Ref]]:
    """A PersistentVolume's claim (None when unbound) and the secrets its volume source names."""
    spec = _dict(pv.get("spec"))
    claim_ref = _dict(spec.get("claimRef"))
    claim_namespace = _name(claim_ref, "namespace")
    claim = Ref(PVC, claim_namespace, _name(claim_ref)) if claim_namespace and _name(claim_ref) else None
    secrets: set[Ref] = set()

    def add(ref: Any, default_namespace: str) -> None:
        if _name(ref):
            secrets.add(Ref(SECRET, _name(ref, "namespace") or default_namespace, _name(ref)))

    csi = _dict(spec.get("csi"))
    for key in _CSI_SECRET_REFS:
        add(csi.get(key), "")
    for source in _VOLUME_SECRET_REFS:
        add(_dict(spec.get(source)).get("secretRef"), claim_namespace if source != "cephfs" else "default")
    azure = _dict(spec.get("azureFile"))
    if _name(azure, "secretName"):
        secrets.add(Ref(SECRET, _name(azure, "secretNamespace") or claim_namespace or "default",
                        _name(azure, "secretName")))
    return claim, frozenset(s for s in secrets if s.namespace)


class _PV(NamedTuple):
    claim: Ref | None
    secrets: frozenset[Ref]


PODS, PVS, ATTACHMENTS = "/registry/pods/", "/registry/persistentvolumes/", "/registry/volumeattachments/"


class NodeGraph:
    """The graph, changed one object at a time from the watch cache (a follower.Consumer) and read by the
    Node authorizer; thread-safe (the authorizer runs on worker threads, the follower on the loop)."""

    prefixes: tuple[str, ...] = (PODS, PVS, ATTACHMENTS)

    def __init__(self) -> None:
        self._lock = threading.RLock()  # reset applies under it
        self._pods: dict[tuple[str, str], tuple[str, frozenset[Ref]]] = {}  # (ns, name) → (node, refs)
        self._reachable: dict[tuple[str, Ref], int] = {}  # (node, ref) → pods on node referencing ref
        self._pvs: dict[str, _PV] = {}
        self._pvs_by_secret: dict[Ref, set[str]] = {}
        self._attachments: dict[str, str] = {}  # VolumeAttachment name → node

    def reset(self, objects: Iterable[tuple[str, dict[str, Any] | None]]) -> None:
        """Replace everything with `objects` (storage key, object), at once for readers."""
        with self._lock:
            self._pods.clear()
            self._reachable.clear()
            self._pvs.clear()
            self._pvs_by_secret.clear()
            self._attachments.clear()
            for key, obj in objects:
                self.apply(key, obj)

    def apply(self, key: str, obj: dict[str, Any] | None) -> None:
        """One stored object's state (None: gone), by its storage key."""
        if key.startswith(PODS):
            namespace, _, name = key[len(PODS):].partition("/")
            self.set_pod(namespace, name, obj)
        elif key.startswith(PVS):
            self.set_pv(key[len(PVS):], obj)
        elif key.startswith(ATTACHMENTS):
            self.set_attachment(key[len(ATTACHMENTS):], obj)

    def caught_up(self, revision: int) -> None:
        """Nothing waits on the graph's freshness: a kubelet retries what it was refused."""

    def set_pod(self, namespace: str, name: str, pod: Mapping[str, Any] | None) -> None:
        """Put the pod's current state (None: deleted) in the graph."""
        node = _name(_dict(pod.get("spec")) if pod is not None else {}, "nodeName")
        refs = pod_references(pod) if pod is not None and node else frozenset()
        with self._lock:
            old = self._pods.pop((namespace, name), None)
            if old is not None:
                for ref in old[1]:
                    key = (old[0], ref)
                    self._reachable[key] -= 1
                    if not self._reachable[key]:
                        del self._reachable[key]
            if node:
                self._pods[(namespace, name)] = (node, refs)
                for ref in refs:
                    self._reachable[(node, ref)] = self._reachable.get((node, ref), 0) + 1

    def set_pv(self, name: str, pv: Mapping[str, Any] | None) -> None:
        entry = _PV(*pv_references(pv)) if pv is not None else None
        with self._lock:
            old = self._pvs.pop(name, None)
            for secret in old.secrets if old is not None else ():
                self._pvs_by_secret[secret].discard(name)
                if not self._pvs_by_secret[secret]:
                    del self._pvs_by_secret[secret]
            if entry is not None:
                self._pvs[name] = entry
                for secret in entry.secrets:
                    self._pvs_by_secret.setdefault(secret, set()).add(name)

    def set_attachment(self, name: str, attachment: Mapping[str, Any] | None) -> None:
        node = _name(_dict(attachment.get("spec")) if attachment is not None else {}, "nodeName")
        with self._lock:
            if node:
                self._attachments[name] = node
            else:
                self._attachments.pop(name, None)

    def _pv_reachable(self, node: str, name: str) -> bool:
        pv = self._pvs.get(name)
        return pv is not None and pv.claim is not None and (node, pv.claim) in self._reachable

    def has_path(self, node: str, ref: Ref) -> bool:
        """Whether `ref` leads to `node`: a pod bound there references it, or (PVs) its claim is referenced,
        or (secrets) a reachable PV references it."""
        with self._lock:
            if ref.resource == VOLUME_ATTACHMENT:
                return self._attachments.get(ref.name) == node
            if (node, ref) in self._reachable:
                return True
            if ref.resource == PV:
                return self._pv_reachable(node, ref.name)
            if ref.resource == SECRET:
                return any(self._pv_reachable(node, pv) for pv in self._pvs_by_secret.get(ref, ()))
            return False
