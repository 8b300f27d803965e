"""control/controllers/shared/endpointslice_reconciler.py: endpoint conditions, ports, labels and owner of new
slices, and upstream's placement (keep what is in place, fill slices being updated, closest fit, new
slices of at most max endpoints, create+delete → update, the placeholder)."""

from __future__ import annotations

from typing import Any

import pytest

from control.controllers.shared.endpoint_util import TRIGGER_TIME_ANNOTATION
from control.controllers.shared.endpointslice_reconciler import (
    CONTROLLER_NAME,
    MANAGED_BY_LABEL,
    SERVICE_NAME_LABEL,
    SlicePlan,
    endpoint_key,
    pod_endpoint,
    reconcile,
)

SERVICE_UID = "svc-uid"


def service(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "default", "uid": SERVICE_UID, "labels": {"app": "web"}},
            "spec": {"selector": {"app": "web"}, "clusterIP": "10.96.0.20",
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}], **spec}}


def pod(index: int, *, ready: bool = True, deleting: bool = False, node: str = "n1", phase: str = "Running",
        ip: str | None = None, ports: list[dict] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"web-{index}", "namespace": "default", "uid": f"uid-{index}",
                            "labels": {"app": "web"}}
    if deleting:
        meta["deletionTimestamp"] = "2024-05-01T12:00:00Z"
    return {"metadata": meta,
            "spec": {"nodeName": node, "containers": [{"name": "c", "ports": ports or []}]},
            "status": {"phase": phase, "podIP": ip or f"10.244.{index // 250}.{index % 250 + 1}",
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def stored(plan_slice: dict[str, Any], name: str, generation: int = 1) -> dict[str, Any]:
    """A planned slice as the API server would store it."""
    obj = {**plan_slice, "metadata": {**plan_slice["metadata"], "name": name, "generation": generation,
                                      "uid": f"uid-{name}", "resourceVersion": "1"}}
    obj["metadata"].pop("generateName", None)
    return obj


def addresses(slice_: dict[str, Any]) -> list[str]:
    return [e["addresses"][0] for e in slice_["endpoints"]]


@pytest.mark.parametrize(("kwargs", "spec", "conditions"), [
    pytest.param({}, {}, {"ready": True, "serving": True, "terminating": False}, id="ready"),
    pytest.param({"ready": False}, {}, {"ready": False, "serving": False, "terminating": False}, id="not-ready"),
    pytest.param({"deleting": True}, {}, {"ready": False, "serving": True, "terminating": True},
                 id="terminating-still-serving"),
    pytest.param({"deleting": True, "ready": False}, {}, {"ready": False, "serving": False, "terminating": True},
                 id="terminating-not-serving"),
    pytest.param({"deleting": True, "ready": False}, {"publishNotReadyAddresses": True},
                 {"ready": True, "serving": False, "terminating": True}, id="publish-not-ready"),
])
def test_endpoint_conditions(kwargs, spec, conditions):
    endpoint = pod_endpoint(pod(1, **kwargs), service(**spec), "IPv4", "zone-a")
    assert endpoint == {"addresses": ["10.244.0.2"], "conditions": conditions,
                        "targetRef": {"kind": "Pod", "namespace": "default", "name": "web-1", "uid": "uid-1"},
                        "nodeName": "n1", "zone": "zone-a"}


def test_terminal_and_ipless_pods_are_left_out_terminating_ones_kept():
    pods = [pod(1), pod(2, phase="Succeeded"), pod(3, deleting=True)]
    del pods[0]["status"]["podIP"]
    plan = reconcile(service(), pods, [], zones={})
    assert [addresses(s) for s in plan.create] == [["10.244.0.4"]]
    assert plan.create[0]["endpoints"][0]["conditions"]["terminating"] is True


def test_new_slice_shape():
    plan = reconcile(service(), [pod(1)], [], zones={"n1": "zone-a"}, trigger_time="2024-05-01T12:00:00Z")
    (created,) = plan.create
    assert created["metadata"]["generateName"] == "web-"
    assert created["metadata"]["labels"] == {"app": "web", SERVICE_NAME_LABEL: "web", MANAGED_BY_LABEL: CONTROLLER_NAME}
    assert created["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Service", "name": "web",
                                                       "uid": SERVICE_UID, "controller": True,
                                                       "blockOwnerDeletion": True}]
    assert created["metadata"]["annotations"] == {TRIGGER_TIME_ANNOTATION: "2024-05-01T12:00:00Z"}
    assert created["addressType"] == "IPv4"
    assert created["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    assert created["endpoints"][0]["zone"] == "zone-a"


def test_headless_label_and_no_ports():
    plan = reconcile(service(clusterIP="None", ports=[]), [pod(1)], [], zones={})
    assert plan.create[0]["metadata"]["labels"]["service.kubernetes.io/headless"] == ""
    assert plan.create[0]["ports"] == [] and addresses(plan.create[0]) == ["10.244.0.2"]


def test_pods_resolving_different_named_ports_get_slices_of_their_own():
    svc = service(ports=[{"name": "http", "port": 80, "targetPort": "web", "protocol": "TCP"}])
    # pod 3 lacks the named port: it is in, with no port
    pods = [pod(1, ports=[{"name": "web", "containerPort": 8080}]),
            pod(2, ports=[{"name": "web", "containerPort": 9090}]), pod(3)]
    plan = reconcile(svc, pods, [], zones={})
    by_ports = {tuple(p["port"] for p in s["ports"]): addresses(s) for s in plan.create}
    assert by_ports == {(8080,): ["10.244.0.2"], (9090,): ["10.244.0.3"], (): ["10.244.0.4"]}


def test_max_endpoints_per_slice_splits_new_slices():
    plan = reconcile(service(), [pod(i) for i in range(250)], [], zones={}, max_endpoints=100)
    assert sorted(len(s["endpoints"]) for s in plan.create) == [50, 100, 100]
    assert len({endpoint_key(e) for s in plan.create for e in s["endpoints"]}) == 250


def test_nothing_to_do_when_slices_already_say_it():
    svc, pods = service(), [pod(1), pod(2)]
    current = stored(reconcile(svc, pods, [], zones={}).create[0], "web-aaaaa")
    assert reconcile(svc, pods, [current], zones={}, trigger_time="2024-05-01T12:00:00Z").empty


def test_changed_condition_updates_in_place_and_removed_pod_leaves():
    svc = service()
    current = stored(reconcile(svc, [pod(1), pod(2), pod(3)], [], zones={}).create[0], "web-aaaaa")
    plan = reconcile(svc, [pod(1, ready=False), pod(2)], [current], zones={})
    assert not plan.create and not plan.delete
    (updated,) = plan.update
    assert updated["metadata"]["name"] == "web-aaaaa" and updated["metadata"]["resourceVersion"] == "1"
    assert addresses(updated) == ["10.244.0.2", "10.244.0.3"]
    assert updated["endpoints"][0]["conditions"]["ready"] is False


def test_new_endpoints_fill_slices_being_updated_fullest_first():
    svc = service()
    a = stored({**reconcile(svc, [pod(i) for i in range(0, 5)], [], zones={}).create[0]}, "web-a")
    b = stored({**reconcile(svc, [pod(i) for i in range(5, 8)], [], zones={}).create[0]}, "web-b")
    # one endpoint of each changes (both slices are updated anyway), three new pods arrive
    pods = [pod(i, ready=i not in (0, 5)) for i in range(0, 8)] + [pod(i) for i in range(8, 11)]
    plan = reconcile(svc, pods, [a, b], zones={}, max_endpoints=6)
    assert not plan.create and not plan.delete
    sizes = {s["metadata"]["name"]: len(s["endpoints"]) for s in plan.update}
    assert sizes == {"web-a": 6, "web-b": 5}  # web-a (fuller) filled first, up to the max


def test_leftovers_go_to_the_unchanged_slice_with_the_least_room_that_fits():
    svc = service()
    roomy = stored(reconcile(svc, [pod(i) for i in range(0, 2)], [], zones={}).create[0], "web-roomy")
    tight = stored(reconcile(svc, [pod(i) for i in range(2, 7)], [], zones={}).create[0], "web-tight")
    plan = reconcile(svc, [pod(i) for i in range(0, 9)], [roomy, tight], zones={}, max_endpoints=8)
    assert not plan.create and not plan.delete
    (updated,) = plan.update
    assert updated["metadata"]["name"] == "web-tight" and len(updated["endpoints"]) == 7


def test_empty_slices_deleted_and_create_plus_delete_becomes_an_update():
    svc = service()
    old = stored(reconcile(svc, [pod(1)], [], zones={}).create[0], "web-old")
    plan = reconcile(svc, [pod(2)], [old], zones={})
    assert not plan.create and not plan.delete
    (updated,) = plan.update
    assert updated["metadata"]["name"] == "web-old" and addresses(updated) == ["10.244.0.3"]


def test_slices_of_another_owner_or_address_type_are_deleted():
    svc = service()
    foreign = stored(reconcile(svc, [pod(1)], [], zones={}).create[0], "web-foreign")
    foreign["metadata"]["ownerReferences"][0]["uid"] = "an-old-service"
    v6 = stored({**reconcile(svc, [pod(1)], [], zones={}).create[0], "addressType": "IPv6"}, "web-v6")
    plan = reconcile(svc, [pod(1)], [foreign, v6], zones={})
    # neither can be reused: one belongs to another Service, the other's addressType is immutable
    assert [s["metadata"]["name"] for s in plan.delete] == ["web-foreign", "web-v6"]
    assert not plan.update and [s["addressType"] for s in plan.create] == ["IPv4"]


def test_no_endpoints_keeps_one_placeholder():
    svc = service()
    plan = reconcile(svc, [], [], zones={})
    (placeholder,) = plan.create
    assert placeholder["endpoints"] == [] and placeholder["ports"] == []
    kept = stored(placeholder, "web-p")
    assert reconcile(svc, [], [kept], zones={}).empty
    full = stored(reconcile(svc, [pod(1)], [], zones={}).create[0], "web-full")
    emptied = reconcile(svc, [], [full], zones={})
    assert emptied.update and emptied.update[0]["metadata"]["name"] == "web-full"
    assert emptied.update[0]["endpoints"] == [] and emptied.update[0]["ports"] == []


def test_labels_follow_the_service():
    svc = service()
    current = stored(reconcile(svc, [pod(1)], [], zones={}).create[0], "web-a")
    svc["metadata"]["labels"] = {"app": "web", "tier": "front"}
    plan = reconcile(svc, [pod(1)], [current], zones={})
    assert plan.update[0]["metadata"]["labels"]["tier"] == "front"


def test_plan_empty_property():
    assert SlicePlan().empty and not SlicePlan(delete=[{}]).empty
