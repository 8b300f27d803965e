"""The EndpointSlice controller and the service-lb-controller running against the shared fake API server
with real informers: slices follow pods (ready, terminating, gone), are split at the max, are put back when
deleted, are never rewritten when equal; LoadBalancer Services get the Ready nodes' addresses (or one pool
address each), follow nodes, and lose the status when they stop being LoadBalancers."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from control.client.informer import InformerFactory
from control.controllers.endpointslice.controller import EndpointSliceController
from control.controllers.servicelb.controller import ServiceLBController, allocate, parse_pool, ready_node_addresses
from control.controllers.shared.endpointslice_reconciler import CONTROLLER_NAME, MANAGED_BY_LABEL, SERVICE_NAME_LABEL
from tests.support.fake_apiserver import FakeAPIServer
from tests.support.polling import wait_for

SLICES = "/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices"
WAIT = 10.0


class Running:
    """A controller on its own thread over a fake API server; `user` writes as a client would."""

    def __init__(self, make, *objects: dict[str, Any]) -> None:
        self.api = FakeAPIServer(*objects)
        self.user = self.api.client("user")
        self.factory = InformerFactory(self.api.client("informers"))
        self.controller = make(self.api.client("controller"), self.factory)
        self.stop = threading.Event()
        self.factory.start(self.stop)
        self.thread = threading.Thread(target=self.controller.run, args=(self.stop,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)

    def slices(self) -> list[dict[str, Any]]:
        return self.user.list(SLICES)["items"]

    def writes(self) -> list[str]:
        return [a.verb for a in self.api.actions_of("controller", "create", "update", "delete")
                if "endpointslices" in a.path]


def service(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "creationTimestamp": "2024-05-01T12:00:00Z"},
            "spec": {"selector": {"app": "web"}, "clusterIP": "10.96.0.10",
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}], **spec}}


def pod(index: int, *, ready: bool = True) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"web-{index}", "namespace": "ns", "uid": f"uid-{index}", "labels": {"app": "web"}},
            "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
            "status": {"phase": "Running", "podIP": f"10.244.0.{index + 2}",
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                       "lastTransitionTime": "2024-05-01T12:00:00Z"}]}}


def node(name: str, ip: str, ready: bool = True) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": "z1"}},
            "status": {"addresses": [{"type": "InternalIP", "address": ip}],
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def endpoints_by_ip(slices: list[dict[str, Any]]) -> dict[str, dict[str, bool]]:
    return {e["addresses"][0]: e["conditions"] for s in slices for e in s["endpoints"]}


@pytest.fixture
def slices_run() -> Iterator[Running]:
    running = Running(lambda client, factory: EndpointSliceController(client, factory, workers=2,
                                                                      max_endpoints_per_slice=3),
                      service(), node("n1", "10.250.0.1"), *(pod(i) for i in range(2)))
    yield running
    running.close()


def test_slices_follow_pods(slices_run: Running) -> None:
    run = slices_run
    (first,) = wait_for(lambda: [s for s in run.slices() if len(s["endpoints"]) == 2], WAIT, "a slice of 2")
    labels = first["metadata"]["labels"]
    assert labels[SERVICE_NAME_LABEL] == "web" and labels[MANAGED_BY_LABEL] == CONTROLLER_NAME
    assert first["metadata"]["name"].startswith("web-")
    assert first["metadata"]["ownerReferences"][0]["uid"] == "uid-web"
    assert first["endpoints"][0]["zone"] == "z1" and first["endpoints"][0]["nodeName"] == "n1"
    assert first["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]

    # a pod turns not ready, another is being deleted: conditions follow
    run.user.update_status("/api/v1/namespaces/ns/pods/web-0", {**pod(0, ready=False)})
    wait_for(lambda: endpoints_by_ip(run.slices()).get("10.244.0.2", {}).get("ready") is False, WAIT, "not ready")
    # more pods than fit one slice (max 3): a second slice
    for i in range(2, 5):
        run.user.create("/api/v1/namespaces/ns/pods", pod(i))
    wait_for(lambda: len(endpoints_by_ip(run.slices())) == 5, WAIT, "5 endpoints")
    assert sorted(len(s["endpoints"]) for s in run.slices()) == [2, 3]
    # a deleted slice is put back
    victim = run.slices()[0]
    run.user.delete(f"{SLICES}/{victim['metadata']['name']}")
    wait_for(lambda: len(endpoints_by_ip(run.slices())) == 5, WAIT, "the deleted slice's endpoints back")
    # nothing to do: no further writes
    writes = len(run.writes())
    run.controller.queue.add("ns/web")
    wait_for(lambda: not len(run.controller.queue), WAIT, "the resync")
    assert len(run.writes()) == writes


def test_a_service_without_pods_gets_a_placeholder_and_without_selector_nothing() -> None:
    run = Running(lambda client, factory: EndpointSliceController(client, factory, workers=1),
                  service(selector={"app": "none"}), service("manual", selector=None))
    try:
        (placeholder,) = wait_for(lambda: run.slices(), WAIT, "a placeholder slice")
        assert placeholder["endpoints"] == [] and placeholder["ports"] == []
        assert placeholder["metadata"]["labels"][SERVICE_NAME_LABEL] == "web"
    finally:
        run.close()


def test_pool_parsing_and_allocation() -> None:
    assert parse_pool("192.0.2.10, 192.0.2.10,198.51.100.0/30") == ["192.0.2.10", "198.51.100.1", "198.51.100.2"]
    with pytest.raises(ValueError):
        parse_pool("not-an-ip")
    pool = ["192.0.2.1", "192.0.2.2"]
    assert allocate("ns/a", [], pool, {}) == "192.0.2.1"
    assert allocate("ns/b", ["192.0.2.1"], pool, {"192.0.2.1": "ns/a"}) == "192.0.2.2"  # held by another
    assert allocate("ns/a", ["192.0.2.2"], pool, {"192.0.2.1": "ns/b"}) == "192.0.2.2"  # keeps its own
    assert allocate("ns/c", [], pool, {"192.0.2.1": "ns/a", "192.0.2.2": "ns/b"}) is None


def test_ready_node_addresses_prefers_external_ip_and_skips_not_ready() -> None:
    external = node("n3", "10.250.0.3")
    external["status"]["addresses"].append({"type": "ExternalIP", "address": "203.0.113.3"})
    nodes = [node("n2", "10.250.0.10"), node("n1", "10.250.0.9"), node("x", "10.250.0.4", ready=False), external]
    assert ready_node_addresses(nodes) == ["10.250.0.9", "10.250.0.10", "203.0.113.3"]


def ingress(run: Running, name: str) -> list[str]:
    svc = run.user.get(f"/api/v1/namespaces/ns/services/{name}")
    return [entry["ip"] for entry in ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []]


def test_load_balancer_services_get_ready_node_addresses_and_follow_nodes() -> None:
    run = Running(lambda client, factory: ServiceLBController(client, factory),
                  service("lb", type="LoadBalancer"), service("plain"), node("n1", "10.250.0.1"),
                  node("n2", "10.250.0.2"), service("other", type="LoadBalancer", loadBalancerClass="x.io/lb"))
    try:
        wait_for(lambda: ingress(run, "lb") == ["10.250.0.1", "10.250.0.2"], WAIT, "both nodes' addresses")
        assert ingress(run, "plain") == [] and ingress(run, "other") == []
        run.user.update_status("/api/v1/nodes/n2", node("n2", "10.250.0.2", ready=False))
        wait_for(lambda: ingress(run, "lb") == ["10.250.0.1"], WAIT, "the NotReady node's address gone")
        run.user.create("/api/v1/nodes", node("n3", "10.250.0.3"))
        wait_for(lambda: ingress(run, "lb") == ["10.250.0.1", "10.250.0.3"], WAIT, "a new node's address")
        lb = run.user.get("/api/v1/namespaces/ns/services/lb")
        lb["spec"]["type"] = "ClusterIP"
        run.user.update("/api/v1/namespaces/ns/services/lb", lb)
        wait_for(lambda: ingress(run, "lb") == [], WAIT, "the status cleared")
    finally:
        run.close()


def test_pool_gives_each_service_its_own_address() -> None:
    run = Running(lambda client, factory: ServiceLBController(client, factory, pool=["192.0.2.1", "192.0.2.2"]),
                  service("a", type="LoadBalancer"), service("b", type="LoadBalancer"), node("n1", "10.250.0.1"))
    try:
        wait_for(lambda: sorted(ingress(run, "a") + ingress(run, "b")) == ["192.0.2.1", "192.0.2.2"], WAIT,
                 "one pool address each")
        run.user.create("/api/v1/namespaces/ns/services", service("c", type="LoadBalancer"))
        wait_for(lambda: any(a.verb == "create" and "events" in a.path and "AllocationFailed" in str(a.body)
                             for a in run.api.actions_of("controller", "create")), WAIT, "AllocationFailed")
        assert ingress(run, "c") == []
        freed = ingress(run, "a")
        run.user.delete("/api/v1/namespaces/ns/services/a")
        wait_for(lambda: ingress(run, "c") == freed, WAIT, "the freed address reused")
    finally:
        run.close()


def user_endpoints(name: str, ready: list[str], not_ready: list[str] = (), **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-ep-{name}", "labels": dict(labels)},
            "subsets": [{"addresses": [{"ip": ip, "nodeName": "n1"} for ip in ready],
                         "notReadyAddresses": [{"ip": ip} for ip in not_ready],
                         "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}]}


def test_mirroring_copies_endpoints_of_selectorless_services_only() -> None:
    from control.controllers.endpointslicemirroring.controller import (
        MIRRORING_CONTROLLER_NAME,
        EndpointSliceMirroringController,
    )

    run = Running(lambda client, factory: EndpointSliceMirroringController(client, factory, workers=1),
                  service("ext", selector=None), user_endpoints("ext", ["192.0.2.1"], ["192.0.2.2"]),
                  service("web"), user_endpoints("web", ["10.244.0.9"]),  # a selector: not mirrored
                  service("skip", selector=None),
                  user_endpoints("skip", ["192.0.2.9"], **{"endpointslice.kubernetes.io/skip-mirror": "true"}))
    try:
        (mirrored,) = wait_for(lambda: run.slices(), WAIT, "a mirrored slice")
        assert mirrored["metadata"]["labels"] == {SERVICE_NAME_LABEL: "ext",
                                                  MANAGED_BY_LABEL: MIRRORING_CONTROLLER_NAME}
        assert mirrored["metadata"]["ownerReferences"][0]["kind"] == "Endpoints"
        assert mirrored["metadata"]["name"].startswith("ext-")
        assert endpoints_by_ip([mirrored]) == {"192.0.2.1": {"ready": True}, "192.0.2.2": {"ready": False}}
        assert mirrored["endpoints"][0]["nodeName"] == "n1"
        assert mirrored["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
        run.user.update("/api/v1/namespaces/ns/endpoints/ext", user_endpoints("ext", ["192.0.2.3"]))
        wait_for(lambda: endpoints_by_ip(run.slices()) == {"192.0.2.3": {"ready": True}}, WAIT, "the new address")
        svc = run.user.get("/api/v1/namespaces/ns/services/ext")
        svc["spec"]["selector"] = {"app": "ext"}  # a selector now: the endpoints controller's, not mirrored
        run.user.update("/api/v1/namespaces/ns/services/ext", svc)
        wait_for(lambda: run.slices() == [], WAIT, "the mirrored slice deleted")
    finally:
        run.close()
