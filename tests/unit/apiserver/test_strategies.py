"""Server-owned fields, generation, status handling and graceful deletion rules (strategies/)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from control.api.qos import qos_class
from control.apiserver.strategies import base, strategy_for
from control.apiserver.strategies.pods import graceful_pod_seconds
from control.apiserver.resources import by_path

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
PODS = by_path("", "v1", "pods")
DEPLOYMENTS = by_path("apps", "v1", "deployments")
NODES = by_path("", "v1", "nodes")
CONFIGMAPS = by_path("", "v1", "configmaps")


def test_create_sets_server_fields_and_drops_client_ones():
    obj = {"metadata": {"name": "d", "uid": "mine", "resourceVersion": "5", "deletionTimestamp": "x"},
           "spec": {"replicas": 1}, "status": {"replicas": 9}}
    strategy_for(DEPLOYMENTS).prepare_for_create(obj, now=NOW, uid="u-1")
    assert obj["metadata"] == {"name": "d", "uid": "u-1", "creationTimestamp": "2026-01-02T03:04:05Z",
                               "generation": 1}
    assert obj["status"] == {}


def test_pod_create_starts_pending_with_qos_class():
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Running"}}
    strategy_for(PODS).prepare_for_create(pod, now=NOW, uid="u")
    assert pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert "generation" not in pod["metadata"]


def test_node_create_keeps_the_status_the_kubelet_registered():
    node = {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "2"}}}
    strategy_for(NODES).prepare_for_create(node, now=NOW, uid="u")
    assert node["status"] == {"capacity": {"cpu": "2"}}


@pytest.mark.parametrize("containers,expected", [
    pytest.param([{"name": "a"}], "BestEffort", id="nothing-asked"),
    pytest.param([{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}], "Guaranteed",
                 id="limits-only-means-equal-requests"),
    pytest.param([{"name": "a", "resources": {"requests": {"cpu": "1000m", "memory": "1Gi"},
                                              "limits": {"cpu": "1", "memory": "1Gi"}}}], "Guaranteed",
                 id="equal-quantities-in-other-units"),
    pytest.param([{"name": "a", "resources": {"requests": {"cpu": "100m"}}}], "Burstable", id="requests-only"),
    pytest.param([{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}, {"name": "b"}],
                 "Burstable", id="one-container-without-limits"),
])
def test_qos_class(containers, expected):
    assert qos_class({"containers": containers}) == expected


def _stored(**spec):
    return {"metadata": {"name": "d", "uid": "u", "creationTimestamp": "t", "generation": 3, "resourceVersion": "7"},
            "spec": spec, "status": {"observedGeneration": 3}}


def test_update_bumps_generation_only_when_spec_changes():
    old = _stored(replicas=1)
    same = {"metadata": {"name": "d", "labels": {"a": "b"}}, "spec": {"replicas": 1}}
    strategy_for(DEPLOYMENTS).prepare_for_update(same, old)
    assert same["metadata"]["generation"] == 3
    changed = {"metadata": {"name": "d"}, "spec": {"replicas": 2}}
    strategy_for(DEPLOYMENTS).prepare_for_update(changed, old)
    assert changed["metadata"]["generation"] == 4


def test_update_of_main_resource_keeps_status_and_server_metadata():
    old = _stored(replicas=1)
    new = {"metadata": {"name": "d", "uid": "forged", "generation": 99}, "spec": {"replicas": 1},
           "status": {"observedGeneration": 100}}
    strategy_for(DEPLOYMENTS).prepare_for_update(new, old)
    assert new["status"] == {"observedGeneration": 3}
    assert new["metadata"]["uid"] == "u"
    assert new["metadata"]["creationTimestamp"] == "t"


def test_update_of_kind_without_status_subresource_keeps_what_the_client_sent():
    old = {"metadata": {"name": "c", "uid": "u"}, "data": {"a": "1"}}
    new = {"metadata": {"name": "c"}, "data": {"a": "2"}}
    strategy_for(CONFIGMAPS).prepare_for_update(new, old)
    assert new == {"metadata": {"name": "c", "uid": "u"}, "data": {"a": "2"}}


def test_status_update_takes_only_status_and_labels():
    old = _stored(replicas=1)
    new = {"metadata": {"name": "d", "labels": {"x": "y"}}, "spec": {"replicas": 50}, "status": {"replicas": 1}}
    result = base.prepare_for_status_update(new, old)
    assert result["spec"] == {"replicas": 1}
    assert result["status"] == {"replicas": 1}
    assert result["metadata"]["labels"] == {"x": "y"}
    assert result["metadata"]["uid"] == "u"


@pytest.mark.parametrize("pod,requested,expected", [
    pytest.param({"spec": {}}, None, 0, id="unscheduled-goes-at-once"),
    pytest.param({"spec": {"nodeName": "n"}}, None, 30, id="default-30s"),
    pytest.param({"spec": {"nodeName": "n", "terminationGracePeriodSeconds": 5}}, None, 5, id="pod-setting"),
    pytest.param({"spec": {"nodeName": "n"}}, 0, 0, id="kubelet-confirms-with-0"),
    pytest.param({"spec": {"nodeName": "n"}}, -3, 0, id="negative-is-0"),
    pytest.param({"spec": {"nodeName": "n"}, "status": {"phase": "Succeeded"}}, None, 0, id="finished-pod"),
])
def test_graceful_pod_seconds(pod, requested, expected):
    assert graceful_pod_seconds(pod, requested) == expected


def test_mark_deleting_only_shortens_the_grace_period():
    obj = {"metadata": {"name": "p"}}
    assert base.mark_deleting(obj, now=NOW, grace_seconds=30)
    assert obj["metadata"]["deletionTimestamp"] == "2026-01-02T03:04:35Z"
    assert not base.mark_deleting(obj, now=NOW, grace_seconds=60)
    assert obj["metadata"]["deletionGracePeriodSeconds"] == 30
    assert base.mark_deleting(obj, now=NOW, grace_seconds=0)
    assert obj["metadata"]["deletionGracePeriodSeconds"] == 0


@pytest.mark.parametrize("metadata,expected", [
    pytest.param({}, False, id="not-deleted"),
    pytest.param({"deletionTimestamp": "t", "deletionGracePeriodSeconds": 0}, True, id="deleted-no-finalizers"),
    pytest.param({"deletionTimestamp": "t", "deletionGracePeriodSeconds": 0, "finalizers": ["f"]}, False,
                 id="finalizer-blocks"),
    pytest.param({"deletionTimestamp": "t", "deletionGracePeriodSeconds": 30}, False, id="grace-pending"),
])
def test_ready_to_remove(metadata, expected):
    assert base.ready_to_remove({"metadata": metadata}) is expected
