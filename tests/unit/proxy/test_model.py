"""proxy/model.py: Service and Endpoints dicts → the values the renderer reads (upstream
servicechangetracker.go / endpointschangetracker.go conversions)."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.model import (
    DEFAULT_AFFINITY_TIMEOUT,
    EndpointInfo,
    NodeConfig,
    ServicePortName,
    endpoints_by_port,
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


def test_endpoints_by_port_name_with_readiness_and_locality() -> None:
    endpoints = {"metadata": {"namespace": "ns", "name": "web"}, "subsets": [{
        "addresses": [{"ip": "10.244.0.3", "nodeName": "n1"}, {"ip": "10.244.1.2", "nodeName": "n2"}],
        "notReadyAddresses": [{"ip": "10.244.0.9", "nodeName": "n1"}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}, {"name": "dns", "port": 53, "protocol": "UDP"}],
    }]}
    result = endpoints_by_port(endpoints, node_name="n1")
    http = result[ServicePortName("ns", "web", "http", "TCP")]
    assert http == [EndpointInfo("10.244.0.3", 8080, True, "n1", True),
                    EndpointInfo("10.244.0.9", 8080, False, "n1", True),
                    EndpointInfo("10.244.1.2", 8080, True, "n2", False)]
    assert [e.address for e in result[ServicePortName("ns", "web", "dns", "UDP")]] == [
        "10.244.0.3:53", "10.244.0.9:53", "10.244.1.2:53"]


def test_endpoints_without_subsets() -> None:
    assert endpoints_by_port({"metadata": {"namespace": "ns", "name": "web"}}) == {}
    assert endpoints_by_port({"metadata": {"namespace": "ns", "name": "web"}, "subsets": [
        {"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]}) == {
        ServicePortName("ns", "web", "", "TCP"): [EndpointInfo("10.0.0.1", 80)]}


@pytest.mark.parametrize("node, expected", [
    pytest.param(NodeConfig("n"), True, id="default-every-address"),
    pytest.param(NodeConfig("n", localhost_nodeports=False), False, id="disabled"),
    pytest.param(NodeConfig("n", nodeport_addresses=("10.0.0.0/8",)), False, id="loopback-not-listed"),
    pytest.param(NodeConfig("n", nodeport_addresses=("127.0.0.0/8",)), True, id="loopback-listed"),
])
def test_nodeports_answer_on_localhost_only_when_enabled_and_loopback_allowed(node: NodeConfig, expected: bool) -> None:
    assert node.nodeports_on_localhost is expected
