"""A pod's sandbox configuration (nodeagent/runtime/sandbox_config.py) and a container's CRI metadata,
labels and annotations (container_config.py), decided from the pod alone."""

from __future__ import annotations

from control.util.resolvconf import ResolvConf
from nodeagent.runtime import labels as L
from nodeagent.runtime.container_config import build_container_config
from nodeagent.runtime.cri import (
    ContainerConfig,
    ContainerMetadata,
    Device,
    DNSConfig,
    PodSandboxMetadata,
    PortMapping,
)
from nodeagent.runtime.docker import docker_create_args
from nodeagent.runtime.sandbox_config import build_sandbox_config, sandbox_hostname
from nodeagent.runtime.spechash import container_hash

POD = {
    "metadata": {"name": "web", "namespace": "prod", "uid": "u-1"},
    "spec": {"terminationGracePeriodSeconds": 5, "hostIPC": True,
             "securityContext": {"sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]},
             "containers": [{"name": "app", "image": "busybox",
                             "ports": [{"containerPort": 80, "hostPort": 8080},
                                       {"containerPort": 53, "hostPort": 5353, "protocol": "UDP",
                                        "hostIP": "127.0.0.1"},
                                       {"containerPort": 9090}],
                             "lifecycle": {"preStop": {"exec": {"command": ["true"]}}}}]},
}


def test_sandbox_hostname_prefers_spec_hostname_and_truncates():
    assert sandbox_hostname({"metadata": {"name": "web"}}) == "web"
    assert sandbox_hostname({"metadata": {"name": "web"}, "spec": {"hostname": "db-0"}}) == "db-0"
    assert sandbox_hostname({"metadata": {"name": "a" * 62 + "-b"}}) == "a" * 62


def test_the_sandbox_config_carries_the_pod_in_cri_terms():
    config = build_sandbox_config(POD, attempt=2, extra_labels={"slimkube.test": "x", L.POD_UID: "must-not-win"},
                                  dns=ResolvConf(("10.96.0.10",), ("prod.svc.cluster.local",), ("ndots:5",)))
    assert config.metadata == PodSandboxMetadata(name="web", uid="u-1", namespace="prod", attempt=2)
    assert config.hostname == "web"
    assert config.log_directory == "/var/log/pods/prod_web_u-1"
    assert config.dns_config == DNSConfig(("10.96.0.10",), ("prod.svc.cluster.local",), ("ndots:5",))
    assert config.port_mappings == (PortMapping("TCP", 80, 8080), PortMapping("UDP", 53, 5353, "127.0.0.1"))
    assert config.labels == {"slimkube.test": "x", L.POD_NAME: "web", L.POD_NAMESPACE: "prod", L.POD_UID: "u-1"}
    assert config.annotations == {L.SANDBOX_ATTEMPT: "2", L.GRACE_PERIOD: "5"}
    assert (config.linux.host_network, config.linux.host_ipc, config.linux.host_pid) == (False, True, False)
    assert config.linux.sysctls == (("net.core.somaxconn", "1024"),)


def test_a_host_network_sandbox_keeps_the_nodes_hostname():
    pod = {"metadata": {"name": "h", "uid": "u"}, "spec": {"hostNetwork": True}}
    config = build_sandbox_config(pod, attempt=0)
    assert config.hostname == "" and config.linux.host_network
    assert config.metadata.namespace == "default" and config.dns_config is None


def test_the_container_config_carries_its_identity():
    container = POD["spec"]["containers"][0]
    config = build_container_config(POD, container, env=(), mounts=(), image="busybox", pod_dir=None, attempt=3,
                                    extra_labels={"slimkube.test": "x"})
    assert config.metadata == ContainerMetadata("app", 3)
    assert config.labels == {"slimkube.test": "x", L.POD_NAME: "web", L.POD_NAMESPACE: "prod", L.POD_UID: "u-1",
                             L.CONTAINER_NAME: "app"}
    assert config.annotations[L.CONTAINER_HASH] == container_hash(container)
    assert config.annotations[L.RESTART_COUNT] == "3" and config.annotations[L.GRACE_PERIOD] == "5"
    assert config.annotations[L.PRESTOP_HANDLER] == '{"exec":{"command":["true"]}}'
    assert config.log_path == "app/3.log"


def test_devices_reach_docker_as_device_strings():
    config = ContainerConfig(image="busybox", devices=(Device("/dev/fuse", "/dev/fuse"), Device("/d", "/h", "r")))
    assert docker_create_args(config)[1]["devices"] == ["/dev/fuse:/dev/fuse:rwm", "/h:/d:r"]
    assert "devices" not in docker_create_args(ContainerConfig(image="busybox"))[1]
