"""The PersistentVolume controller's decisions (control/controllers/persistentvolume/binder.py and the matching of
control/api/volumes.py): which volume a claim binds to, when it waits, asks a provisioner or is lost, and
what a volume's phase becomes."""

from __future__ import annotations

from typing import Any

import pytest

from control.api.volumes import find_matching_volume
from control.controllers.persistentvolume.binder import (
    ClaimStep,
    VolumeStep,
    bound_claim,
    bound_claim_status,
    bound_volume,
    decide_claim,
    decide_volume,
)


def pv(name: str, size: str = "1Gi", *, modes: tuple[str, ...] = ("ReadWriteOnce",), cls: str = "",
       phase: str = "Available", ref: dict | None = None, labels: dict | None = None, node: str | None = None,
       policy: str = "Retain", annotations: dict | None = None, mode: str = "Filesystem") -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": size}, "accessModes": list(modes), "storageClassName": cls,
                            "persistentVolumeReclaimPolicy": policy, "hostPath": {"path": f"/v/{name}"},
                            "volumeMode": mode}
    if ref is not None:
        spec["claimRef"] = ref
    if node is not None:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
    return {"metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}}, "spec": spec,
            "status": {"phase": phase}}


def pvc(name: str = "c", size: str = "1Gi", *, modes: tuple[str, ...] = ("ReadWriteOnce",), cls: str = "",
        volume: str = "", selector: dict | None = None, annotations: dict | None = None,
        uid: str = "u1") -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": list(modes), "resources": {"requests": {"storage": size}},
                            "storageClassName": cls, "volumeName": volume}
    if selector is not None:
        spec["selector"] = selector
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid, "annotations": annotations or {}},
            "spec": spec, "status": {"phase": "Pending"}}


def node(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}}


REF = {"namespace": "ns", "name": "c", "uid": "u1"}


@pytest.mark.parametrize(("claim", "volumes", "want"), [
    pytest.param(pvc(size="1Gi"), [pv("big", "10Gi"), pv("small", "2Gi"), pv("tiny", "512Mi")], "small",
                 id="smallest-that-fits"),
    pytest.param(pvc(), [pv("rwx", modes=("ReadWriteOnce", "ReadWriteMany")), pv("rwo")], "rwo",
                 id="fewest-access-modes-on-a-tie"),
    pytest.param(pvc(modes=("ReadWriteMany",)), [pv("rwo")], None, id="access-modes-must-be-contained"),
    pytest.param(pvc(cls="fast"), [pv("plain"), pv("fast", "5Gi", cls="fast")], "fast", id="same-class-only"),
    pytest.param(pvc(), [pv("fast", cls="fast")], None, id="no-class-matches-no-class-only"),
    pytest.param(pvc(selector={"matchLabels": {"tier": "gold"}}),
                 [pv("plain"), pv("gold", "9Gi", labels={"tier": "gold"})], "gold", id="selector"),
    pytest.param(pvc(), [pv("bound", ref={"namespace": "ns", "name": "other", "uid": "u9"}), pv("free", "5Gi")],
                 "free", id="taken-volume-skipped"),
    pytest.param(pvc(), [pv("free"), pv("reserved", "50Gi", ref={"namespace": "ns", "name": "c"})], "reserved",
                 id="pre-bound-volume-wins"),
    pytest.param(pvc(), [pv("released", phase="Released")], None, id="only-available"),
    pytest.param(pvc(), [pv("block", mode="Block")], None, id="volume-mode"),
])
def test_binding_choice(claim, volumes, want):
    found = find_matching_volume(claim, volumes)
    assert (found["metadata"]["name"] if found else None) == want


def test_delayed_binding_matches_only_on_the_selected_node():
    volumes = [pv("on-a", node="a"), pv("on-b", node="b")]
    assert find_matching_volume(pvc(), volumes, delay_binding=True) is None
    assert find_matching_volume(pvc(), volumes, node=node("b"), delay_binding=True)["metadata"]["name"] == "on-b"
    pinned = [pv("pre", node="a", ref={"namespace": "ns", "name": "c"})]
    assert find_matching_volume(pvc(), pinned, node=node("b"), delay_binding=True) is None


LOCAL = {"metadata": {"name": "local-path"}, "provisioner": "slimkube.io/local-path",
         "volumeBindingMode": "WaitForFirstConsumer"}
IMMEDIATE = {"metadata": {"name": "std"}, "provisioner": "example.com/disk", "volumeBindingMode": "Immediate"}


def decide(claim, volumes=(), storage_class=None):
    by_name = {v["metadata"]["name"]: v for v in volumes}
    return decide_claim(claim, list(volumes), volume_named=by_name.get, storage_class=storage_class,
                        node_named=lambda n: node(n))


@pytest.mark.parametrize(("claim", "volumes", "storage_class", "step", "reason"), [
    pytest.param(pvc(cls="local-path"), [], LOCAL, ClaimStep.PENDING, "WaitForFirstConsumer", id="wait-for-consumer"),
    pytest.param(pvc(cls="local-path", annotations={"volume.kubernetes.io/selected-node": "a"}), [], LOCAL,
                 ClaimStep.PROVISION, "ExternalProvisioning", id="provision-once-placed"),
    pytest.param(pvc(cls="local-path", annotations={"volume.kubernetes.io/selected-node": "a"}),
                 [pv("static", cls="local-path", node="a")], LOCAL, ClaimStep.BIND, None, id="static-on-selected-node"),
    pytest.param(pvc(cls="std"), [], IMMEDIATE, ClaimStep.PROVISION, "ExternalProvisioning", id="immediate-provision"),
    pytest.param(pvc(), [], None, ClaimStep.PENDING, "FailedBinding", id="nothing-to-bind"),
    pytest.param(pvc(cls="gone"), [], None, ClaimStep.PENDING, "ProvisioningFailed", id="unknown-class"),
    pytest.param(pvc(volume="v"), [pv("v")], None, ClaimStep.BIND, None, id="user-pre-bound"),
    pytest.param(pvc(volume="v"), [pv("v", ref={"namespace": "ns", "name": "x", "uid": "u7"})], None,
                 ClaimStep.PENDING, "FailedBinding", id="pre-bound-to-a-taken-volume"),
    pytest.param(pvc(volume="v", annotations={"pv.kubernetes.io/bind-completed": "yes"}), [], None, ClaimStep.LOST,
                 "ClaimLost", id="bound-volume-gone"),
    pytest.param(pvc(volume="v", annotations={"pv.kubernetes.io/bind-completed": "yes"}),
                 [pv("v", ref={"namespace": "ns", "name": "x", "uid": "u7"})], None, ClaimStep.LOST, "ClaimMisbound",
                 id="misbound"),
    pytest.param(pvc(volume="v", annotations={"pv.kubernetes.io/bind-completed": "yes"}), [pv("v", ref=REF)], None,
                 ClaimStep.BIND, None, id="bound-stays-bound"),
])
def test_claim_decisions(claim, volumes, storage_class, step, reason):
    decision = decide(claim, volumes, storage_class)
    assert decision.step is step
    assert (decision.event.reason if decision.event else None) == reason


@pytest.mark.parametrize(("volume", "claims", "step"), [
    pytest.param(pv("v", phase="Pending"), {}, VolumeStep.AVAILABLE, id="new-volume-available"),
    pytest.param(pv("v"), {}, VolumeStep.NOTHING, id="available-stays"),
    pytest.param(pv("v", ref={"namespace": "ns", "name": "c"}, phase="Pending"), {}, VolumeStep.AVAILABLE,
                 id="reserved-is-available"),
    pytest.param(pv("v", ref=REF, phase="Bound"), {}, VolumeStep.RELEASED, id="claim-gone-released"),
    pytest.param(pv("v", ref=REF, phase="Bound"), {("ns", "c"): pvc(uid="other", volume="v")}, VolumeStep.RELEASED,
                 id="claim-recreated-released"),
    pytest.param(pv("v", ref=REF, phase="Released"), {}, VolumeStep.NOTHING, id="retain-keeps"),
    pytest.param(pv("v", ref=REF, phase="Released", policy="Delete"), {}, VolumeStep.FAILED,
                 id="static-delete-has-no-plugin"),
    pytest.param(pv("v", ref=REF, phase="Released", policy="Delete",
                    annotations={"pv.kubernetes.io/provisioned-by": "slimkube.io/local-path"}), {},
                 VolumeStep.NOTHING, id="provisioned-delete-is-the-provisioners"),
    pytest.param(pv("v", ref=REF, phase="Available"), {("ns", "c"): pvc(volume="v")}, VolumeStep.BOUND,
                 id="bound"),
    pytest.param(pv("v", ref=REF), {("ns", "c"): pvc()}, VolumeStep.SYNC_CLAIM, id="claim-not-bound-yet"),
    pytest.param(pv("v", ref=REF, annotations={"pv.kubernetes.io/bound-by-controller": "yes"}),
                 {("ns", "c"): pvc(volume="other")}, VolumeStep.UNBIND, id="claim-bound-elsewhere"),
])
def test_volume_decisions(volume, claims, step):
    assert decide_volume(volume, claim_named=lambda ns, n: claims.get((ns, n))).step is step


def test_bind_writes_both_sides_once():
    claim, volume = pvc(), pv("v", "2Gi")
    new_volume = bound_volume(volume, claim)
    assert new_volume["spec"]["claimRef"]["uid"] == "u1"
    assert new_volume["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert bound_volume(new_volume, claim) is None
    new_claim = bound_claim(claim, new_volume)
    assert new_claim["spec"]["volumeName"] == "v"
    assert new_claim["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
    assert bound_claim(new_claim, new_volume) is None
    status = bound_claim_status(new_claim, new_volume)
    assert status == {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "2Gi"}}
    assert bound_claim_status({**new_claim, "status": status}, new_volume) is None
