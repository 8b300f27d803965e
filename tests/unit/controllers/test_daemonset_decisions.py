"""control/controllers/daemonset/decisions.py: which nodes run a daemon pod, the pod it gets, what a sync
creates and deletes per node, the rolling-update steps (maxUnavailable and maxSurge) and the status."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from control.controllers.daemonset import decisions as d
from control.controllers.shared.history import CONTROLLER_REVISION_HASH_LABEL

NOW = datetime(2024, 1, 1, 12, 0, 0, tzinfo=UTC)
NEW, OLD = "new", "old"


def node(name: str, labels: dict | None = None, taints: list | None = None) -> dict:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": taints or []}}


def ds(*, template_spec: dict | None = None, strategy: dict | None = None, min_ready: int = 0) -> dict:
    spec = {"containers": [{"name": "c", "image": "busybox"}], **(template_spec or {})}
    return {"metadata": {"name": "agent", "namespace": "ns", "uid": "u"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "template": {"metadata": {"labels": {"app": "agent"}}, "spec": spec},
                     "updateStrategy": strategy or {"type": "RollingUpdate",
                                                    "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
                     "minReadySeconds": min_ready}}


def pod(name: str, node_name: str, hash_: str = NEW, *, ready: bool = True, phase: str = "Running",
        created: str = "2024-01-01T00:00:00Z", deleting: bool = False) -> dict:
    meta = {"name": name, "namespace": "ns", "creationTimestamp": created,
            "labels": {"app": "agent", CONTROLLER_REVISION_HASH_LABEL: hash_}}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T11:59:00Z"
    return {"metadata": meta, "spec": {"nodeName": node_name},
            "status": {"phase": phase, "conditions": [
                {"type": "Ready", "status": "True" if ready else "False",
                 "lastTransitionTime": "2024-01-01T00:00:00Z"}]}}


def required(*expressions: dict) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": list(expressions)}]}}}


def taint(key: str, effect: str, value: str = "") -> dict:
    return {"key": key, "value": value, "effect": effect}


@pytest.mark.parametrize(("the_node", "template_spec", "expected"), [
    pytest.param(node("n1"), {}, (True, True), id="plain-node"),
    pytest.param(node("n1", {"disk": "ssd"}), {"nodeSelector": {"disk": "ssd"}}, (True, True), id="selector-match"),
    pytest.param(node("n1"), {"nodeSelector": {"disk": "ssd"}}, (False, False), id="selector-miss"),
    pytest.param(node("n1"), {"nodeName": "n2"}, (False, False), id="template-node-name-other"),
    pytest.param(node("n1", {"zone": "a"}), {"affinity": required({"key": "zone", "operator": "In", "values": ["b"]})},
                 (False, False), id="required-affinity-miss"),
    pytest.param(node("n1", taints=[taint("node.kubernetes.io/not-ready", "NoExecute")]), {}, (True, True),
                 id="not-ready-tolerated-automatically"),
    pytest.param(node("n1", taints=[taint("node.kubernetes.io/unreachable", "NoExecute")]), {}, (True, True),
                 id="unreachable-tolerated"),
    pytest.param(node("n1", taints=[taint("node.kubernetes.io/unschedulable", "NoSchedule"),
                                    taint("node.kubernetes.io/disk-pressure", "NoSchedule"),
                                    taint("node.kubernetes.io/memory-pressure", "NoSchedule"),
                                    taint("node.kubernetes.io/pid-pressure", "NoSchedule")]), {}, (True, True),
                 id="cordoned-and-pressure-tolerated"),
    pytest.param(node("n1", taints=[taint("node.kubernetes.io/network-unavailable", "NoSchedule")]), {},
                 (False, True), id="network-unavailable-only-for-host-network"),
    pytest.param(node("n1", taints=[taint("node.kubernetes.io/network-unavailable", "NoSchedule")]),
                 {"hostNetwork": True}, (True, True), id="network-unavailable-host-network"),
    pytest.param(node("n1", taints=[taint("dedicated", "NoSchedule", "db")]), {}, (False, True),
                 id="untolerated-noschedule-keeps-running-pod"),
    pytest.param(node("n1", taints=[taint("dedicated", "NoExecute", "db")]), {}, (False, False),
                 id="untolerated-noexecute-evicts"),
    pytest.param(node("n1", taints=[taint("dedicated", "NoExecute", "db")]),
                 {"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoExecute"}]},
                 (True, True), id="template-toleration"),
    pytest.param(node("n1", taints=[taint("dedicated", "PreferNoSchedule")]), {}, (True, True),
                 id="prefer-no-schedule-ignored"),
])
def test_node_should_run(the_node, template_spec, expected):
    assert d.node_should_run(the_node, ds(template_spec=template_spec)) == expected


def test_pod_template_adds_tolerations_without_seconds_and_the_hash_label_and_pins_to_the_node():
    spec = {"tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": 300}, {"key": "x", "operator": "Exists"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}]}}}
    template = d.pod_template(ds(template_spec=spec), "h1")
    assert template["metadata"]["labels"] == {"app": "agent", CONTROLLER_REVISION_HASH_LABEL: "h1"}
    tolerations = template["spec"]["tolerations"]
    assert tolerations[0] == {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
    assert {"key": "x", "operator": "Exists"} in tolerations
    assert [t["key"].rpartition("/")[2] for t in tolerations[2:]] == [
        "unreachable", "disk-pressure", "memory-pressure", "pid-pressure", "unschedulable"]
    assert all("tolerationSeconds" not in t for t in tolerations)
    pinned = d.pod_for_node(template, "n2")
    affinity = pinned["spec"]["affinity"]["nodeAffinity"]
    assert affinity["requiredDuringSchedulingIgnoredDuringExecution"] == {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}
    assert affinity["preferredDuringSchedulingIgnoredDuringExecution"] == [{"weight": 1, "preference": {}}]
    assert d.target_node_name({"spec": pinned["spec"]}) == "n2"
    assert "affinity" not in ds()["spec"]["template"]["spec"]  # the DaemonSet is not changed


@pytest.mark.parametrize(("the_node", "pods", "strategy", "create", "delete", "failed"), [
    pytest.param(node("n1"), None, None, True, [], [], id="missing-creates"),
    pytest.param(node("n1"), [pod("a", "n1")], None, False, [], [], id="one-running"),
    pytest.param(node("n1"), [pod("a", "n1", created="2024-01-01T00:00:02Z"), pod("b", "n1")], None, False, ["a"], [],
                 id="extra-newest-deleted"),
    pytest.param(node("n1"), [pod("a", "n1", phase="Failed")], None, False, [], ["a"], id="failed-via-backoff"),
    pytest.param(node("n1"), [pod("a", "n1", phase="Succeeded")], None, False, ["a"], [], id="succeeded-deleted"),
    pytest.param(node("n1"), [pod("a", "n1", deleting=True)], None, False, [], [], id="terminating-waits"),
    pytest.param(node("n1", taints=[taint("k", "NoExecute")]), [pod("a", "n1")], None, False, ["a"], [],
                 id="not-tolerated-noexecute-deletes"),
    pytest.param(node("n1", taints=[taint("k", "NoSchedule")]), [pod("a", "n1")], None, False, [], [],
                 id="not-tolerated-noschedule-keeps"),
    pytest.param(node("n1", taints=[taint("k", "NoSchedule")]), None, None, False, [], [],
                 id="not-tolerated-noschedule-no-create"),
    pytest.param(node("n1"), [pod("a", "n1", OLD), pod("b", "n1", NEW, ready=False, created="2024-01-01T00:00:01Z")],
                 {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}, False, [], [],
                 id="surge-keeps-old-until-new-available"),
    pytest.param(node("n1"), [pod("a", "n1", OLD), pod("b", "n1", NEW, created="2024-01-01T00:00:01Z")],
                 {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}, False, ["a"], [],
                 id="surge-deletes-old-once-new-available"),
    pytest.param(node("n1"), [pod("a", "n1", OLD, ready=False), pod("b", "n1", NEW, ready=False,
                                                                    created="2024-01-01T00:00:01Z")],
                 {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}, False, ["a"], [],
                 id="surge-unready-old-goes"),
])
def test_plan_node(the_node, pods, strategy, create, delete, failed):
    plan = d.plan_node(the_node, pods, ds(strategy=strategy), NEW, NOW)
    assert (plan.create, [p["metadata"]["name"] for p in plan.delete],
            [p["metadata"]["name"] for p in plan.failed]) == (create, delete, failed)


NODES = [node(f"n{i}") for i in range(1, 5)]


@pytest.mark.parametrize(("pods", "rolling", "delete", "create_on"), [
    pytest.param({f"n{i}": [pod(f"p{i}", f"n{i}", OLD)] for i in range(1, 5)}, {"maxUnavailable": 1},
                 ("p1",), (), id="max-unavailable-1-deletes-one-old"),
    pytest.param({f"n{i}": [pod(f"p{i}", f"n{i}", OLD)] for i in range(1, 5)}, {"maxUnavailable": "50%"},
                 ("p1", "p2"), (), id="percent-of-desired"),
    pytest.param({"n1": [pod("p1", "n1", NEW, ready=False)], **{f"n{i}": [pod(f"p{i}", f"n{i}", OLD)]
                                                              for i in range(2, 5)}},
                 {"maxUnavailable": 1}, (), (), id="new-unavailable-uses-the-budget"),
    pytest.param({"n1": [pod("p1", "n1", NEW)], "n2": [pod("p2", "n2", OLD, ready=False)],
                  **{f"n{i}": [pod(f"p{i}", f"n{i}", OLD)] for i in range(3, 5)}},
                 {"maxUnavailable": 1}, ("p2", "p3"), (), id="unavailable-old-always-replaced"),
    pytest.param({f"n{i}": [pod(f"p{i}", f"n{i}", NEW)] for i in range(1, 5)}, {"maxUnavailable": 1}, (), (),
                 id="all-updated-nothing-to-do"),
    pytest.param({f"n{i}": [pod(f"p{i}", f"n{i}", OLD)] for i in range(1, 4)}, {"maxUnavailable": 1}, (), (),
                 id="node-without-pod-counts-unavailable"),
    pytest.param({f"n{i}": [pod(f"p{i}", f"n{i}", OLD)] for i in range(1, 5)}, {"maxSurge": 2, "maxUnavailable": 0},
                 (), ("n1", "n2"), id="surge-creates-beside-old"),
    pytest.param({"n1": [pod("p1", "n1", OLD), pod("q1", "n1", NEW)], "n2": [pod("p2", "n2", OLD),
                                                                            pod("q2", "n2", NEW, ready=False)],
                  **{f"n{i}": [pod(f"p{i}", f"n{i}", OLD)] for i in range(3, 5)}},
                 {"maxSurge": 2, "maxUnavailable": 0}, ("p1",), ("n3",), id="surge-progresses"),
    pytest.param({f"n{i}": [pod(f"p{i}", f"n{i}", OLD, ready=i != 1)] for i in range(1, 5)},
                 {"maxSurge": 1, "maxUnavailable": 0}, (), ("n1", "n2"), id="surge-unavailable-old-always-allowed"),
])
def test_rolling_update_steps(pods, rolling, delete, create_on):
    step = d.rolling_update(ds(strategy={"type": "RollingUpdate", "rollingUpdate": rolling}), NODES, pods, NEW, NOW)
    assert (step.delete, step.create_on) == (delete, create_on)


def test_surge_and_unavailable_fenceposts():
    assert d.surge_and_unavailable(ds(strategy={"type": "RollingUpdate", "rollingUpdate": {
        "maxSurge": "10%", "maxUnavailable": 0}}), 15) == (2, 0)  # rounded up
    assert d.surge_and_unavailable(ds(strategy={"type": "RollingUpdate", "rollingUpdate": {
        "maxSurge": 0, "maxUnavailable": 0}}), 3) == (0, 1)
    assert d.surge_and_unavailable(ds(strategy={"type": "OnDelete"}), 3) == (0, 0)


def test_status_counts():
    nodes = [node("n1"), node("n2"), node("n3"), node("n4", {"x": "y"})]
    the_ds = ds(template_spec={"nodeSelector": {}}, min_ready=30)
    the_ds["spec"]["template"]["spec"]["affinity"] = required({"key": "x", "operator": "DoesNotExist"})
    by_node = {"n1": [pod("a", "n1", NEW)], "n2": [pod("b", "n2", OLD, ready=False)], "n4": [pod("c", "n4", NEW)]}
    status = d.calculate_status(the_ds, nodes, by_node, NEW, NOW)
    assert status == {"desiredNumberScheduled": 3, "currentNumberScheduled": 2, "numberReady": 1,
                      "numberAvailable": 1, "updatedNumberScheduled": 1, "numberMisscheduled": 1,
                      "numberUnavailable": 2}


def test_history_patch_replaces_the_template_and_matches():
    the_ds = ds()
    patch = d.history_patch(the_ds)
    assert patch == {"spec": {"template": {**the_ds["spec"]["template"], "$patch": "replace"}}}
    assert d.matches_history(the_ds, {"data": patch})
    changed = ds(template_spec={"hostNetwork": True})
    assert not d.matches_history(changed, {"data": patch})
