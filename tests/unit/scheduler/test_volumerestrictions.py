"""VolumeRestrictions (plugins/volumerestrictions.py) with upstream volume_restrictions_test.go's tables:
TestGCEDiskConflicts, TestAWSDiskConflicts, TestRBDDiskConflicts, TestISCSIDiskConflicts (a pod with no
volumes, a node with none, the same disk, another disk), plus the read-only exceptions."""

from __future__ import annotations

from typing import Any

import pytest

from control.scheduler.cache import Snapshot
from control.scheduler.framework import Code, CycleState
from control.scheduler.nodeinfo import node_info
from control.scheduler.plugins.volumerestrictions import DISK_CONFLICT_REASON, VolumeRestrictions, volumes_conflict
from tests.support.scheduler_objects import make_node, make_pod


def with_volumes(name: str, *volumes: dict[str, Any], node: str = "") -> dict[str, Any]:
    return make_pod(name, node_name=node, volumes=[{"name": f"v{i}", **v} for i, v in enumerate(volumes)] or None)


def gce(pd: str, read_only: bool = False) -> dict[str, Any]:
    return {"gcePersistentDisk": {"pdName": pd, "readOnly": read_only}}


def aws(volume_id: str) -> dict[str, Any]:
    return {"awsElasticBlockStore": {"volumeID": volume_id}}


def rbd(monitors: list[str], pool: str, image: str, read_only: bool = False) -> dict[str, Any]:
    return {"rbd": {"monitors": monitors, "pool": pool, "image": image, "readOnly": read_only}}


def iscsi(iqn: str, read_only: bool = False) -> dict[str, Any]:
    return {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": iqn, "lun": 0, "readOnly": read_only}}


def run(incoming: dict[str, Any], existing: list[dict[str, Any]]) -> tuple[Code, tuple[str, ...]]:
    plugin = VolumeRestrictions()
    info = node_info(make_node("machine1"), *[p for p in existing])
    snapshot = Snapshot.of(info)
    state = CycleState(snapshot)
    status = plugin.pre_filter(state, incoming, snapshot)
    if status.code is Code.SKIP:
        return status.code, ()
    result = plugin.filter(state, incoming, info)
    return result.code, result.reasons


CONFLICT = (Code.UNSCHEDULABLE, (DISK_CONFLICT_REASON,))
FITS = (Code.SUCCESS, ())
SKIPPED = (Code.SKIP, ())


@pytest.mark.parametrize(("volume", "other"), [
    pytest.param(gce("foo"), gce("bar"), id="gce"),
    pytest.param(aws("foo"), aws("bar"), id="aws"),
    pytest.param(rbd(["a", "b"], "foo", "bar"), rbd(["c", "d"], "foo", "bar"), id="rbd"),
    pytest.param(iscsi("iqn.2016-12.server:storage.target01"), iscsi("iqn.2017-12.server:storage.target01"),
                 id="iscsi"),
])
def test_disk_conflicts(volume, other) -> None:
    on_node = with_volumes("existing", volume, node="machine1")
    assert run(make_pod("empty"), []) == SKIPPED  # a pod with no volumes
    assert run(with_volumes("p", volume), []) == FITS  # nothing on the node
    assert run(with_volumes("p", volume), [on_node]) == CONFLICT  # the same disk
    assert run(with_volumes("p", other), [on_node]) == FITS  # another disk
    assert run(with_volumes("p", {"emptyDir": {}}, other), [on_node]) == FITS


@pytest.mark.parametrize(("volume", "existing", "conflict"), [
    pytest.param(gce("foo", True), gce("foo", True), False, id="gce both read-only"),
    pytest.param(gce("foo", True), gce("foo"), True, id="gce one read-write"),
    pytest.param({"awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}},
                 {"awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}}, True, id="aws always"),
    pytest.param(iscsi("iqn.a", True), iscsi("iqn.a", True), False, id="iscsi both read-only"),
    pytest.param(iscsi("iqn.a"), iscsi("iqn.a", True), True, id="iscsi one read-write"),
    pytest.param(rbd(["a", "b"], "foo", "bar", True), rbd(["b", "c"], "foo", "bar", True), False,
                 id="rbd both read-only"),
    pytest.param(rbd(["a", "b"], "foo", "bar"), rbd(["b", "c"], "foo", "bar"), True, id="rbd a shared monitor"),
    pytest.param(rbd(["a"], "foo", "bar"), rbd(["a"], "foo", "baz"), False, id="rbd another image"),
    pytest.param(rbd(["a"], "", "bar"), rbd(["a"], "rbd", "bar"), True, id="rbd's default pool"),
    pytest.param(gce("foo"), aws("foo"), False, id="different kinds never conflict"),
])
def test_read_only_and_identity_rules(volume, existing, conflict) -> None:
    assert volumes_conflict(volume, existing) is conflict
    assert run(with_volumes("p", volume), [with_volumes("e", existing, node="machine1")]) == (
        CONFLICT if conflict else FITS)
