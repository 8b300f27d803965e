"""Server-owned fields, generation, status handling and graceful deletion rules (strategies/)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

import pytest

from control.api.qos import qos_class
from control.apiserver.registry import strategies
from control.apiserver.registry.strategies import base, strategy_for
from control.apiserver.registry.strategies.pods import assign_node, graceful_pod_seconds
from control.apiserver.registry.strategies.services import ServiceStrategy
from control.apiserver.resources import RESOURCES, by_path
from control.apiserver.status import APIError
from control.storage.sqlite import SQLiteStorage

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
PODS = by_path("", "v1", "pods")
DEPLOYMENTS = by_path("apps", "v1", "deployments")
NODES = by_path("", "v1", "nodes")
CONFIGMAPS = by_path("", "v1", "configmaps")
NAMESPACES = by_path("", "v1", "namespaces")


def by_path_plural(plural):
    return next(r for r in RESOURCES if r.plural == plural)


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


def test_every_named_kind_is_a_served_resource_and_every_resource_has_a_strategy(tmp_path):
    assert set(strategies.KINDS) <= {r.plural for r in RESOURCES}
    storage = SQLiteStorage(str(tmp_path / "state.db"))
    try:
        built = strategies.build(storage, service_cidr="10.96.0.0/12", node_port_range=(30000, 32767))
    finally:
        storage.close()
    assert set(built) == {r.plural for r in RESOURCES}
    assert all(s.resource.plural == plural for plural, s in built.items())
    assert isinstance(built["services"], ServiceStrategy)
    assert built["bindings"].binds_pods and not built["pods"].binds_pods


@pytest.mark.parametrize("plural,create_on_update", [
    pytest.param("endpoints", True, id="endpoints"),
    pytest.param("leases", True, id="leases"),
    pytest.param("events", True, id="events"),
    pytest.param("configmaps", False, id="configmaps"),
    pytest.param("pods", False, id="pods"),
])
def test_allow_create_on_update(plural, create_on_update):
    assert strategy_for(by_path_plural(plural)).allow_create_on_update is create_on_update


def test_namespace_lifecycle():
    namespaces = strategy_for(NAMESPACES)
    ns = {"metadata": {"name": "n"}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Gone"}}
    namespaces.prepare_for_create(ns, now=NOW, uid="u")
    assert ns["status"] == {"phase": "Active"}
    namespaces.prepare_for_delete(ns)
    base.mark_deleting(ns, now=NOW, grace_seconds=0)
    assert ns["status"]["phase"] == "Terminating"
    assert not namespaces.ready_to_remove(ns)  # the namespace controller still has to finalize it
    finalized = namespaces.prepare_for_subresource_update(
        "finalize", {"metadata": {"name": "n", "labels": {"x": "y"}}, "spec": {"finalizers": []}}, ns)
    # /finalize takes only spec.finalizers: the client's labels are ignored, the stored ones (the name
    # label every namespace carries) stay.
    assert finalized["spec"]["finalizers"] == []
    assert finalized["metadata"]["labels"] == {"kubernetes.io/metadata.name": "n"}
    assert namespaces.ready_to_remove(finalized)


def test_only_pods_on_a_node_are_deleted_gracefully():
    running = {"spec": {"nodeName": "n"}, "status": {"phase": "Running"}}
    assert strategy_for(PODS).delete_grace_seconds(running, None) == 30
    assert strategy_for(CONFIGMAPS).delete_grace_seconds(running, 30) == 0


def test_service_allocations_are_reserved_undone_and_released(tmp_path):
    storage = SQLiteStorage(str(tmp_path / "state.db"))
    try:
        services = strategies.build(storage, service_cidr="10.0.0.0/29", node_port_range=(30000, 30001))["services"]
        service = {"metadata": {"name": "s"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}}
        undo = services.begin_write(service, None)
        assert service["spec"]["clusterIP"] == "10.0.0.2" and service["spec"]["ports"][0]["nodePort"] == 30000
        undo()  # the write failed: both free again
        two_ports = {"type": "NodePort", "ports": [{"port": 80}, {"port": 81}]}
        first = {"metadata": {"name": "t"}, "spec": copy.deepcopy(two_ports)}
        services.begin_write(first, None)
        assert sorted(p["nodePort"] for p in first["spec"]["ports"]) == [30000, 30001]
        services.after_write(first, None)  # removed: released
        second = {"metadata": {"name": "u"}, "spec": copy.deepcopy(two_ports)}
        services.begin_write(second, None)
        assert sorted(p["nodePort"] for p in second["spec"]["ports"]) == [30000, 30001]
    finally:
        storage.close()


def test_assign_node_once_and_never_while_deleting():
    pod = {"metadata": {"name": "p"}, "spec": {}}
    assign_node(pod, "n1", now=NOW)
    assert pod["spec"]["nodeName"] == "n1"
    assert [c["type"] for c in pod["status"]["conditions"]] == ["PodScheduled"]
    with pytest.raises(APIError, match='already assigned to node "n1"'):
        assign_node(pod, "n2", now=NOW)
    with pytest.raises(APIError, match="is being deleted"):
        assign_node({"metadata": {"name": "q", "deletionTimestamp": "t"}, "spec": {}}, "n1", now=NOW)


def test_namespace_name_label_is_set_and_restored():
    namespaces = strategy_for(NAMESPACES)
    ns = {"metadata": {"name": "n", "labels": {"team": "a", "kubernetes.io/metadata.name": "forged"}}}
    namespaces.prepare_for_create(ns, now=NOW, uid="u")
    assert ns["metadata"]["labels"] == {"team": "a", "kubernetes.io/metadata.name": "n"}
    update = {"metadata": {"name": "n", "labels": {}}}
    namespaces.prepare_for_update(update, ns)
    assert update["metadata"]["labels"] == {"kubernetes.io/metadata.name": "n"}
    status = namespaces.prepare_for_subresource_update("status", {"metadata": {"name": "n", "labels": {}}}, ns)
    assert status["metadata"]["labels"] == {"kubernetes.io/metadata.name": "n"}


def _resource(group_version: str, plural: str):
    group, _, version = group_version.rpartition("/")
    resource = by_path(group, version, plural)
    assert resource is not None
    return resource


@pytest.mark.parametrize("group_version,plural,zero", [
    pytest.param("apps/v1", "replicasets", {"replicas": 0}, id="replicaset"),
    pytest.param("v1", "replicationcontrollers", {"replicas": 0}, id="rc"),
    pytest.param("apps/v1", "statefulsets", {"replicas": 0, "availableReplicas": 0}, id="statefulset"),
    pytest.param("apps/v1", "daemonsets", {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                                          "desiredNumberScheduled": 0, "numberReady": 0}, id="daemonset"),
    pytest.param("apps/v1", "deployments", {}, id="deployment-omits-all"),
])
def test_status_zero_values_on_create_and_status_writes(group_version, plural, zero):
    strategy = strategy_for(_resource(group_version, plural))
    obj = {"metadata": {"name": "w"}, "spec": {}, "status": {"replicas": 7}}
    strategy.prepare_for_create(obj, now=NOW, uid="u")
    assert obj["status"] == zero  # the client's status is dropped, the zeros stay
    written = strategy.prepare_for_subresource_update("status", {"status": {"readyReplicas": 2}}, obj)
    assert written["status"] == {**zero, "readyReplicas": 2}
    kept = {"status": {"replicas": 3}} if "replicas" in zero else {"status": {}}
    assert strategy.prepare_for_subresource_update("status", kept, obj)["status"] == {**zero, **kept["status"]}


@pytest.mark.parametrize("group_version,plural,stored,expected", [
    pytest.param("apps/v1", "replicasets", {"readyReplicas": 2}, {"replicas": 0, "readyReplicas": 2}, id="rs"),
    pytest.param("v1", "replicationcontrollers", None, {"replicas": 0}, id="rc-without-status"),
    pytest.param("apps/v1", "replicasets", {"replicas": 4}, {"replicas": 4}, id="rs-value-kept"),
    pytest.param("apps/v1", "deployments", None, None, id="deployment-untouched"),
])
def test_decorate_gives_every_read_object_the_zero_values(group_version, plural, stored, expected):
    obj: dict = {"metadata": {"name": "w"}, "spec": {}}
    if stored is not None:
        obj["status"] = stored
    strategy_for(_resource(group_version, plural)).decorate(obj)
    assert obj.get("status") == expected


def test_secret_string_data_wins_over_data_and_is_not_stored():
    secrets = strategy_for(_resource("v1", "secrets"))
    obj = {"metadata": {"name": "s"}, "data": {"a": "eA==", "b": "eQ=="}, "stringData": {"b": "two", "c": "3"}}
    secrets.defaults(obj)
    assert obj["data"] == {"a": "eA==", "b": "dHdv", "c": "Mw=="} and "stringData" not in obj
    malformed = {"metadata": {"name": "s"}, "stringData": {"n": 1}}
    secrets.defaults(malformed)
    assert malformed["stringData"] == {"n": 1}  # left for validation, which refuses it
    assert [e.field for e in secrets.validate(malformed, None)] == ["stringData[n]"]

DEFAULT_TOLERATIONS = [{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
                       for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")]


@pytest.mark.parametrize("tolerations,expected", [
    pytest.param(None, DEFAULT_TOLERATIONS, id="none"),
    pytest.param([{"key": "example.com/x", "operator": "Exists"}],
                 [{"key": "example.com/x", "operator": "Exists"}, *DEFAULT_TOLERATIONS], id="others-kept"),
    pytest.param([{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                   "tolerationSeconds": 6000}],
                 [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                   "tolerationSeconds": 6000}, DEFAULT_TOLERATIONS[0]], id="own-unreachable-kept"),
    pytest.param([{"operator": "Exists"}], [{"operator": "Exists"}], id="tolerates-everything"),
    pytest.param([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}],
                 [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"},
                  *DEFAULT_TOLERATIONS], id="noschedule-is-not-noexecute"),
])
def test_pods_get_default_toleration_seconds_on_create_and_update(tolerations, expected):
    spec: dict = {"containers": [{"name": "c"}]}
    if tolerations is not None:
        spec["tolerations"] = copy.deepcopy(tolerations)
    pod = {"metadata": {"name": "p"}, "spec": spec}
    strategy_for(PODS).prepare_for_create(pod, now=NOW, uid="u")
    assert pod["spec"]["tolerations"] == expected
    replaced = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}
    strategy_for(PODS).prepare_for_update(replaced, pod)
    assert replaced["spec"]["tolerations"] == DEFAULT_TOLERATIONS


@pytest.mark.parametrize(("finalizers", "policy", "default_orphan", "expected"), [
    pytest.param([], None, False, [], id="background-default"),
    pytest.param([], "Background", True, [], id="explicit-background-beats-orphan-default"),
    pytest.param([], None, True, ["orphan"], id="legacy-kind-orphans-by-default"),
    pytest.param(["x"], "Orphan", False, ["x", "orphan"], id="orphan"),
    pytest.param(["x"], "Foreground", False, ["x", "foregroundDeletion"], id="foreground"),
    pytest.param(["orphan", "x"], "Foreground", False, ["x", "foregroundDeletion"], id="switch-to-foreground"),
    pytest.param(["foregroundDeletion"], "Orphan", False, ["orphan"], id="switch-to-orphan"),
    pytest.param(["foregroundDeletion"], None, True, ["foregroundDeletion"], id="finalizer-beats-default"),
    pytest.param(["orphan", "foregroundDeletion"], None, False, ["orphan"], id="first-finalizer-wins"),
    pytest.param(["foregroundDeletion"], "Background", False, [], id="background-drops-foreground"),
])
def test_gc_finalizers_follow_upstream_store(finalizers, policy, default_orphan, expected):
    assert base.gc_finalizers(finalizers, policy=policy, default_orphan=default_orphan) == expected


@pytest.mark.parametrize(("plural", "orphans"), [("replicationcontrollers", True), ("jobs", True),
                                                ("replicasets", False), ("deployments", False),
                                                ("cronjobs", False), ("pods", False), ("configmaps", False)])
def test_default_gc_policy_per_kind(plural, orphans):
    assert strategy_for(by_path_plural(plural)).orphans_by_default is orphans
