"""Service environment variables (nodeagent/runtime/service_env.py) against upstream's tables:
pkg/kubelet/envvars/envvars_test.go TestFromServices, and kubelet_pods_test.go's getServiceEnvVarMap
cases (master service always, namespace services only with enableServiceLinks, the container's env wins)."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.runtime.env import make_environment
from nodeagent.runtime.service_env import ServicesNotSynced, enable_service_links, from_services, service_env_map
from tests.support.fake_objects import FakeObjects


def svc(name: str, ip: str, *ports: dict[str, Any], namespace: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"bar": "baz"}, "clusterIP": ip, "ports": list(ports)}}


def test_from_services_upstream_table() -> None:
    services = [
        svc("foo-bar", "1.2.3.4", {"port": 8080, "protocol": "TCP"}),
        svc("abc-123", "5.6.7.8", {"name": "u-d-p", "port": 8081, "protocol": "UDP"},
            {"name": "t-c-p", "port": 8081, "protocol": "TCP"}),
        svc("q-u-u-x", "9.8.7.6", {"port": 8082, "protocol": "TCP"}, {"name": "8083", "port": 8083, "protocol": "TCP"}),
        svc("svrc-clusterip-none", "None", {"port": 8082, "protocol": "TCP"}),
        svc("svrc-clusterip-empty", "", {"port": 8082, "protocol": "TCP"}),
    ]
    assert from_services(services) == [
        ("FOO_BAR_SERVICE_HOST", "1.2.3.4"),
        ("FOO_BAR_SERVICE_PORT", "8080"),
        ("FOO_BAR_PORT", "tcp://1.2.3.4:8080"),
        ("FOO_BAR_PORT_8080_TCP", "tcp://1.2.3.4:8080"),
        ("FOO_BAR_PORT_8080_TCP_PROTO", "tcp"),
        ("FOO_BAR_PORT_8080_TCP_PORT", "8080"),
        ("FOO_BAR_PORT_8080_TCP_ADDR", "1.2.3.4"),
        ("ABC_123_SERVICE_HOST", "5.6.7.8"),
        ("ABC_123_SERVICE_PORT", "8081"),
        ("ABC_123_SERVICE_PORT_U_D_P", "8081"),
        ("ABC_123_SERVICE_PORT_T_C_P", "8081"),
        ("ABC_123_PORT", "udp://5.6.7.8:8081"),
        ("ABC_123_PORT_8081_UDP", "udp://5.6.7.8:8081"),
        ("ABC_123_PORT_8081_UDP_PROTO", "udp"),
        ("ABC_123_PORT_8081_UDP_PORT", "8081"),
        ("ABC_123_PORT_8081_UDP_ADDR", "5.6.7.8"),
        ("ABC_123_PORT_8081_TCP", "tcp://5.6.7.8:8081"),
        ("ABC_123_PORT_8081_TCP_PROTO", "tcp"),
        ("ABC_123_PORT_8081_TCP_PORT", "8081"),
        ("ABC_123_PORT_8081_TCP_ADDR", "5.6.7.8"),
        ("Q_U_U_X_SERVICE_HOST", "9.8.7.6"),
        ("Q_U_U_X_SERVICE_PORT", "8082"),
        ("Q_U_U_X_SERVICE_PORT_8083", "8083"),
        ("Q_U_U_X_PORT", "tcp://9.8.7.6:8082"),
        ("Q_U_U_X_PORT_8082_TCP", "tcp://9.8.7.6:8082"),
        ("Q_U_U_X_PORT_8082_TCP_PROTO", "tcp"),
        ("Q_U_U_X_PORT_8082_TCP_PORT", "8082"),
        ("Q_U_U_X_PORT_8082_TCP_ADDR", "9.8.7.6"),
        ("Q_U_U_X_PORT_8083_TCP", "tcp://9.8.7.6:8083"),
        ("Q_U_U_X_PORT_8083_TCP_PROTO", "tcp"),
        ("Q_U_U_X_PORT_8083_TCP_PORT", "8083"),
        ("Q_U_U_X_PORT_8083_TCP_ADDR", "9.8.7.6"),
    ]


# The service set of upstream's TestMakeEnvironmentVariables (kubelet_pods_test.go).
CLUSTER = [
    svc("kubernetes", "1.2.3.1", {"port": 8081, "protocol": "TCP"}, namespace="default"),
    svc("test", "1.2.3.3", {"port": 8083, "protocol": "TCP"}, namespace="test1"),
    svc("kubernetes", "1.2.3.4", {"port": 8084, "protocol": "TCP"}, namespace="test2"),
    svc("test", "1.2.3.5", {"port": 8085, "protocol": "TCP"}, namespace="test2"),
    svc("test", "None", {"port": 8085, "protocol": "TCP"}, namespace="test2"),
    svc("kubernetes", "1.2.3.6", {"port": 8086, "protocol": "TCP"}, namespace="kubernetes"),
    svc("not-special", "1.2.3.8", {"port": 8088, "protocol": "TCP"}, namespace="kubernetes"),
]


@pytest.mark.parametrize(("namespace", "links", "hosts"), [
    pytest.param("test1", True, {"KUBERNETES": "1.2.3.1", "TEST": "1.2.3.3"}, id="namespace-services-and-master"),
    pytest.param("test1", False, {"KUBERNETES": "1.2.3.1"}, id="links-off-keeps-the-master-service"),
    pytest.param("test2", True, {"KUBERNETES": "1.2.3.4", "TEST": "1.2.3.5"}, id="local-kubernetes-overrides"),
    pytest.param("test2", False, {"KUBERNETES": "1.2.3.1"}, id="links-off-master-not-the-local-one"),
    pytest.param("kubernetes", True, {"KUBERNETES": "1.2.3.6", "NOT_SPECIAL": "1.2.3.8"}, id="ns-called-kubernetes"),
    pytest.param("default", False, {"KUBERNETES": "1.2.3.1"}, id="default-namespace-links-off"),
])
def test_service_env_map_selects_as_upstream(namespace: str, links: bool, hosts: dict[str, str]) -> None:
    env = service_env_map(CLUSTER, namespace, links)
    assert {k[: -len("_SERVICE_HOST")]: v for k, v in env.items() if k.endswith("_SERVICE_HOST")} == hosts
    if "TEST" in hosts:
        assert env["TEST_PORT"] == f"tcp://{hosts['TEST']}:{env['TEST_SERVICE_PORT']}"


def test_enable_service_links_defaults_to_true() -> None:
    assert enable_service_links({"spec": {}}) is True
    assert enable_service_links({"spec": {"enableServiceLinks": False}}) is False


def test_container_env_wins_and_may_refer_to_service_variables() -> None:
    pod = {"metadata": {"name": "p", "namespace": "test1"}, "spec": {}}
    container = {"name": "c", "env": [
        {"name": "TEST_SERVICE_HOST", "value": "mine"},
        {"name": "URL", "value": "http://$(TEST_SERVICE_HOST):$(TEST_SERVICE_PORT)"},
    ]}
    env = make_environment(pod, container, FakeObjects(), service_env=service_env_map(CLUSTER, "test1", True))
    values = env.as_dict()
    assert values["TEST_SERVICE_HOST"] == "mine"
    assert values["URL"] == "http://mine:8083"  # the container's own value first, then the service's
    assert values["KUBERNETES_SERVICE_HOST"] == "1.2.3.1"
    names = [name for name, _ in env.variables]
    assert names[:2] == ["TEST_SERVICE_HOST", "URL"] and names.count("TEST_SERVICE_HOST") == 1


def test_services_not_synced_message_is_upstreams() -> None:
    assert str(ServicesNotSynced()) == "services have not yet been read at least once, cannot construct envvars"
