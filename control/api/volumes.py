"""PersistentVolumes, PersistentVolumeClaims and StorageClasses: the facts and pure decisions the API server,
the PV controller, the scheduler's VolumeBinding plugin and the kubelet share.

Upstream: pkg/apis/core/v1/helper (`GetPersistentVolumeClass`, `GetPersistentVolumeClaimClass`,
`GetAccessModesAsString`), k8s.io/component-helpers/storage/volume (`IsDefaultAnnotation`, the
`pv.kubernetes.io/*` and `volume.kubernetes.io/*` annotations, `CheckNodeAffinity`),
pkg/controller/volume/persistentvolume/util (`FindMatchingVolume`, `IsVolumeBoundToClaim`,
`CheckVolumeModeMismatches`, `CheckAccessModes`) and index.go (`findByClaim`: among the volumes whose
access modes contain the claim's, the ones with the fewest modes are tried first).

`find_matching_volume(claim, volumes, node=…, delay_binding=…)`, as upstream:
1. a volume pre-bound to the claim (`claimRef` naming it, with its uid or none) wins at once — unless its
   node affinity excludes `node`, then nothing matches;
2. otherwise the smallest Available volume of the claim's class whose capacity covers the request, whose
   volumeMode equals the claim's, whose labels the claim's selector selects, whose access modes contain
   the claim's and whose node affinity admits `node` (when given); volumes being deleted never match;
3. a claim of a WaitForFirstConsumer class is matched only once a node is known (`delay_binding` without
   `node` finds nothing but a pre-bound volume): the PV controller leaves it to the scheduler.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from control.api.nodeaffinity import node_selector_matches
from control.apimachinery.labels import SelectorError, selector_from_label_selector
from control.apimachinery.quantity import QuantityError, to_bytes

Obj = Mapping[str, Any]

ANN_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
ANN_BETA_DEFAULT_CLASS = "storageclass.beta.kubernetes.io/is-default-class"
ANN_BETA_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
NOT_PROVISIONED = "kubernetes.io/no-provisioner"  # upstream's provisioner of classes for static local PVs

# The built-in local-path provisioner (nodeagent/volumes/local_path.py) and the default class the API server
# creates for it at start-up (control/apiserver/controlplane/bootstrap.py), in k3s's local-path-provisioner shape.
LOCAL_PATH_PROVISIONER = "slimkube.io/local-path"
LOCAL_PATH_CLASS_NAME = "local-path"


def local_path_class() -> dict[str, Any]:
    """The `local-path` StorageClass as bootstrap creates it (k3s's manifest, with our provisioner name)."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": LOCAL_PATH_CLASS_NAME, "annotations": {ANN_DEFAULT_CLASS: "true"}},
            "provisioner": LOCAL_PATH_PROVISIONER, "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer"}


ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
_SHORT_MODES = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}
RECLAIM_POLICIES = ("Retain", "Delete", "Recycle")
VOLUME_MODES = ("Filesystem", "Block")
BINDING_IMMEDIATE = "Immediate"
BINDING_WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
BINDING_MODES = (BINDING_IMMEDIATE, BINDING_WAIT_FOR_FIRST_CONSUMER)


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: Obj) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def claim_class(claim: Obj) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation wins over spec.storageClassName; "" is no class."""
    annotations = _meta(claim).get("annotations") or {}
    if ANN_BETA_CLASS in annotations:
        return str(annotations[ANN_BETA_CLASS])
    return str(_spec(claim).get("storageClassName") or "")


def volume_class(volume: Obj) -> str:
    annotations = _meta(volume).get("annotations") or {}
    if ANN_BETA_CLASS in annotations:
        return str(annotations[ANN_BETA_CLASS])
    return str(_spec(volume).get("storageClassName") or "")


def is_default_class(storage_class: Obj) -> bool:
    """IsDefaultAnnotation: the GA or beta annotation set to "true"."""
    annotations = _meta(storage_class).get("annotations") or {}
    return annotations.get(ANN_DEFAULT_CLASS) == "true" or annotations.get(ANN_BETA_DEFAULT_CLASS) == "true"


def default_class(classes: Iterable[Obj]) -> Obj | None:
    """The default StorageClass as upstream's GetDefaultClass picks it: of several defaults the newest by
    creationTimestamp, of equally new ones the first by name."""
    defaults = sorted((c for c in classes if is_default_class(c)), key=lambda c: str(_meta(c).get("name") or ""))
    defaults.sort(key=lambda c: str(_meta(c).get("creationTimestamp") or ""), reverse=True)  # stable: names stay
    return defaults[0] if defaults else None


def access_modes_string(modes: Iterable[str] | None) -> str:
    """GetAccessModesAsString: `RWO,ROX,RWX,RWOP` in that order, each once."""
    present = set(modes or ())
    return ",".join(_SHORT_MODES[mode] for mode in ACCESS_MODES if mode in present)


def storage_bytes(resources: Mapping[str, Any] | None) -> int:
    """The `storage` quantity of a capacity or request list in bytes (0 when absent or malformed)."""
    value = (resources or {}).get("storage")
    if value is None:
        return 0
    try:
        return to_bytes(str(value))
    except (QuantityError, ValueError):
        return 0


def claim_request(claim: Obj) -> int:
    return storage_bytes((_spec(claim).get("resources") or {}).get("requests"))


def volume_capacity(volume: Obj) -> int:
    return storage_bytes(_spec(volume).get("capacity"))


def volume_mode(obj: Obj) -> str:
    return str(_spec(obj).get("volumeMode") or "Filesystem")


def is_bound_to_claim(volume: Obj, claim: Obj) -> bool:
    """IsVolumeBoundToClaim: the volume's claimRef names the claim (and its uid, when it has one)."""
    ref = _spec(volume).get("claimRef")
    if not isinstance(ref, Mapping):
        return False
    meta = _meta(claim)
    if ref.get("name") != meta.get("name") or (ref.get("namespace") or "") != (meta.get("namespace") or ""):
        return False
    return not ref.get("uid") or ref.get("uid") == meta.get("uid")


def node_affinity_admits(volume: Obj, node: Obj) -> bool:
    """CheckNodeAffinity: a volume without required node affinity fits every node."""
    affinity = _spec(volume).get("nodeAffinity") or {}
    return node_selector_matches(affinity.get("required"), node)


def access_modes_contain(volume: Obj, claim: Obj) -> bool:
    return set(_spec(claim).get("accessModes") or ()) <= set(_spec(volume).get("accessModes") or ())


def _selects(claim: Obj, volume: Obj) -> bool:
    selector = _spec(claim).get("selector")
    if selector is None:
        return True
    try:
        return selector_from_label_selector(selector).matches(_meta(volume).get("labels") or {})
    except SelectorError:
        return False


def find_matching_volume(claim: Obj, volumes: Iterable[Obj], *, node: Obj | None = None,
                         delay_binding: bool = False) -> Obj | None:
    """The volume `claim` should bind to, or None (module notes)."""
    requested = claim_request(claim)
    wanted_class = claim_class(claim)
    best: tuple[int, int, str] | None = None
    chosen: Obj | None = None
    for volume in volumes:
        if _spec(volume).get("claimRef") is not None and not is_bound_to_claim(volume, claim):
            continue
        capacity = volume_capacity(volume)
        if capacity < requested or volume_mode(volume) != volume_mode(claim):
            continue
        if _meta(volume).get("deletionTimestamp"):
            continue
        affinity_ok = node is None or node_affinity_admits(volume, node)
        if is_bound_to_claim(volume, claim):
            return volume if affinity_ok else None
        if node is None and delay_binding:
            continue
        if (volume.get("status") or {}).get("phase") != "Available" or not _selects(claim, volume):
            continue
        if volume_class(volume) != wanted_class or not affinity_ok or not access_modes_contain(volume, claim):
            continue
        rank = (capacity, len(_spec(volume).get("accessModes") or ()), str(_meta(volume).get("name") or ""))
        if best is None or rank < best:
            best, chosen = rank, volume
    return chosen


def volume_path(volume: Obj) -> str:
    """Where a volume's data is on its node: `hostPath.path` or `local.path` ("" for other sources)."""
    spec = _spec(volume)
    for source in ("hostPath", "local"):
        found = spec.get(source)
        if isinstance(found, Mapping) and found.get("path"):
            return str(found["path"])
    return ""


def pod_claim_names(pod: Obj) -> list[str]:
    """The claims a pod's `persistentVolumeClaim` volumes name, in volume order (ephemeral volumes aside)."""
    names = []
    for volume in _spec(pod).get("volumes") or []:
        source = volume.get("persistentVolumeClaim") if isinstance(volume, Mapping) else None
        if isinstance(source, Mapping) and source.get("claimName"):
            names.append(str(source["claimName"]))
    return names
