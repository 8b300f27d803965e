"""PersistentVolumes, PersistentVolumeClaims and StorageClasses through the real registry over SQLite:
upstream's defaults and validation messages, the status a create starts with, the default class the
DefaultStorageClass admission gives a claim, the `local-path` class bootstrap creates, and the Table cells
`kubectl get pv,pvc,sc` prints."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from control.apiserver.controlplane.bootstrap import bootstrap
from control.apiserver.endpoints import printers
from control.apiserver.endpoints.tables import printer_for
from control.apiserver.registry.store import Registry
from control.apiserver.resources import by_path
from control.apiserver.status import APIError
from control.storage.sqlite import SQLiteStorage

PVS = by_path("", "v1", "persistentvolumes")
PVCS = by_path("", "v1", "persistentvolumeclaims")
CLASSES = by_path("storage.k8s.io", "v1", "storageclasses")
NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def registry(tmp_path) -> Iterator[Registry]:
    storage = SQLiteStorage(str(tmp_path / "state.db"))
    registry = Registry(storage)
    bootstrap(registry, api_port=6443)
    yield registry
    storage.close()


def pv(name: str = "v", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
                     "hostPath": {"path": "/srv/v"}, **spec}}


def pvc(name: str = "c", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, **spec}}


def test_volume_defaults_and_status(registry: Registry):
    created = registry.create(PVS, "", pv(), )
    assert created["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert created["spec"]["volumeMode"] == "Filesystem"
    assert created["status"]["phase"] == "Pending" and created["status"]["lastPhaseTransitionTime"]


@pytest.mark.parametrize(("body", "message"), [
    pytest.param(pv(accessModes=[]), "spec.accessModes: Required value: must specify at least 1 access mode",
                 id="no-access-mode"),
    pytest.param(pv(accessModes=["ReadWriteSometimes"]), 'spec.accessModes: Unsupported value: "ReadWriteSometimes"',
                 id="bad-access-mode"),
    pytest.param(pv(capacity={"cpu": "1"}), "spec.capacity[storage]: Required value", id="no-storage"),
    pytest.param(pv(hostPath=None), "spec: Required value: must specify a volume type", id="no-source"),
    pytest.param(pv(nfs={"server": "s", "path": "/"}), "may not specify more than 1 volume type", id="two-sources"),
    pytest.param(pv(hostPath=None, local={"path": "/mnt"}), "spec.nodeAffinity: Required value: Local volume "
                                                            "requires node affinity", id="local-without-affinity"),
    pytest.param(pv(persistentVolumeReclaimPolicy="Keep"), 'spec.persistentVolumeReclaimPolicy: Unsupported value',
                 id="bad-policy"),
])
def test_volume_validation(registry: Registry, body, message):
    with pytest.raises(APIError) as info:
        registry.create(PVS, "", body)
    assert info.value.code == 422 and message in info.value.message


@pytest.mark.parametrize(("body", "message"), [
    pytest.param(pvc(accessModes=[]), "spec.accessModes: Required value: at least 1 access mode is required",
                 id="no-access-mode"),
    pytest.param(pvc(resources={"requests": {}}), "spec.resources[storage]: Required value", id="no-request"),
    pytest.param(pvc(resources={"requests": {"storage": "0"}}), "must be greater than zero", id="zero-request"),
])
def test_claim_validation(registry: Registry, body, message):
    with pytest.raises(APIError) as info:
        registry.create(PVCS, "default", body)
    assert info.value.code == 422 and message in info.value.message


def test_default_class_admission_and_claim_immutability(registry: Registry):
    local_path = registry.get(CLASSES, "", "local-path")
    assert local_path["provisioner"] == "slimkube.io/local-path"
    assert local_path["volumeBindingMode"] == "WaitForFirstConsumer" and local_path["reclaimPolicy"] == "Delete"
    claim = registry.create(PVCS, "default", pvc())
    assert claim["spec"]["storageClassName"] == "local-path"
    assert claim["spec"]["volumeMode"] == "Filesystem" and claim["status"] == {"phase": "Pending"}
    assert registry.create(PVCS, "default", pvc("none", storageClassName=""))["spec"]["storageClassName"] == ""
    registry.create(CLASSES, "", {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                                  "metadata": {"name": "fast", "annotations": {
                                      "storageclass.kubernetes.io/is-default-class": "true"}},
                                  "provisioner": "example.com/disk"})
    assert registry.create(PVCS, "default", pvc("newest"))["spec"]["storageClassName"] == "fast"
    changed = {**claim, "spec": {**claim["spec"], "accessModes": ["ReadWriteMany"]}}
    with pytest.raises(APIError) as info:
        registry.update(PVCS, "default", "c", changed)
    assert "spec is immutable after creation except resources.requests" in info.value.message
    annotated = {**claim, "metadata": {**claim["metadata"], "annotations": {"a": "b"}}}
    claim = registry.update(PVCS, "default", "c", annotated)[0]  # no volumeName key: still the same spec
    bound = {**claim, "spec": {**claim["spec"], "volumeName": "pv-1"}}
    assert registry.update(PVCS, "default", "c", bound)[0]["spec"]["volumeName"] == "pv-1"
    fast = registry.get(CLASSES, "", "fast")
    assert fast["reclaimPolicy"] == "Delete" and fast["volumeBindingMode"] == "Immediate"
    with pytest.raises(APIError) as info:
        registry.update(CLASSES, "", "fast", {**fast, "provisioner": "example.com/other"})
    assert "provisioner: Forbidden: updates to provisioner are forbidden." in info.value.message


def test_table_cells():
    volume = {"metadata": {"name": "pv1", "creationTimestamp": "2026-01-01T00:00:00Z"},
              "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadOnlyMany", "ReadWriteOnce"],
                       "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "local-path",
                       "claimRef": {"namespace": "ns", "name": "data"}, "volumeMode": "Filesystem"},
              "status": {"phase": "Bound"}}
    assert printers.persistent_volume_cells(volume, NOW) == [
        "pv1", "5Gi", "RWO,ROX", "Delete", "Bound", "ns/data", "local-path", "<unset>", "", "0s", "Filesystem"]
    claim = {"metadata": {"name": "data", "creationTimestamp": "2026-01-01T00:00:00Z"},
             "spec": {"volumeName": "pv1", "storageClassName": "local-path", "volumeMode": "Filesystem",
                      "resources": {"requests": {"storage": "1Gi"}}},
             "status": {"phase": "Bound", "capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"]}}
    assert printers.persistent_volume_claim_cells(claim, NOW) == [
        "data", "Bound", "pv1", "5Gi", "RWO", "local-path", "<unset>", "0s", "Filesystem"]
    pending = {**claim, "spec": {"storageClassName": "local-path"}, "status": {"phase": "Pending"}}
    assert printers.persistent_volume_claim_cells(pending, NOW)[1:5] == ["Pending", "", "", ""]
    storage_class = {"metadata": {"name": "local-path", "creationTimestamp": "2026-01-01T00:00:00Z",
                                  "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                     "provisioner": "slimkube.io/local-path", "reclaimPolicy": "Delete",
                     "volumeBindingMode": "WaitForFirstConsumer"}
    assert printers.storage_class_cells(storage_class, NOW) == [
        "local-path (default)", "slimkube.io/local-path", "Delete", "WaitForFirstConsumer", False, "0s"]
    assert [c.name for c in printer_for(CLASSES).columns] == [
        "Name", "Provisioner", "ReclaimPolicy", "VolumeBindingMode", "AllowVolumeExpansion", "Age"]
    assert [c.name for c in printer_for(PVS).columns] == [
        "Name", "Capacity", "Access Modes", "Reclaim Policy", "Status", "Claim", "StorageClass",
        "VolumeAttributesClass", "Reason", "Age", "VolumeMode"]
