"""The node IPAM controller against a real API server on 127.0.0.1: Nodes made without a podCIDR get
distinct ones out of the cluster CIDR (never out of the service CIDR inside it), a Node that has one keeps
it, a deleted Node's CIDR is handed out again, a restarted controller first rebuilds its map from the
Nodes, an exhausted range gives the Node upstream's CIDRNotAvailable event, and `slimkube server` runs it
by default with --cluster-cidr / --node-cidr-mask-size."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from control.client.kubeconfig import load_kubeconfig
from control.client.rest import RESTClient
from control.controllers.manager import CONTROLLERS, ControllerManager, ControllerManagerConfiguration
from tests.support.apiserver import Endpoint, ProcessServer, running_server
from tests.support.polling import wait_until

# four /24s; the "service CIDR" takes the third, so three nodes fit
SETTINGS = ControllerManagerConfiguration(cluster_cidr="10.200.0.0/22", node_cidr_mask_size=24,
                                          service_cidr="10.200.2.0/24")


@pytest.fixture()
def server(tmp_path) -> Iterator[tuple[RESTClient, Endpoint]]:
    with running_server(str(tmp_path)) as endpoint, RESTClient.from_kubeconfig(endpoint.kubeconfig) as rest:
        yield rest, endpoint


@contextmanager
def node_ipam(endpoint: Endpoint, settings: ControllerManagerConfiguration = SETTINGS) -> Iterator[None]:
    manager = ControllerManager(load_kubeconfig(endpoint.kubeconfig), settings=settings,
                                controllers={"nodeipam": CONTROLLERS["nodeipam"]})
    manager.start()
    try:
        yield
    finally:
        manager.stop()


def make_node(client: RESTClient, name: str, pod_cidr: str | None = None) -> dict[str, Any]:
    spec = {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr]} if pod_cidr else {}
    return client.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                                           "spec": spec})


def cidr_of(client: RESTClient, name: str) -> str:
    spec = client.get(f"/api/v1/nodes/{name}").get("spec") or {}
    assert spec.get("podCIDRs", [spec.get("podCIDR")])[:1] == [spec.get("podCIDR")], spec
    return spec.get("podCIDR") or ""


def wait_cidr(client: RESTClient, name: str) -> str:
    cidr = wait_until(lambda: cidr_of(client, name), 10)
    assert cidr, f"node {name} got no podCIDR"
    return cidr


def events_about(client: RESTClient, name: str) -> list[dict[str, Any]]:
    items = client.get("/api/v1/namespaces/default/events")["items"]
    return [e for e in items if e["involvedObject"].get("name") == name and e["involvedObject"]["kind"] == "Node"]


def test_nodes_get_distinct_cidrs_outside_the_service_cidr_until_exhausted(server) -> None:
    client, endpoint = server
    make_node(client, "pinned", "10.200.1.0/24")  # as a kubelet with --pod-cidr registers it
    with node_ipam(endpoint):
        make_node(client, "a")
        make_node(client, "b")
        got = {name: wait_cidr(client, name) for name in ("a", "b")}
        assert got == {"a": "10.200.0.0/24", "b": "10.200.3.0/24"}  # not .1 (pinned), not .2 (services)
        assert cidr_of(client, "pinned") == "10.200.1.0/24"

        make_node(client, "c")  # nothing left: upstream's event, no CIDR
        event = wait_until(lambda: events_about(client, "c"), 10)
        assert event and event[0]["reason"] == "CIDRNotAvailable", event
        assert event[0]["type"] == "Normal" and event[0]["message"] == "Node c status is now: CIDRNotAvailable"
        assert event[0]["source"]["component"] == "cidrAllocator"
        assert cidr_of(client, "c") == ""

        client.delete("/api/v1/nodes/b")  # its CIDR goes back to the pool and to the waiting node
        assert wait_cidr(client, "c") == "10.200.3.0/24"


def test_a_restarted_controller_rebuilds_its_map_before_allocating(server) -> None:
    client, endpoint = server
    with node_ipam(endpoint):
        make_node(client, "first")
        assert wait_cidr(client, "first") == "10.200.0.0/24"
    make_node(client, "second")  # made while no controller runs
    with node_ipam(endpoint):
        second = wait_cidr(client, "second")
        make_node(client, "third")
        third = wait_cidr(client, "third")
    cidrs = [cidr_of(client, "first"), second, third]
    assert cidrs[0] == "10.200.0.0/24" and len(set(cidrs)) == 3, cidrs
    assert all(ipaddress.ip_network(c).subnet_of(ipaddress.ip_network("10.200.0.0/22")) for c in cidrs)
    assert "10.200.2.0/24" not in cidrs


def test_slimkube_server_runs_node_ipam_with_its_flags(tmp_path) -> None:
    server = ProcessServer(str(tmp_path), args=("--cluster-cidr", "10.201.0.0/16", "--node-cidr-mask-size", "26"))
    endpoint = server.start()
    try:
        with RESTClient.from_kubeconfig(endpoint.kubeconfig) as client:
            make_node(client, "w1")
            make_node(client, "w2")
            assert sorted(wait_cidr(client, n) for n in ("w1", "w2")) == ["10.201.0.0/26", "10.201.0.64/26"]
    finally:
        server.stop()
