"""The node-local share of the local-path provisioner (nodeagent/volumes/local_path.py): which claims it
takes, the volume it makes, which volumes it deletes and which directories it may remove; and a
`persistentVolumeClaim` volume as the kubelet sets it up (pod_volumes.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from control.api.volumes import local_path_class
from nodeagent.volumes.local_path import owned_directory, plan_volume, should_delete, wants_volume
from nodeagent.volumes.mounts import container_mounts
from nodeagent.volumes.pod_volumes import VolumeError, setup
from tests.support.fake_objects import FakeObjects

ANN = {"volume.kubernetes.io/storage-provisioner": "slimkube.io/local-path",
       "volume.kubernetes.io/selected-node": "n1"}


def claim(annotations: dict | None = None, volume: str = "") -> dict:
    return {"metadata": {"name": "data", "namespace": "ns", "uid": "abc", "annotations": annotations or {}},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                     "storageClassName": "local-path", "volumeName": volume}}


@pytest.mark.parametrize(("obj", "want"), [
    pytest.param(claim(ANN), True, id="ours-here"),
    pytest.param(claim({**ANN, "volume.kubernetes.io/selected-node": "n2"}), False, id="another-node"),
    pytest.param(claim({**ANN, "volume.kubernetes.io/storage-provisioner": "rancher.io/local-path"}), False,
                 id="another-provisioner"),
    pytest.param(claim({"volume.kubernetes.io/selected-node": "n1"}), False, id="controller-has-not-asked"),
    pytest.param(claim(ANN, volume="pvc-abc"), False, id="already-bound"),
])
def test_which_claims_this_node_provisions(obj, want):
    assert wants_volume(obj, "n1") is want


def test_planned_volume_is_k3s_shaped(tmp_path: Path):
    volume = plan_volume(claim(ANN), local_path_class(), node_name="n1", base_dir=str(tmp_path))
    assert volume["metadata"]["name"] == "pvc-abc"
    spec = volume["spec"]
    assert spec["hostPath"] == {"path": str(tmp_path / "pvc-abc_ns_data"), "type": "DirectoryOrCreate"}
    assert spec["persistentVolumeReclaimPolicy"] == "Delete" and spec["storageClassName"] == "local-path"
    assert spec["claimRef"]["uid"] == "abc" and spec["capacity"] == {"storage": "1Gi"}
    assert spec["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["n1"]
    released = {**volume, "status": {"phase": "Released"}}
    assert should_delete(released, "n1") and not should_delete(released, "n2")
    assert not should_delete({**volume, "status": {"phase": "Bound"}}, "n1")
    retained = {**released, "spec": {**spec, "persistentVolumeReclaimPolicy": "Retain"}}
    assert not should_delete(retained, "n1")
    assert owned_directory(volume, str(tmp_path)) == str(tmp_path / "pvc-abc_ns_data")


@pytest.mark.parametrize("path", ["/etc", "{base}/../pvc-x", "{base}/sub/pvc-x", "{base}/other"])
def test_only_its_own_directories_are_removed(tmp_path: Path, path: str):
    volume = {"spec": {"hostPath": {"path": path.format(base=tmp_path)}}}
    assert owned_directory(volume, str(tmp_path)) is None


def pod(read_only: bool = False) -> dict:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "pod-1"}, "spec": {
        "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "data", "readOnly": read_only}}],
        "containers": [{"name": "c", "volumeMounts": [{"name": "v", "mountPath": "/data"}]}]}}


def bound(tmp_path: Path, phase: str = "Bound") -> FakeObjects:
    pvc = {**claim(volume="pv1"), "status": {"phase": phase}}
    pv = {"metadata": {"name": "pv1"},
          "spec": {"hostPath": {"path": str(tmp_path / "vol"), "type": "DirectoryOrCreate"},
                   "claimRef": {"namespace": "ns", "name": "data", "uid": "abc"}}}
    return FakeObjects(claims={("ns", "data"): pvc}, volumes={"pv1": pv})


@pytest.mark.parametrize("read_only", [False, True])
def test_claim_volume_is_the_bound_volumes_path(tmp_path: Path, read_only: bool):
    volumes = setup(pod(read_only), bound(tmp_path), pods_dir=tmp_path / "pods")
    assert (tmp_path / "vol").is_dir()  # DirectoryOrCreate
    binds = container_mounts(pod(read_only)["spec"]["containers"][0], volumes).binds
    assert [(b.host_path, b.container_path, b.read_only) for b in binds] == [(str(tmp_path / "vol"), "/data",
                                                                             read_only)]


def test_unbound_claim_makes_the_pod_wait(tmp_path: Path):
    with pytest.raises(VolumeError, match=r'PVC ns/data has non-bound phase \("Pending"\)'):
        setup(pod(), bound(tmp_path, phase="Pending"), pods_dir=tmp_path / "pods")
