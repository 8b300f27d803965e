"""Nodes on different subnets, in network namespaces this test makes: a "router" namespace with one
bridge per subnet (10.97.1.1/24, 10.97.2.1/24, forwarding between them), node n1 on the first and n2 on
the second (no L2 between them), each with a "pod" namespace behind a veth. The vxlan backend makes the
pods reach each other (the VXLAN packets are routed like any UDP); host-gw refuses the other node, whose
address is not on a directly connected subnet, and adds no route."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from nodeagent.network.backends import desired as d
from nodeagent.network.backends.agent import PodNetworkAgent
from tests.integration.test_pod_network_backends import agents as backend_agents
from tests.integration.test_pod_network_backends import in_ns, ip, node_object, reaches, wire_pod

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def routed(netns: Callable[[str], str]) -> dict[str, str]:
    names = {key: netns(key) for key in ("router", "n1", "n2", "p1", "p2")}
    router = names["router"]
    in_ns(router, "sysctl", "-qw", "net.ipv4.ip_forward=1")
    for i in (1, 2):
        node, pod = names[f"n{i}"], names[f"p{i}"]
        ip("-n", router, "link", "add", f"subnet{i}", "type", "bridge")
        ip("-n", router, "addr", "add", f"10.97.{i}.1/24", "dev", f"subnet{i}")
        ip("-n", router, "link", "set", f"subnet{i}", "up")
        ip("-n", router, "link", "add", f"up{i}", "type", "veth", "peer", "name", "eth0", "netns", node)
        ip("-n", router, "link", "set", f"up{i}", "master", f"subnet{i}", "up")
        ip("-n", node, "addr", "add", f"10.97.{i}.2/24", "dev", "eth0")
        ip("-n", node, "link", "set", "eth0", "up")
        ip("-n", node, "route", "add", "default", "via", f"10.97.{i}.1")
        wire_pod(node, pod, i)
    return names


def agents(names: dict[str, str], backend: d.Backend) -> list[PodNetworkAgent]:
    return backend_agents(names, backend, node_ip=lambda i: f"10.97.{i}.2")


def test_vxlan_reaches_pods_across_routed_subnets(routed) -> None:
    made = agents(routed, d.Backend.VXLAN)
    nodes = [node_object(a.node_name, a.pod_cidr, a.node_ip, a) for a in made]
    for agent in made:
        agent.reconcile(nodes)
    assert reaches(routed, "p1", "10.244.2.2") and reaches(routed, "p2", "10.244.1.2")


def test_host_gw_refuses_a_node_on_another_subnet(routed) -> None:
    made = agents(routed, d.Backend.HOST_GW)
    nodes = [node_object(a.node_name, a.pod_cidr, a.node_ip, a) for a in made]
    want = made[0].desired(nodes)
    assert not want.entries and [r.node for r in want.refused] == ["n2"]
    assert "10.97.2.2 is not on a directly connected subnet" in want.refused[0].reason
    made[0].reconcile(nodes)
    assert "10.244.2.0" not in ip("-n", routed["n1"], "route")
    assert not reaches(routed, "p1", "10.244.2.2")
