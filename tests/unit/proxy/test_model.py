"""proxy/model.py: Service and EndpointSlice dicts → the values the renderer reads (upstream
servicechangetracker.go / endpointslicecache.go conversions), and CategorizeEndpoints."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.model import (
    DEFAULT_AFFINITY_TIMEOUT,
    EndpointInfo,
    NodeConfig,
    ServicePortName,
    categorize_endpoints,
    endpoint_slice_by_port,
    merge_slices,
    service_ports,
)


def service(**spec: Any) -> dict[str, Any]:
    spec.setdefault("clusterIP", "10.96.0.10")
    spec.setdefault("ports", [{"name": "http", "port": 80, "protocol": "TCP"}])
    return {"metadata": {"namespace": "ns", "name": "web"}, "spec": spec}


def test_service_port_name_string() -> None:
    assert str(ServicePortName("default", "kubernetes", "https", "TCP")) == "default/kubernetes:https"
    assert str(ServicePortName("ns", "web", "", "TCP")) == "ns/web"


def test_cluster_ip_service_ports() -> None:
    svc = service(ports=[{"name": "http", "port": 80}, {"name": "dns", "port": 53, "protocol": "UDP",
                                                         "nodePort": 30053}])
    ports = service_ports(svc)
    assert [(str(p.name), p.protocol, p.port, p.node_port) for p in ports] == [
        ("ns/web:http", "TCP", 80, 0), ("ns/web:dns", "UDP", 53, 30053)]
    assert ports[1].name.protocol == "UDP"
    assert all(p.cluster_ip == "10.96.0.10" and p.session_affinity_seconds == 0 for p in ports)


@pytest.mark.parametrize("svc", [
    pytest.param(service(clusterIP="None"), id="headless"),
    pytest.param(service(clusterIP=""), id="no-cluster-ip"),
    pytest.param(service(type="ExternalName", externalName="example.com"), id="external-name"),
])
def test_services_without_rules(svc: dict[str, Any]) -> None:
    assert service_ports(svc) == []


def test_affinity_external_ips_load_balancer_and_policies() -> None:
    svc = service(sessionAffinity="ClientIP", externalIPs=["192.0.2.1"], externalTrafficPolicy="Local",
                  internalTrafficPolicy="Local")
    svc["status"] = {"loadBalancer": {"ingress": [{"ip": "198.51.100.7"}, {"hostname": "lb.example"}]}}
    (port,) = service_ports(svc)
    assert port.session_affinity_seconds == DEFAULT_AFFINITY_TIMEOUT
    assert port.external_ips == ("192.0.2.1",)
    assert port.load_balancer_ips == ("198.51.100.7",)
    assert port.external_policy_local and port.internal_policy_local


def test_affinity_timeout_from_config() -> None:
    svc = service(sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {"timeoutSeconds": 60}})
    assert service_ports(svc)[0].session_affinity_seconds == 60


def _slice(endpoints: list[dict], ports: list[dict], **extra: Any) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "name": "web-abc", "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4", "endpoints": endpoints, "ports": ports, **extra}


def test_endpoint_slice_by_port_name_with_conditions_and_locality() -> None:
    endpoint_slice = _slice([
        {"addresses": ["10.244.0.3"], "conditions": {"ready": True}, "nodeName": "n1"},
        {"addresses": ["10.244.1.2"], "nodeName": "n2"},  # no conditions: ready and serving
        {"addresses": ["10.244.0.9"], "conditions": {"ready": False, "serving": True, "terminating": True},
         "nodeName": "n1"},
    ], [{"name": "http", "port": 8080, "protocol": "TCP"}, {"name": "dns", "port": 53, "protocol": "UDP"}])
    result = endpoint_slice_by_port(endpoint_slice, node_name="n1")
    http = result[ServicePortName("ns", "web", "http", "TCP")]
    assert http == [EndpointInfo("10.244.0.3", 8080, True, "n1", True),
                    EndpointInfo("10.244.0.9", 8080, False, "n1", True, serving=True, terminating=True),
                    EndpointInfo("10.244.1.2", 8080, True, "n2", False)]
    assert [e.address for e in result[ServicePortName("ns", "web", "dns", "UDP")]] == [
        "10.244.0.3:53", "10.244.0.9:53", "10.244.1.2:53"]


@pytest.mark.parametrize("endpoint_slice", [
    pytest.param({**_slice([{"addresses": ["10.0.0.1"]}], [{"port": 80}]), "metadata": {"name": "x"}},
                 id="no-service-name-label"),
    pytest.param(_slice([{"addresses": ["fd00::1"]}], [{"port": 80}], addressType="IPv6"), id="ipv6"),
    pytest.param(_slice([{"addresses": ["10.0.0.1"]}], [{"name": "all"}]), id="port-without-number"),
])
def test_slices_the_proxy_ignores(endpoint_slice: dict[str, Any]) -> None:
    assert not any(endpoint_slice_by_port(endpoint_slice).values())


def test_slices_of_one_service_merge_and_dedupe() -> None:
    name = ServicePortName("ns", "web", "", "TCP")
    first = {name: [EndpointInfo("10.0.0.1", 80), EndpointInfo("10.0.0.2", 80)]}
    second = {name: [EndpointInfo("10.0.0.2", 80, ready=False), EndpointInfo("10.0.0.3", 80)]}
    merged = merge_slices([first, second])
    assert merged == {name: (EndpointInfo("10.0.0.1", 80), EndpointInfo("10.0.0.2", 80), EndpointInfo("10.0.0.3", 80))}


READY = EndpointInfo("10.0.0.1", 80, node_name="n2")
NOT_READY = EndpointInfo("10.0.0.2", 80, ready=False, serving=False)
TERMINATING_HERE = EndpointInfo("10.0.0.3", 80, ready=False, node_name="n1", is_local=True, serving=True,
                                terminating=True)
TERMINATING_NOT_SERVING = EndpointInfo("10.0.0.4", 80, ready=False, serving=False, terminating=True)
READY_HERE = EndpointInfo("10.0.0.5", 80, node_name="n1", is_local=True)


@pytest.mark.parametrize(("endpoints", "cluster", "local", "has_any"), [
    pytest.param([READY, NOT_READY, TERMINATING_HERE], [READY], [TERMINATING_HERE], True,
                 id="ready-wins-cluster-local-falls-back"),
    pytest.param([NOT_READY, TERMINATING_HERE, TERMINATING_NOT_SERVING], [TERMINATING_HERE], [TERMINATING_HERE], True,
                 id="no-ready-anywhere-serving-terminating-used"),
    pytest.param([READY_HERE, TERMINATING_HERE], [READY_HERE], [READY_HERE], True, id="ready-local-wins"),
    pytest.param([NOT_READY, TERMINATING_NOT_SERVING], [], [], False, id="nothing-usable"),
    pytest.param([], [], [], False, id="empty"),
])
def test_categorize_endpoints(endpoints, cluster, local, has_any) -> None:
    result = categorize_endpoints(endpoints)
    assert (list(result.cluster), list(result.local), result.has_any) == (cluster, local, has_any)


@pytest.mark.parametrize("node, expected", [
    pytest.param(NodeConfig("n"), True, id="default-every-address"),
    pytest.param(NodeConfig("n", localhost_nodeports=False), False, id="disabled"),
    pytest.param(NodeConfig("n", nodeport_addresses=("10.0.0.0/8",)), False, id="loopback-not-listed"),
    pytest.param(NodeConfig("n", nodeport_addresses=("127.0.0.0/8",)), True, id="loopback-listed"),
])
def test_nodeports_answer_on_localhost_only_when_enabled_and_loopback_allowed(node: NodeConfig, expected: bool) -> None:
    assert node.nodeports_on_localhost is expected
