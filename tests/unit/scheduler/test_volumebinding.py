"""VolumeBinding (plugins/volumebinding.py): missing and Immediate unbound claims stop the pod before any
node is tried, a bound volume's node affinity filters nodes, a delayed claim needs a matching volume on the
node or a provisioner, and the claims to annotate with the selected node at binding time."""

from __future__ import annotations

from typing import Any

import pytest

from control.scheduler.cache import Snapshot
from control.scheduler.framework import Code, CycleState, Listers, StaticLister
from control.scheduler.nodeinfo import node_info
from control.scheduler.plugins.volumebinding import (
    BIND_CONFLICT,
    NODE_CONFLICT,
    UNBOUND_IMMEDIATE,
    VolumeBinding,
    claims_to_annotate,
)
from tests.support.scheduler_objects import make_node, make_pod

LOCAL = {"metadata": {"name": "local-path"}, "provisioner": "slimkube.io/local-path",
         "volumeBindingMode": "WaitForFirstConsumer"}
STATIC = {"metadata": {"name": "static"}, "provisioner": "kubernetes.io/no-provisioner",
          "volumeBindingMode": "WaitForFirstConsumer"}
FAST = {"metadata": {"name": "fast"}, "provisioner": "example.com/disk", "volumeBindingMode": "Immediate"}


def claim(name: str, cls: str = "local-path", volume: str = "", annotations: dict | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "uid": f"u-{name}", "annotations": annotations or {}},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                     "storageClassName": cls, "volumeName": volume}}


def volume(name: str, node: str, cls: str = "local-path", ref: dict | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                            "hostPath": {"path": "/x"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                                       "values": [node]}]}]}}}
    if ref:
        spec["claimRef"] = ref
    return {"metadata": {"name": name}, "spec": spec, "status": {"phase": "Bound" if ref else "Available"}}


def pod_using(*claims: str) -> dict[str, Any]:
    return make_pod("p", volumes=[{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                                  for i, c in enumerate(claims)])


def nodes() -> list[Any]:
    return [node_info(make_node(n, labels={"kubernetes.io/hostname": n})) for n in ("a", "b")]


def run(pod: dict, claims: list, volumes: list = (), classes: list = (LOCAL, STATIC, FAST)) -> dict[str, Any]:
    listers = Listers(persistent_volume_claims=StaticLister(claims), persistent_volumes=StaticLister(list(volumes)),
                      storage_classes=StaticLister(list(classes)))
    infos = nodes()
    snapshot = Snapshot.of(*infos)
    state = CycleState(snapshot, listers)
    plugin = VolumeBinding()
    status = plugin.pre_filter(state, pod, snapshot)
    if status.code is not Code.SUCCESS:
        return {"prefilter": (status.code, status.reasons)}
    return {info.node["metadata"]["name"]: plugin.filter(state, pod, info).reasons for info in infos}


def test_pod_without_claims_is_skipped():
    assert run(make_pod("p"), []) == {"prefilter": (Code.SKIP, ())}


@pytest.mark.parametrize(("claims", "reason"), [
    pytest.param([], 'persistentvolumeclaim "c" not found', id="missing-claim"),
    pytest.param([claim("c", cls="fast")], UNBOUND_IMMEDIATE, id="unbound-immediate"),
])
def test_prefilter_rejections(claims, reason):
    assert run(pod_using("c"), claims) == {"prefilter": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (reason,))}


def test_bound_volume_pins_the_pod_to_its_node():
    ref = {"namespace": "default", "name": "c", "uid": "u-c"}
    result = run(pod_using("c"), [claim("c", volume="pv-b")], [volume("pv-b", "b", ref=ref)])
    assert result == {"a": (NODE_CONFLICT,), "b": ()}


def test_delayed_claims():
    assert run(pod_using("c"), [claim("c")]) == {"a": (), "b": ()}  # local-path can provision anywhere
    assert run(pod_using("c"), [claim("c", cls="static")], [volume("pv-a", "a", cls="static")]) == {
        "a": (), "b": (BIND_CONFLICT,)}


def test_claims_to_annotate_are_the_unbound_delayed_ones():
    listers = Listers(persistent_volume_claims=StaticLister([
        claim("new"), claim("done", volume="pv"), claim("there", annotations={
            "volume.kubernetes.io/selected-node": "a"})]), storage_classes=StaticLister([LOCAL]))
    pod = pod_using("new", "done", "there")
    assert [c["metadata"]["name"] for c in claims_to_annotate(pod, listers, "a")] == ["new"]
    assert [c["metadata"]["name"] for c in claims_to_annotate(pod, listers, "b")] == ["new", "there"]
